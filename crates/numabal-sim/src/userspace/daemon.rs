//! What a user-space placement daemon (`numad`) works through, in the simulator: the
//! observation it reads from `/proc` and `/sys` at each of its passes, and its actions run
//! the way the kernel runs them for it.
//!
//! ```text
//!  PolicyTick (the policy's own interval)
//!    Observation: threads and their CPUs; per process: comm, threads, utime+stime, vsize,
//!                 RSS and RSS per node (numa_maps), Mems_allowed; per node: MemTotal,
//!                 MemFree; per CPU: idle time (/proc/stat)
//!    policy.on_tick -> actions
//!      SetThreadAffinity        at once (sched_setaffinity); threads the process creates
//!                               later inherit the mask, as clone() does
//!      MigrateProcessPages      queued: migrate_pages(2) runs in the daemon's context, one
//!                               call after another, at the cost of a kernel migration per
//!                               page (migrate_page_ns + the copy + a TLB shootdown), a tick's
//!                               worth of copying per tick
//!      MovePages                queued like migrate_pages: move_pages(2) of the sampled
//!                               addresses (world/procfs.rs maps them to pages)
//!      Log                      the run's policy_log
//!    next PolicyTick: the policy's interval after the last queued call returns (numad's
//!    loop is synchronous: it sleeps after bind_process_and_migrate_memory returns)
//! ```
//!
//! Simplifications (docs/model-notes.md, "numad in the simulator"): the daemon's own CPU
//! time (reading `/proc`, copying pages) is not taken from any simulated CPU; a page being
//! migrated stays accessible until it has moved (the kernel blocks a thread that touches
//! it for the copy's duration).

use super::UserSpace;
use crate::error::SimError;
use crate::event::EventKind;
use crate::memory::CHUNK;
use crate::world::{NS, World};
use numabal_model::{Mask, Pid};
use numabal_policy::{Action, Observation};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// One `migrate_pages(pid, {from}, {to})` call in progress.
#[derive(Debug, Clone)]
struct MigJob {
    pidx: usize,
    from: usize,
    to: usize,
    /// Where the walk over the process's pages is: (region, page).
    at: (usize, u64),
}

/// One `move_pages(pid, pages, node)` call in progress.
#[derive(Debug, Clone)]
struct MoveJob {
    pidx: usize,
    /// (region, page) of each address given, in the order given.
    pages: Vec<(usize, u64)>,
    to: usize,
    /// The next of `pages` to move.
    next: usize,
}

/// A system call of the daemon's, run in its context one after another.
#[derive(Debug, Clone)]
enum Call {
    MigratePages(MigJob),
    MovePages(MoveJob),
}

/// The calls of one policy callback, for the "moved" log line.
#[derive(Debug, Clone)]
struct Batch {
    pid: u32,
    start_ns: u64,
    to: Mask,
    pages: u64,
}

/// A line of the decision log.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PolicyLogEntry {
    /// Simulated time, s.
    pub t_s: f64,
    /// The process it is about.
    pub pid: u32,
    /// The policy's words (numad's log lines).
    pub message: String,
}

/// The daemon mechanism's state.
#[derive(Debug, Clone, Default)]
pub(crate) struct DaemonRt {
    jobs: VecDeque<Call>,
    batch: Option<Batch>,
    /// The policy's next interval, waiting for the queued calls to return.
    deferred_tick: Option<u64>,
    pub(crate) log: Vec<PolicyLogEntry>,
}

impl DaemonRt {
    /// `migrate_pages` calls are queued.
    pub(crate) fn has_jobs(&self) -> bool {
        !self.jobs.is_empty()
    }
}

impl UserSpace {
    /// A pass of a policy with its own interval (`Policy::tick_interval_ns`).
    pub(crate) fn policy_tick(&mut self, w: &mut World) -> Result<(), SimError> {
        let threads = w.thread_obs();
        let processes = w.process_obs();
        let nodes = w.node_obs();
        let idle = w.cpu_idle_ns();
        let mut out = std::mem::take(&mut self.actions);
        out.clear();
        self.policy.on_tick(
            w.machine(),
            &Observation {
                now_ns: w.now(),
                threads: &threads,
                processes: &processes,
                nodes: &nodes,
                cpu_idle_ns: &idle,
                samples: &[],
            },
            &mut out,
        );
        for a in &out {
            if let Action::SetThreadAffinity { tid, cpus } = a {
                // clone() copies the creator's mask: threads started later get it too.
                let pidx = w.thread(tid.idx() - 1).proc;
                w.set_inherited_affinity(pidx, cpus.clone());
            }
        }
        self.apply_actions(w, &out)?;
        self.actions = out;
        if let Some(i) = self.policy.tick_interval_ns() {
            if self.daemon.jobs.is_empty() {
                w.push_event(w.now() + i.max(1), EventKind::PolicyTick);
            } else {
                self.daemon.deferred_tick = Some(i.max(1));
            }
        }
        Ok(())
    }

    /// Queue a `migrate_pages` call.
    pub(crate) fn queue_migrate_pages(&mut self, w: &World, pid: Pid, from: usize, to: usize) {
        let pidx = pid.idx() - 1;
        let b = self.daemon.batch.get_or_insert(Batch {
            pid: pid.0,
            start_ns: w.now(),
            to: Mask::new(),
            pages: 0,
        });
        b.to.insert(to);
        self.daemon.jobs.push_back(Call::MigratePages(MigJob {
            pidx,
            from,
            to,
            at: (0, 0),
        }));
    }

    /// Queue a `move_pages` call: the pages at `addrs` of process `pid` to `node`.
    /// Addresses outside the process's mappings are skipped (`-EFAULT` for that page), and
    /// so is the whole call when `node` is outside its cpuset's memory nodes (`-EACCES`).
    pub(crate) fn queue_move_pages(&mut self, w: &World, pid: Pid, addrs: &[u64], node: usize) {
        let pidx = pid.idx() - 1;
        if !w.proc(pidx).cpuset_mems.contains(node) {
            return;
        }
        let pages = addrs.iter().filter_map(|&a| w.page_at(pidx, a)).collect();
        self.daemon.jobs.push_back(Call::MovePages(MoveJob {
            pidx,
            pages,
            to: node,
            next: 0,
        }));
    }

    /// `migrate_pages` of `job` within `budget` ns of the daemon's time; true when done.
    fn migrate_pages_step(&mut self, w: &mut World, job: &mut MigJob, budget: &mut f64) -> bool {
        let (mut r, mut p) = job.at;
        while r < w.proc(job.pidx).regions.len() {
            let (obj, pages) = {
                let reg = &w.proc(job.pidx).regions[r];
                (reg.obj, reg.pages)
            };
            while p < pages {
                if *budget <= 0.0 {
                    job.at = (r, p);
                    return false;
                }
                let o = w.object(obj);
                let (step, nr) = if o.is_huge(p / CHUNK) {
                    (CHUNK - p % CHUNK, o.chunk_len(p / CHUNK))
                } else {
                    (1, 1)
                };
                if o.node_of(p) == Some(job.from) {
                    match w.migrate_page(obj, p, job.to) {
                        Some(cost) => {
                            *budget -= cost;
                            if let Some(b) = self.daemon.batch.as_mut() {
                                b.pages += nr;
                            }
                        }
                        // The destination is full: the kernel still tried.
                        None => *budget -= w.machine().spec.costs.migrate_page_ns,
                    }
                }
                p += step;
            }
            r += 1;
            p = 0;
        }
        true
    }

    /// A decision log line.
    pub(crate) fn policy_log(&mut self, w: &World, pid: Pid, message: &str) {
        self.daemon.log.push(PolicyLogEntry {
            t_s: w.now() as f64 / NS,
            pid: pid.0,
            message: message.to_string(),
        });
    }

    /// Run queued `migrate_pages` and `move_pages` calls for one tick of the daemon's time.
    pub(crate) fn run_migrate_pages(&mut self, w: &mut World) {
        let mut budget = w.tick_ns() as f64;
        while budget > 0.0 {
            let Some(mut job) = self.daemon.jobs.pop_front() else {
                break;
            };
            let done = match &mut job {
                Call::MigratePages(j) => self.migrate_pages_step(w, j, &mut budget),
                Call::MovePages(j) => move_pages_step(w, j, &mut budget),
            };
            if !done {
                self.daemon.jobs.push_front(job);
            }
        }
        if self.daemon.jobs.is_empty() {
            if let Some(b) = self.daemon.batch.take() {
                let secs = (w.now() - b.start_ns) as f64 / NS;
                let msg = format!(
                    "PID {} moved to node(s) {} in {:.2} seconds ({} pages)",
                    b.pid,
                    b.to.to_list_string(),
                    secs,
                    b.pages
                );
                self.policy_log(w, Pid(b.pid), &msg);
            }
            if let Some(i) = self.daemon.deferred_tick.take() {
                w.push_event(w.now() + i, EventKind::PolicyTick);
            }
        }
    }
}

/// `move_pages` of `job` within `budget` ns of the daemon's time; true when done. A page
/// already on the node, or not present, costs nothing; a THP moves whole.
fn move_pages_step(w: &mut World, job: &mut MoveJob, budget: &mut f64) -> bool {
    while job.next < job.pages.len() {
        if *budget <= 0.0 {
            return false;
        }
        let (ri, page) = job.pages[job.next];
        job.next += 1;
        let obj = w.proc(job.pidx).regions[ri].obj;
        if w.object(obj).node_of(page).is_some_and(|n| n != job.to) {
            match w.migrate_page(obj, page, job.to) {
                Some(cost) => *budget -= cost,
                None => *budget -= w.machine().spec.costs.migrate_page_ns,
            }
        }
    }
    true
}
