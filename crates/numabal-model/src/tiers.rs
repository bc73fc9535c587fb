//! Memory tiers as the kernel forms them (mm/memory-tiers.c, drivers/acpi/numa/hmat.c):
//! each node's abstract distance from its memory's performance, tiers as chunks of
//! abstract distance, the demotion targets of every node and the top tier.
//!
//! ```text
//!   node's performance: the best CPU initiator's latency and bandwidth (HMAT access1)
//!        │
//!        ▼   mt_perf_to_adistance, integer arithmetic, left to right
//!   adist = 576 × (lat_r + lat_w) / (dram_r + dram_w) × (bw_dram_r + bw_dram_w) / (bw_r + bw_w)
//!        │   nodes with CPUs: 576 (default_dram_type); device-DAX (kmem) memory before
//!        │   HMAT tiering (6.7): 5 × 576 = 2880; other CPU-less memory before 6.10: 576
//!        ▼
//!   tier = adist >> 7 (chunks of 128)       DRAM 576 ──► memory_tier4 (512-639)
//!   demotion: node ──► nearest nodes (SLIT) of the next lower tier
//!   top tier: every tier up to the slowest that holds a node with CPUs
//! ```
//!
//! Simplifications: one latency and one bandwidth per node pair (HMAT has read and write
//! figures; both are taken as equal); the performance is the machine file's unloaded
//! latency and bandwidth (the kernel's comes from firmware tables that a real machine may
//! fill differently or not at all).

use crate::KernelVersion;
use crate::machine::{Machine, NodeType};
use crate::mask::Mask;

/// `MEMTIER_CHUNK_BITS`: a tier spans 2^7 of abstract distance.
pub const MEMTIER_CHUNK_BITS: u32 = 7;
/// `MEMTIER_CHUNK_SIZE`.
pub const MEMTIER_CHUNK_SIZE: u32 = 1 << MEMTIER_CHUNK_BITS;
/// `MEMTIER_ADISTANCE_DRAM`: 4 chunks and a half, in the middle of tier 4.
pub const MEMTIER_ADISTANCE_DRAM: u32 = 4 * MEMTIER_CHUNK_SIZE + MEMTIER_CHUNK_SIZE / 2;
/// `MEMTIER_DEFAULT_DAX_ADISTANCE`: device-DAX memory without performance data.
pub const MEMTIER_DEFAULT_DAX_ADISTANCE: u32 = MEMTIER_ADISTANCE_DRAM * 5;

/// One memory tier (`/sys/devices/virtual/memory_tiering/memory_tierN`).
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryTier {
    /// N of `memory_tierN`: the first abstract distance of the tier, in chunks.
    pub id: u32,
    /// The tier's nodes (`nodelist`).
    pub nodes: Mask,
}

/// A node's performance as the kernel's tiering reads it (`struct access_coordinate`):
/// nanoseconds and MB/s, whole numbers as in the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodePerf {
    /// Read latency, ns (the write latency is taken equal).
    pub latency_ns: u64,
    /// Read bandwidth, MB/s (the write bandwidth is taken equal).
    pub bandwidth_mb_s: u64,
}

/// The machine's memory tiers under a kernel release.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryTiers {
    /// Per node: its abstract distance (`None`: no memory).
    pub adistance: Vec<Option<u32>>,
    /// The tiers, fastest first.
    pub tiers: Vec<MemoryTier>,
    /// Per node: its preferred demotion targets (`node_demotion[].preferred`); empty for
    /// the nodes of the slowest tier.
    pub demotion: Vec<Mask>,
    /// Per node: the nodes of every tier below its own (`lower_tier_mask`), where a
    /// demotion falls back when the preferred targets are full.
    pub lower: Vec<Mask>,
    /// Per node: in the top tier (`node_is_toptier`).
    pub toptier: Vec<bool>,
    /// Why performance data were not used, when they were not (the kernel's message).
    pub note: Option<String>,
}

impl MemoryTiers {
    /// The tiers the kernel `k` forms on machine `m`.
    pub fn new(m: &Machine, k: KernelVersion) -> MemoryTiers {
        let n = m.nr_nodes();
        let perf: Vec<NodePerf> = (0..n).map(|i| node_perf(m, i)).collect();
        let (dram, note) = default_dram_perf(m, &perf);
        let adistance: Vec<Option<u32>> = (0..n)
            .map(|i| {
                (m.nodes[i].memory_bytes > 0).then(|| {
                    let kmem = m.node_type(i) != NodeType::Dram;
                    let hmat = if kmem {
                        k.hmat_tiers_kmem()
                    } else {
                        k.hmat_tiers_cpuless()
                    };
                    match &dram {
                        _ if !m.nodes[i].cpus.is_empty() => MEMTIER_ADISTANCE_DRAM,
                        Some(d) if hmat => perf_to_adistance(&perf[i], d),
                        _ if kmem => MEMTIER_DEFAULT_DAX_ADISTANCE,
                        _ => MEMTIER_ADISTANCE_DRAM,
                    }
                })
            })
            .collect();
        let tiers = form_tiers(&adistance);
        let tier_of = |i: usize| tiers.iter().position(|t| t.nodes.contains(i));
        // The top tier ends with the slowest tier that has a node with CPUs.
        let top = tiers
            .iter()
            .rposition(|t| t.nodes.iter().any(|i| !m.nodes[i].cpus.is_empty()))
            .unwrap_or(0);
        let mut demotion = vec![Mask::new(); n];
        let mut lower = vec![Mask::new(); n];
        let mut toptier = vec![false; n];
        for i in 0..n {
            let Some(ti) = tier_of(i) else { continue };
            toptier[i] = ti <= top;
            if let Some(next) = tiers.get(ti + 1) {
                demotion[i] = nearest(m, i, &next.nodes);
            }
            lower[i] = tiers[ti + 1..]
                .iter()
                .fold(Mask::new(), |acc, t| acc.or(&t.nodes));
        }
        MemoryTiers {
            adistance,
            tiers,
            demotion,
            lower,
            toptier,
            note,
        }
    }

    /// Index in `tiers` of node `n`'s tier.
    pub fn tier_index(&self, n: usize) -> Option<usize> {
        self.tiers.iter().position(|t| t.nodes.contains(n))
    }

    /// Whether the machine has more than one tier (demotion and promotion have somewhere
    /// to go).
    pub fn tiered(&self) -> bool {
        self.tiers.len() > 1
    }
}

/// Node `i`'s performance from its best CPU initiator: the lowest latency from a node
/// with CPUs, the highest bandwidth (the memory's own controller, capped by the link
/// from a remote initiator).
pub fn node_perf(m: &Machine, i: usize) -> NodePerf {
    let ctrl = m.nodes[i].controller_bytes_per_ns;
    let initiators: Vec<usize> = m.nodes_with_cpus().iter().collect();
    let latency = initiators
        .iter()
        .map(|&c| m.latency_ns[c][i])
        .fold(f64::INFINITY, f64::min);
    let bandwidth = initiators
        .iter()
        .map(|&c| {
            if c == i {
                ctrl
            } else {
                ctrl.min(m.link_bytes_per_ns[c][i])
            }
        })
        .fold(0.0, f64::max);
    // bytes per ns = GB/s = 1000 MB/s.
    NodePerf {
        latency_ns: latency.round() as u64,
        bandwidth_mb_s: (bandwidth * 1000.0).round() as u64,
    }
}

/// `mt_set_default_dram_perf`: the first node with CPUs and memory sets the reference;
/// one that differs from it by more than a tenth in latency or bandwidth makes every
/// performance-based abstract distance fail (the nodes then keep the DRAM tier).
fn default_dram_perf(m: &Machine, perf: &[NodePerf]) -> (Option<NodePerf>, Option<String>) {
    let dram: Vec<usize> = (0..m.nr_nodes())
        .filter(|&i| !m.nodes[i].cpus.is_empty() && m.nodes[i].memory_bytes > 0)
        .collect();
    let Some(&first) = dram.first() else {
        return (None, Some("no node with CPUs and memory".into()));
    };
    let r = perf[first];
    let off = |a: u64, b: u64| a.abs_diff(b) * 10 > b;
    for &i in &dram[1..] {
        let p = perf[i];
        if off(p.latency_ns, r.latency_ns) || off(p.bandwidth_mb_s, r.bandwidth_mb_s) {
            let msg = format!(
                "the performance of DRAM node {i} mismatches that of the reference DRAM node {first}: performance-based tiers off"
            );
            return (None, Some(msg));
        }
    }
    (Some(r), None)
}

/// `mt_perf_to_adistance`, in the kernel's integer order of operations.
pub fn perf_to_adistance(p: &NodePerf, dram: &NodePerf) -> u32 {
    let lat = 2 * p.latency_ns.max(1);
    let bw = 2 * p.bandwidth_mb_s.max(1);
    let a = MEMTIER_ADISTANCE_DRAM as u64 * lat / (2 * dram.latency_ns.max(1))
        * (2 * dram.bandwidth_mb_s)
        / bw;
    a.min(u32::MAX as u64) as u32
}

/// Tiers from abstract distances: one per chunk that holds a node, fastest first.
fn form_tiers(adistance: &[Option<u32>]) -> Vec<MemoryTier> {
    let mut ids: Vec<u32> = adistance
        .iter()
        .flatten()
        .map(|a| a >> MEMTIER_CHUNK_BITS)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids.into_iter()
        .map(|id| MemoryTier {
            id,
            nodes: Mask::from_ids(
                (0..adistance.len())
                    .filter(|&i| adistance[i].is_some_and(|a| a >> MEMTIER_CHUNK_BITS == id)),
            ),
        })
        .collect()
}

/// The nodes of `set` nearest to `from` by SLIT distance, ties together
/// (`establish_demotion_targets`' loop over `find_next_best_node`).
fn nearest(m: &Machine, from: usize, set: &Mask) -> Mask {
    let best = set.iter().map(|j| m.distance[from][j]).min();
    Mask::from_ids(set.iter().filter(|&j| Some(m.distance[from][j]) == best))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::MachineSpec;

    /// Two sockets with DRAM and a CPU-less node behind each: latency 100 ns local, 160
    /// remote, 250 ns to the near slow node; bandwidth 100 GiB/s DRAM, 30 GiB/s slow.
    fn machine(slow_type: &str, dram1_latency: f64) -> Machine {
        let text = format!(
            r#"
name = "t"
description = "test"
[topology]
sockets = 2
cores_per_socket = 2
node_cpus = ["0-1", "2-3", "", ""]
memory_per_node = ["4GiB", "4GiB", "8GiB", "8GiB"]
distance = [[10, 16, 17, 28], [16, 10, 28, 17], [17, 28, 10, 28], [28, 17, 28, 10]]
[memory]
local_latency_ns = 100
latency_ns = [[100, 160, 250, 330], [160, {dram1_latency}, 330, 250], [250, 330, 250, 330], [330, 250, 330, 250]]
controller_gib_s = [100, 100, 30, 30]
link_gib_s = 60
queue_scale_ns = 5
node_type = ["dram", "dram", "{slow_type}", "{slow_type}"]
"#
        );
        let spec: MachineSpec = toml::from_str(&text).unwrap();
        Machine::from_spec(spec, "t").unwrap()
    }

    const K61: KernelVersion = KernelVersion { major: 6, minor: 1 };

    #[test]
    fn slow_nodes_form_a_lower_tier_with_near_targets() {
        let t = machine("cxl", 100.0).memory_tiers(KernelVersion::NEWEST);
        // 576 * 500 / 200 = 1440; * (2 * 107374) / (2 * 32212) = 4799 (integer steps).
        let dram = NodePerf {
            latency_ns: 100,
            bandwidth_mb_s: 107374,
        };
        let slow = node_perf(&machine("cxl", 100.0), 2);
        assert_eq!(slow.latency_ns, 250);
        assert_eq!(slow.bandwidth_mb_s, 32212);
        let a = perf_to_adistance(&slow, &dram);
        assert_eq!(a, 576 * 500 / 200 * 214748 / 64424);
        assert_eq!(t.adistance, vec![Some(576), Some(576), Some(a), Some(a)]);
        assert_eq!(t.tiers.len(), 2);
        assert_eq!(t.tiers[0].id, 4);
        assert_eq!(t.tiers[1].id, a >> 7);
        assert_eq!(t.tiers[1].nodes, Mask::from_ids([2, 3]));
        assert_eq!(t.demotion[0], Mask::single(2));
        assert_eq!(t.demotion[1], Mask::single(3));
        assert!(t.demotion[2].is_empty());
        assert_eq!(t.lower[0], Mask::from_ids([2, 3]));
        assert_eq!(t.toptier, vec![true, true, false, false]);
        assert!(t.tiered() && t.note.is_none());
    }

    #[test]
    fn before_hmat_tiers_kmem_memory_takes_the_dax_default_and_plain_memory_dram() {
        let t = machine("pmem", 100.0).memory_tiers(K61);
        assert_eq!(t.adistance[2], Some(MEMTIER_DEFAULT_DAX_ADISTANCE));
        assert_eq!(t.tiers[1].id, 2880 >> 7);
        let plain = machine("dram", 100.0).memory_tiers(K61);
        assert!(!plain.tiered());
        assert_eq!(plain.toptier, vec![true; 4]);
        assert!(plain.demotion.iter().all(|d| d.is_empty()));
    }

    #[test]
    fn a_dram_node_off_by_more_than_a_tenth_turns_performance_tiers_off() {
        let t = machine("dram", 115.0).memory_tiers(KernelVersion::NEWEST);
        assert!(!t.tiered());
        assert!(
            t.note
                .as_deref()
                .unwrap()
                .contains("DRAM node 1 mismatches")
        );
        // Within a tenth: kept.
        assert!(
            machine("dram", 109.0)
                .memory_tiers(KernelVersion::NEWEST)
                .tiered()
        );
    }
}
