//! MGLRU's aging walk (`try_to_inc_max_seq`, `walk_mm`) and which mms it walks: only
//! those a thread was switched into since their last walk for the node (`should_skip_mm`,
//! `lru_gen_use_mm` at each context switch), handed out one at a time from the mm list
//! that kswapd and direct reclaimers share (`iterate_mm_list`).
//!
//! ```text
//!   mm list (oldest first):   hot program ──► filler ──► end
//!   kswapd:   takes hot ─ walks ...(its CPU runs out)...........─ walks on ─► NotMade
//!   filler:              joins: takes filler ─ walks ─ end ─► inc_max_seq (Made)
//!   kswapd's moves after the filler's inc_max_seq go to the new max_seq
//! ```

use super::*;

/// Chunks a PUD's entries map (`PTRS_PER_PMD`): the walk's ranges end at PUD boundaries.
const CHUNKS_PER_PUD: u64 = 512;

/// What a walker's part in an aging came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Aging {
    /// It ended the iteration and made the new generation.
    Made,
    /// Another walker ended it.
    NotMade,
    /// kswapd's CPU of the tick ran out inside an mm.
    Paused,
}

/// Where a walker is in an aging: the `max_seq` it ages from, the process whose mm it
/// walks, and the region and chunk it goes on from.
#[derive(Debug, Clone, Copy)]
pub(super) struct WalkPos {
    pub(super) seq: u64,
    proc: usize,
    region: usize,
    chunk: u64,
    /// Another walker made the generation while this one was inside the mm.
    overtaken: bool,
}

impl WalkPos {
    fn new(seq: u64, proc: usize) -> WalkPos {
        WalkPos {
            seq,
            proc,
            region: 0,
            chunk: 0,
            overtaken: false,
        }
    }
}

/// `sysctl_sched_base_slice` on `nr_cpus` CPUs: 0.75 ms scaled by `1 + ilog2(cpus)`, the
/// CPUs counted up to 8 (`SCHED_TUNABLESCALING_LOG`, `get_update_sysctl_factor`).
fn base_slice_ns(nr_cpus: usize) -> u64 {
    750_000 * (1 + nr_cpus.clamp(1, 8).ilog2() as u64)
}

impl World<'_> {
    /// `lru_gen_use_mm`: a thread of thread `t`'s process was switched in
    /// (`context_switch`), so every node's next aging walks its mm again.
    pub(crate) fn lru_gen_use_mm(&mut self, t: usize) {
        let p = self.threads[t].proc;
        self.procs[p].lru_gen_bitmap = u64::MAX;
    }

    /// The context switches of the interval `(t0, t1]` as MGLRU sees them
    /// (`lru_gen_use_mm`): a thread that did not run on this CPU in the interval before
    /// (new, woken, or moved), and a thread sharing its CPU at its turn. The tick preempts
    /// the current task once its slice is spent (`sched_base_slice`), so `k` tasks take
    /// turns of whole ticks: the task at place `p` of its runqueue is switched in at the
    /// turns `j` with `j % k == p`. Simplified: a switch within the interval counts from
    /// its start, and a thread woken within it from when it runs (`note_late_switch`).
    pub(crate) fn note_switches(&mut self, running: &[(usize, usize, f64)], t0: u64, t1: u64) {
        if self.tiering.lru_gen.is_none() {
            return;
        }
        let turn = base_slice_ns(self.sched.nr_cpus()).div_ceil(self.tick_ns) * self.tick_ns;
        self.last_run.resize(self.threads.len(), None);
        for &(t, c, _) in running {
            let rq = self.sched.rq(c);
            let k = rq.len() as u64;
            let place = rq.iter().position(|&x| x as usize == t).unwrap_or(0) as u64;
            let j = t1 / turn;
            let its_turn = k > 1 && j * turn > t0 && j % k == place;
            // Intervals follow one another, so "the interval before" is the one ending at t0.
            let ran_just_before = self.last_run[t] == Some((c, t0));
            self.last_run[t] = Some((c, t1));
            if !ran_just_before || its_turn {
                self.lru_gen_use_mm(t);
            }
        }
    }

    /// A thread woken or made runnable within the interval ending at `t1` runs on CPU `c`
    /// for the rest of it: switched in.
    pub(crate) fn note_late_switch(&mut self, t: usize, c: usize, t1: u64) {
        if self.tiering.lru_gen.is_none() {
            return;
        }
        if self.last_run.len() <= t {
            self.last_run.resize(t + 1, None);
        }
        self.last_run[t] = Some((c, t1));
        self.lru_gen_use_mm(t);
    }

    /// `try_to_inc_max_seq` for node `n` by a reclaimer on `cpu`, `ns` its CPU so far
    /// (the walk's is added): mms from the list the walkers share (`iterate_mm_list`),
    /// each walked (`walk_mm`), until the list ends; the walker that reaches its end makes
    /// the new generation (`inc_max_seq`), whatever mm another walker is still in. A
    /// walker joining an aging under way takes the next mm; kswapd, when its CPU of the
    /// tick runs out, stops inside its mm and goes on from there at its next tick.
    pub(super) fn try_to_inc_max_seq(&mut self, n: usize, cpu: ReclaimCpu, ns: &mut f64) -> Aging {
        let mut pos = if cpu.kswapd {
            self.lru_mut().nodes[n].kswapd_walk.take()
        } else {
            None
        };
        let seq = pos.map_or(self.lru().nodes[n].max_seq, |p| p.seq);
        loop {
            if let Some(mut p) = pos.take()
                && !self.walk_mm(n, &mut p, cpu, ns)
            {
                self.lru_mut().nodes[n].kswapd_walk = Some(p);
                return Aging::Paused;
            }
            // iterate_mm_list: another walker ended this aging's iteration.
            if seq <= self.lru().nodes[n].mm_seq {
                return Aging::NotMade;
            }
            match self.next_mm(n) {
                Some(proc) => pos = Some(WalkPos::new(seq, proc)),
                None => {
                    *ns += self.inc_max_seq(n);
                    return Aging::Made;
                }
            }
        }
    }

    /// Whether kswapd of node `n` is inside an aging walk it has to finish.
    pub(crate) fn kswapd_walking(&self, n: usize) -> bool {
        (self.tiering.lru_gen.as_ref()).is_some_and(|l| l.nodes[n].kswapd_walk.is_some())
    }

    /// `iterate_mm_list`'s next mm for the aging of node `n`: the next process on the
    /// list whose mm is not skipped (`should_skip_mm`), or none at the list's end, which
    /// ends the iteration (`mm_state->seq` + 1) and starts the next from the first.
    /// Processes are on the list in the order they started (`list_add_tail`).
    fn next_mm(&mut self, n: usize) -> Option<usize> {
        loop {
            let p = self.lru().nodes[n].next_mm;
            if p >= self.procs.len() {
                let lg = &mut self.lru_mut().nodes[n];
                lg.next_mm = 0;
                lg.mm_seq += 1;
                return None;
            }
            self.lru_mut().nodes[n].next_mm = p + 1;
            if self.should_walk_mm(p, n) {
                self.tiering.stats.lru_gen_mm_walks += 1;
                return Some(p);
            }
        }
    }

    /// `inc_max_seq` for node `n`: a new generation (with 4, `min_seq` folds into the
    /// next). Returns its ns: `pte_update_ns` per folio folded.
    fn inc_max_seq(&mut self, n: usize) -> f64 {
        self.tiering.stats.lru_gen_walks += 1;
        let visit_ns = self.machine.spec.costs.pte_update_ns;
        let l = self.lru_mut();
        let mut folded = Vec::new();
        if l.nodes[n].nr_gens() == MAX_NR_GENS {
            folded = l.inc_min_seq(n);
        }
        l.nodes[n].max_seq += 1;
        let (seq, now) = (l.nodes[n].max_seq, l.clock);
        l.nodes[n].born[slot(seq)] = now;
        let folios: u64 = folded.iter().map(|&(o, c, p)| self.folios(o, c, p)).sum();
        folios as f64 * visit_ns
    }

    /// `walk_mm` from `pos` on, chunk by chunk, each at the time the walker's CPU has
    /// reached: `lru_walk_line_ns` per cache line of entries read (8 PTEs of base pages;
    /// a THP's PMD) and `lru_walk_young_ns` per young entry on top (unset: `pte_update_ns`
    /// and none), added to `ns`. Only what the mm maps, so never a tmpfs file's pages.
    /// Returns false, `pos` where it stopped, when `cpu`'s budget ran out first.
    /// Before each range of up to a PUD (a region's first chunk, then every
    /// `CHUNKS_PER_PUD`) it stops the mm if another walker made the generation (`walk_mm`'s
    /// `walk->seq != max_seq`); inside a range a walker goes on, its moves into the new
    /// generation (run 83 of the tiered guest: kswapd, preempted inside the hot mm's
    /// range, did). Simplified: a range ends only at those boundaries, not when
    /// `walk->batched` reaches `MAX_LRU_BATCH`, and kswapd's pause is not one.
    fn walk_mm(&mut self, n: usize, pos: &mut WalkPos, cpu: ReclaimCpu, ns: &mut f64) -> bool {
        let k = &self.machine.spec.costs;
        let line_ns = k.lru_walk_line_ns.unwrap_or(k.pte_update_ns);
        let young_ns = k.lru_walk_young_ns.unwrap_or(0.0);
        while let Some(r) = self.procs[pos.proc].regions.get(pos.region) {
            let obj = r.obj;
            while pos.chunk < self.objects[obj].chunks() {
                let overtaken = self.lru().nodes[n].max_seq != pos.seq;
                if overtaken && pos.chunk.is_multiple_of(CHUNKS_PER_PUD) {
                    return true;
                }
                if *ns >= cpu.budget {
                    return false;
                }
                let c = pos.chunk;
                pos.chunk += 1;
                let o = &self.objects[obj];
                if o.chunk_hist(c)[n] == 0 {
                    continue;
                }
                if overtaken && !pos.overtaken {
                    pos.overtaken = true;
                    self.tiering.stats.lru_gen_mm_walks_overtaken += 1;
                }
                let entries = if o.is_huge(c) { 1 } else { o.chunk_len(c) };
                self.lru_mut().clock = cpu.start + self.wall_on_share(*ns, cpu.share);
                *ns += entries.div_ceil(PTES_PER_LINE) as f64 * line_ns;
                *ns += self.walk_chunk(n, obj, c, None) as f64 * young_ns;
            }
            pos.region += 1;
            pos.chunk = 0;
        }
        true
    }

    /// `should_skip_mm` for the aging of node `n`: process `p`'s mm is walked if it has
    /// not exited and one of its threads was switched in since the last walk for `n`
    /// (the bit is cleared either way), unless it maps fewer than `MIN_LRU_BATCH` pages.
    fn should_walk_mm(&mut self, p: usize, n: usize) -> bool {
        let key = 1u64 << (n % u64::BITS as usize);
        let pr = &mut self.procs[p];
        if pr.end_ns.is_some() || pr.lru_gen_bitmap & key == 0 {
            return false;
        }
        pr.lru_gen_bitmap &= !key;
        let rss: u64 = (pr.regions.iter())
            .map(|r| self.objects[r.obj].populated())
            .sum();
        rss >= MIN_LRU_BATCH
    }

    /// One chunk of the walk (`walk_pte_range`, `walk_pmd_range_locked` for a THP, then
    /// `folio_update_gen`): each entry young since its young bits were last cleared moves
    /// to `max_seq` if it has PG_referenced, else gets it. Look-around does the same but
    /// for the generation being evicted (`skip`). Returns the young entries it found.
    pub(super) fn walk_chunk(&mut self, n: usize, obj: usize, c: u64, skip: Option<usize>) -> u64 {
        use rand::RngExt;
        let now = self.lru().clock;
        let p_young = self.young_chance(obj, c, n, now);
        let o = &self.objects[obj];
        let nr = if o.is_huge(c) { o.chunk_len(c) } else { 1 };
        let (min, max) = (self.lru().nodes[n].min_seq, self.lru().nodes[n].max_seq);
        // Decided on the counts as the walk found them: a page moved to max_seq is not
        // looked at twice.
        let found = self.lru_mut().gens(obj, c, n).pages;
        let mut young = 0;
        for seq in (min..=max).filter(|&q| Some(slot(q)) != skip) {
            for r in [false, true] {
                let entries = found[slot(seq)][r as usize] as u64 / nr;
                let y = (0..entries)
                    .filter(|_| self.rng.random::<f64>() < p_young)
                    .count() as u64;
                young += y;
                if y == 0 {
                    continue;
                }
                let l = self.lru_mut();
                l.take(obj, c, n, slot(seq), r, y * nr);
                l.put_lazy(obj, c, n, if r { max } else { seq }, true, y * nr);
            }
        }
        self.lru_mut().gens(obj, c, n).seen = now;
        young
    }
}
