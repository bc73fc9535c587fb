//! MGLRU's aging walk (`try_to_inc_max_seq`, `walk_mm`) and which mms it walks: only
//! those a thread was switched into since their last walk for the node (`should_skip_mm`,
//! `lru_gen_use_mm` at each context switch).

use super::*;

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

    /// `try_to_inc_max_seq`: the aging walk over node `n`'s pages (`walk_mm`), then a new
    /// generation (`inc_max_seq`). Returns the ns of CPU it took: `lru_walk_line_ns` per
    /// cache line of entries read (8 PTEs of base pages; a THP's PMD) and
    /// `lru_walk_young_ns` per young entry on top (unset: `pte_update_ns` and none), then
    /// `pte_update_ns` per folio a full set of generations folds.
    pub(super) fn try_to_inc_max_seq(&mut self, n: usize) -> f64 {
        let k = &self.machine.spec.costs;
        let visit_ns = k.pte_update_ns;
        let line_ns = k.lru_walk_line_ns.unwrap_or(visit_ns);
        let young_ns = k.lru_walk_young_ns.unwrap_or(0.0);
        let mut ns = 0.0;
        // Each mm in turn (`iterate_mm_list`): only what some mm maps, so never a tmpfs
        // file's pages.
        for p in 0..self.procs.len() {
            if !self.should_walk_mm(p, n) {
                continue;
            }
            self.tiering.stats.lru_gen_mm_walks += 1;
            for r in 0..self.procs[p].regions.len() {
                ns += self.walk_object(n, self.procs[p].regions[r].obj, line_ns, young_ns);
            }
        }
        self.tiering.stats.lru_gen_walks += 1;
        let l = self.lru_mut();
        let mut folded = Vec::new();
        if l.nodes[n].nr_gens() == MAX_NR_GENS {
            folded = l.inc_min_seq(n);
        }
        l.nodes[n].max_seq += 1;
        let (seq, now) = (l.nodes[n].max_seq, l.clock);
        l.nodes[n].born[slot(seq)] = now;
        let folios: u64 = folded.iter().map(|&(o, c, p)| self.folios(o, c, p)).sum();
        ns + folios as f64 * visit_ns
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

    /// The walk of one mapping of object `obj` (`walk_pmd_range`, `walk_pte_range`): each
    /// chunk with pages on node `n`. Returns its ns.
    fn walk_object(&mut self, n: usize, obj: usize, line_ns: f64, young_ns: f64) -> f64 {
        let mut ns = 0.0;
        for c in 0..self.objects[obj].chunks() {
            let o = &self.objects[obj];
            if o.chunk_hist(c)[n] > 0 {
                let entries = if o.is_huge(c) { 1 } else { o.chunk_len(c) };
                ns += entries.div_ceil(PTES_PER_LINE) as f64 * line_ns;
                ns += self.walk_chunk(n, obj, c, None) as f64 * young_ns;
            }
        }
        ns
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
