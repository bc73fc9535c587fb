//! Kernel threads of the kernel models (the async-scan RFC's scan workers, AutoNUMA's
//! knuma_scand and knuma_migratedN): which CPU each runs on and the CPU time it takes
//! from the threads there; and the models' tracepoint-like log.

use crate::world::World;
use serde::{Deserialize, Serialize};

/// When each CPU's kernel thread is done.
pub(crate) struct KThreads {
    /// Per CPU: when the kernel thread running there finishes, ns.
    busy_until: Vec<u64>,
}

impl KThreads {
    pub fn new(nr_cpus: usize) -> KThreads {
        KThreads {
            busy_until: vec![0; nr_cpus],
        }
    }

    /// The CPU a kernel thread on `node` runs on now: the first idle CPU of the node from
    /// `prev` on (`select_idle_sibling`) not taken by another kernel thread this tick,
    /// else `prev`. Returns it and the number of runnable threads it shares it with.
    pub fn cpu(&self, w: &World, prev: usize, node: usize) -> (usize, usize) {
        let nr = w.machine().nr_cpus();
        let busy = &self.busy_until;
        let idle = (0..nr).map(|k| (prev + k) % nr).find(|&c| {
            w.machine().cpus[c].node == node && w.sched().is_idle(c) && busy[c] <= w.now()
        });
        match idle {
            Some(c) => (c, 0),
            None => (prev, w.sched().rq(prev).len()),
        }
    }

    /// Whether the thread that last held `cpu` is still running there at `now`.
    pub fn running(&self, cpu: usize, now: u64) -> bool {
        self.busy_until[cpu] > now
    }

    /// A kernel thread holds `cpu` for `ns` from now (or from when the one before it ends).
    /// On a shared host (`core.host_cpus`) `ns` of work takes longer than `ns`.
    pub fn hold(&mut self, w: &mut World, cpu: usize, ns: f64) {
        let now = w.now();
        let until = self.busy_until[cpu].max(now) + w.host_wall(ns) as u64;
        self.busy_until[cpu] = until;
        w.hold_cpu(cpu, until);
    }

    /// A kernel thread uses `ns` of CPU time on `cpu` from now: the runnable threads there
    /// lose it (processor sharing), and it is not their CPU time; one of them stalls.
    pub fn run(&mut self, w: &mut World, cpu: usize, ns: f64) {
        self.hold(w, cpu, ns);
        let rq: Vec<usize> = w.sched().rq(cpu).iter().map(|&x| x as usize).collect();
        if rq.is_empty() {
            return;
        }
        let each = ns / rq.len() as f64;
        for &v in &rq {
            w.steal_cpu(v, each);
        }
        w.stall(ns);
    }
}

/// One tracepoint-like event.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TraceEvent {
    /// Simulated ns.
    pub t_ns: u64,
    /// `sched_move_numa`, `sched_swap_numa`, `sched_stick_numa`, `sched_skip_vma_numa`,
    /// `sched_skip_cpuset_numa`.
    pub event: String,
    /// Task (tid) and process (pid).
    pub tid: u32,
    /// Process.
    pub pid: u32,
    /// Free-form details in the tracepoint's field names.
    pub detail: String,
}

/// Trace records kept at most (the log is for inspection, not bulk analysis).
const TRACE_MAX: usize = 100_000;

/// A model's trace, kept when its `trace` tunable is on.
pub(crate) struct Trace {
    on: bool,
    pub events: Vec<TraceEvent>,
}

impl Trace {
    pub fn new(on: bool) -> Trace {
        Trace {
            on,
            events: Vec::new(),
        }
    }

    /// Record an event of a kernel thread (tid and pid 0).
    pub fn kthread(&mut self, t_ns: u64, event: &str, detail: String) {
        if self.on && self.events.len() < TRACE_MAX {
            self.events.push(TraceEvent {
                t_ns,
                event: event.to_string(),
                tid: 0,
                pid: 0,
                detail,
            });
        }
    }

    pub fn task(&mut self, t_ns: u64, event: &str, tid: usize, pid: usize, detail: String) {
        if self.on && self.events.len() < TRACE_MAX {
            self.events.push(TraceEvent {
                t_ns,
                event: event.to_string(),
                tid: tid as u32 + 1,
                pid: pid as u32 + 1,
                detail,
            });
        }
    }
}
