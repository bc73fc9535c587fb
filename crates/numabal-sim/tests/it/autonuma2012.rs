//! The original AutoNUMA model (`autonuma-2012`) end to end: memory follows the threads
//! through knuma_scand, the hinting faults and knuma_migratedN; CPU follows memory
//! through `sched_autonuma_balance`; the kernel threads' CPU time is nobody's.
//! (The decision rules are unit-tested in `numabal_sim::autonuma::aa2012`.)

use crate::util::{run, scenario};
use numabal_model::scenario::PolicySpec;

fn report(r: &numabal_sim::RunResult) -> numabal_sim::kernel::aa2012::Aa2012Report {
    r.numa_balancing
        .as_ref()
        .and_then(|n| n.autonuma_2012.clone())
        .expect("autonuma-2012 report")
}

#[test]
fn numa02_memory_follows_the_threads() {
    let none = run(&scenario("autonuma-2n24", "numa02", "none", 1));
    let aa = run(&scenario("autonuma-2n24", "numa02", "autonuma-2012", 1));
    let m = &aa.metrics;
    assert_eq!(aa.scenario.policy, "autonuma-2012");
    // The main thread first-touches 1 GiB on one node; the threads on the other node
    // fault on their slices (first fault on a new page: no second fault needed) and
    // knuma_migrated moves them: half the buffer, once.
    let rep = report(&aa);
    assert!(rep.stats.full_scans >= 2, "{:?}", rep.stats);
    assert!(m.numa_pte_updates > 0 && m.numa_hint_faults > 0);
    assert!(m.numa_hint_faults_local < m.numa_hint_faults);
    assert!(
        (120_000..=140_000).contains(&m.numa_pages_migrated),
        "{}",
        m.numa_pages_migrated
    );
    assert_eq!(
        rep.stats.pages_migrated.iter().sum::<u64>(),
        m.numa_pages_migrated
    );
    assert_eq!(rep.stats.queued_at_end, vec![0, 0]);
    // Each thread's memory ends on its node: half the buffer on each node, and the
    // threads' accesses mostly local over the whole run.
    let p = &aa.processes[0];
    assert!(
        p.node_mb.iter().all(|&mb| (448.0..=576.0).contains(&mb)),
        "{:?}",
        p.node_mb
    );
    assert!(m.local_access_ratio > 0.9, "{}", m.local_access_ratio);
    assert!(m.local_access_ratio > none.metrics.local_access_ratio + 0.2);
    assert!(m.runtime_s < none.metrics.runtime_s * 0.8);
    // Per-task and per-mm statistics are reported.
    assert_eq!(rep.task_autonuma.len(), 25);
    assert!(
        rep.task_autonuma
            .iter()
            .skip(1)
            .all(|t| t.task_numa_fault_tot > 0)
    );
    assert_eq!(rep.mm_autonuma.len(), 1);
    assert!(rep.mm_autonuma[0].mm_numa_fault_pass >= 2);
    assert!(rep.mm_autonuma[0].mm_numa_fault_tot > 0);
}

/// knuma_scand and knuma_migratedN are kernel threads: their CPU time is reported
/// (`scan_cpu_s`, all of it hidden; `migrate_cpu_s`) but the tasks' kernel time is only
/// their own page faults, hinting faults and clones.
#[test]
fn kernel_threads_are_not_charged_to_tasks() {
    let sc = scenario("autonuma-2n24", "numa02", "autonuma-2012", 1);
    let r = run(&sc);
    let m = &r.metrics;
    assert!(m.scan_cpu_s > 0.0);
    assert_eq!(m.scan_cpu_hidden_s, m.scan_cpu_s);
    assert!(m.migrate_cpu_s > 0.0);
    let k = &sc.machine.spec.costs;
    let spawn = 24.0 * k.thread_spawn_ns;
    let own = m.pgfault as f64 * k.page_fault_ns
        + m.thp_fault_alloc as f64 * (k.thp_fault_ns - k.page_fault_ns)
        + m.numa_hint_faults as f64 * k.hint_fault_ns
        + spawn;
    assert!(
        (m.sys_cpu_s - own / 1e9).abs() < 1e-6,
        "sys {} s, own work {} s",
        m.sys_cpu_s,
        own / 1e9
    );
    // The Linux 6.x model charges its scans to the tasks.
    let l6 = run(&scenario("autonuma-2n24", "numa02", "autonuma", 1)).metrics;
    assert_eq!(l6.scan_cpu_hidden_s, 0.0);
    assert!(
        l6.sys_cpu_s
            > (l6.pgfault as f64 * k.page_fault_ns + l6.numa_hint_faults as f64 * k.hint_fault_ns)
                / 1e9
    );
}

/// numa01: both processes first-touch 3 GiB on the same node and their threads are
/// spread over both. Memory follows the threads on each node, the mm statistics drift
/// apart, and `sched_autonuma_balance` exchanges threads of different processes until
/// each process runs, with its memory, on a node of its own.
#[test]
fn numa01_processes_converge_on_separate_nodes() {
    let aa = run(&scenario("autonuma-2n24", "numa01", "autonuma-2012", 1));
    let rep = report(&aa);
    assert!(rep.stats.exchanges > 0);
    assert_eq!(
        aa.thread_migrations_by_cause["autonuma_exchange"],
        2 * rep.stats.exchanges
    );
    assert_eq!(aa.metrics.numa_task_swapped, 2 * rep.stats.exchanges);
    let home: Vec<usize> = aa
        .processes
        .iter()
        .map(|p| {
            let (n, mb) = p
                .node_mb
                .iter()
                .enumerate()
                .max_by(|a, b| a.1.total_cmp(b.1))
                .unwrap();
            let total: f64 = p.node_mb.iter().sum();
            assert!(*mb >= 0.9 * total, "{:?}", p.node_mb);
            assert!(p.thread_nodes[n] >= 10, "{:?}", p.thread_nodes);
            n
        })
        .collect();
    assert_ne!(home[0], home[1]);
    // mm_autonuma agrees: each mm's working set is on its home node.
    for (p, m) in rep.mm_autonuma.iter().enumerate() {
        let w = m.mm_numa_fault[home[p]] * 1000 / m.mm_numa_fault_tot;
        assert!(w >= 900, "{m:?}");
    }
    let none = run(&scenario("autonuma-2n24", "numa01", "none", 1));
    assert!(aa.metrics.runtime_s < none.metrics.runtime_s * 0.8);
}

#[test]
fn tunables_are_validated_by_name() {
    let spec = |k: &str, v: toml::Value| {
        let mut t = toml::Table::new();
        t.insert(k.to_string(), v);
        PolicySpec {
            kind: "autonuma-2012".to_string(),
            tunables: t,
            label: "--policy".into(),
        }
    };
    let err = |s: &PolicySpec| match numabal_sim::registry::standard().build(s) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("accepted {s:?}"),
    };
    let e = err(&spec("scan_size_mb", toml::Value::Integer(64)));
    assert!(
        e.contains("policy.scan_size_mb: unknown tunable")
            && e.contains("pages_to_scan_mb")
            && !e.contains("scan_delay_ms"),
        "{e}"
    );
    for k in [
        "pages_to_scan_mb",
        "pages_to_migrate_mb",
        "scan_sleep_millisecs",
        "scan_sleep_pass_millisecs",
        "migrate_sleep_millisecs",
    ] {
        let e = err(&spec(k, toml::Value::Integer(0)));
        assert!(
            e.contains(&format!("policy.{k}")) && e.contains("at least 1"),
            "{e}"
        );
    }
    assert!(
        numabal_sim::registry::standard()
            .build(&spec("pages_to_scan_mb", toml::Value::Integer(256)))
            .is_ok()
    );
    assert!(
        numabal_sim::registry::standard()
            .entries()
            .iter()
            .any(|p| p.name == "autonuma-2012")
    );
}
