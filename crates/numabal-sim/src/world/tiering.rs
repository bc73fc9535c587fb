//! Memory tiering, the memory-management side: the machine's memory tiers under the
//! simulated kernel, each node's zone watermarks, allocation to the low watermark with
//! fallback down the zonelist, and reclaim by demotion (kswapd and direct reclaim) to the
//! next lower tier. NUMA balancing's promotion is the kernel model's (`kernel/linux6/`);
//! its counters are kept here with the demotion counters, under the kernel's names.
//!
//! ```text
//!   allocation ──► zonelist node above its low mark ──► page there
//!        │ none                                   (no kswapd woken: the fast node fills,
//!        ▼                                         new pages go to the slow one)
//!   wake every kswapd; above min ──► page there; none ──► direct reclaim: demote 32
//!                                                         pages of the local node
//!   kswapd (woken by that, or by a promotion finding no room on its target):
//!        demote the node's cold pages (CLOCK over its pages, second chance), at least
//!        the high mark's worth per wake, until free ≥ high mark (WMARK_PROMO in NUMA
//!        balancing's tiering mode)
//!   marks: min < low < high < promo, the kernel's from min_free_kbytes (watermarks.rs)
//! ```
//!
//! Memory tiering is on when `sim.demotion_enabled` is set or a kernel model runs NUMA
//! balancing's tiering mode; otherwise none of this runs, and allocation fills a node to
//! its last page as before (docs/model-notes.md, "Memory tiering").

mod lru_gen;

use super::watermarks::Marks;
use super::*;
use crate::memory::{CHUNK, PAGE_BYTES};
use numabal_model::tiers::MemoryTiers;
use numabal_model::{KernelVersion, Mask};
use serde::{Deserialize, Serialize};

/// `SWAP_CLUSTER_MAX`: pages direct reclaim frees per attempt.
const SWAP_CLUSTER_MAX: u64 = 32;

/// Which watermark an allocation must stay above.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mark {
    /// None: the node may fill to its last page (memory tiering off).
    Full,
    /// `ALLOC_WMARK_LOW`, the fast path.
    Low,
    /// `ALLOC_WMARK_MIN`, the slow path after waking kswapd.
    Min,
}

/// The tiering counters (`/proc/vmstat` names) and the per-tier memory at the end.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TieringStats {
    /// Pages promoted from a lower tier to the top tier by NUMA balancing.
    pub pgpromote_success: u64,
    /// Hot slow-tier pages that passed the hot threshold (before the rate limit).
    pub pgpromote_candidate: u64,
    /// Pages demoted by kswapd.
    pub pgdemote_kswapd: u64,
    /// Pages demoted by direct reclaim.
    pub pgdemote_direct: u64,
    /// NUMA hinting faults on pages of a lower tier (part of `numa_hint_faults`).
    pub numa_hint_faults_slow_tier: u64,
    /// Promotions that failed for want of room on the target node (kswapd woken).
    pub pgpromote_no_room: u64,
    /// kswapd wakeups.
    pub kswapd_wakeups: u64,
    /// CPU seconds kswapd spent demoting.
    pub kswapd_cpu_s: f64,
    /// Promotion per simulated second, MB (10^6 bytes): NUMA balancing's and DAMOS's.
    pub promote_mb_s: f64,
    /// Demotion per simulated second, MB: kswapd's, direct reclaim's and DAMOS's.
    pub demote_mb_s: f64,
    /// Pages DAMOS moved up a tier (`migrate_hot`'s `sz_applied`, in pages).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub damos_promoted: u64,
    /// Pages DAMOS moved down a tier (`migrate_cold`'s `sz_applied`, in pages).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub damos_demoted: u64,
    /// MGLRU's aging walks (`sim.lru_gen`), over all nodes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lru_gen_walks: u64,
    /// The mms those walks went through: only those with a thread switched in since
    /// their last walk for the node (`should_skip_mm`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lru_gen_mm_walks: u64,
    /// The mms kswapd was inside when another reclaimer, joining the aging, ended it
    /// (`inc_max_seq`): kswapd went on with the mm, its moves into the new generation.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lru_gen_mm_walks_overtaken: u64,
    /// Pages DAMON_STAT checked, as many made old (`sim.damon_stat`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub damon_stat_checks: u64,
    /// Reclaim's reference checks that found a THP young and flushed its TLB entries
    /// (x86's `pmdp_clear_flush_young`; no kernel counter).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub young_thp_flushes: u64,
    /// The tiers at the end: `memory_tierN`, its nodes and the MiB in use on them.
    pub tiers: Vec<TierUse>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// One memory tier's memory in use over the run (sampled at every tick).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TierUse {
    /// N of `memory_tierN`.
    pub tier: u32,
    /// Its nodes.
    pub nodes: String,
    /// MiB of workload memory on them, the most at any tick.
    pub peak_mb: f64,
    /// MiB on them, averaged over the ticks.
    pub mean_mb: f64,
}

/// What a kernel model asks of memory tiering.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TieringConfig {
    /// NUMA balancing's tiering mode (kswapd balances to WMARK_PROMO).
    pub(crate) tiering_mode: bool,
    /// `demotion_enabled` as the model's kernel is configured.
    pub(crate) demotion_enabled: bool,
    /// TPP's `demote_scale_factor` (0: none).
    pub(crate) demote_scale_factor: u64,
    /// Allocation keeps to the watermarks though neither of the above is on (DAMOS
    /// tiering: the kernel's watermarks matter to its goals and migrations).
    pub(crate) watermarks: bool,
}

/// The CPU a reclaimer runs on: kswapd from `start` on `share` of a CPU for `budget` ns
/// (a tick's), or an allocating thread (direct reclaim) on its own CPU, without limit.
#[derive(Debug, Clone, Copy)]
pub(super) struct ReclaimCpu {
    pub(super) start: u64,
    pub(super) share: f64,
    pub(super) budget: f64,
    pub(super) kswapd: bool,
}

impl ReclaimCpu {
    fn direct(now: u64) -> ReclaimCpu {
        ReclaimCpu {
            start: now,
            share: 1.0,
            budget: f64::INFINITY,
            kswapd: false,
        }
    }
}

/// The world's memory tiering state.
pub(crate) struct Tiering {
    pub(crate) tiers: MemoryTiers,
    /// `demotion_enabled`.
    pub(crate) demotion_enabled: bool,
    /// NUMA balancing's tiering mode: kswapd balances to WMARK_PROMO.
    pub(crate) tiering_mode: bool,
    /// Watermarks kept with neither of the above (DAMOS tiering).
    watermarks: bool,
    /// Per node: the kernel's watermarks, pages (`watermarks.rs`).
    pub(super) marks: Vec<Marks>,
    /// Per node: TPP's WMARK_DEMOTE, pages (0: none).
    demote: Vec<u64>,
    /// Per node: kswapd is awake.
    kswapd: Vec<bool>,
    /// Per node: CPU ns kswapd's last work ran past its tick (MGLRU: the chunk of a walk or
    /// the batch of an eviction it was in when its CPU of the tick ran out).
    kswapd_debt: Vec<f64>,
    /// Per node: the pages kswapd's MGLRU eviction scanned since it woke (`sim.lru_gen`).
    /// `balance_pgdat` lowers its priority round by round and keeps it until the node is
    /// balanced; only its first round, at `DEF_PRIORITY`, evicts without aging when three
    /// generations are left. The rounds go on across ticks, so this is kept between them.
    kswapd_scanned: Vec<u64>,
    /// Per node: the CLOCK hand, (object, chunk).
    hand: Vec<(usize, u64)>,
    /// Per object, per chunk: when the CLOCK's hand last passed (ns; MGLRU keeps its own
    /// per chunk and node).
    seen: Vec<Vec<u64>>,
    /// MGLRU in place of the CLOCK (`sim.lru_gen`).
    lru_gen: Option<lru_gen::LruGen>,
    /// Per tier: the most pages in use at a tick, and their sum over the ticks.
    peak: Vec<u64>,
    sum: Vec<f64>,
    ticks: u64,
    pub(crate) stats: TieringStats,
}

impl Tiering {
    pub(crate) fn new(
        m: &Machine,
        marks: &[Marks],
        s: &numabal_model::scenario::SimSettings,
    ) -> Tiering {
        let n = m.nr_nodes();
        Tiering {
            tiers: m.memory_tiers(KernelVersion::NEWEST),
            demotion_enabled: s.demotion_enabled,
            tiering_mode: false,
            watermarks: false,
            marks: marks.to_vec(),
            demote: vec![0; n],
            kswapd: vec![false; n],
            kswapd_debt: vec![0.0; n],
            kswapd_scanned: vec![0; n],
            hand: vec![(0, 0); n],
            seen: Vec::new(),
            lru_gen: s.lru_gen.then(|| lru_gen::LruGen::new(n)),
            peak: Vec::new(),
            sum: Vec::new(),
            ticks: 0,
            stats: TieringStats::default(),
        }
    }

    /// Whether allocation and reclaim follow the watermarks (memory tiering is on).
    pub(crate) fn on(&self) -> bool {
        self.demotion_enabled || self.tiering_mode || self.watermarks
    }

    /// `node_is_toptier`.
    pub(crate) fn toptier(&self, n: usize) -> bool {
        self.tiers.toptier[n]
    }

    /// The mark an allocation of the given kind stays above on node `n`, pages.
    pub(crate) fn mark(&self, mark: Mark, n: usize) -> u64 {
        match mark {
            Mark::Full => 0,
            Mark::Low => self.marks[n].low,
            Mark::Min => self.marks[n].min,
        }
    }
}

impl World<'_> {
    /// A kernel model's memory tiering: the tiers of its release, its modes, and TPP's
    /// demotion headroom (`demote_scale_factor`, 1/10000 of a top-tier node with a
    /// demotion target, at least twice its high mark; 0: none).
    pub(crate) fn set_memory_tiering(&mut self, k: KernelVersion, c: TieringConfig) {
        self.tiering.tiers = self.machine.memory_tiers(k);
        self.tiering.tiering_mode = c.tiering_mode;
        self.tiering.demotion_enabled |= c.demotion_enabled;
        self.tiering.watermarks |= c.watermarks;
        for n in 0..self.machine.nr_nodes() {
            let t = &self.tiering.tiers;
            self.tiering.demote[n] =
                if c.demote_scale_factor > 0 && t.toptier[n] && !t.demotion[n].is_empty() {
                    (self.machine.node_usable_pages(n) * c.demote_scale_factor / 10_000)
                        .max(2 * self.wmark_high(n))
                } else {
                    0
                };
        }
    }

    /// Allocation keeps to the watermarks from now on (a workload's own DAMOS schemes
    /// migrate between tiers as the kernel's would, against its watermarks).
    pub(crate) fn keep_watermarks(&mut self) {
        self.tiering.watermarks = true;
    }

    /// After an allocation on node `n`: below TPP's demotion headroom, its kswapd wakes.
    pub(crate) fn after_alloc(&mut self, n: usize) {
        if self.tiering.demote[n] > 0 && self.free_pages(n) < self.tiering.demote[n] {
            self.wakeup_kswapd(n);
        }
    }

    /// The tiering counters, for the kernel model's promotion.
    pub(crate) fn tiering_stats(&mut self) -> &mut TieringStats {
        &mut self.tiering.stats
    }

    /// `nr` base pages promoted to `dst`: counted, and in the series.
    pub(crate) fn count_promotion(&mut self, dst: usize, nr: u64) {
        self.tiering.stats.pgpromote_success += nr;
        self.series.promoted(dst, nr);
    }

    /// `nr` base pages DAMOS moved from `src` to `dst`, up or down a tier: counted, and
    /// in the series.
    pub(crate) fn count_damos_migration(&mut self, src: usize, dst: usize, nr: u64) {
        let up = self.tiering.toptier(dst) && !self.tiering.toptier(src);
        if up {
            self.tiering.stats.damos_promoted += nr;
        } else {
            self.tiering.stats.damos_demoted += nr;
        }
        self.series.damos_moved(src, dst, nr, up);
    }

    /// The tiering state (read).
    pub(crate) fn tiering(&self) -> &Tiering {
        &self.tiering
    }

    /// Free pages of node `n`.
    fn free_pages(&self, n: usize) -> u64 {
        self.node_cap[n].saturating_sub(self.node_used[n])
    }

    /// `pgdat_free_space_enough`: free memory above WMARK_PROMO plus max(1 GiB, a 16th of
    /// the node), so a promotion needs no selection.
    pub(crate) fn free_space_enough(&self, n: usize) -> bool {
        let enough = (1u64 << 30) / PAGE_BYTES as u64;
        let enough = enough.max((self.machine.nodes[n].memory_bytes / PAGE_BYTES as u64) >> 4);
        self.free_pages(n) > self.tiering.marks[n].promo + enough
    }

    /// `migrate_balanced_pgdat` for a promotion: room for `nr` pages above the high mark;
    /// if not, kswapd is woken there (tiering mode) and the promotion fails.
    pub(crate) fn promotion_room(&mut self, n: usize, nr: u64) -> bool {
        if self.free_pages(n) >= self.wmark_high(n) + nr {
            return true;
        }
        self.tiering.stats.pgpromote_no_room += nr;
        self.wakeup_kswapd(n);
        false
    }

    /// `wakeup_kswapd`: node `n`'s kswapd, unless awake already or the node balanced.
    pub(crate) fn wakeup_kswapd(&mut self, n: usize) {
        if !self.tiering.kswapd[n] && !self.node_balanced(n) {
            self.tiering.kswapd[n] = true;
            self.tiering.kswapd_scanned[n] = 0;
            self.tiering.stats.kswapd_wakeups += 1;
        }
    }

    /// `pgdat_balanced`: free above the high mark, WMARK_PROMO in tiering mode, TPP's
    /// WMARK_DEMOTE where it is set.
    fn node_balanced(&self, n: usize) -> bool {
        self.free_pages(n) >= self.balance_mark(n)
    }

    /// The free pages kswapd balances node `n` to.
    fn balance_mark(&self, n: usize) -> u64 {
        let mark = if self.tiering.tiering_mode {
            self.tiering.marks[n].promo
        } else {
            self.wmark_high(n)
        };
        mark.max(self.tiering.demote[n])
    }

    /// An allocation found every allowed node below its low mark: wake their kswapds.
    pub(crate) fn wake_all_kswapds(&mut self, nodes: &[usize]) {
        for &n in nodes {
            self.wakeup_kswapd(n);
        }
    }

    /// Direct reclaim by an allocating thread on `node`: demote up to `SWAP_CLUSTER_MAX`
    /// cold pages. Returns the CPU ns it took.
    pub(crate) fn direct_reclaim(&mut self, node: usize) -> f64 {
        if !self.tiering.demotion_enabled {
            return 0.0;
        }
        let cpu = ReclaimCpu::direct(self.now);
        let (mut pages, mut ns, _) = self.reclaim(node, SWAP_CLUSTER_MAX, cpu, &mut 0);
        if pages == 0 && self.tiering.lru_gen.is_none() {
            // The CLOCK went round once and found every page referenced: that pass used
            // their second chance, so a second one demotes those not used since (direct
            // reclaim goes on at lower priorities rather than fail the allocation).
            let (p, more, _) = self.reclaim(node, SWAP_CLUSTER_MAX, cpu, &mut 0);
            (pages, ns) = (p, ns + more);
        }
        self.tiering.stats.pgdemote_direct += pages;
        ns
    }

    /// kswapd at a tick: each awake kswapd demotes until its node is balanced or its CPU
    /// time of the tick is spent, then sleeps once balanced (or when nothing can move).
    pub(crate) fn kswapd_tick(&mut self) {
        if !self.tiering.on() {
            return;
        }
        self.sample_tiers();
        for n in 0..self.machine.nr_nodes() {
            if !self.tiering.kswapd[n] {
                continue;
            }
            // An aging walk under way is finished first (kswapd is inside it).
            let walking = self.kswapd_walking(n);
            if !walking && (self.node_balanced(n) || !self.tiering.demotion_enabled) {
                self.tiering.kswapd[n] = false;
                continue;
            }
            let mark = self.balance_mark(n);
            // kswapd_shrink_node reclaims at least the high watermark's worth before it
            // looks again (`nr_to_reclaim`), however little the node lacks.
            let want = mark
                .saturating_sub(self.free_pages(n))
                .max(self.wmark_high(n))
                .max(SWAP_CLUSTER_MAX);
            let share = self.kswapd_share(n);
            let mut budget = self.tick_ns as f64 * self.host_speed() * share;
            let mut start = self.now;
            if self.tiering.lru_gen.is_some() {
                // The CLOCK's overrun (one chunk) is not carried; a walk's is.
                let debt = &mut self.tiering.kswapd_debt[n];
                let paid = debt.min(budget);
                *debt -= paid;
                budget -= paid;
                start += self.wall_on_share(paid, share);
                if budget <= 0.0 {
                    continue;
                }
            }
            let mut scanned = self.tiering.kswapd_scanned[n];
            let cpu = ReclaimCpu {
                start,
                share,
                budget,
                kswapd: true,
            };
            let (pages, ns, hopeless) = self.reclaim(n, want, cpu, &mut scanned);
            self.tiering.kswapd_scanned[n] = scanned;
            if self.tiering.lru_gen.is_some() {
                self.tiering.kswapd_debt[n] = (ns - budget).max(0.0);
            }
            self.tiering.stats.pgdemote_kswapd += pages;
            // As /proc shows it: wall time on a shared host (`host_wall`).
            self.tiering.stats.kswapd_cpu_s += self.host_wall(ns) / 1e9;
            self.charge_kthread(n, ns);
            if pages == 0 && hopeless {
                // kswapd_failures: nothing movable; it sleeps until woken again.
                self.tiering.kswapd[n] = false;
            }
        }
    }

    /// The part of a CPU kswapd of node `n` runs on: a whole one while its node has an
    /// idle CPU, else its fair share beside the node's runnable tasks (kswapd is a CFS
    /// task of nice 0 bound to its node's CPUs: `cpus / (runnable + 1)`). Its work in a
    /// tick is that share of a CPU at the host's speed (a shared host runs it slower).
    fn kswapd_share(&self, n: usize) -> f64 {
        let cpus = self.kthread_cpus(n);
        let now = self.now;
        let busy = cpus
            .iter()
            .all(|&c| !self.sched.is_idle(c) || self.held(c, now));
        if !busy {
            return 1.0;
        }
        let runnable: usize = cpus.iter().map(|&c| self.sched.rq(c).len()).sum();
        (cpus.len() as f64 / (runnable + 1) as f64).min(1.0)
    }

    /// The CPUs a node's kernel threads run on: its own, or a CPU-less node's nearest
    /// CPU node's.
    fn kthread_cpus(&self, n: usize) -> Vec<usize> {
        let home = self.zonelists[n]
            .iter()
            .copied()
            .find(|&j| !self.machine.nodes[j].cpus.is_empty())
            .unwrap_or(0);
        self.machine.nodes[home].cpus.iter().collect()
    }

    /// DAMON_STAT checked `n` pages and made as many old: counted, and their CPU time
    /// (`pte_update_ns` each, twice) taken from node 0's CPUs.
    pub(crate) fn damon_stat_checked(&mut self, n: u64) {
        self.tiering.stats.damon_stat_checks += n;
        self.charge_kthread(0, 2.0 * n as f64 * self.machine.spec.costs.pte_update_ns);
    }

    /// Each tier's memory in use at this tick.
    fn sample_tiers(&mut self) {
        let nt = self.tiering.tiers.tiers.len();
        let tg = &mut self.tiering;
        tg.peak.resize(nt, 0);
        tg.sum.resize(nt, 0.0);
        tg.ticks += 1;
        for (i, t) in tg.tiers.tiers.iter().enumerate() {
            let used: u64 = t.nodes.iter().map(|n| self.node_used[n]).sum();
            tg.peak[i] = tg.peak[i].max(used);
            tg.sum[i] += used as f64;
        }
    }

    /// A node's kernel thread's CPU time (kswapd, a kdamond) on node `n` (a CPU-less
    /// node's on its nearest CPU node): an idle CPU of the node if there is one, else taken
    /// from the threads of its first CPU.
    pub(crate) fn charge_kthread(&mut self, n: usize, ns: f64) {
        if ns <= 0.0 {
            return;
        }
        let cpus = self.kthread_cpus(n);
        let now = self.now;
        if let Some(&c) = cpus
            .iter()
            .find(|&&c| self.sched.is_idle(c) && !self.held(c, now))
        {
            let until = now + self.host_wall(ns) as u64;
            self.hold_cpu(c, until);
            return;
        }
        let Some(&c) = cpus.first() else { return };
        let rq: Vec<usize> = self.sched.rq(c).iter().map(|&x| x as usize).collect();
        let each = ns / rq.len().max(1) as f64;
        for t in rq {
            self.steal_cpu(t, each);
        }
    }

    /// Demote up to `want` cold pages of node `n` by kswapd or direct reclaim on `cpu`: in
    /// MGLRU's order with `sim.lru_gen`, else the CLOCK's. `scanned`: kswapd's pages
    /// scanned since it woke (direct reclaim passes a new zero: each of its calls starts
    /// at `DEF_PRIORITY`).
    fn reclaim(
        &mut self,
        n: usize,
        want: u64,
        cpu: ReclaimCpu,
        scanned: &mut u64,
    ) -> (u64, f64, bool) {
        if self.tiering.lru_gen.is_none() {
            return self.demote_cold(n, want, cpu.budget);
        }
        self.evict_folios(n, want, cpu, scanned)
    }

    /// Demote up to `want` cold pages of node `n` within `budget` ns of CPU: the CLOCK
    /// hand passes over the node's pages object by object; a page referenced since the
    /// hand last passed its chunk gets a second chance, the others go to a demotion target.
    /// Returns (pages demoted, ns spent, hopeless: no target had room, or the hand went
    /// round every page without finding one cold).
    fn demote_cold(&mut self, n: usize, want: u64, budget: f64) -> (u64, f64, bool) {
        if self.tiering.tiers.demotion[n].is_empty() || self.objects.is_empty() {
            return (0, 0.0, true);
        }
        let visit_ns = self.machine.spec.costs.pte_update_ns;
        let (mut done, mut ns) = (0u64, 0.0);
        let total: u64 = self.objects.iter().map(|o| o.chunks()).sum();
        let mut visited_chunks = 0u64;
        while done < want && ns < budget && visited_chunks <= total {
            let (obj, c) = self.tiering.hand[n];
            if obj >= self.objects.len() {
                self.tiering.hand[n] = (0, 0);
                continue;
            }
            if c >= self.objects[obj].chunks() {
                self.tiering.hand[n] = (obj + 1, 0);
                continue;
            }
            self.tiering.hand[n] = (obj, c + 1);
            visited_chunks += 1;
            if self.objects[obj].chunk_hist(c)[n] == 0 {
                continue;
            }
            let (d, spent, stop) = self.demote_chunk(n, obj, c, want - done);
            done += d;
            ns += spent + visit_ns;
            if stop {
                return (done, ns, true);
            }
        }
        (done, ns, visited_chunks > total)
    }

    /// One chunk under the hand: its pages on node `n`, each demoted unless referenced
    /// since the hand last passed. Returns (pages demoted, ns, no target had room).
    fn demote_chunk(&mut self, n: usize, obj: usize, c: u64, want: u64) -> (u64, f64, bool) {
        use rand::RngExt;
        let now = self.now;
        let seen = self.chunk_seen(obj, c);
        let dt = now.saturating_sub(seen) as f64;
        let rate = self.chunk_access_rate(obj, c, n);
        let o = &self.objects[obj];
        let huge = o.is_huge(c);
        let (first, len) = (c * CHUNK, o.chunk_len(c));
        let visit_ns = self.machine.spec.costs.pte_update_ns;
        let (mut done, mut ns) = (0u64, 0.0);
        let heads: Vec<u64> = if huge {
            vec![first]
        } else {
            (first..first + len)
                .filter(|&p| o.node_of(p) == Some(n))
                .collect()
        };
        for head in heads {
            if done >= want {
                break;
            }
            let nr = self.entry_pages(obj, head);
            let p_ref = 1.0 - (-rate * nr as f64 * dt).exp();
            ns += visit_ns;
            if self.rng.random::<f64>() < p_ref {
                if nr > 1 {
                    ns += self.young_thp_flush(obj);
                }
                continue;
            }
            let Some(dst) = self.demotion_target(n, nr) else {
                self.metrics.pgmigrate_fail += nr;
                self.set_chunk_seen(obj, c, now);
                return (done, ns, true);
            };
            // shrink_inactive_list isolates SWAP_CLUSTER_MAX pages a batch.
            ns += self.relocate(obj, head, n, dst, nr, done % SWAP_CLUSTER_MAX == 0);
            self.series.demoted(n, nr);
            done += nr;
        }
        self.set_chunk_seen(obj, c, now);
        (done, ns, false)
    }

    /// What a reference check that finds a THP of `obj` young costs on top of its visit:
    /// x86's `pmdp_clear_flush_young` flushes the THP's range from the TLBs of the CPUs
    /// running the process and waits for them (`costs.tlb_shootdown_ns`, and on a shared
    /// host `core.host_shootdown_ns` for each). A base page's check does not flush (x86's
    /// `ptep_clear_flush_young` only clears the bit), nor do MGLRU's walk and look-around
    /// or DAMON's checks (they test and clear without flushing).
    pub(super) fn young_thp_flush(&mut self, obj: usize) -> f64 {
        self.tiering.stats.young_thp_flushes += 1;
        self.machine.spec.costs.tlb_shootdown_ns + self.host_flush_wait(obj, true)
    }

    /// A demotion target of node `n` with room for `nr` pages above its min mark: one of
    /// its preferred targets (at random, `next_demotion_node`), else the nearest of every
    /// lower tier (`lower_tier_mask`).
    fn demotion_target(&mut self, n: usize, nr: u64) -> Option<usize> {
        use rand::RngExt;
        let room = |w: &Self, j: usize| w.free_pages(j) >= w.tiering.marks[j].min + nr;
        let preferred: Vec<usize> = self.tiering.tiers.demotion[n].iter().collect();
        let pick = preferred[self.rng.random_range(0..preferred.len())];
        if room(self, pick) {
            return Some(pick);
        }
        let lower: &Mask = &self.tiering.tiers.lower[n];
        self.zonelists[pick]
            .iter()
            .copied()
            .find(|&j| lower.contains(j) && room(self, j))
    }

    fn chunk_seen(&self, obj: usize, c: u64) -> u64 {
        self.tiering
            .seen
            .get(obj)
            .and_then(|v| v.get(c as usize))
            .copied()
            .unwrap_or(0)
    }

    fn set_chunk_seen(&mut self, obj: usize, c: u64, t: u64) {
        let chunks = self.objects[obj].chunks() as usize;
        let seen = &mut self.tiering.seen;
        if seen.len() <= obj {
            seen.resize(obj + 1, Vec::new());
        }
        if seen[obj].len() < chunks {
            seen[obj].resize(chunks, 0);
        }
        seen[obj][c as usize] = t;
    }

    /// Accesses per ns to each page of chunk `c` of object `obj` on node `n`: the rate at
    /// its first page there (the chunk's pages share one rate in reclaim's view; the
    /// first page of the object's chunk may lie outside every access range, as the head
    /// of a malloc'd buffer that is not 2 MiB-aligned does).
    fn chunk_access_rate(&self, obj: usize, c: u64, n: usize) -> f64 {
        self.chunk_rate_of(obj, c, n, true)
    }

    /// `chunk_access_rate` of the random patterns only: MGLRU's young bits know a sweep's
    /// passes one by one (`lru_gen_swept`).
    pub(super) fn chunk_random_rate(&self, obj: usize, c: u64, n: usize) -> f64 {
        self.chunk_rate_of(obj, c, n, false)
    }

    /// Accesses per ns to the first page of chunk `c` on node `n` by the threads now in an
    /// access phase over it: a random pattern's lines spread over its ranges by weight,
    /// and with `sweeps` a sweep's passes (one reference per page per pass), at each
    /// thread's latest rate.
    fn chunk_rate_of(&self, obj: usize, c: u64, n: usize, sweeps: bool) -> f64 {
        let o = &self.objects[obj];
        let first = c * CHUNK;
        let Some(page) = (first..first + o.chunk_len(c)).find(|&p| o.node_of(p) == Some(n)) else {
            return 0.0;
        };
        let mut rate = 0.0;
        self.access_ranges_of(obj, sweeps, |a, b, r| {
            if page >= a && page < b {
                rate += r;
            }
        });
        rate
    }

    /// The tiering counters and each tier's memory, for the result (`None` when memory
    /// tiering was off).
    pub(crate) fn tiering_result(&self, runtime_s: f64) -> Option<TieringStats> {
        if !self.tiering.on() {
            return None;
        }
        let mut s = self.tiering.stats.clone();
        let mb = |pages: u64| pages as f64 * PAGE_BYTES / 1e6;
        if runtime_s > 0.0 {
            s.promote_mb_s = mb(s.pgpromote_success + s.damos_promoted) / runtime_s;
            s.demote_mb_s = mb(s.pgdemote_kswapd + s.pgdemote_direct + s.damos_demoted) / runtime_s;
        }
        let tg = &self.tiering;
        let mib = |pages: f64| pages * PAGE_BYTES / (1u64 << 20) as f64;
        s.tiers = (tg.tiers.tiers.iter().enumerate())
            .map(|(i, t)| TierUse {
                tier: t.id,
                nodes: t.nodes.to_string(),
                peak_mb: mib(tg.peak.get(i).copied().unwrap_or(0) as f64),
                mean_mb: mib(tg.sum.get(i).copied().unwrap_or(0.0) / tg.ticks.max(1) as f64),
            })
            .collect();
        Some(s)
    }
}
