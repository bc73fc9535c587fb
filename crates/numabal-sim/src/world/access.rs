//! Memory accesses of a running thread: sequential sweeps and random patterns, their
//! first touches, NUMA hinting faults and soft-dirty write faults, and what a watching
//! daemon samples of them (`perf.rs`).

use super::*;
use crate::memory::{CHUNK, PAGE_BYTES};
use smallvec::{SmallVec, smallvec};

/// Per-node values of one step, on the stack up to 8 nodes (a step allocating them made
/// malloc a tenth of a run's time; more inline room costs its copying on small machines).
pub(crate) type PerNode<T> = SmallVec<[T; 8]>;
/// The ranges an access pattern touches: one or two inline, Zipf's dozens on the heap.
pub(crate) type Ranges = SmallVec<[(u64, u64, f64); 2]>;

impl World<'_> {
    /// Sequential sweep. Returns (CPU ns used, bytes accessed, phase done).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn sweep(
        &mut self,
        ag: &mut Agents<'_>,
        t: usize,
        node: usize,
        a: &AccessRt,
        budget: f64,
        tau: &[f64],
        slot: Slot,
    ) -> Result<(f64, f64, bool), SimError> {
        let (slice, pos) = (self.threads[t].prog.slice, self.threads[t].prog.pos);
        let r = self.sweep_walk(ag, t, node, a, budget, tau, slot)?;
        if r.0 > 0.0 {
            self.threads[t].prog.access_rate = r.1 / r.0;
        }
        // A sweep's lines are known from where it started and how far it went: sampled
        // here, not in the walk's loop, which stays as it is when nothing is watched.
        if self.perf.is_some() {
            self.perf_sweep(t, a.region, slice, pos, r.1);
        }
        if self.damon.is_some() {
            self.damon_sweep(t, a.region, slice, pos, r.1);
        }
        Ok(r)
    }

    #[allow(clippy::too_many_arguments)]
    fn sweep_walk(
        &mut self,
        ag: &mut Agents<'_>,
        t: usize,
        node: usize,
        a: &AccessRt,
        budget: f64,
        tau: &[f64],
        slot: Slot,
    ) -> Result<(f64, f64, bool), SimError> {
        let (s, e) = self.threads[t].prog.slice;
        let slice_bytes = (e - s) as f64 * PAGE_BYTES;
        let obj = self.procs[self.threads[t].proc].regions[a.region].obj;
        let mut used = 0.0;
        let mut bytes_done = 0.0;
        let mut steps = 0u64;
        // Soft-dirty protection is no fault for a phase that never writes.
        let prot_faults = !self.soft_dirty || a.write > 0.0;
        loop {
            steps += 1;
            if steps > MAX_STEPS {
                return Err(SimError::Invariant(format!(
                    "thread {t}: sweep makes no progress"
                )));
            }
            let th = &self.threads[t];
            let until = th.prog.until_ns;
            let seconds_mode = th.prog.timed;
            if seconds_mode && slot.wall(slot.total - budget + used) >= until {
                return Ok((used, bytes_done, true));
            }
            if !seconds_mode && th.prog.left <= EPS_BYTES {
                return Ok((used, bytes_done, true));
            }
            if used >= budget {
                return Ok((used, bytes_done, false));
            }
            if self.threads[t].debt_ns > 0.0 {
                // A first touch in the middle of the sweep: pay it before going on.
                let pay = self.threads[t].debt_ns.min(budget - used);
                self.threads[t].debt_ns -= pay;
                used += pay;
                continue;
            }
            let pos = self.threads[t].prog.pos;
            let page = s + (pos / PAGE_BYTES) as u64;
            let chunk_end = ((page / CHUNK + 1) * CHUNK).min(e);
            let o = &self.objects[obj];
            let c = page / CHUNK;
            let full = o.chunk_populated(c) == o.chunk_len(c);
            if !full && o.node_of(page).is_none() {
                let cost = self.first_touch(t, a.region, page, node, a.mempolicy.as_ref())?;
                self.charge_kernel(t, cost);
                continue;
            }
            // Range [page, range_end) with known nodes.
            let mut range_end = if full {
                chunk_end
            } else {
                let mut p = page + 1;
                while p < chunk_end && o.node_of(p).is_some() {
                    p += 1;
                }
                p
            };
            // NUMA hinting: the first access to a PROT_NONE page faults; stop the range
            // before the next protected page.
            if o.chunk_prot(c) > 0 && prot_faults {
                let fault_now = if o.is_huge(c) {
                    o.is_prot(c * CHUNK)
                } else {
                    match o.next_prot(page, range_end) {
                        Some(q) if q == page => true,
                        Some(q) => {
                            range_end = q;
                            false
                        }
                        None => false,
                    }
                };
                if fault_now {
                    let cpu = self.sched.tasks[t].cpu.unwrap_or(0);
                    let cost = self.protection_fault(ag, t, cpu, a.region, page)?;
                    self.charge_kernel(t, cost);
                    continue;
                }
            }
            // Pages of this range per node, nodes without any left out (they add +0.0 to
            // the sums below, which changes no bits).
            let counts = self.range_counts(obj, page, range_end);
            let offset_in_page = pos - ((page - s) as f64 * PAGE_BYTES);
            let range_bytes = (range_end - page) as f64 * PAGE_BYTES - offset_in_page;
            let npages = (range_end - page) as f64;
            // Bytes of this range per node (the first page is partly done).
            let time: f64 = counts
                .iter()
                .map(|&(n, c)| c as f64 / npages * range_bytes * tau[n])
                .sum();
            let left = self.threads[t].prog.left;
            let room = budget - used;
            let mut frac = 1.0f64;
            if range_bytes > left {
                frac = left / range_bytes;
            }
            if time * frac > room {
                frac = room / time;
            }
            let take = range_bytes * frac;
            for &(n, c) in &counts {
                self.account(t, node, n, c as f64 / npages * take);
            }
            used += time * frac;
            bytes_done += take;
            self.user_ns += time * frac;
            if take > 0.0 {
                self.lru_gen_swept(obj, c, slot.wall(slot.total - budget + used));
            }
            let th = &mut self.threads[t];
            th.prog.pos += take;
            if !th.prog.timed {
                th.prog.left -= take;
            }
            if th.prog.pos >= slice_bytes - EPS_BYTES {
                th.prog.pos = 0.0;
            }
            if frac < 1.0 && th.prog.left > EPS_BYTES && used >= budget - 1e-9 {
                return Ok((budget, bytes_done, false));
            }
        }
    }

    /// (node, pages) of the populated range `[a, b)` of object `obj`, nodes in order and
    /// only those holding some: one page or a chunk on one node without a pass over the
    /// nodes (a first-touch sweep takes one step per page).
    fn range_counts(&mut self, obj: usize, a: u64, b: u64) -> PerNode<(usize, u64)> {
        let o = &self.objects[obj];
        if let Some(n) = o.single_node(a, b) {
            return smallvec![(n, b - a)];
        }
        let mut h = std::mem::take(&mut self.scratch_hist);
        h.iter_mut().for_each(|x| *x = 0);
        o.range_hist(a, b, &mut h);
        let counts = (h.iter().enumerate())
            .filter(|&(_, &c)| c > 0)
            .map(|(n, &c)| (n, c))
            .collect();
        self.scratch_hist = h;
        counts
    }

    /// Uniform / hot / zipf access. Returns (CPU ns used, bytes accessed, phase done).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn random_access(
        &mut self,
        ag: &mut Agents<'_>,
        t: usize,
        node: usize,
        a: &AccessRt,
        budget: f64,
        tau: &[f64],
        slot: Slot,
    ) -> Result<(f64, f64, bool), SimError> {
        let slice = self.threads[t].prog.slice;
        let obj = self.procs[self.threads[t].proc].regions[a.region].obj;
        let nn = self.machine.nr_nodes();
        let mut mix: PerNode<f64> = smallvec![0.0; nn];
        let (unpop_w, populated) = self.random_mix(obj, a.pattern, a, slice, &mut mix);
        // Timing assumes accesses to untouched pages are local (they are first-touched now,
        // usually on this node); where they really went is accounted below.
        let per_byte =
            (mix.iter().zip(tau).map(|(f, t)| f * t).sum::<f64>() + unpop_w * tau[node]).max(1e-12);
        let th = &self.threads[t];
        let now_wall = slot.wall(slot.total - budget);
        let mut room = budget;
        let mut done = false;
        if th.prog.timed {
            let wall_left = th.prog.until_ns.saturating_sub(now_wall) as f64 * slot.share;
            if wall_left <= room {
                room = wall_left;
                done = true;
            }
        }
        let mut bytes = room / per_byte;
        if !th.prog.timed && bytes >= th.prog.left - EPS_BYTES {
            bytes = th.prog.left;
            room = bytes * per_byte;
            done = true;
        }
        // First touches: the expected number of untouched pages hit by bytes/64 accesses,
        // populated in address order (hot pages first for zipf/hot).
        let mut placed: PerNode<u64> = smallvec![0; nn];
        let unpop_pages = (slice.1 - slice.0) - populated;
        if unpop_pages > 0 && unpop_w > 0.0 {
            let lines = bytes / 64.0;
            let u = unpop_pages as f64;
            let expect = u * (1.0 - (-lines * unpop_w / u).exp());
            let th = &mut self.threads[t];
            th.prog.pop_carry += expect;
            let mut n_new = th.prog.pop_carry.floor() as u64;
            th.prog.pop_carry -= n_new as f64;
            while n_new > 0 {
                let cur = self.threads[t].prog.pop_cursor;
                let Some(p) = self.objects[obj].next_unpopulated(cur, slice.1) else {
                    break;
                };
                let cost = self.first_touch(t, a.region, p, node, a.mempolicy.as_ref())?;
                self.charge_kernel(t, cost);
                self.threads[t].prog.pop_cursor = p + 1;
                let o = &self.objects[obj];
                let pages = if o.is_huge(p / CHUNK) {
                    o.chunk_len(p / CHUNK)
                } else {
                    1
                };
                if let Some(n) = o.node_of(p) {
                    placed[n] += pages;
                }
                n_new = n_new.saturating_sub(pages);
            }
        }
        if (ag.kernel.hinting() || self.soft_dirty)
            && self.objects[obj].prot_in(slice.0, slice.1) > 0
        {
            self.random_hint_faults(ag, t, a, slice, bytes)?;
        }
        if self.perf.is_some() {
            self.perf_random(t, a, slice, bytes);
        }
        if self.damon.is_some() {
            self.damon_random(t, a, slice, bytes);
        }
        for (n, &f) in mix.iter().enumerate() {
            if f > 0.0 {
                self.account(t, node, n, bytes * f);
            }
        }
        // Accesses to untouched pages went where those pages were just placed.
        let placed_total: u64 = placed.iter().sum();
        if unpop_w > 0.0 {
            if placed_total == 0 {
                self.account(t, node, node, bytes * unpop_w);
            } else {
                for (n, &p) in placed.iter().enumerate() {
                    if p > 0 {
                        self.account(t, node, n, bytes * unpop_w * p as f64 / placed_total as f64);
                    }
                }
            }
        }
        self.user_ns += room;
        let th = &mut self.threads[t];
        if !th.prog.timed {
            th.prog.left -= bytes;
        }
        if room > 0.0 {
            th.prog.access_rate = bytes / room;
        }
        Ok((room, bytes, done))
    }

    /// Threads blocked in joins or barriers with nothing left that could wake them (no
    /// runnable or sleeping thread, no process or group still to start) never finish:
    /// report it instead of ticking until `max_time_s`.
    /// Hinting faults of a random-access phase that touched `bytes` in `slice` during the
    /// interval: per range of the pattern, each protected entry is touched with
    /// probability `1 - exp(-lines * weight / pages)` (per 4 KiB page, or per THP); the
    /// expected number of them fault, taken from a random point of the range onwards.
    /// Which of the equally likely pages fault does not matter beyond their node and
    /// `last_cpupid`, which the walk reads from the pages themselves. Soft-dirty write
    /// faults alike, counting only the lines written.
    pub(crate) fn random_hint_faults(
        &mut self,
        ag: &mut Agents<'_>,
        t: usize,
        a: &AccessRt,
        slice: (u64, u64),
        bytes: f64,
    ) -> Result<(), SimError> {
        use rand::RngExt;
        let Some(cpu) = self.sched.tasks[t].cpu else {
            return Ok(());
        };
        let obj = self.procs[self.threads[t].proc].regions[a.region].obj;
        let lines = if self.soft_dirty {
            bytes / 64.0 * a.write
        } else {
            bytes / 64.0
        };
        let per_entry = if self.objects[obj].thp {
            CHUNK as f64
        } else {
            1.0
        };
        for (a0, b0, w) in pattern_ranges(a, slice) {
            let prot = self.objects[obj].prot_in(a0, b0);
            if prot == 0 || w <= 0.0 || b0 <= a0 {
                continue;
            }
            let n = (b0 - a0) as f64;
            let expect = prot as f64 * (1.0 - (-lines * w * per_entry / n).exp());
            let th = &mut self.threads[t];
            th.prog.fault_carry += expect;
            let mut k = th.prog.fault_carry.floor() as u64;
            th.prog.fault_carry -= k as f64;
            if k == 0 {
                continue;
            }
            let mut p = self.rng.random_range(a0..b0);
            let mut wrapped = false;
            while k > 0 {
                let next = self.objects[obj].next_prot(p, b0);
                let q = match next {
                    Some(q) => q,
                    None if !wrapped => {
                        wrapped = true;
                        p = a0;
                        continue;
                    }
                    None => break,
                };
                let cost = self.protection_fault(ag, t, cpu, a.region, q)?;
                self.charge_kernel(t, cost);
                k -= 1;
                p = q + 1;
                if p >= b0 {
                    if wrapped {
                        break;
                    }
                    wrapped = true;
                    p = a0;
                }
            }
        }
        Ok(())
    }
}

impl World<'_> {
    pub(crate) fn slice_of(&self, t: usize, a: &AccessRt) -> (u64, u64) {
        let th = &self.threads[t];
        let (first, end) = self.procs[th.proc].regions[a.region].data;
        match a.slice {
            Slice::All => (first, end),
            Slice::Thread => {
                let n = self.procs[th.proc].groups[th.group].nthreads as u64;
                let (a, b) = thread_slice(end - first, th.index as u64, n);
                (first + a, first + b)
            }
        }
    }

    /// Weighted node mix of the pages `pattern` touches in `slice` (`a` gives the pattern's
    /// parameters), the weight of its not-yet-populated part, and the number of populated
    /// pages in the slice. Zipf is approximated by one bucket per power of two of the page rank, weighted
    /// by the integral of `(x+1)^-s` over the bucket.
    pub(crate) fn random_mix(
        &self,
        obj: usize,
        pattern: Pattern,
        a: &AccessRt,
        slice: (u64, u64),
        mix: &mut [f64],
    ) -> (f64, u64) {
        let o = &self.objects[obj];
        let mut h: PerNode<u64> = smallvec![0; mix.len()];
        // Weight given to non-empty ranges, to normalise by (a hot part covering the whole
        // slice leaves the cold weight unused).
        let mut weight = 0.0;
        let mut populated = 0u64;
        let mut add = |a0: u64, b0: u64, w: f64, mix: &mut [f64]| -> f64 {
            if b0 <= a0 {
                return 0.0;
            }
            // A range on one node adds to that node's share only (the others would add
            // +0.0, which changes nothing).
            let single = o.single_node(a0, b0);
            let pop: u64 = if single.is_some() {
                b0 - a0
            } else {
                h.iter_mut().for_each(|x| *x = 0);
                o.range_hist(a0, b0, &mut h);
                h.iter().sum()
            };
            // Counted for the whole slice, weighted or not.
            populated += pop;
            if w <= 0.0 {
                return 0.0;
            }
            weight += w;
            let n = (b0 - a0) as f64;
            if let Some(i) = single {
                mix[i] += w * pop as f64 / n;
            } else {
                for (i, &x) in h.iter().enumerate() {
                    mix[i] += w * x as f64 / n;
                }
            }
            w * (n - pop as f64) / n
        };
        mix.iter_mut().for_each(|x| *x = 0.0);
        let mut unpop = 0.0;
        for (a0, b0, w) in pattern_ranges_of(pattern, a, slice) {
            unpop += add(a0, b0, w, mix);
        }
        if weight > 0.0 && weight != 1.0 {
            mix.iter_mut().for_each(|x| *x /= weight);
            return (unpop / weight, populated);
        }
        (unpop, populated)
    }

    pub(crate) fn account(&mut self, t: usize, cpu_node: usize, mem_node: usize, bytes: f64) {
        let pidx = self.threads[t].proc;
        self.series.access(cpu_node, cpu_node == mem_node, bytes);
        if cpu_node == mem_node {
            self.local_bytes += bytes;
            self.procs[pidx].bytes_local += bytes;
        } else {
            self.remote_bytes += bytes;
            self.procs[pidx].bytes_remote += bytes;
        }
    }
}

/// The ranges of `slice` an access pattern touches, each with its share of the accesses.
/// Zipf is approximated by one range per power of two of the page rank, weighted by the
/// integral of `(x+1)^-s` over it.
pub(crate) fn pattern_ranges_of(pattern: Pattern, a: &AccessRt, slice: (u64, u64)) -> Ranges {
    let (s, e) = slice;
    let len = (e - s).max(1);
    match pattern {
        Pattern::Uniform | Pattern::Sweep => smallvec![(s, e, 1.0)],
        Pattern::Hot => {
            let hot = ((len as f64 * a.hot_fraction).ceil() as u64).clamp(1, len);
            smallvec![(s, s + hot, a.hot_weight), (s + hot, e, 1.0 - a.hot_weight)]
        }
        Pattern::Gauss => gauss_ranges(slice, a.gauss_sigma),
        Pattern::Zipf => {
            // Range k covers ranks [2^k - 1, 2^(k+1) - 1); weight ∝ sum of 1/(r+1)^s.
            let sexp = a.zipf_s;
            let mut bounds = vec![0u64];
            while *bounds.last().expect("non-empty") < len {
                let b = *bounds.last().expect("non-empty");
                bounds.push(((b + 1) * 2 - 1).min(len));
            }
            let wsum = |lo: u64, hi: u64| -> f64 {
                // ∫ (x+1)^-s dx from lo to hi, a smooth stand-in for the sum.
                let f = |x: f64| {
                    if (sexp - 1.0).abs() < 1e-9 {
                        (x + 1.0).ln()
                    } else {
                        (x + 1.0).powf(1.0 - sexp) / (1.0 - sexp)
                    }
                };
                f(hi as f64) - f(lo as f64)
            };
            let total = wsum(0, len);
            bounds
                .windows(2)
                .map(|w| (s + w[0], s + w[1], wsum(w[0], w[1]) / total))
                .collect()
        }
    }
}

/// Gauss: ranges a quarter of a standard deviation wide out to four of them each side of
/// the middle, the rest of the slice as the two tails, each weighted by the normal
/// distribution's mass over it, renormalised to the slice.
fn gauss_ranges(slice: (u64, u64), sigma_frac: f64) -> Ranges {
    let (s, e) = slice;
    let len = (e - s).max(1) as f64;
    let mid = len / 2.0;
    let sigma = (sigma_frac * len).max(1.0);
    let cdf = |x: f64| 0.5 * (1.0 + erf((x - mid) / (sigma * std::f64::consts::SQRT_2)));
    let mut bounds: Vec<u64> = vec![0];
    for k in -16i32..=16 {
        let b = (mid + k as f64 * sigma / 4.0).round();
        if b > 0.0 && b < len {
            bounds.push(b as u64);
        }
    }
    bounds.push(e - s);
    bounds.dedup();
    let total = cdf(len) - cdf(0.0);
    bounds
        .windows(2)
        .filter(|w| w[1] > w[0])
        .map(|w| {
            let m = (cdf(w[1] as f64) - cdf(w[0] as f64)) / total;
            (s + w[0], s + w[1], m)
        })
        .collect()
}

/// The error function (Abramowitz and Stegun 7.1.26, absolute error below 1.5e-7).
fn erf(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let y = 1.0 - poly * (-x * x).exp();
    if x < 0.0 { -y } else { y }
}

/// The ranges a random-access phase touches (its own pattern).
pub(crate) fn pattern_ranges(a: &AccessRt, slice: (u64, u64)) -> Ranges {
    pattern_ranges_of(a.pattern, a, slice)
}
