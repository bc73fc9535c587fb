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

use crate::autonuma::tunables::Flavour;
use crate::cost::{CostModel, Demand};
use crate::event::{EventKind, EventQueue};
use crate::memory::{CHUNK, MemObject, PAGE_BYTES};
use crate::result::{Metrics, ProcessResult, RunResult, ScenarioSummary, StallHistogram};
use crate::sched::{CanMigrate, Cause, LbCtx, NR_CAUSES, Sched};
#[allow(clippy::wildcard_imports)]
use crate::world::*;
use numabal_model::mempolicy::MemPolicySpec;
use numabal_model::workload::{Pattern, PhaseSpec, RegionKind, SharedKind};
use numabal_model::{InputError, MemPolicy, Pid, Scenario, Tid};
use numabal_policy::{Action, MigrateVerdict, Policy, ThreadInfo};
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::collections::BTreeMap;

pub use crate::error::SimError;

mod daemon;
mod progress;

use crate::kernel::aa2012::AutoNuma2012;
use crate::kernel::linux6::Linux6;
use crate::kernel::stable::StableNumaKernel;
use crate::kernel::{KernelModel, NoBalancing};
pub use daemon::{NodeState, NodeStateAtEnd, PolicyLogEntry};
pub use progress::RunProgress;

/// A simulation in progress: the world, and what acts on it.
pub struct Sim<'a> {
    world: World<'a>,
    policy: Box<dyn Policy>,
    actions: Vec<Action>,
    /// The kernel's NUMA balancing model (`NoBalancing` unless the policy is one).
    kernel: Box<dyn KernelModel>,
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
        Built::Kernel(Flavour::Linux6, tun) => {
            let mut sim = Sim::new(sc, none());
            sim.kernel = Box::new(Linux6::new(&sim.world, tun));
            sim
        }
        Built::Kernel(Flavour::AutoNuma2012, tun) => {
            let mut sim = Sim::new(sc, none());
            sim.kernel = Box::new(AutoNuma2012::new(&mut sim.world, tun));
            sim
        }
        Built::Stable(tun) => {
            let mut sim = Sim::new(sc, none());
            sim.kernel = Box::new(StableNumaKernel::new(&sim.world, tun));
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
            kernel: Box::new(NoBalancing),
            daemon: daemon::DaemonRt::default(),
            progress: None,
            nominal_total_ns: 0.0,
        }
    }

    /// The load balancer's question: the policy's veto, then NUMA locality.
    fn can_migrate(&self, ctx: &LbCtx) -> CanMigrate {
        if self
            .policy
            .can_migrate_task(Tid(ctx.tid + 1), ctx.src_node, ctx.dst_node)
            != MigrateVerdict::Allow
        {
            return CanMigrate::No;
        }
        self.kernel.can_migrate_task(&self.world, ctx)
    }

    /// Run until every thread finished or `max_time_s`.
    pub fn run(&mut self) -> Result<(), SimError> {
        if self.progress.is_some() {
            self.nominal_total_ns = self.nominal_total_ns();
        }
        let wl = &self.world.sc.workload;
        for s in &wl.spec.shared {
            let pages = s.size.pages();
            let thp = self.world.thp_for(s.thp, s.kind == SharedKind::File);
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
            .map(|&t| self.world.on_tick(t))
            .collect();
        for t in at {
            self.world
                .events
                .push(t, EventKind::NumastatSample { periodic: false });
        }
        let every = self.world.sc.sim.numastat_every_s;
        if every > 0.0 {
            self.world.events.push(
                self.world.on_tick(every),
                EventKind::NumastatSample { periodic: true },
            );
        }
        if let Some(i) = self.policy.tick_interval_ns() {
            self.world.events.push(i.max(1), EventKind::PolicyTick);
        }
        let mut t0 = 0u64;
        loop {
            if self.world.work_done() {
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
            self.world.count_moves();
        }
        self.world.series_sample(true);
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
                    self.world.wake(t, self.world.now);
                }
            }
            EventKind::Tick => {
                self.kernel.tick(&mut self.world);
                self.world.sched.rotate();
                let mut sched = std::mem::take(&mut self.world.sched);
                sched.tick_balance(self.world.now, self.world.tick_ns, &|c: &LbCtx| {
                    self.can_migrate(c)
                });
                self.world.sched = sched;
                self.kernel.after_load_balance(&mut self.world);
                if self.world.check {
                    self.world.check_invariants()?;
                }
                self.world.check_deadlock()?;
                if self.daemon.has_jobs() {
                    self.run_migrate_pages();
                }
                self.snapshot_busy();
                if self.world.series.due(self.world.now) {
                    self.world.series_sample(false);
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
            EventKind::NumastatSample { periodic } => self.world.numastat_sample(periodic),
            EventKind::PolicyTick => self.policy_tick()?,
        }
        Ok(())
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
                    let thp = self.world.thp_for(r.thp, file);
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

        self.kernel.process_start(&mut self.world, pidx);
        // Tell the policy.
        let info = self.world.process_info(pidx, spec);
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
            self.kernel.sched_fork(&mut self.world, tid, parent);
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
            self.kernel.wake_up_new_task(&mut self.world, tid, cpu);
            self.world.note_runnable(tid, at);
        }
        Ok(())
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
                            self.world.migrate_page(obj, p, *node);
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

    fn finish_thread(&mut self, t: usize, at: u64) -> Result<(), SimError> {
        self.kernel.task_exit(&mut self.world, t);
        self.world.threads[t].state = TState::Done;
        self.world.threads[t].end_ns = Some(at);
        if let Some(c) = self.world.sched.exit(t as u32, at) {
            self.world.cpu_freed(c, at);
        }
        let (pidx, g) = (self.world.threads[t].proc, self.world.threads[t].group);
        let proc = &mut self.world.procs[pidx];
        proc.live -= 1;
        let grp = &mut proc.groups[g];
        grp.done += 1;
        if grp.done == grp.nthreads {
            // Threads run one after another within an interval, so the last to be
            // processed is not necessarily the last to finish: the join ends at the latest exit.
            let done_at = self.world.group_done_at(pidx, g);
            let joiners = std::mem::take(&mut self.world.procs[pidx].groups[g].joiners);
            for (j, since) in joiners {
                self.world.advance_phase(j);
                self.world.wake_at(j, done_at.max(since));
            }
        } else {
            self.world.maybe_release_barrier(pidx, g, at);
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
        let node_mb = self.world.process_node_mb(pidx);
        let p = &mut self.world.procs[pidx];
        p.end_ns = Some(at);
        p.node_mb_end = Some(node_mb);
        let objs: Vec<usize> = p.regions.iter().map(|r| r.obj).collect();
        self.kernel.process_exit(&mut self.world, pidx);
        for o in objs {
            self.world.obj_refs[o] -= 1;
            if self.world.obj_refs[o] == 0 {
                self.kernel.object_release(&mut self.world, o);
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
            let smt = self.world.smt_shares(c);
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
                self.world.slice_of(t, a)
            };
            let obj = self.world.procs[th.proc].regions[a.region].obj;
            let (unpop, _) = if a.pattern == Pattern::Sweep {
                // The pages just ahead of the sweep, as many as it touched last interval.
                let window = (th.window_bytes.max(256.0 * 1024.0) / PAGE_BYTES).ceil() as u64;
                let start = slice.0 + (th.prog.pos / PAGE_BYTES) as u64;
                let end = (start + window).min(slice.1);
                self.world
                    .random_mix(obj, Pattern::Uniform, a, (start.min(end), end), &mut mix)
            } else {
                self.world.random_mix(obj, a.pattern, a, slice, &mut mix)
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
            demands.push(self.world.demand(c, a, smt, share * (1.0 - debt_frac), mix));
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
                    self.world.wake(t, at); // records it again as runnable since `at`
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
            let smt = self.world.smt_shares(c);
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
        self.world.count_moves();
        Ok(())
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
                        let slice = self.world.slice_of(t, &a);
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
                            self.world.tau_for(c, &a, smt, tau);
                            tau_valid = true;
                        }
                    }
                    if !tau_valid {
                        self.world.tau_for(c, &a, smt, tau);
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
                        self.world.advance_phase(t);
                        tau_valid = false;
                    } else if budget >= before {
                        break;
                    }
                }
                PhaseRt::Compute(ns, jitter) => {
                    let ns = if self.world.threads[t].prog.started {
                        ns
                    } else {
                        self.world.jittered(ns, jitter)
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
                        self.world.advance_phase(t);
                    } else {
                        th.prog.left -= budget * cpu_share;
                        th.sum_exec_ns += budget;
                        self.world.user_ns += budget;
                        budget = 0.0;
                    }
                }
                PhaseRt::Sleep(ns, jitter) => {
                    let ns = self.world.jittered(ns, jitter);
                    let at = wall(total - budget);
                    self.world.advance_phase(t);
                    self.world.block(t, TState::Sleeping, at);
                    self.world.wake_at(t, at + ns as u64);
                    budget = 0.0;
                }
                PhaseRt::Spawn(target) => {
                    self.world.advance_phase(t);
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
                        let done_at = self.world.group_done_at(pidx, target);
                        self.world.advance_phase(t);
                        if done_at > at {
                            // Finished, but later than this thread's present.
                            self.world.block(t, TState::Sleeping, at);
                            self.world.wake_at(t, done_at);
                            budget = 0.0;
                        }
                    } else {
                        self.world.procs[pidx].groups[target].joiners.push((t, at));
                        self.world.block(t, TState::Blocked, at);
                        budget = 0.0;
                    }
                }
                PhaseRt::Barrier => {
                    let at = wall(total - budget);
                    self.world.procs[pidx].groups[g]
                        .barrier_waiting
                        .push((t, at));
                    self.world.block(t, TState::Blocked, at);
                    budget = 0.0;
                    self.world.maybe_release_barrier(pidx, g, at);
                }
            }
        }
        self.world.threads[t].window_bytes = bytes_this;
        self.world.cpu_busy_ns[c] += (self.world.threads[t].sum_exec_ns - exec0).max(0.0);
        Ok(())
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
                let cost = self
                    .world
                    .first_touch(t, a.region, page, node, phase_pol.as_ref())?;
                self.world.charge_kernel(t, cost);
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
                    self.world.charge_kernel(t, cost);
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
                    self.world.account(t, node, n, c as f64 / npages * take);
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
        let (unpop_w, populated) = self.world.random_mix(obj, a.pattern, a, slice, &mut mix);
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
                let cost = self
                    .world
                    .first_touch(t, a.region, p, node, phase_pol.as_ref())?;
                self.world.charge_kernel(t, cost);
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
        if self.kernel.hinting() && self.world.objects[obj].prot_in(slice.0, slice.1) > 0 {
            self.random_hint_faults(t, a, slice, bytes);
        }
        for (n, &f) in mix.iter().enumerate() {
            if f > 0.0 {
                self.world.account(t, node, n, bytes * f);
            }
        }
        // Accesses to untouched pages went where those pages were just placed.
        let placed_total: u64 = placed.iter().sum();
        if unpop_w > 0.0 {
            if placed_total == 0 {
                self.world.account(t, node, node, bytes * unpop_w);
            } else {
                for (n, &p) in placed.iter().enumerate() {
                    if p > 0 {
                        self.world.account(
                            t,
                            node,
                            n,
                            bytes * unpop_w * p as f64 / placed_total as f64,
                        );
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
                self.world.charge_kernel(t, cost);
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

    /// A NUMA hinting fault, to whichever model unmapped the page.
    fn hint_fault(&mut self, t: usize, cpu: usize, ri: usize, page: u64) -> f64 {
        self.kernel.hinting_fault(&mut self.world, t, cpu, ri, page)
    }

    /// Build the result.
    pub fn result(&self) -> RunResult {
        let finished = self.world.work_done();
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
        self.kernel.metrics(&mut m);
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
                    .unwrap_or_else(|| self.world.process_node_mb(i));
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
        let kernel = self.kernel.report(&self.world);
        RunResult {
            numabal_version: env!("CARGO_PKG_VERSION").to_string(),
            scenario: ScenarioSummary {
                machine: self.world.machine.name().to_string(),
                workload: self.world.sc.workload.name().to_string(),
                policy: self
                    .kernel
                    .name()
                    .unwrap_or_else(|| self.policy.name())
                    .to_string(),
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
            numa_balancing: kernel.numa_balancing,
            stable: kernel.stable,
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
