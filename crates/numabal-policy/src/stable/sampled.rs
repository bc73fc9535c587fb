//! `stable` driven by sampled accesses: the Stable-NUMA core ([`StableNuma`]) as the live
//! daemon runs it, and as `numabal sim --trace` replays the daemon's recordings. Pure, like
//! the rest of the core: the backend's sensor samples page faults, finds each page's node
//! and passes the samples in the observation; this driver keeps the per-page records the
//! simulator keeps in its page arrays, and turns the core's decisions into actions.
//!
//! ```text
//!  observation                         StableSampled                      actions
//!  ───────────                         ─────────────                      ───────
//!  samples (tid, node, addr, page_node) ─► on_hint_fault per sample ──► MovePages (page to
//!                                          a thread's first sample:      its node-private or
//!                                          join + pin to that node ───►  thread-private node)
//!                                                                       SetThreadAffinity
//!  every scan_period_ms ─────────────────► on_scan_sequence_end per process
//!                                          Move/Swap: pin thread(s) ───► SetThreadAffinity +
//!                                          + their private pages         MovePages
//!                                          system-shared balance ─────► MovePages
//!  processes/threads gone ───────────────► on_process_exit / on_thread_exit
//! ```
//!
//! Departures from the simulator's `stable`, each forced by what a user-space daemon can do:
//! - A joined thread's node is enforced with `sched_setaffinity` to the node's CPUs (the
//!   kernel patch denies inter-node moves in `can_migrate_task`; a daemon cannot).
//! - A sample stands for a hinting fault. The sensor decides which pages fault (the
//!   bypass counter's scan skipping needs the kernel's scanner, so it is not used) and
//!   samples one fault in `period`.
//! - The CPUs a process may fill on a node are the node's CPUs less the threads of other
//!   managed processes pinned there (the simulator's core sees only its own root group's
//!   load; the kernel's load balancer sorts out the rest, which pinned threads escape).
//! - Every live thread counts as runnable (the daemon sees a thread's CPU, not its
//!   runqueue).

use super::page_book::PageBook;
use super::{HintFault, PageState, Placement, StableNuma, Tunables};
use crate::api::{Action, Observation, Policy};
use numabal_model::{Machine, Pid, Tid};
use std::collections::{BTreeMap, BTreeSet};

/// The `stable` policy on sampled accesses.
#[derive(Debug, Clone)]
pub struct StableSampled {
    tunables: Tunables,
    core: Option<StableNuma>,
    /// Per sampled page: its record and the node it was last seen on (or sent to).
    pages: PageBook,
    /// Threads pinned by this policy: their process and node.
    pinned: BTreeMap<Tid, (Pid, usize)>,
    /// Processes with a root group.
    roots: BTreeSet<Pid>,
    /// When the last scan sequence ended, ns.
    last_sequence_ns: u64,
}

impl StableSampled {
    /// The policy with the core's tunables.
    pub fn new(tunables: Tunables) -> StableSampled {
        StableSampled {
            tunables,
            core: None,
            pages: PageBook::default(),
            pinned: BTreeMap::new(),
            roots: BTreeSet::new(),
            last_sequence_ns: 0,
        }
    }

    fn pin(&mut self, m: &Machine, pid: Pid, tid: Tid, node: usize, out: &mut Vec<Action>) {
        if self.pinned.get(&tid) == Some(&(pid, node)) {
            return;
        }
        self.pinned.insert(tid, (pid, node));
        out.push(Action::SetThreadAffinity {
            tid,
            cpus: m.nodes[node].cpus.clone(),
        });
    }

    /// Pages of `pid` that `owner` owns privately, not on `node`: they follow it there.
    fn follow(&mut self, pid: Pid, owner: Tid, node: usize, moves: &mut Moves) {
        self.pages.each_of(pid, |addr, rec, at| {
            if rec.private_owner() == Some(owner) && *at as usize != node {
                *at = node as u16;
                moves.entry((pid, node)).or_default().push(addr);
            }
            true
        });
    }

    fn forget_process(&mut self, pid: Pid) {
        let core = self.core.as_mut().expect("core");
        core.on_process_exit(pid);
        self.pages
            .remove_process(pid, |rec, node| core.on_page_freed(rec, node));
        self.pinned.retain(|_, (p, _)| *p != pid);
        self.roots.remove(&pid);
    }
}

/// The daemon's gather step: threads of one process that share pages from different
/// nodes all go to one node that has a CPU left for each of them (the node holding most of
/// their sampled pages, then most of the threads, then the lowest id). Stable-NUMA's own
/// clustering never empties a sub-group by a move (its load rule compares sub-groups of the
/// process, made for the kernel's balancer to fill the CPUs); on a host with fewer threads
/// than CPUs that would leave sharing threads apart for good. Returns the moves, already
/// applied to the core's sub-groups.
fn gather(core: &mut StableNuma, pid: Pid, caps: &[u32]) -> Vec<(Tid, usize, usize)> {
    let members = core.members(pid);
    let (share, pages) = core.sharing(pid);
    if !share {
        return Vec::new();
    }
    let on = |n: usize| members.iter().filter(|m| m.1 == n).count();
    let target = (0..caps.len())
        .filter(|&n| caps[n] as usize >= members.len())
        .max_by(|&a, &b| {
            pages[a]
                .total_cmp(&pages[b])
                .then(on(a).cmp(&on(b)))
                .then(b.cmp(&a))
        });
    let Some(to) = target else {
        return Vec::new();
    };
    let moved: Vec<(Tid, usize, usize)> = members
        .iter()
        .filter(|m| m.1 != to)
        .map(|&(t, from)| (t, from, to))
        .collect();
    for &(t, _, to) in &moved {
        core.place(t, to);
    }
    moved
}

/// Page moves, by process and destination node.
type Moves = BTreeMap<(Pid, usize), Vec<u64>>;

impl Policy for StableSampled {
    fn name(&self) -> &str {
        "stable-daemon"
    }

    fn tick_interval_ns(&self) -> Option<u64> {
        // A pass per scan period: the sensor's samples arrive with each observation.
        Some(self.tunables.scan_period_ms * 1_000_000)
    }

    fn on_tick(&mut self, m: &Machine, obs: &Observation<'_>, out: &mut Vec<Action>) {
        let nodes = m.nr_nodes();
        if self.core.is_none() {
            self.core = Some(StableNuma::new(nodes, self.tunables.clone()));
        }
        // Exits first: their samples and pages go with them.
        let live_pids: BTreeSet<Pid> = obs.processes.iter().map(|p| p.pid).collect();
        let live_tids: BTreeSet<Tid> = obs.threads.iter().map(|t| t.tid).collect();
        let gone: Vec<Pid> = self.roots.difference(&live_pids).copied().collect();
        for pid in gone {
            self.forget_process(pid);
        }
        let gone: Vec<Tid> = self
            .pinned
            .keys()
            .filter(|t| !live_tids.contains(t))
            .copied()
            .collect();
        for tid in gone {
            self.core.as_mut().expect("core").on_thread_exit(tid);
            self.pinned.remove(&tid);
        }

        let mut moves = Moves::new();
        for s in obs.samples {
            if !live_pids.contains(&s.pid) || !live_tids.contains(&s.tid) {
                continue;
            }
            if s.node >= nodes || s.page_node >= nodes {
                continue;
            }
            if self.roots.insert(s.pid) {
                let allowed: Vec<bool> = match obs.processes.iter().find(|p| p.pid == s.pid) {
                    Some(p) => (0..nodes)
                        .map(|n| p.mems_allowed.contains(n) && !m.nodes[n].cpus.is_empty())
                        .collect(),
                    None => vec![true; nodes],
                };
                self.core
                    .as_mut()
                    .expect("core")
                    .set_allowed_nodes(s.pid, &allowed);
            }
            let core = self.core.as_mut().expect("core");
            let joined = core.node_of(s.tid).is_some();
            let (rec, at) = self.pages.get_or_insert(s.pid, s.addr);
            *at = s.page_node as u16;
            let t = core.on_hint_fault(
                rec,
                HintFault {
                    pid: s.pid,
                    tid: s.tid,
                    node: s.node,
                    page_node: s.page_node,
                },
            );
            if let Placement::Migrate(to) = t.placement
                && to != s.page_node
            {
                *at = to as u16;
                moves.entry((s.pid, to)).or_default().push(s.addr);
            }
            if !joined {
                out.push(Action::Log {
                    pid: s.pid,
                    message: format!("thread {} joins on node {}", s.tid.0, s.node),
                });
                self.pin(m, s.pid, s.tid, s.node, out);
            }
        }

        let period = self.tunables.scan_period_ms * 1_000_000;
        if obs.now_ns >= self.last_sequence_ns + period {
            self.last_sequence_ns = obs.now_ns;
            let roots: Vec<Pid> = self.roots.iter().copied().collect();
            for pid in roots {
                self.sequence_end(m, pid, &live_tids, &mut moves, out);
            }
        }
        for ((pid, node), mut addrs) in moves {
            addrs.sort_unstable();
            addrs.dedup();
            out.push(Action::MovePages { pid, addrs, node });
        }
    }
}

impl StableSampled {
    fn sequence_end(
        &mut self,
        m: &Machine,
        pid: Pid,
        live: &BTreeSet<Tid>,
        moves: &mut Moves,
        out: &mut Vec<Action>,
    ) {
        // The CPUs this process may fill on each node: the node's, less the threads of
        // other processes pinned there.
        let caps: Vec<u32> = (0..m.nr_nodes())
            .map(|n| {
                let others = self
                    .pinned
                    .values()
                    .filter(|&&(p, at)| p != pid && at == n)
                    .count();
                (m.nodes[n].cpus.count() as u32).saturating_sub(others as u32)
            })
            .collect();
        let core = self.core.as_mut().expect("core");
        core.set_node_cpus(&caps);
        let end = core.on_scan_sequence_end(pid, |t| live.contains(&t));
        let mut moved = end
            .cluster
            .as_ref()
            .map_or_else(Vec::new, |c| c.decision.moves());
        // A node holds no more of this process's threads than it has CPUs left: a move
        // past that is undone (the core's "sufficiently higher" rule alone may allow it).
        let members = core.members(pid);
        let over = |n: usize| members.iter().filter(|m| m.1 == n).count() as u32 > caps[n];
        if moved.iter().any(|&(_, _, to)| over(to)) {
            for &(tid, from, to) in &moved {
                core.place(tid, from);
                out.push(Action::Log {
                    pid,
                    message: format!("thread {} stays on node {from}: node {to} is full", tid.0),
                });
            }
            moved.clear();
        }
        if moved.is_empty() {
            moved = gather(core, pid, &caps);
        }
        for (tid, _, to) in moved {
            out.push(Action::Log {
                pid,
                message: format!(
                    "thread {} to node {to}{}",
                    tid.0,
                    if end.rebalanced { " (rebalance)" } else { "" }
                ),
            });
            self.pin(m, pid, tid, to, out);
            self.follow(pid, tid, to, moves);
        }
        if let Some(sm) = end.shared {
            let mut left = sm.pages;
            let core = self.core.as_mut().expect("core");
            self.pages.each(|p, addr, rec, at| {
                if left == 0 {
                    return false;
                }
                if rec.state() == PageState::SYSTEM_SHARED && *at as usize == sm.from {
                    core.on_page_migrated(rec, sm.from, sm.to);
                    *at = sm.to as u16;
                    moves.entry((p, sm.to)).or_default().push(addr);
                    left -= 1;
                }
                true
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{AccessSample, ProcessObs, ThreadObs};
    use crate::util::test::machine;
    use numabal_model::Mask;

    const PAGE: u64 = 4096;

    /// `stable`'s tunables as the daemon runs them (`build_live`: no core rebalance).
    fn live_tunables() -> Tunables {
        Tunables {
            rebalance: false,
            ..Tunables::default()
        }
    }

    /// A toy host that carries out the actions: processes whose threads write every page of
    /// their process's buffer once per pass (a soft-dirty sensor's view of numa01). Threads
    /// start spread over the nodes, every page on node 0.
    struct World {
        /// (pid, threads' nodes).
        procs: Vec<(Pid, Vec<(Tid, usize)>)>,
        /// Page nodes per process.
        pages: BTreeMap<Pid, Vec<usize>>,
        turn: usize,
    }

    impl World {
        fn new(nodes: usize, procs: u32, threads: u32, pages: usize) -> World {
            let mut w = World {
                procs: Vec::new(),
                pages: BTreeMap::new(),
                turn: 0,
            };
            let mut next = 0;
            for p in 0..procs {
                let pid = Pid(100 * (p + 1));
                let ts = (0..threads)
                    .map(|i| {
                        next += 1;
                        (Tid(pid.0 + i), next % nodes)
                    })
                    .collect();
                w.procs.push((pid, ts));
                w.pages.insert(pid, vec![0; pages]);
            }
            w
        }

        fn pass(&mut self, m: &Machine, p: &mut StableSampled, now_ns: u64) -> Vec<Action> {
            let mut samples = Vec::new();
            let mut threads = Vec::new();
            let mut procs = Vec::new();
            for (pid, ts) in &self.procs {
                for &(tid, node) in ts {
                    threads.push(ThreadObs {
                        tid,
                        pid: *pid,
                        cpu: Some(m.nodes[node].cpus.first().unwrap()),
                        node: Some(node),
                        cpu_time_ns: 0,
                        age_ns: None,
                    });
                }
                let pages = &self.pages[pid];
                // Every thread writes every page; which one faults first on a page after
                // the soft-dirty bits are cleared changes from pass to pass.
                let turn = self.turn;
                for (i, &pn) in pages.iter().enumerate() {
                    let (tid, node) = ts[(i + turn) % ts.len()];
                    samples.push(AccessSample {
                        tid,
                        pid: *pid,
                        node,
                        addr: i as u64 * PAGE,
                        page_node: pn,
                    });
                }
                procs.push(ProcessObs {
                    pid: *pid,
                    comm: "numa01".into(),
                    num_threads: ts.len() as u32,
                    cpu_time_ns: 0,
                    vsize_bytes: 0,
                    rss_bytes: 0,
                    node_bytes: vec![0; m.nr_nodes()],
                    interleaved: false,
                    mems_allowed: Mask::full(m.nr_nodes()),
                    kvm_vcpus: None,
                });
            }
            let obs = Observation {
                now_ns,
                threads: &threads,
                processes: &procs,
                nodes: &[],
                cpu_idle_ns: &[],
                samples: &samples,
            };
            let mut out = Vec::new();
            p.on_tick(m, &obs, &mut out);
            self.turn += 1;
            for a in &out {
                match a {
                    Action::SetThreadAffinity { tid, cpus } => {
                        let node = m.cpus[cpus.first().unwrap()].node;
                        for (_, ts) in &mut self.procs {
                            for t in ts.iter_mut().filter(|t| t.0 == *tid) {
                                t.1 = node;
                            }
                        }
                    }
                    Action::MovePages { pid, addrs, node } => {
                        for a in addrs {
                            self.pages.get_mut(pid).unwrap()[(a / PAGE) as usize] = *node;
                        }
                    }
                    Action::Log { .. } => {}
                    other => panic!("unexpected {other:?}"),
                }
            }
            out
        }
    }

    #[test]
    fn numa01_converges_one_node_per_process() {
        let m = machine("rhel-4n40");
        let mut p = StableSampled::new(live_tunables());
        // 6 + 6 threads do not fit on one node of 10 CPUs.
        let mut w = World::new(4, 2, 6, 256);
        let period = p.tick_interval_ns().unwrap();
        for k in 1..=30 {
            w.pass(&m, &mut p, k * period);
        }
        let mut homes = Vec::new();
        for (pid, ts) in &w.procs {
            let home = ts[0].1;
            assert!(ts.iter().all(|t| t.1 == home), "{pid:?} threads {ts:?}");
            let local = w.pages[pid].iter().filter(|&&n| n == home).count();
            assert!(
                local * 10 >= w.pages[pid].len() * 9,
                "{pid:?}: {local} local"
            );
            homes.push(home);
        }
        assert_ne!(homes[0], homes[1], "both processes on node {}", homes[0]);
    }

    #[test]
    fn exits_are_forgotten_and_replay_is_deterministic() {
        let m = machine("rhel-4n40");
        let run = || {
            let mut p = StableSampled::new(live_tunables());
            let mut w = World::new(4, 2, 2, 64);
            let period = p.tick_interval_ns().unwrap();
            let mut log = Vec::new();
            for k in 1..=5 {
                log.extend(w.pass(&m, &mut p, k * period));
            }
            w.procs.pop();
            log.extend(w.pass(&m, &mut p, 6 * period));
            assert!(p.pages.pids().all(|pid| pid == Pid(100)));
            assert!(p.pinned.values().all(|(pid, _)| *pid == Pid(100)));
            format!("{log:?}")
        };
        assert_eq!(run(), run());
    }
}
