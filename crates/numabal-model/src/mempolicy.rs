//! Memory policies as `set_mempolicy(2)`/`mbind(2)` and numactl know them.
//!
//! In files they are written like numactl arguments: `default`, `local`, `bind:0-1`,
//! `preferred:1`, `interleave:all`, `weighted-interleave:0-3` (numactl 2.0.19's
//! `--weighted-interleave`). A workload may write `random` as the node list: one
//! node drawn from the run's seed, the same for every use in the run (autonuma-benchmark's
//! `nodemask_global = (time(NULL) & 1) + 1` in `numa01 -DNO_BIND_FORCE_SAME_NODE`).
//!
//! Weighted interleave's weights are the system's, not the policy's
//! (`/sys/kernel/mm/mempolicy/weighted_interleave/nodeN`); [`auto_interleave_weights`]
//! computes them as Linux 6.16's `auto` mode does from each node's bandwidth:
//!
//! ```text
//!   node_perf(m, n).bandwidth_mb_s ──► bw[n]   (mempolicy_set_node_perf: min(read, write))
//!   iw[n] = 32 × bw[n] / Σ bw  (integer; 1 when that is below 1 or bw[n] = 0)
//!   iw[n] /= gcd(iw over the nodes with memory)        (reduce_interleave_weights)
//! ```

use crate::machine::Machine;
use crate::mask::Mask;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A resolved memory policy with concrete node sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemPolicy {
    /// `MPOL_DEFAULT`: allocate on the local node (the allocating CPU's node), falling back
    /// to the nearest node with free memory.
    Default,
    /// `MPOL_BIND`: only these nodes; the nearest of them to the allocating CPU first.
    Bind(Mask),
    /// `MPOL_PREFERRED`: this node first, then the default fallback order from it.
    Preferred(usize),
    /// `MPOL_INTERLEAVE`: round robin over these nodes.
    Interleave(Mask),
    /// `MPOL_WEIGHTED_INTERLEAVE` (Linux 6.9): round robin over these nodes, each node
    /// taking as many pages in a row as its system-wide weight (`iw_table`, see
    /// [`auto_interleave_weights`]).
    WeightedInterleave(Mask),
}

impl fmt::Display for MemPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemPolicy::Default => write!(f, "default"),
            MemPolicy::Bind(m) => write!(f, "bind:{m}"),
            MemPolicy::Preferred(n) => write!(f, "preferred:{n}"),
            MemPolicy::Interleave(m) => write!(f, "interleave:{m}"),
            MemPolicy::WeightedInterleave(m) => write!(f, "weighted-interleave:{m}"),
        }
    }
}

/// Node list as written in a workload: explicit, all nodes, or one seeded random node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeSpec {
    /// Explicit nodes.
    List(Mask),
    /// Every node of the machine.
    All,
    /// One node chosen by the run's seed, shared by every `random` in the run.
    Random,
}

/// A memory policy as written in a workload file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemPolicySpec {
    /// `default` / `local`.
    Default,
    /// `bind:<nodes>`.
    Bind(NodeSpec),
    /// `preferred:<node>`.
    Preferred(NodeSpec),
    /// `interleave:<nodes>`.
    Interleave(NodeSpec),
    /// `weighted-interleave:<nodes>`.
    WeightedInterleave(NodeSpec),
}

const ALLOWED: &str = "allowed: default, local, bind:<nodes>, preferred:<node>, interleave:<nodes>, \
                       weighted-interleave:<nodes>, where <nodes> is a list like 0-1, `all` or \
                       `random`";

impl MemPolicySpec {
    /// Parse the numactl-like syntax.
    pub fn parse(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if s == "default" || s == "local" {
            return Ok(MemPolicySpec::Default);
        }
        let (mode, nodes) = s
            .split_once(':')
            .ok_or_else(|| format!("`{s}` is not a memory policy ({ALLOWED})"))?;
        let nodes = match nodes.trim() {
            "all" => NodeSpec::All,
            "random" => NodeSpec::Random,
            list => NodeSpec::List(
                Mask::parse_list(list, None).map_err(|e| format!("memory policy `{s}`: {e}"))?,
            ),
        };
        if let NodeSpec::List(m) = &nodes
            && m.is_empty()
        {
            return Err(format!("memory policy `{s}` has an empty node list"));
        }
        match mode.trim() {
            "bind" | "membind" => Ok(MemPolicySpec::Bind(nodes)),
            "preferred" => {
                if let NodeSpec::List(m) = &nodes
                    && m.count() != 1
                {
                    return Err(format!("`{s}`: preferred takes exactly one node"));
                }
                if nodes == NodeSpec::All {
                    return Err(format!("`{s}`: preferred takes one node, not `all`"));
                }
                Ok(MemPolicySpec::Preferred(nodes))
            }
            "interleave" => Ok(MemPolicySpec::Interleave(nodes)),
            "weighted-interleave" => Ok(MemPolicySpec::WeightedInterleave(nodes)),
            other => Err(format!("unknown memory policy mode `{other}` ({ALLOWED})")),
        }
    }

    /// Resolve against a machine with `nr_nodes` nodes and the run's random node.
    pub fn resolve(&self, nr_nodes: usize, random_node: usize) -> Result<MemPolicy, String> {
        let nodes = |n: &NodeSpec| -> Result<Mask, String> {
            let m = match n {
                NodeSpec::List(m) => m.clone(),
                NodeSpec::All => Mask::full(nr_nodes),
                NodeSpec::Random => Mask::single(random_node),
            };
            match m.last() {
                Some(l) if l >= nr_nodes => Err(format!(
                    "node {l} does not exist (the machine has nodes 0-{})",
                    nr_nodes - 1
                )),
                _ => Ok(m),
            }
        };
        Ok(match self {
            MemPolicySpec::Default => MemPolicy::Default,
            MemPolicySpec::Bind(n) => MemPolicy::Bind(nodes(n)?),
            MemPolicySpec::Preferred(n) => MemPolicy::Preferred(nodes(n)?.first().unwrap_or(0)),
            MemPolicySpec::Interleave(n) => MemPolicy::Interleave(nodes(n)?),
            MemPolicySpec::WeightedInterleave(n) => MemPolicy::WeightedInterleave(nodes(n)?),
        })
    }
}

impl fmt::Display for MemPolicySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = |n: &NodeSpec| match n {
            NodeSpec::List(m) => m.to_list_string(),
            NodeSpec::All => "all".into(),
            NodeSpec::Random => "random".into(),
        };
        match self {
            MemPolicySpec::Default => write!(f, "default"),
            MemPolicySpec::Bind(x) => write!(f, "bind:{}", n(x)),
            MemPolicySpec::Preferred(x) => write!(f, "preferred:{}", n(x)),
            MemPolicySpec::Interleave(x) => write!(f, "interleave:{}", n(x)),
            MemPolicySpec::WeightedInterleave(x) => write!(f, "weighted-interleave:{}", n(x)),
        }
    }
}

impl Serialize for MemPolicySpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for MemPolicySpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        MemPolicySpec::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// `weightiness` (mm/mempolicy.c, 6.16): the scale of the automatic weights, chosen by the
/// kernel as a balance between few consecutive pages per node and a small error against
/// the bandwidth ratios.
pub const WEIGHTINESS: u64 = 32;

/// `reduce_interleave_weights` (mm/mempolicy.c, Linux 6.16's `auto` mode): per node, its
/// bandwidth in MB/s as `mempolicy_set_node_perf` recorded it (`node_bw_table`: the
/// smaller of the read and write bandwidth of its CPU access coordinates; 0 when none was
/// recorded), or `None` for a node without memory (not `N_MEMORY`). Each node with memory
/// gets `WEIGHTINESS × bw / Σbw` (integer division; 1 when its bandwidth is 0 or its share
/// rounds below 1), then every weight is divided by their greatest common divisor; a node
/// without memory keeps the table's default, 1. The kernel's weights are `u8`: 32 at most
/// here, so no clamp is needed. (The kernel does this arithmetic in 32 bits where the sum
/// allows; 64 bits here give the same values for any real bandwidth.)
pub fn reduce_interleave_weights(bw: &[Option<u64>]) -> Vec<u8> {
    let sum: u64 = bw.iter().flatten().sum();
    let mut iw: Vec<u8> = bw
        .iter()
        .map(|b| match *b {
            Some(b) if b > 0 && sum < WEIGHTINESS * b => (WEIGHTINESS * b / sum) as u8,
            _ => 1,
        })
        .collect();
    let g = bw
        .iter()
        .zip(&iw)
        .filter(|(b, _)| b.is_some())
        .fold(0u8, |g, (_, &w)| gcd(g, w));
    if g > 1 {
        for (w, b) in iw.iter_mut().zip(bw) {
            if b.is_some() {
                *w /= g;
            }
        }
    }
    iw
}

fn gcd(a: u8, b: u8) -> u8 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The weighted-interleave weights Linux 6.16 (`weighted_interleave/auto`, on by default)
/// sets on machine `m`: [`reduce_interleave_weights`] of each memory node's bandwidth from
/// its best CPU initiator ([`crate::tiers::node_perf`], the model's stand-in for the
/// node's HMAT/CDAT access coordinates, `ACCESS_COORDINATE_CPU`, which
/// `node_set_perf_attrs` hands to `mempolicy_set_node_perf` in the patch series as
/// posted; the call site was not read in a release tree [unverified]). The model has one
/// bandwidth per node, so min(read, write) is that figure; a real PMEM node, whose write
/// bandwidth is about a third of its read bandwidth, would get a smaller weight than the
/// model gives it. Between 6.9 and 6.15 every weight defaults to 1 (plain interleave
/// unless an administrator writes `nodeN`); the model always uses these automatic ones.
pub fn auto_interleave_weights(m: &Machine) -> Vec<u8> {
    let bw: Vec<Option<u64>> = (0..m.nr_nodes())
        .map(|n| {
            (m.nodes[n].memory_bytes > 0).then(|| crate::tiers::node_perf(m, n).bandwidth_mb_s)
        })
        .collect();
    reduce_interleave_weights(&bw)
}

/// `weighted_interleave_nid`: the node of interleave index `ilx` over `set` (the policy's
/// nodes in ascending order, non-empty) with weights `iw` (indexed by node): `ilx` modulo
/// the set's total weight, walked node by node from the first, each taking its weight.
/// A task policy's allocations take the same sequence one after the other
/// (`weighted_interleave_nodes`: `il_prev` keeps a node for `il_weight` allocations), so
/// with `ilx` the task's count of allocations it gives the same nodes.
pub fn weighted_interleave_nid(set: &[usize], iw: &[u8], ilx: u64) -> usize {
    let w = |n: usize| u64::from(iw.get(n).copied().unwrap_or(1).max(1));
    let total: u64 = set.iter().map(|&n| w(n)).sum();
    let mut target = ilx % total.max(1);
    for &n in set {
        if target < w(n) {
            return n;
        }
        target -= w(n);
    }
    set[0]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_resolve() {
        let p = MemPolicySpec::parse("bind:random").unwrap();
        assert_eq!(p.resolve(2, 1).unwrap(), MemPolicy::Bind(Mask::single(1)));
        let p = MemPolicySpec::parse("interleave:all").unwrap();
        assert_eq!(
            p.resolve(4, 0).unwrap(),
            MemPolicy::Interleave(Mask::full(4))
        );
        assert_eq!(
            MemPolicySpec::parse("local").unwrap(),
            MemPolicySpec::Default
        );
        assert!(MemPolicySpec::parse("preferred:0-1").is_err());
        assert!(
            MemPolicySpec::parse("spread:0")
                .unwrap_err()
                .contains("allowed")
        );
        assert!(
            MemPolicySpec::parse("bind:3")
                .unwrap()
                .resolve(2, 0)
                .is_err()
        );
        assert_eq!(
            MemPolicySpec::parse("bind:0-1").unwrap().to_string(),
            "bind:0-1"
        );
    }
    #[test]
    fn weighted_interleave_parses_resolves_and_prints() {
        let p = MemPolicySpec::parse("weighted-interleave:0-3").unwrap();
        assert_eq!(
            p,
            MemPolicySpec::WeightedInterleave(NodeSpec::List(
                Mask::parse_list("0-3", None).unwrap()
            ))
        );
        assert_eq!(p.to_string(), "weighted-interleave:0-3");
        assert_eq!(
            p.resolve(4, 0).unwrap(),
            MemPolicy::WeightedInterleave(Mask::full(4))
        );
        assert_eq!(
            p.resolve(4, 0).unwrap().to_string(),
            "weighted-interleave:0-3"
        );
        assert_eq!(
            MemPolicySpec::parse("weighted-interleave:all")
                .unwrap()
                .resolve(2, 0)
                .unwrap(),
            MemPolicy::WeightedInterleave(Mask::full(2))
        );
        // Bad input: a node beyond the machine, an empty list, a misspelt mode.
        assert_eq!(
            MemPolicySpec::parse("weighted-interleave:5")
                .unwrap()
                .resolve(4, 0)
                .unwrap_err(),
            "node 5 does not exist (the machine has nodes 0-3)"
        );
        assert!(MemPolicySpec::parse("weighted-interleave:").is_err());
        let e = MemPolicySpec::parse("weighted_interleave:0-1").unwrap_err();
        assert!(
            e.contains("unknown memory policy mode `weighted_interleave`"),
            "{e}"
        );
        assert!(e.contains("weighted-interleave:<nodes>"), "{e}");
    }

    /// A worked example: two DRAM nodes of 200 GB/s and two CXL expanders of 36 GB/s (a
    /// 2-socket machine with a PCIe 5 x8 expander per socket). Σ = 472,000 MB/s;
    /// DRAM 32 × 200,000 / 472,000 = 13.56 → 13, CXL 32 × 36,000 / 472,000 = 2.44 → 2;
    /// gcd(13, 2) = 1: 13:13:2:2, so 26 of every 30 pages on DRAM.
    #[test]
    fn auto_weights_dram_and_cxl_worked_example() {
        let bw = [Some(200_000), Some(200_000), Some(36_000), Some(36_000)];
        assert_eq!(reduce_interleave_weights(&bw), vec![13, 13, 2, 2]);
        // The GCD step: 3:1 bandwidth gives 24:8, reduced to 3:1.
        assert_eq!(
            reduce_interleave_weights(&[Some(300), Some(100)]),
            vec![3, 1]
        );
        // A share below 1/32 rounds up to 1; a node without bandwidth data gets 1; a node
        // without memory keeps 1 and takes no part in the sum or the GCD.
        assert_eq!(
            reduce_interleave_weights(&[Some(1000), Some(10), Some(0), None]),
            vec![31, 1, 1, 1]
        );
        assert_eq!(
            reduce_interleave_weights(&[Some(100), None, Some(100)]),
            vec![1, 1, 1]
        );
        // One node: all of the bandwidth is 32/32, reduced to 1.
        assert_eq!(reduce_interleave_weights(&[Some(5)]), vec![1]);
    }

    #[test]
    fn auto_weights_of_the_tiered_presets() {
        let m = |name: &str| {
            let text = crate::presets::machine(name).unwrap();
            let spec: crate::MachineSpec = toml::from_str(text).unwrap();
            Machine::from_spec(spec, name).unwrap()
        };
        // dram-cxl-2s: DRAM 180 GiB/s = 193,274 MB/s, CXL 33.5 GiB/s = 35,970 MB/s;
        // 32 × 193,274 / 458,488 = 13, 32 × 35,970 / 458,488 = 2.
        assert_eq!(
            auto_interleave_weights(&m("dram-cxl-2s")),
            vec![13, 13, 2, 2]
        );
        // dram-pmem-2s96: DRAM 88 GiB/s = 94,489 MB/s, PMEM 26.7 GiB/s = 28,669 MB/s;
        // 12 and 3, divided by their GCD 3: 4:4:1:1.
        assert_eq!(
            auto_interleave_weights(&m("dram-pmem-2s96")),
            vec![4, 4, 1, 1]
        );
    }

    #[test]
    fn weighted_interleave_nid_walks_the_weights() {
        let iw = [13, 13, 2, 2];
        let set = [0, 2];
        let nodes: Vec<usize> = (0..30)
            .map(|i| weighted_interleave_nid(&set, &iw, i))
            .collect();
        assert_eq!(&nodes[..13], &[0; 13]);
        assert_eq!(&nodes[13..15], &[2, 2]);
        assert_eq!(&nodes[15..28], &[0; 13]);
        assert_eq!(weighted_interleave_nid(&set, &iw, 15 + 13), 2);
        // All weights 1: plain interleave.
        assert_eq!(weighted_interleave_nid(&[1, 3], &[1, 1, 1, 1], 5), 3);
    }
}
