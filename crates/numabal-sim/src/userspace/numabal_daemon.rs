//! numabal's placement daemon on the simulated host: the policy object `numabal daemon`
//! runs (the registry builds it for both), fed and obeyed the way the live daemon feeds
//! and obeys it — by the daemon's own rules (`numabal_daemon`), on what the simulated
//! kernel shows a user-space process.
//!
//! ```text
//!  PolicyTick (pass gap: interval_ms, else the policy's interval; idle_interval_ms while
//!             nothing is managed; the next pass waits for the last call to return)
//!    observe: /proc of every live process; keep RSS ≥ min_rss_mb; judge (narrowed cpuset
//!             or affinity, explicit mempolicy) ─► managed; skip/exited lines
//!    sensor:  samples drained from the perf watches (world/perf.rs: hint and softdirty
//!             sample page faults, pmu memory accesses) ─► page nodes now (world page
//!             lookup, as a move_pages query) ─► AccessSample; damon: a kdamond per wanted
//!             process (world/damon.rs), its hot regions credited to the threads that ran
//!    policy.on_tick(managed threads and processes, nodes, idle, samples) ─► actions
//!    sensor:  perf watches on the threads of the processes still wanted; softdirty:
//!             clear_refs=4 of a process when the fault budget allows
//!    act:     sched_setaffinity within the thread's own affinity; move_pages and
//!             migrate_pages within Mems_allowed and the migrate_mb_s token bucket, queued
//!             in the daemon's context at the kernel's cost (userspace/daemon.rs)
//!    charge:  the pass's CPU (the /proc reads, the numa_maps walks, the samples, the
//!             clear_refs walks) and its calls' kernel time to a CPU of the machine
//!  end of the run: restore lines, the stop line (passes, CPU, samples, pages, placement)
//! ```
//!
//! What the simulated host does not have, or has more simply, is in docs/model-notes.md
//! ("numabal's daemon in the simulator").

use super::UserSpace;
use crate::error::SimError;
use crate::event::EventKind;
use crate::kernel::kthread::KThreads;
use crate::registry::SimDaemon;
use crate::world::{NS, PerfEvent, TState, World};
use numabal_daemon::budget::{PAGE, within_budget};
use numabal_daemon::log::{self as line, Changed, Counts, NotMoved};
use numabal_daemon::pacing::{
    ClearPacer, ProcessCpus, host_busy, idle_look_gap_ns, interval_range_ns, pass_gap_ns,
    process_movers, process_times,
};
use numabal_daemon::{Candidate, RateLimit, RawSample, Roster, Rules, SensorKind};
use numabal_model::{Mask, Pid, Tid};
use numabal_policy::{AccessSample, Action, ProcessObs, ThreadObs};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// What the daemon's run reports in the result (`daemon` in the run's JSON).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DaemonReport {
    /// The policy object's Rust type: the one `numabal daemon` runs.
    pub policy_type: String,
    /// The settings as used (sensor chosen, sample period and numa_balancing filled in).
    pub settings: numabal_model::DaemonSettings,
    /// Soft-dirty write faults the sensor caused (its cost to the workload's threads).
    pub soft_dirty_faults: u64,
    /// Pages the `damon` sensor's kdamond checked for access (its cost; absent: none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub damon_checks: u64,
    /// The decision log, line by line in the live daemon's format (its last line `stop`).
    pub log: Vec<Value>,
}

impl DaemonReport {
    /// The stop line's figures.
    pub fn stop(&self) -> Option<&Value> {
        self.log.iter().rev().find_map(|l| l.get("stop"))
    }
}

/// The daemon between passes.
pub(crate) struct NumabalDaemon {
    d: SimDaemon,
    rules: Rules,
    rate: RateLimit,
    counts: Counts,
    /// Processes managed or left alone, from pass to pass.
    roster: Roster,
    changed: BTreeMap<Tid, Changed>,
    clears: ClearPacer,
    /// Reused sample buffer.
    raw: Vec<RawSample>,
    /// damon: the threads that ran since the last pass, samples credited so far, and the
    /// kdamond's checks already charged.
    ran: numabal_daemon::damon::Ran,
    damon_samples: u64,
    damon_checks: u64,
    actions: Vec<Action>,
    interval_min_ns: u64,
    pass: u64,
    managed_count: usize,
    /// With nothing managed: when the next full pass is due, and the last look at the CPUs'
    /// idle time (when, their idle time summed) (pacing::host_busy).
    idle_look: Option<(u64, u64, u64)>,
    /// The daemon's thread: the CPU it last ran on, and the time it holds CPUs for.
    cpu: usize,
    kthreads: KThreads,
    /// Its CPU time so far, ns.
    cpu_ns: f64,
    pub(crate) log: Vec<Value>,
    /// Bytes each running `migrate_pages` was charged as it was made, by its log line: what
    /// did not move is given back when it returns.
    charged: BTreeMap<usize, u64>,
    /// The last pass's time, per-CPU idle time and the daemon's CPU time, and the threads
    /// that move pages in this pass (`numabal_daemon::pacing::movers`).
    last_idle: Option<(u64, Vec<u64>, f64)>,
    movers: usize,
    /// The CPUs each managed process's threads used since the last pass
    /// (`numabal_daemon::pacing::ProcessCpus`): a whole process's move takes as many movers.
    process_cpus: ProcessCpus,
    cpus_used: BTreeMap<u32, usize>,
}

impl NumabalDaemon {
    pub(crate) fn new(d: SimDaemon, nr_cpus: usize) -> NumabalDaemon {
        NumabalDaemon {
            rate: RateLimit::new(d.settings.migrate_mb_s),
            d,
            rules: Rules::default(),
            counts: Counts::default(),
            roster: Roster::default(),
            changed: BTreeMap::new(),
            clears: ClearPacer::default(),
            raw: Vec::new(),
            ran: Default::default(),
            damon_samples: 0,
            damon_checks: 0,
            actions: Vec::new(),
            interval_min_ns: 0,
            pass: 0,
            managed_count: 0,
            idle_look: None,
            cpu: 0,
            kthreads: KThreads::new(nr_cpus),
            cpu_ns: 0.0,
            log: Vec::new(),
            charged: BTreeMap::new(),
            last_idle: None,
            movers: 1,
            process_cpus: ProcessCpus::default(),
            cpus_used: BTreeMap::new(),
        }
    }

    fn t_s(w: &World) -> f64 {
        w.now() as f64 / NS
    }

    /// When its first pass comes (`daemon.start_s`).
    pub(crate) fn start_ns(&self) -> u64 {
        (self.d.settings.start_s.unwrap_or(0.0) * NS) as u64
    }

    /// The first pass: open the sensor's event, log the start.
    fn start(&mut self, w: &mut World, policy: &dyn numabal_policy::Policy) {
        let s = &self.d.settings;
        let interval = interval_range_ns(s, policy);
        self.interval_min_ns = interval.0;
        match self.d.sensor {
            SensorKind::Hint | SensorKind::SoftDirty => {
                w.perf_open(PerfEvent::PageFaults, s.sample_period_of(self.d.sensor))
            }
            SensorKind::Pmu => w.perf_open(PerfEvent::MemAccess, s.sample_period_of(self.d.sensor)),
            SensorKind::Damon => w.damon_open(numabal_daemon::damon::ATTRS),
            SensorKind::Maps => {}
        }
        self.log.push(line::start(&line::Start {
            policy: policy.name(),
            policy_type: policy.type_name(),
            tunables: &self.d.tunables,
            sensor: self.d.sensor,
            sensor_why: &self.d.sensor_why,
            dry_run: false,
            interval,
            settings: s,
            metrics: None,
        }));
    }

    /// `/proc` as the daemon reads it: every live process with at least `min_rss_mb`
    /// resident (the others cost one `stat` read), their threads with their last CPUs.
    fn observe(&self, w: &World) -> (Vec<ProcessObs>, Vec<ThreadObs>, f64) {
        let min = self.d.settings.min_rss_mb * 1024 * 1024;
        let all = w.process_obs();
        let mut reads = 1 + all.len(); // /proc/stat, then each process's stat
        let mut walked = 0u64;
        let procs: Vec<ProcessObs> = all
            .into_iter()
            .filter(|p| p.rss_bytes > 0 && p.rss_bytes >= min)
            .collect();
        let keep: BTreeSet<Pid> = procs.iter().map(|p| p.pid).collect();
        let threads: Vec<ThreadObs> = w
            .thread_obs()
            .into_iter()
            .filter(|t| keep.contains(&t.pid))
            .map(|mut t| {
                // /proc/PID/task/TID/stat gives the last CPU, running or not.
                let cpu = t.cpu.unwrap_or(w.sched().tasks[t.tid.idx() - 1].prev_cpu);
                t.cpu = Some(cpu);
                t.node = Some(w.machine().cpus[cpu].node);
                t
            })
            .collect();
        for p in &procs {
            // status, numa_maps (a walk of every present entry), cmdline, cgroup.
            reads += 4;
            walked += w.present_entries(p.pid.idx() - 1);
        }
        reads += threads.len();
        let k = &w.machine().spec.costs;
        let ns = reads as f64 * k.proc_read_ns + walked as f64 * k.pte_update_ns;
        (procs, threads, ns)
    }

    /// Which processes the daemon may touch; a process skipped is logged when first
    /// skipped and when the reason changes.
    fn judge(&mut self, w: &World, procs: &[ProcessObs]) -> BTreeSet<u32> {
        let host_cpus = Mask::full(w.machine().nr_cpus());
        let host_nodes = Mask::full(w.machine().nr_nodes());
        let mut managed = BTreeSet::new();
        for p in procs {
            let pidx = p.pid.idx() - 1;
            let cpus = self.original_cpus(w, pidx);
            let c = Candidate {
                name: &p.comm,
                uid: 0,
                cgroup: "",
                cpus_allowed: &cpus,
                mems_allowed: &p.mems_allowed,
                has_memory: p.rss_bytes > 0,
                explicit_policy: w.has_vma_policy(pidx),
            };
            let v = numabal_daemon::check(&c, &host_cpus, &host_nodes, &self.rules);
            if v.is_ok() {
                managed.insert(p.pid.0);
            }
            let v = v.map_err(|why| why.to_string());
            if let Some(l) = self.roster.judged(Self::t_s(w), p.pid.0, &p.comm, v) {
                self.log.push(l);
            }
        }
        managed
    }

    /// `Cpus_allowed_list` of a process (its main thread's), as set by the program or its
    /// launcher: an affinity the daemon narrowed is its own doing, so the original counts.
    fn original_cpus(&self, w: &World, pidx: usize) -> Mask {
        let Some(main) = w.main_thread(pidx) else {
            return w.proc(pidx).cpuset_cpus.clone();
        };
        let now = &w.sched().tasks[main].allowed;
        match self.changed.get(&Tid(main as u32 + 1)) {
            Some(c) if &c.ours == now => c.original.clone(),
            _ => now.clone(),
        }
    }

    /// Log the managed processes that exited and the newly managed ones.
    fn keep_managed(&mut self, w: &World, procs: &[ProcessObs], managed: &BTreeSet<u32>) {
        let live: BTreeSet<u32> = w.live_processes().iter().map(|&p| p as u32 + 1).collect();
        let now_managed = procs
            .iter()
            .filter(|p| managed.contains(&p.pid.0))
            .map(|p| (p.pid.0, p.comm.clone()));
        let lines = self.roster.pass(Self::t_s(w), &live, now_managed);
        self.log.extend(lines);
        self.managed_count = managed.len();
    }

    /// Drain the samples since the last pass and give them their pages' nodes (the watches
    /// are those `watch_wanted` left at the last pass). Returns the samples and the CPU
    /// time it took, ns.
    fn sample(
        &mut self,
        w: &mut World,
        threads: &[ThreadObs],
        managed: &BTreeSet<u32>,
        wanted: &BTreeSet<u32>,
    ) -> (Vec<AccessSample>, f64) {
        match self.d.sensor {
            SensorKind::Maps => return (Vec::new(), 0.0),
            SensorKind::Damon => return self.sample_damon(w, threads, managed, wanted),
            _ => {}
        }
        let mut raw = std::mem::take(&mut self.raw);
        raw.clear();
        w.perf_drain(&mut raw);
        let period = self.d.settings.sample_period_of(self.d.sensor);
        for r in &raw {
            self.clears.faulted(r.pid, period);
        }
        let samples = resolve(w, &raw, threads, managed);
        let ns = raw.len() as f64 * w.machine().spec.costs.perf_sample_ns;
        self.raw = raw;
        (samples, ns)
    }

    /// After the pass's decisions, as the live daemon: watch the threads of the processes
    /// the policy still wants sampled (hint, softdirty, pmu), and no others.
    fn watch_wanted(&mut self, w: &mut World, wanted: &BTreeSet<u32>) {
        if matches!(self.d.sensor, SensorKind::Maps | SensorKind::Damon) {
            return;
        }
        for t in 0..w.nr_threads() {
            let pid = w.thread(t).proc as u32 + 1;
            if wanted.contains(&pid) && w.thread(t).state != TState::Done {
                w.perf_watch(t);
            } else {
                w.perf_unwatch(t);
            }
        }
    }

    /// damon: monitor the wanted processes, read the last aggregation's hot regions and
    /// credit them to the threads that ran (`numabal_daemon::damon`). Returns the samples
    /// and the CPU time: a sample's cost per hot address read, and the kdamond's checks
    /// since the last pass at `pte_update_ns` each (its work, charged to the daemon's CPU).
    fn sample_damon(
        &mut self,
        w: &mut World,
        threads: &[ThreadObs],
        managed: &BTreeSet<u32>,
        wanted: &BTreeSet<u32>,
    ) -> (Vec<AccessSample>, f64) {
        let targets: BTreeSet<usize> = wanted.iter().map(|&p| p as usize - 1).collect();
        w.damon_set_targets(&targets);
        let hot = w.damon_hot();
        let ran = self
            .ran
            .update((threads.iter()).map(|t| (t.pid.0, t.tid.0, t.cpu, t.cpu_time_ns)));
        let raw = numabal_daemon::damon::credit(&hot, &ran, self.pass);
        self.damon_samples += raw.len() as u64;
        let samples = resolve(w, &raw, threads, managed);
        let checks = w.damon_checks();
        let k = &w.machine().spec.costs;
        let ns = raw.len() as f64 * k.perf_sample_ns
            + (checks - self.damon_checks) as f64 * k.pte_update_ns;
        self.damon_checks = checks;
        (samples, ns)
    }

    /// softdirty: clear the bits of each process the policy wants sampled after the pass's
    /// decisions, when its turn has come (`ClearPacer`); returns the CPU time of the clears
    /// (the page-table walk and a TLB flush each), ns.
    fn clear_soft_dirty_bits(
        &mut self,
        w: &mut World,
        managed: &BTreeSet<u32>,
        wanted: &BTreeSet<u32>,
    ) -> f64 {
        if self.d.sensor != SensorKind::SoftDirty {
            return 0.0;
        }
        let now = w.now();
        self.clears.retain(|p| managed.contains(&p));
        let mut ns = 0.0;
        for &pid in wanted {
            let pidx = pid as usize - 1;
            let s = &self.d.settings;
            if !(self.clears).due(s, now, self.interval_min_ns, pid, || {
                w.present_entries(pidx)
            }) {
                continue;
            }
            let walked = w.clear_soft_dirty(pidx);
            let k = &w.machine().spec.costs;
            ns += walked as f64 * k.pte_update_ns + k.tlb_shootdown_ns;
        }
        ns
    }

    /// The daemon's thread runs `ns` of CPU now: where it is still running if it is, else
    /// on an idle CPU of its node from the one it last ran on (the wakeup's
    /// `select_idle_sibling` stays within the LLC, which is within the node), else there,
    /// taking the time from the threads that run there.
    pub(crate) fn charge_cpu(&mut self, w: &mut World, ns: f64) {
        if ns <= 0.0 {
            return;
        }
        self.cpu = self.own_cpu(w);
        self.kthreads.run(w, self.cpu, ns);
        self.cpu_ns += w.host_wall(ns);
    }

    /// The threads that move pages in this pass, as the live daemon counts them before it
    /// acts: the CPU time since the last pass that no other program used; and the CPUs
    /// each managed process used, whose whole moves may take as many.
    fn count_movers(&mut self, w: &World, procs: &[ProcessObs], threads: &[ThreadObs]) {
        let idle = w.cpu_idle_ns();
        if let Some((then, before, own_then)) = &self.last_idle {
            let own = (self.cpu_ns - own_then) as u64;
            self.movers = numabal_daemon::pacing::movers(before, &idle, own, w.now() - then);
        }
        self.last_idle = Some((w.now(), idle, self.cpu_ns));
        self.cpus_used = self
            .process_cpus
            .update(w.now(), process_times(procs, threads));
    }

    /// The CPU the daemon's thread runs on now: where it is still running if it is, else
    /// the first idle CPU of its node from the one it last ran on, else that one.
    fn own_cpu(&self, w: &World) -> usize {
        if self.kthreads.running(self.cpu, w.now()) {
            return self.cpu;
        }
        let node = w.machine().cpus[self.cpu].node;
        match self.kthreads.cpu(w, self.cpu, node) {
            (c, 0) => c,
            _ => self.cpu,
        }
    }

    /// Where `movers` threads copy this tick: the daemon's own thread where it runs
    /// ([`Self::own_cpu`]), the others each on an idle CPU not held (woken from the
    /// daemon's CPU, so searched from it on), else on the CPU with the fewest runnable
    /// threads that no other mover took (the load balancer spreads runnable threads over
    /// the CPUs), else beside the daemon's own thread.
    fn mover_cpus(&self, w: &World, movers: usize) -> Vec<usize> {
        let nr = w.machine().nr_cpus();
        let own = self.own_cpu(w);
        let mut on = vec![own];
        for _ in 1..movers {
            let from_own = (1..nr).map(|k| (own + k) % nr).filter(|c| !on.contains(c));
            let idle = from_own
                .clone()
                .find(|&c| w.sched().is_idle(c) && !self.kthreads.running(c, w.now()));
            let least = || from_own.min_by_key(|&c| w.sched().rq(c).len());
            on.push(idle.or_else(least).unwrap_or(own));
        }
        on
    }

    /// The share of its CPU each of `movers` threads gets this tick ([`Self::mover_cpus`]):
    /// with k runnable threads and j movers there, 1/(k + j), as CFS gives threads of
    /// equal weight; on an idle CPU of its own, all of it. (Before 2026-11-28 a mover took
    /// its CPU whole, as a kernel thread would, and movers that found no idle CPU all ran
    /// whole on the daemon's: on a machine with every CPU busy, five movers took five CPUs'
    /// time from one.)
    pub(crate) fn mover_shares(&self, w: &World, movers: usize) -> Vec<f64> {
        let placed = self.mover_placement(w, movers);
        placed.into_iter().map(|(_, share)| share).collect()
    }

    /// Where `movers` threads copy this tick ([`Self::mover_cpus`]) and the share of its
    /// CPU each gets ([`Self::mover_shares`]): for the movers of several processes moved
    /// at once, placed together, the daemon's own thread first.
    pub(crate) fn mover_placement(&self, w: &World, movers: usize) -> Vec<(usize, f64)> {
        let on = self.mover_cpus(w, movers);
        let sharing = |c: usize| w.sched().rq(c).len() + on.iter().filter(|&&o| o == c).count();
        on.iter().map(|&c| (c, 1.0 / sharing(c) as f64)).collect()
    }

    /// The movers at `on` (CPU, share; `own`: the first is the daemon's own thread) copy
    /// for `ns` times their share each, taking the time from the threads there.
    pub(crate) fn charge_movers_at(
        &mut self,
        w: &mut World,
        ns: f64,
        on: &[(usize, f64)],
        own: bool,
    ) {
        for (k, &(c, share)) in on.iter().enumerate() {
            if own && k == 0 {
                self.charge_cpu(w, ns * share);
            } else {
                self.kthreads.run(w, c, ns * share);
                self.cpu_ns += w.host_wall(ns * share);
            }
        }
    }

    /// The movers copy for `ns` times their share each ([`Self::mover_shares`]), on the
    /// CPUs [`Self::mover_cpus`] gives, taking the time from the threads there.
    fn charge_movers(&mut self, w: &mut World, ns: f64, shares: &[f64]) {
        let on = self.mover_cpus(w, shares.len());
        let placed: Vec<(usize, f64)> = on.into_iter().zip(shares.iter().copied()).collect();
        self.charge_movers_at(w, ns, &placed, true);
    }
}

impl UserSpace {
    /// A pass of numabal's daemon.
    pub(crate) fn numabal_pass(&mut self, w: &mut World) -> Result<(), SimError> {
        let mut d = self.numabal.take().expect("a numabal daemon");
        if let Some((due, at, idle)) = d.idle_look.take() {
            let now_idle: u64 = w.cpu_idle_ns().iter().sum();
            let busy = host_busy(idle, now_idle, w.now() - at, w.machine().nr_cpus());
            if w.now() < due && !busy {
                let look = idle_look_gap_ns(&d.d.settings, &*self.policy);
                w.push_event(due.min(w.now() + look), EventKind::PolicyTick);
                d.idle_look = Some((due, w.now(), now_idle));
                self.numabal = Some(d);
                return Ok(());
            }
        }
        if d.pass == 0 {
            d.start(w, &*self.policy);
        }
        let (procs, threads, observe_ns) = d.observe(w);
        let managed = d.judge(w, &procs);
        d.keep_managed(w, &procs, &managed);
        let threads: Vec<ThreadObs> = threads
            .into_iter()
            .filter(|t| managed.contains(&t.pid.0))
            .collect();
        let procs: Vec<ProcessObs> = procs
            .into_iter()
            .filter(|p| managed.contains(&p.pid.0))
            .collect();
        // A managed process's main thread that exited keeps its entry: its threads run on
        // with the mask they inherited from it, and judge reads the process's affinity there.
        d.changed.retain(|t, c| {
            threads.iter().any(|o| o.tid == *t)
                || (managed.contains(&c.pid.0)
                    && w.main_thread(c.pid.idx() - 1) == Some(t.idx() - 1))
        });
        let wanted: BTreeSet<u32> = (managed.iter().copied())
            .filter(|&p| self.policy.wants_samples(Pid(p)))
            .collect();
        let (samples, sample_ns) = d.sample(w, &threads, &managed, &wanted);
        let mut out = std::mem::take(&mut d.actions);
        out.clear();
        self.observe_and_tick(w, &threads, &procs, &samples, &mut out);
        // Cleared after the decisions: a process placed at once and no longer wanted is
        // not cleared for nothing.
        let wanted: BTreeSet<u32> = (managed.iter().copied())
            .filter(|&p| self.policy.wants_samples(Pid(p)))
            .collect();
        d.watch_wanted(w, &wanted);
        let clear_ns = d.clear_soft_dirty_bits(w, &managed, &wanted);
        d.charge_cpu(w, observe_ns + sample_ns + clear_ns);
        d.count_movers(w, &procs, &threads);
        for a in &out {
            self.numabal_act(&mut d, w, a, &threads, &procs);
        }
        let cpus_used = |pidx: usize| d.cpus_used.get(&(pidx as u32 + 1)).copied().unwrap_or(0);
        self.share_out_movers(w, d.movers, cpus_used);
        d.actions = out;
        d.pass += 1;
        let mut next = w.now() + pass_gap_ns(&d.d.settings, &*self.policy, d.managed_count);
        if d.managed_count == 0 {
            let look = idle_look_gap_ns(&d.d.settings, &*self.policy);
            let idle: u64 = w.cpu_idle_ns().iter().sum();
            d.idle_look = Some((next, w.now(), idle));
            next = next.min(w.now() + look);
        }
        if self.daemon.has_jobs() {
            self.daemon.defer_pass_until(next);
        } else {
            w.push_event(next, EventKind::PolicyTick);
        }
        self.numabal = Some(d);
        Ok(())
    }

    /// Carry out one action as the live actuator does, logging it.
    fn numabal_act(
        &mut self,
        d: &mut NumabalDaemon,
        w: &mut World,
        a: &Action,
        threads: &[ThreadObs],
        procs: &[ProcessObs],
    ) {
        let t_s = NumabalDaemon::t_s(w);
        let pid_of = |tid: Tid| threads.iter().find(|t| t.tid == tid).map(|t| t.pid);
        match a {
            Action::Log { pid, message } => {
                d.log.push(line::decision(t_s, *pid, message));
                self.policy_log(w, *pid, message);
            }
            Action::SetThreadAffinity { tid, cpus } => {
                let v = set_affinity(d, w, *tid, cpus, pid_of(*tid));
                d.log.push(v);
            }
            Action::MoveThread { tid, node } => {
                let cpus = w.machine().nodes.get(*node).map(|n| n.cpus.clone());
                let cpus = cpus.unwrap_or_default();
                let v = set_affinity(d, w, *tid, &cpus, pid_of(*tid));
                d.log.push(v);
            }
            Action::MovePages { pid, addrs, node } => {
                self.numabal_move_pages(d, w, *pid, addrs, *node, procs)
            }
            Action::MigrateProcessPages { pid, from, to } => {
                let v = line::migrate_pages(t_s, *pid, *from, *to);
                self.numabal_migrate_pages(d, w, *pid, *from, &[*to], v, procs)
            }
            Action::InterleaveProcessPages { pid, from, nodes } => {
                let v = line::interleave_pages(t_s, *pid, *from, nodes);
                self.numabal_migrate_pages(d, w, *pid, *from, nodes, v, procs)
            }
            other => d.log.push(
                serde_json::json!({"t_s": t_s, "not_done": format!("{other:?}"),
                "why": "not a live action (mempolicies are set by the program or numactl)"}),
            ),
        }
    }

    /// `move_pages` of what the budget allows now; the rest is left for a later pass.
    fn numabal_move_pages(
        &mut self,
        d: &mut NumabalDaemon,
        w: &mut World,
        pid: Pid,
        addrs: &[u64],
        node: usize,
        procs: &[ProcessObs],
    ) {
        let mut v = line::move_pages(NumabalDaemon::t_s(w), pid, addrs.len(), node);
        let mems = procs.iter().find(|p| p.pid == pid).map(|p| &p.mems_allowed);
        if !line::admit(&mut d.counts, &mut v, "move_pages", node, mems) {
            d.log.push(v);
            return;
        }
        let mut pages = super::daemon::folios_at(w, pid.idx() - 1, addrs);
        let n = within_budget(pages.iter().map(|&(_, p)| p), d.rate.pages(w.now()) as u64);
        let deferred = super::daemon::base_pages(&pages[n..]);
        if deferred > 0 {
            d.counts.pages_deferred += deferred;
            v["deferred"] = deferred.into();
        }
        pages.truncate(n);
        // Charged as the call is made, the pages that do not move refunded when it returns:
        // the live daemon's calls are synchronous, so the next call of the pass sees the
        // bucket less what this one moved.
        d.rate
            .charge(super::daemon::base_pages(&pages) as f64 * PAGE);
        d.log.push(v);
        let at = d.log.len() - 1;
        self.queue_move_pages(w, pid, pages, node, Some(at), d.movers);
    }

    /// `migrate_pages` (`to`: one node), or the spread of the pages on `from` over `to`,
    /// when the budget has a page left; charged after it returns. `v`: its log line.
    #[allow(clippy::too_many_arguments)]
    fn numabal_migrate_pages(
        &mut self,
        d: &mut NumabalDaemon,
        w: &mut World,
        pid: Pid,
        from: usize,
        to: &[usize],
        mut v: Value,
        procs: &[ProcessObs],
    ) {
        let mems = procs.iter().find(|p| p.pid == pid).map(|p| &p.mems_allowed);
        if !(to.iter()).all(|&n| line::admit(&mut d.counts, &mut v, "migrate_pages", n, mems)) {
            d.log.push(v);
            return;
        }
        let bytes = procs
            .iter()
            .find(|p| p.pid == pid)
            .and_then(|p| p.node_bytes.get(from).copied())
            .unwrap_or(0);
        if d.rate.pages(w.now()) == 0 {
            d.counts.pages_deferred += bytes / 4096;
            v["deferred"] = (bytes / 4096).into();
            d.log.push(v);
            return;
        }
        // The live daemon charges the process's bytes on `from` after the call returns;
        // here as it is made, which the pass's next call sees the same way.
        d.rate.charge(bytes as f64);
        d.log.push(v);
        let at = d.log.len() - 1;
        d.charged.insert(at, bytes);
        let cpus = d.cpus_used.get(&pid.0).copied().unwrap_or(0);
        let movers = process_movers(d.movers, cpus);
        self.queue_migrate_pages(w, pid, from, to, Some(at), movers);
    }

    /// The outcome of a queued call of the numabal daemon: its line completed, the budget
    /// charged with what it moved.
    pub(crate) fn numabal_call_done(&mut self, done: super::daemon::CallDone) {
        let Some(d) = self.numabal.as_mut() else {
            return;
        };
        d.counts.pages_moved += done.moved;
        let v = &mut d.log[done.line];
        v["moved"] = done.moved.into();
        if done.movers > 1 {
            v["movers"] = done.movers.into();
        }
        match done.page_errors {
            None => {
                // migrate_pages: what did not move (pages that stayed, pages other
                // processes map) is given back to the bucket, as the live daemon charges
                // only what left the node.
                let charged = d.charged.remove(&done.line).unwrap_or(0) as f64;
                d.rate
                    .charge(-(charged - done.moved as f64 * PAGE).max(0.0));
                d.counts.pages_failed += done.failed;
                v["not_moved"] = done.failed.into();
            }
            Some(e) => {
                // move_pages: the addresses that did not move are given back to the bucket.
                d.rate.charge(-(done.failed as f64) * PAGE);
                let mut not_moved = NotMoved::default();
                not_moved.add("EFAULT", e.efault);
                not_moved.add("ENOENT", e.enoent);
                not_moved.add("EACCES", e.eacces);
                not_moved.add("ENOMEM", e.enomem);
                not_moved.record(&mut d.counts, v);
            }
        }
    }

    /// The kernel time of the daemon's calls this tick: `ns` times each mover's share of
    /// its CPU ([`NumabalDaemon::mover_shares`]).
    pub(crate) fn numabal_charge(&mut self, w: &mut World, ns: f64, shares: &[f64]) {
        if let Some(d) = self.numabal.as_mut() {
            d.charge_movers(w, ns, shares);
        }
    }

    /// At the end of the run: what a stop logs (restore lines, the stop line).
    pub(crate) fn numabal_stop(&mut self, w: &World) {
        let Some(d) = self.numabal.as_mut() else {
            return;
        };
        // Calls still running when the run ends: their lines say so (the live daemon's stop
        // waits for its synchronous call; a run's end does not).
        for at in self.daemon.pending_lines() {
            d.log[at]["pending"] = true.into();
        }
        let node_cpus: Vec<Mask> = w.machine().nodes.iter().map(|n| n.cpus.clone()).collect();
        let placement = line::placement(d.changed.values().map(|c| (c.pid, &c.ours)), &node_cpus);
        for (tid, c) in &d.changed {
            d.log.push(line::restore(tid.0, c.pid, &c.original));
        }
        d.log.push(line::stop(&line::Stop {
            passes: d.pass,
            wall_s: w.now() as f64 / NS,
            cpu_s: d.cpu_ns / NS,
            samples: w.perf_samples_total() + d.damon_samples,
            managed_last_pass: d.managed_count,
            counts: d.counts.clone(),
            placement,
        }));
    }

    /// The daemon's part of the result.
    pub fn daemon_report(&self, w: &World) -> Option<DaemonReport> {
        let d = self.numabal.as_ref()?;
        Some(DaemonReport {
            policy_type: self.policy.type_name().to_string(),
            settings: d.d.settings.clone(),
            soft_dirty_faults: w.soft_dirty_faults(),
            damon_checks: w.damon_checks(),
            log: d.log.clone(),
        })
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Raw samples with their pages' nodes (the world's page, as a `move_pages` query) and
/// their CPUs' nodes; samples of processes gone are dropped.
fn resolve(
    w: &World,
    raw: &[RawSample],
    threads: &[ThreadObs],
    managed: &BTreeSet<u32>,
) -> Vec<AccessSample> {
    let cpu_nodes: Vec<Option<usize>> = w.machine().cpus.iter().map(|c| Some(c.node)).collect();
    let live: BTreeSet<usize> = threads.iter().map(|t| t.pid.idx() - 1).collect();
    numabal_daemon::resolve(raw, managed, &cpu_nodes, |pid, addrs| {
        let pidx = pid as usize - 1;
        live.contains(&pidx).then(|| {
            addrs
                .iter()
                .map(|&a| {
                    w.page_at(pidx, a)
                        .and_then(|(ri, p)| w.page_node(pidx, ri, p))
                })
                .collect()
        })
    })
}

/// `sched_setaffinity` within the thread's own affinity (its cpuset and whatever the
/// program set), remembering the original for the stop.
fn set_affinity(
    d: &mut NumabalDaemon,
    w: &mut World,
    tid: Tid,
    cpus: &Mask,
    pid: Option<Pid>,
) -> Value {
    let t_s = NumabalDaemon::t_s(w);
    let Some(pid) = pid else {
        return line::thread_gone(&mut d.counts, t_s, tid.0);
    };
    let t = tid.idx() - 1;
    let original = match d.changed.get(&tid) {
        Some(c) => c.original.clone(),
        None => line::own_affinity(&d.changed, pid, w.sched().tasks[t].allowed.clone()),
    };
    let want = match line::within_own_affinity(&mut d.counts, t_s, tid.0, pid, cpus, &original) {
        Ok(m) => m,
        Err(refused) => return refused,
    };
    w.set_affinity(t, want.clone());
    // clone() copies the creator's mask: threads the main thread starts later get it.
    if w.main_thread(pid.idx() - 1) == Some(t) {
        w.set_inherited_affinity(pid.idx() - 1, want.clone());
    }
    d.counts.affinity_changes += 1;
    d.changed.insert(
        tid,
        Changed {
            pid,
            original,
            ours: want.clone(),
        },
    );
    line::affinity(t_s, tid.0, Some(pid.0), &want)
}
