//! Samples as the policy sees them: a sensor's raw samples (thread, CPU, page address)
//! with each page's node found when the pass begins (live: a `move_pages` query, no move;
//! simulated: the world's page) and each CPU's node.

use numabal_model::{Pid, Tid};
use numabal_policy::AccessSample;
use std::collections::{BTreeMap, BTreeSet};

/// One sample as a sensor's ring gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawSample {
    /// Process.
    pub pid: u32,
    /// Thread.
    pub tid: u32,
    /// CPU it faulted (or accessed) on.
    pub cpu: u32,
    /// Address rounded down to its page (base or transparent huge page).
    pub addr: u64,
}

/// Samples of the processes in `managed` with their pages' nodes and their CPUs' nodes.
/// `page_nodes(pid, addrs)` gives the node of each of a process's unique sampled pages in
/// address order (`None`: not present, dropped), or `None` when the process is gone.
pub fn resolve(
    raw: &[RawSample],
    managed: &BTreeSet<u32>,
    cpu_nodes: &[Option<usize>],
    mut page_nodes: impl FnMut(u32, &[u64]) -> Option<Vec<Option<usize>>>,
) -> Vec<AccessSample> {
    let mut by_pid: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for r in raw.iter().filter(|r| managed.contains(&r.pid)) {
        by_pid.entry(r.pid).or_default().push(r.addr);
    }
    // Sorted by (pid, address): pids come in order, each one's addresses sorted. A vector
    // searched by halves, not a map: a pass of a soft-dirty sensor over a large working set
    // resolves millions of samples.
    let mut node_of: Vec<((u32, u64), usize)> = Vec::new();
    for (pid, mut addrs) in by_pid {
        addrs.sort_unstable();
        addrs.dedup();
        let Some(nodes) = page_nodes(pid, &addrs) else {
            continue; // gone
        };
        for (&a, n) in addrs.iter().zip(nodes) {
            if let Some(n) = n {
                node_of.push(((pid, a), n));
            }
        }
    }
    raw.iter()
        .filter_map(|r| {
            let at = node_of
                .binary_search_by_key(&(r.pid, r.addr), |e| e.0)
                .ok()?;
            let page_node = node_of[at].1;
            let node = cpu_nodes.get(r.cpu as usize).copied().flatten()?;
            Some(AccessSample {
                tid: Tid(r.tid),
                pid: Pid(r.pid),
                node,
                addr: r.addr,
                page_node,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_get_page_and_cpu_nodes_and_lose_what_is_gone() {
        let s = |pid, tid, cpu, addr| RawSample {
            pid,
            tid,
            cpu,
            addr,
        };
        let raw = [
            s(1, 1, 0, 0x2000),
            s(1, 2, 3, 0x1000),
            s(1, 2, 3, 0x2000),
            s(2, 5, 1, 0x1000), // not managed
            s(3, 6, 1, 0x1000), // gone
            s(1, 1, 9, 0x3000), // not present
        ];
        let managed: BTreeSet<u32> = [1, 3].into();
        let cpu_nodes = [Some(0), Some(0), Some(1), Some(1)];
        let mut asked = Vec::new();
        let out = resolve(&raw, &managed, &cpu_nodes, |pid, addrs| {
            asked.push((pid, addrs.to_vec()));
            match pid {
                1 => Some(vec![Some(1), Some(0), None]),
                _ => None,
            }
        });
        assert_eq!(
            asked,
            vec![(1, vec![0x1000, 0x2000, 0x3000]), (3, vec![0x1000])]
        );
        let got: Vec<(u32, usize, usize)> =
            out.iter().map(|a| (a.tid.0, a.node, a.page_node)).collect();
        assert_eq!(got, vec![(1, 0, 0), (2, 1, 1), (2, 1, 0)]);
    }
}
