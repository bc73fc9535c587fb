//! The page-state machine of §IV-A (the paper's Figure 7), as a pure function of the page's
//! record and one NUMA hinting fault.
//!
//! ```text
//!                       (fault of type X: private -> thread-private, shared from the
//!                        same node -> node-private, shared across nodes -> system-shared)
//!
//!   unclassified ──first fault (recorded only)──► unclassified
//!        │ X
//!        ▼
//!   in-transition(to X, last -) ◄─────────────── settled S ◄──┐ loop: type S again,
//!        │ X again: settle (clear counter)          │  X≠S     │ bypass counter doubled
//!        ▼                                          ▼          │
//!   settled X ──── Y≠X ──►  in-transition(to Y, last X) ── X: return to X (counter kept)
//!                                │ Y again: settle in Y (clear counter)
//!                                │ Z (third type): in-transition(to Z, last X)
//! ```
//!
//! Figure 7 itself is not in the text; this is the diagram the text describes. The reading
//! of "in-transition" used here: the in-transition state of X is the one a page enters on
//! one fault of X's type, and it "remembers the last state" the page settled in, so that a
//! fault of that state's type brings it back. "Two consecutive NUMA-hinting faults of the
//! same type" settle a page; "one unclassified fault + two private faults" make a fresh page
//! thread-private.

use super::bypass::Bypass;
use numabal_model::Tid;
use std::fmt;

/// A settled page state (and what one fault type points to).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    /// Accessed by one thread; lives on that thread's node and follows it.
    ThreadPrivate,
    /// Shared by threads of one node; lives on that node.
    NodePrivate,
    /// Shared by threads on two or more nodes; counted per node and balanced.
    SystemShared,
}

impl Class {
    /// Every class, in order.
    pub const ALL: [Class; 3] = [
        Class::ThreadPrivate,
        Class::NodePrivate,
        Class::SystemShared,
    ];

    /// The paper's name.
    pub fn name(self) -> &'static str {
        match self {
            Class::ThreadPrivate => "thread-private",
            Class::NodePrivate => "node-private",
            Class::SystemShared => "system-shared",
        }
    }

    fn code(self) -> u8 {
        match self {
            Class::ThreadPrivate => 1,
            Class::NodePrivate => 2,
            Class::SystemShared => 3,
        }
    }

    fn from_code(c: u8) -> Option<Class> {
        match c {
            1 => Some(Class::ThreadPrivate),
            2 => Some(Class::NodePrivate),
            3 => Some(Class::SystemShared),
            _ => None,
        }
    }
}

/// A page's state: the paper's six states (three settled ones and an in-transition state for
/// each) plus the state of a page that has not yet been classified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum PageState {
    /// Not classified yet (no fault, or only faults that never repeated a type).
    Unclassified,
    /// Thread-private, node-private or system-shared.
    Settled(Class),
    /// One fault of `to`'s type seen; a second one settles the page in `to`. `last` is the
    /// state the page was settled in before (none for a page never classified); a fault of
    /// its type takes the page back there.
    InTransition {
        /// The state a second fault of the same type settles the page in.
        to: Class,
        /// The state the page left.
        last: Option<Class>,
    },
}

impl PageState {
    /// Thread-private.
    pub const THREAD_PRIVATE: PageState = PageState::Settled(Class::ThreadPrivate);
    /// Node-private.
    pub const NODE_PRIVATE: PageState = PageState::Settled(Class::NodePrivate);
    /// System-shared.
    pub const SYSTEM_SHARED: PageState = PageState::Settled(Class::SystemShared);

    /// Every state a record can hold (13: unclassified, 3 settled, 3 x 3 in-transition).
    pub fn all() -> Vec<PageState> {
        let mut v = vec![PageState::Unclassified];
        v.extend(Class::ALL.map(PageState::Settled));
        for to in Class::ALL {
            v.push(PageState::InTransition { to, last: None });
            for last in Class::ALL {
                if last != to {
                    v.push(PageState::InTransition {
                        to,
                        last: Some(last),
                    });
                }
            }
        }
        v
    }

    /// In one of the three in-transition states.
    pub fn in_transition(self) -> bool {
        matches!(self, PageState::InTransition { .. })
    }

    /// Packed in 5 bits: bits 0-1 the class (settled) or target (in transition), bit 2 the
    /// in-transition flag, bits 3-4 the remembered last class.
    fn pack(self) -> u8 {
        match self {
            PageState::Unclassified => 0,
            PageState::Settled(c) => c.code(),
            PageState::InTransition { to, last } => {
                to.code() | 4 | (last.map_or(0, Class::code) << 3)
            }
        }
    }

    fn unpack(b: u8) -> PageState {
        match (Class::from_code(b & 3), b & 4 != 0) {
            (None, _) => PageState::Unclassified,
            (Some(c), false) => PageState::Settled(c),
            (Some(to), true) => PageState::InTransition {
                to,
                last: Class::from_code((b >> 3) & 3),
            },
        }
    }
}

impl fmt::Display for PageState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PageState::Unclassified => write!(f, "unclassified"),
            PageState::Settled(c) => write!(f, "{}", c.name()),
            PageState::InTransition { to, last: None } => {
                write!(f, "in-transition to {}", to.name())
            }
            PageState::InTransition { to, last: Some(l) } => {
                write!(f, "in-transition to {} from {}", to.name(), l.name())
            }
        }
    }
}

/// The type of a NUMA hinting fault, from the page's recorded last accessor and the
/// faulting thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultType {
    /// No accessor recorded yet.
    Unclassified,
    /// The same thread as the last fault ("private fault").
    Private,
    /// Another thread, on the node the last accessor ran on ("shared fault from the same
    /// node").
    SharedSameNode,
    /// Another thread, on another node ("shared fault from different nodes").
    SharedCrossNode,
}

impl FaultType {
    /// The settled state two consecutive faults of this type lead to.
    pub fn class(self) -> Option<Class> {
        match self {
            FaultType::Unclassified => None,
            FaultType::Private => Some(Class::ThreadPrivate),
            FaultType::SharedSameNode => Some(Class::NodePrivate),
            FaultType::SharedCrossNode => Some(Class::SystemShared),
        }
    }
}

/// Which edge of the diagram a fault took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edge {
    /// The first fault on a page: only the accessor is recorded.
    FirstFault,
    /// A settled page takes a fault of its own type: it stays; the bypass counter doubles.
    Loop,
    /// A settled or unclassified page takes a fault of another type: in transition to that
    /// type's state; the counter is kept (and overridden: unmapped at the next scan).
    Leave,
    /// The second consecutive fault of an in-transition page's target type: settled there;
    /// the counter is cleared (a state change).
    Settle,
    /// An in-transition page takes a fault of its last state's type: back to it (the second
    /// chance); the counter is kept, so the page keeps its profiling rate.
    Return,
    /// An in-transition page takes a fault of a third type: in transition to that type's
    /// state instead, still remembering the last state; the counter is kept.
    Retarget,
}

/// What to do with the page after the fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Leave the page where it is.
    Stay,
    /// Migrate the page to this node (thread-private: its owner's node; node-private: the
    /// sharers' node).
    Migrate(usize),
    /// System-shared: leave it; it is counted on its node and moved only by the per-node
    /// balance ([`super::shared::shared_balance`]).
    SystemShared,
}

/// Sentinel for "no accessor recorded".
const NO_TID: u32 = u32::MAX;

/// Per-page record, 8 bytes so that a backend can keep one per page in a compact array: the
/// last faulting thread and the node of the CPU it faulted on (the paper keeps the thread and
/// the CPU in the field Auto-NUMA uses for `last_cpupid`; only the CPU's node is ever used),
/// the state and the unmapping bypass counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRecord {
    last_tid: u32,
    last_nid: u16,
    state: u8,
    bypass: Bypass,
}

impl Default for PageRecord {
    fn default() -> Self {
        PageRecord::NEW
    }
}

impl PageRecord {
    /// A page never faulted on.
    pub const NEW: PageRecord = PageRecord {
        last_tid: NO_TID,
        last_nid: 0,
        state: 0,
        bypass: Bypass::CLEAR,
    };

    /// A record with the given contents (tests and backends restoring state).
    pub fn with(state: PageState, last: Option<(Tid, usize)>, bypass: Bypass) -> PageRecord {
        let (last_tid, last_nid) = match last {
            Some((t, n)) => (t.0, n as u16),
            None => (NO_TID, 0),
        };
        PageRecord {
            last_tid,
            last_nid,
            state: state.pack(),
            bypass,
        }
    }

    /// The state.
    pub fn state(&self) -> PageState {
        PageState::unpack(self.state)
    }

    /// The last faulting thread and the node it faulted on.
    pub fn last(&self) -> Option<(Tid, usize)> {
        (self.last_tid != NO_TID).then_some((Tid(self.last_tid), usize::from(self.last_nid)))
    }

    /// The bypass counter.
    pub fn bypass(&self) -> Bypass {
        self.bypass
    }

    /// The owner of a thread-private page (its pages follow it when it moves).
    pub fn private_owner(&self) -> Option<Tid> {
        match self.state() {
            PageState::Settled(Class::ThreadPrivate) => self.last().map(|(t, _)| t),
            _ => None,
        }
    }

    /// Whether scan sequence `seq` unmaps the page: always in the sequence after it went in
    /// transition (the override), else by its bypass counter.
    pub fn should_unmap(&self, bypass_base_scans: u32, seq: u64, page_key: u64) -> bool {
        self.state().in_transition() || self.bypass.eligible(bypass_base_scans, seq, page_key)
    }

    /// The type of a fault by `tid` on `node`.
    pub fn fault_type(&self, tid: Tid, node: usize) -> FaultType {
        match self.last() {
            None => FaultType::Unclassified,
            Some((t, _)) if t == tid => FaultType::Private,
            Some((_, n)) if n == node => FaultType::SharedSameNode,
            Some(_) => FaultType::SharedCrossNode,
        }
    }
}

/// The result of one fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition {
    /// The fault's type.
    pub fault: FaultType,
    /// The edge taken.
    pub edge: Edge,
    /// The state before.
    pub from: PageState,
    /// The record after (state, last accessor = this fault, counter).
    pub record: PageRecord,
    /// Where the page should be.
    pub placement: Placement,
}

/// The state machine: a fault by `tid` running on `node` on a page now on `page_node`.
pub fn on_fault(rec: PageRecord, tid: Tid, node: usize, page_node: usize) -> Transition {
    let from = rec.state();
    let fault = rec.fault_type(tid, node);
    let (edge, to) = match (from, fault.class()) {
        (_, None) => (Edge::FirstFault, from),
        (PageState::Unclassified, Some(x)) => {
            (Edge::Leave, PageState::InTransition { to: x, last: None })
        }
        (PageState::Settled(s), Some(x)) if s == x => (Edge::Loop, from),
        (PageState::Settled(s), Some(x)) => (
            Edge::Leave,
            PageState::InTransition {
                to: x,
                last: Some(s),
            },
        ),
        (PageState::InTransition { to, .. }, Some(x)) if x == to => {
            (Edge::Settle, PageState::Settled(x))
        }
        (PageState::InTransition { last: Some(l), .. }, Some(x)) if x == l => {
            (Edge::Return, PageState::Settled(x))
        }
        (PageState::InTransition { last, .. }, Some(x)) => {
            (Edge::Retarget, PageState::InTransition { to: x, last })
        }
    };
    let bypass = match edge {
        Edge::Loop => rec.bypass.doubled(),
        Edge::Settle => Bypass::CLEAR,
        Edge::FirstFault | Edge::Leave | Edge::Return | Edge::Retarget => rec.bypass,
    };
    // Placement follows the state after the fault. A thread-private page goes to its
    // owner's node (the faulting thread is the owner: the fault was private); a node-private
    // page to the node of its sharers (this fault and the last came from `node`). Pages in
    // transition stay: migrating on a fault that may be accidental is what the second
    // chance avoids.
    let placement = match to {
        PageState::Settled(Class::ThreadPrivate | Class::NodePrivate) if page_node != node => {
            Placement::Migrate(node)
        }
        PageState::Settled(Class::SystemShared) => Placement::SystemShared,
        _ => Placement::Stay,
    };
    Transition {
        fault,
        edge,
        from,
        record: PageRecord::with(to, Some((tid, node)), bypass),
        placement,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Class::{NodePrivate as NP, SystemShared as SS, ThreadPrivate as TP};
    use FaultType::{Private as P, SharedCrossNode as X, SharedSameNode as S, Unclassified as U};

    fn it(to: Class, last: Option<Class>) -> PageState {
        PageState::InTransition { to, last }
    }
    const UNCL: PageState = PageState::Unclassified;
    const STP: PageState = PageState::THREAD_PRIVATE;
    const SNP: PageState = PageState::NODE_PRIVATE;
    const SSS: PageState = PageState::SYSTEM_SHARED;

    /// The last accessor of every test record: thread 1 faulting on node 0.
    const LAST: (Tid, usize) = (Tid(1), 0);

    /// A fault of the given type against a record whose last accessor is `LAST`: (tid,
    /// node) of the faulting thread.
    fn faulter(f: FaultType) -> (Tid, usize) {
        match f {
            U | P => (Tid(1), 0),
            S => (Tid(2), 0),
            X => (Tid(2), 1),
        }
    }

    #[test]
    fn record_is_eight_bytes_and_packs_every_state() {
        assert_eq!(std::mem::size_of::<PageRecord>(), 8);
        let states = PageState::all();
        assert_eq!(states.len(), 13);
        for s in states {
            for b in 0..=7 {
                let r = PageRecord::with(s, Some((Tid(7), 3)), Bypass::new(b));
                assert_eq!(
                    (r.state(), r.last(), r.bypass().value()),
                    (s, Some((Tid(7), 3)), b)
                );
            }
        }
        assert_eq!(PageRecord::NEW.state(), PageState::Unclassified);
        assert_eq!(PageRecord::NEW.last(), None);
        assert_eq!(PageRecord::default(), PageRecord::NEW);
    }

    #[test]
    fn fault_types() {
        let r = PageRecord::with(UNCL, Some((Tid(1), 0)), Bypass::CLEAR);
        assert_eq!(PageRecord::NEW.fault_type(Tid(1), 0), U);
        assert_eq!(r.fault_type(Tid(1), 0), P);
        // The same thread after moving to another node is still a private fault.
        assert_eq!(r.fault_type(Tid(1), 1), P);
        assert_eq!(r.fault_type(Tid(2), 0), S);
        assert_eq!(r.fault_type(Tid(2), 1), X);
    }

    /// Every edge of the state diagram: (state before, fault type) -> (edge, state after,
    /// bypass counter after, starting from 3). The page is on node 1; the faulting thread's
    /// node is 0 for P and S faults and 1 for X faults (see `faulter`).
    #[test]
    fn every_edge_of_figure_7() {
        use Edge::*;
        #[rustfmt::skip]
        let rows: &[(PageState, FaultType, Edge, PageState, u8)] = &[
            // First fault: only recorded (the "one unclassified fault" of thread-private).
            (UNCL, U, FirstFault, UNCL, 3),
            // Unclassified -> in-transition to each settled state, remembering none.
            (UNCL, P, Leave, it(TP, None), 3),
            (UNCL, S, Leave, it(NP, None), 3),
            (UNCL, X, Leave, it(SS, None), 3),
            // Loop edges of the three settled states: the counter doubles (3 -> 4).
            (STP, P, Loop, STP, 4),
            (SNP, S, Loop, SNP, 4),
            (SSS, X, Loop, SSS, 4),
            // Settled -> in-transition to another state, remembering the settled one.
            (STP, S, Leave, it(NP, Some(TP)), 3),
            (STP, X, Leave, it(SS, Some(TP)), 3),
            (SNP, P, Leave, it(TP, Some(NP)), 3),
            (SNP, X, Leave, it(SS, Some(NP)), 3),
            (SSS, P, Leave, it(TP, Some(SS)), 3),
            (SSS, S, Leave, it(NP, Some(SS)), 3),
            // Second consecutive fault of the same type: settle, counter cleared.
            (it(TP, None), P, Settle, STP, 0),
            (it(TP, Some(NP)), P, Settle, STP, 0),
            (it(TP, Some(SS)), P, Settle, STP, 0),
            (it(NP, None), S, Settle, SNP, 0),
            (it(NP, Some(TP)), S, Settle, SNP, 0),
            (it(NP, Some(SS)), S, Settle, SNP, 0),
            (it(SS, None), X, Settle, SSS, 0),
            (it(SS, Some(TP)), X, Settle, SSS, 0),
            (it(SS, Some(NP)), X, Settle, SSS, 0),
            // Second chance: a fault of the last state's type returns there, counter kept.
            (it(NP, Some(TP)), P, Return, STP, 3),
            (it(SS, Some(TP)), P, Return, STP, 3),
            (it(TP, Some(NP)), S, Return, SNP, 3),
            (it(SS, Some(NP)), S, Return, SNP, 3),
            (it(TP, Some(SS)), X, Return, SSS, 3),
            (it(NP, Some(SS)), X, Return, SSS, 3),
            // A third type: in transition to it instead, same remembered state.
            (it(NP, Some(TP)), X, Retarget, it(SS, Some(TP)), 3),
            (it(SS, Some(TP)), S, Retarget, it(NP, Some(TP)), 3),
            (it(TP, Some(NP)), X, Retarget, it(SS, Some(NP)), 3),
            (it(SS, Some(NP)), P, Retarget, it(TP, Some(NP)), 3),
            (it(TP, Some(SS)), S, Retarget, it(NP, Some(SS)), 3),
            (it(NP, Some(SS)), P, Retarget, it(TP, Some(SS)), 3),
            // ... and from a page never settled (nothing to return to).
            (it(TP, None), S, Retarget, it(NP, None), 3),
            (it(TP, None), X, Retarget, it(SS, None), 3),
            (it(NP, None), P, Retarget, it(TP, None), 3),
            (it(NP, None), X, Retarget, it(SS, None), 3),
            (it(SS, None), P, Retarget, it(TP, None), 3),
            (it(SS, None), S, Retarget, it(NP, None), 3),
        ];
        // Every (state, classified fault type) pair is a row, plus the first fault.
        assert_eq!(rows.len(), 13 * 3 + 1);
        for &(from, f, edge, to, bypass) in rows {
            let last = (f != U).then_some(LAST);
            let rec = PageRecord::with(from, last, Bypass::new(3));
            let (tid, node) = faulter(f);
            let t = on_fault(rec, tid, node, 1);
            let row = format!("{from} + {f:?}");
            assert_eq!(t.fault, f, "{row}");
            assert_eq!(t.edge, edge, "{row}");
            assert_eq!(t.from, from, "{row}");
            assert_eq!(t.record.state(), to, "{row}");
            assert_eq!(t.record.bypass().value(), bypass, "{row}");
            // The fault is always recorded as the new last accessor.
            assert_eq!(t.record.last(), Some((tid, node)), "{row}");
        }
        // The table covers every pair once.
        for from in PageState::all() {
            for f in [P, S, X] {
                let n = rows.iter().filter(|r| r.0 == from && r.1 == f).count();
                assert_eq!(n, 1, "{from} + {f:?}");
            }
        }
    }

    #[test]
    fn placement_per_state() {
        let rec = |s| PageRecord::with(s, Some(LAST), Bypass::CLEAR);
        // Becoming thread-private migrates the page to the owner's node (0) at once.
        let t = on_fault(rec(it(TP, None)), Tid(1), 0, 1);
        assert_eq!(t.placement, Placement::Migrate(0));
        assert_eq!(t.record.private_owner(), Some(Tid(1)));
        // Already there: stay.
        assert_eq!(
            on_fault(rec(it(TP, None)), Tid(1), 0, 0).placement,
            Placement::Stay
        );
        // The owner moved to node 1 (a private fault from node 1): the page follows it.
        assert_eq!(
            on_fault(rec(STP), Tid(1), 1, 0).placement,
            Placement::Migrate(1)
        );
        // Node-private: to the sharers' node.
        assert_eq!(
            on_fault(rec(it(NP, Some(SS))), Tid(2), 0, 1).placement,
            Placement::Migrate(0)
        );
        assert_eq!(
            on_fault(rec(SNP), Tid(2), 0, 1).placement,
            Placement::Migrate(0)
        );
        assert_eq!(
            on_fault(rec(SNP), Tid(2), 0, 1).record.private_owner(),
            None
        );
        // System-shared: counted, never migrated on a fault.
        assert_eq!(
            on_fault(rec(it(SS, None)), Tid(2), 1, 0).placement,
            Placement::SystemShared
        );
        assert_eq!(
            on_fault(rec(SSS), Tid(2), 1, 0).placement,
            Placement::SystemShared
        );
        // In transition: stay, even towards thread-private on another node.
        assert_eq!(on_fault(rec(SNP), Tid(1), 0, 1).placement, Placement::Stay);
        assert_eq!(on_fault(rec(UNCL), Tid(2), 1, 0).placement, Placement::Stay);
        assert_eq!(
            on_fault(PageRecord::NEW, Tid(2), 1, 0).placement,
            Placement::Stay
        );
    }

    /// "Three consecutive hinting faults owing to one thread (one unclassified fault + two
    /// private faults) make a page thread-private", "two shared faults from the same node"
    /// node-private, "two from different nodes" system-shared.
    #[test]
    fn fault_sequences_from_a_fresh_page() {
        let run = |faults: &[(u32, usize)]| -> Vec<PageState> {
            let mut r = PageRecord::NEW;
            faults
                .iter()
                .map(|&(t, n)| {
                    r = on_fault(r, Tid(t), n, 0).record;
                    r.state()
                })
                .collect()
        };
        assert_eq!(
            run(&[(1, 0), (1, 0), (1, 0)]),
            vec![UNCL, it(TP, None), STP]
        );
        assert_eq!(
            run(&[(1, 0), (2, 0), (3, 0)]),
            vec![UNCL, it(NP, None), SNP]
        );
        assert_eq!(
            run(&[(1, 0), (2, 1), (3, 0)]),
            vec![UNCL, it(SS, None), SSS]
        );
    }

    /// The second chance, with every fault recorded as the page's last accessor (as the
    /// paper records it).
    #[test]
    fn second_chance_sequences() {
        let run = |faults: &[(u32, usize)]| -> (Vec<Edge>, PageRecord) {
            let mut r = PageRecord::NEW;
            let edges = faults
                .iter()
                .map(|&(t, n)| {
                    let tr = on_fault(r, Tid(t), n, 0);
                    r = tr.record;
                    tr.edge
                })
                .collect();
            (edges, r)
        };
        use Edge::*;
        // System-shared page (threads 1 on node 0, 2 on node 1 alternating), two loop
        // edges (n = 2); threads 3 and 1 of node 0 fault in a row (a shared fault from one
        // node): in transition to node-private; the next cross-node fault returns it to
        // system-shared with the counter kept.
        let (e, r) = run(&[(1, 0), (2, 1), (1, 0), (2, 1), (1, 0), (3, 0), (2, 1)]);
        assert_eq!(
            e,
            vec![FirstFault, Leave, Settle, Loop, Loop, Leave, Return]
        );
        assert_eq!((r.state(), r.bypass().value()), (SSS, 2));
        // Thread-private page of thread 1 (n = 2) touched once by thread 2 of the same node:
        // thread 1's next fault follows thread 2's, so it is a shared fault from the same
        // node too, the second in a row: the page settles as node-private, counter cleared.
        // One recorded accessor cannot tell this from real sharing (see the model notes).
        let (e, r) = run(&[(1, 0), (1, 0), (1, 0), (1, 0), (1, 0), (2, 0), (1, 0)]);
        assert_eq!(
            e,
            vec![FirstFault, Leave, Settle, Loop, Loop, Leave, Settle]
        );
        assert_eq!((r.state(), r.bypass().value()), (SNP, 0));
        // If thread 2 faults twice in a row instead, the second is a private fault: the
        // page returns to thread-private (now thread 2's), counter kept.
        let (e, r) = run(&[(1, 0), (1, 0), (1, 0), (1, 0), (1, 0), (2, 0), (2, 0)]);
        assert_eq!(
            e,
            vec![FirstFault, Leave, Settle, Loop, Loop, Leave, Return]
        );
        assert_eq!((r.state(), r.bypass().value()), (STP, 2));
        assert_eq!(r.private_owner(), Some(Tid(2)));
    }

    #[test]
    fn in_transition_forces_the_next_unmapping() {
        let settled = PageRecord::with(STP, Some(LAST), Bypass::new(3));
        // Counter 3: one sequence in 8.
        let seqs: Vec<u64> = (0..16).filter(|&s| settled.should_unmap(1, s, 0)).collect();
        assert_eq!(seqs, vec![0, 8]);
        // A shared fault puts it in transition: the counter is kept but every sequence
        // unmaps it until it settles or returns.
        let t = on_fault(settled, Tid(2), 0, 0);
        assert_eq!(t.record.bypass().value(), 3);
        assert!((0..16).all(|s| t.record.should_unmap(1, s, 0)));
        // Thread 2 faults again (a private fault): back to thread-private, and the kept
        // counter applies again.
        let back = on_fault(t.record, Tid(2), 0, 0).record;
        assert_eq!(back.state(), STP);
        assert_eq!(
            (0..16)
                .filter(|&s| back.should_unmap(1, s, 0))
                .collect::<Vec<_>>(),
            vec![0, 8]
        );
        assert_eq!(back.bypass().value(), 3);
    }
}
