//! What kernel models, user space and the engine may read of the world and do to it. The
//! world's fields are private to `world/`; everything outside goes through these methods
//! (and the world's own operations: allocate, fault, migrate, charge time).

use super::records::Metrics;
use super::{Proc, TState, Thread, World};
use crate::event::EventKind;
use crate::memory::MemObject;
use crate::sched::{Cause, Sched};
use numabal_model::{Machine, Mask, MemPolicy, Scenario};
use rand_pcg::Pcg64Mcg;

impl<'a> World<'a> {
    /// The machine.
    pub(crate) fn machine(&self) -> &'a Machine {
        self.machine
    }
    /// The scenario being run.
    pub(crate) fn scenario(&self) -> &'a Scenario {
        self.sc
    }
}

impl World<'_> {
    /// Simulated time now, ns.
    pub(crate) fn now(&self) -> u64 {
        self.now
    }
    /// The scheduler tick, ns.
    pub(crate) fn tick_ns(&self) -> u64 {
        self.tick_ns
    }
    /// The end of the run (`sim.max_time_s`), ns.
    pub(crate) fn max_ns(&self) -> u64 {
        self.max_ns
    }
    /// Process `pidx` (0-based: pid - 1).
    pub(crate) fn proc(&self, pidx: usize) -> &Proc {
        &self.procs[pidx]
    }
    /// Processes started so far (running or exited).
    pub(crate) fn nr_procs(&self) -> usize {
        self.procs.len()
    }
    /// Thread (task) `t` (0-based: tid - 1).
    pub(crate) fn thread(&self, t: usize) -> &Thread {
        &self.threads[t]
    }
    /// Threads started so far.
    pub(crate) fn nr_threads(&self) -> usize {
        self.threads.len()
    }
    /// Memory object (mapping) `obj`: its pages' nodes and page-table state.
    pub(crate) fn object(&self, obj: usize) -> &MemObject {
        &self.objects[obj]
    }
    /// Memory objects (mappings) so far.
    pub(crate) fn nr_objects(&self) -> usize {
        self.objects.len()
    }
    /// Processes mapping object `obj` now (`page_mapcount`, per object here).
    pub(crate) fn obj_refs(&self, obj: usize) -> u32 {
        self.obj_refs[obj]
    }
    /// Pages node `n` can hold.
    pub(crate) fn node_cap(&self, n: usize) -> u64 {
        self.node_cap[n]
    }
    /// Pages node `n` holds now.
    pub(crate) fn node_used(&self, n: usize) -> u64 {
        self.node_used[n]
    }
    /// Pages a migration must leave free on node `n` (its high watermark).
    pub(crate) fn wmark_high(&self, n: usize) -> u64 {
        self.tiering.marks[n].high
    }
    /// The scheduler, to read.
    pub(crate) fn sched(&self) -> &Sched {
        &self.sched
    }
    /// Whether `sim.check_invariants` is on.
    pub(crate) fn checks_invariants(&self) -> bool {
        self.check
    }

    // ----- what kernel models do --------------------------------------------------

    /// A kernel model's access to a mapping's page-table state: PROT_NONE bits,
    /// `last_cpupid`, hinting records.
    pub(crate) fn object_mut(&mut self, obj: usize) -> &mut MemObject {
        &mut self.objects[obj]
    }
    /// The run's random source (one seeded stream: every draw is in the run's order).
    pub(crate) fn rng(&mut self) -> &mut Pcg64Mcg {
        &mut self.rng
    }
    /// The `/proc/vmstat` counters, to count kernel events.
    pub(crate) fn vmstat(&mut self) -> &mut Metrics {
        &mut self.metrics
    }
    /// A scan's CPU time on `node`, for process `pidx` (`None`: a kernel thread's).
    pub(crate) fn record_scan(&mut self, pidx: Option<usize>, node: usize, ns: f64) {
        self.series.scanned(pidx, node, ns);
    }
    /// Kernel CPU time accounted as system time (no thread's own stall).
    pub(crate) fn charge_sys(&mut self, ns: f64) {
        self.sys_ns += ns;
    }
    /// Thread `t` owes `ns` of work before its own (paid as its CPU time).
    pub(crate) fn add_debt(&mut self, t: usize, ns: f64) {
        self.threads[t].debt_ns += ns;
    }
    /// CPU time thread `t` is charged without running its own work.
    pub(crate) fn add_exec(&mut self, t: usize, ns: f64) {
        self.threads[t].sum_exec_ns += ns;
    }
    /// Move task `t` from `from` to CPU `to` now (`migrate_task_to`, swaps).
    pub(crate) fn migrate_task(&mut self, t: usize, from: usize, to: usize, cause: Cause) {
        let now = self.now;
        self.sched.migrate(t as u32, from, to, cause, now);
    }
    /// Move task `t` to a CPU of `node` now, for a model or a policy's `MoveThread`
    /// (false if no CPU there may take it).
    pub(crate) fn move_task_to_node(&mut self, t: usize, node: usize, cause: Cause) -> bool {
        let now = self.now;
        self.sched.policy_move(t as u32, node, cause, now)
    }
    /// Whether thread `t` is a KVM guest's vCPU.
    pub(crate) fn is_vcpu(&self, t: usize) -> bool {
        let th = &self.threads[t];
        self.procs[th.proc].groups[th.group].vcpu
    }
    /// KVM's remote TLB flush in process `pidx`'s VM: each runnable vCPU thread pays `ns`
    /// in its own context. Returns how many did.
    pub(crate) fn kick_vcpus(&mut self, pidx: usize, ns: f64) -> u64 {
        let vcpus: Vec<usize> = (self.procs[pidx].groups.iter())
            .filter(|g| g.vcpu)
            .flat_map(|g| g.threads.iter().copied())
            .filter(|&t| self.threads[t].state == TState::Runnable)
            .collect();
        for &t in &vcpus {
            self.charge_kernel(t, ns);
        }
        vcpus.len() as u64
    }
    /// Task `t`'s preferred node (`numa_preferred_nid`), which the load balancer reads.
    pub(crate) fn set_numa_preferred_nid(&mut self, t: usize, nid: Option<usize>) {
        self.sched.tasks[t].numa_preferred_nid = nid;
    }

    // ----- what user space does ---------------------------------------------------

    /// `sched_setaffinity` of thread `t` (the mask already within its cpuset).
    pub(crate) fn set_affinity(&mut self, t: usize, cpus: Mask) {
        let now = self.now;
        self.sched.set_allowed(t as u32, cpus, now);
    }
    /// Threads process `pidx` creates from now on start with this mask (clone copies it).
    pub(crate) fn set_inherited_affinity(&mut self, pidx: usize, cpus: Mask) {
        self.procs[pidx].inherited_affinity = Some(cpus);
    }
    /// `set_mempolicy` for a whole process.
    pub(crate) fn set_process_mempolicy(&mut self, pidx: usize, policy: MemPolicy) {
        self.procs[pidx].policy_proc = Some(policy);
    }
    /// `set_mempolicy` in thread `t`.
    pub(crate) fn set_thread_mempolicy(&mut self, t: usize, policy: MemPolicy) {
        self.threads[t].policy_thread = Some(policy);
    }
    /// `mbind` of pages `[first, end)` of region `ri` of process `pidx`.
    pub(crate) fn mbind(&mut self, pidx: usize, ri: usize, first: u64, end: u64, p: MemPolicy) {
        self.procs[pidx].regions[ri].ranges.push((first, end, p));
    }
    /// An event at `at` ns.
    pub(crate) fn push_event(&mut self, at: u64, kind: EventKind) {
        self.events.push(at, kind);
    }

    // ----- what the engine does ---------------------------------------------------

    /// The next event's time.
    pub(crate) fn next_event_time(&self) -> Option<u64> {
        self.events.peek_time()
    }
    /// The next event, taken off the queue.
    pub(crate) fn pop_event(&mut self) -> Option<EventKind> {
        self.events.pop().map(|e| e.kind)
    }
    /// The clock moves to `t` ns.
    pub(crate) fn set_now(&mut self, t: u64) {
        self.now = t;
    }
    /// A pending start (process or group) happens now.
    pub(crate) fn start_happens(&mut self) {
        self.pending_starts -= 1;
    }
    /// The CPU process `pidx` started on (its groups start there).
    pub(crate) fn home_cpu(&self, pidx: usize) -> usize {
        self.procs[pidx].home_cpu
    }
}
