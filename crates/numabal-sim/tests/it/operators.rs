//! The RHEL 7 memory brief's operator scenarios: the workloads numad and friends are
//! judged on.

use crate::util::{Inline, run, scenario_with};

/// `kvm_guests` (Figure 2): four guests whose memory starts spread over all four nodes; with
/// no NUMA balancing it stays spread.
#[test]
fn kvm_guests_memory_starts_and_stays_dispersed_without_balancing() {
    let r = run(&scenario_with(
        &Inline(Vec::new()),
        "rhel-4n40",
        "kvm_guests",
        "none",
        1,
        &["sim.max_time_s=60", "sim.numastat_at_s=[30.0]"],
    ));
    let guests = &r.numastat[0].processes;
    assert_eq!(guests.len(), 4);
    for g in guests {
        let total: f64 = g.node_mb.iter().sum();
        assert!((total - 44730.0).abs() < 1.0, "{total}");
        for &mb in &g.node_mb {
            assert!((mb / total - 0.25).abs() < 0.01, "{:?}", g.node_mb);
        }
    }
    assert_eq!(r.metrics.numa_pages_migrated, 0);
}
