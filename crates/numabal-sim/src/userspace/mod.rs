//! User space in the simulator: the run's policy (a placement daemon such as numad, or
//! the static policies' process-start rules) and the simulated kernel's execution of
//! its actions (`sched_setaffinity`, `set_mempolicy`/`mbind`, `migrate_pages`).
//!
//! ```text
//!   UserSpace
//!     policy (the policy core object the registry built)
//!     as its own program (daemon.rs): process/thread start hooks, passes at the policy's
//!        interval, migrate_pages/move_pages queued in its context
//!     as numabal's daemon (numabal_daemon.rs): the live daemon's loop on the simulated
//!        host — judge, sensor samples, budget, its CPU charged, the live decision log
//! ```

mod daemon;
mod numabal_daemon;

pub use daemon::PolicyLogEntry;
pub use numabal_daemon::DaemonReport;

use crate::error::SimError;
use crate::memory::CHUNK;
use crate::registry::SimDaemon;
use crate::sched::Cause;
use crate::world::{UserHooks, World};
use numabal_model::{Machine, Pid, Tid};
use numabal_policy::{Action, MigrateVerdict, Policy, ProcessInfo, ThreadInfo};

/// The run's user-space policy and what carries out its actions.
pub struct UserSpace {
    policy: Box<dyn Policy>,
    /// Reused action buffer.
    actions: Vec<Action>,
    /// A daemon's queued `migrate_pages` calls and decision log.
    daemon: daemon::DaemonRt,
    /// The policy runs as numabal's placement daemon (a `[daemon]` run).
    numabal: Option<numabal_daemon::NumabalDaemon>,
}

impl UserSpace {
    /// User space running `policy` on `machine`; as numabal's daemon with `daemon`'s
    /// settings.
    pub fn new(policy: Box<dyn Policy>, daemon: Option<SimDaemon>, machine: &Machine) -> UserSpace {
        UserSpace {
            policy,
            actions: Vec::new(),
            daemon: daemon::DaemonRt::default(),
            numabal: daemon.map(|d| numabal_daemon::NumabalDaemon::new(d, machine.nr_cpus())),
        }
    }

    /// The policy runs as numabal's daemon.
    pub fn is_numabal_daemon(&self) -> bool {
        self.numabal.is_some()
    }

    /// The policy object (to show which type runs).
    pub fn policy(&self) -> &dyn Policy {
        &*self.policy
    }

    /// The run is over: numabal's daemon logs its stop.
    pub fn finish(&mut self, w: &World) {
        self.numabal_stop(w);
    }

    /// The policy's name.
    pub fn name(&self) -> &str {
        self.policy.name()
    }

    /// The policy's first pass: when it asks for passes of its own (a daemon); numabal's
    /// daemon makes its first pass when the run starts.
    pub fn first_tick_ns(&self) -> Option<u64> {
        if let Some(d) = &self.numabal {
            return Some(d.start_ns());
        }
        self.policy.tick_interval_ns().map(|i| i.max(1))
    }

    /// `migrate_pages` calls are queued.
    pub fn has_jobs(&self) -> bool {
        self.daemon.has_jobs()
    }

    /// The decision log.
    pub fn log(&self) -> &[PolicyLogEntry] {
        &self.daemon.log
    }

    /// Run the policy's callback `f` and carry out the actions it asks for.
    fn act(
        &mut self,
        w: &mut World,
        f: impl FnOnce(&mut dyn Policy, &World, &mut Vec<Action>),
    ) -> Result<(), SimError> {
        let mut out = std::mem::take(&mut self.actions);
        out.clear();
        f(&mut *self.policy, w, &mut out);
        self.apply_actions(w, &out)?;
        self.actions = out;
        Ok(())
    }

    /// A pass of the policy: its observation of `threads` and `processes` with the
    /// machine's nodes and CPUs' idle time (and a sensor's `samples`), its actions in `out`.
    fn observe_and_tick(
        &mut self,
        w: &World,
        threads: &[numabal_policy::ThreadObs],
        processes: &[numabal_policy::ProcessObs],
        samples: &[numabal_policy::AccessSample],
        out: &mut Vec<Action>,
    ) {
        let nodes = w.node_obs();
        let idle = w.cpu_idle_ns();
        self.policy.on_tick(
            w.machine(),
            &numabal_policy::Observation {
                now_ns: w.now(),
                threads,
                processes,
                nodes: &nodes,
                cpu_idle_ns: &idle,
                samples,
            },
            out,
        );
    }

    fn apply_actions(&mut self, w: &mut World, actions: &[Action]) -> Result<(), SimError> {
        for a in actions {
            match a {
                Action::SetThreadAffinity { tid, cpus } => {
                    let t = tid.0 as usize - 1;
                    let cs = &w.proc(w.thread(t).proc).cpuset_cpus;
                    let allowed = cpus.and(cs);
                    if !allowed.is_empty() {
                        w.set_affinity(t, allowed);
                    }
                }
                Action::SetProcessMempolicy { pid, policy } => {
                    w.set_process_mempolicy(pid.idx() - 1, policy.clone())
                }
                Action::SetThreadMempolicy { tid, policy } => {
                    w.set_thread_mempolicy(tid.idx() - 1, policy.clone())
                }
                Action::SetRangeMempolicy {
                    pid,
                    region,
                    first_page,
                    end_page,
                    policy,
                } => {
                    w.mbind(
                        pid.idx() - 1,
                        *region,
                        *first_page,
                        *end_page,
                        policy.clone(),
                    );
                }
                Action::MigratePages {
                    pid,
                    region,
                    first_page,
                    end_page,
                    node,
                } => {
                    let r = &w.proc(pid.idx() - 1).regions[*region];
                    let (obj, end) = (r.obj, (*end_page).min(r.pages));
                    let mut p = *first_page;
                    while p < end {
                        let o = w.object(obj);
                        let step = if o.is_huge(p / CHUNK) {
                            CHUNK - p % CHUNK
                        } else {
                            1
                        };
                        if o.node_of(p).is_some_and(|n| n != *node) {
                            w.migrate_page(obj, p, *node);
                        }
                        p += step;
                    }
                }
                Action::MoveThread { tid, node } => {
                    w.move_task_to_node(tid.idx() - 1, *node, Cause::Policy);
                }
                Action::MigrateProcessPages { pid, from, to } => {
                    self.queue_migrate_pages(w, *pid, *from, &[*to], None, 1)
                }
                Action::InterleaveProcessPages { pid, from, nodes } => {
                    self.queue_migrate_pages(w, *pid, *from, nodes, None, 1)
                }
                Action::Log { pid, message } => self.policy_log(w, *pid, message),
                // Addresses mean nothing here: simulated policies name pages by region
                // and index (MigratePages).
                Action::MovePages { pid, addrs, node } => {
                    let pages = daemon::folios_at(w, pid.idx() - 1, addrs);
                    self.queue_move_pages(w, *pid, pages, *node, None, 1)
                }
            }
        }
        Ok(())
    }
}

/// numabal's daemon hears of nothing between its passes, as on a host: no process or
/// thread start, no exit, no say in the load balancer's moves.
impl UserHooks for UserSpace {
    fn process_start(&mut self, w: &mut World, info: &ProcessInfo) -> Result<(), SimError> {
        if self.numabal.is_some() {
            return Ok(());
        }
        self.act(w, |p, w, out| p.on_process_start(w.machine(), info, out))
    }
    fn thread_start(&mut self, w: &mut World, info: &ThreadInfo) -> Result<(), SimError> {
        if self.numabal.is_some() {
            return Ok(());
        }
        self.act(w, |p, w, out| p.on_thread_start(w.machine(), info, out))
    }
    fn process_exit(&mut self, _w: &mut World, pid: Pid) {
        if self.numabal.is_none() {
            self.policy.on_process_exit(pid);
        }
    }
    fn can_migrate_task(&self, tid: Tid, src: usize, dst: usize) -> MigrateVerdict {
        if self.numabal.is_some() {
            return MigrateVerdict::Allow;
        }
        self.policy.can_migrate_task(tid, src, dst)
    }
}
