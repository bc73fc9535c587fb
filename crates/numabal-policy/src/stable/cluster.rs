//! Page-sharing-based thread clustering (§IV-B): the decision taken for one root group at
//! the end of each of its scan sequences.
//!
//! ```text
//!  thread-node table ──► candidate: the (thread, node) move that adds the most local pages
//!                             │ (none adds any: nothing)
//!                             ▼
//!  sub-group loads ────► move if the source sub-group is sufficiently busier, or the loads
//!  (runnable threads)    after the move are within the kernel's imbalance_pct
//!                             │ (else)
//!                             ▼
//!  thread-thread table ─► victim: the destination thread sharing the fewest pages with the
//!                         destination sub-group (the candidate counted in it); swap if the
//!                         candidate shares more than swap_threshold times the victim's pages
//!                         with the rest of that sub-group, else nothing
//! ```

use super::tables::ThreadTables;

/// The decision's parameters (from the tunables).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClusterParams {
    /// The kernel's NUMA-domain `imbalance_pct`.
    pub imbalance_pct: u32,
    /// "Sufficiently higher": runnable threads more in the source sub-group.
    pub move_load_margin: u32,
    /// The swap threshold (1.5).
    pub swap_threshold: f64,
}

/// A thread slot as the decision sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotView {
    /// The node of its sub-group; `None` for a thread that has left (exited).
    pub node: Option<usize>,
    /// Runnable: counts in its sub-group's load.
    pub runnable: bool,
}

/// The thread whose move to another node adds the most local pages.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate<T> {
    /// The thread.
    pub thread: T,
    /// Its sub-group's node.
    pub from: usize,
    /// The node it would move to.
    pub to: usize,
    /// Local pages gained: thread-node(to) - thread-node(from).
    pub gain: f64,
}

/// The victim of a swap and the sharing figures compared.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VictimCheck<T> {
    /// The destination thread sharing the fewest pages with the destination sub-group.
    pub victim: T,
    /// Pages the candidate shares with the rest of the destination sub-group.
    pub source_shared: f64,
    /// Pages the victim shares with them.
    pub victim_shared: f64,
}

/// Why nothing moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// No thread gains local pages by moving.
    NoGain,
    /// A move would unbalance the loads and no thread can take the candidate's place: the
    /// destination sub-group is empty (or the candidate's node is no longer allowed).
    NoVictim,
    /// A move would unbalance the loads and the candidate does not share enough more pages
    /// with the destination sub-group than the victim.
    BelowSwapThreshold,
}

/// What to do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ClusterDecision<T> {
    /// Nothing.
    Nothing(Why),
    /// Move `thread` to the sub-group (and node) `to`; its thread-private pages follow it.
    Move {
        /// The thread.
        thread: T,
        /// Its old node.
        from: usize,
        /// Its new node.
        to: usize,
    },
    /// Exchange `thread` (on `from`) and `victim` (on `to`).
    Swap {
        /// The candidate, going to `to`.
        thread: T,
        /// The victim, going to `from`.
        victim: T,
        /// The candidate's node.
        from: usize,
        /// The victim's node.
        to: usize,
    },
}

impl<T: Copy> ClusterDecision<T> {
    /// The thread moves it makes, `(thread, from, to)`: none, one, or the two of a swap.
    pub fn moves(&self) -> Vec<(T, usize, usize)> {
        match *self {
            ClusterDecision::Nothing(_) => Vec::new(),
            ClusterDecision::Move { thread, from, to } => vec![(thread, from, to)],
            ClusterDecision::Swap {
                thread,
                victim,
                from,
                to,
            } => vec![(thread, from, to), (victim, to, from)],
        }
    }
}

/// The decision and how it was reached.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClusterOutcome<T> {
    /// The thread chosen to move, if any thread gains by moving.
    pub candidate: Option<Candidate<T>>,
    /// The victim considered when the move itself was refused for load.
    pub victim: Option<VictimCheck<T>>,
    /// The decision.
    pub decision: ClusterDecision<T>,
}

impl<T: Copy> ClusterOutcome<T> {
    /// The same outcome with thread ids mapped (slots to tids).
    pub fn map<U>(&self, f: impl Fn(T) -> U) -> ClusterOutcome<U> {
        ClusterOutcome {
            candidate: self.candidate.map(|c| Candidate {
                thread: f(c.thread),
                from: c.from,
                to: c.to,
                gain: c.gain,
            }),
            victim: self.victim.map(|v| VictimCheck {
                victim: f(v.victim),
                source_shared: v.source_shared,
                victim_shared: v.victim_shared,
            }),
            decision: match self.decision {
                ClusterDecision::Nothing(w) => ClusterDecision::Nothing(w),
                ClusterDecision::Move { thread, from, to } => ClusterDecision::Move {
                    thread: f(thread),
                    from,
                    to,
                },
                ClusterDecision::Swap {
                    thread,
                    victim,
                    from,
                    to,
                } => ClusterDecision::Swap {
                    thread: f(thread),
                    victim: f(victim),
                    from,
                    to,
                },
            },
        }
    }
}

/// A sub-group's load: its runnable members.
fn load_of(slots: &[SlotView], node: usize) -> u32 {
    slots
        .iter()
        .filter(|s| s.node == Some(node) && s.runnable)
        .count() as u32
}

impl<T: Copy> ClusterOutcome<T> {
    /// The outcome of moving candidate `c`.
    pub fn moving(c: Candidate<T>) -> ClusterOutcome<T> {
        ClusterOutcome {
            candidate: Some(c),
            victim: None,
            decision: ClusterDecision::Move {
                thread: c.thread,
                from: c.from,
                to: c.to,
            },
        }
    }
}

/// The load rule: may a thread contributing `moving` (1 if runnable, else 0) to its
/// sub-group's load move from a sub-group of load `src` to one of load `dst`? Yes when (1)
/// the source is sufficiently higher, `src >= dst + move_load_margin`, or (2) after the move
/// the busier of the two is within the kernel's threshold of the other, `100 * busier <=
/// imbalance_pct * idler` (the test `find_busiest_group` applies to a NUMA domain's groups).
pub fn move_allowed(src: u32, dst: u32, moving: u32, p: &ClusterParams) -> bool {
    move_allowed_cap(src, dst, moving, u32::MAX, p)
}

/// [`move_allowed`] on a destination node of `dst_cpus` CPUs: rule (2) also needs the
/// destination to stay within its CPUs (`dst + moving <= dst_cpus`). The kernel's
/// `find_busiest_group` applies `imbalance_pct` between groups of one kind; a group with
/// spare CPUs is never made to take more tasks than it has CPUs while it balances (an
/// overloaded group is always the busiest). Without this, on a 14-CPU node the 117% rule
/// would let a move make 15 vs 13 threads: one CPU shared for good.
pub fn move_allowed_cap(src: u32, dst: u32, moving: u32, dst_cpus: u32, p: &ClusterParams) -> bool {
    let sufficiently_higher = u64::from(src) >= u64::from(dst) + u64::from(p.move_load_margin);
    let a = u64::from(src.saturating_sub(moving));
    let b = u64::from(dst) + u64::from(moving);
    let within =
        100 * a.max(b) <= u64::from(p.imbalance_pct) * a.min(b) && b <= u64::from(dst_cpus);
    sufficiently_higher || within
}

/// The candidate: over every member thread and every allowed node other than its own, the
/// largest `thread-node(to) - thread-node(from)` above zero; ties go to the lower slot, then
/// the lower node.
pub fn pick_candidate(
    slots: &[SlotView],
    tables: &ThreadTables,
    allowed: &[bool],
) -> Option<Candidate<usize>> {
    let mut best: Option<Candidate<usize>> = None;
    for (i, s) in slots.iter().enumerate() {
        let Some(from) = s.node else { continue };
        let here = tables.node_pages(i, from);
        for (to, &ok) in allowed.iter().enumerate() {
            if !ok || to == from {
                continue;
            }
            let gain = tables.node_pages(i, to) - here;
            if gain > 0.0 && best.is_none_or(|b| gain > b.gain) {
                best = Some(Candidate {
                    thread: i,
                    from,
                    to,
                    gain,
                });
            }
        }
    }
    best
}

/// The victim for a candidate `src` going to node `to`: the thread of `to`'s sub-group that
/// shares the fewest pages with the others of that sub-group, the candidate counted in it
/// (the sub-group as the move would make it, 3 threads in the paper's Figure 8; with the
/// candidate left out, a two-thread sub-group would always tie). Then the sharing of the
/// candidate and of the victim with the rest of the sub-group (without the victim).
pub fn pick_victim(
    slots: &[SlotView],
    tables: &ThreadTables,
    src: usize,
    to: usize,
) -> Option<VictimCheck<usize>> {
    let dst: Vec<usize> = (0..slots.len())
        .filter(|&i| slots[i].node == Some(to) && i != src)
        .collect();
    let with_src = |v: usize| -> f64 {
        dst.iter()
            .chain(std::iter::once(&src))
            .filter(|&&y| y != v)
            .map(|&y| tables.shared_pages(v, y))
            .sum()
    };
    let mut victim: Option<(usize, f64)> = None;
    for &v in &dst {
        let s = with_src(v);
        if victim.is_none_or(|(_, b)| s < b) {
            victim = Some((v, s));
        }
    }
    let (v, _) = victim?;
    let rest = || dst.iter().filter(move |&&y| y != v);
    Some(VictimCheck {
        victim: v,
        source_shared: rest().map(|&y| tables.shared_pages(src, y)).sum(),
        victim_shared: rest().map(|&y| tables.shared_pages(v, y)).sum(),
    })
}

/// Load balancing between the sub-groups, which Stable-NUMA takes over from the kernel's
/// balancer once threads join (the paper gives no rule for it; `rebalance` tunable): when
/// the busiest allowed sub-group's load is at least `move_load_margin` above the idlest's,
/// or the busiest has more runnable threads than its node has CPUs (`cpus[node]`) while the
/// idlest has fewer, the runnable thread of the busiest that loses the fewest local pages by the move (the
/// largest `thread-node(idlest) - thread-node(busiest)`; ties to the lower slot) moves to the
/// idlest. Ties between sub-groups go to the lower node.
pub fn rebalance(
    slots: &[SlotView],
    tables: &ThreadTables,
    allowed: &[bool],
    cpus: &[u32],
    p: &ClusterParams,
) -> Option<Candidate<usize>> {
    let load = |n: usize| load_of(slots, n);
    let nodes: Vec<usize> = (0..allowed.len()).filter(|&n| allowed[n]).collect();
    let busiest = *nodes
        .iter()
        .max_by(|&&a, &&b| load(a).cmp(&load(b)).then(b.cmp(&a)))?;
    let idlest = *nodes
        .iter()
        .min_by(|&&a, &&b| load(a).cmp(&load(b)).then(a.cmp(&b)))?;
    let (lb, li) = (load(busiest), load(idlest));
    let overloaded = lb > cpus[busiest] && li < cpus[idlest];
    if u64::from(lb) < u64::from(li) + u64::from(p.move_load_margin) && !overloaded {
        return None;
    }
    let mut best: Option<Candidate<usize>> = None;
    for (i, s) in slots.iter().enumerate() {
        if s.node != Some(busiest) || !s.runnable {
            continue;
        }
        let gain = tables.node_pages(i, idlest) - tables.node_pages(i, busiest);
        if best.is_none_or(|b| gain > b.gain) {
            best = Some(Candidate {
                thread: i,
                from: busiest,
                to: idlest,
                gain,
            });
        }
    }
    best
}

/// The clustering decision for one root group. `allowed[n]`: the group may run on node `n`
/// (its cpuset); loads count the runnable members of each sub-group.
pub fn decide(
    slots: &[SlotView],
    tables: &ThreadTables,
    allowed: &[bool],
    cpus: &[u32],
    p: &ClusterParams,
) -> ClusterOutcome<usize> {
    let Some(c) = pick_candidate(slots, tables, allowed) else {
        return ClusterOutcome {
            candidate: None,
            victim: None,
            decision: ClusterDecision::Nothing(Why::NoGain),
        };
    };
    let load = |n: usize| load_of(slots, n);
    let moving = u32::from(slots[c.thread].runnable);
    if move_allowed_cap(load(c.from), load(c.to), moving, cpus[c.to], p) {
        return ClusterOutcome::moving(c);
    }
    // The victim would go to the candidate's node: none may if the group's cpuset no
    // longer allows that node.
    let victim = pick_victim(slots, tables, c.thread, c.to).filter(|_| allowed[c.from]);
    let decision = match victim {
        None => ClusterDecision::Nothing(Why::NoVictim),
        // Strictly more: two threads that share nothing with the sub-group do not swap.
        Some(v) if v.source_shared > p.swap_threshold * v.victim_shared => ClusterDecision::Swap {
            thread: c.thread,
            victim: v.victim,
            from: c.from,
            to: c.to,
        },
        Some(_) => ClusterDecision::Nothing(Why::BelowSwapThreshold),
    };
    ClusterOutcome {
        candidate: Some(c),
        victim,
        decision,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stable::tunables::EmaStart;

    /// No CPU limit on any node (the paper's rules alone).
    const NOCAP: [u32; 8] = [u32::MAX; 8];

    const PARAMS: ClusterParams = ClusterParams {
        imbalance_pct: 117,
        move_load_margin: 2,
        swap_threshold: 1.5,
    };

    #[test]
    fn rebalance_moves_the_cheapest_thread_from_the_busiest_to_the_idlest() {
        let mut t = ThreadTables::new(3);
        for _ in 0..5 {
            t.add_thread();
        }
        // Threads 0-3 on node 0, thread 4 on node 1, node 2 empty: 4 vs 0.
        for (slot, node, n) in [
            (0, 0, 10),
            (1, 0, 10),
            (1, 2, 6),
            (2, 0, 10),
            (2, 2, 2),
            (3, 0, 10),
        ] {
            for _ in 0..n {
                t.record_access(slot, node);
            }
        }
        t.end_sequence(EmaStart::FirstSample);
        let on = |n| SlotView {
            node: Some(n),
            runnable: true,
        };
        let slots = [on(0), on(0), on(0), on(0), on(1)];
        let c = rebalance(&slots, &t, &[true; 3], &NOCAP, &PARAMS).expect("4 vs 0");
        // Thread 1 has the most pages on node 2 (6 - 10 = -4 beats 2 - 10 and 0 - 10).
        assert_eq!((c.thread, c.from, c.to, c.gain), (1, 0, 2, -4.0));
        // Node 2 not allowed: 4 vs 1 still moves, to node 1.
        let c = rebalance(&slots, &t, &[true, true, false], &NOCAP, &PARAMS).expect("4 vs 1");
        assert_eq!((c.from, c.to), (0, 1));
        // Within the margin: 2 vs 1 vs 1 does not move...
        let slots = [on(0), on(0), on(1), on(2)];
        assert_eq!(rebalance(&slots, &t, &[true; 3], &NOCAP, &PARAMS), None);
        // ...unless node 0 has one CPU and node 1 or 2 a spare one.
        let c = rebalance(&slots, &t, &[true; 3], &[1, 2, 2], &PARAMS).expect("overloaded");
        assert_eq!((c.from, c.to), (0, 1));
        assert_eq!(rebalance(&slots, &t, &[true; 3], &[1, 1, 1], &PARAMS), None);
        // Threads that are not runnable neither count nor move.
        let idle = SlotView {
            node: Some(0),
            runnable: false,
        };
        let slots = [on(0), idle, idle, on(1), on(2)];
        assert_eq!(rebalance(&slots, &t, &[true; 3], &NOCAP, &PARAMS), None);
    }

    #[test]
    fn the_threshold_rule_does_not_overload_a_node() {
        // 14 vs 14 on 14-CPU nodes: 13 vs 15 is within 117% but fills node 1 past its CPUs.
        assert!(move_allowed(14, 14, 1, &PARAMS));
        assert!(!move_allowed_cap(14, 14, 1, 14, &PARAMS));
        assert!(move_allowed_cap(14, 13, 1, 14, &PARAMS));
        // Sufficiently higher still moves into a node already over its CPUs.
        assert!(move_allowed_cap(17, 15, 1, 14, &PARAMS));
    }

    #[test]
    fn load_rule() {
        let p = |imbalance_pct, move_load_margin| ClusterParams {
            imbalance_pct,
            move_load_margin,
            swap_threshold: 1.5,
        };
        // (src, dst, moving, imbalance_pct, margin, allowed): hand-worked.
        #[rustfmt::skip]
        let rows: &[(u32, u32, u32, u32, u32, bool)] = &[
            (3, 1, 1, 117, 2, true),  // 3 >= 1 + 2 (and 2 vs 2 after)
            (2, 2, 1, 117, 2, false), // Figure 8: 1 vs 3 after, 300 > 117 * 1
            (2, 0, 1, 117, 2, true),  // 2 >= 0 + 2
            (1, 0, 1, 117, 2, false), // 0 vs 1 after: 100 > 0
            (2, 1, 1, 117, 2, false), // 1 vs 2 after: 200 > 117
            (2, 1, 1, 117, 1, true),  // margin 1: 2 >= 1 + 1
            (4, 3, 1, 117, 2, false), // 3 vs 4 after: 400 > 351
            (7, 6, 1, 117, 2, true),  // 6 vs 7 after: 700 <= 702
            (6, 6, 1, 117, 2, false), // 5 vs 7 after: 700 > 585
            (5, 4, 1, 117, 2, false), // 4 vs 5 after: 500 > 468
            (5, 4, 1, 125, 2, true),  // Linux 5.0's 125: 500 <= 500
            (2, 2, 0, 117, 2, true),  // a sleeping thread: loads unchanged, 200 <= 234
            (0, 0, 0, 117, 2, true),  // nothing runnable: 0 <= 0
        ];
        for &(src, dst, moving, pct, margin, want) in rows {
            assert_eq!(
                move_allowed(src, dst, moving, &p(pct, margin)),
                want,
                "src {src} dst {dst} moving {moving} pct {pct} margin {margin}"
            );
        }
    }

    /// The paper's Figure 8. The text gives: four threads T0..T3 on two nodes; T1 on node 1
    /// (sub-group 1) accesses more pages on node 0 than on node 1, and a fault by T1 on a
    /// page of node 0 takes its thread-node entry from 43 to 44; a fault by T2 on a page last
    /// faulted by T1 takes thread-thread entry (T2, T1) from 5 to 6; local pages are most
    /// when T0 and T1 are on node 0 and T2 and T3 on node 1; moving T1 to node 0 would make
    /// the loads 3 vs 1, so T0 and T2 are on node 0 and T1 and T3 on node 1; T2 shares fewer
    /// pages with T0 than T1 does; T1 and T2 are swapped. The figure's other numbers are not
    /// in the text; the ones below are constructed to match every statement above.
    ///
    /// thread-node (pages on node 0, node 1):  T0 50 10 | T1 44 12 | T2 20 30 | T3 8 40
    /// thread-thread (row faults after column; pairs summed both ways):
    ///   T0-T1 20+18 = 38, T0-T2 4+3 = 7, T1-T2 5+6 = 11, T2-T3 25+22 = 47,
    ///   T0-T3 2+1 = 3, T1-T3 4+3 = 7
    fn figure_8() -> (Vec<SlotView>, ThreadTables) {
        let mut t = ThreadTables::new(2);
        for _ in 0..4 {
            t.add_thread();
        }
        let node_counts = [[50, 10], [43, 12], [20, 30], [8, 40]];
        for (slot, row) in node_counts.iter().enumerate() {
            for (node, &n) in row.iter().enumerate() {
                for _ in 0..n {
                    t.record_access(slot, node);
                }
            }
        }
        #[rustfmt::skip]
        let pair_counts = [
            (0, 1, 20), (1, 0, 18), (0, 2, 4), (2, 0, 3), (1, 2, 5), (2, 1, 5),
            (2, 3, 25), (3, 2, 22), (0, 3, 2), (3, 0, 1), (1, 3, 4), (3, 1, 3),
        ];
        for (cur, last, n) in pair_counts {
            for _ in 0..n {
                t.record_shared(cur, last);
            }
        }
        // The text's two increments.
        assert_eq!(t.node_raw(1, 0), 43);
        t.record_access(1, 0);
        assert_eq!(t.node_raw(1, 0), 44);
        assert_eq!(t.pair_raw(2, 1), 5);
        t.record_shared(2, 1);
        assert_eq!(t.pair_raw(2, 1), 6);
        // End of the scan sequence: the first sample starts the averages.
        t.end_sequence(EmaStart::FirstSample);
        let on = |node| SlotView {
            node: Some(node),
            runnable: true,
        };
        (vec![on(0), on(1), on(0), on(1)], t)
    }

    #[test]
    fn figure_8_t1_chosen_for_node_0_then_swapped_with_t2() {
        let (slots, t) = figure_8();
        assert_eq!(t.node_pages(1, 0), 44.0);
        assert_eq!(t.shared_pages(2, 1), 11.0);
        let out = decide(&slots, &t, &[true, true], &NOCAP, &PARAMS);
        // Gains: T0 10-50 = -40, T1 44-12 = 32, T2 30-20 = 10, T3 8-40 = -32: T1 to node 0.
        assert_eq!(
            out.candidate,
            Some(Candidate {
                thread: 1,
                from: 1,
                to: 0,
                gain: 32.0
            })
        );
        // Loads 2 vs 2 would become 1 vs 3: not sufficiently higher (2 < 2 + 2) and
        // 100 * 3 > 117 * 1. Victim among T0, T2 with T1 counted in node 0's sub-group:
        // T0 shares 7 + 38 = 45, T2 7 + 11 = 18: T2. With the rest (T0): T1 38 > 1.5 * 7.
        assert_eq!(
            out.victim,
            Some(VictimCheck {
                victim: 2,
                source_shared: 38.0,
                victim_shared: 7.0
            })
        );
        assert_eq!(
            out.decision,
            ClusterDecision::Swap {
                thread: 1,
                victim: 2,
                from: 1,
                to: 0
            }
        );
        // After the swap T0, T1 on node 0 and T2, T3 on node 1: local pages 50 + 44 + 30 +
        // 40 = 164, up from 50 + 12 + 20 + 40 = 122, the most any placement gives.
        let local = |nodes: [usize; 4]| -> f64 { (0..4).map(|i| t.node_pages(i, nodes[i])).sum() };
        assert_eq!(local([0, 1, 0, 1]), 122.0);
        assert_eq!(local([0, 0, 1, 1]), 164.0);
        let best = (0..16)
            .map(|m: usize| local([m & 1, (m >> 1) & 1, (m >> 2) & 1, (m >> 3) & 1]))
            .fold(0.0, f64::max);
        assert_eq!(best, 164.0);
    }

    #[test]
    fn figure_8_variants() {
        let (mut slots, t) = figure_8();
        let both = [true, true];
        // A swap threshold above 38 / 7: nothing moves.
        let strict = ClusterParams {
            swap_threshold: 6.0,
            ..PARAMS
        };
        let out = decide(&slots, &t, &both, &NOCAP, &strict);
        assert_eq!(
            out.decision,
            ClusterDecision::Nothing(Why::BelowSwapThreshold)
        );
        assert_eq!(out.victim.map(|v| v.victim), Some(2));
        // With T0 and T2 asleep, node 0's load is 0: 2 >= 0 + 2, T1 simply moves.
        slots[0].runnable = false;
        slots[2].runnable = false;
        let out = decide(&slots, &t, &both, &NOCAP, &PARAMS);
        assert_eq!(
            out.decision,
            ClusterDecision::Move {
                thread: 1,
                from: 1,
                to: 0
            }
        );
        assert_eq!(out.victim, None);
        // An exited thread is no candidate and no victim.
        let (mut slots, t) = figure_8();
        slots[2].node = None;
        let out = decide(&slots, &t, &both, &NOCAP, &PARAMS);
        // T1 to node 0: loads 2 (T1, T3) vs 1 (T0): 1 vs 2 after, 200 > 117; victim T0
        // (the only one); the rest is empty: 0 > 1.5 * 0 fails.
        assert_eq!(
            out.victim,
            Some(VictimCheck {
                victim: 0,
                source_shared: 0.0,
                victim_shared: 0.0
            })
        );
        assert_eq!(
            out.decision,
            ClusterDecision::Nothing(Why::BelowSwapThreshold)
        );
    }

    #[test]
    fn no_gain_and_no_victim() {
        let mut t = ThreadTables::new(2);
        t.add_thread();
        t.add_thread();
        // T0 on node 0 with its pages on node 0, T1 on node 1 with its pages on node 1.
        for _ in 0..10 {
            t.record_access(0, 0);
            t.record_access(1, 1);
        }
        t.end_sequence(EmaStart::FirstSample);
        let on = |node| SlotView {
            node: Some(node),
            runnable: true,
        };
        let out = decide(&[on(0), on(1)], &t, &[true, true], &NOCAP, &PARAMS);
        assert_eq!(out.candidate, None);
        assert_eq!(out.decision, ClusterDecision::Nothing(Why::NoGain));
        // One thread alone on node 0, its pages on node 1: 1 vs 0 would be 0 vs 1 (not
        // sufficiently higher, 100 > 0) and node 1's sub-group is empty.
        let out = decide(
            &[
                on(0),
                SlotView {
                    node: None,
                    runnable: false,
                },
            ],
            &{
                let mut t = ThreadTables::new(2);
                t.add_thread();
                t.add_thread();
                for _ in 0..5 {
                    t.record_access(0, 1);
                }
                t.end_sequence(EmaStart::FirstSample);
                t
            },
            &[true, true],
            &NOCAP,
            &PARAMS,
        );
        assert_eq!(out.candidate.map(|c| (c.thread, c.to)), Some((0, 1)));
        assert_eq!(out.decision, ClusterDecision::Nothing(Why::NoVictim));
    }

    #[test]
    fn allowed_nodes() {
        let mut t = ThreadTables::new(3);
        t.add_thread();
        t.add_thread();
        // T0 on node 0 touches 1, 5, 9 pages on nodes 0, 1, 2; T1 on node 1 touches 4 on 1.
        for (node, n) in [(0, 1), (1, 5), (2, 9)] {
            for _ in 0..n {
                t.record_access(0, node);
            }
        }
        for _ in 0..4 {
            t.record_access(1, 1);
        }
        t.end_sequence(EmaStart::FirstSample);
        let slots = [
            SlotView {
                node: Some(0),
                runnable: true,
            },
            SlotView {
                node: Some(1),
                runnable: false,
            },
        ];
        let margin_1 = ClusterParams {
            move_load_margin: 1,
            ..PARAMS
        };
        // Node 2 would gain 8 but is not allowed: node 1 (gain 4); loads 1 vs 0, margin 1.
        let out = decide(&slots, &t, &[true, true, false], &NOCAP, &margin_1);
        assert_eq!(out.candidate.map(|c| (c.to, c.gain)), Some((1, 4.0)));
        assert_eq!(
            out.decision,
            ClusterDecision::Move {
                thread: 0,
                from: 0,
                to: 1
            }
        );
        // Everything allowed: node 2 (gain 8), empty sub-group, 1 vs 0 is a move.
        let out = decide(&slots, &t, &[true; 3], &NOCAP, &margin_1);
        assert_eq!(
            out.decision,
            ClusterDecision::Move {
                thread: 0,
                from: 0,
                to: 2
            }
        );
        // T1 runnable, margin 2: 1 vs 1 cannot move, and with node 0 no longer allowed T1
        // cannot take T0's place there.
        let slots = [
            slots[0],
            SlotView {
                node: Some(1),
                runnable: true,
            },
        ];
        let out = decide(&slots, &t, &[false, true, false], &NOCAP, &PARAMS);
        assert_eq!(out.candidate.map(|c| (c.thread, c.to)), Some((0, 1)));
        assert_eq!(out.decision, ClusterDecision::Nothing(Why::NoVictim));
    }

    #[test]
    fn ties_go_to_the_lower_slot_and_node() {
        let mut t = ThreadTables::new(3);
        for _ in 0..3 {
            t.add_thread();
        }
        // T0 on node 0 gains 5 by going to node 1 or 2; T1 on node 0 gains 5 too.
        for s in [0, 1] {
            for n in [1, 2] {
                for _ in 0..5 {
                    t.record_access(s, n);
                }
            }
        }
        t.end_sequence(EmaStart::FirstSample);
        let on = |node| SlotView {
            node: Some(node),
            runnable: true,
        };
        let c = pick_candidate(&[on(0), on(0), on(1)], &t, &[true; 3]).unwrap();
        assert_eq!((c.thread, c.from, c.to, c.gain), (0, 0, 1, 5.0));
        // Victims tie at 0 shared pages: the lower slot.
        let v = pick_victim(&[on(0), on(1), on(1)], &t, 0, 1).unwrap();
        assert_eq!(v.victim, 1);
    }
}
