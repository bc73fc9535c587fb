//! DAMON-based memory tiering (`damon-tiering`): two kinds of kdamond context on physical
//! addresses as the kernel's `samples/damon/mtier.c` sets them up, with NUMA balancing
//! off. Each top-tier node with a demotion target gets a context demoting its cold pages
//! (`migrate_cold`, goal: 0.5 % of the node free); each lower-tier node gets one promoting
//! its hot pages to the nearest top-tier node (`migrate_hot`, goal: 99.7 % of that node
//! used). Both under a 200 MiB/s quota, applied once a second, with intervals tuned to
//! observe 4 % of the accesses possible.
//!
//! ```text
//!  tick ─► each context whose aggregation interval ended:
//!          sample: per region, aggr/sample checks of a random page of the node in it
//!                  (touched within a sample interval with chance 1 - exp(-rate × dt))
//!          merge (damon_core) ─► every `aggrs` aggregations: intervals tuned toward
//!          access_bp ─► counts kept as the last ─► split
//!        ─► each context whose apply interval ended: its scheme on the last counts
//!          (apply.rs, scheme.rs: quota, goal, scores; young filter per page)
//! ```
//!
//! The kernel version gates nothing here beyond the memory tiers; DAMOS migration is
//! v6.11, quota goals on node memory v6.16 and interval tuning v6.15 (docs/research/
//! tiering-kernel.md §6). Simplifications (docs/model-notes.md, "DAMOS"): a node's
//! addresses are its pages numbered in order (`world/paddr.rs`); a page's young bit is
//! modelled per 2 MiB chunk from the time a scheme last looked at it, and DAMON's own
//! sampling does not clear it; a migration that finds its target below the min watermark
//! fails (no fallback to another node).

mod scheme;
pub(crate) mod stat;

use crate::damon_core::{Region, merge, push_even, reset_and_split};
use crate::kernel::KernelModel;
use crate::world::paddr::{AccessProfile, PaddrLayout, profile_rate};
use crate::world::records::Metrics;
use crate::world::tiering::TieringConfig;
use crate::world::{KernelHooks, World};
use numabal_daemon::damon::Attrs;
use numabal_model::damos::{DamosAction, DamosSpec};
use numabal_model::scenario::PolicySpec;
use numabal_model::{InputError, KernelVersion};
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;
use scheme::Quota;
pub(crate) use scheme::{Action, Metric};
use serde::{Deserialize, Serialize};

/// Mixed into the scenario's seed for the kdamonds' checks and split points.
const SEED: u64 = 0x6461_6d6f_735f_7469;
/// Mixed into the scenario's seed for the workload's own schemes.
const EXPERIMENT_SEED: u64 = 0x6368_7572_6e5f_6461;

/// Tunables of `damon-tiering`, by default `samples/damon/mtier.c`'s.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Tunables {
    /// The release whose memory tiers the model uses.
    pub kernel: KernelVersion,
    /// `sample_us`, `aggr_us` at the start.
    pub sample_us: u64,
    pub aggr_us: u64,
    /// `min_nr_regions`, `max_nr_regions`.
    pub min_nr_regions: u64,
    pub max_nr_regions: u64,
    /// `intervals_goal`: `access_bp` (0: no tuning), `aggrs`, `min_sample_us`, `max_sample_us`.
    pub intervals_access_bp: u64,
    pub intervals_aggrs: u32,
    pub min_sample_us: u64,
    pub max_sample_us: u64,
    /// The quota: MiB per `quota_reset_ms`.
    pub quota_mb: u64,
    pub quota_reset_ms: u64,
    /// `apply_interval_us`.
    pub apply_interval_us: u64,
    /// Promotion's goal: `node_mem_used_bp` of the top-tier node.
    pub promote_used_bp: u64,
    /// Demotion's goal: `node_mem_free_bp` of the top-tier node.
    pub demote_free_bp: u64,
    /// `/sys/kernel/mm/numa/demotion_enabled` (kswapd demoting as well).
    pub demotion_enabled: bool,
}

impl Default for Tunables {
    fn default() -> Self {
        Tunables {
            kernel: KernelVersion::NEWEST,
            sample_us: 5_000,
            aggr_us: 100_000,
            min_nr_regions: 10,
            max_nr_regions: 1000,
            intervals_access_bp: 400,
            intervals_aggrs: 3,
            min_sample_us: 5_000,
            max_sample_us: 10_000_000,
            quota_mb: 200,
            quota_reset_ms: 1000,
            apply_interval_us: 1_000_000,
            promote_used_bp: 9970,
            demote_free_bp: 50,
            demotion_enabled: false,
        }
    }
}

const NAMES: &[&str] = &[
    "kernel",
    "sample_us",
    "aggr_us",
    "min_nr_regions",
    "max_nr_regions",
    "intervals_access_bp",
    "intervals_aggrs",
    "min_sample_us",
    "max_sample_us",
    "quota_mb",
    "quota_reset_ms",
    "apply_interval_us",
    "promote_used_bp",
    "demote_free_bp",
    "demotion_enabled",
];

impl Tunables {
    /// Parse a policy table's tunables; zero intervals or an empty quota are input errors.
    pub fn from_spec(spec: &PolicySpec) -> Result<Tunables, InputError> {
        let t: Tunables = spec.parse_tunables(NAMES)?;
        let positive = [
            ("sample_us", t.sample_us),
            ("aggr_us", t.aggr_us),
            ("min_nr_regions", t.min_nr_regions),
            ("quota_mb", t.quota_mb),
            ("quota_reset_ms", t.quota_reset_ms),
            ("apply_interval_us", t.apply_interval_us),
            ("min_sample_us", t.min_sample_us),
            ("intervals_aggrs", u64::from(t.intervals_aggrs)),
        ];
        for (k, v) in positive {
            if v == 0 {
                return Err(InputError::new(
                    &spec.label,
                    format!("policy.{k}"),
                    "must be at least 1",
                ));
            }
        }
        let pairs = [
            ("aggr_us", t.aggr_us < t.sample_us, "at least sample_us"),
            (
                "max_nr_regions",
                t.max_nr_regions < 3 * t.min_nr_regions,
                "at least three times min_nr_regions",
            ),
            (
                "max_sample_us",
                t.max_sample_us < t.min_sample_us,
                "at least min_sample_us",
            ),
            (
                "promote_used_bp",
                t.promote_used_bp > 10_000,
                "at most 10000",
            ),
            ("demote_free_bp", t.demote_free_bp > 10_000, "at most 10000"),
        ];
        for (k, bad, want) in pairs {
            if bad {
                return Err(InputError::new(
                    &spec.label,
                    format!("policy.{k}"),
                    format!("must be {want}"),
                ));
            }
        }
        Ok(t)
    }
}

/// `intervals_goal`: the monitoring intervals tuned toward `access_bp` observed accesses.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IntervalsGoal {
    pub(crate) access_bp: u64,
    pub(crate) aggrs: u32,
    pub(crate) min_sample_us: u64,
    pub(crate) max_sample_us: u64,
}

/// One kdamond context: a node's physical range and its one scheme.
pub(crate) struct Ctx {
    node: usize,
    action: Action,
    target: usize,
    quota: Quota,
    /// The young filter: `migrate_hot` moves only young pages, `migrate_cold` only old
    /// ones (false: every page of the region moves).
    young_filter: bool,
    sample_us: u64,
    aggr_us: u64,
    min_nr_regions: u64,
    max_nr_regions: u64,
    apply_us: u64,
    intervals_goal: Option<IntervalsGoal>,
    /// Its migrations are the policy's (counted as DAMOS promotions and demotions, in the
    /// series); false for an experiment's own schemes (its churn), counted only as
    /// migrations.
    counted: bool,
    regions: Vec<Region>,
    last_nr_regions: usize,
    next_aggr: u64,
    next_apply: u64,
    aggrs: u32,
}

/// What a context is set up with.
pub(crate) struct CtxSpec {
    pub(crate) node: usize,
    pub(crate) action: Action,
    pub(crate) target: usize,
    /// `sz` bytes per `reset_interval` ns.
    pub(crate) quota: (u64, u64),
    pub(crate) goal: Option<(Metric, usize, u64)>,
    pub(crate) young_filter: bool,
    /// sample, aggregation and apply intervals, µs.
    pub(crate) intervals_us: (u64, u64, u64),
    pub(crate) nr_regions: (u64, u64),
    pub(crate) intervals_goal: Option<IntervalsGoal>,
    pub(crate) counted: bool,
}

impl Ctx {
    pub(crate) fn new(c: CtxSpec) -> Ctx {
        let (sample_us, aggr_us, apply_us) = c.intervals_us;
        Ctx {
            node: c.node,
            action: c.action,
            target: c.target,
            quota: Quota {
                sz: c.quota.0,
                reset_ns: c.quota.1,
                weight_nr_accesses: 100,
                weight_age: 100,
                goal: c.goal,
                esz_bp: 0,
                esz: 0,
                charged: 0,
                window_end: 0,
            },
            young_filter: c.young_filter,
            sample_us,
            aggr_us,
            min_nr_regions: c.nr_regions.0,
            max_nr_regions: c.nr_regions.1,
            apply_us,
            intervals_goal: c.intervals_goal,
            counted: c.counted,
            regions: Vec::new(),
            last_nr_regions: 0,
            next_aggr: aggr_us * 1000,
            next_apply: apply_us * 1000,
            aggrs: 0,
        }
    }

    fn attrs(&self) -> Attrs {
        Attrs {
            sample_us: self.sample_us,
            aggr_us: self.aggr_us,
            update_us: 0,
            min_nr_regions: self.min_nr_regions,
            max_nr_regions: self.max_nr_regions,
        }
    }
}

/// A set of kdamond contexts run together (their checks and split points from one
/// random stream).
pub(crate) struct DamosSet {
    ctxs: Vec<Ctx>,
    /// Per object, per chunk: when a scheme last read (and cleared) its young bits, ns.
    young_seen: Vec<Vec<u64>>,
    rng: Pcg64Mcg,
    /// The kdamonds' CPU time, ns.
    cpu_ns: f64,
}

impl DamosSet {
    pub(crate) fn new(ctxs: Vec<Ctx>, seed: u64) -> DamosSet {
        DamosSet {
            ctxs,
            young_seen: Vec::new(),
            rng: Pcg64Mcg::seed_from_u64(seed),
            cpu_ns: 0.0,
        }
    }

    /// The contexts whose aggregation interval ended.
    pub(crate) fn tick(&mut self, w: &mut World) {
        let now = w.now();
        if !(self.ctxs.iter()).any(|c| c.next_aggr <= now || c.next_apply <= now) {
            return;
        }
        let prof: Vec<AccessProfile> = (0..w.nr_objects()).map(|o| w.access_profile(o)).collect();
        let mut ctxs = std::mem::take(&mut self.ctxs);
        for c in &mut ctxs {
            let l = w.paddr_layout(c.node);
            if c.next_aggr <= now {
                self.aggregate(w, c, &l, &prof);
            }
            // DAMOS applies at its own interval, on the last aggregation's counts (the
            // kernel's `nr_accesses_bp`, a moving sum that equals them once steady).
            if c.next_apply <= now {
                c.next_apply = now + c.apply_us * 1000;
                self.apply(w, c, &l, &prof);
            }
        }
        self.ctxs = ctxs;
    }

    /// One aggregation interval of context `c` ended: its checks counted, regions merged,
    /// intervals tuned, counts kept as the last, regions split.
    fn aggregate(&mut self, w: &mut World, c: &mut Ctx, l: &PaddrLayout, prof: &[AccessProfile]) {
        fit_to(&mut c.regions, l.span, c.min_nr_regions);
        let attrs = c.attrs();
        let max_nr = attrs.max_nr_accesses();
        let sample_ns = c.sample_us as f64 * 1000.0;
        let mut max_seen = 0;
        for i in 0..c.regions.len() {
            let (a, b) = (c.regions[i].start, c.regions[i].end);
            let mut nr = 0;
            for _ in 0..max_nr {
                if self.check(w, l, prof, (a, b), sample_ns) {
                    nr += 1;
                }
            }
            c.regions[i].nr_accesses = nr;
            max_seen = max_seen.max(nr);
        }
        let checks = c.regions.len() as u64 * u64::from(max_nr);
        self.charge(
            w,
            c.node,
            checks as f64 * w.machine().spec.costs.pte_update_ns,
        );
        merge(&mut c.regions, &attrs, max_seen / 10);
        let now = w.now();
        if let Some(g) = c.intervals_goal {
            c.aggrs += 1;
            if c.aggrs >= g.aggrs {
                c.aggrs = 0;
                tune_intervals(c, &g, max_nr);
            }
        }
        reset_and_split(
            &mut c.regions,
            &mut c.last_nr_regions,
            &attrs,
            &mut self.rng,
        );
        c.next_aggr = now + c.aggr_us * 1000;
    }

    /// One access check: a random page of the layout's node in addresses `[a, b)`,
    /// touched within a sample interval.
    fn check(
        &mut self,
        w: &World,
        l: &PaddrLayout,
        prof: &[AccessProfile],
        (a, b): (u64, u64),
        sample_ns: f64,
    ) -> bool {
        let Some((obj, page)) = w.paddr_page(l, self.rng.random_range(a..b)) else {
            return false;
        };
        let (_, nr) = w.page_entry(obj, page);
        let rate = profile_rate(&prof[obj], page) * nr as f64;
        self.rng.random::<f64>() < 1.0 - (-rate * sample_ns).exp()
    }

    fn charge(&mut self, w: &mut World, node: usize, ns: f64) {
        self.cpu_ns += ns;
        w.charge_kthread(node, ns);
    }

    /// CPU seconds the kdamonds spent.
    pub(crate) fn cpu_s(&self) -> f64 {
        self.cpu_ns / 1e9
    }
}

/// A context's regions cover its node's addresses `[0, span)` as the node's pages come
/// and go: the first ones made evenly, the last one stretched or the ones past the end cut.
pub(crate) fn fit_to(regions: &mut Vec<Region>, span: u64, min_nr_regions: u64) {
    if regions.is_empty() {
        if span > 0 {
            push_even(regions, 0, span, min_nr_regions);
        }
        return;
    }
    regions.retain(|r| r.start < span);
    match regions.last_mut() {
        Some(last) => last.end = span,
        None => push_even(regions, 0, span, min_nr_regions),
    }
}

/// The workload's own schemes (`[[damos]]`) as one set, none if it has none. Their
/// migrations are not the policy's: counted as page migrations only.
pub(crate) fn experiment(w: &mut World, specs: &[DamosSpec]) -> Option<DamosSet> {
    if specs.is_empty() {
        return None;
    }
    w.keep_watermarks();
    let us = |x: f64| (x * 1e6).round() as u64;
    let ctxs = specs
        .iter()
        .map(|d| {
            let aggr_us = us(d.aggr_ms / 1000.0);
            let apply_us = if d.apply_s > 0.0 {
                us(d.apply_s)
            } else {
                aggr_us
            };
            Ctx::new(CtxSpec {
                node: d.node,
                action: match d.action {
                    DamosAction::MigrateHot => Action::MigrateHot,
                    DamosAction::MigrateCold => Action::MigrateCold,
                },
                target: d.target,
                quota: (d.quota.0, us(d.reset_s) * 1000),
                goal: None,
                young_filter: false,
                intervals_us: (us(d.sample_ms / 1000.0), aggr_us, apply_us),
                nr_regions: (10, 1000),
                intervals_goal: None,
                counted: false,
            })
        })
        .collect();
    Some(DamosSet::new(ctxs, w.scenario().sim.seed ^ EXPERIMENT_SEED))
}

/// The `damon-tiering` kernel model: mtier.c's contexts.
pub(crate) struct DamonTiering {
    set: DamosSet,
}

impl DamonTiering {
    pub(crate) fn new(w: &mut World, tun: Tunables) -> DamonTiering {
        w.set_memory_tiering(
            tun.kernel,
            TieringConfig {
                demotion_enabled: tun.demotion_enabled,
                watermarks: true,
                ..TieringConfig::default()
            },
        );
        let tiers = w.machine().memory_tiers(tun.kernel);
        let nodes = w.machine().nr_nodes();
        let mut ctxs = Vec::new();
        for n in 0..nodes {
            let (action, target, goal) = if tiers.toptier[n] {
                let Some(t) = tiers.demotion[n].first() else {
                    continue;
                };
                let goal = (Metric::NodeMemFreeBp, n, tun.demote_free_bp);
                (Action::MigrateCold, t, goal)
            } else {
                let top = |t: &usize| tiers.toptier[*t] && tiers.demotion[*t].contains(n);
                let Some(t) = (0..nodes).find(top) else {
                    continue;
                };
                (
                    Action::MigrateHot,
                    t,
                    (Metric::NodeMemUsedBp, t, tun.promote_used_bp),
                )
            };
            ctxs.push(Ctx::new(CtxSpec {
                node: n,
                action,
                target,
                quota: (tun.quota_mb << 20, tun.quota_reset_ms * 1_000_000),
                goal: Some(goal),
                young_filter: true,
                intervals_us: (tun.sample_us, tun.aggr_us, tun.apply_interval_us),
                nr_regions: (tun.min_nr_regions, tun.max_nr_regions),
                intervals_goal: (tun.intervals_access_bp > 0).then_some(IntervalsGoal {
                    access_bp: tun.intervals_access_bp,
                    aggrs: tun.intervals_aggrs,
                    min_sample_us: tun.min_sample_us,
                    max_sample_us: tun.max_sample_us,
                }),
                counted: true,
            }));
        }
        DamonTiering {
            set: DamosSet::new(ctxs, w.scenario().sim.seed ^ SEED),
        }
    }
}

impl KernelHooks for DamonTiering {
    fn tick(&mut self, w: &mut World) {
        self.set.tick(w);
    }
}

impl KernelModel for DamonTiering {
    fn name(&self) -> Option<&'static str> {
        Some("damon-tiering")
    }
    fn metrics(&self, m: &mut Metrics) {
        m.scan_cpu_s = self.set.cpu_s();
    }
}

mod apply;
use apply::tune_intervals;
pub(crate) use apply::tune_intervals_of;
