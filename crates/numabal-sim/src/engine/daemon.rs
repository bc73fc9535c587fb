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
//!      Log                      the run's policy_log
//!    next PolicyTick: the policy's interval after the last queued call returns (numad's
//!    loop is synchronous: it sleeps after bind_process_and_migrate_memory returns)
//! ```
//!
//! Simplifications (docs/model-notes.md, "numad in the simulator"): the daemon's own CPU
//! time (reading `/proc`, copying pages) is not taken from any simulated CPU; a page being
//! migrated stays accessible until it has moved (the kernel blocks a thread that touches
//! it for the copy's duration).

use super::{NS, PAGE_BYTES, Sim, TState};
use crate::memory::CHUNK;
use numabal_model::{Mask, Pid, Tid};
use numabal_policy::{Action, NodeObs, Observation, ProcessObs, ThreadObs};
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
pub(super) struct DaemonRt {
    jobs: VecDeque<MigJob>,
    batch: Option<Batch>,
    /// The policy's next interval, waiting for the queued calls to return.
    deferred_tick: Option<u64>,
    pub(super) log: Vec<PolicyLogEntry>,
}

impl DaemonRt {
    /// `migrate_pages` calls are queued.
    pub(super) fn has_jobs(&self) -> bool {
        !self.jobs.is_empty()
    }
}

/// A node at the end of a run, as a placement tool (`numabal advise --state`) reads it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NodeState {
    /// `MemTotal`, bytes.
    pub mem_total_bytes: u64,
    /// `MemFree`, bytes.
    pub mem_free_bytes: u64,
    /// Idle time of the node's CPUs over the window, ns.
    pub cpu_idle_ns: u64,
}

/// Every node at the end of a run, with CPU idle time over its last seconds (like `numad
/// -w` without a daemon, which samples `/proc/stat` twice, 2 s apart).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NodeStateAtEnd {
    /// Simulated time at the end, s.
    pub t_s: f64,
    /// Length of the CPU sampling window, ns.
    pub window_ns: u64,
    /// By node id.
    pub nodes: Vec<NodeState>,
}

/// Seconds of CPU sampling behind the node state at the end.
const STATE_WINDOW_S: u64 = 2;

impl Sim<'_> {
    /// Keep per-CPU busy times at whole seconds (the last few).
    pub(super) fn snapshot_busy(&mut self) {
        let sec = self.world.now / NS as u64;
        if self
            .world
            .busy_snapshots
            .back()
            .is_some_and(|(t, _)| *t / NS as u64 == sec)
        {
            return;
        }
        self.world
            .busy_snapshots
            .push_back((self.world.now, self.world.cpu_busy_ns.clone()));
        while self.world.busy_snapshots.len() > STATE_WINDOW_S as usize + 2 {
            self.world.busy_snapshots.pop_front();
        }
    }

    /// The nodes now, CPU idle over the last `STATE_WINDOW_S` seconds (or since the start).
    pub(super) fn node_state_at_end(&self) -> NodeStateAtEnd {
        let want = self.world.now.saturating_sub(STATE_WINDOW_S * NS as u64);
        let (t0, busy0) = self
            .world
            .busy_snapshots
            .iter()
            .rev()
            .find(|(t, _)| *t <= want)
            .map(|(t, b)| (*t, b.clone()))
            .unwrap_or_else(|| (0, vec![0.0; self.world.cpu_busy_ns.len()]));
        let window = self.world.now - t0;
        let mem = self.node_obs();
        NodeStateAtEnd {
            t_s: self.world.now as f64 / NS,
            window_ns: window,
            nodes: (0..self.world.machine.nr_nodes())
                .map(|n| {
                    let busy: f64 = self.world.machine.nodes[n]
                        .cpus
                        .iter()
                        .map(|c| self.world.cpu_busy_ns[c] - busy0[c])
                        .sum();
                    let cpus = self.world.machine.nodes[n].cpus.count() as f64;
                    NodeState {
                        mem_total_bytes: mem[n].mem_total_bytes,
                        mem_free_bytes: mem[n].mem_free_bytes,
                        cpu_idle_ns: (cpus * window as f64 - busy).max(0.0) as u64,
                    }
                })
                .collect(),
        }
    }

    /// Idle time of every CPU since the start, ns.
    pub(super) fn cpu_idle_ns(&self) -> Vec<u64> {
        self.world
            .cpu_busy_ns
            .iter()
            .map(|&b| (self.world.now as f64 - b).max(0.0) as u64)
            .collect()
    }

    /// Every node's `MemTotal` and `MemFree`.
    pub(super) fn node_obs(&self) -> Vec<NodeObs> {
        (0..self.world.machine.nr_nodes())
            .map(|n| NodeObs {
                // MemTotal counts what the kernel reserved at boot; MemFree does not.
                mem_total_bytes: self.world.machine.nodes[n].memory_bytes,
                mem_free_bytes: self.world.node_cap[n].saturating_sub(self.world.node_used[n])
                    * PAGE_BYTES as u64,
            })
            .collect()
    }

    /// Every live process with mappings, as `/proc/PID` shows it.
    fn process_obs(&self) -> Vec<ProcessObs> {
        (0..self.world.procs.len())
            .filter(|&i| {
                self.world.procs[i].end_ns.is_none() && !self.world.procs[i].regions.is_empty()
            })
            .map(|i| {
                let p = &self.world.procs[i];
                let node_bytes = self.world.process_node_bytes(i);
                let vsize: u64 = p.regions.iter().map(|r| r.pages * PAGE_BYTES as u64).sum();
                let threads: Vec<usize> = p
                    .groups
                    .iter()
                    .flat_map(|g| g.threads.iter().copied())
                    .collect();
                let live = threads
                    .iter()
                    .filter(|&&t| self.world.threads[t].state != TState::Done)
                    .count();
                let cpu_ns: f64 = threads
                    .iter()
                    .map(|&t| self.world.threads[t].sum_exec_ns)
                    .sum();
                ProcessObs {
                    pid: Pid(i as u32 + 1),
                    comm: p.name.clone(),
                    num_threads: live as u32,
                    cpu_time_ns: cpu_ns.max(0.0) as u64,
                    vsize_bytes: vsize,
                    rss_bytes: node_bytes.iter().sum(),
                    node_bytes,
                    interleaved: p.regions.iter().any(|r| {
                        r.ranges.iter().any(|(_, _, pol)| {
                            matches!(pol, numabal_model::MemPolicy::Interleave(_))
                        })
                    }),
                    mems_allowed: p.cpuset_mems.clone(),
                    // The simulator's qemu-kvm processes name their vCPU threads' group
                    // `vcpu`; its size is the `-smp` numad reads from the command line.
                    kvm_vcpus: p
                        .groups
                        .iter()
                        .find(|g| g.name == "vcpu")
                        .map(|g| g.nthreads),
                }
            })
            .collect()
    }

    /// A pass of a policy with its own interval (`Policy::tick_interval_ns`).
    pub(super) fn policy_tick(&mut self) -> Result<(), super::SimError> {
        let threads: Vec<ThreadObs> = self
            .world
            .threads
            .iter()
            .enumerate()
            .filter(|(_, th)| th.state != TState::Done)
            .map(|(t, th)| {
                let cpu = self.world.sched.tasks[t].cpu;
                ThreadObs {
                    tid: Tid(t as u32 + 1),
                    pid: Pid(th.proc as u32 + 1),
                    cpu,
                    node: cpu.map(|c| self.world.machine.cpus[c].node),
                }
            })
            .collect();
        let processes = self.process_obs();
        let nodes = self.node_obs();
        let idle = self.cpu_idle_ns();
        let mut out = std::mem::take(&mut self.actions);
        out.clear();
        self.policy.on_tick(
            self.world.machine,
            &Observation {
                now_ns: self.world.now,
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
                let pidx = self.world.threads[tid.idx() - 1].proc;
                self.world.procs[pidx].inherited_affinity = Some(cpus.clone());
            }
        }
        self.apply_actions(&out)?;
        self.actions = out;
        if let Some(i) = self.policy.tick_interval_ns() {
            if self.daemon.jobs.is_empty() {
                self.world
                    .events
                    .push(self.world.now + i.max(1), super::EventKind::PolicyTick);
            } else {
                self.daemon.deferred_tick = Some(i.max(1));
            }
        }
        Ok(())
    }

    /// Queue a `migrate_pages` call.
    pub(super) fn queue_migrate_pages(&mut self, pid: Pid, from: usize, to: usize) {
        let pidx = pid.idx() - 1;
        let b = self.daemon.batch.get_or_insert(Batch {
            pid: pid.0,
            start_ns: self.world.now,
            to: Mask::new(),
            pages: 0,
        });
        b.to.insert(to);
        self.daemon.jobs.push_back(MigJob {
            pidx,
            from,
            to,
            at: (0, 0),
        });
    }

    /// A decision log line.
    pub(super) fn policy_log(&mut self, pid: Pid, message: &str) {
        self.daemon.log.push(PolicyLogEntry {
            t_s: self.world.now as f64 / NS,
            pid: pid.0,
            message: message.to_string(),
        });
    }

    /// Run queued `migrate_pages` calls for one tick of the daemon's time.
    pub(super) fn run_migrate_pages(&mut self) {
        let mut budget = self.world.tick_ns as f64;
        while budget > 0.0 {
            let Some(job) = self.daemon.jobs.front().cloned() else {
                break;
            };
            let (mut r, mut p) = job.at;
            let mut done = true;
            while r < self.world.procs[job.pidx].regions.len() {
                let (obj, pages) = {
                    let reg = &self.world.procs[job.pidx].regions[r];
                    (reg.obj, reg.pages)
                };
                while p < pages {
                    if budget <= 0.0 {
                        done = false;
                        break;
                    }
                    let o = &self.world.objects[obj];
                    let (step, nr) = if o.is_huge(p / CHUNK) {
                        (CHUNK - p % CHUNK, o.chunk_len(p / CHUNK))
                    } else {
                        (1, 1)
                    };
                    if o.node_of(p) == Some(job.from) {
                        match self.world.migrate_page(obj, p, job.to) {
                            Some(cost) => {
                                budget -= cost;
                                if let Some(b) = self.daemon.batch.as_mut() {
                                    b.pages += nr;
                                }
                            }
                            // The destination is full: the kernel still tried.
                            None => budget -= self.world.machine.spec.costs.migrate_page_ns,
                        }
                    }
                    p += step;
                }
                if !done {
                    break;
                }
                r += 1;
                p = 0;
            }
            if done {
                self.daemon.jobs.pop_front();
            } else {
                self.daemon.jobs[0].at = (r, p);
            }
        }
        if self.daemon.jobs.is_empty() {
            if let Some(b) = self.daemon.batch.take() {
                let secs = (self.world.now - b.start_ns) as f64 / NS;
                let msg = format!(
                    "PID {} moved to node(s) {} in {:.2} seconds ({} pages)",
                    b.pid,
                    b.to.to_list_string(),
                    secs,
                    b.pages
                );
                self.policy_log(Pid(b.pid), &msg);
            }
            if let Some(i) = self.daemon.deferred_tick.take() {
                self.world
                    .events
                    .push(self.world.now + i, super::EventKind::PolicyTick);
            }
        }
    }
}
