//! NUMA balancing's memory-tiering mode (`kernel.numa_balancing` with bit 2): whether a
//! hinting fault on a slow-tier page promotes it (kernel/sched/fair.c,
//! `should_numa_migrate_memory`'s tiering branch, Linux 6.1 onwards).
//!
//! ```text
//!   fault on a slow-tier page, target = the faulting CPU's node (its pgdat below)
//!     free > WMARK_PROMO + max(1 GiB, present/16)  ──► promote (threshold reset; no
//!     │                                                 candidate counted)
//!     ▼ numa_promotion_adjust_threshold: every scan_period_max (60 s), candidates of
//!     │   the window against rate_limit × 60 s: > 110 % ─► threshold − step,
//!     │   < 90 % ─► + step (step = 2 × hot_threshold / 16, within [step, 2 × hot_threshold])
//!     ▼ hint-fault latency (fault time − scan time) ≥ threshold ──► no
//!     ▼ numa_promotion_rate_limit: candidates += nr; more than rate_limit pages since
//!          the 1 s window opened ──► no; else promote
//! ```
//!
//! Times are milliseconds (`jiffies_to_msecs`), counts are 4 KiB pages, as the kernel's.

/// `NUMA_MIGRATION_ADJUST_STEPS`.
pub const NUMA_MIGRATION_ADJUST_STEPS: u64 = 16;

/// The tiering tunables as the decision reads them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PromoteRules {
    /// `sysctl_numa_balancing_hot_threshold`, ms.
    pub hot_threshold_ms: u64,
    /// `numa_balancing_promote_rate_limit_MBps` in pages per second.
    pub rate_limit_pages: u64,
    /// `sysctl_numa_balancing_scan_period_max`, ms: the threshold's adjustment period.
    pub adjust_period_ms: u64,
    /// Hot-page selection by fault latency (6.1; off: every slow-tier fault promotes, as
    /// 5.18 did).
    pub hot_selection: bool,
    /// The threshold's automatic adjustment (6.1).
    pub adjust_threshold: bool,
}

/// Per fast node (`pglist_data`): the `nbp_*` fields and its `pgpromote_candidate`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PromoteState {
    /// `nbp_rl_start`, ms.
    pub rl_start: u64,
    /// `nbp_rl_nr_cand`.
    pub rl_nr_cand: u64,
    /// `nbp_threshold`, ms (0: the default).
    pub threshold: u64,
    /// `nbp_th_start`, ms.
    pub th_start: u64,
    /// `nbp_th_nr_cand`.
    pub th_nr_cand: u64,
    /// The node's `pgpromote_candidate`.
    pub candidates: u64,
}

/// What a fault's decision was, for the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Promote; the fast node had room enough to skip selection.
    PromoteFree,
    /// Promote: hot and within the rate limit.
    Promote,
    /// Not hot enough (latency at or above the threshold).
    Cold,
    /// Hot, but over the rate limit.
    RateLimited,
}

impl Verdict {
    /// Whether the page is to be migrated.
    pub fn promote(self) -> bool {
        matches!(self, Verdict::PromoteFree | Verdict::Promote)
    }
}

impl PromoteState {
    /// The tiering branch for a fault on `nr` pages with hint-fault `latency_ms`, at
    /// `now_ms`, the fast node having free memory above its promotion headroom or not.
    pub fn decide(
        &mut self,
        r: &PromoteRules,
        now_ms: u64,
        latency_ms: u64,
        nr: u64,
        free_enough: bool,
    ) -> Verdict {
        if free_enough || !r.hot_selection {
            if free_enough {
                self.threshold = 0;
            }
            return Verdict::PromoteFree;
        }
        if r.adjust_threshold {
            self.adjust_threshold(r, now_ms);
        }
        let th = if self.threshold > 0 {
            self.threshold
        } else {
            r.hot_threshold_ms
        };
        if latency_ms >= th {
            return Verdict::Cold;
        }
        if self.rate_limited(r, now_ms, nr) {
            Verdict::RateLimited
        } else {
            Verdict::Promote
        }
    }

    /// `numa_promotion_rate_limit`: the candidate is counted, then compared with the
    /// candidates at the start of the current one-second window.
    fn rate_limited(&mut self, r: &PromoteRules, now_ms: u64, nr: u64) -> bool {
        self.candidates += nr;
        if now_ms.saturating_sub(self.rl_start) > 1000 {
            self.rl_start = now_ms;
            self.rl_nr_cand = self.candidates;
        }
        self.candidates - self.rl_nr_cand >= r.rate_limit_pages
    }

    /// `numa_promotion_adjust_threshold`.
    fn adjust_threshold(&mut self, r: &PromoteRules, now_ms: u64) {
        if now_ms.saturating_sub(self.th_start) <= r.adjust_period_ms {
            return;
        }
        self.th_start = now_ms;
        let ref_th = r.hot_threshold_ms;
        let ref_cand = r.rate_limit_pages * r.adjust_period_ms / 1000;
        let diff = self.candidates - self.th_nr_cand;
        let unit = ref_th * 2 / NUMA_MIGRATION_ADJUST_STEPS;
        let mut th = if self.threshold > 0 {
            self.threshold
        } else {
            ref_th
        };
        if diff > ref_cand * 11 / 10 {
            th = th.saturating_sub(unit).max(unit);
        } else if diff < ref_cand * 9 / 10 {
            th = (th + unit).min(ref_th * 2);
        }
        self.th_nr_cand = self.candidates;
        self.threshold = th;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(rate_limit_pages: u64) -> PromoteRules {
        PromoteRules {
            hot_threshold_ms: 1000,
            rate_limit_pages,
            adjust_period_ms: 60_000,
            hot_selection: true,
            adjust_threshold: true,
        }
    }

    #[test]
    fn free_room_promotes_without_selection_or_counting() {
        let mut s = PromoteState {
            threshold: 500,
            ..Default::default()
        };
        let v = s.decide(&rules(10), 5, 5000, 1, true);
        assert_eq!(v, Verdict::PromoteFree);
        assert_eq!((s.threshold, s.candidates), (0, 0));
    }

    #[test]
    fn latency_at_the_threshold_is_cold_and_not_a_candidate() {
        let mut s = PromoteState::default();
        assert_eq!(s.decide(&rules(10), 10, 1000, 1, false), Verdict::Cold);
        assert_eq!(s.candidates, 0);
        assert_eq!(s.decide(&rules(10), 10, 999, 1, false), Verdict::Promote);
        assert_eq!(s.candidates, 1);
    }

    #[test]
    fn the_rate_limit_counts_candidates_per_one_second_window() {
        let r = rules(3);
        let mut s = PromoteState::default();
        // The first fault opens a window at 1001 ms whose snapshot includes it.
        let v: Vec<Verdict> = (0..5).map(|_| s.decide(&r, 1001, 1, 1, false)).collect();
        assert_eq!(
            v,
            [
                Verdict::Promote,
                Verdict::Promote,
                Verdict::Promote,
                Verdict::RateLimited,
                Verdict::RateLimited
            ]
        );
        assert_eq!(s.candidates, 5);
        // Still the same window at 2001 ms (not more than 1000 ms later); a new one after.
        assert_eq!(s.decide(&r, 2001, 1, 1, false), Verdict::RateLimited);
        assert_eq!(s.decide(&r, 2002, 1, 1, false), Verdict::Promote);
    }

    #[test]
    fn the_threshold_steps_down_when_candidates_exceed_the_reference() {
        // rate limit 1 page/s: reference 60 candidates per 60 s window.
        let r = rules(1);
        let mut s = PromoteState {
            candidates: 100,
            ..Default::default()
        };
        s.decide(&r, 60_001, 10, 1, false);
        assert_eq!(s.threshold, 875, "100 > 66: one 125 ms step down");
        assert_eq!(s.th_nr_cand, 100);
        // Next window: 10 candidates < 54: one step up, at most 2000 ms.
        s.candidates += 10;
        s.decide(&r, 120_002, 10, 1, false);
        assert_eq!(s.threshold, 1000);
        for k in 3..20 {
            s.decide(&r, 60_001 * k, 10, 1, false);
        }
        assert_eq!(s.threshold, 2000);
    }

    #[test]
    fn without_hot_selection_every_fault_promotes() {
        let r = PromoteRules {
            hot_selection: false,
            ..rules(1)
        };
        let mut s = PromoteState::default();
        for _ in 0..10 {
            assert_eq!(s.decide(&r, 7, 100_000, 1, false), Verdict::PromoteFree);
        }
        assert_eq!(s.candidates, 0);
    }
}
