//! `stable`: Stable-NUMA (the Stable-NUMA paper, §IV), the policy core. Pure: no clock, no I/O, no
//! threads; the backend that runs it (simulator or daemon) owns the mechanism.
//!
//! ```text
//!  backend                                     StableNuma (this module)
//!  ───────                                     ────────────────────────
//!  scanner, every scan_period_ms:
//!    for each page: should_unmap(rec, seq, key)   bypass counter / in-transition override
//!    unmap the eligible ones
//!  NUMA hinting fault on a page ─────────────► on_hint_fault(&mut rec, fault)
//!                                                 page state (Figure 7) -> placement,
//!    migrate if Placement::Migrate(node) ◄──────  thread-node / thread-thread raw counts,
//!                                                 system-shared count per node
//!  end of a process's scan sequence ─────────► on_scan_sequence_end(pid, runnable)
//!                                                 EMA 0.5, clustering decision (move/swap),
//!    move threads (+ their thread-private ◄────── system-shared balance (3/4 rule)
//!    pages), move system-shared pages, report
//!    them with on_page_migrated
//!  load balancer, inter-node move? ──────────► can_migrate_task: Deny once joined
//! ```
//!
//! Per-page state lives in the backend as a [`PageRecord`] (8 bytes) so that it can sit in
//! the backend's compact per-page arrays; the core keeps per-thread and per-node state only,
//! in `BTreeMap`s and slot-indexed `Vec`s.

pub mod bypass;
pub mod cluster;
mod page_book;
pub mod page_state;
pub mod sampled;
pub mod shared;
pub mod tables;
pub mod tunables;

pub use bypass::{BYPASS_MAX, Bypass};
pub use cluster::{
    Candidate, ClusterDecision, ClusterOutcome, ClusterParams, SlotView, VictimCheck, Why,
};
pub use page_state::{
    Class, Edge, FaultType, PageRecord, PageState, Placement, Transition, on_fault,
};
pub use sampled::StableSampled;
pub use shared::{SharedCounts, SharedMove, shared_balance};
pub use tables::{EMA_FACTOR, ThreadTables};
pub use tunables::{EmaStart, JoinAt, Tunables};

use crate::api::MigrateVerdict;
use numabal_model::{Pid, Tid};
use std::collections::BTreeMap;

/// One NUMA hinting fault as the backend saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HintFault {
    /// The faulting thread's process (its root group).
    pub pid: Pid,
    /// The faulting thread.
    pub tid: Tid,
    /// Node of the CPU it faulted on.
    pub node: usize,
    /// Node the page is on.
    pub page_node: usize,
}

/// What the end of a process's scan sequence decided.
#[derive(Debug, Clone, PartialEq)]
pub struct SequenceEnd {
    /// The clustering decision for the process (`None` if none of its threads has faulted
    /// yet). A `Move` or `Swap` has already been applied to the sub-groups; the backend moves
    /// each moved thread to a CPU of its new node and the thread's thread-private pages
    /// (records whose [`PageRecord::private_owner`] is the thread) to that node.
    pub cluster: Option<ClusterOutcome<Tid>>,
    /// The `Move` in `cluster` is the load balancing of `cluster::rebalance` (the paper's
    /// rule moved nothing and the sub-groups' loads were too far apart), not a locality
    /// move.
    pub rebalanced: bool,
    /// System-shared pages to move (any process's), reported back page by page with
    /// [`StableNuma::on_page_migrated`].
    pub shared: Option<SharedMove>,
}

#[derive(Debug, Clone)]
struct Member {
    tid: Tid,
    /// Node of its sub-group; `None` once it has exited.
    node: Option<usize>,
}

/// A root group: the threads of one address space, a sub-group per node, and their tables.
#[derive(Debug, Clone)]
struct RootGroup {
    allowed: Vec<bool>,
    members: Vec<Member>,
    tables: ThreadTables,
}

/// The `stable` policy core.
#[derive(Debug, Clone)]
pub struct StableNuma {
    tunables: Tunables,
    nodes: usize,
    roots: BTreeMap<Pid, RootGroup>,
    /// Each joined, live thread: its root group and slot.
    threads: BTreeMap<Tid, (Pid, usize)>,
    shared: SharedCounts,
    /// CPUs per node (`u32::MAX`: no limit, the paper's rules alone).
    node_cpus: Vec<u32>,
}

impl StableNuma {
    /// The core for a machine of `nodes` nodes.
    pub fn new(nodes: usize, tunables: Tunables) -> StableNuma {
        StableNuma {
            tunables,
            nodes,
            roots: BTreeMap::new(),
            threads: BTreeMap::new(),
            shared: SharedCounts::new(nodes),
            node_cpus: vec![u32::MAX; nodes],
        }
    }

    /// The number of CPUs of each node: a locality move by the threshold rule never puts
    /// more runnable threads of a root group on a node than it has CPUs, and `rebalance`
    /// moves a thread off a node that has more (see `cluster::move_allowed_cap`).
    pub fn set_node_cpus(&mut self, cpus: &[u32]) {
        for (n, c) in self.node_cpus.iter_mut().enumerate() {
            *c = cpus.get(n).copied().unwrap_or(u32::MAX);
        }
    }

    /// The tunables.
    pub fn tunables(&self) -> &Tunables {
        &self.tunables
    }

    fn root(&mut self, pid: Pid) -> &mut RootGroup {
        let nodes = self.nodes;
        self.roots.entry(pid).or_insert_with(|| RootGroup {
            allowed: vec![true; nodes],
            members: Vec::new(),
            tables: ThreadTables::new(nodes),
        })
    }

    /// The nodes a process may run on (its cpuset); every node unless set.
    pub fn set_allowed_nodes(&mut self, pid: Pid, allowed: &[bool]) {
        let nodes = self.nodes;
        let r = self.root(pid);
        r.allowed = (0..nodes)
            .map(|n| allowed.get(n).copied().unwrap_or(false))
            .collect();
    }

    /// `tid` of `pid` joins its root group, in the sub-group of `node` (where it runs).
    /// From then on the policy owns its inter-node moves. Joining twice changes nothing.
    /// [`StableNuma::on_hint_fault`] joins a thread at its first fault if the backend has
    /// not joined it before.
    pub fn join(&mut self, pid: Pid, tid: Tid, node: usize) {
        self.joined(pid, tid, node);
    }

    /// [`StableNuma::join`], returning the thread's root group and slot (one lookup on
    /// the fault path).
    fn joined(&mut self, pid: Pid, tid: Tid, node: usize) -> (Pid, usize) {
        if let Some(&at) = self.threads.get(&tid) {
            return at;
        }
        let r = self.root(pid);
        let slot = r.tables.add_thread();
        r.members.push(Member {
            tid,
            node: Some(node),
        });
        self.threads.insert(tid, (pid, slot));
        (pid, slot)
    }

    /// The node of a joined thread's sub-group.
    pub fn node_of(&self, tid: Tid) -> Option<usize> {
        let &(pid, slot) = self.threads.get(&tid)?;
        self.roots[&pid].members[slot].node
    }

    /// Put a joined thread in the sub-group of `node`: a move decided by the backend (the
    /// live daemon's node-capacity rules), or one of the core's moves the backend undid.
    pub fn place(&mut self, tid: Tid, node: usize) {
        if let Some(&(pid, slot)) = self.threads.get(&tid)
            && let Some(r) = self.roots.get_mut(&pid)
        {
            r.members[slot].node = Some(node);
        }
    }

    /// The live members of `pid`'s root group: each thread and its node.
    pub fn members(&self, pid: Pid) -> Vec<(Tid, usize)> {
        self.roots.get(&pid).map_or_else(Vec::new, |r| {
            r.members
                .iter()
                .filter_map(|m| m.node.map(|n| (m.tid, n)))
                .collect()
        })
    }

    /// Whether two live threads of `pid`'s root group on different nodes share pages
    /// (their thread-thread averages), and the group's pages per node (the sum of its
    /// live threads' thread-node averages).
    pub fn sharing(&self, pid: Pid) -> (bool, Vec<f64>) {
        let Some(r) = self.roots.get(&pid) else {
            return (false, vec![0.0; self.nodes]);
        };
        let live: Vec<(usize, usize)> = r
            .members
            .iter()
            .enumerate()
            .filter_map(|(i, m)| m.node.map(|n| (i, n)))
            .collect();
        let mut share = false;
        for (k, &(a, na)) in live.iter().enumerate() {
            for &(b, nb) in &live[k + 1..] {
                share |= na != nb && r.tables.shared_pages(a, b) > 0.0;
            }
        }
        let pages = (0..self.nodes)
            .map(|n| live.iter().map(|&(i, _)| r.tables.node_pages(i, n)).sum())
            .collect();
        (share, pages)
    }

    /// The tables of a process's root group.
    pub fn tables(&self, pid: Pid) -> Option<&ThreadTables> {
        self.roots.get(&pid).map(|r| &r.tables)
    }

    /// System-shared pages per node.
    pub fn shared_counts(&self) -> &[u64] {
        self.shared.per_node()
    }

    /// Whether scan sequence `seq` should unmap the page (`page_key` staggers pages, e.g.
    /// the page's index in its mapping).
    pub fn should_unmap(&self, page: &PageRecord, seq: u64, page_key: u64) -> bool {
        page.should_unmap(self.tunables.bypass_base_scans, seq, page_key)
    }

    /// A NUMA hinting fault: updates the page's record in place and the root group's
    /// tables and the system-shared counts; returns the transition, whose `placement` the
    /// backend carries out.
    pub fn on_hint_fault(&mut self, page: &mut PageRecord, f: HintFault) -> Transition {
        let (pid, slot) = self.joined(f.pid, f.tid, f.node);
        let t = on_fault(*page, f.tid, f.node, f.page_node);
        // A shared fault counts for the pair only inside one root group: the last accessor
        // may be of another process (shared memory) or gone.
        let peer = match (t.fault, page.last()) {
            (FaultType::SharedSameNode | FaultType::SharedCrossNode, Some((last, _))) => self
                .threads
                .get(&last)
                .filter(|(p, _)| *p == pid)
                .map(|&(_, s)| s),
            _ => None,
        };
        let tables = &mut self.roots.get_mut(&pid).expect("joined").tables;
        tables.record_access(slot, f.page_node);
        if let Some(last) = peer {
            tables.record_shared(slot, last);
        }
        let was = t.from == PageState::SYSTEM_SHARED;
        let is = t.record.state() == PageState::SYSTEM_SHARED;
        if was && !is {
            self.shared.remove(f.page_node);
        } else if is && !was {
            self.shared.add(f.page_node);
        }
        *page = t.record;
        t
    }

    /// The backend migrated a page (any reason); keeps the system-shared counts right.
    pub fn on_page_migrated(&mut self, page: &PageRecord, from: usize, to: usize) {
        if page.state() == PageState::SYSTEM_SHARED {
            self.shared.moved(from, to);
        }
    }

    /// The backend freed a page that was on `node`.
    pub fn on_page_freed(&mut self, page: &PageRecord, node: usize) {
        if page.state() == PageState::SYSTEM_SHARED {
            self.shared.remove(node);
        }
    }

    /// End of a scan sequence of `pid` (every allocated page scanned once): the tables'
    /// EMA update, then the clustering decision with the sub-groups' loads (`runnable`
    /// says which threads count), applied to the sub-groups; then the system-shared
    /// balance.
    pub fn on_scan_sequence_end(
        &mut self,
        pid: Pid,
        runnable: impl Fn(Tid) -> bool,
    ) -> SequenceEnd {
        let params = ClusterParams {
            imbalance_pct: self.tunables.imbalance_pct,
            move_load_margin: self.tunables.move_load_margin,
            swap_threshold: self.tunables.swap_threshold,
        };
        let start = self.tunables.ema_start;
        let rebalance_on = self.tunables.rebalance;
        let cpus = &self.node_cpus;
        let mut rebalanced = false;
        let cluster = self.roots.get_mut(&pid).map(|r| {
            r.tables.end_sequence(start);
            let slots: Vec<SlotView> = r
                .members
                .iter()
                .map(|m| SlotView {
                    node: m.node,
                    runnable: m.node.is_some() && runnable(m.tid),
                })
                .collect();
            let mut out = cluster::decide(&slots, &r.tables, &r.allowed, cpus, &params);
            if let (ClusterDecision::Nothing(_), true) = (out.decision, rebalance_on)
                && let Some(c) = cluster::rebalance(&slots, &r.tables, &r.allowed, cpus, &params)
            {
                rebalanced = true;
                out = ClusterOutcome::moving(c);
            }
            for (thread, _, to) in out.decision.moves() {
                r.members[thread].node = Some(to);
            }
            out.map(|s| r.members[s].tid)
        });
        SequenceEnd {
            cluster,
            rebalanced,
            shared: self.shared.balance(self.tunables.shared_balance_pct),
        }
    }

    /// The CPU load balancer asks to move `tid` between nodes: only inside a node once the
    /// thread has joined its root group; inter-node moves are the policy's.
    pub fn can_migrate_task(&self, tid: Tid, src_node: usize, dst_node: usize) -> MigrateVerdict {
        if src_node != dst_node && self.threads.contains_key(&tid) {
            MigrateVerdict::Deny
        } else {
            MigrateVerdict::Allow
        }
    }

    /// A thread exited: it leaves its sub-group (its table rows stay, unused).
    pub fn on_thread_exit(&mut self, tid: Tid) {
        if let Some((pid, slot)) = self.threads.remove(&tid)
            && let Some(r) = self.roots.get_mut(&pid)
        {
            r.members[slot].node = None;
        }
    }

    /// A process exited: its root group goes. (Its system-shared pages are reported freed
    /// by the backend, page by page.)
    pub fn on_process_exit(&mut self, pid: Pid) {
        if let Some(r) = self.roots.remove(&pid) {
            for m in r.members {
                self.threads.remove(&m.tid);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: Pid = Pid(1);

    fn fault(tid: u32, node: usize, page_node: usize) -> HintFault {
        HintFault {
            pid: P,
            tid: Tid(tid),
            node,
            page_node,
        }
    }

    #[test]
    fn faults_update_records_tables_and_shared_counts() {
        let mut s = StableNuma::new(2, Tunables::default());
        // Page A: three faults by thread 10 on node 0, page on node 1.
        let mut a = PageRecord::NEW;
        let p: Vec<Placement> = (0..3)
            .map(|_| s.on_hint_fault(&mut a, fault(10, 0, 1)).placement)
            .collect();
        assert_eq!(
            p,
            vec![Placement::Stay, Placement::Stay, Placement::Migrate(0)]
        );
        assert_eq!(a.private_owner(), Some(Tid(10)));
        // Page B on node 1: 10 (node 0), 11 (node 1), 10 (node 0): system-shared.
        let mut b = PageRecord::NEW;
        s.on_hint_fault(&mut b, fault(10, 0, 1));
        s.on_hint_fault(&mut b, fault(11, 1, 1));
        assert_eq!(s.shared_counts(), &[0, 0]);
        let t = s.on_hint_fault(&mut b, fault(10, 0, 1));
        assert_eq!(t.placement, Placement::SystemShared);
        assert_eq!(s.shared_counts(), &[0, 1]);
        // Tables (raw): 10 touched 3 + 2 pages on node 1; 11 one. Shared faults: (11, 10)
        // once, (10, 11) once. Slots by join order: 10 -> 0, 11 -> 1.
        let tb = s.tables(P).unwrap();
        assert_eq!((tb.node_raw(0, 0), tb.node_raw(0, 1)), (0, 5));
        assert_eq!(tb.node_raw(1, 1), 1);
        assert_eq!((tb.pair_raw(1, 0), tb.pair_raw(0, 1)), (1, 1));
        // The balance moves the shared page (1 vs 0: half of 1 is nothing to move).
        let end = s.on_scan_sequence_end(P, |_| true);
        assert_eq!(end.shared, None);
        // A loop fault doubles the counter and is not counted again.
        let t = s.on_hint_fault(&mut b, fault(11, 1, 1));
        assert_eq!(t.edge, Edge::Loop);
        assert_eq!(b.bypass().value(), 1);
        assert_eq!(s.shared_counts(), &[0, 1]);
        s.on_page_migrated(&b, 1, 0);
        assert_eq!(s.shared_counts(), &[1, 0]);
        // Leaving system-shared: two faults by thread 11 in a row (the second is private).
        let t = s.on_hint_fault(&mut b, fault(11, 1, 0));
        assert_eq!(t.edge, Edge::Leave);
        assert_eq!(s.shared_counts(), &[0, 0]);
        // Back to it: counted again on the page's node; freed: gone.
        let t = s.on_hint_fault(&mut b, fault(10, 0, 0));
        assert_eq!(t.edge, Edge::Return);
        assert_eq!(s.shared_counts(), &[1, 0]);
        s.on_page_freed(&b, 0);
        assert_eq!(s.shared_counts(), &[0, 0]);
        // Pages of thread-private state do not touch the counts.
        s.on_page_migrated(&a, 0, 1);
        s.on_page_freed(&a, 1);
        assert_eq!(s.shared_counts(), &[0, 0]);
    }

    #[test]
    fn shared_faults_across_processes_are_not_pairs() {
        let mut s = StableNuma::new(2, Tunables::default());
        let mut pg = PageRecord::NEW;
        s.on_hint_fault(&mut pg, fault(10, 0, 0));
        s.on_hint_fault(
            &mut pg,
            HintFault {
                pid: Pid(2),
                tid: Tid(20),
                node: 0,
                page_node: 0,
            },
        );
        assert_eq!(pg.state(), it_np());
        // Thread 20's root group has one slot; no pair counted in either group.
        assert_eq!(s.tables(Pid(2)).unwrap().len(), 1);
        assert_eq!(s.tables(Pid(2)).unwrap().pair_raw(0, 0), 0);
        assert_eq!(s.tables(P).unwrap().pair_raw(0, 0), 0);
    }

    fn it_np() -> PageState {
        PageState::InTransition {
            to: Class::NodePrivate,
            last: None,
        }
    }

    #[test]
    fn load_balancer_keeps_joined_threads_on_their_node() {
        let mut s = StableNuma::new(2, Tunables::default());
        assert_eq!(s.can_migrate_task(Tid(10), 0, 1), MigrateVerdict::Allow);
        s.join(P, Tid(10), 0);
        assert_eq!(s.node_of(Tid(10)), Some(0));
        assert_eq!(s.can_migrate_task(Tid(10), 0, 1), MigrateVerdict::Deny);
        assert_eq!(s.can_migrate_task(Tid(10), 0, 0), MigrateVerdict::Allow);
        // Joining again (e.g. at a fault on another node) does not change its sub-group.
        let mut pg = PageRecord::NEW;
        s.on_hint_fault(&mut pg, fault(10, 1, 1));
        assert_eq!(s.node_of(Tid(10)), Some(0));
        // A thread first seen at a fault joins the node it faulted on.
        s.on_hint_fault(&mut pg, fault(11, 1, 1));
        assert_eq!(s.node_of(Tid(11)), Some(1));
        s.on_thread_exit(Tid(10));
        assert_eq!(s.can_migrate_task(Tid(10), 0, 1), MigrateVerdict::Allow);
        assert_eq!(s.node_of(Tid(10)), None);
        s.on_process_exit(P);
        assert_eq!(s.can_migrate_task(Tid(11), 1, 0), MigrateVerdict::Allow);
        assert!(s.tables(P).is_none());
    }

    /// Figure 8 through the API: the counts arrive as hinting faults. Thread-node counts
    /// come from first faults on fresh pages (T1's 43 on node 0 then the 44th); thread-thread
    /// counts from faults on pages whose last accessor is the column thread, each on a page
    /// of the faulting thread's node (so they add to its local thread-node entry: T0
    /// [76, 10], T1 [44, 39], T2 [54, 30], T3 [8, 66]; T1 to node 0 is still the only gain).
    #[test]
    fn figure_8_through_the_api() {
        let mut s = StableNuma::new(2, Tunables::default());
        let tid = |i: u32| Tid(100 + i);
        let node = [0usize, 1, 0, 1];
        for i in 0..4 {
            s.join(P, tid(i), node[i as usize]);
        }
        let f = |i: u32, page_node| HintFault {
            pid: P,
            tid: tid(i),
            node: node[i as usize],
            page_node,
        };
        let node_counts = [[50, 10], [44, 12], [20, 30], [8, 40]];
        for (i, row) in node_counts.iter().enumerate() {
            for (pn, &n) in row.iter().enumerate() {
                for _ in 0..n {
                    let mut fresh = PageRecord::NEW;
                    s.on_hint_fault(&mut fresh, f(i as u32, pn));
                }
            }
        }
        #[rustfmt::skip]
        let pair_counts = [
            (0, 1, 20), (1, 0, 18), (0, 2, 4), (2, 0, 3), (1, 2, 5), (2, 1, 6),
            (2, 3, 25), (3, 2, 22), (0, 3, 2), (3, 0, 1), (1, 3, 4), (3, 1, 3),
        ];
        for (cur, last, n) in pair_counts {
            for _ in 0..n {
                let mut pg = PageRecord::with(
                    PageState::Unclassified,
                    Some((tid(last), node[last as usize])),
                    Bypass::CLEAR,
                );
                let here = node[cur as usize];
                s.on_hint_fault(&mut pg, f(cur, here));
            }
        }
        let end = s.on_scan_sequence_end(P, |_| true);
        let c = end.cluster.unwrap();
        assert_eq!(
            c.candidate,
            Some(Candidate {
                thread: tid(1),
                from: 1,
                to: 0,
                gain: 5.0
            })
        );
        assert_eq!(
            c.decision,
            ClusterDecision::Swap {
                thread: tid(1),
                victim: tid(2),
                from: 1,
                to: 0
            }
        );
        // Applied: T0, T1 on node 0, T2, T3 on node 1.
        let nodes: Vec<_> = (0..4).map(|i| s.node_of(tid(i)).unwrap()).collect();
        assert_eq!(nodes, vec![0, 0, 1, 1]);
        // Next sequence with no faults: the averages halve. T2's shared faults were counted
        // on node 0, so it now gains 27 - 15 = 12 by going back; loads 2 vs 2 refuse the move;
        // the victim on node 0 (T2 counted there) is T0 (22.5 shared pages against T1's
        // 24.5), and T2 shares 5.5 pages with the rest (T1) against T0's 19: no swap. The
        // swap threshold keeps the pair from ping-ponging.
        let end = s.on_scan_sequence_end(P, |_| true);
        let c = end.cluster.unwrap();
        assert_eq!(
            c.candidate,
            Some(Candidate {
                thread: tid(2),
                from: 1,
                to: 0,
                gain: 12.0
            })
        );
        assert_eq!(
            c.victim,
            Some(VictimCheck {
                victim: tid(0),
                source_shared: 5.5,
                victim_shared: 19.0
            })
        );
        assert_eq!(
            c.decision,
            ClusterDecision::Nothing(Why::BelowSwapThreshold)
        );
        let nodes: Vec<_> = (0..4).map(|i| s.node_of(tid(i)).unwrap()).collect();
        assert_eq!(nodes, vec![0, 0, 1, 1]);
        assert_eq!(s.tables(P).unwrap().node_pages(1, 0), 22.0);
    }

    #[test]
    fn should_unmap_uses_the_base() {
        let s = StableNuma::new(
            2,
            Tunables {
                bypass_base_scans: 2,
                ..Tunables::default()
            },
        );
        let r = PageRecord::with(PageState::THREAD_PRIVATE, Some((Tid(1), 0)), Bypass::new(1));
        let seqs: Vec<u64> = (0..10).filter(|&q| s.should_unmap(&r, q, 0)).collect();
        assert_eq!(seqs, vec![0, 4, 8]);
        let r = PageRecord::with(
            PageState::InTransition {
                to: Class::NodePrivate,
                last: Some(Class::ThreadPrivate),
            },
            Some((Tid(1), 0)),
            Bypass::new(1),
        );
        assert!((0..10).all(|q| s.should_unmap(&r, q, 0)));
    }
}
