//! `numad`: the user-space NUMA daemon of RHEL 6 and 7 (Bill Gray, Red Hat; the last
//! upstream version, 20150602), as `../shared/research/userspace-tools-benchmarks.md` §1
//! reads its source. Pure: the backend passes observations and carries out the actions.
//!
//! ```text
//!  every pass (-i min:max seconds)
//!    update_nodes:      free MB per node (meminfo), free CPU per node (idle time since
//!                       the last pass; hyperthread siblings at -t percent)
//!    update_processes:  processes above memory_threshold_mb resident; CPU use per pass
//!                       into an 8-slot ring, CPUs_used = the ring's maximum
//!    manage_loads:      candidates = above the memory AND cpu_threshold; never-bound first,
//!                       larger (CPU x MB) first; for each: request = use x 100 / -u;
//!                       skip if bound in the last min_delay_for_reevaluation_s (unless it
//!                       sits on the busiest node and moving it evens the nodes out);
//!                       pick_numa_nodes; the first process that gets new nodes is bound:
//!                         sched_setaffinity(every thread, CPUs of the nodes)
//!                         migrate_pages(pid, biggest other node -> emptiest target node)
//!                           ... until no memory is left outside the targets
//!                       and the pass ends (next pass after min); no move: next after max
//! ```
//!
//! Departures from numad, each with its reason (research notes §1.12–1.13 for numad's
//! bugs):
//! - "never bound" is `None`, not a zero time stamp: numad's reading of 0 makes every
//!   process look recently bound during the first 300 s after boot. This model is numad
//!   started on a host that has been up for longer than that.
//! - candidates that tie in numad's ordering keep pid order (numad: hash-table order).
//! - numad re-reads node data when `migrate_pages` returns, so its next CPU sample starts
//!   after the migration; here it starts at the pass that moved (the core does not see
//!   when the backend's calls end). The bind time, which numad also takes then, is the
//!   next pass's time less the minimum interval: the same instant, as the backend starts
//!   the interval when the calls return.
//! - the `-w` request path and daemon passes share [`pick::pick_numa_nodes`]; node ids
//!   are indices (numad mixes the two, which breaks on sparse node ids).
//! - options that only touch the host (`-H`, the THP scan period; `-C`, counting the page
//!   cache as free; `-R`, reserved CPUs; the include/exclude lists `-p`/`-x`/`-S`) are not
//!   modelled.

pub mod pick;
pub mod tunables;

pub use pick::{MBS_MARGIN, NodeRes, Pick, Placing, Request, combined_value, pick_numa_nodes};
pub use tunables::{Interval, TUNABLES, Tunables};

use crate::api::{Action, Observation, Policy};
use numabal_model::{Machine, Mask, Pid};
use std::collections::{BTreeMap, BTreeSet};

/// Megabyte as numad counts it.
pub const MEGABYTE: u64 = 1 << 20;
/// numad's CPU unit: hundredths of a CPU.
pub const ONE_HUNDRED: u64 = 100;
/// Slots of the per-process CPU-use ring.
pub const CPU_RING: usize = 8;
/// A process found bound to a subset of nodes at start counts as bound this long ago
/// (numad: 30 minutes).
pub const PREBOUND_AGO_NS: i64 = 1800 * 1_000_000_000;
/// With `-K 1`, a process with interleaved memory is looked at again after this long.
pub const MIN_DELAY_FOR_INTERLEAVE_NS: i64 = 1800 * 1_000_000_000;

const NS: u64 = 1_000_000_000;

/// What numad keeps about a process.
#[derive(Debug, Clone)]
struct Proc {
    comm: String,
    /// CPU use of the last passes, hundredths.
    ring: [u64; CPU_RING],
    ring_next: usize,
    /// The ring's maximum at the last refresh (0 after a pass that did not refresh it).
    cpus_used: u64,
    /// (time, cumulative CPU ns) of its last refresh; `None` when new or not refreshed by
    /// the last pass (numad's zero data time stamp: the next refresh takes no sample).
    last: Option<(u64, u64)>,
    /// Nodes it is bound to (`Mems_allowed` until numad binds it).
    node_list: Option<Mask>,
    /// When numad bound it (or last found it well placed), ns; may be before 0 for a
    /// process found bound at start.
    bind_time_ns: Option<i64>,
    /// Skipped for having interleaved memory (`-K 1`).
    interleaved: bool,
}

impl Proc {
    fn cpus_used(&self) -> u64 {
        self.cpus_used
    }
}

/// A candidate of a pass: pid, numad's `CPUs_used` and `MBs_used`.
type Candidate = (Pid, u64, u64);

/// numad's process table starts with 16 slots (`MIN_PROCESS_HASH_TABLE_SIZE`).
const MIN_PROCESS_HASH_TABLE_SIZE: usize = 16;

/// The free-resource summary of the last node update (for the hold bypass).
#[derive(Debug, Clone, Default)]
struct NodeStats {
    min_cpus_free: i64,
    min_cpus_free_ix: usize,
    max_cpus_free: i64,
    avg_cpus_free: i64,
    min_mbs_free: i64,
    min_mbs_free_ix: usize,
    max_mbs_free: i64,
    avg_mbs_free: i64,
}

/// The `numad` policy.
#[derive(Debug)]
pub struct Numad {
    tun: Tunables,
    /// `-i`, whole seconds as numad keeps them.
    min_interval_s: u64,
    max_interval_s: u64,
    next_interval_ns: u64,
    /// Slots of numad's process hash table (new processes per pass: a third of it).
    table_size: usize,
    /// Size of its candidate index (numad's `pindex_size`): a pass that finds the table
    /// grew past it returns half the minimum interval without looking at candidates.
    pindex_size: usize,
    /// The process bound by the last pass: its bind time is when its `migrate_pages`
    /// calls returned, i.e. the next pass's time less the minimum interval.
    just_bound: Option<Pid>,
    /// (time, idle ns per CPU) at the last pass.
    last_idle: Option<(u64, Vec<u64>)>,
    procs: BTreeMap<Pid, Proc>,
    nodes: Vec<NodeRes>,
    stats: NodeStats,
}

/// Every node's CPUs in numad's units: a core 100, each further hyperthread sibling `-t`.
/// numad counts siblings on CPU 0's core and applies that count to every node.
pub fn node_cpus_total(machine: &Machine, htt_percent: u32) -> Vec<i64> {
    let tpc = machine.cores.first().map_or(1, |c| c.cpus.len().max(1)) as i64;
    machine
        .nodes
        .iter()
        .map(|n| {
            let lcpus = n.cpus.count() as i64;
            if tpc == 1 || htt_percent >= 100 {
                lcpus * ONE_HUNDRED as i64
            } else {
                let cores = lcpus / tpc;
                cores * ONE_HUNDRED as i64 + cores * (tpc - 1) * htt_percent as i64
            }
        })
        .collect()
}

/// Idle time of node `node`'s CPUs between two readings of every CPU's idle time (a CPU
/// missing from a reading counts none).
pub fn node_idle_ns(machine: &Machine, node: usize, before: &[u64], now: &[u64]) -> u64 {
    let at = |v: &[u64], c: usize| v.get(c).copied().unwrap_or(0);
    (machine.nodes[node].cpus.iter())
        .map(|c| at(now, c).saturating_sub(at(before, c)))
        .sum()
}

/// numad's free CPU of one node from idle time over a gap: idle x 100 / gap, less the
/// hyperthread discount, within `[0, total]`.
pub fn node_cpus_free(
    machine: &Machine,
    node: usize,
    idle_ns: u64,
    gap_ns: u64,
    htt_percent: u32,
    total: i64,
) -> i64 {
    let tpc = machine.cores.first().map_or(1, |c| c.cpus.len().max(1)) as i64;
    let lcpus = machine.nodes[node].cpus.count() as i64;
    let mut free = (idle_ns as u128 * ONE_HUNDRED as u128 / gap_ns.max(1) as u128) as i64;
    if tpc > 1 && htt_percent < 100 {
        let discount = (lcpus - lcpus / tpc) * (100 - htt_percent as i64);
        free = (free - discount).max(0);
    }
    free.min(total)
}

/// Pre-placement advice (`numad -w CPUS:MB`): the nodes a new process of `cpus` (hundredths)
/// and `mbs` MB should use, given the nodes' free resources.
pub fn advise(nodes: &[NodeRes], distance: &[Vec<u32>], cpus: i64, mbs: i64) -> Mask {
    let req = Request {
        cpus,
        mbs,
        target_utilization: Tunables::default().u,
        target_memlocality: Tunables::default().m,
        assume_enough_cpus: false,
    };
    match pick_numa_nodes(nodes, distance, &req, None) {
        Pick::Target(m) => m,
        Pick::Keep => Mask::single(0),
    }
}

impl Numad {
    /// A numad with validated tunables.
    pub fn new(tun: Tunables) -> Self {
        let (min, max) = tun.interval_s().unwrap_or((5, 15));
        Numad {
            tun,
            min_interval_s: min,
            max_interval_s: max,
            table_size: 0,
            pindex_size: 0,
            just_bound: None,
            // The first pass runs as the daemon starts.
            next_interval_ns: 1,
            last_idle: None,
            procs: BTreeMap::new(),
            nodes: Vec::new(),
            stats: NodeStats::default(),
        }
    }

    /// The tunables.
    pub fn tunables(&self) -> &Tunables {
        &self.tun
    }

    /// numad's `update_nodes`: free memory now, free CPU since the last pass.
    fn update_nodes(&mut self, machine: &Machine, obs: &Observation<'_>) {
        let totals = node_cpus_total(machine, self.tun.t);
        let gap = self
            .last_idle
            .as_ref()
            .map(|(t, idle)| (obs.now_ns.saturating_sub(*t), idle));
        self.nodes = (0..machine.nr_nodes())
            .map(|n| {
                let o = obs.nodes.get(n);
                let cpus_free = match gap {
                    Some((g, idle0)) if g > 0 => {
                        let idle = node_idle_ns(machine, n, idle0, obs.cpu_idle_ns);
                        node_cpus_free(machine, n, idle, g, self.tun.t, totals[n])
                    }
                    _ => 0,
                };
                NodeRes {
                    mbs_total: o.map_or(0, |o| (o.mem_total_bytes / MEGABYTE) as i64),
                    mbs_free: o.map_or(0, |o| (o.mem_free_bytes / MEGABYTE) as i64),
                    cpus_total: totals[n],
                    cpus_free,
                }
            })
            .collect();
        self.last_idle = Some((obs.now_ns, obs.cpu_idle_ns.to_vec()));
        let n = self.nodes.len().max(1) as i64;
        let mut s = NodeStats {
            min_cpus_free: i64::MAX,
            min_mbs_free: i64::MAX,
            ..NodeStats::default()
        };
        for (i, nd) in self.nodes.iter().enumerate() {
            if nd.mbs_free < s.min_mbs_free {
                s.min_mbs_free = nd.mbs_free;
                s.min_mbs_free_ix = i;
            }
            s.max_mbs_free = s.max_mbs_free.max(nd.mbs_free);
            if nd.cpus_free < s.min_cpus_free {
                s.min_cpus_free = nd.cpus_free;
                s.min_cpus_free_ix = i;
            }
            s.max_cpus_free = s.max_cpus_free.max(nd.cpus_free);
        }
        s.avg_mbs_free = self.nodes.iter().map(|x| x.mbs_free).sum::<i64>() / n;
        s.avg_cpus_free = self.nodes.iter().map(|x| x.cpus_free).sum::<i64>() / n;
        self.stats = s;
    }

    /// numad's `update_processes` and `process_hash_table_cleanup`: refresh every process
    /// above the memory threshold (at most a third of the table's size new ones per pass;
    /// once that many are new the scan stops), then mark the ones not refreshed (CPU use
    /// 0, no sample at their next refresh), forget dead ones, and grow the table when it is
    /// more than 4/7 full.
    fn update_processes(&mut self, obs: &Observation<'_>) {
        if self.table_size == 0 {
            self.table_size = MIN_PROCESS_HASH_TABLE_SIZE;
        }
        let mut new_candidates = 0usize;
        let mut refreshed = BTreeSet::new();
        for p in obs.processes {
            if p.rss_bytes / MEGABYTE <= self.tun.memory_threshold_mb {
                continue;
            }
            if new_candidates >= self.table_size / 3 {
                break;
            }
            refreshed.insert(p.pid);
            let e = self.procs.entry(p.pid).or_insert_with(|| Proc {
                comm: p.comm.clone(),
                ring: [0; CPU_RING],
                ring_next: 0,
                cpus_used: 0,
                last: None,
                node_list: None,
                bind_time_ns: None,
                interleaved: false,
            });
            match e.last {
                Some((t0, c0)) => {
                    let dt = obs.now_ns.saturating_sub(t0).max(1);
                    let used = (p.cpu_time_ns.saturating_sub(c0) as u128 * ONE_HUNDRED as u128
                        / dt as u128) as u64;
                    e.ring_next = (e.ring_next + 1) % CPU_RING;
                    e.ring[e.ring_next] = used;
                    e.cpus_used = e.ring.iter().copied().max().unwrap_or(0);
                }
                None => new_candidates += 1,
            }
            e.last = Some((obs.now_ns, p.cpu_time_ns));
            e.comm.clone_from(&p.comm);
        }
        let alive: BTreeSet<Pid> = obs.processes.iter().map(|p| p.pid).collect();
        self.procs.retain(|pid, _| alive.contains(pid));
        for (pid, e) in self.procs.iter_mut() {
            if !refreshed.contains(pid) {
                e.last = None;
                e.cpus_used = 0;
            }
        }
        if self.procs.len() * 7 / 4 > self.table_size {
            self.table_size *= 2;
        }
    }

    /// numad's `manage_loads`; returns the time to the next pass.
    fn manage_loads(
        &mut self,
        machine: &Machine,
        obs: &Observation<'_>,
        out: &mut Vec<Action>,
    ) -> u64 {
        if self.pindex_size < self.table_size {
            // numad: "quick round trip whenever we resize the hash table", mostly to avoid
            // the max_interval wait at start-up (whole seconds: 5 / 2 = 2).
            self.pindex_size = self.table_size;
            return (self.min_interval_s / 2 * NS).max(1);
        }
        let by_pid: BTreeMap<Pid, &crate::api::ProcessObs> =
            obs.processes.iter().map(|p| (p.pid, p)).collect();
        let (cands, sum_cpus_used) = self.candidates(&by_pid, machine.nr_nodes(), obs.now_ns);
        let sum_cpus_total: i64 = self.nodes.iter().map(|n| n.cpus_total).sum();
        // numad's assume_enough_cpus: sum_CPUs_used <= sum_CPUs_total.
        let assume_enough_cpus = sum_cpus_used as i64 <= sum_cpus_total;
        // numad's steps: order the candidates, then for each make its resource requests,
        // pick NUMA nodes and bind it; at most one process moves per pass.
        for cand in self.consideration_order(cands) {
            let o = by_pid[&cand.0];
            if self.consider(machine, obs, o, cand, assume_enough_cpus, out) {
                // numad: the minimum interval while it moves processes.
                return (self.min_interval_s * NS).max(1);
            }
        }
        // numad: the maximum interval when nothing moved.
        self.max_interval_s * NS
    }

    /// numad's candidates (copied to its `pindex`): processes above `cpu_threshold` and
    /// `memory_threshold_mb` (numad's CPU_THRESHOLD, MEMORY_THRESHOLD), with the sum of their CPU use (`sum_CPUs_used`). A candidate
    /// seen for the first time gets its node list from `Mems_allowed`
    /// (`initialize_mem_node_list`); bound to a subset of nodes, it counts as bound
    /// [`PREBOUND_AGO_NS`] ago.
    fn candidates(
        &mut self,
        by_pid: &BTreeMap<Pid, &crate::api::ProcessObs>,
        nr: usize,
        now_ns: u64,
    ) -> (Vec<Candidate>, u64) {
        let now = now_ns as i64;
        let mut cands: Vec<Candidate> = Vec::new();
        let mut sum_cpus_used = 0u64;
        for (&pid, e) in self.procs.iter_mut() {
            let Some(o) = by_pid.get(&pid) else { continue };
            let cpus = e.cpus_used();
            let mbs = o.rss_bytes / MEGABYTE;
            if cpus > self.tun.cpu_threshold && mbs > self.tun.memory_threshold_mb {
                cands.push((pid, cpus, mbs));
                sum_cpus_used += cpus;
                if e.node_list.is_none() {
                    let mems = o.mems_allowed.and(&Mask::full(nr));
                    if mems.count() < nr {
                        e.bind_time_ns = Some(now - PREBOUND_AGO_NS);
                    }
                    e.node_list = Some(mems);
                }
            }
        }
        (cands, sum_cpus_used)
    }

    /// numad's ordering of candidate considerations (its selection sorts of `pindex`).
    fn consideration_order(&self, cands: Vec<Candidate>) -> Vec<Candidate> {
        // Never-bound first, larger CPU x MB first; then bound ones, larger first, those
        // within 20% of each other oldest bind first. (numad's comment says increasing
        // magnitude; its unsigned difference makes it decreasing.)
        let mag = |c: &Candidate| c.1 * c.2;
        let unbound = |c: &Candidate| self.procs[&c.0].bind_time_ns.is_none();
        let (mut first, mut rest): (Vec<_>, Vec<_>) = cands.into_iter().partition(unbound);
        first.sort_by(|a, b| mag(b).cmp(&mag(a)).then(a.0.cmp(&b.0)));
        for ij in 0..rest.len() {
            let mut best = ij;
            for ik in ij + 1..rest.len() {
                let (mi, mb) = (mag(&rest[ik]), mag(&rest[best]));
                let bt = |c: &Candidate| self.procs[&c.0].bind_time_ns.unwrap_or(0);
                if mi > mb {
                    best = ik;
                } else if mi == mb || (mi / (mb - mi)) >= 5 {
                    // Within 20%: the older bind goes first.
                    if bt(&rest[ik]) <= bt(&rest[best]) {
                        best = ik;
                    }
                }
            }
            rest.swap(ij, best);
        }
        first.into_iter().chain(rest).collect()
    }

    /// One candidate of numad's `manage_loads` loop: skipped (interleaved memory, or held
    /// after a recent bind), or given the nodes `pick_numa_nodes` picks and, when they are
    /// new, bound to them (`bind_process_and_migrate_memory`). True when it was bound.
    fn consider(
        &mut self,
        machine: &Machine,
        obs: &Observation<'_>,
        o: &crate::api::ProcessObs,
        (pid, cpus_used, mbs_used): Candidate,
        assume_enough_cpus: bool,
        out: &mut Vec<Action>,
    ) -> bool {
        let now = obs.now_ns as i64;
        let nr = machine.nr_nodes();
        let e = &self.procs[&pid];
        // numad's MIN_DELAY_FOR_INTERLEAVE.
        if e.interleaved
            && e.bind_time_ns
                .is_some_and(|b| b + MIN_DELAY_FOR_INTERLEAVE_NS > now)
        {
            return false;
        }
        let (cpu_request, mb_request) = self.requests(o, cpus_used, mbs_used);
        let node_list = e.node_list.clone().unwrap_or_else(|| Mask::full(nr));
        // numad's MIN_DELAY_FOR_REEVALUATION.
        let hold_ns = (self.tun.min_delay_for_reevaluation_s * NS) as i64;
        if e.bind_time_ns.is_some_and(|b| b + hold_ns > now)
            && !self.hold_bypassed(&node_list, cpus_used, mbs_used, cpu_request, mb_request)
        {
            return false;
        }
        let process_mbs: Vec<i64> = (0..nr)
            .map(|n| (o.node_bytes.get(n).copied().unwrap_or(0) / MEGABYTE) as i64)
            .collect();
        if o.interleaved && self.tun.k == 1 {
            let e = self.procs.get_mut(&pid).expect("candidate");
            e.interleaved = true;
            e.bind_time_ns = Some(now);
            return false;
        }
        let req = Request {
            cpus: cpu_request as i64,
            mbs: mb_request as i64,
            target_utilization: self.tun.u,
            target_memlocality: self.tun.m,
            assume_enough_cpus,
        };
        let placing = Placing {
            process_mbs: &process_mbs,
            mbs_used: mbs_used as i64,
            cpus_used: cpus_used as i64,
            node_list: &node_list,
            bound: e.bind_time_ns.is_some(),
        };
        match pick_numa_nodes(&self.nodes, &machine.distance, &req, Some(&placing)) {
            Pick::Keep => {
                self.procs.get_mut(&pid).expect("candidate").bind_time_ns = Some(now);
                false
            }
            Pick::Target(target) => {
                let from = if e.bind_time_ns.is_some() {
                    node_list
                } else {
                    Mask::full(nr)
                };
                self.bind(machine, obs, o, &from, target, out);
                true
            }
        }
    }

    /// numad moving a candidate to new nodes: the "Advising pid" line (numad's
    /// `pick_numa_nodes` writes it), then `bind_process_and_migrate_memory`; the process's
    /// node list and bind time are then the new ones.
    fn bind(
        &mut self,
        machine: &Machine,
        obs: &Observation<'_>,
        o: &crate::api::ProcessObs,
        from: &Mask,
        target: Mask,
        out: &mut Vec<Action>,
    ) {
        let pid = o.pid;
        out.push(Action::Log {
            pid,
            message: format!(
                "Advising pid {} ({}) move from nodes ({}) to nodes ({})",
                pid.0,
                self.procs[&pid].comm,
                from.to_list_string(),
                target.to_list_string()
            ),
        });
        bind_process_and_migrate_memory(machine, obs, pid, &target, o, out);
        let e = self.procs.get_mut(&pid).expect("candidate");
        e.node_list = Some(target);
        e.bind_time_ns = Some(obs.now_ns as i64);
        self.just_bound = Some(pid);
    }

    /// numad's estimate of what a candidate needs (`cpu_request`, `mb_request`): its use
    /// over the target utilization `-u` (at most 100% for memory); its virtual size when
    /// that exceeds node 0 and its use is over 80% of node 0; no more CPU than it has
    /// threads (`thread_limit`; a `qemu-kvm` guest: its vCPUs).
    fn requests(&self, o: &crate::api::ProcessObs, cpus_used: u64, mbs_used: u64) -> (u64, u64) {
        let node0 = self.nodes[0];
        // numad's mem_target_utilization.
        let mem_u = self.tun.u.min(100) as u64;
        let mbs_size = o.vsize_bytes / MEGABYTE;
        let mb_request =
            if mbs_size as i64 > node0.mbs_total && (mbs_used * 5 / 4) as i64 > node0.mbs_total {
                mbs_size * 100 / mem_u
            } else {
                mbs_used * 100 / mem_u
            };
        let mut thread_limit = o.num_threads as u64;
        if o.comm == "qemu-kvm"
            && let Some(v) = o.kvm_vcpus
        {
            thread_limit = thread_limit.min(v as u64);
        }
        let cpu_request = (cpus_used * 100 / self.tun.u as u64).min(thread_limit * ONE_HUNDRED);
        (cpu_request, mb_request)
    }

    /// Whether a recently bound candidate is looked at again despite numad's
    /// MIN_DELAY_FOR_REEVALUATION hold.
    fn hold_bypassed(
        &self,
        node_list: &Mask,
        cpus_used: u64,
        mbs_used: u64,
        cpu_request: u64,
        mb_request: u64,
    ) -> bool {
        // Recently bound: look again only if it sits on the node with the least free
        // CPU or memory, fits in one node, and moving it would even the nodes out.
        let node0 = self.nodes[0];
        let s = &self.stats;
        let (cu, mu) = (cpus_used as i64, mbs_used as i64);
        (node_list.contains(s.min_cpus_free_ix) || node_list.contains(s.min_mbs_free_ix))
            && (cpu_request as i64) < node0.cpus_total
            && (mb_request as i64) < node0.mbs_total
            && (s.min_cpus_free + cu - s.avg_cpus_free).abs()
                + (s.max_cpus_free - cu - s.avg_cpus_free).abs()
                < (s.max_cpus_free - s.min_cpus_free) - self.tun.cpu_threshold as i64
            && (s.min_mbs_free + mu - s.avg_mbs_free).abs()
                + (s.max_mbs_free - mu - s.avg_mbs_free).abs()
                < (s.max_mbs_free - s.min_mbs_free)
    }
}

/// numad's `bind_process_and_migrate_memory`: every thread's affinity to the target nodes'
/// CPUs, then `migrate_pages` from the non-target node holding most of the process's
/// memory to the target node holding least, until nothing is left outside the targets.
/// The per-node amounts are projected from the observation (numad re-reads `numa_maps`
/// between calls; a backend that cannot move every page leaves the rest, and the 90%
/// check of a later pass sees it).
fn bind_process_and_migrate_memory(
    machine: &Machine,
    obs: &Observation<'_>,
    pid: Pid,
    target: &Mask,
    o: &crate::api::ProcessObs,
    out: &mut Vec<Action>,
) {
    let cpus = target
        .iter()
        .fold(Mask::new(), |m, n| m.or(&machine.nodes[n].cpus));
    for t in obs.threads.iter().filter(|t| t.pid == pid) {
        out.push(Action::SetThreadAffinity {
            tid: t.tid,
            cpus: cpus.clone(),
        });
    }
    // numad works in whole MB from numa_maps; the destination is the target node holding
    // least (ties: the highest id, "so we tend to move memory to higher numbered nodes"),
    // the source the other node holding most (ties: the lowest id); it stops when that
    // holds 0 MB or was the last source.
    let mut mbs: Vec<u64> = (0..machine.nr_nodes())
        .map(|n| o.node_bytes.get(n).copied().unwrap_or(0) / MEGABYTE)
        .collect();
    let mut prev_from = None;
    loop {
        let mut to: Option<usize> = None;
        let mut from: Option<usize> = None;
        for n in 0..mbs.len() {
            if target.contains(n) {
                if to.is_none_or(|d| mbs[d] >= mbs[n]) {
                    to = Some(n);
                }
            } else if from.is_none_or(|f| mbs[f] < mbs[n]) {
                from = Some(n);
            }
        }
        // (With every node a target numad indexes node -1; here nothing moves.)
        let (Some(from), Some(to)) = (from, to) else {
            break;
        };
        if mbs[from] == 0 || prev_from == Some(from) {
            break;
        }
        out.push(Action::MigrateProcessPages { pid, from, to });
        mbs[to] += mbs[from];
        mbs[from] = 0;
        prev_from = Some(from);
    }
}

impl Policy for Numad {
    fn name(&self) -> &str {
        "numad"
    }

    fn tick_interval_ns(&self) -> Option<u64> {
        Some(self.next_interval_ns)
    }

    /// `-i min:max` (half of `min` once, after numad's process table grows).
    fn tick_interval_range_ns(&self) -> Option<(u64, u64)> {
        Some(((self.min_interval_s * NS).max(1), self.max_interval_s * NS))
    }

    fn on_tick(&mut self, machine: &Machine, obs: &Observation<'_>, out: &mut Vec<Action>) {
        if let Some(pid) = self.just_bound.take()
            && let Some(e) = self.procs.get_mut(&pid)
        {
            e.bind_time_ns = Some(obs.now_ns as i64 - (self.min_interval_s * NS) as i64);
        }
        self.update_nodes(machine, obs);
        if machine.nr_nodes() < 2 {
            self.next_interval_ns = self.max_interval_s * NS;
            return;
        }
        self.update_processes(obs);
        self.next_interval_ns = self.manage_loads(machine, obs, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{NodeObs, ProcessObs, ThreadObs};
    use crate::util::test::machine;
    use numabal_model::Tid;

    const GIB: u64 = 1 << 30;

    /// One pass at `t_s`: a process (pid 1, threads 1-8 on CPUs 1-8) with `node_gib` GiB
    /// per node that has used `cpu_s` CPU seconds, on rhel-4n40 whose other CPUs are idle.
    fn pass(
        n: &mut Numad,
        m: &Machine,
        t_s: u64,
        node_gib: [u64; 4],
        cpu_s: u64,
    ) -> (Vec<Action>, u64) {
        let now = t_s * NS;
        let threads: Vec<ThreadObs> = (1..=8)
            .map(|t| ThreadObs {
                tid: Tid(t),
                pid: Pid(1),
                cpu: Some(t as usize),
                node: Some(m.cpus[t as usize].node),
                cpu_time_ns: 0,
                age_ns: None,
            })
            .collect();
        let node_bytes: Vec<u64> = node_gib.iter().map(|g| g * GIB).collect();
        let procs = vec![ProcessObs {
            pid: Pid(1),
            comm: "app".into(),
            num_threads: 8,
            cpu_time_ns: cpu_s * NS,
            vsize_bytes: 20 * GIB,
            rss_bytes: node_bytes.iter().sum(),
            node_bytes,
            interleaved: false,
            mems_allowed: Mask::full(4),
            kvm_vcpus: None,
        }];
        let nodes: Vec<NodeObs> = (0..4)
            .map(|i| NodeObs {
                mem_total_bytes: 64 * GIB,
                mem_free_bytes: (63 - node_gib[i]) * GIB,
            })
            .collect();
        // Idle: 40 CPUs minus the process's 8 threads.
        let idle: Vec<u64> = (0..40)
            .map(|c| if (1..=8).contains(&c) { 0 } else { now })
            .collect();
        let mut out = Vec::new();
        n.on_tick(
            m,
            &Observation {
                now_ns: now,
                threads: &threads,
                processes: &procs,
                nodes: &nodes,
                cpu_idle_ns: &idle,
                samples: &[],
            },
            &mut out,
        );
        (out, n.tick_interval_ns().unwrap())
    }

    #[test]
    fn a_pass_binds_one_process_then_holds_it_for_five_minutes() {
        let m = machine("rhel-4n40");
        let mut n = Numad::new(Tunables::default());
        // -i 5:15, what a backend tells its operator.
        assert_eq!(n.tick_interval_range_ns(), Some((5 * NS, 15 * NS)));
        // Spread memory: 8, 4, 4, 4 GiB. First pass: admitted, no CPU sample yet.
        let spread = [8, 4, 4, 4];
        let (a, next) = pass(&mut n, &m, 10, spread, 0);
        assert!(a.is_empty());
        assert_eq!(next, 2 * NS); // half of -i's min, in whole seconds as numad keeps it
        // 8 CPUs' worth over 5 s: a candidate. Bound to node 0 (most of its memory), every
        // thread's affinity to node 0's CPUs, memory pulled from nodes 1, 2, 3.
        let (a, next) = pass(&mut n, &m, 15, spread, 40);
        assert_eq!(next, 5 * NS);
        let node0 = m.nodes[0].cpus.clone();
        let affinity: Vec<&Action> = a
            .iter()
            .filter(|x| matches!(x, Action::SetThreadAffinity { cpus, .. } if *cpus == node0))
            .collect();
        assert_eq!(affinity.len(), 8);
        let moves: Vec<(usize, usize)> = a
            .iter()
            .filter_map(|x| match x {
                Action::MigrateProcessPages { from, to, .. } => Some((*from, *to)),
                _ => None,
            })
            .collect();
        assert_eq!(moves, vec![(1, 0), (2, 0), (3, 0)]);
        assert!(a.contains(&Action::Log {
            pid: Pid(1),
            message: "Advising pid 1 (app) move from nodes (0-3) to nodes (0)".into()
        }));
        // Memory stuck half-way (a full node, say): held until 300 s after the bind...
        let half = [14, 2, 2, 2];
        let (a, next) = pass(&mut n, &m, 20, half, 80);
        assert!(a.is_empty());
        assert_eq!(next, 15 * NS);
        let (a, _) = pass(&mut n, &m, 314, half, 80 + 8 * 294);
        assert!(a.is_empty());
        // ... then looked at again: 30% of its memory is off its node, so moved again.
        let (a, next) = pass(&mut n, &m, 316, half, 80 + 8 * 296);
        assert_eq!(next, 5 * NS);
        assert!(a.contains(&Action::Log {
            pid: Pid(1),
            message: "Advising pid 1 (app) move from nodes (0) to nodes (0)".into()
        }));
        // Once 95% local it is kept: no action, max interval.
        let (a, next) = pass(&mut n, &m, 700, [19, 1, 0, 0], 80 + 8 * 680);
        assert!(a.is_empty(), "{a:?}");
        assert_eq!(next, 15 * NS);
    }

    /// numad's migrate loop: biggest source first (lowest id on ties) to the emptiest
    /// target (highest id on ties), until nothing is left outside; sub-MB remnants stay.
    #[test]
    fn migrate_pages_calls_spread_memory_over_a_multi_node_target() {
        let m = machine("rhel-4n40");
        let o = ProcessObs {
            pid: Pid(7),
            comm: "app".into(),
            num_threads: 0,
            cpu_time_ns: 0,
            vsize_bytes: 0,
            rss_bytes: 0,
            node_bytes: vec![0, 0, 10 * GIB, 10 * GIB + 5],
            interleaved: false,
            mems_allowed: Mask::full(4),
            kvm_vcpus: None,
        };
        let obs = Observation {
            now_ns: 0,
            threads: &[],
            processes: &[],
            nodes: &[],
            cpu_idle_ns: &[],
            samples: &[],
        };
        let moves = |o: &ProcessObs, target: Mask| -> Vec<(usize, usize)> {
            let mut out = Vec::new();
            bind_process_and_migrate_memory(&m, &obs, Pid(7), &target, o, &mut out);
            out.iter()
                .filter_map(|a| match a {
                    Action::MigrateProcessPages { from, to, .. } => Some((*from, *to)),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(moves(&o, Mask::from_ids([0, 1])), vec![(2, 1), (3, 0)]);
        assert_eq!(moves(&o, Mask::single(2)), vec![(3, 2)]);
        let tiny = ProcessObs {
            node_bytes: vec![5 * GIB, (1 << 20) - 1, 0, 0],
            ..o
        };
        assert_eq!(moves(&tiny, Mask::single(0)), vec![]);
    }

    #[test]
    fn cpu_use_is_the_maximum_of_the_last_eight_passes() {
        let m = machine("rhel-4n40");
        let mut n = Numad::new(Tunables::default());
        let mem = [5, 5, 5, 5];
        pass(&mut n, &m, 0, mem, 0);
        // A burst of 8 CPUs for 5 s, then 0.2 CPU for 7 passes: still 8 CPUs.
        pass(&mut n, &m, 5, mem, 40);
        let mut cpu = 40;
        for k in 2..9 {
            cpu += 1;
            pass(&mut n, &m, 5 * k, mem, cpu);
        }
        assert_eq!(n.procs[&Pid(1)].cpus_used(), 800);
        cpu += 1;
        pass(&mut n, &m, 45, mem, cpu);
        assert_eq!(n.procs[&Pid(1)].cpus_used(), 20);
    }
}
