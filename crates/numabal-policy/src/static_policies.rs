//! Static placement policies: what an operator does by hand with numactl/taskset.
//!
//! - `none`: Linux without NUMA balancing; first touch plus the scheduler decide.
//! - `bind`: autonuma-benchmark HARD_BIND: each process (or each per-node block of a
//!   `placement = "spread"` group) gets CPUs and memory on its own nodes.
//! - `reverse-bind`: INVERSE_BIND: the same CPUs, memory on the mirror nodes (the other
//!   half of the machine), the worst case.
//! - `interleave`: `numactl --interleave=all`: every process's memory round-robin over its
//!   allowed nodes; threads free.
//! - `preferred`: `numactl --preferred=NODE`: every process's memory on one node first,
//!   then along that node's zonelist (nearest first); threads free.
//! - `weighted-interleave`: `numactl --weighted-interleave=all` (Linux 6.9): round robin
//!   over the allowed nodes, each taking as many pages in a row as its system-wide weight
//!   (the backend's; the simulator's are Linux 6.16's automatic ones, from bandwidth).
//!
//! The kernel's NUMA balancing does not scan memory under an explicit preferred,
//! interleave or weighted-interleave policy (no `MPOL_F_MOF`), so these placements stay.
//!
//! A placement these policies set replaces the workload's own `affinity`/`mempolicy` for
//! the process (the HARD_BIND builds of autonuma-benchmark replace the benchmark's own
//! `set_mempolicy` calls the same way); cpusets always apply.

use crate::api::{Action, Policy, ProcessInfo, ThreadInfo};
use numabal_model::scenario::PolicySpec;
use numabal_model::workload::{Placement, thread_slice};
use numabal_model::{InputError, KernelVersion, Machine, Mask, MemPolicy, Pid};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `none`.
#[derive(Debug, Default)]
pub struct NoPolicy;

impl Policy for NoPolicy {
    fn name(&self) -> &str {
        "none"
    }
}

/// `interleave`.
#[derive(Debug, Default)]
pub struct Interleave;

impl Policy for Interleave {
    fn name(&self) -> &str {
        "interleave"
    }

    fn on_process_start(&mut self, machine: &Machine, p: &ProcessInfo, out: &mut Vec<Action>) {
        let mems = p.cpuset_mems.and(&Mask::full(machine.nr_nodes()));
        out.push(Action::SetProcessMempolicy {
            pid: p.pid,
            policy: MemPolicy::Interleave(mems),
        });
    }
}

/// The nodes of `m` with memory (`N_MEMORY`).
fn memory_nodes(m: &Machine) -> Mask {
    Mask::from_ids((0..m.nr_nodes()).filter(|&n| m.nodes[n].memory_bytes > 0))
}

/// `weighted-interleave`.
#[derive(Debug, Default)]
pub struct WeightedInterleave;

impl Policy for WeightedInterleave {
    fn name(&self) -> &str {
        "weighted-interleave"
    }

    fn on_process_start(&mut self, machine: &Machine, p: &ProcessInfo, out: &mut Vec<Action>) {
        // set_mempolicy keeps the nodes of the cpuset that have memory (mpol_set_nodemask).
        let mems = p.cpuset_mems.and(&memory_nodes(machine));
        if mems.is_empty() {
            return;
        }
        out.push(Action::SetProcessMempolicy {
            pid: p.pid,
            policy: MemPolicy::WeightedInterleave(mems),
        });
    }
}

/// Tunables of `preferred`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct PreferredTunables {
    /// `numactl --preferred=NODE`: the node. None: for each process, the node of the top
    /// memory tier (as the newest kernel the model knows forms the tiers) that is nearest
    /// (SLIT) to the node of its cpuset's first CPU, the lowest such id on a tie, within
    /// its cpuset mems.
    pub node: Option<u64>,
}

impl PreferredTunables {
    /// Parse a policy table's tunables (a bad key or type names `policy.<key>`).
    pub fn from_spec(spec: &PolicySpec) -> Result<PreferredTunables, InputError> {
        spec.parse_tunables(&["node"])
    }
}

/// `preferred`.
#[derive(Debug, Default)]
pub struct Preferred {
    tun: PreferredTunables,
    /// Per node: in the top memory tier (computed at the first process start).
    toptier: Option<Vec<bool>>,
}

impl Preferred {
    /// `numactl --preferred` with these tunables.
    pub fn new(tun: PreferredTunables) -> Self {
        Preferred { tun, toptier: None }
    }

    /// The node for process `p` when none was given.
    fn default_node(&mut self, m: &Machine, p: &ProcessInfo) -> Option<usize> {
        let top = self
            .toptier
            .get_or_insert_with(|| m.memory_tiers(KernelVersion::NEWEST).toptier);
        let mems = p.cpuset_mems.and(&memory_nodes(m));
        let from = p.cpuset_cpus.first().map_or(0, |c| m.cpus[c].node);
        let nearest = |set: &Mask| set.iter().min_by_key(|&n| (m.distance[from][n], n));
        let top_mems = Mask::from_ids(mems.iter().filter(|&n| top[n]));
        nearest(&top_mems).or_else(|| nearest(&mems))
    }
}

impl Policy for Preferred {
    fn name(&self) -> &str {
        "preferred"
    }

    fn check_machine(&self, machine: &Machine) -> Result<(), (&'static str, String)> {
        let Some(n) = self.tun.node else {
            return Ok(());
        };
        let mem = memory_nodes(machine);
        if n >= machine.nr_nodes() as u64 || !mem.contains(n as usize) {
            return Err((
                "node",
                format!(
                    "is {n} (allowed: a node of the machine with memory: {})",
                    mem.to_list_string()
                ),
            ));
        }
        Ok(())
    }

    fn on_process_start(&mut self, machine: &Machine, p: &ProcessInfo, out: &mut Vec<Action>) {
        let node = match self.tun.node {
            Some(n) => Some(n as usize),
            None => self.default_node(machine, p),
        };
        // A node outside the process's cpuset mems is kept, as after a cpuset change:
        // allocations then start from the cpuset's nodes nearest to it.
        if let Some(node) = node.filter(|&n| n < machine.nr_nodes()) {
            out.push(Action::SetProcessMempolicy {
                pid: p.pid,
                policy: MemPolicy::Preferred(node),
            });
        }
    }
}

/// Where a group's threads go.
#[derive(Debug, Clone)]
enum GroupPlan {
    /// Every thread on these CPU nodes.
    Nodes(Mask),
    /// Thread i of n on `nodes[i * len / n]`.
    Spread(Vec<usize>),
}

/// `bind` and `reverse-bind`.
#[derive(Debug)]
pub struct Bind {
    reverse: bool,
    /// Threads assigned per node so far (processes are placed on the least loaded nodes).
    node_threads: Vec<u64>,
    /// Per process: per group plan, plus the mirror map used for memory.
    plans: BTreeMap<Pid, (Vec<GroupPlan>, Vec<usize>)>,
}

impl Bind {
    /// HARD_BIND (`reverse = false`) or INVERSE_BIND (`reverse = true`).
    pub fn new(reverse: bool) -> Self {
        Bind {
            reverse,
            node_threads: Vec::new(),
            plans: BTreeMap::new(),
        }
    }

    fn mem_nodes(&self, cpu_nodes: &Mask, mirror: &[usize]) -> Mask {
        if self.reverse {
            Mask::from_ids(cpu_nodes.iter().map(|n| mirror[n]))
        } else {
            cpu_nodes.clone()
        }
    }
}

/// The node a node's memory goes to under reverse binding: the node half-way round the
/// list of allowed nodes (`0<->1` on two nodes, `0->2, 1->3, ...` on four).
fn mirror_map(allowed: &[usize], nr_nodes: usize) -> Vec<usize> {
    let mut m: Vec<usize> = (0..nr_nodes).collect();
    let k = allowed.len();
    for (i, &n) in allowed.iter().enumerate() {
        m[n] = allowed[(i + k / 2) % k.max(1)];
    }
    m
}

impl Policy for Bind {
    fn name(&self) -> &str {
        if self.reverse { "reverse-bind" } else { "bind" }
    }

    fn on_process_start(&mut self, machine: &Machine, p: &ProcessInfo, out: &mut Vec<Action>) {
        let nr_nodes = machine.nr_nodes();
        if self.node_threads.len() != nr_nodes {
            self.node_threads = vec![0; nr_nodes];
        }
        // Nodes where the process may both run and allocate.
        let allowed: Vec<usize> = (0..nr_nodes)
            .filter(|&n| {
                p.cpuset_mems.contains(n) && machine.nodes[n].cpus.intersects(&p.cpuset_cpus)
            })
            .collect();
        if allowed.is_empty() {
            return; // nothing to bind to: leave the process to the scheduler
        }
        let mirror = mirror_map(&allowed, nr_nodes);
        let k = allowed.len();
        let has_spread = p.groups.iter().any(|g| g.placement == Placement::Spread);
        let together: u64 = p
            .groups
            .iter()
            .filter(|g| g.placement == Placement::Together)
            .map(|g| g.threads as u64)
            .sum();
        let mut plans = Vec::with_capacity(p.groups.len());
        let together_nodes = if has_spread {
            Mask::from_ids(allowed.iter().copied())
        } else {
            // As few nodes as hold the process's threads, the least loaded window of them.
            let cpus_per_node = allowed
                .iter()
                .map(|&n| machine.nodes[n].cpus.and(&p.cpuset_cpus).count() as u64)
                .min()
                .unwrap_or(1)
                .max(1);
            let m = (together.div_ceil(cpus_per_node) as usize).clamp(1, k);
            let best = (0..=k - m)
                .min_by_key(|&s| {
                    (
                        allowed[s..s + m]
                            .iter()
                            .map(|&n| self.node_threads[n])
                            .sum::<u64>(),
                        s,
                    )
                })
                .unwrap_or(0);
            let nodes = &allowed[best..best + m];
            for &n in nodes {
                self.node_threads[n] += together.div_ceil(m as u64);
            }
            Mask::from_ids(nodes.iter().copied())
        };
        for g in &p.groups {
            match g.placement {
                Placement::Together => plans.push(GroupPlan::Nodes(together_nodes.clone())),
                Placement::Spread => {
                    for i in 0..g.threads as usize {
                        self.node_threads[allowed[i * k / g.threads as usize]] += 1;
                    }
                    plans.push(GroupPlan::Spread(allowed.clone()));
                }
            }
        }
        // Memory: the process's nodes, and each spread thread's slice on its own node.
        let all_cpu_nodes = if has_spread {
            Mask::from_ids(allowed.iter().copied())
        } else {
            together_nodes
        };
        out.push(Action::SetProcessMempolicy {
            pid: p.pid,
            policy: MemPolicy::Bind(self.mem_nodes(&all_cpu_nodes, &mirror)),
        });
        for (ri, r) in p.regions.iter().enumerate() {
            let Some(g) = r.sliced_by else { continue };
            let GroupPlan::Spread(nodes) = &plans[g] else {
                continue;
            };
            let n = p.groups[g].threads as u64;
            // Merge consecutive slices that land on the same node into one mbind range.
            let mut run: Option<(u64, u64, usize)> = None;
            for i in 0..n {
                let node = nodes[(i as usize) * k / n as usize];
                let mem = if self.reverse { mirror[node] } else { node };
                let (s, e) = thread_slice(r.pages, i, n);
                run = match run {
                    Some((rs, _, rn)) if rn == mem => Some((rs, e, rn)),
                    Some((rs, re, rn)) => {
                        out.push(range(p.pid, ri, rs, re, rn));
                        Some((s, e, mem))
                    }
                    None => Some((s, e, mem)),
                };
            }
            if let Some((rs, re, rn)) = run {
                out.push(range(p.pid, ri, rs, re, rn));
            }
        }
        self.plans.insert(p.pid, (plans, mirror));
    }

    fn on_thread_start(&mut self, machine: &Machine, t: &ThreadInfo, out: &mut Vec<Action>) {
        let Some((plans, mirror)) = self.plans.get(&t.pid) else {
            return;
        };
        match &plans[t.group] {
            GroupPlan::Nodes(nodes) => {
                out.push(Action::SetThreadAffinity {
                    tid: t.tid,
                    cpus: machine.cpus_of_nodes(nodes),
                });
            }
            GroupPlan::Spread(nodes) => {
                let node = nodes[t.index as usize * nodes.len() / t.group_threads as usize];
                out.push(Action::SetThreadAffinity {
                    tid: t.tid,
                    cpus: machine.nodes[node].cpus.clone(),
                });
                let mem = if self.reverse { mirror[node] } else { node };
                out.push(Action::SetThreadMempolicy {
                    tid: t.tid,
                    policy: MemPolicy::Bind(Mask::single(mem)),
                });
            }
        }
    }

    fn on_process_exit(&mut self, pid: Pid) {
        // Keep the node load: a static binder does not rebalance when a process leaves.
        self.plans.remove(&pid);
    }
}

fn range(pid: Pid, region: usize, first: u64, end: u64, node: usize) -> Action {
    Action::SetRangeMempolicy {
        pid,
        region,
        first_page: first,
        end_page: end,
        policy: MemPolicy::Bind(Mask::single(node)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{GroupInfo, RegionInfo};
    use crate::util::test::machine;
    use numabal_model::Tid;

    impl Action {
        /// The memory policy a `SetProcessMempolicy` sets, as text.
        fn to_string_policy(&self) -> String {
            match self {
                Action::SetProcessMempolicy { policy, .. } => policy.to_string(),
                a => panic!("not a process mempolicy: {a:?}"),
            }
        }
    }

    fn proc(
        pid: u32,
        groups: Vec<(u32, Placement)>,
        regions: Vec<(u64, Option<usize>)>,
        m: &Machine,
    ) -> ProcessInfo {
        ProcessInfo {
            pid: Pid(pid),
            name: "p".into(),
            instance: 0,
            groups: groups
                .into_iter()
                .enumerate()
                .map(|(i, (threads, placement))| GroupInfo {
                    name: format!("g{i}"),
                    threads,
                    placement,
                })
                .collect(),
            regions: regions
                .into_iter()
                .map(|(pages, sliced_by)| RegionInfo {
                    name: "r".into(),
                    pages,
                    sliced_by,
                    shared: false,
                })
                .collect(),
            cpuset_cpus: Mask::full(m.nr_cpus()),
            cpuset_mems: Mask::full(m.nr_nodes()),
        }
    }

    #[test]
    fn numa01_processes_get_a_node_each_and_reverse_swaps_memory() {
        let m = machine("autonuma-2n24");
        for reverse in [false, true] {
            let mut b = Bind::new(reverse);
            let mut out = Vec::new();
            b.on_process_start(
                &m,
                &proc(1, vec![(12, Placement::Together)], vec![(786432, None)], &m),
                &mut out,
            );
            b.on_process_start(
                &m,
                &proc(2, vec![(12, Placement::Together)], vec![(786432, None)], &m),
                &mut out,
            );
            let mem: Vec<String> = out
                .iter()
                .filter_map(|a| match a {
                    Action::SetProcessMempolicy { policy, .. } => Some(policy.to_string()),
                    _ => None,
                })
                .collect();
            if reverse {
                assert_eq!(mem, vec!["bind:1", "bind:0"]);
            } else {
                assert_eq!(mem, vec!["bind:0", "bind:1"]);
            }
            let mut out = Vec::new();
            b.on_thread_start(
                &m,
                &ThreadInfo {
                    tid: Tid(5),
                    pid: Pid(2),
                    group: 0,
                    index: 3,
                    group_threads: 12,
                },
                &mut out,
            );
            assert_eq!(
                out,
                vec![Action::SetThreadAffinity {
                    tid: Tid(5),
                    cpus: Mask::parse_list("6-11,18-23", None).unwrap()
                }]
            );
        }
    }

    #[test]
    fn numa02_spread_group_binds_slices_per_node() {
        let m = machine("autonuma-2n24");
        let mut b = Bind::new(false);
        let mut out = Vec::new();
        let p = proc(
            1,
            vec![(1, Placement::Together), (24, Placement::Spread)],
            vec![(262144, Some(1))],
            &m,
        );
        b.on_process_start(&m, &p, &mut out);
        assert!(out.contains(&Action::SetRangeMempolicy {
            pid: Pid(1),
            region: 0,
            first_page: 0,
            end_page: 131072,
            policy: MemPolicy::Bind(Mask::single(0))
        }));
        assert!(out.contains(&Action::SetRangeMempolicy {
            pid: Pid(1),
            region: 0,
            first_page: 131072,
            end_page: 262144,
            policy: MemPolicy::Bind(Mask::single(1))
        }));
        let mut out = Vec::new();
        b.on_thread_start(
            &m,
            &ThreadInfo {
                tid: Tid(9),
                pid: Pid(1),
                group: 1,
                index: 13,
                group_threads: 24,
            },
            &mut out,
        );
        assert_eq!(
            out[0],
            Action::SetThreadAffinity {
                tid: Tid(9),
                cpus: m.nodes[1].cpus.clone()
            }
        );
    }

    #[test]
    fn four_nodes_half_and_half() {
        let m = machine("rhel-4n40");
        let mut b = Bind::new(true);
        let mut out = Vec::new();
        b.on_process_start(
            &m,
            &proc(1, vec![(20, Placement::Together)], vec![], &m),
            &mut out,
        );
        b.on_process_start(
            &m,
            &proc(2, vec![(20, Placement::Together)], vec![], &m),
            &mut out,
        );
        let mem: Vec<String> = out
            .iter()
            .filter_map(|a| match a {
                Action::SetProcessMempolicy { policy, .. } => Some(policy.to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(mem, vec!["bind:2-3", "bind:0-1"]);
    }

    #[test]
    fn weighted_interleave_covers_the_cpuset_memory_nodes() {
        let m = machine("dram-cxl-2s");
        let mut out = Vec::new();
        WeightedInterleave.on_process_start(
            &m,
            &proc(1, vec![(4, Placement::Together)], vec![], &m),
            &mut out,
        );
        assert_eq!(
            out,
            vec![Action::SetProcessMempolicy {
                pid: Pid(1),
                policy: MemPolicy::WeightedInterleave(Mask::full(4))
            }]
        );
        let mut p = proc(2, vec![(4, Placement::Together)], vec![], &m);
        p.cpuset_mems = Mask::from_ids([1, 3]);
        let mut out = Vec::new();
        WeightedInterleave.on_process_start(&m, &p, &mut out);
        assert_eq!(out[0].to_string_policy(), "weighted-interleave:1,3");
    }

    #[test]
    fn preferred_takes_the_given_node_or_the_nearest_top_tier_node() {
        let m = machine("dram-cxl-2s");
        let policy_of = |pol: &mut Preferred, p: &ProcessInfo| {
            let mut out = Vec::new();
            pol.on_process_start(&m, p, &mut out);
            out[0].to_string_policy()
        };
        let mut given = Preferred::new(PreferredTunables { node: Some(2) });
        let p = proc(1, vec![(4, Placement::Together)], vec![], &m);
        assert_eq!(policy_of(&mut given, &p), "preferred:2");
        // Default: the top-tier (DRAM) node nearest the first CPU of the cpuset.
        let mut default = Preferred::new(PreferredTunables::default());
        assert_eq!(policy_of(&mut default, &p), "preferred:0");
        let mut on_1 = proc(2, vec![(4, Placement::Together)], vec![], &m);
        on_1.cpuset_cpus = m.nodes[1].cpus.clone();
        assert_eq!(policy_of(&mut default, &on_1), "preferred:1");
        // Only CXL memory allowed: the nearest of it.
        on_1.cpuset_mems = Mask::from_ids([2, 3]);
        assert_eq!(policy_of(&mut default, &on_1), "preferred:3");
    }

    #[test]
    fn preferred_checks_its_node_against_the_machine() {
        let m = machine("dram-cxl-2s");
        let spec = crate::util::test::spec("preferred", "node = 4");
        let t = PreferredTunables::from_spec(&spec).unwrap();
        assert_eq!(
            Preferred::new(t).check_machine(&m),
            Err((
                "node",
                "is 4 (allowed: a node of the machine with memory: 0-3)".into()
            ))
        );
        let ok = PreferredTunables::from_spec(&crate::util::test::spec("preferred", "node = 3"));
        assert!(Preferred::new(ok.unwrap()).check_machine(&m).is_ok());
        let e = PreferredTunables::from_spec(&crate::util::test::spec("preferred", "nodes = 3"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("policy.nodes") && e.contains("allowed: node"),
            "{e}"
        );
    }
}
