//! Stable-NUMA (`stable`) end to end: the scanner and hinting faults driving the policy
//! core, thread-private placement, the clustering swap, determinism, and the workload
//! features its evaluation needs (daemons, jitter). The core's rules are unit-tested in
//! `numabal_policy::stable`.

use crate::util::{Inline, run, scenario, scenario_with};

/// Two pairs of threads on tiny-2n4 (two nodes of two CPUs), each pair sharing its own
/// 64 MiB region at random. Fork balancing puts one thread of each pair on each node, so
/// half of every pair's accesses are remote until the pairs are regrouped: the paper's
/// Figure 8 situation on a small machine (a move would leave 3 vs 1 runnable threads, so
/// the candidate is swapped with the thread of the other pair).
fn pairs() -> String {
    let group = |g: &str, r: &str| {
        format!(
            "[[process.group]]\nname = \"{g}\"\nthreads = 2\n\
             [[process.group.phase]]\nkind = \"access\"\nregion = \"{r}\"\n\
             pattern = \"uniform\"\nseconds = 30\n"
        )
    };
    format!(
        "name = \"pairs\"\n[[process]]\nname = \"pairs\"\n\
         [[process.region]]\nname = \"ra\"\nsize = \"64MiB\"\n\
         [[process.region]]\nname = \"rb\"\nsize = \"64MiB\"\n{}{}",
        group("a", "ra"),
        group("b", "rb")
    )
}

const THP_NEVER: &[&str] = &["sim.transparent_hugepage=never"];

#[test]
fn numa02_private_slices_migrate_to_their_owners() {
    let none = run(&scenario("tiny-2n4", "numa02", "none", 1));
    let auto = run(&scenario("tiny-2n4", "numa02", "autonuma", 1));
    let st = run(&scenario("tiny-2n4", "numa02", "stable", 1));
    assert_eq!(st.scenario.policy, "stable");
    let m = &st.metrics;
    // main first-touches 1 GiB on one node; the threads on the other node own half of it.
    assert_eq!(m.numa_pages_migrated, 131_072);
    assert!(m.local_access_ratio > none.metrics.local_access_ratio + 0.3);
    assert!(m.numa_hint_faults < auto.metrics.numa_hint_faults);
    assert!(m.scan_cpu_s > 0.0);
    let report = st.stable.as_ref().expect("stable report");
    assert!(report.stats.scan_sequences > 3);
    // Settled pages are unmapped less often: the bypass counters skipped some.
    assert!(report.stats.pages_bypassed > 0);
    assert_eq!(
        report.stats.page_states.get("thread-private"),
        Some(&262_144)
    );
    assert!(none.stable.is_none() && auto.stable.is_none());
}

#[test]
fn pairs_split_across_nodes_are_swapped_together() {
    let r = Inline(vec![("pairs", pairs())]);
    let none = run(&scenario_with(
        &r, "tiny-2n4", "pairs", "none", 1, THP_NEVER,
    ));
    let st = run(&scenario_with(
        &r, "tiny-2n4", "pairs", "stable", 1, THP_NEVER,
    ));
    assert!(
        none.metrics.local_access_ratio < 0.7,
        "{}",
        none.metrics.local_access_ratio
    );
    let report = st.stable.as_ref().expect("stable report");
    assert_eq!(report.stats.thread_swaps, 1);
    assert_eq!(report.stats.thread_moves, 0);
    assert_eq!(st.thread_migrations_by_class["policy_swap"], 2);
    assert_eq!(st.thread_migrations_by_class["load_balance"], 0);
    assert!(
        st.metrics.local_access_ratio > 0.9,
        "{}",
        st.metrics.local_access_ratio
    );
    assert_eq!(st.processes[0].thread_nodes, vec![2, 2]);
}

/// Four threads on tiny-2n4 sweep their own 16 MiB for 10 s; at 3 s two daemon hogs
/// pinned to node 0's CPUs start. Without Stable-NUMA the load balancer moves a thread to
/// node 1, away from its memory; under `stable` the threads joined their sub-groups at the
/// first scan window (1 s) and the balancer keeps them inside their nodes.
#[test]
fn joined_threads_are_not_balanced_across_nodes() {
    let hog = "name = \"hog\"\n[[process]]\nname = \"job\"\n\
               [[process.region]]\nname = \"m\"\nsize = \"64MiB\"\n\
               [[process.group]]\nname = \"w\"\nthreads = 4\n\
               [[process.group.phase]]\nkind = \"access\"\nregion = \"m\"\nslice = \"thread\"\n\
               seconds = 10\n\
               [[process]]\nname = \"hog\"\ndaemon = true\nstart_s = 3\naffinity = \"0-1\"\n\
               [[process.group]]\nname = \"h\"\nthreads = 2\n\
               [[process.group.phase]]\nkind = \"compute\"\nseconds = 100\n";
    let r = Inline(vec![("hog", hog.to_string())]);
    let none = run(&scenario_with(&r, "tiny-2n4", "hog", "none", 1, &[]));
    assert_eq!(none.thread_migrations_by_class["load_balance"], 1);
    assert_eq!(none.processes[0].thread_nodes, vec![1, 3]);
    let st = run(&scenario_with(&r, "tiny-2n4", "hog", "stable", 1, &[]));
    assert_eq!(st.metrics.thread_migrations_internode, 0);
    assert_eq!(st.processes[0].thread_nodes, vec![2, 2]);
    assert_eq!(st.metrics.local_access_ratio, 1.0);
    // Joining at the first fault instead leaves the balancer free until then.
    let late = run(&scenario_with(
        &r,
        "tiny-2n4",
        "hog",
        "stable",
        1,
        &["policy.join_at=first_fault", "policy.scan_period_ms=5000"],
    ));
    assert_eq!(late.thread_migrations_by_class["load_balance"], 1);
}

#[test]
fn stable_runs_are_byte_identical() {
    let r = Inline(vec![("pairs", pairs())]);
    let a = run(&scenario_with(
        &r, "tiny-2n4", "pairs", "stable", 3, THP_NEVER,
    ));
    let b = run(&scenario_with(
        &r, "tiny-2n4", "pairs", "stable", 3, THP_NEVER,
    ));
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
}

#[test]
fn stable_tunables_are_checked() {
    let r = Inline(Vec::new());
    let input = numabal_model::scenario::ScenarioInput {
        machine: Some("tiny-2n4".into()),
        workload: Some("numa02".into()),
        policy: Some("stable".into()),
        sets: vec!["policy.swap_threshold=0".into()],
        ..Default::default()
    };
    let sc = numabal_model::Scenario::build(&input, &r).expect("scenario");
    let e = numabal_sim::run(&sc).expect_err("swap_threshold 0");
    assert!(e.to_string().contains("policy.swap_threshold"), "{e}");
}

/// A 2-second job beside a daemon that never ends.
fn with_daemon(daemon: bool, jitter: f64) -> String {
    format!(
        "name = \"d\"\n[[process]]\nname = \"job\"\n\
         [[process.group]]\nname = \"w\"\nthreads = 1\n\
         [[process.group.phase]]\nkind = \"compute\"\nseconds = 2\njitter = {jitter}\n\
         [[process]]\nname = \"kworker\"\ndaemon = {daemon}\n\
         [[process.group]]\nname = \"n\"\nthreads = 1\niterations = 1000000000\n\
         [[process.group.phase]]\nkind = \"compute\"\nseconds = 0.001\n\
         [[process.group.phase]]\nkind = \"sleep\"\nseconds = 0.01\njitter = 0.5\n"
    )
}

#[test]
fn a_daemon_is_not_waited_for() {
    let r = Inline(vec![("d", with_daemon(true, 0.0))]);
    let res = run(&scenario_with(&r, "tiny-2n4", "d", "none", 1, &[]));
    assert!(res.finished);
    assert!(
        (res.metrics.runtime_s - 2.0).abs() < 0.01,
        "{}",
        res.metrics.runtime_s
    );
    // Without the flag the run waits for it until max_time_s.
    let r = Inline(vec![("d", with_daemon(false, 0.0))]);
    let res = run(&scenario_with(
        &r,
        "tiny-2n4",
        "d",
        "none",
        1,
        &["sim.max_time_s=5"],
    ));
    assert!(!res.finished);
}

#[test]
fn jitter_varies_phase_lengths_by_seed() {
    let r = Inline(vec![("d", with_daemon(true, 0.5))]);
    let times: Vec<f64> = (1..=4)
        .map(|s| {
            run(&scenario_with(&r, "tiny-2n4", "d", "none", s, &[]))
                .metrics
                .runtime_s
        })
        .collect();
    assert!(times.iter().all(|&t| (1.0..=3.0).contains(&t)), "{times:?}");
    assert!(
        times.windows(2).any(|w| (w[0] - w[1]).abs() > 0.01),
        "{times:?}"
    );
}

#[test]
fn bad_jitter_and_all_daemons_are_input_errors() {
    for (text, field) in [
        (with_daemon(true, 1.5), "jitter"),
        (
            with_daemon(true, 0.0).replace("name = \"job\"", "name = \"job\"\ndaemon = true"),
            "process.daemon",
        ),
    ] {
        let r = Inline(vec![("d", text)]);
        let input = numabal_model::scenario::ScenarioInput {
            machine: Some("tiny-2n4".into()),
            workload: Some("d".into()),
            policy: Some("none".into()),
            ..Default::default()
        };
        let e = numabal_model::Scenario::build(&input, &r).expect_err("bad input");
        assert!(e.to_string().contains(field), "{e}");
    }
}
