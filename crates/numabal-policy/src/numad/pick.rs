//! numad's node choice (`pick_numa_nodes` and `combined_value_of_weighted_resources` in
//! numad 20150602), in numad's units and integer arithmetic: memory in MB, CPU in
//! hundredths of a CPU. Shared by the daemon passes and pre-placement advice (`numad -w`).
//!
//! ```text
//!  request (cpus, mbs)          per node: free MB, free CPU (+ the process's own footprint
//!        │                      added back: 17/16 x its MB there if unbound, 5/4 x if bound)
//!        ▼                                  │
//!  min_req_nodes = max(ceil(mbs / node0 MB), ceil((cpus - cpu_flex) / node0 CPUs))
//!        │                                  ▼
//!        │                      value(node) = (10 x needed MB + 4 x surplus MB)
//!        │                                  x (6 x needed CPU + 1 x surplus CPU)
//!        ▼
//!  anchor = argmax over nodes i of  sum over the min_req_nodes nodes nearest i of
//!                                   value / distance(i)^2
//!        ▼
//!  take nodes nearest the anchor first until min_req_nodes, the MB request and (unless
//!  CPUs are oversubscribed) the CPU request are met
//!        ▼
//!  already bound there with >= m% of its memory local?  -> Keep, else Target(nodes)
//! ```

use numabal_model::Mask;

/// numad keeps this much memory free on a node it assigns memory from, MB (`MBS_MARGIN`).
pub const MBS_MARGIN: i64 = 100;

/// A node's resources for one decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeRes {
    /// `MemTotal`, MB.
    pub mbs_total: i64,
    /// Free memory, MB.
    pub mbs_free: i64,
    /// CPUs, hundredths (hyperthread siblings counted at `-t` percent).
    pub cpus_total: i64,
    /// Idle CPU over the last sampling gap, hundredths (same discount).
    pub cpus_free: i64,
}

/// A request for resources.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// CPUs wanted, hundredths.
    pub cpus: i64,
    /// Memory wanted, MB.
    pub mbs: i64,
    /// `-u`, percent.
    pub target_utilization: u32,
    /// `-m`, percent.
    pub target_memlocality: u32,
    /// The sum of the CPU use of every candidate fits in the machine: leftover CPU demand
    /// does not make the choice take more nodes (numad's `assume_enough_cpus`).
    pub assume_enough_cpus: bool,
}

/// The process being placed (a running one; `None` for pre-placement advice).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placing<'a> {
    /// Its memory per node, MB (`numa_maps`).
    pub process_mbs: &'a [i64],
    /// Its resident size, MB.
    pub mbs_used: i64,
    /// Its CPU use, hundredths.
    pub cpus_used: i64,
    /// The nodes it is bound to (all nodes if none).
    pub node_list: &'a Mask,
    /// numad bound it before (or found it bound at start).
    pub bound: bool,
}

/// The outcome of a choice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pick {
    /// Already bound to the chosen nodes with enough memory there: nothing to do.
    Keep,
    /// Bind to these nodes.
    Target(Mask),
}

/// numad's weighing of one node's free resources against a request: the part of the free
/// capacity the request needs weighs more than the surplus, memory more than CPU.
pub fn combined_value(mbs: i64, cpus: i64, mbs_free: i64, cpus_free: i64) -> i64 {
    let (needed_mem, excess_mem) = if mbs_free > mbs {
        (mbs, mbs_free - mbs)
    } else {
        (mbs_free, 0)
    };
    let (needed_cpu, excess_cpu) = if cpus_free > cpus {
        (cpus, cpus_free - cpus)
    } else {
        (cpus_free, 0)
    };
    (needed_mem * 10 + excess_mem * 4) * (needed_cpu * 6 + excess_cpu)
}

/// Node ids in order of distance from `from`, ties broken by the larger value. numad's
/// selection sort with swaps is reproduced step by step, since its order among nodes equal
/// in both keys depends on the swaps.
fn by_distance(from: usize, distance: &[Vec<u32>], value: &[i64]) -> Vec<usize> {
    let n = value.len();
    let mut index: Vec<usize> = (0..n).collect();
    for ij in 0..n {
        let mut best = ij;
        for ik in ij + 1..n {
            let d_ik = distance[index[ik]][from];
            let d_best = distance[index[best]][from];
            if d_best > d_ik || (d_best == d_ik && value[index[best]] < value[index[ik]]) {
                best = ik;
            }
        }
        index.swap(ij, best);
    }
    index
}

/// numad's `pick_numa_nodes`. `nodes` and `distance` are indexed by node id (ids are
/// dense here, so numad's id/index confusion cannot arise); node 0 is the size reference,
/// as in numad.
pub fn pick_numa_nodes(
    nodes: &[NodeRes],
    distance: &[Vec<u32>],
    req: &Request,
    p: Option<&Placing<'_>>,
) -> Pick {
    let n = nodes.len();
    let (mut cpus, mut mbs) = (req.cpus, req.mbs);
    let mut assume_enough_cpus = req.assume_enough_cpus;
    let mut tmp: Vec<NodeRes> = nodes.to_vec();
    let mut sum_cpus_free = 0i64;
    if let Some(p) = p {
        let spread = p.node_list.count() >= n;
        // The average free CPU of the process's current nodes, with its own use added back.
        let on: Vec<usize> = p.node_list.iter().filter(|&i| i < n).collect();
        let avg_cpus_free = (p.cpus_used + on.iter().map(|&i| nodes[i].cpus_free).sum::<i64>())
            / on.len().max(1) as i64;
        for (ix, t) in tmp.iter_mut().enumerate() {
            let mb = p.process_mbs.get(ix).copied().unwrap_or(0);
            if spread {
                // Not bound to a subset: its memory (light bias) and the CPU it uses in
                // proportion to that memory count as free here.
                t.mbs_free += mb * 17 / 16;
                t.cpus_free += p.cpus_used * mb / p.mbs_used.max(1);
            } else {
                // Bound: heavier bias toward where its memory is; its nodes share its CPU.
                t.mbs_free += mb * 5 / 4;
                if p.node_list.contains(ix) {
                    t.cpus_free = avg_cpus_free;
                }
            }
            sum_cpus_free += t.cpus_free;
            t.cpus_free = t.cpus_free.min(t.cpus_total);
            t.mbs_free = t.mbs_free.min(t.mbs_total);
        }
    }
    for t in tmp.iter_mut() {
        t.cpus_free = t.cpus_free.max(1); // numad's 1/100 CPU floor
    }
    let mut value: Vec<i64> = tmp
        .iter()
        .map(|t| combined_value(mbs, cpus, t.mbs_free, t.cpus_free))
        .collect();
    if p.is_some() && cpus > sum_cpus_free {
        // CPUs are oversubscribed anyway: place by memory.
        assume_enough_cpus = true;
    }
    // A running process may get a little less CPU than it asked for (half the margin
    // `-u` keeps); advice errs on the side of more.
    let cpu_flex = if p.is_some() && req.target_utilization < 100 {
        (100 - req.target_utilization as i64) * nodes[0].cpus_total / 200
    } else {
        0
    };
    let ceil_div = |a: i64, b: i64| -> i64 {
        if b <= 0 {
            return n as i64;
        }
        (a as f64 / b as f64).ceil() as i64
    };
    let mem_req_nodes = ceil_div(mbs, nodes[0].mbs_total);
    let cpu_req_nodes = ceil_div(cpus - cpu_flex, nodes[0].cpus_total);
    let mut min_req_nodes = mem_req_nodes.max(cpu_req_nodes).min(n as i64);
    // The anchor: the node whose nearest min_req_nodes nodes weigh most, each divided by
    // its distance squared.
    let mut best_anchor = 0usize;
    let mut best_totmag = i64::MIN;
    for ix in 0..n {
        let index = by_distance(ix, distance, &value);
        let totmag: i64 = index
            .iter()
            .take(min_req_nodes.max(0) as usize)
            .map(|&k| {
                let d = distance[k][ix] as i64;
                value[k] / (d * d).max(1)
            })
            .sum();
        if totmag > best_totmag {
            best_totmag = totmag;
            best_anchor = ix;
        }
    }
    let index = by_distance(best_anchor, distance, &value);
    let mut target = Mask::new();
    let mut k = 0usize;
    while k < n && (min_req_nodes > 0 || mbs > 0 || (cpus > cpu_flex && !assume_enough_cpus)) {
        let node = index[k];
        target.insert(node);
        min_req_nodes -= 1;
        if target.count() == n {
            break;
        }
        let t = &mut tmp[node];
        if t.mbs_free >= mbs + MBS_MARGIN {
            t.mbs_free -= mbs;
            mbs = 0;
        } else {
            // (Below the margin this adds to the request, as numad's arithmetic does.)
            mbs -= t.mbs_free - MBS_MARGIN;
            t.mbs_free = MBS_MARGIN;
        }
        if t.cpus_free >= cpus {
            t.cpus_free -= cpus;
            cpus = 0;
        } else {
            cpus -= t.cpus_free;
            t.cpus_free = 0;
        }
        value[node] = combined_value(mbs, cpus, t.mbs_free, t.cpus_free);
        k += 1;
    }
    if let Some(p) = p {
        let nonlocal: i64 = (0..n)
            .filter(|&ix| !target.contains(ix))
            .map(|ix| p.process_mbs.get(ix).copied().unwrap_or(0))
            .sum();
        let disp_percent = 100 * nonlocal / p.mbs_used.max(1);
        if disp_percent <= 100 - req.target_memlocality as i64 && p.bound && target == *p.node_list
        {
            return Pick::Keep;
        }
    } else if target.is_empty() {
        target.insert(0); // advice always names a node
    }
    Pick::Target(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// rhel-4n40: 4 nodes of 10 CPUs and about 63 GiB, SLIT 10/21.
    fn four(free_cpus: [i64; 4], free_mb: [i64; 4]) -> Vec<NodeRes> {
        (0..4)
            .map(|i| NodeRes {
                mbs_total: 64_512,
                mbs_free: free_mb[i],
                cpus_total: 1000,
                cpus_free: free_cpus[i],
            })
            .collect()
    }

    fn slit4() -> Vec<Vec<u32>> {
        (0..4)
            .map(|i| (0..4).map(|j| if i == j { 10 } else { 21 }).collect())
            .collect()
    }

    fn advice(nodes: &[NodeRes], d: &[Vec<u32>], cpus: i64, mbs: i64) -> Mask {
        let req = Request {
            cpus,
            mbs,
            target_utilization: 85,
            target_memlocality: 90,
            assume_enough_cpus: false,
        };
        match pick_numa_nodes(nodes, d, &req, None) {
            Pick::Target(m) => m,
            Pick::Keep => panic!("advice never keeps"),
        }
    }

    #[test]
    fn value_weighs_the_needed_part_more_than_the_surplus() {
        // 1000 MB needed of 3000 free, 2 CPUs of 5: (10*1000 + 4*2000) * (6*200 + 300).
        assert_eq!(combined_value(1000, 200, 3000, 500), 18_000 * 1_500);
        // Short of both: everything free is needed.
        assert_eq!(combined_value(5000, 800, 3000, 500), 30_000 * 3_000);
    }

    #[test]
    fn advice_on_an_idle_machine_takes_one_node_and_the_lowest_id_on_ties() {
        let nodes = four([1000; 4], [60_000; 4]);
        assert_eq!(advice(&nodes, &slit4(), 500, 8000), Mask::single(0));
    }

    #[test]
    fn advice_avoids_busy_nodes() {
        // Node 0 has no free CPU, node 1 little memory: node 2 (the first of the equal rest).
        let nodes = four([1, 1000, 1000, 1000], [60_000, 2_000, 60_000, 60_000]);
        assert_eq!(advice(&nodes, &slit4(), 500, 8000), Mask::single(2));
        // The most free CPU wins among nodes with equal memory.
        let nodes = four([1000, 600, 400, 900], [60_000; 4]);
        assert_eq!(advice(&nodes, &slit4(), 500, 8000), Mask::single(0));
        let nodes = four([300, 600, 400, 900], [60_000; 4]);
        assert_eq!(advice(&nodes, &slit4(), 500, 8000), Mask::single(3));
    }

    #[test]
    fn requests_larger_than_a_node_take_the_nearest_nodes() {
        // 8 nodes in two quads: 10 local, 12 pair, 17 same quad, 19 other quad.
        let d: Vec<Vec<u32>> = (0..8)
            .map(|i: usize| {
                (0..8)
                    .map(|j: usize| match (i, j) {
                        _ if i == j => 10,
                        _ if i / 2 == j / 2 => 12,
                        _ if i / 4 == j / 4 => 17,
                        _ => 19,
                    })
                    .collect()
            })
            .collect();
        let nodes: Vec<NodeRes> = (0..8)
            .map(|_| NodeRes {
                mbs_total: 32_000,
                mbs_free: 30_000,
                cpus_total: 1000,
                cpus_free: 1000,
            })
            .collect();
        // 15 CPUs: two nodes, and the pair partner of the first.
        assert_eq!(advice(&nodes, &d, 1500, 1000), Mask::from_ids([0, 1]));
        // 50 GB: two nodes by memory.
        assert_eq!(advice(&nodes, &d, 100, 50_000), Mask::from_ids([0, 1]));
        // 35 CPUs: four nodes, the whole quad.
        assert_eq!(advice(&nodes, &d, 3500, 1000), Mask::from_ids([0, 1, 2, 3]));
    }

    #[test]
    fn a_running_process_is_drawn_to_its_memory_and_kept_when_local() {
        let d = slit4();
        // Busy machine (no idle CPU), the process holds 30 GB on node 2 and 10 GB on node 0.
        let nodes = four([0; 4], [20_000; 4]);
        let mbs = [10_000, 0, 30_000, 0];
        let all = Mask::full(4);
        let p = Placing {
            process_mbs: &mbs,
            mbs_used: 40_000,
            cpus_used: 800,
            node_list: &all,
            bound: false,
        };
        let req = Request {
            cpus: 800 * 100 / 85,
            mbs: 40_000 * 100 / 85,
            target_utilization: 85,
            target_memlocality: 90,
            assume_enough_cpus: true,
        };
        assert_eq!(
            pick_numa_nodes(&nodes, &d, &req, Some(&p)),
            Pick::Target(Mask::single(2))
        );
        // Bound to node 2 with 95% there: kept; with 80% there: moved again.
        let two = Mask::single(2);
        let mbs = [2_000, 0, 38_000, 0];
        let p = Placing {
            process_mbs: &mbs,
            node_list: &two,
            bound: true,
            ..p
        };
        assert_eq!(pick_numa_nodes(&nodes, &d, &req, Some(&p)), Pick::Keep);
        let mbs = [8_000, 0, 32_000, 0];
        let p = Placing {
            process_mbs: &mbs,
            ..p
        };
        assert_eq!(
            pick_numa_nodes(&nodes, &d, &req, Some(&p)),
            Pick::Target(Mask::single(2))
        );
    }

    #[test]
    fn target_utilization_decides_when_a_process_needs_a_second_node() {
        // 4 x 10 CPUs, a process using 9 or 10 CPUs: -u 85 asks 9 * 100/85 = 10.6 CPUs, less
        // the flex of 0.75: one node at 9, two at 10; -u 100 (no flex) one node at 10.
        let d = slit4();
        let nodes = four([0; 4], [50_000; 4]);
        let mbs = [2_000, 2_000, 2_000, 2_000];
        let all = Mask::full(4);
        let count = |used: i64, u: u32| -> usize {
            let p = Placing {
                process_mbs: &mbs,
                mbs_used: 8_000,
                cpus_used: used,
                node_list: &all,
                bound: false,
            };
            let req = Request {
                cpus: used * 100 / u.min(130) as i64,
                mbs: 8_000 * 100 / u.min(100) as i64,
                target_utilization: u,
                target_memlocality: 90,
                assume_enough_cpus: true,
            };
            match pick_numa_nodes(&nodes, &d, &req, Some(&p)) {
                Pick::Target(m) => m.count(),
                Pick::Keep => 0,
            }
        };
        assert_eq!(count(900, 85), 1);
        assert_eq!(count(1000, 85), 2);
        assert_eq!(count(1000, 100), 1);
        assert_eq!(count(1100, 100), 2);
    }
}
