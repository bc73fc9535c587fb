//! The world a simulation acts on: processes, threads, memory objects and their pages,
//! node capacities and watermarks, the scheduler, the cost model, metrics, the clock and
//! the random source. Kernel models and user-space policies change it only through its
//! methods. What a daemon's sensors see of it (perf samples, soft-dirty write faults) is
//! `perf.rs`.

use crate::cost::{CostModel, Demand};
use crate::error::SimError;
use crate::event::EventKind;
use crate::event::EventQueue;
use crate::memory::MemObject;
use crate::sched::{NR_CAUSES, Sched};
use numabal_model::scenario::Thp;
use numabal_model::workload::thread_slice;
use numabal_model::workload::{Pattern, Placement, SharedKind, Slice};
use numabal_model::{Machine, Mask, MemPolicy, Scenario};
use numabal_policy::{GroupInfo, ProcessInfo, RegionInfo};
use rand::RngExt;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use records::{Metrics, StallHistogram};

mod access;
mod agents;
mod alloc;
mod api;
mod checks;
mod damon;
mod exec;
mod lifecycle;
pub(crate) mod paddr;
mod perf;
mod procfs;
pub use procfs::{REGION_SPAN, page_addr};
pub mod records;
mod report;
mod samples;
pub mod tiering;
mod watermarks;
pub use agents::{Agents, KernelHooks, UserHooks};
pub(crate) use perf::PerfEvent;
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
    /// The pages the program's data occupies, [first, end): all of them but in a malloc'd
    /// region, whose data starts `MALLOC_LEAD` pages into its first 2 MiB.
    pub(crate) data: (u64, u64),
    pub(crate) wl_policy: Option<MemPolicy>,
    /// `mbind` ranges set by the policy: (first, end, policy).
    pub(crate) ranges: Vec<(u64, u64, MemPolicy)>,
    /// A read-only file mapping (NUMA scanning skips it: `shared_ro`).
    pub(crate) file_ro: bool,
    /// A `VM_SHARED` mapping (shm).
    pub(crate) vm_shared: bool,
    /// A KVM guest's memory, mapped into the VM's EPT by a memslot.
    pub(crate) kvm_memslot: bool,
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
    pub(crate) gauss_sigma: f64,
    pub(crate) hot_weight: f64,
    pub(crate) mempolicy: Option<MemPolicy>,
    /// Fraction of accesses that write (soft-dirty write faults need one).
    pub(crate) write: f64,
    /// The thread runs on this node's CPUs during the phase (a group's first phases only).
    pub(crate) run_on_node: Option<usize>,
}

#[derive(Debug, Clone)]
pub(crate) enum PhaseRt {
    /// Shared, so that a thread's step takes its phase without copying it (a memory
    /// policy's node mask is on the heap).
    Access(std::rc::Rc<AccessRt>),
    /// ns, jitter.
    Compute(f64, f64),
    /// ns, jitter.
    Sleep(f64, f64),
    Spawn(usize),
    Join(usize),
    Barrier,
    /// `move_pages(2)` of a region (its index) to a node.
    MovePages(usize, usize),
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
    /// The threads are a KVM guest's vCPUs.
    pub(crate) vcpu: bool,
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
    /// `mm->lru_gen.bitmap`: bit `n % 64` set while MGLRU's aging of node `n` has not
    /// walked its mm since one of its threads was last switched in (`lru_gen_use_mm`).
    pub(crate) lru_gen_bitmap: u64,
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
    /// Bytes accessed per ns of CPU in the thread's latest access interval (kswapd's
    /// estimate of how often it references a page).
    pub(crate) access_rate: f64,
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
    /// When it was created (`start_time`), ns.
    pub(crate) start_ns: u64,
    /// The CPUs the thread goes back to when its `run_on_node` first phases end.
    pub(crate) after_run_on_node: Option<Mask>,
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
    sc: &'a Scenario,
    machine: &'a Machine,
    rng: Pcg64Mcg,
    random_node: usize,
    now: u64,
    tick_ns: u64,
    max_ns: u64,
    events: EventQueue,
    sched: Sched,
    cost: CostModel,
    objects: Vec<MemObject>,
    obj_refs: Vec<u32>,
    /// Per object: the process whose private mapping it is (`None`: shared memory).
    obj_owner: Vec<Option<usize>>,
    shared_objs: Vec<usize>,
    node_used: Vec<u64>,
    /// The most pages each node has held so far: frames beyond it are used for the first
    /// time (`core.host_first_use_ns`).
    node_peak: Vec<u64>,
    node_cap: Vec<u64>,
    procs: Vec<Proc>,
    threads: Vec<Thread>,
    pending_starts: usize,
    metrics: Metrics,
    local_bytes: f64,
    remote_bytes: f64,
    user_ns: f64,
    sys_ns: f64,
    migrate_ns: f64,
    /// Memory tiers, the watermarks, kswapd and demotion (`tiering.rs`).
    tiering: tiering::Tiering,
    migrations: [u64; NR_CAUSES],
    /// Per thread, per node: when the thread last left the node (u64::MAX: not since it
    /// last arrived there), for ping-pong round trips.
    left_node_at: Vec<Vec<u64>>,
    /// Inter-node task moves not yet reported to the kernel model: (task, from, to node).
    node_moves: Vec<(usize, usize, usize)>,
    ping_pong: records::PingPongHistogram,
    migrate_shootdowns: u64,
    thp_enabled: Thp,
    check: bool,
    scratch_hist: Vec<u64>,
    /// Each node's fallback order, nearest first (`Machine::nodes_by_distance`, sorted
    /// once here: a first touch sorting them again per page was half of a 64-node run).
    zonelists: Vec<Vec<usize>>,
    /// Per node: its weighted-interleave weight (`iw_table`, Linux 6.16's automatic
    /// weights from the nodes' bandwidth; `mempolicy::auto_interleave_weights`).
    il_weights: Vec<u8>,
    /// `advance`'s working buffers, kept between intervals (no allocation per interval).
    step: exec::StepBuffers,
    /// During `advance`: the interval's end.
    interval_end: Option<u64>,
    /// Threads that become runnable during the current interval.
    late: Vec<Late>,
    /// During `advance`: per CPU, the time from which it has nothing to run.
    cpu_free_from: Vec<Option<u64>>,
    /// The CPU each thread last ran on and the end of that interval (`None`: it never ran),
    /// to tell MGLRU which threads were switched in since (`note_switches`).
    last_run: Vec<Option<(usize, u64)>>,
    stalls: StallHistogram,
    /// `numastat -p` samples (`sim.numastat_at_s`, `sim.numastat_every_s`).
    numastat: Vec<records::NumastatSample>,
    /// `/proc` samples (`sim.proc_every_s`): the world's part, the kernel model's
    /// `/proc/PID/sched` fields added by the engine.
    proc_samples: Vec<records::ProcSample>,
    /// Per `[[process]]`: the next instance to start (`jobs`).
    next_instance: Vec<u32>,
    /// Per CPU: time it has run threads, ns (its idle time is the rest).
    cpu_busy_ns: Vec<f64>,
    /// Per CPU: until when a kernel thread or a daemon's mover holds it (wall ns).
    held_until: Vec<u64>,
    /// The speed every running CPU has in the current interval, of its own (1 unless
    /// `core.host_cpus` is fewer than the CPUs that run).
    host_speed: f64,
    /// Per-CPU busy time at whole seconds (the last few), for the node state at the end.
    busy_snapshots: std::collections::VecDeque<(u64, Vec<f64>)>,
    /// The run's time series (`sim.series_every_s`).
    series: crate::series::Recorder,
    /// A daemon's sampling event and its watches (`perf.rs`), once opened.
    perf: Option<Box<perf::Perf>>,
    /// The kdamond of a daemon's `damon` sensor (`damon.rs`), once started.
    damon: Option<Box<damon::Damon>>,
    /// `clear_refs` = 4 was used: protected entries are write-protected for soft-dirty
    /// tracking, not PROT_NONE for a kernel model.
    soft_dirty: bool,
    soft_dirty_faults: u64,
}

impl<'a> World<'a> {
    pub(crate) fn thp_for(&self, requested: bool, file: bool) -> bool {
        !file
            && match self.thp_enabled {
                Thp::Never => false,
                Thp::Madvise => requested,
                Thp::Always => true,
            }
    }

    /// The node a thread runs on (or last ran on).
    pub(crate) fn thread_node(&self, t: usize) -> usize {
        let task = &self.sched.tasks[t];
        self.machine.cpus[task.cpu.unwrap_or(task.prev_cpu)].node
    }

    /// Every process has started and every thread of a non-daemon process is done.
    pub(crate) fn work_done(&self) -> bool {
        self.pending_starts == 0
            && self.threads.iter().any(|t| !self.procs[t.proc].daemon)
            && self
                .threads
                .iter()
                .all(|t| t.state == TState::Done || self.procs[t.proc].daemon)
    }

    /// A phase length with its jitter applied (`jitter` 0: exact, no draw).
    pub(crate) fn jittered(&mut self, ns: f64, jitter: f64) -> f64 {
        if jitter > 0.0 {
            ns * (1.0 + jitter * self.rng.random_range(-1.0..1.0))
        } else {
            ns
        }
    }

    /// A thread became runnable at `at`; inside an interval it may use the rest of it.
    pub(crate) fn note_runnable(&mut self, t: usize, at: u64) {
        if self.interval_end.is_some_and(|end| at < end) {
            self.late.push(Late { t, at, wake: false });
        }
    }

    /// Kernel work (a fault, a migration, a scan) done in thread `t`'s context: it pays
    /// for it before running its own work again.
    /// One block of it is one interval in which the thread is kept from its own work.
    pub(crate) fn charge_kernel(&mut self, t: usize, cost: f64) {
        self.threads[t].debt_ns += cost;
        self.sys_ns += cost;
        self.stall(cost);
    }

    /// CPU time taken from thread `t` by something else on its CPU (a NUMA scan worker):
    /// it waits `ns` of its share without running, and that is not its CPU time.
    pub(crate) fn steal_cpu(&mut self, t: usize, ns: f64) {
        // Preempted, it is switched back in after.
        self.lru_gen_use_mm(t);
        let wall = self.host_wall(ns);
        let th = &mut self.threads[t];
        th.debt_ns += ns;
        // Paying debt adds to `sum_exec_ns` (as wall time on a shared host); stolen time
        // must not.
        th.sum_exec_ns -= wall;
    }

    /// The speed of each running CPU at `t` with `extra` more CPUs running than the
    /// runqueues and held CPUs show: `core.host_cpus` shared evenly by the CPUs that run
    /// (a halted vCPU takes no host time), at most 1.
    pub(crate) fn host_speed_at(&self, t: u64, extra: usize) -> f64 {
        let Some(h) = self.machine.spec.core.host_cpus else {
            return 1.0;
        };
        let running = (0..self.sched.nr_cpus())
            .filter(|&c| !self.sched.rq(c).is_empty() || self.held(c, t))
            .count()
            + extra;
        if running as f64 <= h {
            1.0
        } else {
            h / running as f64
        }
    }

    /// The running CPUs' speed in the current (or last) interval.
    pub(crate) fn host_speed(&self) -> f64 {
        self.host_speed
    }

    /// The wall time `work_ns` of a CPU's work takes at the current speed, which is also
    /// the CPU time `/proc` shows for it: the guest's clock is the host's and a TCG host
    /// reports no steal time. Exactly `work_ns` when the host is not shared.
    pub(crate) fn host_wall(&self, work_ns: f64) -> f64 {
        if self.host_speed < 1.0 {
            work_ns / self.host_speed
        } else {
            work_ns
        }
    }

    /// The wall time, in whole ns, that `work_ns` of CPU work takes on `share` of a CPU
    /// of this host (a kernel thread's fair share beside the node's tasks).
    pub(crate) fn wall_on_share(&self, work_ns: f64, share: f64) -> u64 {
        (self.host_wall(work_ns) / share) as u64
    }

    /// Whether a kernel thread or a daemon's mover holds `cpu` at `t`.
    pub(crate) fn held(&self, cpu: usize, t: u64) -> bool {
        self.held_until[cpu] > t
    }

    /// A kernel thread or a daemon's mover holds `cpu` until `until` (wall ns).
    pub(crate) fn hold_cpu(&mut self, cpu: usize, until: u64) {
        self.held_until[cpu] = self.held_until[cpu].max(until);
    }

    /// A runnable thread was kept from its own work for `ns`.
    pub(crate) fn stall(&mut self, ns: f64) {
        if ns > STALL_NS {
            self.metrics.stall_events_over_1ms += 1;
        }
        let ms = ns / 1e6;
        self.metrics.stall_max_ms = self.metrics.stall_max_ms.max(ms);
        self.stalls.record(ms);
    }

    /// Thread `t` (already off its runqueue) waits until `when`: a sleep's end, a barrier's
    /// release, the end of the group it joins. Inside the current interval the wakeup is
    /// handled with the interval's other late events; later, by a `Wake` event.
    pub(crate) fn wake_at(&mut self, t: usize, when: u64) {
        self.threads[t].state = TState::Sleeping;
        if self.interval_end.is_some_and(|end| when < end) {
            self.late.push(Late {
                t,
                at: when,
                wake: true,
            });
        } else {
            self.events.push(when, EventKind::Wake { tid: t as u32 });
        }
    }

    pub(crate) fn wake(&mut self, t: usize, at: u64) {
        self.threads[t].state = TState::Runnable;
        self.sched.wake(t as u32, at);
        self.note_runnable(t, at);
    }

    pub(crate) fn block(&mut self, t: usize, state: TState, at: u64) {
        self.threads[t].state = state;
        if let Some(c) = self.sched.dequeue(t as u32, at) {
            self.cpu_freed(c, at);
        }
    }

    /// Inside an interval, remember when a CPU ran out of work.
    pub(crate) fn cpu_freed(&mut self, c: usize, at: u64) {
        if self.interval_end.is_some() && self.sched.rq(c).is_empty() {
            self.cpu_free_from[c] = Some(at);
        }
    }

    pub(crate) fn advance_phase(&mut self, t: usize) {
        let th = &mut self.threads[t];
        th.phase += 1;
        th.prog = Prog::default();
        // The `run_on_node` phases ended: every CPU the thread had back (a wider mask, so
        // it stays where it runs).
        let (pidx, g, phase) = (th.proc, th.group, th.phase);
        let still = matches!(self.procs[pidx].groups[g].phases.get(phase),
            Some(PhaseRt::Access(a)) if a.run_on_node.is_some());
        if !still && let Some(cpus) = self.threads[t].after_run_on_node.take() {
            let now = self.now;
            self.sched.set_allowed(t as u32, cpus, now);
        }
    }

    // ----- memory --------------------------------------------------------------------

    // ----- the fluid step ------------------------------------------------------------
}

impl<'a> World<'a> {
    /// Each task's process (pid), by task id.
    pub(crate) fn task_pids(&self) -> Vec<u32> {
        self.threads.iter().map(|t| t.proc as u32 + 1).collect()
    }

    /// The world at the start of a run (nothing runs until the engine boots it).
    pub(crate) fn new(sc: &'a Scenario) -> World<'a> {
        let m = &sc.machine;
        let mut rng = Pcg64Mcg::seed_from_u64(sc.sim.seed ^ 0x6e75_6d61_6261_6c00);
        let with_mem: Vec<usize> = (0..m.nr_nodes())
            .filter(|&n| m.node_usable_pages(n) > 0)
            .collect();
        let random_node = with_mem[rng.random_range(0..with_mem.len())];
        let tick_ns = (sc.sim.tick_ms * 1e6).round() as u64;
        // The kernel's marks, from min_free_kbytes (watermarks.rs).
        let node_pages: Vec<u64> = (0..m.nr_nodes())
            .map(|n| m.nodes[n].memory_bytes / numabal_model::PAGE_SIZE)
            .collect();
        let thp = sc.sim.transparent_hugepage != Thp::Never;
        let marks = watermarks::node_marks(&node_pages, thp, sc.sim.min_free_kbytes);
        World {
            sc,
            machine: m,
            rng,
            random_node,
            now: 0,
            tick_ns,
            max_ns: (sc.sim.max_time_s * NS) as u64,
            events: EventQueue::default(),
            sched: {
                let mut s = Sched::new(m);
                if !sc.sim.allow_numa_imbalance {
                    s.disallow_numa_imbalance();
                }
                if sc.sim.llc_balancing {
                    s.enable_llc_balancing();
                }
                s
            },
            cost: CostModel::new(m),
            objects: Vec::new(),
            obj_refs: Vec::new(),
            obj_owner: Vec::new(),
            shared_objs: Vec::new(),
            node_used: vec![0; m.nr_nodes()],
            node_peak: vec![0; m.nr_nodes()],
            node_cap: (0..m.nr_nodes()).map(|n| m.node_usable_pages(n)).collect(),
            procs: Vec::new(),
            threads: Vec::new(),
            pending_starts: 0,
            metrics: Metrics::default(),
            local_bytes: 0.0,
            remote_bytes: 0.0,
            user_ns: 0.0,
            sys_ns: 0.0,
            migrate_ns: 0.0,
            tiering: tiering::Tiering::new(m, &marks, &sc.sim),
            migrations: [0; NR_CAUSES],
            left_node_at: Vec::new(),
            node_moves: Vec::new(),
            ping_pong: Default::default(),
            migrate_shootdowns: 0,
            thp_enabled: sc.sim.transparent_hugepage,
            check: sc.sim.check_invariants,
            scratch_hist: vec![0; m.nr_nodes()],
            zonelists: (0..m.nr_nodes()).map(|n| m.nodes_by_distance(n)).collect(),
            il_weights: numabal_model::mempolicy::auto_interleave_weights(m),
            step: exec::StepBuffers::default(),
            interval_end: None,
            late: Vec::new(),
            cpu_free_from: vec![None; m.nr_cpus()],
            last_run: Vec::new(),
            stalls: StallHistogram::default(),
            numastat: Vec::new(),
            proc_samples: Vec::new(),
            next_instance: Vec::new(),
            cpu_busy_ns: vec![0.0; m.nr_cpus()],
            held_until: vec![0; m.nr_cpus()],
            host_speed: 1.0,
            busy_snapshots: std::collections::VecDeque::new(),
            series: crate::series::Recorder::new(m.nr_nodes(), sc.sim.series_every_s),
            perf: None,
            damon: None,
            soft_dirty: false,
            soft_dirty_faults: 0,
        }
    }

    /// The run's first events: shared memory objects exist, process starts (instance k of
    /// a `[[process]]` forks a little after k-1; with `jobs`, only the first `jobs` now, the
    /// others as earlier ones exit), the first tick, `numastat` samples.
    pub(crate) fn boot(&mut self) {
        let wl = &self.sc.workload;
        for s in &wl.spec.shared {
            let pages = s.size.pages();
            let thp = self.thp_for(s.thp, s.kind == SharedKind::File);
            self.objects
                .push(MemObject::new(pages, thp, self.machine.nr_nodes()));
            self.obj_refs.push(0);
            self.obj_owner.push(None);
            self.shared_objs.push(self.objects.len() - 1);
        }
        for f in &wl.spec.tmpfs {
            self.tmpfs_files(f.size.pages(), f.node);
        }
        // Process starts: instance k of a [[process]] forks a little after k-1; with
        // `jobs`, only the first `jobs` now, the others as earlier ones exit.
        for (pi, p) in wl.spec.processes.iter().enumerate() {
            let mut t = p.start_s * NS;
            self.pending_starts += (p.instances - p.jobs.unwrap_or(p.instances)) as usize;
            self.next_instance.push(p.jobs.unwrap_or(p.instances));
            for inst in 0..p.jobs.unwrap_or(p.instances) {
                let jitter = self.rng.random_range(0.0..1.0) * 1e6;
                self.events.push(
                    (t + jitter) as u64,
                    EventKind::ProcessStart {
                        spec: pi as u32,
                        instance: inst,
                    },
                );
                self.pending_starts += 1;
                t += self.machine.spec.costs.thread_spawn_ns * 4.0;
            }
        }
        self.events.push(self.tick_ns, EventKind::Tick);
        let at: Vec<u64> = self
            .sc
            .sim
            .numastat_at_s
            .iter()
            .map(|&t| self.on_tick(t))
            .collect();
        for t in at {
            self.events
                .push(t, EventKind::NumastatSample { periodic: false });
        }
        let every = self.sc.sim.numastat_every_s;
        if every > 0.0 {
            self.events.push(
                self.on_tick(every),
                EventKind::NumastatSample { periodic: true },
            );
        }
        let every = self.sc.sim.proc_every_s;
        if every > 0.0 {
            self.events.push(self.on_tick(every), EventKind::ProcSample);
        }
    }
}

impl World<'_> {
    /// The processes running now that have memory.
    pub(crate) fn live_processes(&self) -> Vec<usize> {
        (0..self.procs.len())
            .filter(|&i| self.procs[i].end_ns.is_none() && !self.procs[i].regions.is_empty())
            .collect()
    }
}

impl Thread {
    pub(crate) fn new(proc: usize, group: usize, index: u32, state: TState, now: u64) -> Self {
        Thread {
            proc,
            group,
            index,
            state,
            phase: 0,
            iter: 0,
            prog: Prog::default(),
            policy_thread: None,
            il_next: 0,
            end_ns: None,
            debt_ns: 0.0,
            window_bytes: 0.0,
            sum_exec_ns: 0.0,
            start_ns: now,
            after_run_on_node: None,
        }
    }
}
