//! DAMON_STAT (`mm/damon/stat.c`, Linux 6.17): a kdamond monitoring the physical
//! address space from boot, for its access statistics, when the kernel is built with
//! `CONFIG_DAMON_STAT_ENABLED_DEFAULT` (Debian's 7.2 is). `sim.damon_stat` runs it. It
//! applies no scheme; what it does to the rest of the kernel is its sampling: each sample
//! interval it clears the accessed bit of one page of every region (`damon_pa_mkold`),
//! setting PG_young when the bit was set. MGLRU's aging walk reads only the accessed bit,
//! so a page DAMON made old since it was last used is not moved to the youngest
//! generation (docs/vm-tests.md, "MGLRU in the guest", where this left most of the
//! filler's memory in the oldest generation); reclaim's reference check counts PG_young.
//!
//! ```text
//!  every sample interval (5 ms at first):
//!     check_accesses: each region's page made old one interval ago, accessed since?
//!                     (nr_accesses + 1)
//!     every aggregation (aggr / sample samples): merge, every 3rd the intervals tuned
//!                     toward 4 % of the checks finding an access (5 ms - 10 s), split
//!     prepare_access_checks: a random page of each region made old (its THP's young
//!                     bit cleared for MGLRU, PG_young if it was young)
//! ```
//!
//! Simplifications (docs/model-notes.md, "DAMON_STAT"): the monitored range is every
//! node's frames, node after node, its pages first and its free frames after them (the
//! kernel's is the largest "System RAM" resource, which on the guests holds all of them,
//! the pages scattered among the free frames); a base page made old changes nothing for
//! MGLRU (the model keeps one young-bit time per chunk and node, and a page is a 512th
//! of it); each check and each preparation costs `pte_update_ns`, charged to node 0's
//! CPUs.

use super::{IntervalsGoal, fit_to, tune_intervals_of};
use crate::damon_core::{Region, merge, reset_and_split};
use crate::world::World;
use crate::world::paddr::PaddrLayout;
use numabal_daemon::damon::Attrs;
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// Mixed into the scenario's seed for DAMON_STAT's sampled pages and split points.
const SEED: u64 = 0x6461_6d6f_6e5f_7374;
/// `damon_stat_build_ctx`'s attributes.
const SAMPLE_US: u64 = 5_000;
const AGGR_US: u64 = 100_000;
const MIN_NR_REGIONS: u64 = 10;
const MAX_NR_REGIONS: u64 = 1000;
const GOAL: IntervalsGoal = IntervalsGoal {
    access_bp: 400,
    aggrs: 3,
    min_sample_us: 5_000,
    max_sample_us: 10_000_000,
};

/// The page a region's last preparation made old.
#[derive(Debug, Clone, Copy)]
struct Pick {
    node: usize,
    obj: usize,
    page: u64,
    at: u64,
}

/// The DAMON_STAT kdamond.
pub(crate) struct DamonStat {
    regions: Vec<Region>,
    picks: Vec<Option<Pick>>,
    sample_us: u64,
    aggr_us: u64,
    next_sample: u64,
    samples: u32,
    aggrs: u32,
    last_nr_regions: usize,
    rng: Pcg64Mcg,
}

impl DamonStat {
    pub(crate) fn new(seed: u64) -> DamonStat {
        DamonStat {
            regions: Vec::new(),
            picks: Vec::new(),
            sample_us: SAMPLE_US,
            aggr_us: AGGR_US,
            next_sample: SAMPLE_US * 1000,
            samples: 0,
            aggrs: 0,
            last_nr_regions: 0,
            rng: Pcg64Mcg::seed_from_u64(seed ^ SEED),
        }
    }

    fn attrs(&self) -> Attrs {
        Attrs {
            sample_us: self.sample_us,
            aggr_us: self.aggr_us,
            update_us: 0,
            min_nr_regions: MIN_NR_REGIONS,
            max_nr_regions: MAX_NR_REGIONS,
        }
    }

    /// Every sample interval that ended by now.
    pub(crate) fn tick(&mut self, w: &mut World) {
        while self.next_sample <= w.now() {
            let at = self.next_sample;
            self.sample(w, at);
            self.next_sample = at + self.sample_us * 1000;
        }
    }

    /// One sample interval ended at time `at`: its checks, an aggregation if one ended,
    /// the next interval's pages made old.
    fn sample(&mut self, w: &mut World, at: u64) {
        let layouts: Vec<(PaddrLayout, u64)> = (0..w.machine().nr_nodes())
            .map(|n| {
                let l = w.paddr_layout(n);
                let frames = w.node_cap(n).max(l.span);
                (l, frames)
            })
            .collect();
        let span = layouts.iter().map(|l| l.1).sum();
        fit_to(&mut self.regions, span, MIN_NR_REGIONS);
        let mut max_seen = 0;
        for (r, p) in self.regions.iter_mut().zip(&self.picks) {
            if let Some(p) = p
                && w.damon_young(p.obj, p.page, p.node, p.at, at)
            {
                r.nr_accesses += 1;
            }
            max_seen = max_seen.max(r.nr_accesses);
        }
        self.samples += 1;
        let attrs = self.attrs();
        let max_nr = attrs.max_nr_accesses();
        if self.samples >= max_nr {
            self.aggregate(&attrs, max_nr, max_seen);
        }
        self.picks.clear();
        for i in 0..self.regions.len() {
            let (a, b) = (self.regions[i].start, self.regions[i].end);
            let pick = locate(w, &layouts, self.rng.random_range(a..b));
            if let Some(p) = pick {
                w.lru_gen_mkold(p.0, p.2, p.1, at);
            }
            self.picks.push(pick.map(|(obj, node, page)| Pick {
                node,
                obj,
                page,
                at,
            }));
        }
        w.damon_stat_checked(self.regions.len() as u64);
    }

    /// An aggregation interval ended: regions merged, intervals tuned every `GOAL.aggrs`
    /// aggregations, counts kept as the last, regions split.
    fn aggregate(&mut self, attrs: &Attrs, max_nr: u32, max_seen: u32) {
        self.samples = 0;
        merge(&mut self.regions, attrs, max_seen / 10);
        self.aggrs += 1;
        if self.aggrs >= GOAL.aggrs {
            self.aggrs = 0;
            let intervals = (&mut self.sample_us, &mut self.aggr_us);
            tune_intervals_of(&mut self.regions, intervals, &GOAL, max_nr);
        }
        reset_and_split(
            &mut self.regions,
            &mut self.last_nr_regions,
            attrs,
            &mut self.rng,
        );
    }
}

/// The page at address `a` of the nodes' frames laid end to end, each node's pages first
/// and its free frames after them: (object, node, page), none for a free frame.
fn locate(w: &World, layouts: &[(PaddrLayout, u64)], mut a: u64) -> Option<(usize, usize, u64)> {
    for (l, frames) in layouts {
        if a < *frames {
            return w.paddr_page(l, a).map(|(obj, page)| (obj, l.node, page));
        }
        a -= frames;
    }
    None
}
