//! A CFS-like scheduler: per-CPU runqueues, fork and wakeup placement, and the periodic,
//! newly-idle and active load balancing of Linux 6.x over its sched-domain hierarchy.
//!
//! ```text
//!   NUMA  (nodes within distance d)  groups = node spans      imbalance_pct 117, imb_numa_nr
//!   NODE  (the node, when it has several LLCs)  groups = LLCs  117
//!   MC    (the LLC)                  groups = cores          117, cache_nice_tries 1
//!   SMT   (the core)                 groups = CPUs           110
//! ```
//!
//! Simplifications (docs/model-notes.md): threads on one CPU share it evenly within an
//! interval (processor sharing, nice 0) and the runqueue rotates once per tick; the task
//! at the head is "current" and cannot be pulled except by active balancing; tasks waiting
//! on a runqueue are never cache-hot; load and utilisation are exponential averages with
//! PELT's 32 ms half-life; idle CPUs balance on their own timers (standing in for NOHZ
//! idle balancing); no RT/IRQ pressure, so every CPU has capacity 1024.
//!
//! The files follow the kernel's functions (kernel/sched/fair.c, topology.c):
//!
//! ```text
//!   mod.rs        tasks, runqueues and moves, load averages,
//!                 the invariant check
//!   topology.rs   levels, spans and groups of a machine       build_sched_domains
//!   placement.rs  fork/exec and wakeup placement, policy      find_idlest_cpu,
//!                 and affinity moves                          select_idle_sibling
//!   stats.rs      group sums and types, shared by both        group_classify
//!   fbg.rs        busiest group, imbalance, busiest runqueue  find_busiest_group,
//!                                                             calculate_imbalance, ...
//!   balance.rs    when balancing runs and what it moves       load_balance,
//!                                                             detach_tasks, ...
//!   cache.rs      Linux 7.2's cache-aware balancing (off      task_cache_work,
//!                 unless sim.llc_balancing)                   can_migrate_llc, ...
//! ```

mod balance;
mod cache;
mod fbg;
mod placement;
mod stats;
mod topology;

use numabal_model::Mask;

use topology::Level;

/// Why a thread changed CPU (only inter-node moves are reported as migrations).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cause {
    /// Periodic or newly-idle load balancing.
    LoadBalance,
    /// Active balancing (the stopper pushed a running task).
    ActiveBalance,
    /// Wakeup placement chose a CPU on another node.
    Wakeup,
    /// A policy asked for the move (`Action::MoveThread`, Stable-NUMA's thread move).
    Policy,
    /// A policy swapped the thread with one on another node (Stable-NUMA's swap).
    PolicySwap,
    /// The thread's affinity no longer allowed its CPU.
    Affinity,
    /// NUMA balancing moved it to its preferred node (`migrate_task_to`).
    NumaMove,
    /// NUMA balancing swapped it with a task on another node (`migrate_swap`).
    NumaSwap,
    /// The original AutoNUMA (2012) exchanged it with the running task of a CPU on
    /// another node (`sched_autonuma_balance`, through the CPU stopper).
    AutonumaExchange,
}

/// Number of causes.
pub const NR_CAUSES: usize = 9;

impl Cause {
    /// Stable-NUMA's class of an inter-node migration (`thread_migrations_by_class`).
    pub fn class(self) -> &'static str {
        match self {
            Cause::LoadBalance | Cause::ActiveBalance | Cause::Wakeup => "load_balance",
            Cause::Policy => "policy_move",
            Cause::PolicySwap => "policy_swap",
            Cause::Affinity => "affinity",
            Cause::NumaMove => "numa_move",
            Cause::NumaSwap | Cause::AutonumaExchange => "numa_swap",
        }
    }

    /// Name used in results.
    pub fn name(self) -> &'static str {
        match self {
            Cause::LoadBalance => "load_balance",
            Cause::ActiveBalance => "active_balance",
            Cause::Wakeup => "wakeup",
            Cause::Policy => "policy",
            Cause::PolicySwap => "policy_swap",
            Cause::Affinity => "affinity",
            Cause::NumaMove => "numa_move",
            Cause::NumaSwap => "numa_swap",
            Cause::AutonumaExchange => "autonuma_exchange",
        }
    }

    /// All causes, in result order.
    pub const ALL: [Cause; NR_CAUSES] = [
        Cause::LoadBalance,
        Cause::ActiveBalance,
        Cause::Wakeup,
        Cause::Policy,
        Cause::PolicySwap,
        Cause::Affinity,
        Cause::NumaMove,
        Cause::NumaSwap,
        Cause::AutonumaExchange,
    ];
}

/// Per-task scheduler state.
#[derive(Debug, Clone)]
pub struct Task {
    /// CPU whose runqueue holds the task, if runnable.
    pub cpu: Option<usize>,
    /// CPU it last ran on.
    pub prev_cpu: usize,
    /// Allowed CPUs (affinity ∩ cpuset).
    pub allowed: Mask,
    /// PELT-like utilisation, 0..1024.
    pub util: f64,
    /// PELT-like runnable average, 0..1024 (also its load: nice 0).
    pub runnable: f64,
    recent_used_cpu: Option<usize>,
    /// Exists (has been created and not exited).
    pub alive: bool,
    /// `numa_preferred_nid`, set by a NUMA-balancing model (`sched_setnuma`); feeds the
    /// runqueues' `nr_numa_running`/`nr_preferred_running` and the `fbq_type` filter.
    pub numa_preferred_nid: Option<usize>,
    /// Every CPU whose runqueue has held it: its share of its process's `mm_cpumask`
    /// where the kernel keeps a CPU there after a switch (`core.mm_cpumask_kept`).
    pub ran_on: Mask,
    /// Its process (`p->mm`), for cache-aware scheduling.
    pub mm: Option<u32>,
    /// `p->preferred_llc` (cache-aware scheduling).
    pub preferred_llc: Option<usize>,
}

/// `can_migrate_task`'s answer for a load-balancer move across nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CanMigrate {
    /// Move it.
    Yes,
    /// Move it: it improves NUMA locality (`migrate_degrades_locality` < 0), which
    /// cache-aware scheduling's preference does not override.
    Better,
    /// Cache-hot in the NUMA sense (`migrate_degrades_locality` > 0): only after
    /// `cache_nice_tries` failed balancing attempts.
    Hot,
    /// Never (a placement policy's veto).
    No,
    /// Only if a first pass over the candidates, which skips such tasks, left an
    /// imbalance: the original AutoNUMA's `LBF_NUMA` pass (`move_tasks` first tries the
    /// tasks whose `task_selected_nid` is the destination's node, then all).
    Later,
}

/// What `can_migrate_task` is asked about.
#[derive(Debug, Clone, Copy)]
pub struct LbCtx {
    /// The task.
    pub tid: u32,
    /// Source CPU and node.
    pub src_cpu: usize,
    /// Source node.
    pub src_node: usize,
    /// Destination node.
    pub dst_node: usize,
    /// Source runqueue's `nr_running`.
    pub src_nr_running: usize,
    /// Source runqueue's `nr_preferred_running`.
    pub src_nr_preferred_running: usize,
    /// The balancing CPU is idle (`CPU_IDLE`, not newly idle).
    pub dst_idle: bool,
    /// Active balancing (`LBF_ACTIVE_LB`: locality is not considered).
    pub active: bool,
}

/// The load balancer's question to the engine (policy veto, NUMA locality).
pub type CanMove<'a> = &'a dyn Fn(&LbCtx) -> CanMigrate;

/// Per-CPU state.
#[derive(Debug, Clone)]
struct Cpu {
    /// Runnable tasks, most recently run first; `[0]` is current.
    tasks: Vec<u32>,
    idle_stamp: u64,
    last_balance: Vec<u64>,
    balance_interval_ms: Vec<f64>,
    nr_balance_failed: Vec<u32>,
}

impl Cpu {
    /// A CPU with no task, every level's balance interval at its shortest (the span's
    /// weight in ms).
    fn new(levels: &[Level], cpu: usize) -> Self {
        let nlev = levels.len();
        Cpu {
            tasks: Vec::new(),
            idle_stamp: 0,
            last_balance: vec![0; nlev],
            balance_interval_ms: levels
                .iter()
                .map(|l| l.span(cpu).cpus.len() as f64)
                .collect(),
            nr_balance_failed: vec![0; nlev],
        }
    }
}

/// A move the scheduler made, for the engine's counters.
#[derive(Debug, Clone, Copy)]
pub struct Move {
    /// Task.
    pub tid: u32,
    /// From CPU.
    pub from: usize,
    /// To CPU.
    pub to: usize,
    /// Why.
    pub cause: Cause,
}

const CAPACITY: f64 = 1024.0;
const PELT_HALFLIFE_NS: f64 = 32e6;

/// The scheduler.
#[derive(Debug, Clone, Default)]
pub struct Sched {
    levels: Vec<Level>,
    cpus: Vec<Cpu>,
    /// Tasks by tid.
    pub tasks: Vec<Task>,
    cpu_node: Vec<usize>,
    core_of: Vec<usize>,
    core_cpus: Vec<Vec<usize>>,
    llc_cpus: Vec<Vec<usize>>,
    llc_of: Vec<usize>,
    /// Moves made since the engine last drained them.
    pub moves: Vec<Move>,
    /// CPUs that ran periodic balancing at the last `tick_balance` while busy (the
    /// `SCHED_SOFTIRQ` ran with `idle_balance` false), in CPU order.
    pub balanced_busy: Vec<usize>,
    /// Cache-aware scheduling (off unless `enable_llc_balancing`).
    cache: cache::SchedCache,
}

impl Sched {
    /// Register a task (not yet runnable).
    pub fn add_task(&mut self, allowed: Mask, parent_cpu: usize) -> u32 {
        self.tasks.push(Task {
            cpu: None,
            prev_cpu: parent_cpu,
            allowed,
            util: 512.0,
            runnable: CAPACITY,
            recent_used_cpu: None,
            alive: true,
            numa_preferred_nid: None,
            ran_on: Mask::new(),
            mm: None,
            preferred_llc: None,
        });
        (self.tasks.len() - 1) as u32
    }

    /// Runnable tasks on a CPU, current first.
    pub fn rq(&self, cpu: usize) -> &[u32] {
        &self.cpus[cpu].tasks
    }

    /// Number of CPUs.
    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }

    /// Node of a CPU.
    pub fn node_of(&self, cpu: usize) -> usize {
        self.cpu_node[cpu]
    }

    /// Number of the core's CPUs that have runnable tasks.
    pub fn busy_siblings(&self, cpu: usize) -> usize {
        self.core_cpus[self.core_of[cpu]]
            .iter()
            .filter(|&&c| !self.cpus[c].tasks.is_empty())
            .count()
    }

    /// No runnable task on `cpu`.
    pub fn is_idle(&self, cpu: usize) -> bool {
        self.cpus[cpu].tasks.is_empty()
    }

    /// Sum of the runnable tasks' load (nice 0: their runnable averages).
    pub fn cpu_load(&self, cpu: usize) -> f64 {
        self.cpus[cpu]
            .tasks
            .iter()
            .map(|&t| self.tasks[t as usize].runnable)
            .sum()
    }

    /// `cpu_util_cfs`: the tasks' utilisation, capped at the capacity.
    pub fn cpu_util(&self, cpu: usize) -> f64 {
        self.cpus[cpu]
            .tasks
            .iter()
            .map(|&t| self.tasks[t as usize].util)
            .sum::<f64>()
            .min(CAPACITY)
    }

    fn enqueue(&mut self, tid: u32, cpu: usize) {
        // Like `account_entity_enqueue`, a newly queued task goes to the most-recently-run
        // end of the list (just behind current), so `detach_tasks` reaches it last.
        let rq = &mut self.cpus[cpu].tasks;
        let at = rq.len().min(1);
        rq.insert(at, tid);
        let t = &mut self.tasks[tid as usize];
        t.cpu = Some(cpu);
        t.ran_on.insert(cpu);
    }

    /// Remove a task from its runqueue (sleep, block, exit). Returns the CPU it left.
    pub fn dequeue(&mut self, tid: u32, now: u64) -> Option<usize> {
        let cpu = self.tasks[tid as usize].cpu.take()?;
        let rq = &mut self.cpus[cpu].tasks;
        if let Some(i) = rq.iter().position(|&t| t == tid) {
            rq.remove(i);
        }
        self.tasks[tid as usize].prev_cpu = cpu;
        if rq.is_empty() {
            self.cpus[cpu].idle_stamp = now;
        }
        Some(cpu)
    }

    /// The task exits.
    pub fn exit(&mut self, tid: u32, now: u64) -> Option<usize> {
        let c = self.dequeue(tid, now);
        self.tasks[tid as usize].alive = false;
        self.llc_task_exit(tid);
        c
    }

    /// Move a runnable task between runqueues.
    pub fn migrate(&mut self, tid: u32, from: usize, to: usize, cause: Cause, now: u64) {
        self.detach_task(tid, from, now);
        self.attach_task(tid, from, to, cause);
    }

    /// First half of a move: off `from`'s runqueue (`detach_task`).
    fn detach_task(&mut self, tid: u32, from: usize, now: u64) {
        let rq = &mut self.cpus[from].tasks;
        if let Some(i) = rq.iter().position(|&t| t == tid) {
            rq.remove(i);
        }
        if rq.is_empty() {
            self.cpus[from].idle_stamp = now;
        }
    }

    /// Second half of a move: onto `to`'s runqueue, recorded with its cause
    /// (`attach_task`).
    fn attach_task(&mut self, tid: u32, from: usize, to: usize, cause: Cause) {
        self.enqueue(tid, to);
        self.tasks[tid as usize].prev_cpu = from;
        self.moves.push(Move {
            tid,
            from,
            to,
            cause,
        });
    }

    /// Advance the load averages by `dt` ns with the runqueues as they are.
    pub fn update_load(&mut self, dt: u64) {
        if dt == 0 {
            return;
        }
        self.account_llc_runtime(dt);
        let decay = 0.5f64.powf(dt as f64 / PELT_HALFLIFE_NS);
        for c in 0..self.cpus.len() {
            let k = self.cpus[c].tasks.len();
            for i in 0..k {
                let t = self.cpus[c].tasks[i] as usize;
                let share = CAPACITY / k as f64;
                let task = &mut self.tasks[t];
                task.util = share + (task.util - share) * decay;
                task.runnable = CAPACITY + (task.runnable - CAPACITY) * decay;
            }
        }
        for t in self.tasks.iter_mut().filter(|t| t.alive && t.cpu.is_none()) {
            t.util *= decay;
            t.runnable *= decay;
        }
    }

    /// Round-robin the runqueues: the least recently run task becomes current.
    pub fn rotate(&mut self) {
        for c in &mut self.cpus {
            if c.tasks.len() > 1 {
                let t = c.tasks.pop().expect("len > 1");
                c.tasks.insert(0, t);
            }
        }
    }

    /// Check that every runnable task is on exactly one allowed CPU.
    pub fn check(&self) -> Result<(), String> {
        let mut seen = vec![false; self.tasks.len()];
        for (c, cpu) in self.cpus.iter().enumerate() {
            for &t in &cpu.tasks {
                let task = &self.tasks[t as usize];
                if seen[t as usize] {
                    return Err(format!("task {t} is on two runqueues"));
                }
                seen[t as usize] = true;
                if task.cpu != Some(c) {
                    return Err(format!(
                        "task {t} is on CPU {c}'s runqueue but thinks it is on {:?}",
                        task.cpu
                    ));
                }
                if !task.allowed.contains(c) {
                    return Err(format!(
                        "task {t} runs on CPU {c}, outside its allowed CPUs {}",
                        task.allowed
                    ));
                }
            }
        }
        for (t, task) in self.tasks.iter().enumerate() {
            if task.cpu.is_some() && !seen[t] {
                return Err(format!(
                    "task {t} claims CPU {:?} but no runqueue holds it",
                    task.cpu
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
