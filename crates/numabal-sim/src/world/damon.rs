//! DAMON on the simulated host: the kernel's data-access monitor as the `damon` sensor
//! drives it (one kdamond per managed process, its one context monitoring the process's
//! virtual addresses). Regions of address space, one page of each checked per sample interval,
//! `nr_accesses` counted over the aggregation interval, then the regions merged and split
//! as `mm/damon/core.c` does (`kdamond_merge_regions`, `kdamond_split_regions`).
//!
//! ```text
//!  access hooks (access.rs): a sweep's pages passed, a random phase's lines per page
//!     └─► the target's regions they fall in (swept pages, lines per page), this window
//!  damon_advance(now): every aggr_us window that ended
//!     per region: p = chance the checked page was touched in a sample interval
//!                 nr_accesses = of aggr/sample checks, those that found it touched
//!     merge: adjacent regions with |Δ nr_accesses| ≤ max/10 and size ≤ total/min_nr_regions
//!     (hot regions kept for the daemon's read: tried_regions)
//!     split: each region in 2 (3 if the count did not change and is < max/3) at random
//!            tenths, while the count is ≤ max_nr_regions / 2
//! ```
//!
//! Simplifications (docs/model-notes.md, "DAMON"): a checked page counts as touched with
//! the chance the window's accesses give it, drawn per check, rather than from a page's
//! own accessed bit (the model keeps no per-page access times); a sweep's chance is the
//! share of the region it passed in a sample interval, a random phase's is
//! `1 - exp(-lines per page per interval)`. Accesses are counted in the window in which
//! the scheduler slot that made them ends. A target's regions start as its mappings
//! (each split evenly so that the target has about `min_nr_regions`), not the kernel's
//! three regions around the two largest gaps: the simulated mappings lie 1 TiB apart
//! (`REGION_SPAN`), and a region is never across two of them. Mappings never change size
//! in the simulator, so `update_us` only adds a process's new mappings. The kdamond's
//! work (one check per region per sample interval) is counted, and charged to the
//! daemon's CPU at `pte_update_ns` a check (`userspace/numabal_daemon.rs`).

use super::*;
use crate::damon_core::{Region, merge, push_even, split};
use crate::memory::PAGE_BYTES;
use access::pattern_ranges;
use numabal_daemon::damon::{Attrs, HotRegion};
use std::collections::{BTreeMap, BTreeSet};

/// Mixed into the scenario's seed for DAMON's random checks and split points.
const DAMON_SEED: u64 = 0x6461_6d6f_6e5f_7273;

/// One kdamond: its process's regions, sorted by (mapping, start).
#[derive(Debug, Default)]
struct Kdamond {
    regions: Vec<Region>,
    /// The hot regions of the last aggregation (`tried_regions`).
    hot: Vec<HotRegion>,
    last_nr_regions: usize,
}

/// The kdamonds of the `damon` sensor: their attributes, one per process, and their
/// (common) windows.
#[derive(Debug)]
pub(crate) struct Damon {
    attrs: Attrs,
    /// By process index.
    targets: BTreeMap<usize, Kdamond>,
    window_end: u64,
    next_update: u64,
    /// Page checks so far (one per region per sample interval).
    checks: u64,
    rng: Pcg64Mcg,
}

impl World<'_> {
    /// Ready the `damon` sensor's kdamonds with `attrs` (no process monitored yet).
    pub(crate) fn damon_open(&mut self, attrs: Attrs) {
        let now = self.now;
        self.damon = Some(Box::new(Damon {
            attrs,
            targets: BTreeMap::new(),
            window_end: now + attrs.aggr_us * 1000,
            next_update: now + attrs.update_us * 1000,
            checks: 0,
            rng: Pcg64Mcg::seed_from_u64(self.sc.sim.seed ^ DAMON_SEED),
        }));
    }

    /// Monitor exactly the processes `pidxs`: a new one's kdamond starts with its mappings
    /// as regions, the kdamonds of ones left out stop.
    pub(crate) fn damon_set_targets(&mut self, pidxs: &BTreeSet<usize>) {
        let Some(d) = self.damon.as_deref_mut() else {
            return;
        };
        d.targets.retain(|p, _| pidxs.contains(p));
        for &p in pidxs {
            d.targets.entry(p).or_insert_with(|| Kdamond {
                regions: initial_regions(&self.procs[p].regions, d.attrs.min_nr_regions),
                ..Kdamond::default()
            });
        }
    }

    /// Page checks the kdamond has made so far.
    pub(crate) fn damon_checks(&self) -> u64 {
        self.damon.as_deref().map_or(0, |d| d.checks)
    }

    /// The hot regions of the last aggregation (nr_accesses ≥ 1) of every target, pid
    /// 1-based and addresses as the daemon's samples give them.
    pub(crate) fn damon_hot(&mut self) -> Vec<HotRegion> {
        self.damon_advance();
        let Some(d) = self.damon.as_deref() else {
            return Vec::new();
        };
        d.targets
            .values()
            .flat_map(|k| k.hot.iter().copied())
            .collect()
    }

    /// The regions of thread `t`'s process if a kdamond monitors it, the windows that
    /// ended closed first.
    fn damon_regions_of(&mut self, t: usize) -> Option<&mut Vec<Region>> {
        self.damon_advance();
        let pidx = self.threads[t].proc;
        let d = self.damon.as_deref_mut()?;
        d.targets.get_mut(&pidx).map(|k| &mut k.regions)
    }

    /// A sweep of thread `t` over `bytes` of `slice` of mapping `ri` from `pos`.
    #[cold]
    #[inline(never)]
    pub(crate) fn damon_sweep(
        &mut self,
        t: usize,
        ri: usize,
        slice: (u64, u64),
        pos: f64,
        bytes: f64,
    ) {
        let Some(regions) = self.damon_regions_of(t) else {
            return;
        };
        let (s, e) = slice;
        let len = (e - s) as f64;
        let pages = bytes / PAGE_BYTES;
        let passes = (pages / len).floor();
        if passes > 0.0 {
            add_swept(regions, ri, s as f64, e as f64, passes);
        }
        let rest = pages - passes * len;
        let from = s as f64 + (pos / PAGE_BYTES) % len;
        let to = from + rest;
        add_swept(regions, ri, from, to.min(e as f64), 1.0);
        if to > e as f64 {
            add_swept(regions, ri, s as f64, s as f64 + (to - e as f64), 1.0);
        }
    }

    /// Random accesses of thread `t`: `bytes` over `slice` in phase `a`'s pattern.
    #[cold]
    #[inline(never)]
    pub(crate) fn damon_random(&mut self, t: usize, a: &AccessRt, slice: (u64, u64), bytes: f64) {
        let Some(regions) = self.damon_regions_of(t) else {
            return;
        };
        let lines = bytes / 64.0;
        for (a0, b0, w) in pattern_ranges(a, slice) {
            if b0 > a0 && w > 0.0 {
                let per_page = lines * w / (b0 - a0) as f64;
                for r in overlapping(regions, a.region, a0 as f64, b0 as f64) {
                    r.lines_per_page += per_page;
                }
            }
        }
    }

    /// Close every aggregation window that ended by now; fit the regions to the mappings
    /// when `update_us` has passed.
    fn damon_advance(&mut self) {
        let now = self.now;
        let Some(d) = self.damon.as_deref_mut() else {
            return;
        };
        while d.window_end <= now {
            for (&p, k) in &mut d.targets {
                d.checks += k.aggregate(&d.attrs, p, &mut d.rng);
            }
            d.window_end += d.attrs.aggr_us * 1000;
        }
        if d.next_update <= now {
            d.next_update = now + d.attrs.update_us * 1000;
            for (&p, k) in &mut d.targets {
                add_new_mappings(
                    &mut k.regions,
                    &self.procs[p].regions,
                    d.attrs.min_nr_regions,
                );
            }
        }
    }
}

/// A target's first regions: each mapping split evenly into its share of
/// `min_nr_regions` (at least one).
fn initial_regions(maps: &[super::Region], min_nr_regions: u64) -> Vec<Region> {
    let total: u64 = maps.iter().map(|m| m.pages).sum::<u64>().max(1);
    let mut out = Vec::new();
    for (ri, m) in maps.iter().enumerate() {
        push_even(
            &mut out,
            ri,
            m.pages,
            (min_nr_regions * m.pages / total).max(1),
        );
    }
    out
}

/// Mappings with no region yet get theirs.
fn add_new_mappings(regions: &mut Vec<Region>, maps: &[super::Region], min_nr_regions: u64) {
    let known = regions.iter().map(|r| r.ri).max().map_or(0, |m| m + 1);
    if known >= maps.len() {
        return;
    }
    let fresh = initial_regions(maps, min_nr_regions);
    regions.extend(fresh.into_iter().filter(|r| r.ri >= known));
}

/// The regions of mapping `ri` overlapping pages `[a, b)`.
fn overlapping(
    regions: &mut [Region],
    ri: usize,
    a: f64,
    b: f64,
) -> impl Iterator<Item = &mut Region> {
    let first = regions.partition_point(|r| (r.ri, r.end as f64) <= (ri, a));
    regions[first..]
        .iter_mut()
        .take_while(move |r| r.ri == ri && (r.start as f64) < b)
}

/// Pages `[a, b)` of mapping `ri` passed `times` times by a sweep.
fn add_swept(regions: &mut [Region], ri: usize, a: f64, b: f64, times: f64) {
    if b <= a {
        return;
    }
    for r in overlapping(regions, ri, a, b) {
        let over = b.min(r.end as f64) - a.max(r.start as f64);
        if over > 0.0 {
            r.swept += over * times;
        }
    }
}

impl Kdamond {
    /// One aggregation interval of process `pidx` ends: count each region's checks,
    /// merge, keep the hot regions, reset, split. Returns the checks made.
    fn aggregate(&mut self, attrs: &Attrs, pidx: usize, rng: &mut Pcg64Mcg) -> u64 {
        let n = attrs.max_nr_accesses();
        let mut max_nr = 0;
        for r in &mut self.regions {
            let p = touch_chance(r, n);
            r.nr_accesses = (0..n).filter(|_| rng.random_bool(p)).count() as u32;
            max_nr = max_nr.max(r.nr_accesses);
        }
        let checks = self.regions.len() as u64 * u64::from(n);
        merge(&mut self.regions, attrs, max_nr / 10);
        let hot = self.regions.iter().filter(|r| r.nr_accesses > 0);
        self.hot = hot
            .map(|r| HotRegion {
                pid: pidx as u32 + 1,
                start: page_addr(r.ri, r.start),
                end: page_addr(r.ri, r.end),
                nr_accesses: r.nr_accesses,
            })
            .collect();
        for r in &mut self.regions {
            r.last_nr_accesses = r.nr_accesses;
            r.nr_accesses = 0;
            r.swept = 0.0;
            r.lines_per_page = 0.0;
        }
        split(&mut self.regions, &mut self.last_nr_regions, attrs, rng);
        checks
    }
}

/// The chance that a page of `r` checked in one of `n` sample intervals was touched in it.
fn touch_chance(r: &Region, n: u32) -> f64 {
    let pages = r.pages().max(1) as f64;
    let sweep = (r.swept / (pages * f64::from(n))).min(1.0);
    let random = 1.0 - (-r.lines_per_page / f64::from(n)).exp();
    (1.0 - (1.0 - sweep) * (1.0 - random)).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::damon_core::merge_regions_of;

    /// A 1 GiB mapping whose pages 1000..3000 are swept through every sample interval
    /// and the rest never touched: within a few seconds of aggregations the regions
    /// split around the hot range and the hot regions cover it and little else.
    #[test]
    fn regions_split_and_merge_to_the_hot_range() {
        let attrs = numabal_daemon::damon::ATTRS;
        let mut rng = Pcg64Mcg::seed_from_u64(7);
        let mut k = Kdamond::default();
        push_even(&mut k.regions, 0, 262_144, 10);
        let (mut checks, mut expect) = (0, 0);
        for _ in 0..50 {
            expect += k.regions.len() as u64 * 20;
            add_swept(&mut k.regions, 0, 1000.0, 3000.0, 20.0);
            checks += k.aggregate(&attrs, 0, &mut rng);
            assert!(k.regions.len() as u64 <= attrs.max_nr_regions);
        }
        let hot = &k.hot;
        let hot_pages: u64 = hot.iter().map(|h| (h.end - h.start) / 4096).sum();
        let inside: u64 = hot
            .iter()
            .map(|h| {
                let (a, b) = (h.start / 4096, h.end / 4096);
                let lo = a.max(page_addr(0, 1000) / 4096);
                let hi = b.min(page_addr(0, 3000) / 4096);
                hi.saturating_sub(lo)
            })
            .sum();
        assert!(
            inside >= 1800,
            "{inside} of the 2000 hot pages in hot regions: {hot:?}"
        );
        assert!(hot_pages <= 20_000, "{hot_pages} pages called hot: {hot:?}");
        assert!(hot.iter().all(|h| h.nr_accesses >= 10), "{hot:?}");
        assert_eq!(checks, expect);
        assert!(hot.iter().all(|h| h.pid == 1));
    }

    #[test]
    fn merging_weights_by_size_and_respects_the_limit() {
        let mk = |s, e, nr| Region {
            nr_accesses: nr,
            ..Region::fresh(0, s, e)
        };
        let mut v = vec![mk(0, 10, 10), mk(10, 40, 12), mk(40, 50, 20), mk(50, 60, 2)];
        merge_regions_of(&mut v, 2, 45, true);
        assert_eq!(
            v.iter()
                .map(|r| (r.start, r.end, r.nr_accesses))
                .collect::<Vec<_>>(),
            vec![(0, 40, 11), (40, 50, 20), (50, 60, 2)]
        );
        // The ages: regions whose nr_accesses moved by more than 2 since the last (0)
        // start again; the last moved by 2 and ages.
        assert_eq!(v.iter().map(|r| r.age).collect::<Vec<_>>(), vec![0, 0, 1]);
        // Random accesses: 20 lines a page over 20 intervals is a touch chance of 1 - 1/e.
        let r = Region {
            lines_per_page: 20.0,
            ..Region::fresh(0, 0, 10)
        };
        assert!((touch_chance(&r, 20) - (1.0 - (-1.0f64).exp())).abs() < 1e-12);
    }
}
