//! One DAMOS scheme of memory tiering: `migrate_hot` or `migrate_cold` to a target node,
//! its quota with a node-memory goal, its regions' priority (`damon_hot_score`,
//! `damon_cold_score`) and the young filter (`mm/damon/core.c`, `ops-common.c`).
//!
//! ```text
//!   every reset_interval: score = goal's current value × 10000 / target
//!                          esz_bp = damon_feed_loop_next_input(max(esz_bp, 10000), score)
//!                          esz = min(esz_bp / 10000 bytes, quota sz); charged = 0
//!   every apply interval:  histogram of eligible regions' sizes by score (0..99)
//!                          min_score: the highest score whose regions fill esz
//!                          regions in address order, score ≥ min_score, until charged ≥ esz
//! ```

/// `DAMOS_MAX_SCORE`.
pub(crate) const MAX_SCORE: u32 = 99;
/// `DAMON_MAX_SUBSCORE`.
const MAX_SUBSCORE: u32 = 100;
/// `DAMON_MAX_AGE_IN_LOG`.
const MAX_AGE_IN_LOG: i64 = 32;
/// The feedback loop's goal score and smallest input.
const GOAL: u64 = 10_000;

/// The scheme's action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// `DAMOS_MIGRATE_HOT`: regions with nr_accesses ≥ 1, hottest first, young pages only.
    MigrateHot,
    /// `DAMOS_MIGRATE_COLD`: regions with nr_accesses 0, coldest first, young pages kept.
    MigrateCold,
}

/// A quota goal's metric on a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Metric {
    /// `DAMOS_QUOTA_NODE_MEM_USED_BP`.
    NodeMemUsedBp,
    /// `DAMOS_QUOTA_NODE_MEM_FREE_BP`.
    NodeMemFreeBp,
}

/// The quota and its state.
#[derive(Debug, Clone)]
pub(crate) struct Quota {
    /// `sz`: at most this many bytes per charge window.
    pub(crate) sz: u64,
    /// `reset_interval`, ns.
    pub(crate) reset_ns: u64,
    /// `weight_nr_accesses`, `weight_age`.
    pub(crate) weight_nr_accesses: u32,
    pub(crate) weight_age: u32,
    /// The goal: metric, node, target value (bp); none: the quota is `sz`.
    pub(crate) goal: Option<(Metric, usize, u64)>,
    /// `esz_bp`: the feedback loop's state, bytes × 10000.
    pub(crate) esz_bp: u64,
    /// `esz`: bytes this window.
    pub(crate) esz: u64,
    /// `charged_sz`: bytes tried this window.
    pub(crate) charged: u64,
    /// When this window ends, ns (0: none started).
    pub(crate) window_end: u64,
}

impl Quota {
    /// `damos_set_effective_quota` with the goal's current value (bp).
    pub(crate) fn set_effective(&mut self, current_bp: u64) {
        let Some((_, _, target)) = self.goal else {
            self.esz = self.sz;
            return;
        };
        let target = target.max(1);
        let score = current_bp * GOAL / target;
        self.esz_bp = feed_loop_next_input(self.esz_bp.max(GOAL), score);
        self.esz = (self.esz_bp / GOAL).min(self.sz);
    }

    /// Bytes left this window.
    pub(crate) fn left(&self) -> u64 {
        self.esz.saturating_sub(self.charged)
    }
}

/// `damon_feed_loop_next_input`: a proportional step toward the goal score 10000 (over it,
/// smaller; at twice it or more, the smallest input).
pub(crate) fn feed_loop_next_input(last: u64, score: u64) -> u64 {
    if score == GOAL {
        return last;
    }
    if score >= 2 * GOAL {
        return GOAL;
    }
    let compensation = last.saturating_mul(score.abs_diff(GOAL)) / GOAL;
    if score > GOAL {
        last.saturating_sub(compensation).max(GOAL)
    } else {
        last.saturating_add(compensation)
    }
}

/// Whether a region with `nr` accesses fits the action's access pattern.
pub(crate) fn eligible(action: Action, nr: u32) -> bool {
    match action {
        Action::MigrateHot => nr >= 1,
        Action::MigrateCold => nr == 0,
    }
}

/// `damon_hot_score` (or `damon_cold_score`, 99 minus it) of a region with `nr` accesses
/// and `age` aggregations, `max_nr` checks per aggregation of `aggr_us`.
pub(crate) fn score(
    action: Action,
    q: &Quota,
    nr: u32,
    age: u32,
    max_nr: u32,
    aggr_us: u64,
) -> u32 {
    let freq = (nr * MAX_SUBSCORE / max_nr.max(1)).min(MAX_SUBSCORE);
    let mut age_in_sec = u64::from(age) * aggr_us / 1_000_000;
    let mut age_in_log = 0i64;
    while age_in_log < MAX_AGE_IN_LOG && age_in_sec > 0 {
        age_in_log += 1;
        age_in_sec >>= 1;
    }
    // With no access, the older the colder.
    if freq == 0 {
        age_in_log = -age_in_log;
    }
    let age_sub =
        ((age_in_log + MAX_AGE_IN_LOG) * i64::from(MAX_SUBSCORE) / MAX_AGE_IN_LOG / 2) as u32;
    let (fw, aw) = (q.weight_nr_accesses, q.weight_age);
    // Both weights 0: hotness 0.
    let hotness = (fw * freq + aw * age_sub).checked_div(fw + aw).unwrap_or(0);
    let hot = hotness * MAX_SCORE / MAX_SUBSCORE;
    match action {
        Action::MigrateHot => hot,
        Action::MigrateCold => MAX_SCORE - hot,
    }
}

/// `damos_adjust_quota`'s `min_score`: from the highest score down, the first at which the
/// eligible regions' sizes (`(score, bytes)`) add up to `esz` (0 if they never do).
pub(crate) fn min_score(scored: &[(u32, u64)], esz: u64) -> u32 {
    let mut hist = [0u64; MAX_SCORE as usize + 1];
    let mut max = 0;
    for &(s, sz) in scored {
        hist[s as usize] += sz;
        max = max.max(s);
    }
    let mut cum = 0;
    let mut s = max;
    loop {
        cum += hist[s as usize];
        if cum >= esz || s == 0 {
            return s;
        }
        s -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_feedback_loop_grows_under_the_goal_and_shrinks_over_it() {
        // Half the goal: +50 %; 1.5×: −50 %; twice: the floor; at it: unchanged.
        assert_eq!(feed_loop_next_input(20_000, 5_000), 30_000);
        assert_eq!(feed_loop_next_input(20_000, 15_000), 10_000);
        assert_eq!(feed_loop_next_input(40_000, 15_000), 20_000);
        assert_eq!(feed_loop_next_input(40_000, 20_000), 10_000);
        assert_eq!(feed_loop_next_input(40_000, 10_000), 40_000);
    }

    fn quota(goal_bp: u64) -> Quota {
        Quota {
            sz: 200 << 20,
            reset_ns: 1_000_000_000,
            weight_nr_accesses: 100,
            weight_age: 100,
            goal: Some((Metric::NodeMemUsedBp, 0, goal_bp)),
            esz_bp: 0,
            esz: 0,
            charged: 0,
            window_end: 0,
        }
    }

    #[test]
    fn the_effective_quota_starts_at_a_byte_and_is_capped_by_sz() {
        let mut q = quota(9970);
        // 49.85 % used against a 99.7 % goal: score 5000, +50 % a window from 1 byte.
        q.set_effective(4985);
        assert_eq!((q.esz_bp, q.esz), (15_000, 1));
        for _ in 0..80 {
            q.set_effective(4985);
        }
        assert_eq!(q.esz, 200 << 20);
        // Goal met twice over: back to the floor at once.
        q.set_effective(19_940);
        assert_eq!(q.esz, 1);
    }

    #[test]
    fn scores_rank_by_frequency_then_age_and_pick_the_top_regions() {
        let q = quota(9970);
        let hot = |nr, age| score(Action::MigrateHot, &q, nr, age, 20, 100_000);
        // 20 of 20 checks, age 0: freq 100, age subscore 50 → 75 → 74.
        assert_eq!(hot(20, 0), 74);
        // No access for 100 aggregations (10 s, log 4): age subscore 43 → 21 → 20.
        assert_eq!(hot(0, 100), 20);
        assert_eq!(
            score(Action::MigrateCold, &q, 0, 100, 20, 100_000),
            MAX_SCORE - 20
        );
        assert!(hot(10, 0) < hot(20, 0));
        // Sizes by score: 30 at 74, 50 at 60, 100 at 10. A quota of 60 takes down to 60.
        let scored = [(74, 30), (60, 50), (10, 100)];
        assert_eq!(min_score(&scored, 60), 60);
        assert_eq!(min_score(&scored, 30), 74);
        assert_eq!(min_score(&scored, 1000), 0);
    }
}
