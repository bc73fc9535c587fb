//! What acts on the world, as the world sees it: the kernel model (the simulated kernel's
//! NUMA balancing mechanism, called at the kernel's own points) and user space (the run's
//! policy, told of processes and threads and asked before a task moves). Each keeps its
//! own state and acts on the world only through the world's methods.
//! (`crate::kernel::KernelModel` adds what the engine asks of a model beyond the run: its
//! name and its report.)
//!
//! ```text
//!   engine ──► World::advance(Agents) ──► KernelHooks ─┐
//!                                     └─► UserHooks ───┴─► World methods (allocate,
//!                                                        fault, migrate, move a thread,
//!                                                        charge time)
//! ```

use super::World;
use crate::error::SimError;
use crate::sched::{CanMigrate, LbCtx};
use numabal_model::{Pid, Tid};
use numabal_policy::{MigrateVerdict, ProcessInfo, ThreadInfo};

/// A kernel NUMA balancing model. Every hook has a default that does nothing, so "no
/// kernel balancing" is the empty model.
pub trait KernelHooks {
    /// A process started (its mappings exist, its threads not yet).
    fn process_start(&mut self, _w: &mut World, _pidx: usize) {}
    /// `sched_fork`: task `t` was created by `parent` (`None`: a new process's first task),
    /// before its first wakeup.
    fn sched_fork(&mut self, _w: &mut World, _t: usize, _parent: Option<usize>) {}
    /// `wake_up_new_task`: task `t` was put on `cpu` for the first time.
    fn wake_up_new_task(&mut self, _w: &mut World, _t: usize, _cpu: usize) {}
    /// Task `t` exited.
    fn task_exit(&mut self, _w: &mut World, _t: usize) {}
    /// Process `pidx` exited, before its mappings are released.
    fn process_exit(&mut self, _w: &mut World, _pidx: usize) {}
    /// Memory object `obj` is about to be freed (its last mapping went).
    fn object_release(&mut self, _w: &mut World, _obj: usize) {}
    /// `migrate_task_rq_fair`: task `t` moved from node `src` to node `dst` (any cause),
    /// reported at the tick after the move.
    fn task_migrated(&mut self, _w: &mut World, _t: usize, _src: usize, _dst: usize) {}
    /// A scheduler tick, before the load balancer runs.
    fn tick(&mut self, _w: &mut World) {}
    /// A scheduler tick, after the load balancer ran.
    fn after_load_balance(&mut self, _w: &mut World) {}
    /// Whether the model makes pages PROT_NONE (hinting faults can happen).
    fn hinting(&self) -> bool {
        false
    }
    /// A NUMA hinting fault by thread `t` on `cpu` at `page` of its region `ri`; returns
    /// the kernel time it cost the thread, ns.
    fn hinting_fault(
        &mut self,
        _w: &mut World,
        _t: usize,
        _cpu: usize,
        _ri: usize,
        _page: u64,
    ) -> f64 {
        0.0
    }
    /// The load balancer's question about moving a task (`can_migrate_task`).
    fn can_migrate_task(&self, _w: &World, _ctx: &LbCtx) -> CanMigrate {
        CanMigrate::Yes
    }
}

/// User space as the world sees it: the run's policy.
pub trait UserHooks {
    /// A process started: the policy hears of it and its actions run.
    fn process_start(&mut self, w: &mut World, info: &ProcessInfo) -> Result<(), SimError>;
    /// A thread started: the policy hears of it and its actions run.
    fn thread_start(&mut self, w: &mut World, info: &ThreadInfo) -> Result<(), SimError>;
    /// A process exited.
    fn process_exit(&mut self, w: &mut World, pid: Pid);
    /// The policy's say on the load balancer moving a task between nodes.
    fn can_migrate_task(&self, tid: Tid, src: usize, dst: usize) -> MigrateVerdict;
}

/// What acts on the world while it runs: the kernel model and user space.
pub struct Agents<'x> {
    pub kernel: &'x mut dyn KernelHooks,
    pub user: &'x mut dyn UserHooks,
}

impl Agents<'_> {
    /// The load balancer's question: the policy's veto, then the kernel model's answer.
    pub fn can_migrate(&self, w: &World, ctx: &LbCtx) -> CanMigrate {
        if self
            .user
            .can_migrate_task(Tid(ctx.tid + 1), ctx.src_node, ctx.dst_node)
            != MigrateVerdict::Allow
        {
            return CanMigrate::No;
        }
        self.kernel.can_migrate_task(w, ctx)
    }
}
