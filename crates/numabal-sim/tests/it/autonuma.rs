//! The kernel NUMA-balancing model end to end: migrate-on-fault, the cpuset skip,
//! tunable validation. (The arithmetic is unit-tested in `numabal_sim::autonuma`.)

use crate::util::{Inline, run, scenario, scenario_with};
use numabal_model::scenario::PolicySpec;

/// One process pinned by its cpuset to node 1 of tiny-2n4 (CPUs 2-3), two threads
/// sweeping 256 MiB for 12 s.
fn pinned() -> String {
    "name = \"pinned\"\n[[process]]\nname = \"vm\"\ncpuset_cpus = \"2-3\"\ncpuset_mems = \"1\"\n\
     [[process.region]]\nname = \"mem\"\nsize = \"256MiB\"\n\
     [[process.group]]\nname = \"vcpu\"\nthreads = 2\n\
     [[process.group.phase]]\nkind = \"access\"\nregion = \"mem\"\nseconds = 12\n"
        .to_string()
}

#[test]
fn numa02_memory_follows_the_threads() {
    let none = run(&scenario("autonuma-2n24", "numa02", "none", 1));
    let auto = run(&scenario("autonuma-2n24", "numa02", "autonuma", 1));
    let m = &auto.metrics;
    assert_eq!(auto.scenario.policy, "autonuma");
    // numa02's main thread first-touches 1 GiB on one node; 24 threads then zero their
    // slices from both nodes: the remote half is migrated on hinting faults.
    assert!(m.numa_pte_updates > 0 && m.numa_hint_faults > 0);
    assert!(m.numa_hint_faults_local < m.numa_hint_faults);
    assert!(
        m.numa_pages_migrated >= 100_000,
        "{}",
        m.numa_pages_migrated
    );
    assert!(m.local_access_ratio > none.metrics.local_access_ratio + 0.2);
    assert!(m.runtime_s < none.metrics.runtime_s * 0.8);
    assert!(m.scan_cpu_s > 0.0);
    let report = auto.numa_balancing.as_ref().expect("kernel report");
    assert!(report.stats.scans > 0);
    assert!(none.numa_balancing.is_none());
}

#[test]
fn cpuset_skip_stops_scanning_a_single_node_cpuset() {
    let r = Inline(vec![("pinned", pinned())]);
    let on = run(&scenario_with(&r, "tiny-2n4", "pinned", "autonuma", 1, &[]));
    let off = run(&scenario_with(
        &r,
        "tiny-2n4",
        "pinned",
        "autonuma",
        1,
        &["policy.cpuset_skip=false"],
    ));
    let stats = |x: &numabal_sim::RunResult| x.numa_balancing.clone().expect("report").stats;
    // On: task_numa_work returns before touching a PTE, every time.
    assert_eq!(on.metrics.numa_pte_updates, 0);
    assert_eq!(on.metrics.numa_hint_faults, 0);
    assert!(stats(&on).cpuset_skips > 0);
    assert_eq!(stats(&on).scans, 0);
    // Off: the scanner protects pages and the threads take hinting faults, all local
    // (nothing can move), and nothing migrates.
    assert!(off.metrics.numa_pte_updates > 0);
    assert!(off.metrics.numa_hint_faults > 0);
    assert_eq!(
        off.metrics.numa_hint_faults_local,
        off.metrics.numa_hint_faults
    );
    assert_eq!(off.metrics.numa_pages_migrated, 0);
    assert_eq!(stats(&off).cpuset_skips, 0);
    assert!(off.metrics.sys_cpu_s > on.metrics.sys_cpu_s);
}

#[test]
fn tunables_are_validated_by_name() {
    let spec = |kind: &str, k: &str, v: toml::Value| {
        let mut t = toml::Table::new();
        t.insert(k.to_string(), v);
        PolicySpec {
            kind: kind.to_string(),
            tunables: t,
            label: "--policy".into(),
        }
    };
    let err = |s: &PolicySpec| match numabal_sim::policies::build(s) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("accepted {s:?}"),
    };
    let e = err(&spec("autonuma", "scan_size", toml::Value::Integer(1)));
    assert!(
        e.contains("policy.scan_size") && e.contains("scan_size_mb"),
        "{e}"
    );
    let e = err(&spec("autonuma", "scan_size_mb", toml::Value::Integer(0)));
    assert!(e.contains("at least 1"), "{e}");
    let e = err(&spec(
        "autonuma",
        "scan_delay_ms",
        toml::Value::String("x".into()),
    ));
    assert!(e.contains("policy.scan_delay_ms"), "{e}");
    let e = err(&spec(
        "autonuma",
        "scan_sleep_millisecs",
        toml::Value::Integer(64),
    ));
    assert!(e.contains("not a tunable of `autonuma`"), "{e}");
    let e = err(&spec(
        "autonuma",
        "scan_async_backcharge",
        toml::Value::Boolean(true),
    ));
    assert!(
        e.contains("policy.scan_async_backcharge") && e.contains("needs scan_async"),
        "{e}"
    );
    let e = err(&spec("autonuma", "knuma", toml::Value::Integer(1)));
    assert!(e.contains("allowed:"), "{e}");
    assert!(
        numabal_sim::policies::build(&spec("autonuma", "scan_size_mb", toml::Value::Integer(64)))
            .is_ok()
    );
}
