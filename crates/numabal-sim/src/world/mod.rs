//! The world a simulation acts on: processes, threads, memory objects and their pages,
//! node capacities and watermarks, the scheduler, the cost model, metrics, the clock and
//! the random source. Kernel models and user-space policies change it only through its
//! methods.

use crate::cost::CostModel;
use crate::event::EventQueue;
use crate::memory::MemObject;
use crate::result::{Metrics, StallHistogram};
use crate::sched::{NR_CAUSES, Sched};
use numabal_model::scenario::Thp;
use numabal_model::workload::{Pattern, Placement, Slice};
use numabal_model::{Machine, Mask, MemPolicy, Scenario};
use rand_pcg::Pcg64Mcg;
pub(crate) const NS: f64 = 1e9;
pub(crate) const STALL_NS: f64 = 1e6;
/// Remainders of an access phase below this many bytes count as done: floating-point
/// subtraction must not leave a thread spinning on a denormal remainder.
pub(crate) const EPS_BYTES: f64 = 1e-3;
/// A phase loop that iterates this often without finishing is a simulator bug.
pub(crate) const MAX_STEPS: u64 = 50_000_000;

#[derive(Debug, Clone)]
pub(crate) struct Region {
    pub(crate) obj: usize,
    pub(crate) pages: u64,
    pub(crate) wl_policy: Option<MemPolicy>,
    /// `mbind` ranges set by the policy: (first, end, policy).
    pub(crate) ranges: Vec<(u64, u64, MemPolicy)>,
    /// A read-only file mapping (NUMA scanning skips it: `shared_ro`).
    pub(crate) file_ro: bool,
    /// A `VM_SHARED` mapping (shm).
    pub(crate) vm_shared: bool,
}

#[derive(Debug, Clone)]
pub(crate) enum Amount {
    Bytes(f64),
    Seconds(f64),
}

#[derive(Debug, Clone)]
pub(crate) struct AccessRt {
    pub(crate) region: usize,
    pub(crate) slice: Slice,
    pub(crate) pattern: Pattern,
    pub(crate) amount: Amount,
    pub(crate) passes: Option<f64>,
    pub(crate) ns_per_byte: f64,
    pub(crate) mlp: Option<f64>,
    pub(crate) cache_hit: f64,
    pub(crate) zipf_s: f64,
    pub(crate) hot_fraction: f64,
    pub(crate) hot_weight: f64,
    pub(crate) mempolicy: Option<MemPolicy>,
}

#[derive(Debug, Clone)]
pub(crate) enum PhaseRt {
    Access(AccessRt),
    /// ns, jitter.
    Compute(f64, f64),
    /// ns, jitter.
    Sleep(f64, f64),
    Spawn(usize),
    Join(usize),
    Barrier,
}

#[derive(Debug, Clone)]
pub(crate) struct GroupRt {
    pub(crate) name: String,
    pub(crate) nthreads: u32,
    pub(crate) placement: Placement,
    pub(crate) phases: Vec<PhaseRt>,
    pub(crate) iterations: u64,
    /// Work units per completed pass over the phases (per thread).
    pub(crate) work_per_iteration: f64,
    pub(crate) affinity: Option<Mask>,
    pub(crate) spawned: bool,
    pub(crate) start_s: f64,
    /// Seconds between the starts of consecutive threads (0: together).
    pub(crate) stagger_s: f64,
    pub(crate) threads: Vec<usize>,
    pub(crate) done: u32,
    /// Threads waiting in a join on this group, with the time each started waiting.
    pub(crate) joiners: Vec<(usize, u64)>,
    /// Threads at this group's barrier, with their arrival times.
    pub(crate) barrier_waiting: Vec<(usize, u64)>,
}

#[derive(Debug, Clone)]
pub(crate) struct Proc {
    /// A background process: not waited for, not in the runtime or migration counts.
    pub(crate) daemon: bool,
    pub(crate) name: String,
    /// Its `[[process]]` index.
    pub(crate) spec: usize,
    pub(crate) instance: u32,
    pub(crate) regions: Vec<Region>,
    pub(crate) groups: Vec<GroupRt>,
    pub(crate) cpuset_cpus: Mask,
    pub(crate) cpuset_mems: Mask,
    pub(crate) affinity: Option<Mask>,
    pub(crate) wl_policy: Option<MemPolicy>,
    pub(crate) policy_proc: Option<MemPolicy>,
    pub(crate) home_cpu: usize,
    pub(crate) start_ns: u64,
    pub(crate) end_ns: Option<u64>,
    pub(crate) threads: u32,
    pub(crate) live: u32,
    pub(crate) node_mb_end: Option<Vec<f64>>,
    pub(crate) bytes_local: f64,
    pub(crate) bytes_remote: f64,
    /// Work units completed (`work_per_iteration`).
    pub(crate) work_units: f64,
    /// ... of which after `sim.warmup_s`.
    pub(crate) work_units_warm: f64,
    /// CPU mask a policy set on its threads while it ran (`sched_setaffinity` by a daemon):
    /// threads it creates later inherit it.
    pub(crate) inherited_affinity: Option<Mask>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TState {
    Runnable,
    Sleeping,
    Blocked,
    Done,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Prog {
    pub(crate) started: bool,
    /// Sweep position within the slice, bytes.
    pub(crate) pos: f64,
    /// Bytes left (access by amount), or ns of CPU left (compute).
    pub(crate) left: f64,
    /// Wall-clock end (access by seconds).
    pub(crate) until_ns: u64,
    /// The phase runs for a wall-clock duration (`seconds`) rather than an amount.
    pub(crate) timed: bool,
    /// Next page a random pattern first-touches (address order).
    pub(crate) pop_cursor: u64,
    pub(crate) pop_carry: f64,
    /// Fractional hinting faults carried to the next interval (random patterns).
    pub(crate) fault_carry: f64,
    pub(crate) slice: (u64, u64),
}

#[derive(Debug, Clone)]
pub(crate) struct Thread {
    pub(crate) proc: usize,
    pub(crate) group: usize,
    pub(crate) index: u32,
    pub(crate) state: TState,
    pub(crate) phase: usize,
    pub(crate) iter: u64,
    pub(crate) prog: Prog,
    pub(crate) policy_thread: Option<MemPolicy>,
    pub(crate) il_next: usize,
    pub(crate) end_ns: Option<u64>,
    pub(crate) debt_ns: f64,
    /// Bytes accessed in the last interval (sizes the look-ahead of the mix estimate).
    pub(crate) window_bytes: f64,
    /// CPU time the thread has run (`se.sum_exec_runtime`), ns.
    pub(crate) sum_exec_ns: f64,
}

/// Something that happens to a thread inside the current interval, after the pass over the
/// threads that were running at its start.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Late {
    pub(crate) t: usize,
    pub(crate) at: u64,
    /// The thread is waiting until `at` and must be woken first; otherwise it is runnable
    /// since `at`.
    pub(crate) wake: bool,
}

/// A thread's run within the current interval: it started at `t0` holding `share` of its
/// CPU, with `total` ns of CPU time to spend.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slot {
    pub(crate) t0: u64,
    pub(crate) share: f64,
    pub(crate) total: f64,
}

impl Slot {
    /// Wall-clock time after `used` ns of the slot's CPU time.
    pub(crate) fn wall(&self, used: f64) -> u64 {
        self.t0 + (used / self.share) as u64
    }
}

/// A hinting fault's page: the faulting thread's process, the mapping object, the entry's
/// first page, node and base pages, and the faulting CPU's node.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HintAt {
    pub(crate) pidx: usize,
    pub(crate) obj: usize,
    pub(crate) head: u64,
    pub(crate) nid: usize,
    pub(crate) nr: u64,
    pub(crate) thisnid: usize,
}

/// The simulated machine and everything running on it.
pub struct World<'a> {
    pub(crate) sc: &'a Scenario,
    pub(crate) machine: &'a Machine,
    pub(crate) rng: Pcg64Mcg,
    pub(crate) random_node: usize,
    pub(crate) now: u64,
    pub(crate) tick_ns: u64,
    pub(crate) max_ns: u64,
    pub(crate) events: EventQueue,
    pub(crate) sched: Sched,
    pub(crate) cost: CostModel,
    pub(crate) objects: Vec<MemObject>,
    pub(crate) obj_refs: Vec<u32>,
    /// Per object: the process whose private mapping it is (`None`: shared memory).
    pub(crate) obj_owner: Vec<Option<usize>>,
    pub(crate) shared_objs: Vec<usize>,
    pub(crate) node_used: Vec<u64>,
    pub(crate) node_cap: Vec<u64>,
    pub(crate) procs: Vec<Proc>,
    pub(crate) threads: Vec<Thread>,
    pub(crate) pending_starts: usize,
    pub(crate) metrics: Metrics,
    pub(crate) local_bytes: f64,
    pub(crate) remote_bytes: f64,
    pub(crate) user_ns: f64,
    pub(crate) sys_ns: f64,
    pub(crate) migrate_ns: f64,
    /// Per node: pages a migration must leave free (the kernel's high watermark).
    pub(crate) wmark_high: Vec<u64>,
    pub(crate) migrations: [u64; NR_CAUSES],
    /// Per thread, per node: when the thread last left the node (u64::MAX: not since it
    /// last arrived there), for ping-pong round trips.
    pub(crate) left_node_at: Vec<Vec<u64>>,
    pub(crate) ping_pong: crate::result::PingPongHistogram,
    pub(crate) migrate_shootdowns: u64,
    pub(crate) thp_enabled: Thp,
    pub(crate) check: bool,
    pub(crate) scratch_hist: Vec<u64>,
    /// During `advance`: the interval's end.
    pub(crate) interval_end: Option<u64>,
    /// Threads that become runnable during the current interval.
    pub(crate) late: Vec<Late>,
    /// During `advance`: per CPU, the time from which it has nothing to run.
    pub(crate) cpu_free_from: Vec<Option<u64>>,
    pub(crate) stalls: StallHistogram,
    /// `numastat -p` samples (`sim.numastat_at_s`, `sim.numastat_every_s`).
    pub(crate) numastat: Vec<crate::result::NumastatSample>,
    /// Per `[[process]]`: the next instance to start (`jobs`).
    pub(crate) next_instance: Vec<u32>,
    /// Per CPU: time it has run threads, ns (its idle time is the rest).
    pub(crate) cpu_busy_ns: Vec<f64>,
    /// Per-CPU busy time at whole seconds (the last few), for the node state at the end.
    pub(crate) busy_snapshots: std::collections::VecDeque<(u64, Vec<f64>)>,
    /// The run's time series (`sim.series_every_s`).
    pub(crate) series: crate::series::Recorder,
}
