//! The simulation loop: events in total order; between events the world advances, every
//! running thread progressing at the rate the cost model gives it.
//!
//! ```text
//!   Sim = World + kernel model (KernelModel) + user space (the policy)
//!   loop:
//!     t1 = next event time (a tick at most tick_ms away)
//!     world.advance(t0, t1):  shares per CPU -> demands -> CostModel::solve -> run each
//!                             thread (accesses, first touches, hinting faults, phase
//!                             changes) -> load averages
//!     handle events at t1: process/group start, wakeups, tick (the kernel model's tick,
//!                          rotation, load balancing), numastat samples, the policy's pass
//! ```

use crate::event::EventKind;
use crate::kernel::{KernelModel, NoBalancing};
use crate::registry::Registry;
use crate::result::{RunResult, ScenarioSummary};
use crate::userspace::UserSpace;
use crate::world::{Agents, TState, World};
use numabal_model::Scenario;
use numabal_policy::Policy;

pub use crate::error::SimError;

mod progress;

pub use crate::userspace::PolicyLogEntry;
pub use crate::world::records::{NodeState, NodeStateAtEnd};
pub use progress::RunProgress;

/// A simulation in progress: the world, and what acts on it.
pub struct Sim<'a> {
    world: World<'a>,
    /// The kernel's NUMA balancing model (`NoBalancing` unless the policy is one).
    kernel: Box<dyn KernelModel>,
    /// The run's user-space policy and the execution of its actions.
    user: UserSpace,
    /// Told where the run is about once per simulated second (progress reports).
    progress: Option<&'a (dyn Fn(RunProgress) + Sync)>,
    /// The workload's nominal duration (`progress.rs`), when there is someone to tell.
    nominal_total_ns: f64,
    /// The policy's tunables as the run uses them (the result's `scenario.tunables`).
    tunables: serde_json::Value,
    /// What the engine did (benchmarks; not part of the result).
    counts: EngineCounts,
    /// The workload's own DAMOS schemes (`[[damos]]`), run whatever the policy.
    experiment: Option<crate::kernel::damos::DamosSet>,
    /// DAMON_STAT's kdamond (`sim.damon_stat`), run whatever the policy.
    damon_stat: Option<crate::kernel::damos::stat::DamonStat>,
}

/// What the engine did in a run: the cost of a run is about `steps x running threads`
/// plus the per-event and per-fault work (scripts/bench.sh prints these per wall second).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineCounts {
    /// Events handled (starts, wakeups, ticks, samples, policy passes).
    pub events: u64,
    /// Intervals every running thread was advanced over (one per distinct event time).
    pub steps: u64,
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
    run_in(crate::registry::standard(), sc, progress)
}

/// Run a scenario whose policy `registry` names.
pub fn run_in(
    registry: &Registry,
    sc: &Scenario,
    progress: Option<&(dyn Fn(RunProgress) + Sync)>,
) -> Result<RunResult, SimError> {
    run_counted(registry, sc, progress).map(|(r, _)| r)
}

/// `run_in`, also returning what the engine did.
pub fn run_counted(
    registry: &Registry,
    sc: &Scenario,
    progress: Option<&(dyn Fn(RunProgress) + Sync)>,
) -> Result<(RunResult, EngineCounts), SimError> {
    let built = registry.build_run(&sc.policy, sc.daemon.as_ref())?;
    crate::registry::check_machine(&sc.policy, built.policy.as_ref(), &sc.machine)?;
    let mut sim = Sim::with_user(sc, UserSpace::new(built.policy, built.daemon, &sc.machine));
    if let Some(k) = built.kernel {
        sim.kernel = k(&mut sim.world);
    }
    sim.tunables = built.tunables;
    sim.progress = progress;
    sim.run()?;
    Ok((sim.result(), sim.counts))
}

/// Run a scenario under a policy object (for policies not in the registry, e.g. tests).
pub fn run_with(sc: &Scenario, policy: Box<dyn Policy>) -> Result<RunResult, SimError> {
    let mut sim = Sim::new(sc, policy);
    sim.tunables = serde_json::to_value(&sc.policy.tunables).unwrap_or_default();
    sim.run()?;
    Ok(sim.result())
}

impl<'a> Sim<'a> {
    /// Set up a simulation (nothing runs until `run`).
    pub fn new(sc: &'a Scenario, policy: Box<dyn Policy>) -> Self {
        Sim::with_user(sc, UserSpace::new(policy, None, &sc.machine))
    }

    /// Set up a simulation of `sc` with `user` as its user space.
    fn with_user(sc: &'a Scenario, user: UserSpace) -> Self {
        let mut world = World::new(sc);
        let experiment = crate::kernel::damos::experiment(&mut world, &sc.workload.spec.damos);
        let damon_stat =
            (sc.sim.damon_stat).then(|| crate::kernel::damos::stat::DamonStat::new(sc.sim.seed));
        Sim {
            world,
            experiment,
            damon_stat,
            kernel: Box::new(NoBalancing),
            user,
            progress: None,
            nominal_total_ns: 0.0,
            tunables: serde_json::Value::Null,
            counts: EngineCounts::default(),
        }
    }

    /// The world, and what acts on it, borrowed apart.
    fn split(&mut self) -> (&mut World<'a>, Agents<'_>) {
        (
            &mut self.world,
            Agents {
                kernel: &mut *self.kernel,
                user: &mut self.user,
            },
        )
    }

    /// Run until every thread finished or `max_time_s`.
    pub fn run(&mut self) -> Result<(), SimError> {
        if self.progress.is_some() {
            self.nominal_total_ns = self.nominal_total_ns();
        }
        self.world.boot();
        if let Some(i) = self.user.first_tick_ns() {
            self.world.push_event(i, EventKind::PolicyTick);
        }
        let mut t0 = 0u64;
        loop {
            if self.world.work_done() {
                break;
            }
            let Some(t1) = self.world.next_event_time() else {
                break;
            };
            let max_ns = self.world.max_ns();
            if t1 >= max_ns {
                let (w, mut a) = self.split();
                w.advance(&mut a, t0, max_ns)?;
                self.world.set_now(max_ns);
                break;
            }
            if t1 < t0 {
                return Err(SimError::Invariant(format!(
                    "event at {t1} ns is before the present {t0} ns"
                )));
            }
            if t1 > t0 {
                let (w, mut a) = self.split();
                w.advance(&mut a, t0, t1)?;
                self.counts.steps += 1;
                t0 = t1;
            }
            self.world.set_now(t1);
            while self.world.next_event_time() == Some(t1) {
                let ev = self.world.pop_event().expect("peeked");
                self.handle(ev)?;
                self.counts.events += 1;
            }
            self.world.count_moves();
        }
        self.world.series_sample(true);
        self.user.finish(&self.world);
        Ok(())
    }

    fn handle(&mut self, kind: EventKind) -> Result<(), SimError> {
        let (w, mut a) = self.split();
        match kind {
            EventKind::ProcessStart { spec, instance } => {
                w.start_happens();
                w.start_process(&mut a, spec as usize, instance)?;
            }
            EventKind::GroupStart { proc_idx, group } => {
                w.start_happens();
                let home = w.home_cpu(proc_idx as usize);
                let now = w.now();
                w.start_group(&mut a, proc_idx as usize, group as usize, home, now)?;
            }
            EventKind::Wake { tid } => {
                let t = tid as usize;
                if w.thread(t).state == TState::Sleeping {
                    w.wake(t, w.now());
                }
            }
            EventKind::Tick => self.tick()?,
            EventKind::NumastatSample { periodic } => w.numastat_sample(periodic),
            EventKind::ProcSample => self.proc_sample(),
            EventKind::PolicyTick => self.user.policy_tick(&mut self.world)?,
        }
        Ok(())
    }

    /// What `/proc` shows now: the world's part and the kernel model's
    /// `/proc/PID/sched` fields.
    fn proc_sample(&mut self) {
        let mut s = self.world.proc_sample();
        for task in s.processes.iter_mut().flat_map(|p| p.tasks.iter_mut()) {
            task.sched = self.kernel.sched_numa(&self.world, task.tid as usize);
        }
        self.world.push_proc_sample(s);
    }

    /// A scheduler tick: the kernel model's tick, runqueue rotation and load balancing,
    /// checks, a daemon's queued page migrations, samples, progress.
    fn tick(&mut self) -> Result<(), SimError> {
        if let Some(d) = self.experiment.as_mut() {
            d.tick(&mut self.world);
        }
        if let Some(d) = self.damon_stat.as_mut() {
            d.tick(&mut self.world);
        }
        let (w, a) = self.split();
        for (t, src, dst) in w.take_node_moves() {
            a.kernel.task_migrated(w, t, src, dst);
        }
        a.kernel.tick(w);
        w.kswapd_tick();
        w.tick_balance(&a);
        a.kernel.after_load_balance(w);
        if w.checks_invariants() {
            w.check_invariants()?;
        }
        w.check_deadlock()?;
        if self.user.has_jobs() {
            self.user.run_migrate_pages(&mut self.world);
        }
        let w = &mut self.world;
        w.snapshot_busy();
        w.series_sample_if_due();
        if let Some(p) = self.progress
            && self.world.now() % 1_000_000_000 < self.world.tick_ns()
        {
            p(self.run_progress());
        }
        let w = &mut self.world;
        w.push_event(w.now() + w.tick_ns(), EventKind::Tick);
        Ok(())
    }

    /// Build the result.
    pub fn result(&self) -> RunResult {
        let w = &self.world;
        let mut metrics = w.run_metrics();
        self.kernel.metrics(&mut metrics);
        let (by_cause, by_class) = w.thread_migrations_by();
        let processes = w.process_results();
        let kernel = self.kernel.report(w);
        RunResult {
            numabal_version: env!("CARGO_PKG_VERSION").to_string(),
            scenario: ScenarioSummary {
                machine: w.machine().name().to_string(),
                workload: w.scenario().workload.name().to_string(),
                // numabal's daemon is the run's policy, whatever the kernel runs beside it.
                policy: self
                    .kernel
                    .name()
                    .filter(|_| !self.user.is_numabal_daemon())
                    .unwrap_or_else(|| self.user.name())
                    .to_string(),
                seed: w.scenario().sim.seed,
                overrides: w.scenario().overrides.clone(),
                tunables: self.tunables.clone(),
            },
            finished: w.work_done(),
            metrics,
            thread_migrations_by_cause: by_cause,
            thread_migrations_by_class: by_class,
            ping_pong: w.ping_pong().clone(),
            processes,
            node_used_mb: w.node_used_mb(),
            stalls: w.stalls().clone(),
            numa_balancing: kernel.numa_balancing,
            stable: kernel.stable,
            numastat: w.numastat().to_vec(),
            proc_samples: w.proc_samples().to_vec(),
            series: w.series(),
            policy_log: self.user.log().to_vec(),
            node_state: w.node_state_at_end(),
            daemon: self.user.daemon_report(w),
        }
    }
}
