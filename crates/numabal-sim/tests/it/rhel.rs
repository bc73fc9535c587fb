//! The RHEL 7 memory brief's benchmarks: `pig` guests on the 8-node `rhel-8n`
//! (Figure 13) and the SPECjbb-like `specjbb` on `rhel-4n40` (Figure 15).

use crate::util::{Inline, run, scenario_with};
use numabal_sim::RunResult;

/// numad's advice in Figure 13: guest i on node NODES[i].
const PIG_NODES: [usize; 6] = [1, 3, 7, 4, 6, 5];

/// pig's per-guest "Avg": the guest's work units over its 5 threads.
fn per_guest(r: &RunResult) -> Vec<f64> {
    r.processes
        .iter()
        .filter(|p| p.name == "pig")
        .map(|p| p.work_units / p.threads as f64)
        .collect()
}

fn mean_sd(x: &[f64]) -> (f64, f64) {
    let m = x.iter().sum::<f64>() / x.len() as f64;
    let v = x.iter().map(|a| (a - m) * (a - m)).sum::<f64>() / x.len() as f64;
    (m, v.sqrt())
}

/// Figure 13: guests placed one per node (`numactl -N n -m n`) do far more work than
/// unbound guests with no NUMA balancing, all the same amount, all accesses local.
#[test]
fn pig_placed_beats_unbound() {
    let time = "sim.max_time_s=20";
    let unbound = run(&scenario_with(
        &Inline(Vec::new()),
        "rhel-8n",
        "pig",
        "none",
        1,
        &[time],
    ));
    let mut sets = vec![time.to_string()];
    for (i, n) in PIG_NODES.iter().enumerate() {
        sets.push(format!(
            "workload.process.{i}.affinity=\"{}-{}\"",
            10 * n,
            10 * n + 9
        ));
        sets.push(format!("workload.process.{i}.mempolicy=\"bind:{n}\""));
    }
    let sets: Vec<&str> = sets.iter().map(|s| s.as_str()).collect();
    let placed = run(&scenario_with(
        &Inline(Vec::new()),
        "rhel-8n",
        "pig",
        "none",
        1,
        &sets,
    ));
    let (u, p) = (per_guest(&unbound), per_guest(&placed));
    assert_eq!((u.len(), p.len()), (6, 6));
    let ((um, usd), (pm, psd)) = (mean_sd(&u), mean_sd(&p));
    assert!(pm > 1.35 * um, "placed {p:?} vs unbound {u:?}");
    assert!(
        psd <= usd && psd < 0.05 * pm,
        "placed {p:?} vs unbound {u:?}"
    );
    assert!(placed.metrics.local_access_ratio > 0.999);
    assert!(unbound.metrics.local_access_ratio < 0.8);
    // Each placed guest's memory is all on its node.
    // (pids follow start order: the OS-noise daemons first, then the guests 0.1 s apart.)
    let guests = placed.processes.iter().filter(|p| p.name == "pig");
    for (i, proc) in guests.enumerate() {
        let n = PIG_NODES[i];
        assert!((proc.node_mb[n] - 8000.0).abs() < 1.0, "{:?}", proc.node_mb);
    }
}

/// rhel-4n40's node CPU lists.
const JBB_CPUS: [&str; 4] = [
    "0,4,8,12,16,20,24,28,32,36",
    "2,6,10,14,18,22,26,30,34,38",
    "1,5,9,13,17,21,25,29,33,37",
    "3,7,11,15,19,23,27,31,35,39",
];

/// `specjbb` with W warehouses per JVM for 10 s; `numactl`: JVM i bound to node i.
fn jbb(policy: &str, w: u32, numactl: bool) -> RunResult {
    let mut sets = vec!["sim.max_time_s=10".to_string()];
    for (i, cpus) in JBB_CPUS.iter().enumerate() {
        sets.push(format!("workload.process.{i}.group.1.threads={w}"));
        if numactl {
            sets.push(format!("workload.process.{i}.affinity=\"{cpus}\""));
            sets.push(format!("workload.process.{i}.mempolicy=\"bind:{i}\""));
        }
    }
    let sets: Vec<&str> = sets.iter().map(|s| s.as_str()).collect();
    run(&scenario_with(
        &Inline(Vec::new()),
        "rhel-4n40",
        "specjbb",
        policy,
        1,
        &sets,
    ))
}

/// Figure 15 at a small warehouse count: each JVM bound to its node beats no NUMA
/// management (its old generation, first-touched by GC threads all over the machine, and
/// its shared eden are then remote for most accesses).
#[test]
fn specjbb_bound_beats_none_at_few_warehouses() {
    let none = jbb("none", 2, false);
    let bound = jbb("none", 2, true);
    assert!(bound.metrics.local_access_ratio > 0.999);
    assert!(none.metrics.local_access_ratio < 0.7);
    let (b, n) = (
        bound.metrics.throughput_per_s,
        none.metrics.throughput_per_s,
    );
    assert!(b > 1.05 * n, "bound {b} none {n}");
}

/// Below the CPU count (4 JVMs x W <= 40 CPUs) throughput grows with the warehouses,
/// nearly in proportion when each JVM is bound to its node.
#[test]
fn specjbb_throughput_rises_with_warehouses_below_cpu_count() {
    let tp: Vec<f64> = [2, 4, 8]
        .iter()
        .map(|&w| jbb("none", w, true).metrics.throughput_per_s)
        .collect();
    assert!(tp[0] < tp[1] && tp[1] < tp[2], "{tp:?}");
    assert!(tp[2] > 3.5 * tp[0], "{tp:?}");
    let (n2, n8) = (
        jbb("none", 2, false).metrics.throughput_per_s,
        jbb("none", 8, false).metrics.throughput_per_s,
    );
    assert!(n8 > 3.0 * n2, "none: {n2} -> {n8}");
}
