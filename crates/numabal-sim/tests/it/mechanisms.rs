//! The mechanisms one by one: first touch, fallback, memory policies, cpusets, THP,
//! phases, and the policy interface (veto and request).

use crate::util::{Inline, run, scenario, scenario_with};
use numabal_model::{Machine, Tid};
use numabal_policy::{Action, MigrateVerdict, Observation, Policy};

fn one_proc(extra_proc: &str, region: &str, phases: &str, threads: u32) -> String {
    format!(
        "name = \"t\"\n[[process]]\nname = \"p\"\n{extra_proc}\n[[process.region]]\nname = \"buf\"\n{region}\n\
         [[process.group]]\nname = \"w\"\nthreads = {threads}\n{phases}"
    )
}

const SWEEP_ONCE: &str =
    "[[process.group.phase]]\nkind = \"access\"\nregion = \"buf\"\npasses = 1\n";

fn run_text(text: String, policy: &str, sets: &[&str]) -> numabal_sim::RunResult {
    let r = Inline(vec![("t", text)]);
    run(&scenario_with(&r, "tiny-2n4", "t", policy, 1, sets))
}

#[test]
fn first_touch_lands_on_the_toucher_node() {
    // tiny-2n4: node 0 = CPUs 0-1, node 1 = CPUs 2-3.
    let r = run_text(
        one_proc("affinity = \"3\"", "size = \"64MiB\"", SWEEP_ONCE, 1),
        "none",
        &[],
    );
    assert_eq!(r.processes[0].node_mb, vec![0.0, 64.0]);
    assert!((r.metrics.local_access_ratio - 1.0).abs() < 1e-12);
    assert_eq!(r.metrics.pgfault, 64 * 256);
}

#[test]
fn a_full_node_falls_back_to_the_nearest_node() {
    let r = run_text(
        one_proc("affinity = \"0\"", "size = \"3GiB\"", SWEEP_ONCE, 1),
        "none",
        &[],
    );
    assert_eq!(r.processes[0].node_mb, vec![2048.0, 1024.0]);
}

#[test]
fn bind_that_does_not_fit_is_a_clear_error() {
    let text = one_proc("mempolicy = \"bind:0\"", "size = \"3GiB\"", SWEEP_ONCE, 1);
    let r = Inline(vec![("t", text)]);
    let sc = scenario_with(&r, "tiny-2n4", "t", "none", 1, &[]);
    let e = numabal_sim::run(&sc).unwrap_err().to_string();
    assert!(e.contains("out of memory") && e.contains("bind:0"), "{e}");
}

#[test]
fn cpuset_mems_confine_allocation() {
    let r = run_text(
        one_proc(
            "affinity = \"0\"\ncpuset_mems = \"1\"",
            "size = \"32MiB\"",
            SWEEP_ONCE,
            1,
        ),
        "none",
        &[],
    );
    assert_eq!(r.processes[0].node_mb, vec![0.0, 32.0]);
    assert_eq!(r.metrics.local_access_ratio, 0.0);
}

#[test]
fn memory_policies() {
    let r = run_text(
        one_proc(
            "affinity = \"0\"\nmempolicy = \"interleave:all\"",
            "size = \"64MiB\"",
            SWEEP_ONCE,
            1,
        ),
        "none",
        &[],
    );
    assert_eq!(r.processes[0].node_mb, vec![32.0, 32.0]);
    let r = run_text(
        one_proc(
            "affinity = \"0\"\nmempolicy = \"preferred:1\"",
            "size = \"64MiB\"",
            SWEEP_ONCE,
            1,
        ),
        "none",
        &[],
    );
    assert_eq!(r.processes[0].node_mb, vec![0.0, 64.0]);
    // A region (mbind) policy beats the task policy.
    let r = run_text(
        one_proc(
            "affinity = \"0\"\nmempolicy = \"bind:1\"",
            "size = \"64MiB\"\nmempolicy = \"bind:0\"",
            SWEEP_ONCE,
            1,
        ),
        "none",
        &[],
    );
    assert_eq!(r.processes[0].node_mb, vec![64.0, 0.0]);
    // The `interleave` policy overrides the workload's own policy.
    let r = run_text(
        one_proc(
            "affinity = \"0\"\nmempolicy = \"bind:0\"",
            "size = \"64MiB\"",
            SWEEP_ONCE,
            1,
        ),
        "interleave",
        &[],
    );
    assert_eq!(r.processes[0].node_mb, vec![32.0, 32.0]);
}

#[test]
fn thp_regions_fault_in_2mib_pages() {
    let region = "size = \"64MiB\"\nthp = true";
    let r = run_text(
        one_proc("affinity = \"2\"", region, SWEEP_ONCE, 1),
        "none",
        &[],
    );
    assert_eq!((r.metrics.pgfault, r.metrics.thp_fault_alloc), (32, 32));
    assert_eq!(r.processes[0].node_mb, vec![0.0, 64.0]);
    let r = run_text(
        one_proc("affinity = \"2\"", region, SWEEP_ONCE, 1),
        "none",
        &["sim.transparent_hugepage=\"never\""],
    );
    assert_eq!(
        (r.metrics.pgfault, r.metrics.thp_fault_alloc),
        (64 * 256, 0)
    );
}

#[test]
fn sleep_compute_and_sharing_take_the_right_time() {
    let phases = "[[process.group.phase]]\nkind = \"sleep\"\nseconds = 1\n\
                  [[process.group.phase]]\nkind = \"compute\"\nseconds = 0.5\n";
    let r = run_text(one_proc("", "size = \"4MiB\"", phases, 1), "none", &[]);
    assert!(
        (r.metrics.runtime_s - 1.5).abs() < 0.01,
        "{}",
        r.metrics.runtime_s
    );
    // Eight CPU-bound threads on four single-threaded cores: twice as long.
    let phases = "[[process.group.phase]]\nkind = \"compute\"\nseconds = 1\n";
    let r = run_text(one_proc("", "size = \"4MiB\"", phases, 8), "none", &[]);
    assert!(
        (r.metrics.runtime_s - 2.0).abs() < 0.05,
        "{}",
        r.metrics.runtime_s
    );
}

/// `core.host_cpus`: CPUs that share fewer host cores run slower, and what they show as CPU
/// time is the wall time they held their CPU (a guest's vCPUs under TCG). Unshared, or with
/// no more running CPUs than host cores, nothing changes.
#[test]
fn cpus_on_fewer_host_cores_share_them() {
    let phases = "[[process.group.phase]]\nkind = \"compute\"\nseconds = 1\n";
    let four = || one_proc("", "size = \"4MiB\"", phases, 4);
    let (alone, shared) = (
        run_text(four(), "none", &[]),
        run_text(four(), "none", &["machine.core.host_cpus=2"]),
    );
    let close = |a: f64, b: f64| (a - b).abs() < 0.02 * b;
    assert!(
        close(alone.metrics.runtime_s, 1.0),
        "{}",
        alone.metrics.runtime_s
    );
    assert!(
        close(shared.metrics.runtime_s, 2.0),
        "{}",
        shared.metrics.runtime_s
    );
    // Four threads each held a CPU for 2 s: 8 s of CPU time, as /proc would show.
    assert!(
        close(shared.metrics.user_cpu_s, 8.0),
        "{}",
        shared.metrics.user_cpu_s
    );
    assert!(
        close(alone.metrics.user_cpu_s, 4.0),
        "{}",
        alone.metrics.user_cpu_s
    );
    // Two threads on two host cores, and four on four: as if unshared, to the byte.
    let two = || one_proc("", "size = \"4MiB\"", phases, 2);
    let json = |r: &numabal_sim::RunResult| serde_json::to_string(&r.metrics).unwrap();
    assert_eq!(
        json(&run_text(two(), "none", &[])),
        json(&run_text(two(), "none", &["machine.core.host_cpus=2"]))
    );
    assert_eq!(
        json(&alone),
        json(&run_text(four(), "none", &["machine.core.host_cpus=4"]))
    );
}

#[test]
fn barriers_and_joins_synchronise() {
    // Two groups: `fast` computes 0.1 s per iteration, joined by main after `slow`.
    let text = "name = \"t\"\n[[process]]\nname = \"p\"\n[[process.region]]\nname = \"buf\"\nsize = \"4MiB\"\n\
        [[process.group]]\nname = \"main\"\nthreads = 1\n\
        [[process.group.phase]]\nkind = \"spawn\"\ngroup = \"w\"\n\
        [[process.group.phase]]\nkind = \"join\"\ngroup = \"w\"\n\
        [[process.group.phase]]\nkind = \"compute\"\nseconds = 0.25\n\
        [[process.group]]\nname = \"w\"\nthreads = 3\niterations = 4\n\
        [[process.group.phase]]\nkind = \"compute\"\nseconds = 0.1\n\
        [[process.group.phase]]\nkind = \"barrier\"\n"
        .to_string();
    let r = run_text(text, "none", &[]);
    // 4 iterations of 0.1 s, then main's 0.25 s after the join.
    assert!(
        (r.metrics.runtime_s - 0.65).abs() < 0.02,
        "{}",
        r.metrics.runtime_s
    );
}

#[test]
fn static_policies_place_numa02() {
    let bind = run(&scenario("autonuma-2n24", "numa02", "bind", 1));
    assert_eq!(bind.processes[0].node_mb, vec![512.0, 512.0]);
    assert!(bind.metrics.local_access_ratio > 0.99);
    assert_eq!(bind.metrics.thread_migrations_internode, 0);
    let rev = run(&scenario("autonuma-2n24", "numa02", "reverse-bind", 1));
    assert!(rev.metrics.local_access_ratio < 0.01);
    let none = run(&scenario("autonuma-2n24", "numa02", "none", 1));
    let mb = &none.processes[0].node_mb;
    assert!(
        mb[0] == 1024.0 || mb[1] == 1024.0,
        "main first-touches everything on its node: {mb:?}"
    );
    // Half the threads run on the memory's node. Each has the same work, so the ratio
    // would be 0.5 if nobody moved; but when the local threads finish first, their idle
    // CPUs pull remote threads over (active balancing), which then run locally.
    let lr = none.metrics.local_access_ratio;
    assert!(lr > 0.5 && lr < 0.75, "{lr}");
    assert!(none.thread_migrations_by_cause["active_balance"] > 0);
    let il = run(&scenario("autonuma-2n24", "numa02", "interleave", 1));
    assert_eq!(il.processes[0].node_mb, vec![512.0, 512.0]);
}

/// A test policy: deny every inter-node load-balancer move, and at every tick ask for
/// every thread on node 0 to move to node 1.
struct PinAndMove;

impl Policy for PinAndMove {
    fn name(&self) -> &str {
        "pin-and-move"
    }
    fn can_migrate_task(&self, _tid: Tid, src: usize, dst: usize) -> MigrateVerdict {
        if src == dst {
            MigrateVerdict::Allow
        } else {
            MigrateVerdict::Deny
        }
    }
    fn tick_interval_ns(&self) -> Option<u64> {
        Some(50_000_000)
    }
    fn on_tick(&mut self, _m: &Machine, obs: &Observation<'_>, out: &mut Vec<Action>) {
        for t in obs.threads {
            if t.node == Some(0) {
                out.push(Action::MoveThread {
                    tid: t.tid,
                    node: 1,
                });
            }
        }
    }
}

#[test]
fn policies_can_veto_and_request_moves() {
    let sc = scenario("autonuma-2n24", "numa02_smt", "none", 1);
    let plain = run(&sc);
    let custom = numabal_sim::run_with(&sc, Box::new(PinAndMove)).unwrap();
    assert_eq!(custom.thread_migrations_by_cause["load_balance"], 0);
    assert_eq!(custom.thread_migrations_by_cause["active_balance"], 0);
    assert!(
        custom.thread_migrations_by_cause["policy"] >= 6,
        "{:?}",
        custom.thread_migrations_by_cause
    );
    assert!(
        plain.metrics.thread_migrations_internode < custom.thread_migrations_by_cause["policy"]
    );
    // With every worker squeezed onto node 1, the run is slower than the scheduler's spread.
    assert!(custom.metrics.runtime_s > plain.metrics.runtime_s);
}

/// Moves every page of region 0 of the process to node 1 once, at its first tick after
/// `after_ns` (when the pages exist).
struct MoveMemory {
    after_ns: u64,
    done: bool,
}

impl Policy for MoveMemory {
    fn name(&self) -> &str {
        "move-memory"
    }
    fn tick_interval_ns(&self) -> Option<u64> {
        Some(200_000_000)
    }
    fn on_tick(&mut self, _m: &Machine, obs: &Observation<'_>, out: &mut Vec<Action>) {
        if self.done || obs.now_ns < self.after_ns {
            return;
        }
        self.done = true;
        if let Some(t) = obs.threads.first() {
            out.push(Action::MigratePages {
                pid: t.pid,
                region: 0,
                first_page: 0,
                end_page: u64::MAX,
                node: 1,
            });
        }
    }
}

#[test]
fn page_migration_moves_pages_within_capacity_and_charges_its_cost() {
    // First touch on node 0, then keep working for two seconds; the policy moves the memory.
    let phases = "[[process.group.phase]]\nkind = \"access\"\nregion = \"buf\"\npasses = 1\n\
                  [[process.group.phase]]\nkind = \"access\"\nregion = \"buf\"\npattern = \"uniform\"\nseconds = 2\n";
    // (region, when the policy acts, whether node 1 runs out of room)
    for (region, after_ms, fail) in [
        ("size = \"64MiB\"", 400u64, false),
        ("size = \"64MiB\"\nthp = true", 400, false),
        ("size = \"2044MiB\"", 2000, true),
    ] {
        let text = one_proc("affinity = \"0\"", region, phases, 1);
        let r = Inline(vec![("t", text)]);
        let sc = scenario_with(&r, "tiny-2n4", "t", "none", 1, &[]);
        let policy = MoveMemory {
            after_ns: after_ms * 1_000_000,
            done: false,
        };
        let res = numabal_sim::run_with(&sc, Box::new(policy)).unwrap();
        let m = &res.metrics;
        if fail {
            // 2044 MiB cannot all fit above node 1's high watermark (2048 MiB / 256 = 8 MiB).
            assert!(m.pgmigrate_fail > 0, "{m:?}");
            assert!(res.processes[0].node_mb[1] <= 2048.0 - 8.0);
        } else {
            assert_eq!(res.processes[0].node_mb, vec![0.0, 64.0]);
            assert_eq!(m.pgmigrate_success, 64 * 256);
            assert_eq!(m.pgmigrate_fail, 0);
            // The copies are paid by the (simulated) caller, not by the workload's threads.
            assert!(m.migrate_cpu_s > 0.0);
            assert!(m.local_access_ratio < 1.0);
        }
    }
}

#[test]
fn a_deadlocked_workload_is_reported_not_simulated_for_a_day() {
    let text = "name = \"t\"\n[[process]]\nname = \"p\"\n\
        [[process.group]]\nname = \"a\"\nthreads = 1\n[[process.group.phase]]\nkind = \"spawn\"\ngroup = \"b\"\n\
        [[process.group.phase]]\nkind = \"join\"\ngroup = \"b\"\n\
        [[process.group]]\nname = \"b\"\nthreads = 1\n[[process.group.phase]]\nkind = \"join\"\ngroup = \"a\"\n"
        .to_string();
    let r = Inline(vec![("t", text)]);
    let sc = scenario_with(&r, "tiny-2n4", "t", "none", 1, &[]);
    let e = numabal_sim::run(&sc).unwrap_err().to_string();
    assert!(e.contains("deadlock") && e.contains("p/a[0]"), "{e}");
}

#[test]
fn synchronisation_does_not_depend_on_the_tick() {
    // 1000 x (0.5 ms compute + 0.5 ms sleep) takes 1 s whatever the tick.
    let sleepy = "name = \"t\"\n[[process]]\nname = \"p\"\n[[process.group]]\nname = \"g\"\nthreads = 1\niterations = 1000\n\
        [[process.group.phase]]\nkind = \"compute\"\nseconds = 0.0005\n\
        [[process.group.phase]]\nkind = \"sleep\"\nseconds = 0.0005\n";
    // Two threads on different nodes alternate between regions on opposite nodes, with a
    // barrier after each pass: the barrier releases at the later arrival.
    let alternating = "name = \"t\"\n[[process]]\nname = \"p\"\n\
        [[process.region]]\nname = \"x\"\nsize = \"16MiB\"\nmempolicy = \"bind:1\"\n\
        [[process.region]]\nname = \"y\"\nsize = \"16MiB\"\nmempolicy = \"bind:0\"\n\
        [[process.group]]\nname = \"g\"\nthreads = 2\nplacement = \"spread\"\niterations = 100\n\
        [[process.group.phase]]\nkind = \"access\"\nregion = \"x\"\npasses = 1\n[[process.group.phase]]\nkind = \"barrier\"\n\
        [[process.group.phase]]\nkind = \"access\"\nregion = \"y\"\npasses = 1\n[[process.group.phase]]\nkind = \"barrier\"\n";
    for (text, policy) in [(sleepy, "none"), (alternating, "bind")] {
        let rt = |tick: &str| {
            run_text(
                text.to_string(),
                policy,
                &[tick, "sim.check_invariants=true"],
            )
            .metrics
            .runtime_s
        };
        let (coarse, fine) = (rt("sim.tick_ms=20"), rt("sim.tick_ms=0.1"));
        assert!(
            (coarse / fine - 1.0).abs() < 0.02,
            "{policy}: {coarse} s at 20 ms ticks, {fine} s at 0.1 ms"
        );
        if policy == "none" {
            assert!((fine - 1.0).abs() < 0.01, "{fine}");
        }
    }
}

#[test]
fn many_empty_iterations_are_progress_not_a_hang() {
    let text = one_proc(
        "",
        "size = \"4KiB\"",
        "[[process.group.phase]]\nkind = \"compute\"\nseconds = 0\n",
        1,
    )
    .replace("threads = 1", "threads = 1\niterations = 2000000");
    let r = run_text(text, "none", &[]);
    assert!(r.finished && r.metrics.runtime_s < 0.01);
}

#[test]
fn task_interleave_starts_at_the_first_node() {
    let r = run_text(
        one_proc(
            "affinity = \"3\"\nmempolicy = \"interleave:all\"",
            "size = \"4KiB\"",
            SWEEP_ONCE,
            1,
        ),
        "none",
        &[],
    );
    assert_eq!(r.processes[0].node_mb, vec![4.0 / 1024.0, 0.0]);
}

#[test]
fn random_first_touches_are_accounted_where_they_land() {
    // A uniform pattern over an untouched region bound to the other node: every byte is remote.
    let phases = "[[process.group.phase]]\nkind = \"access\"\nregion = \"buf\"\npattern = \"uniform\"\nbytes = \"256MiB\"\n";
    let r = run_text(
        one_proc(
            "affinity = \"0\"\nmempolicy = \"bind:1\"",
            "size = \"32MiB\"",
            phases,
            1,
        ),
        "none",
        &[],
    );
    assert!(
        r.metrics.local_access_ratio < 1e-9,
        "{}",
        r.metrics.local_access_ratio
    );
    assert!(r.processes[0].node_mb[1] > 0.0);
}

/// `numastat -p` samples: at the times asked for and periodically, rounded to ticks, and
/// the run is the same with or without them.
#[test]
fn numastat_samples_do_not_change_the_run() {
    let r = Inline(Vec::new());
    let plain = run(&scenario_with(&r, "tiny-2n4", "numa02", "autonuma", 1, &[]));
    let sampled = run(&scenario_with(
        &r,
        "tiny-2n4",
        "numa02",
        "autonuma",
        1,
        &["sim.numastat_at_s=[1.0]", "sim.numastat_every_s=50"],
    ));
    assert!(plain.numastat.is_empty());
    assert_eq!(
        serde_json::to_value(&plain.metrics).unwrap(),
        serde_json::to_value(&sampled.metrics).unwrap()
    );
    let t: Vec<f64> = sampled.numastat.iter().map(|s| s.t_s).collect();
    assert_eq!(t, vec![1.0, 50.0, 100.0]);
    // numa02's main thread first-touches the whole 1 GiB on one node; by 50 s the threads
    // on the other node have pulled their half over.
    let first = &sampled.numastat[0].processes[0].node_mb;
    assert_eq!(first.iter().sum::<f64>(), 1024.0);
    assert!(first.contains(&1024.0), "{first:?}");
    assert_eq!(sampled.numastat[1].processes[0].node_mb, vec![512.0, 512.0]);
}

/// The time series reads counters only: any interval gives the same run, and its
/// cumulative counters end at the run's totals.
#[test]
fn series_samples_do_not_change_the_run() {
    let r = Inline(Vec::new());
    let auto = run(&scenario_with(&r, "tiny-2n4", "numa02", "autonuma", 1, &[]));
    let fine = run(&scenario_with(
        &r,
        "tiny-2n4",
        "numa02",
        "autonuma",
        1,
        &["sim.series_every_s=0.1"],
    ));
    assert_eq!(
        serde_json::to_value(&auto.metrics).unwrap(),
        serde_json::to_value(&fine.metrics).unwrap()
    );
    for (s, every) in [(&auto.series, 1.0), (&fine.series, 0.1)] {
        let n = s.t_s.len();
        assert!(n > 10, "{n} samples");
        assert_eq!(s.interval_s, every);
        // A last sample at the end: the tick at which the last thread's exit was seen.
        let end = *s.t_s.last().unwrap() - auto.metrics.runtime_s;
        assert!((0.0..0.004).contains(&end), "{end}");
        let at_end = |f: fn(&numabal_sim::series::NodeSeries) -> &Vec<u64>| -> u64 {
            s.nodes.iter().map(|x| f(x)[n - 1]).sum()
        };
        assert_eq!(
            at_end(|x| &x.numa_hint_faults),
            auto.metrics.numa_hint_faults
        );
        assert_eq!(
            at_end(|x| &x.pages_migrated),
            auto.metrics.pgmigrate_success
        );
        assert_eq!(
            at_end(|x| &x.thread_migrations),
            auto.metrics.thread_migrations_internode
        );
        let scan: f64 = s.nodes.iter().map(|x| x.scan_cpu_s[n - 1]).sum();
        assert!((scan - auto.metrics.scan_cpu_s).abs() < 1e-4, "{scan}");
        // numa02's one process: its counters are the run's.
        let p = &s.processes[0];
        assert_eq!(
            *p.numa_hint_faults.last().unwrap(),
            auto.metrics.numa_hint_faults
        );
        assert_eq!(p.node_mb.len(), 2);
        // By 1 s main() has touched the whole GiB on one node (at 0.1 s: part of it).
        let k = s.t_s.iter().position(|&t| t >= 1.0).unwrap();
        let at_1s: Vec<f64> = p.node_mb.iter().map(|n| n[k - p.from]).collect();
        assert!(at_1s.contains(&1024.0), "{at_1s:?}");
        let first: f64 = p.node_mb.iter().map(|n| n[0]).sum();
        assert!(first > 0.0 && first <= 1024.0, "{first}");
    }
    assert!(fine.series.t_s.len() > 5 * auto.series.t_s.len());
}

/// Work units: each thread's completed passes over its phase list times
/// `work_per_iteration`; daemons' work is not the workload's.
#[test]
fn throughput_counts_completed_iterations() {
    let text = "name = \"w\"\n[[process]]\nname = \"job\"\n\
                [[process.group]]\nname = \"g\"\nthreads = 3\niterations = 5\n\
                work_per_iteration = 2\n\
                [[process.group.phase]]\nkind = \"compute\"\nseconds = 0.1\n\
                [[process]]\nname = \"bg\"\ndaemon = true\n\
                [[process.group]]\nname = \"d\"\nthreads = 1\niterations = 1000000\n\
                work_per_iteration = 1\n\
                [[process.group.phase]]\nkind = \"sleep\"\nseconds = 0.01\n";
    let r = Inline(vec![("w", text.to_string())]);
    let res = run(&scenario_with(&r, "tiny-2n4", "w", "none", 1, &[]));
    let m = &res.metrics;
    assert_eq!(m.work_units, 30.0);
    // Five 0.1 s passes each, at least 0.5 s.
    assert!((0.5..0.7).contains(&m.runtime_s), "{}", m.runtime_s);
    assert!((m.throughput_per_s - 30.0 / m.runtime_s).abs() < 1e-9);
    let job = res.processes.iter().find(|p| p.name == "job").unwrap();
    assert_eq!(job.work_units, 30.0);
    let bg = res.processes.iter().find(|p| p.name == "bg").unwrap();
    assert!(bg.work_units >= 40.0, "{}", bg.work_units);
}

/// `sim.warmup_s`: throughput counts the work done after the warm-up, over the time after
/// it; the work itself is all counted.
#[test]
fn throughput_after_a_warmup() {
    let w = r#"
name = "steady"
[[process]]
name = "steady"
[[process.group]]
name = "main"
threads = 1
iterations = 100
work_per_iteration = 1
[[process.group.phase]]
kind = "compute"
seconds = 0.1
"#;
    let r = Inline(vec![("steady", w.to_string())]);
    let a = run(&scenario_with(&r, "tiny-2n4", "steady", "none", 1, &[]));
    let b = run(&scenario_with(
        &r,
        "tiny-2n4",
        "steady",
        "none",
        1,
        &["sim.warmup_s=4"],
    ));
    assert_eq!(a.metrics.work_units, 100.0);
    assert_eq!(b.metrics.work_units, 100.0);
    assert!(
        (a.metrics.throughput_per_s - 10.0).abs() < 0.05,
        "{}",
        a.metrics.throughput_per_s
    );
    // 60 iterations end after 4 s (the one ending at 4.0 s counts), over the last 6 s.
    assert!(
        (b.metrics.throughput_per_s - 61.0 / 6.0).abs() < 0.2,
        "{}",
        b.metrics.throughput_per_s
    );
    assert!((b.processes[0].throughput_per_s - b.metrics.throughput_per_s).abs() < 1e-9);
}

/// `stagger_s`: a group's threads start one after another; numastat samples carry the work
/// done so far.
#[test]
fn staggered_threads_and_work_in_samples() {
    let w = r#"
name = "ramp"
[[process]]
name = "ramp"
[[process.region]]
name = "r"
size = "4MiB"
[[process.group]]
name = "main"
threads = 3
stagger_s = 1.0
iterations = 100
work_per_iteration = 1
[[process.group.phase]]
kind = "compute"
seconds = 0.1
"#;
    let r = Inline(vec![("ramp", w.to_string())]);
    let res = run(&scenario_with(
        &r,
        "tiny-2n4",
        "ramp",
        "none",
        1,
        &["sim.numastat_at_s=[5.05]"],
    ));
    // Thread i runs 10 s from i s: the last ends at 12 s.
    assert!(
        (res.metrics.runtime_s - 12.0).abs() < 0.01,
        "{}",
        res.metrics.runtime_s
    );
    assert_eq!(res.metrics.work_units, 300.0);
    // At 5.05 s: 50 + 40 + 30 iterations (threads start a little after 0, 1 and 2 s).
    let at5 = &res.numastat[0].processes[0];
    assert!((at5.work_units - 120.0).abs() <= 1.0, "{}", at5.work_units);
}

/// A test policy: once, `move_pages` of every page of process 1's first mapping to the
/// node holding less of it, by address, in calls of 4096 pages.
struct MoveByAddress {
    done: bool,
    pages: u64,
}

impl Policy for MoveByAddress {
    fn name(&self) -> &str {
        "move-by-address"
    }
    fn tick_interval_ns(&self) -> Option<u64> {
        Some(1_000_000_000)
    }
    fn on_tick(&mut self, _m: &Machine, obs: &Observation<'_>, out: &mut Vec<Action>) {
        let Some(p) = obs.processes.first() else {
            return;
        };
        if self.done || p.rss_bytes < self.pages * 4096 {
            return;
        }
        self.done = true;
        let node = usize::from(p.node_bytes[0] >= p.node_bytes[1]);
        let addrs: Vec<u64> = (0..self.pages)
            .map(|pg| numabal_sim::world::page_addr(0, pg))
            .chain([numabal_sim::world::page_addr(7, 0)]) // no such mapping: skipped
            .collect();
        for chunk in addrs.chunks(4096) {
            out.push(Action::MovePages {
                pid: p.pid,
                addrs: chunk.to_vec(),
                node,
            });
        }
    }
}

#[test]
fn move_pages_by_address_runs_in_the_daemons_context() {
    // numa02 on tiny-2n4: 1 GiB first-touched by the main thread on one node.
    let mut sc = scenario("tiny-2n4", "numa02", "none", 1);
    sc.sim.max_time_s = 20.0;
    let pages = 1u64 << 18;
    let r = numabal_sim::run_with(&sc, Box::new(MoveByAddress { done: false, pages })).unwrap();
    let mb = &r.processes[0].node_mb;
    assert!(mb.contains(&1024.0), "{mb:?}");
    // Every page moved once, at the kernel's per-page cost (migrate_cpu_s).
    assert_eq!(r.metrics.pgmigrate_success, pages);
    assert!(r.metrics.migrate_cpu_s > 0.0);
    assert!(r.policy_log.iter().all(|l| !l.message.contains("ignored")));
}
