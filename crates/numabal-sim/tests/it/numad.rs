//! `numad` in the simulator: whole processes bound to nodes, their memory moved by
//! `migrate_pages` in the daemon's context, one process per pass. (The hold and the pass
//! arithmetic are unit-tested in the policy core, `numad/mod.rs` and `numad/pick.rs`.)

use crate::util::{Inline, run, scenario_with};

/// Two processes of 600 MiB on tiny-2n4 (2 nodes x 2 CPUs): the main thread populates the
/// memory interleaved over both nodes, then a worker accesses it at random for `secs`
/// seconds. (One worker: with two, a process uses a whole node's CPUs, and numad's 15%
/// margin at `-u 85` asks for more than a node.)
fn two_apps(secs: u32) -> Inline {
    let w = format!(
        r#"
name = "two_apps"
[[process]]
name = "app"
instances = 2
[[process.region]]
name = "heap"
size = "600MiB"
[[process.group]]
name = "main"
threads = 1
[[process.group.phase]]
kind = "access"
region = "heap"
passes = 1
write = 1.0
mempolicy = "interleave:all"
[[process.group.phase]]
kind = "spawn"
group = "worker"
[[process.group.phase]]
kind = "join"
group = "worker"
[[process.group]]
name = "worker"
threads = 1
[[process.group.phase]]
kind = "access"
region = "heap"
pattern = "uniform"
seconds = {secs}
ns_per_byte = 2.0
"#
    );
    Inline(vec![("two_apps", w)])
}

fn advised(r: &numabal_sim::RunResult, pid: u32) -> Vec<String> {
    r.policy_log
        .iter()
        .filter(|l| l.pid == pid && l.message.starts_with("Advising"))
        .map(|l| l.message.clone())
        .collect()
}

#[test]
fn numad_binds_each_process_to_its_own_node_and_moves_its_memory() {
    let w = two_apps(60);
    let none = run(&scenario_with(&w, "tiny-2n4", "two_apps", "none", 1, &[]));
    let r = run(&scenario_with(&w, "tiny-2n4", "two_apps", "numad", 1, &[]));
    // One decision per process in 60 s (the hold is 300 s), each to a single node, the two
    // on different nodes, in numad's words.
    let (a1, a2) = (advised(&r, 1), advised(&r, 2));
    assert_eq!((a1.len(), a2.len()), (1, 1), "{:?}", r.policy_log);
    let target = |s: &str| {
        s.rsplit_once("to nodes (")
            .unwrap()
            .1
            .trim_end_matches(')')
            .to_string()
    };
    assert!(a1[0].starts_with("Advising pid 1 (app) move from nodes (0-1) to nodes ("));
    let (n1, n2) = (target(&a1[0]), target(&a2[0]));
    assert!(n1.len() == 1 && n2.len() == 1 && n1 != n2, "{n1} {n2}");
    assert!(
        r.policy_log
            .iter()
            .any(|l| l.message.starts_with("PID 1 moved to node(s) "))
    );
    // The memory followed: at the end each process has all of it on its node, and its
    // threads run there.
    for (p, n) in r.processes.iter().zip([&n1, &n2]) {
        let n: usize = n.parse().unwrap();
        let total: f64 = p.node_mb.iter().sum();
        assert!(p.node_mb[n] / total > 0.99, "{:?} on {n}", p.node_mb);
        assert!(p.local_access_ratio > 0.8, "{}", p.local_access_ratio);
    }
    // The kernel's NUMA balancing did not move those pages; migrate_pages did.
    assert_eq!(r.metrics.numa_pages_migrated, 0);
    assert!(r.metrics.pgmigrate_success >= 2 * 300 * 256 * 9 / 10);
    assert!(r.metrics.local_access_ratio > none.metrics.local_access_ratio + 0.3);
}

#[test]
fn numad_leaves_small_or_idle_processes_alone() {
    // Below 300 MB nothing is managed.
    let w = two_apps(30);
    let r = run(&scenario_with(
        &w,
        "tiny-2n4",
        "two_apps",
        "numad",
        1,
        &["policy.memory_threshold_mb=700"],
    ));
    assert!(r.policy_log.is_empty(), "{:?}", r.policy_log);
    assert_eq!(r.metrics.pgmigrate_success, 0);
}

#[test]
fn numad_runs_are_deterministic() {
    let w = two_apps(30);
    let sc = scenario_with(&w, "tiny-2n4", "two_apps", "numad", 3, &[]);
    let a = serde_json::to_string(&run(&sc)).unwrap();
    let b = serde_json::to_string(&run(&sc)).unwrap();
    assert_eq!(a, b);
}
