//! Applying a context's scheme to its regions (`damos_apply_scheme`, `damon_pa_migrate`)
//! and the monitoring intervals' tuning (`damon_set_next_intervals`-style goal tuning).

use super::scheme::{self, Action, Metric, min_score};
use super::{Ctx, DamosSet, IntervalsGoal};
use crate::damon_core::Region;
use crate::memory::{CHUNK, PAGE_BYTES};
use crate::world::World;
use crate::world::paddr::{AccessProfile, PaddrLayout, profile_rate};
use rand::RngExt;

impl DamosSet {
    /// The scheme's turn: a new charge window sets the effective quota from the goal;
    /// eligible regions at or above the quota's minimum score are migrated, in address
    /// order, until the window's quota is charged.
    pub(super) fn apply(
        &mut self,
        w: &mut World,
        c: &mut Ctx,
        l: &PaddrLayout,
        prof: &[AccessProfile],
    ) {
        let now = w.now();
        if now >= c.quota.window_end {
            c.quota.window_end = now + c.quota.reset_ns;
            c.quota.charged = 0;
            let current = c.quota.goal.map_or(0, |(metric, nid, _)| {
                let used = w.node_mem_used_bp(nid);
                match metric {
                    Metric::NodeMemUsedBp => used,
                    Metric::NodeMemFreeBp => 10_000 - used,
                }
            });
            c.quota.set_effective(current);
        }
        if c.quota.left() == 0 {
            return;
        }
        let max_nr = (c.aggr_us / c.sample_us).max(1) as u32;
        let scored: Vec<(usize, u32, u64)> = (c.regions.iter().enumerate())
            .filter(|(_, r)| scheme::eligible(c.action, r.last_nr_accesses))
            .map(|(i, r)| {
                let sz = (r.end - r.start) * PAGE_BYTES as u64;
                let nr = r.last_nr_accesses;
                (
                    i,
                    scheme::score(c.action, &c.quota, nr, r.age, max_nr, c.aggr_us),
                    sz,
                )
            })
            .filter(|&(_, _, sz)| sz > 0)
            .collect();
        let hist: Vec<(u32, u64)> = scored.iter().map(|&(_, s, sz)| (s, sz)).collect();
        let min = min_score(&hist, c.quota.esz);
        for (i, s, sz) in scored {
            let left = c.quota.left();
            if left == 0 {
                break;
            }
            if s < min {
                continue;
            }
            let take = sz.min(left);
            c.quota.charged += take;
            let a = c.regions[i].start;
            let full = self.migrate_range(w, c, l, prof, a, take / PAGE_BYTES as u64);
            if full {
                break;
            }
        }
    }

    /// Up to `budget` pages of the context's node from address `a` on: each young page
    /// moved (`migrate_hot`) or each one not young (`migrate_cold`) to the target, unless
    /// the scheme has no young filter (then every page). Returns whether the target had
    /// no room.
    fn migrate_range(
        &mut self,
        w: &mut World,
        c: &Ctx,
        l: &PaddrLayout,
        prof: &[AccessProfile],
        a: u64,
        budget: u64,
    ) -> bool {
        let Some((first_obj, first_page)) = w.paddr_page(l, a) else {
            return false;
        };
        let visit_ns = w.machine().spec.costs.pte_update_ns;
        let (mut seen_pages, mut ns, mut full) = (0u64, 0.0, false);
        'objects: for (obj, profile) in prof.iter().enumerate().skip(first_obj) {
            let from = if obj == first_obj { first_page } else { 0 };
            let mut ch = from / CHUNK;
            while ch < w.object(obj).chunks() {
                let heads = chunk_heads(w, obj, ch, from, c.node);
                let dt = if heads.is_empty() {
                    0.0
                } else {
                    self.young_dt(w.now(), obj, ch)
                };
                ch += 1;
                for (head, nr) in heads {
                    seen_pages += nr;
                    ns += visit_ns;
                    let rate = profile_rate(profile, head) * nr as f64;
                    let wanted = !c.young_filter || {
                        let young = self.rng.random::<f64>() < 1.0 - (-rate * dt).exp();
                        young == (c.action == Action::MigrateHot)
                    };
                    if wanted {
                        let Some(m) = w.kthread_move(obj, head, c.node, c.target, nr) else {
                            full = true;
                            break 'objects;
                        };
                        ns += m;
                        if c.counted {
                            w.count_damos_migration(c.node, c.target, nr);
                        }
                    }
                    if seen_pages >= budget {
                        break 'objects;
                    }
                }
            }
        }
        self.charge(w, c.node, ns);
        full
    }

    /// The time since a scheme last read chunk `ch`'s young bits (now cleared), ns.
    fn young_dt(&mut self, now: u64, obj: usize, ch: u64) -> f64 {
        let s = &mut self.young_seen;
        if s.len() <= obj {
            s.resize(obj + 1, Vec::new());
        }
        if s[obj].len() <= ch as usize {
            s[obj].resize(ch as usize + 1, 0);
        }
        let dt = now.saturating_sub(s[obj][ch as usize]) as f64;
        s[obj][ch as usize] = now;
        dt
    }
}

/// Intervals tuned toward `access_bp` of the checks finding an access: the sample
/// interval scaled by the feedback loop (at most halved, at most doubled), clamped, the
/// aggregation interval kept at the same number of samples; ages rescaled.
pub(super) fn tune_intervals(c: &mut Ctx, g: &IntervalsGoal, max_nr: u32) {
    tune_intervals_of(
        &mut c.regions,
        (&mut c.sample_us, &mut c.aggr_us),
        g,
        max_nr,
    );
}

/// `tune_intervals` for any region list and its (sample, aggregation) intervals, µs.
pub(crate) fn tune_intervals_of(
    regions: &mut [Region],
    (sample_us, aggr_us): (&mut u64, &mut u64),
    g: &IntervalsGoal,
    max_nr: u32,
) {
    let (mut hit, mut all) = (0u128, 0u128);
    for r in regions.iter() {
        let sz = u128::from(r.end - r.start);
        hit += sz * u128::from(r.nr_accesses);
        all += sz * u128::from(max_nr);
    }
    let want = (all * u128::from(g.access_bp) / 10_000).max(1);
    let score = (hit * 10_000 / want).min(u128::from(u64::MAX)) as u64;
    let mut adaptation = scheme::feed_loop_next_input(100_000_000, score) / 10_000;
    if adaptation <= 10_000 {
        adaptation = 5_000 + adaptation / 2;
    }
    let sample = (*sample_us * adaptation / 10_000).clamp(g.min_sample_us, g.max_sample_us);
    let aggr = sample * u64::from(max_nr);
    for r in regions.iter_mut() {
        r.age = (u64::from(r.age) * *aggr_us / aggr.max(1)) as u32;
    }
    *sample_us = sample;
    *aggr_us = aggr;
}

/// The entries (head, base pages) of node `node` in chunk `ch` of `obj`, from page `from`
/// on.
fn chunk_heads(w: &World, obj: usize, ch: u64, from: u64, node: usize) -> Vec<(u64, u64)> {
    let o = w.object(obj);
    if o.chunk_hist(ch)[node] == 0 {
        return Vec::new();
    }
    if o.is_huge(ch) {
        return vec![(ch * CHUNK, o.chunk_len(ch))];
    }
    let first = (ch * CHUNK).max(from);
    (first..ch * CHUNK + o.chunk_len(ch))
        .filter(|&p| o.node_of(p) == Some(node))
        .map(|p| (p, 1))
        .collect()
}
