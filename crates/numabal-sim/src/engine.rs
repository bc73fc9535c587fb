//! The simulation loop: events in total order; between events every running thread
//! progresses at the rate the cost model gives it.
//!
//! ```text
//!   loop:
//!     t1 = next event time (a tick at most tick_ms away)
//!     advance(t0, t1):  shares per CPU -> demands -> CostModel::solve -> run each thread
//!                       (accesses, first touches, phase changes) -> load averages
//!     handle events at t1: process/group start, wakeups, tick (rotation, load balancing)
//! ```

use crate::autonuma::tunables::{Flavour, Tunables};
use crate::cost::{CostModel, Demand};
use crate::event::{EventKind, EventQueue};
use crate::memory::{CHUNK, MemObject, PAGE_BYTES};
use crate::result::{Metrics, ProcessResult, RunResult, ScenarioSummary, StallHistogram};
use crate::sched::{CanMigrate, Cause, LbCtx, NR_CAUSES, Sched};
#[allow(clippy::wildcard_imports)]
use crate::world::*;
use numabal_model::mempolicy::MemPolicySpec;
use numabal_model::scenario::Thp;
use numabal_model::workload::{Pattern, PhaseSpec, RegionKind, SharedKind, Slice, thread_slice};
use numabal_model::{InputError, MemPolicy, Pid, Scenario, Tid};
use numabal_policy::{
    Action, GroupInfo, MigrateVerdict, Policy, ProcessInfo, RegionInfo, ThreadInfo,
};
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::collections::BTreeMap;

/// Why a run could not complete.
#[derive(Debug, Clone, PartialEq)]
pub enum SimError {
    /// The scenario asks for something impossible (reported like bad input, exit 2).
    Input(InputError),
    /// An invariant broke: a simulator bug.
    Invariant(String),
}

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimError::Input(e) => write!(f, "{e}"),
            SimError::Invariant(s) => write!(f, "internal error: invariant violated: {s}"),
        }
    }
}

impl std::error::Error for SimError {}

impl From<InputError> for SimError {
    fn from(e: InputError) -> Self {
        SimError::Input(e)
    }
}

mod aa2012;
mod daemon;
mod numab;
mod progress;
mod stable;

pub use aa2012::{Aa2012Report, Aa2012Stats, MmAutonumaReport, TaskAutonumaReport};
pub use daemon::{NodeState, NodeStateAtEnd, PolicyLogEntry};
use numab::Numab;
pub use numab::{NumabStats, TraceEvent};
pub use progress::RunProgress;
pub use stable::{StableReport, StableStats};

/// A simulation in progress: the world, and what acts on it.
pub struct Sim<'a> {
    world: World<'a>,
    policy: Box<dyn Policy>,
    actions: Vec<Action>,
    /// The kernel's NUMA balancing model, when the policy is `autonuma`.
    numab: Option<Numab>,
    /// Stable-NUMA's mechanism and policy core, when the policy is `stable`.
    stable: Option<stable::StableRt>,
    /// A user-space daemon's queued `migrate_pages` calls and decision log.
    daemon: daemon::DaemonRt,
    /// Told where the run is about once per simulated second (progress reports).
    progress: Option<&'a (dyn Fn(RunProgress) + Sync)>,
    /// The workload's nominal duration (`progress.rs`), when there is someone to tell.
    nominal_total_ns: f64,
}
/// Run a scenario to completion.
pub fn run(sc: &Scenario) -> Result<RunResult, SimError> {
    run_observed(sc, None)
}

/// Run a scenario to completion, telling `progress` the simulated time and the share of
/// the run done about once per simulated second (it cannot change the run).
pub fn run_observed(
    sc: &Scenario,
    progress: Option<&(dyn Fn(RunProgress) + Sync)>,
) -> Result<RunResult, SimError> {
    use crate::policies::Built;
    // The simulator's own models (kernel NUMA balancing, Stable-NUMA's mechanism) run
    // beside no core policy.
    let none = || Box::new(numabal_policy::static_policies::NoPolicy);
    let mut sim = match crate::policies::build(&sc.policy)? {
        Built::Core(p) => Sim::new(sc, p),
        Built::Kernel(flavour, tun) => {
            let mut sim = Sim::new(sc, none());
            sim.enable_kernel_numa(flavour, tun);
            sim
        }
        Built::Stable(tun) => {
            let mut sim = Sim::new(sc, none());
            sim.enable_stable(tun);
            sim
        }
    };
    sim.progress = progress;
    sim.run()?;
    Ok(sim.result())
}

/// Run a scenario under a policy object (for policies not in the registry, e.g. tests).
pub fn run_with(sc: &Scenario, policy: Box<dyn Policy>) -> Result<RunResult, SimError> {
    let mut sim = Sim::new(sc, policy);
    sim.run()?;
    Ok(sim.result())
}

fn resolve_policy(
    spec: &Option<MemPolicySpec>,
    nr_nodes: usize,
    random_node: usize,
    label: &str,
) -> Result<Option<MemPolicy>, SimError> {
    match spec {
        None => Ok(None),
        Some(s) => s
            .resolve(nr_nodes, random_node)
            .map(Some)
            .map_err(|e| SimError::Input(InputError::new(label, "mempolicy", e))),
    }
}

impl<'a> Sim<'a> {
    /// Set up a simulation (nothing runs until `run`).
    pub fn new(sc: &'a Scenario, policy: Box<dyn Policy>) -> Self {
        let m = &sc.machine;
        let mut rng = Pcg64Mcg::seed_from_u64(sc.sim.seed ^ 0x6e75_6d61_6261_6c00);
        let with_mem: Vec<usize> = (0..m.nr_nodes())
            .filter(|&n| m.node_usable_pages(n) > 0)
            .collect();
        let random_node = with_mem[rng.random_range(0..with_mem.len())];
        let tick_ns = (sc.sim.tick_ms * 1e6).round() as u64;
        Sim {
            world: World {
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
                    s
                },
                cost: CostModel::new(m),
                objects: Vec::new(),
                obj_refs: Vec::new(),
                obj_owner: Vec::new(),
                shared_objs: Vec::new(),
                node_used: vec![0; m.nr_nodes()],
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
                // Roughly the kernel's high watermark of a node (min_free_kbytes-derived): 1/256.
                wmark_high: (0..m.nr_nodes())
                    .map(|n| m.node_usable_pages(n) / 256)
                    .collect(),
                migrations: [0; NR_CAUSES],
                left_node_at: Vec::new(),
                ping_pong: Default::default(),
                migrate_shootdowns: 0,
                thp_enabled: sc.sim.transparent_hugepage,
                check: sc.sim.check_invariants,
                scratch_hist: vec![0; m.nr_nodes()],
                interval_end: None,
                late: Vec::new(),
                cpu_free_from: vec![None; m.nr_cpus()],
                stalls: StallHistogram::default(),
                numastat: Vec::new(),
                next_instance: Vec::new(),
                cpu_busy_ns: vec![0.0; m.nr_cpus()],
                busy_snapshots: std::collections::VecDeque::new(),
                series: crate::series::Recorder::new(m.nr_nodes(), sc.sim.series_every_s),
            },
            policy,
            actions: Vec::new(),
            numab: None,
            stable: None,
            daemon: daemon::DaemonRt::default(),
            progress: None,
            nominal_total_ns: 0.0,
        }
    }

    /// Run the kernel's NUMA balancing (`autonuma`, `autonuma-2012`).
    pub fn enable_kernel_numa(&mut self, flavour: Flavour, tun: Tunables) {
        let cpu_nodes: Vec<usize> = self.world.machine.nodes_with_cpus().iter().collect();
        let aa = (flavour == Flavour::AutoNuma2012).then(|| {
            // knuma_scand has run since boot: the workload starts at a random point of
            // its sleep between passes.
            let first = self
                .world
                .rng
                .random_range(0..=tun.scan_sleep_pass_millisecs * 1_000_000);
            let node_cpu: Vec<usize> = (0..self.world.machine.nr_nodes())
                .map(|n| self.world.machine.nodes[n].cpus.iter().next().unwrap_or(0))
                .collect();
            aa2012::Aa::new(self.world.machine.nr_nodes(), first, &node_cpu)
        });
        let mut nb = Numab::new(flavour, tun, cpu_nodes, self.world.machine.nr_cpus());
        nb.aa = aa;
        self.numab = Some(nb);
    }

    /// Run Stable-NUMA (`stable`): its scanner, hinting faults and thread clustering.
    pub fn enable_stable(&mut self, tun: numabal_policy::stable::Tunables) {
        let node_cpus: Vec<u32> = self
            .world
            .machine
            .nodes
            .iter()
            .map(|n| n.cpus.iter().count() as u32)
            .collect();
        self.stable = Some(stable::StableRt::new(&node_cpus, tun));
    }

    /// The load balancer's question: the policy's veto, then NUMA locality.
    fn can_migrate(&self, ctx: &LbCtx) -> CanMigrate {
        if self
            .policy
            .can_migrate_task(Tid(ctx.tid + 1), ctx.src_node, ctx.dst_node)
            != MigrateVerdict::Allow
            || !self.stable_can_migrate(ctx.tid as usize, ctx.src_node, ctx.dst_node)
        {
            return CanMigrate::No;
        }
        self.numab_can_migrate(ctx)
    }

    fn thp_for(&self, requested: bool, file: bool) -> bool {
        !file
            && match self.world.thp_enabled {
                Thp::Never => false,
                Thp::Madvise => requested,
                Thp::Always => true,
            }
    }

    /// Run until every thread finished or `max_time_s`.
    pub fn run(&mut self) -> Result<(), SimError> {
        if self.progress.is_some() {
            self.nominal_total_ns = self.nominal_total_ns();
        }
        let wl = &self.world.sc.workload;
        for s in &wl.spec.shared {
            let pages = s.size.pages();
            let thp = self.thp_for(s.thp, s.kind == SharedKind::File);
            self.world
                .objects
                .push(MemObject::new(pages, thp, self.world.machine.nr_nodes()));
            self.world.obj_refs.push(0);
            self.world.obj_owner.push(None);
            self.world.shared_objs.push(self.world.objects.len() - 1);
        }
        // Process starts: instance k of a [[process]] forks a little after k-1; with
        // `jobs`, only the first `jobs` now, the others as earlier ones exit.
        for (pi, p) in wl.spec.processes.iter().enumerate() {
            let mut t = p.start_s * NS;
            self.world.pending_starts += (p.instances - p.jobs.unwrap_or(p.instances)) as usize;
            self.world.next_instance.push(p.jobs.unwrap_or(p.instances));
            for inst in 0..p.jobs.unwrap_or(p.instances) {
                let jitter = self.world.rng.random_range(0.0..1.0) * 1e6;
                self.world.events.push(
                    (t + jitter) as u64,
                    EventKind::ProcessStart {
                        spec: pi as u32,
                        instance: inst,
                    },
                );
                self.world.pending_starts += 1;
                t += self.world.machine.spec.costs.thread_spawn_ns * 4.0;
            }
        }
        self.world.events.push(self.world.tick_ns, EventKind::Tick);
        let at: Vec<u64> = self
            .world
            .sc
            .sim
            .numastat_at_s
            .iter()
            .map(|&t| self.on_tick(t))
            .collect();
        for t in at {
            self.world
                .events
                .push(t, EventKind::NumastatSample { periodic: false });
        }
        let every = self.world.sc.sim.numastat_every_s;
        if every > 0.0 {
            self.world.events.push(
                self.on_tick(every),
                EventKind::NumastatSample { periodic: true },
            );
        }
        if let Some(i) = self.policy.tick_interval_ns() {
            self.world.events.push(i.max(1), EventKind::PolicyTick);
        }
        let mut t0 = 0u64;
        loop {
            if self.work_done() {
                break;
            }
            let Some(t1) = self.world.events.peek_time() else {
                break;
            };
            if t1 >= self.world.max_ns {
                self.advance(t0, self.world.max_ns)?;
                self.world.now = self.world.max_ns;
                break;
            }
            if t1 < t0 {
                return Err(SimError::Invariant(format!(
                    "event at {t1} ns is before the present {t0} ns"
                )));
            }
            if t1 > t0 {
                self.advance(t0, t1)?;
                t0 = t1;
            }
            self.world.now = t1;
            while self.world.events.peek_time() == Some(t1) {
                let ev = self.world.events.pop().expect("peeked");
                self.handle(ev.kind)?;
            }
            self.count_moves();
        }
        self.series_sample(true);
        Ok(())
    }

    fn handle(&mut self, kind: EventKind) -> Result<(), SimError> {
        match kind {
            EventKind::ProcessStart { spec, instance } => {
                self.world.pending_starts -= 1;
                self.start_process(spec as usize, instance)?;
            }
            EventKind::GroupStart { proc_idx, group } => {
                self.world.pending_starts -= 1;
                let home = self.world.procs[proc_idx as usize].home_cpu;
                self.start_group(proc_idx as usize, group as usize, home, self.world.now)?;
            }
            EventKind::Wake { tid } => {
                let t = tid as usize;
                if self.world.threads[t].state == TState::Sleeping {
                    self.wake(t, self.world.now);
                }
            }
            EventKind::Tick => {
                if self.numab.is_some() {
                    self.numab_tick();
                }
                if self.stable.is_some() {
                    self.stable_tick();
                }
                self.world.sched.rotate();
                let mut sched = std::mem::take(&mut self.world.sched);
                sched.tick_balance(self.world.now, self.world.tick_ns, &|c: &LbCtx| {
                    self.can_migrate(c)
                });
                self.world.sched = sched;
                if self.numab.as_ref().is_some_and(|n| n.aa.is_some()) {
                    self.aa_sched_balance();
                }
                if self.world.check {
                    self.check_invariants()?;
                }
                self.check_deadlock()?;
                if self.daemon.has_jobs() {
                    self.run_migrate_pages();
                }
                self.snapshot_busy();
                if self.world.series.due(self.world.now) {
                    self.series_sample(false);
                }
                if let Some(p) = self.progress
                    && self.world.now % 1_000_000_000 < self.world.tick_ns
                {
                    p(self.run_progress());
                }
                self.world
                    .events
                    .push(self.world.now + self.world.tick_ns, EventKind::Tick);
            }
            EventKind::NumastatSample { periodic } => self.numastat_sample(periodic),
            EventKind::PolicyTick => self.policy_tick()?,
        }
        Ok(())
    }

    /// `t` seconds rounded up to a tick (a tick is an event already, so a sample there adds
    /// no step to the run and cannot change it).
    fn on_tick(&self, t: f64) -> u64 {
        ((t * NS) as u64).div_ceil(self.world.tick_ns).max(1) * self.world.tick_ns
    }

    /// Record every live process's memory per node now (once per instant, when samples
    /// coincide); a periodic sample schedules the next multiple of `numastat_every_s`
    /// (counted from 0, so rounding to ticks does not drift).
    fn numastat_sample(&mut self, periodic: bool) {
        if periodic {
            let every = self.world.sc.sim.numastat_every_s;
            let k = (self.world.now as f64 / NS / every).round() + 1.0;
            let next = self
                .on_tick(k * every)
                .max(self.world.now + self.world.tick_ns);
            self.world
                .events
                .push(next, EventKind::NumastatSample { periodic: true });
        }
        if self
            .world
            .numastat
            .last()
            .is_some_and(|l| l.t_s == self.world.now as f64 / NS)
        {
            return;
        }
        let processes = (0..self.world.procs.len())
            .filter(|&i| {
                self.world.procs[i].end_ns.is_none() && !self.world.procs[i].regions.is_empty()
            })
            .map(|i| crate::result::NumastatProcess {
                pid: i as u32 + 1,
                name: self.world.procs[i].name.clone(),
                node_mb: self.process_node_mb(i),
                work_units: self.world.procs[i].work_units,
            })
            .collect();
        self.world.numastat.push(crate::result::NumastatSample {
            t_s: self.world.now as f64 / NS,
            processes,
        });
    }

    /// The node a thread runs on (or last ran on).
    fn thread_node(&self, t: usize) -> usize {
        let task = &self.world.sched.tasks[t];
        self.world.machine.cpus[task.cpu.unwrap_or(task.prev_cpu)].node
    }

    /// A time-series sample now (it reads counters only). `at_end`: the run's last, which
    /// also has the processes that exited since the previous sample, at their exit.
    fn series_sample(&mut self, at_end: bool) {
        let node_mb: Vec<f64> = self
            .world
            .node_used
            .iter()
            .map(|&p| p as f64 * PAGE_BYTES / (1u64 << 20) as f64)
            .collect();
        if at_end && self.world.series.last_ns() == Some(self.world.now) {
            self.world.series.pop_last();
        }
        let since = self.world.series.last_ns();
        // Index, name, MiB per node, (local, remote) bytes: of each process to sample.
        type Sampled = (usize, String, Vec<f64>, (f64, f64));
        let procs: Vec<Sampled> = (0..self.world.procs.len())
            .filter_map(|i| {
                let p = &self.world.procs[i];
                let mb = match (p.end_ns, &p.node_mb_end) {
                    (None, _) if !p.regions.is_empty() => self.process_node_mb(i),
                    (Some(e), Some(mb)) if at_end && since.is_none_or(|s| e > s) => mb.clone(),
                    _ => return None,
                };
                Some((i, p.name.clone(), mb, (p.bytes_local, p.bytes_remote)))
            })
            .collect();
        let now = self.world.now;
        self.world.series.sample(
            now,
            &node_mb,
            procs
                .iter()
                .map(|(i, name, mb, b)| (*i, name.as_str(), mb.as_slice(), *b)),
        );
    }

    /// Every process has started and every thread of a non-daemon process is done.
    fn work_done(&self) -> bool {
        self.world.pending_starts == 0
            && self
                .world
                .threads
                .iter()
                .any(|t| !self.world.procs[t.proc].daemon)
            && self
                .world
                .threads
                .iter()
                .all(|t| t.state == TState::Done || self.world.procs[t.proc].daemon)
    }

    /// A phase length with its jitter applied (`jitter` 0: exact, no draw).
    fn jittered(&mut self, ns: f64, jitter: f64) -> f64 {
        if jitter > 0.0 {
            ns * (1.0 + jitter * self.world.rng.random_range(-1.0..1.0))
        } else {
            ns
        }
    }

    fn count_moves(&mut self) {
        let nn = self.world.machine.nr_nodes();
        for mv in self.world.sched.moves.drain(..) {
            let (from, to) = (
                self.world.machine.cpus[mv.from].node,
                self.world.machine.cpus[mv.to].node,
            );
            if from == to || self.world.procs[self.world.threads[mv.tid as usize].proc].daemon {
                continue;
            }
            self.world.migrations[mv.cause as usize] += 1;
            self.world
                .series
                .thread_moved(self.world.threads[mv.tid as usize].proc, to);
            // Ping-pong: back on a node it left; the interval runs from the last departure.
            let t = mv.tid as usize;
            if self.world.left_node_at.len() <= t {
                self.world.left_node_at.resize(t + 1, Vec::new());
            }
            let left = &mut self.world.left_node_at[t];
            if left.is_empty() {
                left.resize(nn, u64::MAX);
            }
            if left[to] != u64::MAX {
                let s = self.world.now.saturating_sub(left[to]) as f64 / NS;
                self.world.ping_pong.record(s);
                self.world.metrics.thread_ping_pong_round_trips += 1;
                left[to] = u64::MAX;
            }
            left[from] = self.world.now;
        }
    }

    // ----- processes and threads ----------------------------------------------------

    fn start_process(&mut self, spec: usize, instance: u32) -> Result<(), SimError> {
        let wl = &self.world.sc.workload;
        let p = &wl.spec.processes[spec];
        let label = format!("workload {}: process {}", wl.spec.name, p.name);
        let n = self.world.machine.nr_nodes();
        let cpuset_cpus = wl.cpuset_cpus[spec].clone();
        let cpuset_mems = wl.cpuset_mems[spec].clone();
        let mut regions = Vec::new();
        for r in &p.regions {
            let wl_policy = resolve_policy(&r.mempolicy, n, self.world.random_node, &label)?;
            match &r.shared {
                Some(name) => {
                    let si = wl
                        .spec
                        .shared
                        .iter()
                        .position(|s| &s.name == name)
                        .expect("validated");
                    let obj = self.world.shared_objs[si];
                    self.world.obj_refs[obj] += 1;
                    let shared_policy = resolve_policy(
                        &wl.spec.shared[si].mempolicy,
                        n,
                        self.world.random_node,
                        &label,
                    )?;
                    let kind = wl.spec.shared[si].kind;
                    regions.push(Region {
                        obj,
                        pages: self.world.objects[obj].pages,
                        wl_policy: wl_policy.or(shared_policy),
                        ranges: Vec::new(),
                        file_ro: kind == SharedKind::File,
                        vm_shared: kind == SharedKind::Shm,
                    });
                }
                None => {
                    let pages = r.size.expect("validated").pages();
                    let file = r.kind == RegionKind::File;
                    let thp = self.thp_for(r.thp, file);
                    self.world.objects.push(MemObject::new(pages, thp, n));
                    self.world.obj_refs.push(1);
                    self.world.obj_owner.push(Some(self.world.procs.len()));
                    regions.push(Region {
                        obj: self.world.objects.len() - 1,
                        pages,
                        wl_policy,
                        ranges: Vec::new(),
                        file_ro: file,
                        vm_shared: false,
                    });
                }
            }
        }
        let mut groups = Vec::new();
        for (gi, g) in p.groups.iter().enumerate() {
            let mut phases = Vec::new();
            for ph in &g.phases {
                phases.push(match ph {
                    PhaseSpec::Access(a) => {
                        let region = p
                            .regions
                            .iter()
                            .position(|r| r.name == a.region)
                            .expect("validated");
                        let amount = match (a.passes, a.bytes, a.seconds) {
                            (_, Some(b), _) => Amount::Bytes(b.0 as f64),
                            (_, _, Some(s)) => Amount::Seconds(s),
                            _ => Amount::Bytes(0.0), // passes: resolved per thread from its slice
                        };
                        PhaseRt::Access(AccessRt {
                            region,
                            slice: a.slice,
                            pattern: a.pattern,
                            amount,
                            passes: a.passes,
                            ns_per_byte: a.ns_per_byte,
                            mlp: a.mlp,
                            cache_hit: a.cache_hit,
                            zipf_s: a.zipf_s.unwrap_or(1.0),
                            hot_fraction: a.hot_fraction.unwrap_or(0.1),
                            hot_weight: a.hot_weight.unwrap_or(0.9),
                            mempolicy: resolve_policy(
                                &a.mempolicy,
                                n,
                                self.world.random_node,
                                &label,
                            )?,
                        })
                    }
                    PhaseSpec::Compute(c) => PhaseRt::Compute(c.seconds * NS, c.jitter),
                    PhaseSpec::Sleep(s) => PhaseRt::Sleep(s.seconds * NS, s.jitter),
                    PhaseSpec::Spawn(r) => PhaseRt::Spawn(
                        p.groups
                            .iter()
                            .position(|o| o.name == r.group)
                            .expect("validated"),
                    ),
                    PhaseSpec::Join(r) => PhaseRt::Join(
                        p.groups
                            .iter()
                            .position(|o| o.name == r.group)
                            .expect("validated"),
                    ),
                    PhaseSpec::Barrier(_) => PhaseRt::Barrier,
                });
            }
            let spawned = p.groups.iter().any(|o| {
                o.phases
                    .iter()
                    .any(|ph| matches!(ph, PhaseSpec::Spawn(r) if r.group == g.name))
            });
            groups.push(GroupRt {
                name: g.name.clone(),
                nthreads: wl.threads[spec][gi],
                placement: g.placement,
                phases,
                iterations: g.iterations,
                work_per_iteration: g.work_per_iteration,
                affinity: wl.group_affinity[spec][gi].clone(),
                spawned,
                start_s: g.start_s,
                stagger_s: g.stagger_s,
                threads: Vec::new(),
                done: 0,
                joiners: Vec::new(),
                barrier_waiting: Vec::new(),
            });
        }
        let allowed = wl.affinity[spec]
            .clone()
            .unwrap_or_else(|| cpuset_cpus.clone())
            .and(&cpuset_cpus);
        let launcher = {
            let c: Vec<usize> = allowed.iter().collect();
            c[self.world.rng.random_range(0..c.len())]
        };
        let pidx = self.world.procs.len();
        let total_threads: u32 = groups.iter().map(|g| g.nthreads).sum();
        self.world.procs.push(Proc {
            daemon: p.daemon,
            name: p.name.clone(),
            spec,
            instance,
            regions,
            groups,
            cpuset_cpus,
            cpuset_mems,
            affinity: wl.affinity[spec].clone(),
            wl_policy: resolve_policy(&p.mempolicy, n, self.world.random_node, &label)?,
            policy_proc: None,
            home_cpu: launcher,
            start_ns: self.world.now,
            end_ns: None,
            threads: total_threads,
            live: 0,
            node_mb_end: None,
            bytes_local: 0.0,
            bytes_remote: 0.0,
            work_units: 0.0,
            work_units_warm: 0.0,
            inherited_affinity: None,
        });

        if self.numab.is_some() {
            self.numab_new_process(pidx);
        }
        if self.stable.is_some() {
            self.stable_new_process(pidx);
        }
        // Tell the policy.
        let info = self.process_info(pidx, spec);
        let mut out = std::mem::take(&mut self.actions);
        out.clear();
        self.policy
            .on_process_start(self.world.machine, &info, &mut out);
        self.apply_actions(&out)?;
        self.actions = out;

        // exec balancing from the launcher's CPU decides where the process starts.
        let home = self.world.sched.exec_cpu(&allowed, launcher);
        self.world.procs[pidx].home_cpu = home;
        let ngroups = self.world.procs[pidx].groups.len();
        for g in 0..ngroups {
            if self.world.procs[pidx].groups[g].spawned {
                continue;
            }
            let delay = self.world.procs[pidx].groups[g].start_s;
            if delay > 0.0 {
                self.world.pending_starts += 1;
                self.world.events.push(
                    self.world.now + (delay * NS) as u64,
                    EventKind::GroupStart {
                        proc_idx: pidx as u32,
                        group: g as u32,
                    },
                );
            } else {
                self.start_group(pidx, g, home, self.world.now)?;
            }
        }
        Ok(())
    }

    fn process_info(&self, pidx: usize, spec: usize) -> ProcessInfo {
        let p = &self.world.procs[pidx];
        let wl_p = &self.world.sc.workload.spec.processes[spec];
        let regions = p
            .regions
            .iter()
            .enumerate()
            .map(|(ri, r)| {
                let sliced_by = p.groups.iter().position(|g| {
                    g.phases.iter().any(|ph| matches!(ph, PhaseRt::Access(a) if a.region == ri && a.slice == Slice::Thread))
                });
                RegionInfo {
                    name: wl_p.regions[ri].name.clone(),
                    pages: r.pages,
                    sliced_by,
                    shared: wl_p.regions[ri].shared.is_some(),
                }
            })
            .collect();
        ProcessInfo {
            pid: Pid(pidx as u32 + 1),
            name: p.name.clone(),
            instance: p.instance,
            groups: p
                .groups
                .iter()
                .map(|g| GroupInfo {
                    name: g.name.clone(),
                    threads: g.nthreads,
                    placement: g.placement,
                })
                .collect(),
            regions,
            cpuset_cpus: p.cpuset_cpus.clone(),
            cpuset_mems: p.cpuset_mems.clone(),
        }
    }

    fn start_group(
        &mut self,
        pidx: usize,
        g: usize,
        creator_cpu: usize,
        at: u64,
    ) -> Result<(), SimError> {
        let n = self.world.procs[pidx].groups[g].nthreads;
        // A staggered group starts one thread now and the next `stagger_s` later.
        let first = self.world.procs[pidx].groups[g].threads.len() as u32;
        let stagger = self.world.procs[pidx].groups[g].stagger_s;
        let end = if stagger > 0.0 { (first + 1).min(n) } else { n };
        if end < n {
            self.world.pending_starts += 1;
            self.world.events.push(
                // Not before the interval being run (events are handled after it).
                (at + (stagger * NS) as u64).max(self.world.interval_end.unwrap_or(self.world.now)),
                EventKind::GroupStart {
                    proc_idx: pidx as u32,
                    group: g as u32,
                },
            );
        }
        let p = &self.world.procs[pidx];
        let base = p
            .inherited_affinity
            .clone()
            .or_else(|| p.affinity.clone())
            .unwrap_or_else(|| p.cpuset_cpus.clone());
        let base = p.groups[g]
            .affinity
            .clone()
            .unwrap_or(base)
            .and(&p.cpuset_cpus);
        for i in first..end {
            let tid = self.world.sched.add_task(base.clone(), creator_cpu) as usize;
            // Thread index == scheduler task id.
            debug_assert_eq!(tid, self.world.threads.len());
            // The process's first thread is the new process's task; later ones are its
            // threads (CLONE_VM), children of the first.
            let parent = self.world.procs[pidx]
                .groups
                .iter()
                .flat_map(|g| g.threads.first())
                .min()
                .copied();
            self.world
                .threads
                .push(Thread::new(pidx, g, i, TState::Runnable));
            if self.numab.is_some() {
                self.numab_new_task(tid, parent);
            }
            self.world.procs[pidx].groups[g].threads.push(tid);
            self.world.procs[pidx].live += 1;
            let info = ThreadInfo {
                tid: Tid(tid as u32 + 1),
                pid: Pid(pidx as u32 + 1),
                group: g,
                index: i,
                group_threads: n,
            };
            let mut out = std::mem::take(&mut self.actions);
            out.clear();
            self.policy
                .on_thread_start(self.world.machine, &info, &mut out);
            self.apply_actions(&out)?;
            self.actions = out;
            let cpu = self.world.sched.wake_new(tid as u32, creator_cpu);
            if self.stable.is_some() {
                self.stable_new_task(tid, cpu);
            }
            self.note_runnable(tid, at);
        }
        Ok(())
    }

    /// A thread became runnable at `at`; inside an interval it may use the rest of it.
    fn note_runnable(&mut self, t: usize, at: u64) {
        if self.world.interval_end.is_some_and(|end| at < end) {
            self.world.late.push(Late { t, at, wake: false });
        }
    }

    /// Kernel work (a fault, a migration, a scan) done in thread `t`'s context: it pays
    /// for it before running its own work again.
    /// One block of it is one interval in which the thread is kept from its own work.
    fn charge_kernel(&mut self, t: usize, cost: f64) {
        self.world.threads[t].debt_ns += cost;
        self.world.sys_ns += cost;
        self.stall(cost);
    }

    /// CPU time taken from thread `t` by something else on its CPU (a NUMA scan worker):
    /// it waits `ns` of its share without running, and that is not its CPU time.
    fn steal_cpu(&mut self, t: usize, ns: f64) {
        let th = &mut self.world.threads[t];
        th.debt_ns += ns;
        // Paying debt adds to `sum_exec_ns`; stolen time must not.
        th.sum_exec_ns -= ns;
    }

    /// A runnable thread was kept from its own work for `ns`.
    fn stall(&mut self, ns: f64) {
        if ns > STALL_NS {
            self.world.metrics.stall_events_over_1ms += 1;
        }
        let ms = ns / 1e6;
        self.world.metrics.stall_max_ms = self.world.metrics.stall_max_ms.max(ms);
        self.world.stalls.record(ms);
    }

    /// Thread `t` (already off its runqueue) waits until `when`: a sleep's end, a barrier's
    /// release, the end of the group it joins. Inside the current interval the wakeup is
    /// handled with the interval's other late events; later, by a `Wake` event.
    fn wake_at(&mut self, t: usize, when: u64) {
        self.world.threads[t].state = TState::Sleeping;
        if self.world.interval_end.is_some_and(|end| when < end) {
            self.world.late.push(Late {
                t,
                at: when,
                wake: true,
            });
        } else {
            self.world
                .events
                .push(when, EventKind::Wake { tid: t as u32 });
        }
    }

    fn apply_actions(&mut self, actions: &[Action]) -> Result<(), SimError> {
        for a in actions {
            match a {
                Action::SetThreadAffinity { tid, cpus } => {
                    let t = tid.0 as usize - 1;
                    let cs = &self.world.procs[self.world.threads[t].proc].cpuset_cpus;
                    let allowed = cpus.and(cs);
                    if !allowed.is_empty() {
                        self.world
                            .sched
                            .set_allowed(t as u32, allowed, self.world.now);
                    }
                }
                Action::SetProcessMempolicy { pid, policy } => {
                    self.world.procs[pid.idx() - 1].policy_proc = Some(policy.clone())
                }
                Action::SetThreadMempolicy { tid, policy } => {
                    self.world.threads[tid.idx() - 1].policy_thread = Some(policy.clone())
                }
                Action::SetRangeMempolicy {
                    pid,
                    region,
                    first_page,
                    end_page,
                    policy,
                } => {
                    self.world.procs[pid.idx() - 1].regions[*region]
                        .ranges
                        .push((*first_page, *end_page, policy.clone()));
                }
                Action::MigratePages {
                    pid,
                    region,
                    first_page,
                    end_page,
                    node,
                } => {
                    let r = &self.world.procs[pid.idx() - 1].regions[*region];
                    let (obj, end) = (r.obj, (*end_page).min(r.pages));
                    let mut p = *first_page;
                    while p < end {
                        let o = &self.world.objects[obj];
                        let step = if o.is_huge(p / CHUNK) {
                            CHUNK - p % CHUNK
                        } else {
                            1
                        };
                        if o.node_of(p).is_some_and(|n| n != *node) {
                            self.migrate_page(obj, p, *node);
                        }
                        p += step;
                    }
                }
                Action::MoveThread { tid, node } => {
                    self.world
                        .sched
                        .move_to_node(tid.0 - 1, *node, self.world.now);
                }
                Action::MigrateProcessPages { pid, from, to } => {
                    self.queue_migrate_pages(*pid, *from, *to)
                }
                Action::Log { pid, message } => self.policy_log(*pid, message),
                // Addresses mean nothing here: simulated policies name pages by region
                // and index (MigratePages).
                Action::MovePages { pid, .. } => {
                    self.policy_log(*pid, "MovePages by address is a live action; ignored")
                }
            }
        }
        Ok(())
    }

    fn wake(&mut self, t: usize, at: u64) {
        self.world.threads[t].state = TState::Runnable;
        self.world.sched.wake(t as u32, at);
        self.note_runnable(t, at);
    }

    fn block(&mut self, t: usize, state: TState, at: u64) {
        self.world.threads[t].state = state;
        if let Some(c) = self.world.sched.dequeue(t as u32, at) {
            self.cpu_freed(c, at);
        }
    }

    /// Inside an interval, remember when a CPU ran out of work.
    fn cpu_freed(&mut self, c: usize, at: u64) {
        if self.world.interval_end.is_some() && self.world.sched.rq(c).is_empty() {
            self.world.cpu_free_from[c] = Some(at);
        }
    }

    fn finish_thread(&mut self, t: usize, at: u64) -> Result<(), SimError> {
        if self.stable.is_some() {
            self.stable_task_exit(t);
        }
        if self.numab.is_some() {
            self.numab_task_exit(t);
        }
        self.world.threads[t].state = TState::Done;
        self.world.threads[t].end_ns = Some(at);
        if let Some(c) = self.world.sched.exit(t as u32, at) {
            self.cpu_freed(c, at);
        }
        let (pidx, g) = (self.world.threads[t].proc, self.world.threads[t].group);
        let proc = &mut self.world.procs[pidx];
        proc.live -= 1;
        let grp = &mut proc.groups[g];
        grp.done += 1;
        if grp.done == grp.nthreads {
            // Threads run one after another within an interval, so the last to be
            // processed is not necessarily the last to finish: the join ends at the latest exit.
            let done_at = self.group_done_at(pidx, g);
            let joiners = std::mem::take(&mut self.world.procs[pidx].groups[g].joiners);
            for (j, since) in joiners {
                self.advance_phase(j);
                self.wake_at(j, done_at.max(since));
            }
        } else {
            self.maybe_release_barrier(pidx, g, at);
        }
        if self.world.procs[pidx].live == 0
            && self.world.procs[pidx]
                .groups
                .iter()
                .all(|g| g.spawned || g.done == g.nthreads)
        {
            let unspawned = self.world.procs[pidx]
                .groups
                .iter()
                .any(|g| g.spawned && g.threads.is_empty());
            if !unspawned {
                self.exit_process(pidx, at);
            }
        }
        Ok(())
    }

    fn exit_process(&mut self, pidx: usize, at: u64) {
        // A job slot is free: the next instance starts (`make -jN` forks the next job).
        let spec = self.world.procs[pidx].spec;
        let ps = &self.world.sc.workload.spec.processes[spec];
        if ps.jobs.is_some() && self.world.next_instance[spec] < ps.instances {
            let instance = self.world.next_instance[spec];
            self.world.next_instance[spec] += 1;
            // Processes start at event boundaries: an exit inside an interval starts the
            // next job at the interval's end (at most a tick later).
            let at = (at + (self.world.machine.spec.costs.thread_spawn_ns * 4.0) as u64)
                .max(self.world.interval_end.unwrap_or(self.world.now));
            self.world.events.push(
                at,
                EventKind::ProcessStart {
                    spec: spec as u32,
                    instance,
                },
            );
        }
        let node_mb = self.process_node_mb(pidx);
        let p = &mut self.world.procs[pidx];
        p.end_ns = Some(at);
        p.node_mb_end = Some(node_mb);
        let objs: Vec<usize> = p.regions.iter().map(|r| r.obj).collect();
        let aa = self.numab.as_ref().is_some_and(|n| n.aa.is_some());
        if aa {
            self.aa_exit_process(pidx);
        }
        let stable = self.stable.is_some();
        if stable {
            self.stable_exit_process(pidx);
        }
        for o in objs {
            self.world.obj_refs[o] -= 1;
            if self.world.obj_refs[o] == 0 {
                if aa {
                    self.aa_release_object(o);
                }
                if stable {
                    self.stable_release_object(o);
                }
                let freed = self.world.objects[o].release();
                for (n, f) in freed.iter().enumerate() {
                    self.world.node_used[n] -= f;
                }
                // A private mapping is never mapped again: drop its page arrays too (a
                // build runs thousands of short processes).
                if !self.world.shared_objs.contains(&o) {
                    self.world.objects[o] = MemObject::new(0, false, self.world.machine.nr_nodes());
                }
            }
        }
        self.policy.on_process_exit(Pid(pidx as u32 + 1));
    }

    fn process_node_mb(&self, pidx: usize) -> Vec<f64> {
        // Exact: whole pages are multiples of 1/256 MiB.
        self.process_node_bytes(pidx)
            .iter()
            .map(|&b| b as f64 / (1u64 << 20) as f64)
            .collect()
    }

    /// A process's resident bytes per node (`numa_maps` `N<n>=` summed).
    fn process_node_bytes(&self, pidx: usize) -> Vec<u64> {
        let mut v = vec![0u64; self.world.machine.nr_nodes()];
        for r in &self.world.procs[pidx].regions {
            for (n, &pages) in self.world.objects[r.obj].node_pages().iter().enumerate() {
                v[n] += pages * PAGE_BYTES as u64;
            }
        }
        v
    }

    /// When every thread of a group has exited.
    fn group_done_at(&self, pidx: usize, g: usize) -> u64 {
        self.world.procs[pidx].groups[g]
            .threads
            .iter()
            .filter_map(|&t| self.world.threads[t].end_ns)
            .max()
            .unwrap_or(self.world.now)
    }

    /// Release a group's barrier once every live thread has arrived, at the latest arrival
    /// (or `floor`, the exit that completed it): threads are processed one after another
    /// within an interval, so the last to be processed need not be the last to arrive.
    fn maybe_release_barrier(&mut self, pidx: usize, g: usize, floor: u64) {
        let grp = &mut self.world.procs[pidx].groups[g];
        let live = grp.nthreads - grp.done;
        if !grp.barrier_waiting.is_empty() && grp.barrier_waiting.len() as u32 >= live {
            let mut waiting = std::mem::take(&mut grp.barrier_waiting);
            let release = waiting
                .iter()
                .map(|&(_, at)| at)
                .max()
                .unwrap_or(floor)
                .max(floor);
            // Wakeup order varies run to run.
            for i in (1..waiting.len()).rev() {
                let j = self.world.rng.random_range(0..=i);
                waiting.swap(i, j);
            }
            for (w, _) in waiting {
                self.advance_phase(w);
                self.wake_at(w, release);
            }
        }
    }

    fn advance_phase(&mut self, t: usize) {
        let th = &mut self.world.threads[t];
        th.phase += 1;
        th.prog = Prog::default();
    }

    // ----- memory --------------------------------------------------------------------

    /// The policy that governs an allocation at `page` of `region` by thread `t`.
    fn alloc_policy(
        &self,
        t: usize,
        region: usize,
        page: u64,
        phase_policy: Option<&MemPolicy>,
    ) -> MemPolicy {
        self.alloc_policy_ref(t, region, page, phase_policy)
            .cloned()
            .unwrap_or(MemPolicy::Default)
    }

    /// `alloc_policy` without a copy (`None`: the default policy).
    fn alloc_policy_ref<'b>(
        &'b self,
        t: usize,
        region: usize,
        page: u64,
        phase_policy: Option<&'b MemPolicy>,
    ) -> Option<&'b MemPolicy> {
        let th = &self.world.threads[t];
        let p = &self.world.procs[th.proc];
        let r = &p.regions[region];
        if let Some((_, _, pol)) = r
            .ranges
            .iter()
            .rev()
            .find(|(a, b, _)| page >= *a && page < *b)
        {
            return Some(pol);
        }
        if let Some(pol) = &r.wl_policy {
            return Some(pol);
        }
        th.policy_thread
            .as_ref()
            .or(p.policy_proc.as_ref())
            .or(phase_policy)
            .or(p.wl_policy.as_ref())
    }

    /// Choose a node for `nr` pages; `None` if no allowed node has room. `il_index` is the
    /// interleave position: the page's offset for an `mbind` interleave, the thread's
    /// `il_next` for a task interleave (the kernel's two interleave rules).
    fn pick_node(
        &self,
        t: usize,
        cpu_node: usize,
        pol: &MemPolicy,
        nr: u64,
        il_index: u64,
    ) -> Option<usize> {
        let allowed = &self.world.procs[self.world.threads[t].proc].cpuset_mems;
        let room = |n: usize| self.world.node_used[n] + nr <= self.world.node_cap[n];
        let fits = |n: usize| allowed.contains(n) && room(n);
        let zonelist = |from: usize| self.world.machine.nodes_by_distance(from);
        match pol {
            MemPolicy::Default => zonelist(cpu_node).into_iter().find(|&n| fits(n)),
            MemPolicy::Preferred(p) => {
                if fits(*p) {
                    return Some(*p);
                }
                zonelist(*p).into_iter().find(|&n| fits(n))
            }
            MemPolicy::Bind(mask) => {
                // cpuset mems always win: a bind set outside them is rebound to the cpuset,
                // as the kernel does (set_mempolicy refuses such a set; cpuset changes
                // rebind existing policies).
                let inside = mask.and(allowed);
                let set = if inside.is_empty() {
                    allowed.clone()
                } else {
                    inside
                };
                zonelist(cpu_node)
                    .into_iter()
                    .find(|&n| set.contains(n) && room(n))
            }
            MemPolicy::Interleave(mask) => {
                let set: Vec<usize> = mask
                    .and(allowed)
                    .iter()
                    .filter(|&n| n < self.world.machine.nr_nodes())
                    .collect();
                if set.is_empty() {
                    return zonelist(cpu_node).into_iter().find(|&n| fits(n));
                }
                let target = set[(il_index % set.len() as u64) as usize];
                if fits(target) {
                    return Some(target);
                }
                zonelist(target).into_iter().find(|&n| fits(n))
            }
        }
    }

    fn first_touch(
        &mut self,
        t: usize,
        region: usize,
        page: u64,
        cpu_node: usize,
        phase_policy: Option<&MemPolicy>,
    ) -> Result<f64, SimError> {
        let pidx = self.world.threads[t].proc;
        let r = &self.world.procs[pidx].regions[region];
        let obj = r.obj;
        let pol = self.alloc_policy(t, region, page, phase_policy);
        // VMA (mbind) interleave uses the page offset; task interleave the thread's counter,
        // which moves on only when an allocation succeeds.
        let vma_pol =
            r.ranges.iter().any(|(a, b, _)| page >= *a && page < *b) || r.wl_policy.is_some();
        let il_next = self.world.threads[t].il_next as u64;
        let task_interleave = !vma_pol && matches!(pol, MemPolicy::Interleave(_));
        let vma_offset = |nr: u64| -> u64 { if vma_pol { page / nr } else { il_next } };
        let o = &self.world.objects[obj];
        let chunk = page / CHUNK;
        if o.thp && o.chunk_len(chunk) == CHUNK && o.chunk_populated(chunk) == 0 {
            let off = vma_offset(CHUNK);
            if let Some(n) = self.pick_node(t, cpu_node, &pol, CHUNK, off) {
                self.world.objects[obj].populate_huge(chunk, n);
                self.world.node_used[n] += CHUNK;
                self.world.metrics.pgfault += 1;
                self.world.metrics.thp_fault_alloc += 1;
                if task_interleave {
                    self.world.threads[t].il_next += 1;
                }
                return Ok(self.world.machine.spec.costs.thp_fault_ns);
            }
        }
        let off = vma_offset(1);
        match self.pick_node(t, cpu_node, &pol, 1, off) {
            Some(n) => {
                self.world.objects[obj].populate_page(page, n);
                self.world.node_used[n] += 1;
                self.world.metrics.pgfault += 1;
                if task_interleave {
                    self.world.threads[t].il_next += 1;
                }
                Ok(self.world.machine.spec.costs.page_fault_ns)
            }
            None => {
                let p = &self.world.procs[pidx];
                Err(SimError::Input(InputError::new(
                    format!("workload {}", self.world.sc.workload.name()),
                    format!("process {} (pid {})", p.name, pidx + 1),
                    format!(
                        "out of memory: no node allowed by memory policy {pol} and cpuset mems {} has a free page (node use {:?} of {:?} pages)",
                        p.cpuset_mems, self.world.node_used, self.world.node_cap
                    ),
                )))
            }
        }
    }

    /// Migrate the page (or THP) at `page` of object `obj` to `dst`. The cost (fixed
    /// per-folio work, the copy at `migrate_copy_gib_s`, a TLB shootdown) is charged to
    /// `payer` (the faulting thread for migrate-on-fault) or, with `None`, to a caller
    /// outside the simulation (a placement daemon's `move_pages`). Fails, counting
    /// `pgmigrate_fail`, when the destination would drop below its high watermark
    /// (`migrate_balanced_pgdat`). Returns whether it moved.
    pub(crate) fn migrate_page(&mut self, obj: usize, page: u64, dst: usize) -> Option<f64> {
        let o = &self.world.objects[obj];
        let src = o.node_of(page)?;
        if src == dst {
            return None;
        }
        let c = page / CHUNK;
        let nr = if o.is_huge(c) { o.chunk_len(c) } else { 1 };
        if self.world.node_used[dst] + nr + self.world.wmark_high[dst] > self.world.node_cap[dst] {
            self.world.metrics.pgmigrate_fail += nr;
            return None;
        }
        self.world.objects[obj].migrate(page, dst);
        self.world.node_used[src] -= nr;
        self.world.node_used[dst] += nr;
        self.world.metrics.pgmigrate_success += nr;
        self.world
            .series
            .migrated(self.world.obj_owner[obj], dst, nr);
        let k = &self.world.machine.spec.costs;
        let copy_ns = nr as f64 * PAGE_BYTES
            / numabal_model::machine::gib_s_to_bytes_per_ns(k.migrate_copy_gib_s);
        let cost = k.migrate_page_ns + copy_ns + k.tlb_shootdown_ns;
        self.world.migrate_ns += cost;
        self.world.migrate_shootdowns += 1;
        Some(cost)
    }

    // ----- the fluid step ------------------------------------------------------------

    fn slice_of(&self, t: usize, a: &AccessRt) -> (u64, u64) {
        let th = &self.world.threads[t];
        let pages = self.world.procs[th.proc].regions[a.region].pages;
        match a.slice {
            Slice::All => (0, pages),
            Slice::Thread => {
                let n = self.world.procs[th.proc].groups[th.group].nthreads as u64;
                thread_slice(pages, th.index as u64, n)
            }
        }
    }

    /// Weighted node mix of the pages `pattern` touches in `slice` (`a` gives the pattern's
    /// parameters), the weight of its not-yet-populated part, and the number of populated
    /// pages in the slice. Zipf is approximated by one bucket per power of two of the page rank, weighted
    /// by the integral of `(x+1)^-s` over the bucket.
    fn random_mix(
        &self,
        obj: usize,
        pattern: Pattern,
        a: &AccessRt,
        slice: (u64, u64),
        mix: &mut [f64],
    ) -> (f64, u64) {
        let o = &self.world.objects[obj];
        let mut h = vec![0u64; mix.len()];
        // Weight given to non-empty ranges, to normalise by (a hot part covering the whole
        // slice leaves the cold weight unused).
        let mut weight = 0.0;
        let mut populated = 0u64;
        let mut add = |a0: u64, b0: u64, w: f64, mix: &mut [f64]| -> f64 {
            if b0 <= a0 {
                return 0.0;
            }
            h.iter_mut().for_each(|x| *x = 0);
            o.range_hist(a0, b0, &mut h);
            let pop: u64 = h.iter().sum();
            // Counted for the whole slice, weighted or not.
            populated += pop;
            if w <= 0.0 {
                return 0.0;
            }
            weight += w;
            let n = (b0 - a0) as f64;
            for (i, &x) in h.iter().enumerate() {
                mix[i] += w * x as f64 / n;
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

    fn advance(&mut self, t0: u64, t1: u64) -> Result<(), SimError> {
        let dt = (t1 - t0) as f64;
        let ncpu = self.world.sched.nr_cpus();
        let nn = self.world.machine.nr_nodes();
        // Running threads and their shares.
        let mut running: Vec<(usize, usize, f64)> = Vec::new();
        for c in 0..ncpu {
            let rq = self.world.sched.rq(c);
            let k = rq.len();
            for &t in rq {
                running.push((t as usize, c, 1.0 / k as f64));
            }
        }
        let busy_before: Vec<bool> = (0..ncpu)
            .map(|c| !self.world.sched.rq(c).is_empty())
            .collect();
        for (c, &busy) in busy_before.iter().enumerate() {
            self.world.cpu_free_from[c] = (!busy).then_some(t0);
        }
        self.world.interval_end = Some(t1);
        // Demands.
        let mut demands: Vec<Demand> = Vec::with_capacity(running.len());
        let mut dem_of: Vec<Option<usize>> = vec![None; running.len()];
        let mut smt_info: Vec<(f64, f64, f64)> = Vec::with_capacity(running.len());
        for (ri, &(t, c, share)) in running.iter().enumerate() {
            let smt = self.smt_shares(c);
            smt_info.push(smt);
            let th = &self.world.threads[t];
            let PhaseRt::Access(a) = (match self.world.procs[th.proc].groups[th.group]
                .phases
                .get(th.phase)
            {
                Some(p) => p,
                None => continue,
            }) else {
                continue;
            };
            let node = self.world.machine.cpus[c].node;
            let mut mix = vec![0.0; nn];
            let slice = if th.prog.started {
                th.prog.slice
            } else {
                self.slice_of(t, a)
            };
            let obj = self.world.procs[th.proc].regions[a.region].obj;
            let (unpop, _) = if a.pattern == Pattern::Sweep {
                // The pages just ahead of the sweep, as many as it touched last interval.
                let window = (th.window_bytes.max(256.0 * 1024.0) / PAGE_BYTES).ceil() as u64;
                let start = slice.0 + (th.prog.pos / PAGE_BYTES) as u64;
                let end = (start + window).min(slice.1);
                self.random_mix(obj, Pattern::Uniform, a, (start.min(end), end), &mut mix)
            } else {
                self.random_mix(obj, a.pattern, a, slice, &mut mix)
            };
            mix[node] += unpop;
            let total: f64 = mix.iter().sum();
            if total > 0.0 {
                mix.iter_mut().for_each(|x| *x /= total);
            } else {
                mix[node] = 1.0;
            }
            // Kernel work owed at the start of the interval is time without memory traffic.
            let debt_frac = (th.debt_ns / (share * dt)).min(1.0);
            dem_of[ri] = Some(demands.len());
            demands.push(self.demand(c, a, smt, share * (1.0 - debt_frac), mix));
        }
        self.world.cost.solve(&demands);
        // Run every thread for its share of the interval.
        let mut tau = vec![0.0; nn];
        for (ri, &(t, c, share)) in running.iter().enumerate() {
            if self.world.threads[t].state != TState::Runnable
                || self.world.sched.tasks[t].cpu != Some(c)
            {
                continue;
            }
            if let Some(di) = dem_of[ri] {
                self.world.cost.ns_per_byte(&demands[di], &mut tau);
            }
            self.run_thread(
                t,
                c,
                share,
                t0,
                dt,
                &mut tau,
                dem_of[ri].is_some(),
                smt_info[ri],
            )?;
        }
        // Threads woken or spawned during the interval run the rest of it if their CPU is
        // free by then (it ran out of work, or was idle all along). They were not part of
        // the cost model's solve; they see the delays it found.
        // Earliest first; ties in the order they were recorded.
        while let Some(i) = (0..self.world.late.len()).min_by_key(|&i| (self.world.late[i].at, i)) {
            let Late { t, at, wake } = self.world.late.remove(i);
            if wake {
                if self.world.threads[t].state == TState::Sleeping {
                    self.wake(t, at); // records it again as runnable since `at`
                }
                continue;
            }
            let Some(c) = self.world.sched.tasks[t].cpu else {
                continue;
            };
            if self.world.threads[t].state != TState::Runnable || self.world.sched.rq(c).len() != 1
            {
                continue;
            }
            let Some(free) = self.world.cpu_free_from[c].take() else {
                continue;
            };
            let start = at.max(free);
            if start >= t1 {
                continue;
            }
            let smt = self.smt_shares(c);
            self.run_thread(t, c, 1.0, start, (t1 - start) as f64, &mut tau, false, smt)?;
        }
        self.world.interval_end = None;
        self.world.sched.update_load(t1 - t0);
        // CPUs that ran out of work look for more.
        let mut sched = std::mem::take(&mut self.world.sched);
        for (c, &was_busy) in busy_before.iter().enumerate() {
            if was_busy && sched.rq(c).is_empty() {
                sched.newidle_balance(c, t1, &|x: &LbCtx| self.can_migrate(x));
            }
        }
        self.world.sched = sched;
        self.count_moves();
        Ok(())
    }

    /// SMT state of CPU `c`'s core: (share of the core's memory-issue rate, share of its
    /// compute, busy siblings).
    fn smt_shares(&self, c: usize) -> (f64, f64, f64) {
        let core = &self.world.machine.spec.core;
        let k_s = self.world.sched.busy_siblings(c).max(1) as f64;
        if k_s > 1.0 {
            (
                core.smt_memory_throughput / k_s,
                core.smt_compute_throughput / k_s,
                k_s,
            )
        } else {
            (1.0, 1.0, 1.0)
        }
    }

    /// What a thread running access phase `a` on CPU `c` asks of the memory system, for
    /// `share` of the interval over the node `mix`. `smt` is `smt_shares(c)`.
    fn demand(
        &self,
        c: usize,
        a: &AccessRt,
        smt: (f64, f64, f64),
        share: f64,
        mix: Vec<f64>,
    ) -> Demand {
        let core = &self.world.machine.spec.core;
        let (mem_share, cpu_share, k_s) = smt;
        let m_eff = a
            .mlp
            .unwrap_or(core.outstanding_lines_per_thread)
            .min(core.outstanding_lines_per_core / k_s);
        let per_latency = 1.0 / (m_eff * 64.0);
        Demand {
            cpu_node: self.world.machine.cpus[c].node,
            share,
            mix,
            miss: 1.0 - a.cache_hit,
            core_ns_per_byte: core.stream_ns_per_byte / mem_share + a.ns_per_byte / cpu_share,
            per_latency,
            hit_ns_per_byte: a.cache_hit
                * self.world.machine.spec.memory.llc_latency_ns
                * per_latency,
        }
    }

    /// ns/byte per memory node for a thread whose phase changed mid-interval, from the
    /// delays the interval's solve found.
    fn tau_for(&self, c: usize, a: &AccessRt, smt: (f64, f64, f64), tau: &mut [f64]) {
        self.world
            .cost
            .ns_per_byte(&self.demand(c, a, smt, 0.0, Vec::new()), tau);
    }

    /// Run thread `t` on CPU `c` for `share * dt` ns of CPU time from `t0`.
    /// `tau_known`: `tau` already holds this thread's ns/byte for its current phase.
    /// `smt`: (memory issue share, compute share, busy siblings) of its core.
    #[allow(clippy::too_many_arguments)]
    fn run_thread(
        &mut self,
        t: usize,
        c: usize,
        share: f64,
        t0: u64,
        dt: f64,
        tau: &mut [f64],
        tau_known: bool,
        smt: (f64, f64, f64),
    ) -> Result<(), SimError> {
        let cpu_share = smt.1;
        let mut budget = share * dt;
        let total = budget;
        let node = self.world.machine.cpus[c].node;
        let slot = Slot { t0, share, total };
        let wall = |used: f64| slot.wall(used);
        let mut tau_valid = tau_known;
        let mut bytes_this = 0.0;
        let exec0 = self.world.threads[t].sum_exec_ns;
        // Steps that neither spend time nor move the program on mean a simulator bug.
        let mut guard = 0u64;
        let mut last = (
            budget,
            self.world.threads[t].phase,
            self.world.threads[t].iter,
        );
        while budget > 0.0 && self.world.threads[t].state == TState::Runnable {
            let now = (
                budget,
                self.world.threads[t].phase,
                self.world.threads[t].iter,
            );
            if now == last {
                guard += 1;
                if guard > MAX_STEPS {
                    return Err(SimError::Invariant(format!("thread {t} made no progress")));
                }
            } else {
                guard = 0;
                last = now;
            }
            // Kernel work owed (faults) comes first.
            let debt = self.world.threads[t].debt_ns;
            if debt > 0.0 {
                let pay = debt.min(budget);
                self.world.threads[t].debt_ns -= pay;
                self.world.threads[t].sum_exec_ns += pay;
                budget -= pay;
                continue;
            }
            let (pidx, g) = (self.world.threads[t].proc, self.world.threads[t].group);
            let phase_idx = self.world.threads[t].phase;
            let grp = &self.world.procs[pidx].groups[g];
            if phase_idx >= grp.phases.len() {
                let w = grp.work_per_iteration;
                self.world.procs[pidx].work_units += w;
                if wall(total - budget) as f64 >= self.world.sc.sim.warmup_s * NS {
                    self.world.procs[pidx].work_units_warm += w;
                }
                let grp = &self.world.procs[pidx].groups[g];
                let th = &mut self.world.threads[t];
                th.iter += 1;
                if th.iter < grp.iterations {
                    th.phase = 0;
                    th.prog = Prog::default();
                    tau_valid = false;
                    continue;
                }
                self.finish_thread(t, wall(total - budget))?;
                break;
            }
            let phase = grp.phases[phase_idx].clone();
            match phase {
                PhaseRt::Access(a) => {
                    if !self.world.threads[t].prog.started {
                        let slice = self.slice_of(t, &a);
                        let slice_bytes = (slice.1 - slice.0) as f64 * PAGE_BYTES;
                        let now_wall = wall(total - budget);
                        let th = &mut self.world.threads[t];
                        th.prog = Prog {
                            started: true,
                            slice,
                            pop_cursor: slice.0,
                            ..Prog::default()
                        };
                        match a.amount {
                            Amount::Seconds(s) => {
                                th.prog.timed = true;
                                th.prog.left = f64::INFINITY;
                                th.prog.until_ns = now_wall + (s * NS) as u64;
                            }
                            Amount::Bytes(b) if a.passes.is_none() => th.prog.left = b,
                            Amount::Bytes(_) => {
                                th.prog.left = a.passes.unwrap_or(1.0) * slice_bytes
                            }
                        }
                        if !tau_valid {
                            self.tau_for(c, &a, smt, tau);
                            tau_valid = true;
                        }
                    }
                    if !tau_valid {
                        self.tau_for(c, &a, smt, tau);
                        tau_valid = true;
                    }
                    let before = budget;
                    let (used, bytes, done) = if a.pattern == Pattern::Sweep {
                        self.sweep(t, node, &a, budget, tau, slot)?
                    } else {
                        self.random_access(t, node, &a, budget, tau, slot)?
                    };
                    budget -= used;
                    self.world.threads[t].sum_exec_ns += used;
                    bytes_this += bytes;
                    if done {
                        self.advance_phase(t);
                        tau_valid = false;
                    } else if budget >= before {
                        break;
                    }
                }
                PhaseRt::Compute(ns, jitter) => {
                    let ns = if self.world.threads[t].prog.started {
                        ns
                    } else {
                        self.jittered(ns, jitter)
                    };
                    let th = &mut self.world.threads[t];
                    if !th.prog.started {
                        th.prog = Prog {
                            started: true,
                            left: ns,
                            ..Prog::default()
                        };
                    }
                    let need = th.prog.left / cpu_share;
                    if need <= budget {
                        budget -= need;
                        th.sum_exec_ns += need;
                        self.world.user_ns += need;
                        self.advance_phase(t);
                    } else {
                        th.prog.left -= budget * cpu_share;
                        th.sum_exec_ns += budget;
                        self.world.user_ns += budget;
                        budget = 0.0;
                    }
                }
                PhaseRt::Sleep(ns, jitter) => {
                    let ns = self.jittered(ns, jitter);
                    let at = wall(total - budget);
                    self.advance_phase(t);
                    self.block(t, TState::Sleeping, at);
                    self.wake_at(t, at + ns as u64);
                    budget = 0.0;
                }
                PhaseRt::Spawn(target) => {
                    self.advance_phase(t);
                    if self.world.procs[pidx].groups[target].threads.is_empty() {
                        let n = self.world.procs[pidx].groups[target].nthreads;
                        self.start_group(pidx, target, c, wall(total - budget))?;
                        // `clone` is work the thread asked for, not a stall.
                        let cost = self.world.machine.spec.costs.thread_spawn_ns * n as f64;
                        self.world.threads[t].debt_ns += cost;
                        self.world.sys_ns += cost;
                    }
                }
                PhaseRt::Join(target) => {
                    let at = wall(total - budget);
                    let tg = &self.world.procs[pidx].groups[target];
                    if !tg.threads.is_empty() && tg.done == tg.nthreads {
                        let done_at = self.group_done_at(pidx, target);
                        self.advance_phase(t);
                        if done_at > at {
                            // Finished, but later than this thread's present.
                            self.block(t, TState::Sleeping, at);
                            self.wake_at(t, done_at);
                            budget = 0.0;
                        }
                    } else {
                        self.world.procs[pidx].groups[target].joiners.push((t, at));
                        self.block(t, TState::Blocked, at);
                        budget = 0.0;
                    }
                }
                PhaseRt::Barrier => {
                    let at = wall(total - budget);
                    self.world.procs[pidx].groups[g]
                        .barrier_waiting
                        .push((t, at));
                    self.block(t, TState::Blocked, at);
                    budget = 0.0;
                    self.maybe_release_barrier(pidx, g, at);
                }
            }
        }
        self.world.threads[t].window_bytes = bytes_this;
        self.world.cpu_busy_ns[c] += (self.world.threads[t].sum_exec_ns - exec0).max(0.0);
        Ok(())
    }

    fn account(&mut self, t: usize, cpu_node: usize, mem_node: usize, bytes: f64) {
        let pidx = self.world.threads[t].proc;
        self.world
            .series
            .access(cpu_node, cpu_node == mem_node, bytes);
        if cpu_node == mem_node {
            self.world.local_bytes += bytes;
            self.world.procs[pidx].bytes_local += bytes;
        } else {
            self.world.remote_bytes += bytes;
            self.world.procs[pidx].bytes_remote += bytes;
        }
    }

    /// Sequential sweep. Returns (CPU ns used, bytes accessed, phase done).
    fn sweep(
        &mut self,
        t: usize,
        node: usize,
        a: &AccessRt,
        budget: f64,
        tau: &[f64],
        slot: Slot,
    ) -> Result<(f64, f64, bool), SimError> {
        let (s, e) = self.world.threads[t].prog.slice;
        let slice_bytes = (e - s) as f64 * PAGE_BYTES;
        let obj = self.world.procs[self.world.threads[t].proc].regions[a.region].obj;
        let mut used = 0.0;
        let mut bytes_done = 0.0;
        let mut steps = 0u64;
        loop {
            steps += 1;
            if steps > MAX_STEPS {
                return Err(SimError::Invariant(format!(
                    "thread {t}: sweep makes no progress"
                )));
            }
            let th = &self.world.threads[t];
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
            if self.world.threads[t].debt_ns > 0.0 {
                // A first touch in the middle of the sweep: pay it before going on.
                let pay = self.world.threads[t].debt_ns.min(budget - used);
                self.world.threads[t].debt_ns -= pay;
                used += pay;
                continue;
            }
            let pos = self.world.threads[t].prog.pos;
            let page = s + (pos / PAGE_BYTES) as u64;
            let chunk_end = ((page / CHUNK + 1) * CHUNK).min(e);
            let o = &self.world.objects[obj];
            let c = page / CHUNK;
            let full = o.chunk_populated(c) == o.chunk_len(c);
            if !full && o.node_of(page).is_none() {
                let phase_pol = a.mempolicy.clone();
                let cost = self.first_touch(t, a.region, page, node, phase_pol.as_ref())?;
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
            if o.chunk_prot(c) > 0 {
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
                    let cpu = self.world.sched.tasks[t].cpu.unwrap_or(0);
                    let cost = self.hint_fault(t, cpu, a.region, page);
                    self.charge_kernel(t, cost);
                    continue;
                }
            }
            let mut h = std::mem::take(&mut self.world.scratch_hist);
            h.iter_mut().for_each(|x| *x = 0);
            self.world.objects[obj].range_hist(page, range_end, &mut h);
            let offset_in_page = pos - ((page - s) as f64 * PAGE_BYTES);
            let range_bytes = (range_end - page) as f64 * PAGE_BYTES - offset_in_page;
            let npages = (range_end - page) as f64;
            // Bytes of this range per node (the first page is partly done).
            let time: f64 = h
                .iter()
                .zip(tau)
                .map(|(&c, &t)| c as f64 / npages * range_bytes * t)
                .sum();
            let left = self.world.threads[t].prog.left;
            let room = budget - used;
            let mut frac = 1.0f64;
            if range_bytes > left {
                frac = left / range_bytes;
            }
            if time * frac > room {
                frac = room / time;
            }
            let take = range_bytes * frac;
            for (n, &c) in h.iter().enumerate() {
                if c > 0 {
                    self.account(t, node, n, c as f64 / npages * take);
                }
            }
            self.world.scratch_hist = h;
            used += time * frac;
            bytes_done += take;
            self.world.user_ns += time * frac;
            let th = &mut self.world.threads[t];
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

    /// Uniform / hot / zipf access. Returns (CPU ns used, bytes accessed, phase done).
    fn random_access(
        &mut self,
        t: usize,
        node: usize,
        a: &AccessRt,
        budget: f64,
        tau: &[f64],
        slot: Slot,
    ) -> Result<(f64, f64, bool), SimError> {
        let slice = self.world.threads[t].prog.slice;
        let obj = self.world.procs[self.world.threads[t].proc].regions[a.region].obj;
        let nn = self.world.machine.nr_nodes();
        let mut mix = vec![0.0; nn];
        let (unpop_w, populated) = self.random_mix(obj, a.pattern, a, slice, &mut mix);
        // Timing assumes accesses to untouched pages are local (they are first-touched now,
        // usually on this node); where they really went is accounted below.
        let per_byte =
            (mix.iter().zip(tau).map(|(f, t)| f * t).sum::<f64>() + unpop_w * tau[node]).max(1e-12);
        let th = &self.world.threads[t];
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
        let mut placed = vec![0u64; nn];
        let unpop_pages = (slice.1 - slice.0) - populated;
        if unpop_pages > 0 && unpop_w > 0.0 {
            let lines = bytes / 64.0;
            let u = unpop_pages as f64;
            let expect = u * (1.0 - (-lines * unpop_w / u).exp());
            let th = &mut self.world.threads[t];
            th.prog.pop_carry += expect;
            let mut n_new = th.prog.pop_carry.floor() as u64;
            th.prog.pop_carry -= n_new as f64;
            let phase_pol = a.mempolicy.clone();
            while n_new > 0 {
                let cur = self.world.threads[t].prog.pop_cursor;
                let Some(p) = self.world.objects[obj].next_unpopulated(cur, slice.1) else {
                    break;
                };
                let cost = self.first_touch(t, a.region, p, node, phase_pol.as_ref())?;
                self.charge_kernel(t, cost);
                self.world.threads[t].prog.pop_cursor = p + 1;
                let o = &self.world.objects[obj];
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
        if (self.numab.is_some() || self.stable.is_some())
            && self.world.objects[obj].prot_in(slice.0, slice.1) > 0
        {
            self.random_hint_faults(t, a, slice, bytes);
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
        self.world.user_ns += room;
        let th = &mut self.world.threads[t];
        if !th.prog.timed {
            th.prog.left -= bytes;
        }
        Ok((room, bytes, done))
    }

    // ----- invariants and results ----------------------------------------------------

    /// Threads blocked in joins or barriers with nothing left that could wake them (no
    /// runnable or sleeping thread, no process or group still to start) never finish:
    /// report it instead of ticking until `max_time_s`.
    /// Hinting faults of a random-access phase that touched `bytes` in `slice` during the
    /// interval: per range of the pattern, each protected entry is touched with
    /// probability `1 - exp(-lines * weight / pages)` (per 4 KiB page, or per THP); the
    /// expected number of them fault, taken from a random point of the range onwards.
    /// Which of the equally likely pages fault does not matter beyond their node and
    /// `last_cpupid`, which the walk reads from the pages themselves.
    fn random_hint_faults(&mut self, t: usize, a: &AccessRt, slice: (u64, u64), bytes: f64) {
        use rand::RngExt;
        let Some(cpu) = self.world.sched.tasks[t].cpu else {
            return;
        };
        let obj = self.world.procs[self.world.threads[t].proc].regions[a.region].obj;
        let lines = bytes / 64.0;
        let per_entry = if self.world.objects[obj].thp {
            CHUNK as f64
        } else {
            1.0
        };
        for (a0, b0, w) in pattern_ranges(a, slice) {
            let prot = self.world.objects[obj].prot_in(a0, b0);
            if prot == 0 || w <= 0.0 || b0 <= a0 {
                continue;
            }
            let n = (b0 - a0) as f64;
            let expect = prot as f64 * (1.0 - (-lines * w * per_entry / n).exp());
            let th = &mut self.world.threads[t];
            th.prog.fault_carry += expect;
            let mut k = th.prog.fault_carry.floor() as u64;
            th.prog.fault_carry -= k as f64;
            if k == 0 {
                continue;
            }
            let mut p = self.world.rng.random_range(a0..b0);
            let mut wrapped = false;
            while k > 0 {
                let next = self.world.objects[obj].next_prot(p, b0);
                let q = match next {
                    Some(q) => q,
                    None if !wrapped => {
                        wrapped = true;
                        p = a0;
                        continue;
                    }
                    None => break,
                };
                let cost = self.hint_fault(t, cpu, a.region, q);
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
    }

    /// The start of every hinting fault, by thread `t` on CPU `cpu` at `page` of its region
    /// `ri`: the PTE (or the THP's PMD) is made present again and the fault counted
    /// (`numa_hint_faults`, and `_local` when the page is on the CPU's node). `None` if it
    /// was not PROT_NONE or holds no page.
    fn take_hint(&mut self, t: usize, cpu: usize, ri: usize, page: u64) -> Option<HintAt> {
        let pidx = self.world.threads[t].proc;
        let obj = self.world.procs[pidx].regions[ri].obj;
        let o = &mut self.world.objects[obj];
        let head = o.head(page);
        if !o.is_prot(head) {
            return None;
        }
        o.clear_prot(head);
        let nid = o.node_of(head)?;
        let thisnid = self.world.machine.cpus[cpu].node;
        self.world.metrics.numa_hint_faults += 1;
        self.world.series.hint_fault(pidx, thisnid);
        if nid == thisnid {
            self.world.metrics.numa_hint_faults_local += 1;
        }
        Some(HintAt {
            pidx,
            obj,
            head,
            nid,
            nr: self.entry_pages(obj, head),
            thisnid,
        })
    }

    /// Base pages of the entry starting at `head` (a THP's 512, else 1).
    fn entry_pages(&self, obj: usize, head: u64) -> u64 {
        let o = &self.world.objects[obj];
        if o.is_huge(head / CHUNK) {
            o.chunk_len(head / CHUNK)
        } else {
            1
        }
    }

    /// A NUMA hinting fault, to whichever model unmapped the page.
    fn hint_fault(&mut self, t: usize, cpu: usize, ri: usize, page: u64) -> f64 {
        if self.stable.is_some() {
            self.stable_fault(t, cpu, ri, page)
        } else if self.numab.as_ref().is_some_and(|n| n.aa.is_some()) {
            self.aa_fault(t, cpu, ri, page)
        } else {
            self.numab_fault(t, cpu, ri, page)
        }
    }

    fn check_deadlock(&self) -> Result<(), SimError> {
        if self.world.pending_starts > 0 {
            return Ok(());
        }
        let live = |s: TState| matches!(s, TState::Runnable | TState::Sleeping);
        let ths = &self.world.threads;
        if ths.iter().any(|t| live(t.state)) || !ths.iter().any(|t| t.state == TState::Blocked) {
            return Ok(());
        }
        let blocked: Vec<String> = ths
            .iter()
            .filter(|t| t.state == TState::Blocked)
            .take(4)
            .map(|t| {
                format!(
                    "{}/{}[{}]",
                    self.world.procs[t.proc].name,
                    self.world.procs[t.proc].groups[t.group].name,
                    t.index
                )
            })
            .collect();
        Err(SimError::Input(InputError::new(
            format!("workload {}", self.world.sc.workload.name()),
            "phase",
            format!(
                "deadlock at {:.3} s: threads wait in join/barrier phases that can never complete (e.g. {})",
                self.world.now as f64 / NS,
                blocked.join(", ")
            ),
        )))
    }

    fn check_invariants(&self) -> Result<(), SimError> {
        let nn = self.world.machine.nr_nodes();
        let mut used = vec![0u64; nn];
        for (o, obj) in self.world.objects.iter().enumerate() {
            obj.check()
                .map_err(|e| SimError::Invariant(format!("memory object {o}: {e}")))?;
            for (n, &p) in obj.node_pages().iter().enumerate() {
                used[n] += p;
            }
        }
        if used != self.world.node_used {
            return Err(SimError::Invariant(format!(
                "node use {:?} differs from the pages {:?}",
                self.world.node_used, used
            )));
        }
        for (n, (&u, &cap)) in used.iter().zip(&self.world.node_cap).enumerate() {
            if u > cap {
                return Err(SimError::Invariant(format!(
                    "node {n} holds {u} pages, more than its {cap}"
                )));
            }
        }
        self.world.sched.check().map_err(SimError::Invariant)?;
        for (t, th) in self.world.threads.iter().enumerate() {
            let on_rq = self.world.sched.tasks[t].cpu.is_some();
            if on_rq != (th.state == TState::Runnable) {
                return Err(SimError::Invariant(format!(
                    "thread {t} is {:?} but on a runqueue: {on_rq}",
                    th.state
                )));
            }
            if let Some(c) = self.world.sched.tasks[t].cpu
                && !self.world.procs[th.proc].cpuset_cpus.contains(c)
            {
                return Err(SimError::Invariant(format!(
                    "thread {t} runs on CPU {c} outside its cpuset"
                )));
            }
        }
        Ok(())
    }

    /// Build the result.
    pub fn result(&self) -> RunResult {
        let finished = self.work_done();
        let end = self
            .world
            .threads
            .iter()
            .filter(|t| !self.world.procs[t.proc].daemon)
            .filter_map(|t| t.end_ns)
            .max()
            .unwrap_or(self.world.now);
        let runtime_ns = if finished { end } else { self.world.now };
        let mut m = self.world.metrics.clone();
        m.runtime_s = runtime_ns as f64 / NS;
        let total = self.world.local_bytes + self.world.remote_bytes;
        m.local_access_ratio = if total > 0.0 {
            self.world.local_bytes / total
        } else {
            1.0
        };
        m.thread_migrations_internode = self.world.migrations.iter().sum();
        m.user_cpu_s = self.world.user_ns / NS;
        m.sys_cpu_s = self.world.sys_ns / NS;
        m.migrate_cpu_s = self.world.migrate_ns / NS;
        if let Some(nb) = &self.numab {
            m.scan_cpu_s = nb.scan_ns / NS;
            m.scan_cpu_hidden_s = nb.scan_hidden_ns / NS;
        }
        if let Some(st) = &self.stable {
            m.scan_cpu_s = st.scan_ns / NS;
        }
        m.accessed_gib = total / (1u64 << 30) as f64;
        m.access_gib_per_s = if m.runtime_s > 0.0 {
            m.accessed_gib / m.runtime_s
        } else {
            0.0
        };
        let per_s = |x: f64| {
            if m.runtime_s > 0.0 {
                x / m.runtime_s
            } else {
                0.0
            }
        };
        m.numa_hint_faults_per_s = per_s(m.numa_hint_faults as f64);
        m.page_migrations_per_s = per_s(m.pgmigrate_success as f64);
        m.thread_migrations_internode_per_s = per_s(m.thread_migrations_internode as f64);
        m.work_units = self
            .world
            .procs
            .iter()
            .filter(|p| !p.daemon)
            .map(|p| p.work_units)
            .sum();
        // Throughput over the measured part of the run (after `sim.warmup_s`).
        let warmup_s = self.world.sc.sim.warmup_s;
        let warm: f64 = self
            .world
            .procs
            .iter()
            .filter(|p| !p.daemon)
            .map(|p| p.work_units_warm)
            .sum();
        m.throughput_per_s = if m.runtime_s > warmup_s {
            warm / (m.runtime_s - warmup_s)
        } else {
            0.0
        };
        m.migrate_tlb_shootdowns = self.world.migrate_shootdowns;
        m.migrate_tlb_shootdown_s = self.world.migrate_shootdowns as f64
            * self.world.machine.spec.costs.tlb_shootdown_ns
            / NS;
        let mut by_cause = BTreeMap::new();
        let mut by_class: BTreeMap<String, u64> = BTreeMap::new();
        for c in Cause::ALL {
            let n = self.world.migrations[c as usize];
            by_cause.insert(c.name().to_string(), n);
            *by_class.entry(c.class().to_string()).or_insert(0) += n;
        }
        let processes = self
            .world
            .procs
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let node_mb = p
                    .node_mb_end
                    .clone()
                    .unwrap_or_else(|| self.process_node_mb(i));
                let tot = p.bytes_local + p.bytes_remote;
                let runtime_s = (p.end_ns.unwrap_or(self.world.now) - p.start_ns) as f64 / NS;
                let mut thread_nodes = vec![0u32; self.world.machine.nr_nodes()];
                for g in &p.groups {
                    for &t in &g.threads {
                        let task = &self.world.sched.tasks[t];
                        thread_nodes
                            [self.world.machine.cpus[task.cpu.unwrap_or(task.prev_cpu)].node] += 1;
                    }
                }
                ProcessResult {
                    thread_nodes,
                    pid: i as u32 + 1,
                    name: p.name.clone(),
                    node_mb,
                    runtime_s,
                    work_units: p.work_units,
                    throughput_per_s: {
                        let from = (p.start_ns as f64 / NS).max(self.world.sc.sim.warmup_s);
                        let to = p.end_ns.unwrap_or(self.world.now) as f64 / NS;
                        if to > from {
                            p.work_units_warm / (to - from)
                        } else {
                            0.0
                        }
                    },
                    threads: p.threads,
                    local_access_ratio: if tot > 0.0 { p.bytes_local / tot } else { 1.0 },
                }
            })
            .collect();
        RunResult {
            numabal_version: env!("CARGO_PKG_VERSION").to_string(),
            scenario: ScenarioSummary {
                machine: self.world.machine.name().to_string(),
                workload: self.world.sc.workload.name().to_string(),
                policy: match (&self.numab, &self.stable) {
                    (Some(nb), _) => nb.flavour.name().to_string(),
                    (None, Some(_)) => "stable".to_string(),
                    (None, None) => self.policy.name().to_string(),
                },
                seed: self.world.sc.sim.seed,
                overrides: self.world.sc.overrides.clone(),
                tunables: crate::policies::tunables_json(&self.world.sc.policy).unwrap_or_default(),
            },
            finished,
            metrics: m,
            thread_migrations_by_cause: by_cause,
            thread_migrations_by_class: by_class,
            ping_pong: self.world.ping_pong.clone(),
            processes,
            node_used_mb: self
                .world
                .node_used
                .iter()
                .map(|&p| p as f64 * PAGE_BYTES / (1u64 << 20) as f64)
                .collect(),
            stalls: self.world.stalls.clone(),
            numa_balancing: self.numab.as_ref().map(|nb| {
                let pids: Vec<u32> = self
                    .world
                    .threads
                    .iter()
                    .map(|t| t.proc as u32 + 1)
                    .collect();
                nb.report(&pids)
            }),
            stable: self.stable_report(),
            numastat: self.world.numastat.clone(),
            series: self.world.series.finish(),
            policy_log: self.daemon.log.clone(),
            node_state: self.node_state_at_end(),
        }
    }
}

impl Thread {
    fn new(proc: usize, group: usize, index: u32, state: TState) -> Self {
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
        }
    }
}

/// The ranges of `slice` an access pattern touches, each with its share of the accesses.
/// Zipf is approximated by one range per power of two of the page rank, weighted by the
/// integral of `(x+1)^-s` over it.
fn pattern_ranges_of(pattern: Pattern, a: &AccessRt, slice: (u64, u64)) -> Vec<(u64, u64, f64)> {
    let (s, e) = slice;
    let len = (e - s).max(1);
    match pattern {
        Pattern::Uniform | Pattern::Sweep => vec![(s, e, 1.0)],
        Pattern::Hot => {
            let hot = ((len as f64 * a.hot_fraction).ceil() as u64).clamp(1, len);
            vec![(s, s + hot, a.hot_weight), (s + hot, e, 1.0 - a.hot_weight)]
        }
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

/// The ranges a random-access phase touches (its own pattern).
fn pattern_ranges(a: &AccessRt, slice: (u64, u64)) -> Vec<(u64, u64, f64)> {
    pattern_ranges_of(a.pattern, a, slice)
}
