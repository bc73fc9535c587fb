//! DAMON's region list (`mm/damon/core.c`): regions of an address range with their access
//! counts, merged and split after each aggregation interval. Shared by the `damon`
//! sensor's kdamonds (`world/damon.rs`, virtual addresses) and DAMOS memory tiering
//! (`kernel/damos/`, a node's physical addresses).

use numabal_daemon::damon::Attrs;
use rand::RngExt;
use rand_pcg::Pcg64Mcg;

/// One monitoring region: pages `[start, end)` of mapping `ri`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Region {
    pub(crate) ri: usize,
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) nr_accesses: u32,
    pub(crate) last_nr_accesses: u32,
    pub(crate) age: u32,
    /// Pages a sweep passed in it this window (repeats counted).
    pub(crate) swept: f64,
    /// 64-byte lines of random accesses per page of it this window.
    pub(crate) lines_per_page: f64,
}

impl Region {
    pub(crate) fn pages(&self) -> u64 {
        self.end - self.start
    }
    pub(crate) fn fresh(ri: usize, start: u64, end: u64) -> Region {
        Region {
            ri,
            start,
            end,
            nr_accesses: 0,
            last_nr_accesses: 0,
            age: 0,
            swept: 0.0,
            lines_per_page: 0.0,
        }
    }
}

/// `kdamond_merge_regions`: merge adjacent regions whose nr_accesses differ by at most
/// `threshold` while the merged size stays within the size limit (the regions' total
/// over `min_nr_regions`); while the count is over `max_nr_regions`, again with the
/// threshold doubled.
pub(crate) fn merge(regions: &mut Vec<Region>, attrs: &Attrs, threshold: u32) {
    let total: u64 = regions.iter().map(Region::pages).sum();
    let sz_limit = (total / attrs.min_nr_regions.max(1)).max(1);
    let max_thres = attrs.max_nr_accesses() / 10;
    let mut thres = threshold;
    let mut first = true;
    loop {
        merge_regions_of(regions, thres, sz_limit, first);
        first = false;
        let over = regions.len() as u64 > attrs.max_nr_regions;
        if !over || thres / 2 >= max_thres.max(1) {
            break;
        }
        thres = (thres * 2).max(1);
    }
}

/// The end of an aggregation after the merge (`kdamond_reset_aggregated`, then
/// `kdamond_split_regions`): each region's count kept as its last and zeroed, the regions
/// split.
pub(crate) fn reset_and_split(
    regions: &mut Vec<Region>,
    last_nr_regions: &mut usize,
    attrs: &Attrs,
    rng: &mut Pcg64Mcg,
) {
    for r in regions.iter_mut() {
        r.last_nr_accesses = r.nr_accesses;
        r.nr_accesses = 0;
    }
    split(regions, last_nr_regions, attrs, rng);
}

/// `kdamond_split_regions`: while at most half of `max_nr_regions`, split every region
/// in two (three when the count did not change since the last split and is under a
/// third of the maximum) at random tenths of its size.
/// `last_nr_regions` is the count after the previous split (updated).
pub(crate) fn split(
    regions: &mut Vec<Region>,
    last_nr_regions: &mut usize,
    attrs: &Attrs,
    rng: &mut Pcg64Mcg,
) {
    let nr = regions.len();
    if nr as u64 > attrs.max_nr_regions / 2 {
        return;
    }
    let subs = if nr == *last_nr_regions && (nr as u64) < attrs.max_nr_regions / 3 {
        3
    } else {
        2
    };
    let mut out = Vec::with_capacity(nr * subs);
    for r in regions.iter() {
        let mut left = *r;
        let mut pieces = Vec::new();
        for _ in 1..subs {
            let sz = left.pages();
            if sz <= 2 {
                break;
            }
            let sub = rng.random_range(1..10u64) * sz / 10;
            if sub == 0 || sub >= sz {
                continue;
            }
            let mut right = left;
            right.start = left.start + sub;
            left.end = right.start;
            pieces.push(right);
        }
        out.push(left);
        out.extend(pieces.into_iter().rev());
    }
    *regions = out;
    *last_nr_regions = regions.len();
}

/// One target's merge pass: ages first (reset when nr_accesses moved by more than
/// `thres` since the last aggregation, on the first pass only), then neighbours merged
/// with size-weighted nr_accesses and age.
pub(crate) fn merge_regions_of(regions: &mut Vec<Region>, thres: u32, sz_limit: u64, age: bool) {
    let mut out: Vec<Region> = Vec::with_capacity(regions.len());
    for mut r in regions.drain(..) {
        if age {
            if r.nr_accesses.abs_diff(r.last_nr_accesses) > thres {
                r.age = 0;
            } else {
                r.age += 1;
            }
        }
        if let Some(l) = out.last_mut()
            && l.ri == r.ri
            && l.end == r.start
            && l.nr_accesses.abs_diff(r.nr_accesses) <= thres
            && l.pages() + r.pages() <= sz_limit
        {
            let (a, b) = (l.pages(), r.pages());
            let avg = |x: u32, y: u32| ((u64::from(x) * a + u64::from(y) * b) / (a + b)) as u32;
            l.nr_accesses = avg(l.nr_accesses, r.nr_accesses);
            l.last_nr_accesses = avg(l.last_nr_accesses, r.last_nr_accesses);
            l.age = avg(l.age, r.age);
            l.end = r.end;
            continue;
        }
        out.push(r);
    }
    *regions = out;
}

/// Mapping `ri` of `pages` as `n` regions of (nearly) equal size.
pub(crate) fn push_even(out: &mut Vec<Region>, ri: usize, pages: u64, n: u64) {
    let n = n.min(pages).max(1);
    for i in 0..n {
        let (a, b) = (pages * i / n, pages * (i + 1) / n);
        if b > a {
            out.push(Region::fresh(ri, a, b));
        }
    }
}
