//! How far a run is, for progress bars: the share of the workload's work done, each phase
//! weighted by its nominal duration. Read-only: nothing here changes the run.
//!
//! ```text
//!  nominal duration of a phase (one thread)
//!    access by seconds, compute, sleep   its seconds
//!    access by passes or bytes           bytes x uncontended local ns/byte
//!    spawn, join, barrier                0
//!  done  = Σ threads: whole iterations + finished phases + the current phase's part
//!  total = Σ non-background [[process]] instances x groups x threads x iterations x phases
//!  share = max(done / total, now / sim.max_time_s)
//! ```
//!
//! Simplification: the nominal rate is the uncontended local one (no remote memory, no
//! controller queueing, no SMT sharing), so a phase's weight is its duration on an idle
//! machine with its memory local. The share is a fraction of the work, not of the time: a
//! run whose placement is poor takes longer at the same share, which the ETA, taken from
//! the rate the share grows at, absorbs. Group start delays and staggers carry no weight.

use super::Sim;
use crate::memory::PAGE_BYTES;
use crate::world::{Amount, NS, PhaseRt, TState};
use numabal_model::workload::{AccessPhase, PhaseSpec, Slice, thread_slice};

/// What a progress report says: simulated time and the share of the run done.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunProgress {
    /// Simulated time, s.
    pub t_s: f64,
    /// Share of the run done, 0 to 1 (see the module notes).
    pub done: f64,
}

/// The uncontended local cost of one byte of an access phase, ns: the core's streaming
/// cost, the phase's own work, and the memory latency spread over the lines in flight.
fn nominal_ns_per_byte(sim: &Sim<'_>, ns_per_byte: f64, mlp: Option<f64>, cache_hit: f64) -> f64 {
    let core = &sim.world.machine().spec.core;
    let mem = &sim.world.machine().spec.memory;
    let lines = mlp
        .unwrap_or(core.outstanding_lines_per_thread)
        .min(core.outstanding_lines_per_core)
        .max(1e-9);
    let latency = (1.0 - cache_hit) * mem.local_latency_ns + cache_hit * mem.llc_latency_ns;
    core.stream_ns_per_byte + ns_per_byte + latency / (lines * 64.0)
}

/// Bytes of a slice: the whole region, or thread `i` of `n`'s part.
fn slice_bytes(pages: u64, slice: Slice, i: u64, n: u64) -> f64 {
    let (a, b) = match slice {
        Slice::All => (0, pages),
        Slice::Thread => thread_slice(pages, i, n),
    };
    (b - a) as f64 * PAGE_BYTES
}

/// Nominal ns of an access phase from the workload file, for thread `i` of `n`.
fn access_spec_ns(sim: &Sim<'_>, a: &AccessPhase, pages: u64, i: u64, n: u64) -> f64 {
    let per_byte = || nominal_ns_per_byte(sim, a.ns_per_byte, a.mlp, a.cache_hit);
    match (a.passes, a.bytes, a.seconds) {
        (_, Some(b), _) => b.0 as f64 * per_byte(),
        (_, _, Some(s)) => s * NS,
        (p, _, _) => p.unwrap_or(1.0) * slice_bytes(pages, a.slice, i, n) * per_byte(),
    }
}

impl Sim<'_> {
    /// The nominal duration of the whole workload, ns (computed once, at the start).
    pub(super) fn nominal_total_ns(&self) -> f64 {
        let spec = &self.world.scenario().workload.spec;
        let mut total = 0.0;
        for (pi, p) in spec.processes.iter().enumerate().filter(|(_, p)| !p.daemon) {
            let pages = |region: &str| -> u64 {
                let r = p.regions.iter().find(|r| r.name == region);
                match r.and_then(|r| r.shared.as_ref()) {
                    Some(s) => spec
                        .shared
                        .iter()
                        .find(|x| &x.name == s)
                        .map_or(0, |x| x.size.pages()),
                    None => r.and_then(|r| r.size).map_or(0, |s| s.pages()),
                }
            };
            let mut instance = 0.0;
            for (gi, g) in p.groups.iter().enumerate() {
                let n = self.world.scenario().workload.threads[pi][gi] as u64;
                for i in 0..n {
                    let one: f64 = g
                        .phases
                        .iter()
                        .map(|ph| match ph {
                            PhaseSpec::Access(a) => access_spec_ns(self, a, pages(&a.region), i, n),
                            PhaseSpec::Compute(c) => c.seconds * NS,
                            PhaseSpec::Sleep(s) => s.seconds * NS,
                            _ => 0.0,
                        })
                        .sum();
                    instance += one * g.iterations as f64;
                }
            }
            total += instance * p.instances as f64;
        }
        total
    }

    /// Nominal ns of phase `k` of thread `t` (as the workload file gives it: no jitter).
    fn phase_ns(&self, t: usize, k: usize) -> f64 {
        let th = &self.world.thread(t);
        let p = &self.world.proc(th.proc);
        let g = &p.groups[th.group];
        match &g.phases[k] {
            PhaseRt::Access(a) => match a.amount {
                Amount::Seconds(s) => s * NS,
                Amount::Bytes(b) => {
                    let bytes = match a.passes {
                        None => b,
                        Some(passes) => {
                            let (first, end) = p.regions[a.region].data;
                            let pages = end - first;
                            let n = g.nthreads as u64;
                            passes * slice_bytes(pages, a.slice, th.index as u64, n)
                        }
                    };
                    bytes * nominal_ns_per_byte(self, a.ns_per_byte, a.mlp, a.cache_hit)
                }
            },
            PhaseRt::Compute(ns, _) | PhaseRt::Sleep(ns, _) => *ns,
            _ => 0.0,
        }
    }

    /// Nominal ns thread `t` has done.
    fn thread_done_ns(&self, t: usize) -> f64 {
        let th = &self.world.thread(t);
        let g = &self.world.proc(th.proc).groups[th.group];
        let per_iteration: f64 = (0..g.phases.len()).map(|k| self.phase_ns(t, k)).sum();
        if th.state == TState::Done {
            return per_iteration * g.iterations as f64;
        }
        let before: f64 = (0..th.phase.min(g.phases.len()))
            .map(|k| self.phase_ns(t, k))
            .sum();
        let current = match g.phases.get(th.phase) {
            Some(ph) if th.prog.started => {
                let full = self.phase_ns(t, th.phase);
                let part = match ph {
                    PhaseRt::Access(_) if th.prog.timed => {
                        full - th.prog.until_ns.saturating_sub(self.world.now()) as f64
                    }
                    PhaseRt::Access(a) => {
                        let bytes = match (a.passes, &a.amount) {
                            (None, Amount::Bytes(b)) => *b,
                            _ => {
                                let (s0, s1) = th.prog.slice;
                                a.passes.unwrap_or(1.0) * (s1 - s0) as f64 * PAGE_BYTES
                            }
                        };
                        full * (1.0 - th.prog.left / bytes.max(1.0))
                    }
                    PhaseRt::Compute(ns, _) => full * (1.0 - th.prog.left / ns.max(1.0)),
                    _ => 0.0,
                };
                part.clamp(0.0, full)
            }
            _ => 0.0,
        };
        per_iteration * th.iter as f64 + before + current
    }

    /// Where the run is: simulated time and the share done.
    pub(super) fn run_progress(&self) -> RunProgress {
        let done: f64 = (0..self.world.nr_threads())
            .filter(|&t| !self.world.proc(self.world.thread(t).proc).daemon)
            .map(|t| self.thread_done_ns(t))
            .sum();
        let by_work = if self.nominal_total_ns > 0.0 {
            done / self.nominal_total_ns
        } else {
            0.0
        };
        let by_time = self.world.now() as f64 / (self.world.scenario().sim.max_time_s * NS);
        RunProgress {
            t_s: self.world.now() as f64 / NS,
            done: by_work.max(by_time).clamp(0.0, 1.0),
        }
    }
}
