//! What a user-space daemon's access sensors get from the simulated kernel: samples as
//! `perf_event_open` per watched thread would give them, and soft-dirty tracking
//! (`/proc/PID/clear_refs` = 4 and the write faults that follow).
//!
//! ```text
//!   PageFaults: first touch, hinting fault, soft-dirty write fault
//!     └─► perf_fault: a count per thread, one fault in `period` ─────────┐
//!   MemAccess: a sweep (its start and length), a random phase's bytes    ├─► pending ─► perf_drain
//!     └─► perf_sweep / perf_random: a carry of 64-byte lines per thread ─┘
//! ```
//!
//! A sample carries no time, as the live sensor's samples do not (the daemon reads them at
//! its pass): they are drained in the order taken. PMU samples cost nothing (a
//! simplification: PEBS assists and the ring's interrupts are left out). Soft-dirty write protection uses the PROT_NONE
//! bits of `memory.rs`: the registry refuses the softdirty sensor beside a kernel model
//! that makes pages PROT_NONE, so a protected page means one thing in a run.

use super::*;
use crate::memory::{CHUNK, PAGE_BYTES};
use access::pattern_ranges;

/// Which event a watch samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PerfEvent {
    /// `PERF_COUNT_SW_PAGE_FAULTS`: every page fault of the thread.
    PageFaults,
    /// PEBS-like memory-access sampling: every 64-byte line the thread accesses.
    MemAccess,
}

/// One sample as perf's ring would give it: the live sensor's type (1-based `tid` and
/// `pid`: task `t` is `t + 1`; `addr` is `page_addr(region, head page)`, a THP's 2 MiB
/// head). Drained in the order taken, which is time order.
pub(crate) use numabal_daemon::RawSample;

/// Bytes of the line a memory-access sample stands for.
const LINE_BYTES: f64 = 64.0;
/// Mixed into the scenario's seed for the sampling stream, so that sampling never draws
/// from the world's own stream (a watched run behaves as an unwatched one).
const PERF_SEED: u64 = 0x7065_7266_5f73_6d70;

/// The run's sampling event and its watches.
#[derive(Debug)]
pub(crate) struct Perf {
    event: PerfEvent,
    period: u64,
    /// Per task: watched now.
    watched: Vec<bool>,
    /// Per task: faults counted toward its period (`PageFaults`).
    faults: Vec<u64>,
    /// Per task: lines accessed since its last sample (`MemAccess`).
    lines: Vec<f64>,
    pending: Vec<RawSample>,
    total: u64,
    rng: Pcg64Mcg,
}

impl Perf {
    fn watching(&self, t: usize) -> bool {
        self.watched.get(t).copied().unwrap_or(false)
    }
}

impl World<'_> {
    /// Open the run's sampling event (one per run; every watch uses it): `period` = one
    /// event in this many.
    pub(crate) fn perf_open(&mut self, event: PerfEvent, period: u64) {
        debug_assert!(self.perf.is_none(), "one sampling event per run");
        self.perf = Some(Box::new(Perf {
            event,
            period: period.max(1),
            watched: Vec::new(),
            faults: Vec::new(),
            lines: Vec::new(),
            pending: Vec::new(),
            total: 0,
            rng: Pcg64Mcg::seed_from_u64(self.sc.sim.seed ^ PERF_SEED),
        }));
    }

    /// `perf_event_open` on thread `t` (false if it has exited, or no event is open);
    /// idempotent. A new watch counts from zero, as a new event would.
    pub(crate) fn perf_watch(&mut self, t: usize) -> bool {
        let n = self.threads.len();
        if t >= n || self.threads[t].state == TState::Done {
            return false;
        }
        let Some(p) = self.perf.as_deref_mut() else {
            return false;
        };
        if p.watched.len() < n {
            p.watched.resize(n, false);
            p.faults.resize(n, 0);
            p.lines.resize(n, 0.0);
        }
        if !p.watched[t] {
            p.watched[t] = true;
            p.faults[t] = 0;
            p.lines[t] = 0.0;
        }
        true
    }

    /// Close thread `t`'s event (nothing if it had none).
    pub(crate) fn perf_unwatch(&mut self, t: usize) {
        if let Some(w) = self.perf.as_deref_mut().and_then(|p| p.watched.get_mut(t)) {
            *w = false;
        }
    }

    /// Threads watched now (exited threads no longer count).
    #[cfg(test)]
    pub(crate) fn perf_watched(&self) -> usize {
        self.perf.as_deref().map_or(0, |p| {
            (p.watched.iter().enumerate())
                .filter(|&(t, &w)| w && self.threads[t].state != TState::Done)
                .count()
        })
    }

    /// Samples taken since the last drain, in the order taken (appended to `out`).
    pub(crate) fn perf_drain(&mut self, out: &mut Vec<RawSample>) {
        if let Some(p) = self.perf.as_deref_mut() {
            out.append(&mut p.pending);
        }
    }

    /// Samples taken so far, drained or not.
    pub(crate) fn perf_samples_total(&self) -> u64 {
        self.perf.as_deref().map_or(0, |p| p.total)
    }

    /// A sample of thread `t` at the entry starting at `head` of its region `ri`.
    fn perf_sample(&mut self, t: usize, ri: usize, head: u64) {
        let task = &self.sched.tasks[t];
        let s = RawSample {
            tid: t as u32 + 1,
            pid: self.threads[t].proc as u32 + 1,
            cpu: task.cpu.unwrap_or(task.prev_cpu) as u32,
            addr: page_addr(ri, head),
        };
        let p = self.perf.as_deref_mut().expect("sampling");
        p.pending.push(s);
        p.total += 1;
    }

    /// A page fault of thread `t` at the entry starting at `head` of its region `ri`
    /// (first touch, hinting fault, soft-dirty write fault): one in `period` is sampled.
    #[inline]
    pub(crate) fn perf_fault(&mut self, t: usize, ri: usize, head: u64) {
        if self.perf.is_some() {
            self.perf_count_fault(t, ri, head);
        }
    }

    // Out of line and cold: the fault paths of an unwatched run keep only the test above.
    #[cold]
    #[inline(never)]
    fn perf_count_fault(&mut self, t: usize, ri: usize, head: u64) {
        let Some(p) = self.perf.as_deref_mut() else {
            return;
        };
        if p.event != PerfEvent::PageFaults || !p.watching(t) {
            return;
        }
        p.faults[t] += 1;
        if p.faults[t] % p.period == 0 {
            self.perf_sample(t, ri, head);
        }
    }

    /// A sweep by thread `t` accessed `bytes` of region `ri` sequentially from byte `pos`
    /// of its `slice`, wrapping at the slice's end as the sweep does: a sample at the line
    /// each time the thread's carry of lines reaches `period`. Out of line and cold, as
    /// `perf_random`: nothing of it weighs on an unwatched run's access paths.
    #[cold]
    #[inline(never)]
    pub(crate) fn perf_sweep(
        &mut self,
        t: usize,
        ri: usize,
        slice: (u64, u64),
        pos: f64,
        bytes: f64,
    ) {
        let Some(p) = self.perf.as_deref_mut() else {
            return;
        };
        if p.event != PerfEvent::MemAccess || !p.watching(t) {
            return;
        }
        let period = p.period as f64;
        let carry = p.lines[t];
        let lines = bytes / LINE_BYTES;
        let n = ((carry + lines) / period).floor() as u64;
        p.lines[t] = carry + lines - n as f64 * period;
        let (s, e) = slice;
        let slice_bytes = (e - s) as f64 * PAGE_BYTES;
        let obj = self.procs[self.threads[t].proc].regions[ri].obj;
        for j in 1..=n {
            // The j-th sample is line (j * period - carry) of this access, counted from 1.
            let off = (j as f64 * period - carry - 1.0).max(0.0) * LINE_BYTES;
            let at = (pos + off) % slice_bytes;
            let page = (s + (at / PAGE_BYTES) as u64).min(e - 1);
            let head = self.objects[obj].head(page);
            self.perf_sample(t, ri, head);
        }
    }

    /// A random-access phase of thread `t` accessed `bytes` of `slice`: the samples those
    /// lines give, each in a range of the pattern chosen by its weight, at a page drawn
    /// uniformly in it (from the sampling stream). Unpopulated pages may be sampled.
    #[cold]
    #[inline(never)]
    pub(crate) fn perf_random(&mut self, t: usize, a: &AccessRt, slice: (u64, u64), bytes: f64) {
        let Some(p) = self.perf.as_deref_mut() else {
            return;
        };
        if p.event != PerfEvent::MemAccess || !p.watching(t) {
            return;
        }
        let period = p.period as f64;
        let carry = p.lines[t] + bytes / LINE_BYTES;
        let n = (carry / period).floor() as u64;
        p.lines[t] = carry - n as f64 * period;
        if n == 0 {
            return;
        }
        let ranges: Vec<(u64, u64, f64)> = pattern_ranges(a, slice)
            .into_iter()
            .filter(|&(a0, b0, w)| b0 > a0 && w > 0.0)
            .collect();
        let weight: f64 = ranges.iter().map(|r| r.2).sum();
        if ranges.is_empty() {
            return;
        }
        let obj = self.procs[self.threads[t].proc].regions[a.region].obj;
        for _ in 0..n {
            let p = self.perf.as_deref_mut().expect("sampling");
            let mut x = p.rng.random_range(0.0..weight);
            let &(a0, b0, _) = ranges
                .iter()
                .find(|r| {
                    x -= r.2;
                    x < 0.0
                })
                .unwrap_or(ranges.last().expect("non-empty"));
            let page = p.rng.random_range(a0..b0);
            let head = self.objects[obj].head(page);
            self.perf_sample(t, a.region, head);
        }
    }
}

impl World<'_> {
    /// `/proc/PID/clear_refs` = 4 for process `pidx`: clear soft-dirty and write-protect
    /// every present entry (base page or THP) of its private and shared mappings (the
    /// protection bits are allocated on first use). Returns the entries walked (present
    /// entries), for the caller to charge the walk. From the first call on, protected
    /// pages take soft-dirty write faults instead of NUMA hinting faults: the registry is
    /// to refuse this beside a kernel model that makes pages PROT_NONE (the world cannot
    /// see the model here; the access paths report the pair as a broken invariant).
    pub(crate) fn clear_soft_dirty(&mut self, pidx: usize) -> u64 {
        self.soft_dirty = true;
        let mut walked = 0;
        for r in &self.procs[pidx].regions {
            let o = &mut self.objects[r.obj];
            o.enable_hinting();
            for c in 0..o.chunks() {
                let populated = o.chunk_populated(c);
                if populated == 0 {
                    continue;
                }
                if o.is_huge(c) {
                    o.set_prot(c * CHUNK);
                    walked += 1;
                    continue;
                }
                let len = o.chunk_len(c);
                for page in c * CHUNK..c * CHUNK + len {
                    if populated == len || o.node_of(page).is_some() {
                        o.set_prot(page);
                        walked += 1;
                    }
                }
            }
        }
        walked
    }

    /// Soft-dirty write faults taken so far (all processes).
    pub(crate) fn soft_dirty_faults(&self) -> u64 {
        self.soft_dirty_faults
    }

    /// A write by thread `t` to a write-protected entry at `page` of its region `ri` after
    /// `clear_refs`: the entry is made writable (and soft-dirty) again. It costs what a
    /// hinting fault without migration costs (a minor protection fault either way); the
    /// caller charges it. It is no NUMA hinting fault: no kernel NUMA counter moves.
    /// `kernel_hints`: the kernel model makes pages PROT_NONE too, which must not be.
    #[cold]
    #[inline(never)]
    fn soft_dirty_fault(
        &mut self,
        kernel_hints: bool,
        t: usize,
        ri: usize,
        page: u64,
    ) -> Result<f64, SimError> {
        if kernel_hints {
            return Err(SimError::Invariant(
                "soft-dirty tracking beside a kernel model that makes pages PROT_NONE: \
                 both would share one protection bit"
                    .into(),
            ));
        }
        let obj = self.procs[self.threads[t].proc].regions[ri].obj;
        let o = &mut self.objects[obj];
        let head = o.head(page);
        if !o.is_prot(head) {
            return Ok(0.0);
        }
        o.clear_prot(head);
        self.soft_dirty_faults += 1;
        self.perf_fault(t, ri, head);
        Ok(self.machine.spec.costs.hint_fault_ns)
    }

    /// An access by thread `t` on `cpu` to a protected entry at `page` of its region `ri`:
    /// a soft-dirty write fault once `clear_refs` was used, else a NUMA hinting fault to
    /// the kernel model. Returns its cost to the thread, ns.
    #[inline]
    pub(crate) fn protection_fault(
        &mut self,
        ag: &mut Agents<'_>,
        t: usize,
        cpu: usize,
        ri: usize,
        page: u64,
    ) -> Result<f64, SimError> {
        if !self.soft_dirty {
            return Ok(ag.kernel.hinting_fault(self, t, cpu, ri, page));
        }
        self.soft_dirty_fault(ag.kernel.hinting(), t, ri, page)
    }
}

#[cfg(test)]
mod tests;
