//! The world a simulation acts on: processes, threads, memory objects and their pages,
//! node capacities and watermarks, the scheduler, the cost model, metrics, the clock and
//! the random source. Kernel models and user-space policies change it only through its
//! methods.

use crate::cost::{CostModel, Demand};
use crate::error::SimError;
use crate::event::EventKind;
use crate::event::EventQueue;
use crate::memory::MemObject;
use crate::memory::{CHUNK, PAGE_BYTES};
use crate::sched::{NR_CAUSES, Sched};
use numabal_model::InputError;
use numabal_model::Pid;
use numabal_model::scenario::Thp;
use numabal_model::workload::thread_slice;
use numabal_model::workload::{Pattern, Placement, SharedKind, Slice};
use numabal_model::{Machine, Mask, MemPolicy, Scenario};
use numabal_policy::{GroupInfo, ProcessInfo, RegionInfo};
use rand::RngExt;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use records::{Metrics, StallHistogram};

mod access;
mod agents;
mod exec;
mod lifecycle;
mod procfs;
pub mod records;
mod report;
pub use agents::{Agents, KernelHooks, UserHooks};
pub(crate) const NS: f64 = 1e9;
pub(crate) const STALL_NS: f64 = 1e6;
/// Remainders of an access phase below this many bytes count as done: floating-point
/// subtraction must not leave a thread spinning on a denormal remainder.
pub(crate) const EPS_BYTES: f64 = 1e-3;
/// A phase loop that iterates this often without finishing is a simulator bug.
pub(crate) const MAX_STEPS: u64 = 50_000_000;

#[derive(Debug, Clone)]
pub(crate) struct Region {
    pub(crate) obj: usize,
    pub(crate) pages: u64,
    pub(crate) wl_policy: Option<MemPolicy>,
    /// `mbind` ranges set by the policy: (first, end, policy).
    pub(crate) ranges: Vec<(u64, u64, MemPolicy)>,
    /// A read-only file mapping (NUMA scanning skips it: `shared_ro`).
    pub(crate) file_ro: bool,
    /// A `VM_SHARED` mapping (shm).
    pub(crate) vm_shared: bool,
}

#[derive(Debug, Clone)]
pub(crate) enum Amount {
    Bytes(f64),
    Seconds(f64),
}

#[derive(Debug, Clone)]
pub(crate) struct AccessRt {
    pub(crate) region: usize,
    pub(crate) slice: Slice,
    pub(crate) pattern: Pattern,
    pub(crate) amount: Amount,
    pub(crate) passes: Option<f64>,
    pub(crate) ns_per_byte: f64,
    pub(crate) mlp: Option<f64>,
    pub(crate) cache_hit: f64,
    pub(crate) zipf_s: f64,
    pub(crate) hot_fraction: f64,
    pub(crate) hot_weight: f64,
    pub(crate) mempolicy: Option<MemPolicy>,
}

#[derive(Debug, Clone)]
pub(crate) enum PhaseRt {
    Access(AccessRt),
    /// ns, jitter.
    Compute(f64, f64),
    /// ns, jitter.
    Sleep(f64, f64),
    Spawn(usize),
    Join(usize),
    Barrier,
}

#[derive(Debug, Clone)]
pub(crate) struct GroupRt {
    pub(crate) name: String,
    pub(crate) nthreads: u32,
    pub(crate) placement: Placement,
    pub(crate) phases: Vec<PhaseRt>,
    pub(crate) iterations: u64,
    /// Work units per completed pass over the phases (per thread).
    pub(crate) work_per_iteration: f64,
    pub(crate) affinity: Option<Mask>,
    pub(crate) spawned: bool,
    pub(crate) start_s: f64,
    /// Seconds between the starts of consecutive threads (0: together).
    pub(crate) stagger_s: f64,
    pub(crate) threads: Vec<usize>,
    pub(crate) done: u32,
    /// Threads waiting in a join on this group, with the time each started waiting.
    pub(crate) joiners: Vec<(usize, u64)>,
    /// Threads at this group's barrier, with their arrival times.
    pub(crate) barrier_waiting: Vec<(usize, u64)>,
}

#[derive(Debug, Clone)]
pub(crate) struct Proc {
    /// A background process: not waited for, not in the runtime or migration counts.
    pub(crate) daemon: bool,
    pub(crate) name: String,
    /// Its `[[process]]` index.
    pub(crate) spec: usize,
    pub(crate) instance: u32,
    pub(crate) regions: Vec<Region>,
    pub(crate) groups: Vec<GroupRt>,
    pub(crate) cpuset_cpus: Mask,
    pub(crate) cpuset_mems: Mask,
    pub(crate) affinity: Option<Mask>,
    pub(crate) wl_policy: Option<MemPolicy>,
    pub(crate) policy_proc: Option<MemPolicy>,
    pub(crate) home_cpu: usize,
    pub(crate) start_ns: u64,
    pub(crate) end_ns: Option<u64>,
    pub(crate) threads: u32,
    pub(crate) live: u32,
    pub(crate) node_mb_end: Option<Vec<f64>>,
    pub(crate) bytes_local: f64,
    pub(crate) bytes_remote: f64,
    /// Work units completed (`work_per_iteration`).
    pub(crate) work_units: f64,
    /// ... of which after `sim.warmup_s`.
    pub(crate) work_units_warm: f64,
    /// CPU mask a policy set on its threads while it ran (`sched_setaffinity` by a daemon):
    /// threads it creates later inherit it.
    pub(crate) inherited_affinity: Option<Mask>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TState {
    Runnable,
    Sleeping,
    Blocked,
    Done,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Prog {
    pub(crate) started: bool,
    /// Sweep position within the slice, bytes.
    pub(crate) pos: f64,
    /// Bytes left (access by amount), or ns of CPU left (compute).
    pub(crate) left: f64,
    /// Wall-clock end (access by seconds).
    pub(crate) until_ns: u64,
    /// The phase runs for a wall-clock duration (`seconds`) rather than an amount.
    pub(crate) timed: bool,
    /// Next page a random pattern first-touches (address order).
    pub(crate) pop_cursor: u64,
    pub(crate) pop_carry: f64,
    /// Fractional hinting faults carried to the next interval (random patterns).
    pub(crate) fault_carry: f64,
    pub(crate) slice: (u64, u64),
}

#[derive(Debug, Clone)]
pub(crate) struct Thread {
    pub(crate) proc: usize,
    pub(crate) group: usize,
    pub(crate) index: u32,
    pub(crate) state: TState,
    pub(crate) phase: usize,
    pub(crate) iter: u64,
    pub(crate) prog: Prog,
    pub(crate) policy_thread: Option<MemPolicy>,
    pub(crate) il_next: usize,
    pub(crate) end_ns: Option<u64>,
    pub(crate) debt_ns: f64,
    /// Bytes accessed in the last interval (sizes the look-ahead of the mix estimate).
    pub(crate) window_bytes: f64,
    /// CPU time the thread has run (`se.sum_exec_runtime`), ns.
    pub(crate) sum_exec_ns: f64,
}

/// Something that happens to a thread inside the current interval, after the pass over the
/// threads that were running at its start.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Late {
    pub(crate) t: usize,
    pub(crate) at: u64,
    /// The thread is waiting until `at` and must be woken first; otherwise it is runnable
    /// since `at`.
    pub(crate) wake: bool,
}

/// A thread's run within the current interval: it started at `t0` holding `share` of its
/// CPU, with `total` ns of CPU time to spend.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slot {
    pub(crate) t0: u64,
    pub(crate) share: f64,
    pub(crate) total: f64,
}

impl Slot {
    /// Wall-clock time after `used` ns of the slot's CPU time.
    pub(crate) fn wall(&self, used: f64) -> u64 {
        self.t0 + (used / self.share) as u64
    }
}

/// A hinting fault's page: the faulting thread's process, the mapping object, the entry's
/// first page, node and base pages, and the faulting CPU's node.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HintAt {
    pub(crate) pidx: usize,
    pub(crate) obj: usize,
    pub(crate) head: u64,
    pub(crate) nid: usize,
    pub(crate) nr: u64,
    pub(crate) thisnid: usize,
}

/// The simulated machine and everything running on it.
pub struct World<'a> {
    pub(crate) sc: &'a Scenario,
    pub(crate) machine: &'a Machine,
    pub(crate) rng: Pcg64Mcg,
    pub(crate) random_node: usize,
    pub(crate) now: u64,
    pub(crate) tick_ns: u64,
    pub(crate) max_ns: u64,
    pub(crate) events: EventQueue,
    pub(crate) sched: Sched,
    pub(crate) cost: CostModel,
    pub(crate) objects: Vec<MemObject>,
    pub(crate) obj_refs: Vec<u32>,
    /// Per object: the process whose private mapping it is (`None`: shared memory).
    pub(crate) obj_owner: Vec<Option<usize>>,
    pub(crate) shared_objs: Vec<usize>,
    pub(crate) node_used: Vec<u64>,
    pub(crate) node_cap: Vec<u64>,
    pub(crate) procs: Vec<Proc>,
    pub(crate) threads: Vec<Thread>,
    pub(crate) pending_starts: usize,
    pub(crate) metrics: Metrics,
    pub(crate) local_bytes: f64,
    pub(crate) remote_bytes: f64,
    pub(crate) user_ns: f64,
    pub(crate) sys_ns: f64,
    pub(crate) migrate_ns: f64,
    /// Per node: pages a migration must leave free (the kernel's high watermark).
    pub(crate) wmark_high: Vec<u64>,
    pub(crate) migrations: [u64; NR_CAUSES],
    /// Per thread, per node: when the thread last left the node (u64::MAX: not since it
    /// last arrived there), for ping-pong round trips.
    pub(crate) left_node_at: Vec<Vec<u64>>,
    pub(crate) ping_pong: records::PingPongHistogram,
    pub(crate) migrate_shootdowns: u64,
    pub(crate) thp_enabled: Thp,
    pub(crate) check: bool,
    pub(crate) scratch_hist: Vec<u64>,
    /// During `advance`: the interval's end.
    pub(crate) interval_end: Option<u64>,
    /// Threads that become runnable during the current interval.
    pub(crate) late: Vec<Late>,
    /// During `advance`: per CPU, the time from which it has nothing to run.
    pub(crate) cpu_free_from: Vec<Option<u64>>,
    pub(crate) stalls: StallHistogram,
    /// `numastat -p` samples (`sim.numastat_at_s`, `sim.numastat_every_s`).
    pub(crate) numastat: Vec<records::NumastatSample>,
    /// Per `[[process]]`: the next instance to start (`jobs`).
    pub(crate) next_instance: Vec<u32>,
    /// Per CPU: time it has run threads, ns (its idle time is the rest).
    pub(crate) cpu_busy_ns: Vec<f64>,
    /// Per-CPU busy time at whole seconds (the last few), for the node state at the end.
    pub(crate) busy_snapshots: std::collections::VecDeque<(u64, Vec<f64>)>,
    /// The run's time series (`sim.series_every_s`).
    pub(crate) series: crate::series::Recorder,
}

impl<'a> World<'a> {
    pub(crate) fn thp_for(&self, requested: bool, file: bool) -> bool {
        !file
            && match self.thp_enabled {
                Thp::Never => false,
                Thp::Madvise => requested,
                Thp::Always => true,
            }
    }

    /// `t` seconds rounded up to a tick (a tick is an event already, so a sample there adds
    /// no step to the run and cannot change it).
    pub(crate) fn on_tick(&self, t: f64) -> u64 {
        ((t * NS) as u64).div_ceil(self.tick_ns).max(1) * self.tick_ns
    }

    /// Record every live process's memory per node now (once per instant, when samples
    /// coincide); a periodic sample schedules the next multiple of `numastat_every_s`
    /// (counted from 0, so rounding to ticks does not drift).
    pub(crate) fn numastat_sample(&mut self, periodic: bool) {
        if periodic {
            let every = self.sc.sim.numastat_every_s;
            let k = (self.now as f64 / NS / every).round() + 1.0;
            let next = self.on_tick(k * every).max(self.now + self.tick_ns);
            self.events
                .push(next, EventKind::NumastatSample { periodic: true });
        }
        if self
            .numastat
            .last()
            .is_some_and(|l| l.t_s == self.now as f64 / NS)
        {
            return;
        }
        let processes = (0..self.procs.len())
            .filter(|&i| self.procs[i].end_ns.is_none() && !self.procs[i].regions.is_empty())
            .map(|i| records::NumastatProcess {
                pid: i as u32 + 1,
                name: self.procs[i].name.clone(),
                node_mb: self.process_node_mb(i),
                work_units: self.procs[i].work_units,
            })
            .collect();
        self.numastat.push(records::NumastatSample {
            t_s: self.now as f64 / NS,
            processes,
        });
    }

    /// The node a thread runs on (or last ran on).
    pub(crate) fn thread_node(&self, t: usize) -> usize {
        let task = &self.sched.tasks[t];
        self.machine.cpus[task.cpu.unwrap_or(task.prev_cpu)].node
    }

    /// A time-series sample now (it reads counters only). `at_end`: the run's last, which
    /// also has the processes that exited since the previous sample, at their exit.
    pub(crate) fn series_sample(&mut self, at_end: bool) {
        let node_mb: Vec<f64> = self
            .node_used
            .iter()
            .map(|&p| p as f64 * PAGE_BYTES / (1u64 << 20) as f64)
            .collect();
        if at_end && self.series.last_ns() == Some(self.now) {
            self.series.pop_last();
        }
        let since = self.series.last_ns();
        // Index, name, MiB per node, (local, remote) bytes: of each process to sample.
        type Sampled = (usize, String, Vec<f64>, (f64, f64));
        let procs: Vec<Sampled> = (0..self.procs.len())
            .filter_map(|i| {
                let p = &self.procs[i];
                let mb = match (p.end_ns, &p.node_mb_end) {
                    (None, _) if !p.regions.is_empty() => self.process_node_mb(i),
                    (Some(e), Some(mb)) if at_end && since.is_none_or(|s| e > s) => mb.clone(),
                    _ => return None,
                };
                Some((i, p.name.clone(), mb, (p.bytes_local, p.bytes_remote)))
            })
            .collect();
        let now = self.now;
        self.series.sample(
            now,
            &node_mb,
            procs
                .iter()
                .map(|(i, name, mb, b)| (*i, name.as_str(), mb.as_slice(), *b)),
        );
    }

    /// Every process has started and every thread of a non-daemon process is done.
    pub(crate) fn work_done(&self) -> bool {
        self.pending_starts == 0
            && self.threads.iter().any(|t| !self.procs[t.proc].daemon)
            && self
                .threads
                .iter()
                .all(|t| t.state == TState::Done || self.procs[t.proc].daemon)
    }

    /// A phase length with its jitter applied (`jitter` 0: exact, no draw).
    pub(crate) fn jittered(&mut self, ns: f64, jitter: f64) -> f64 {
        if jitter > 0.0 {
            ns * (1.0 + jitter * self.rng.random_range(-1.0..1.0))
        } else {
            ns
        }
    }

    pub(crate) fn count_moves(&mut self) {
        let nn = self.machine.nr_nodes();
        for mv in self.sched.moves.drain(..) {
            let (from, to) = (
                self.machine.cpus[mv.from].node,
                self.machine.cpus[mv.to].node,
            );
            if from == to || self.procs[self.threads[mv.tid as usize].proc].daemon {
                continue;
            }
            self.migrations[mv.cause as usize] += 1;
            self.series
                .thread_moved(self.threads[mv.tid as usize].proc, to);
            // Ping-pong: back on a node it left; the interval runs from the last departure.
            let t = mv.tid as usize;
            if self.left_node_at.len() <= t {
                self.left_node_at.resize(t + 1, Vec::new());
            }
            let left = &mut self.left_node_at[t];
            if left.is_empty() {
                left.resize(nn, u64::MAX);
            }
            if left[to] != u64::MAX {
                let s = self.now.saturating_sub(left[to]) as f64 / NS;
                self.ping_pong.record(s);
                self.metrics.thread_ping_pong_round_trips += 1;
                left[to] = u64::MAX;
            }
            left[from] = self.now;
        }
    }

    pub(crate) fn process_info(&self, pidx: usize, spec: usize) -> ProcessInfo {
        let p = &self.procs[pidx];
        let wl_p = &self.sc.workload.spec.processes[spec];
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

    /// A thread became runnable at `at`; inside an interval it may use the rest of it.
    pub(crate) fn note_runnable(&mut self, t: usize, at: u64) {
        if self.interval_end.is_some_and(|end| at < end) {
            self.late.push(Late { t, at, wake: false });
        }
    }

    /// Kernel work (a fault, a migration, a scan) done in thread `t`'s context: it pays
    /// for it before running its own work again.
    /// One block of it is one interval in which the thread is kept from its own work.
    pub(crate) fn charge_kernel(&mut self, t: usize, cost: f64) {
        self.threads[t].debt_ns += cost;
        self.sys_ns += cost;
        self.stall(cost);
    }

    /// CPU time taken from thread `t` by something else on its CPU (a NUMA scan worker):
    /// it waits `ns` of its share without running, and that is not its CPU time.
    pub(crate) fn steal_cpu(&mut self, t: usize, ns: f64) {
        let th = &mut self.threads[t];
        th.debt_ns += ns;
        // Paying debt adds to `sum_exec_ns`; stolen time must not.
        th.sum_exec_ns -= ns;
    }

    /// A runnable thread was kept from its own work for `ns`.
    pub(crate) fn stall(&mut self, ns: f64) {
        if ns > STALL_NS {
            self.metrics.stall_events_over_1ms += 1;
        }
        let ms = ns / 1e6;
        self.metrics.stall_max_ms = self.metrics.stall_max_ms.max(ms);
        self.stalls.record(ms);
    }

    /// Thread `t` (already off its runqueue) waits until `when`: a sleep's end, a barrier's
    /// release, the end of the group it joins. Inside the current interval the wakeup is
    /// handled with the interval's other late events; later, by a `Wake` event.
    pub(crate) fn wake_at(&mut self, t: usize, when: u64) {
        self.threads[t].state = TState::Sleeping;
        if self.interval_end.is_some_and(|end| when < end) {
            self.late.push(Late {
                t,
                at: when,
                wake: true,
            });
        } else {
            self.events.push(when, EventKind::Wake { tid: t as u32 });
        }
    }

    pub(crate) fn wake(&mut self, t: usize, at: u64) {
        self.threads[t].state = TState::Runnable;
        self.sched.wake(t as u32, at);
        self.note_runnable(t, at);
    }

    pub(crate) fn block(&mut self, t: usize, state: TState, at: u64) {
        self.threads[t].state = state;
        if let Some(c) = self.sched.dequeue(t as u32, at) {
            self.cpu_freed(c, at);
        }
    }

    /// Inside an interval, remember when a CPU ran out of work.
    pub(crate) fn cpu_freed(&mut self, c: usize, at: u64) {
        if self.interval_end.is_some() && self.sched.rq(c).is_empty() {
            self.cpu_free_from[c] = Some(at);
        }
    }

    pub(crate) fn process_node_mb(&self, pidx: usize) -> Vec<f64> {
        // Exact: whole pages are multiples of 1/256 MiB.
        self.process_node_bytes(pidx)
            .iter()
            .map(|&b| b as f64 / (1u64 << 20) as f64)
            .collect()
    }

    /// A process's resident bytes per node (`numa_maps` `N<n>=` summed).
    pub(crate) fn process_node_bytes(&self, pidx: usize) -> Vec<u64> {
        let mut v = vec![0u64; self.machine.nr_nodes()];
        for r in &self.procs[pidx].regions {
            for (n, &pages) in self.objects[r.obj].node_pages().iter().enumerate() {
                v[n] += pages * PAGE_BYTES as u64;
            }
        }
        v
    }

    /// When every thread of a group has exited.
    pub(crate) fn group_done_at(&self, pidx: usize, g: usize) -> u64 {
        self.procs[pidx].groups[g]
            .threads
            .iter()
            .filter_map(|&t| self.threads[t].end_ns)
            .max()
            .unwrap_or(self.now)
    }

    /// Release a group's barrier once every live thread has arrived, at the latest arrival
    /// (or `floor`, the exit that completed it): threads are processed one after another
    /// within an interval, so the last to be processed need not be the last to arrive.
    pub(crate) fn maybe_release_barrier(&mut self, pidx: usize, g: usize, floor: u64) {
        let grp = &mut self.procs[pidx].groups[g];
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
                let j = self.rng.random_range(0..=i);
                waiting.swap(i, j);
            }
            for (w, _) in waiting {
                self.advance_phase(w);
                self.wake_at(w, release);
            }
        }
    }

    pub(crate) fn advance_phase(&mut self, t: usize) {
        let th = &mut self.threads[t];
        th.phase += 1;
        th.prog = Prog::default();
    }

    // ----- memory --------------------------------------------------------------------

    /// The policy that governs an allocation at `page` of `region` by thread `t`.
    pub(crate) fn alloc_policy(
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
    pub(crate) fn alloc_policy_ref<'b>(
        &'b self,
        t: usize,
        region: usize,
        page: u64,
        phase_policy: Option<&'b MemPolicy>,
    ) -> Option<&'b MemPolicy> {
        let th = &self.threads[t];
        let p = &self.procs[th.proc];
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
    pub(crate) fn pick_node(
        &self,
        t: usize,
        cpu_node: usize,
        pol: &MemPolicy,
        nr: u64,
        il_index: u64,
    ) -> Option<usize> {
        let allowed = &self.procs[self.threads[t].proc].cpuset_mems;
        let room = |n: usize| self.node_used[n] + nr <= self.node_cap[n];
        let fits = |n: usize| allowed.contains(n) && room(n);
        let zonelist = |from: usize| self.machine.nodes_by_distance(from);
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
                    .filter(|&n| n < self.machine.nr_nodes())
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

    pub(crate) fn first_touch(
        &mut self,
        t: usize,
        region: usize,
        page: u64,
        cpu_node: usize,
        phase_policy: Option<&MemPolicy>,
    ) -> Result<f64, SimError> {
        let pidx = self.threads[t].proc;
        let r = &self.procs[pidx].regions[region];
        let obj = r.obj;
        let pol = self.alloc_policy(t, region, page, phase_policy);
        // VMA (mbind) interleave uses the page offset; task interleave the thread's counter,
        // which moves on only when an allocation succeeds.
        let vma_pol =
            r.ranges.iter().any(|(a, b, _)| page >= *a && page < *b) || r.wl_policy.is_some();
        let il_next = self.threads[t].il_next as u64;
        let task_interleave = !vma_pol && matches!(pol, MemPolicy::Interleave(_));
        let vma_offset = |nr: u64| -> u64 { if vma_pol { page / nr } else { il_next } };
        let o = &self.objects[obj];
        let chunk = page / CHUNK;
        if o.thp && o.chunk_len(chunk) == CHUNK && o.chunk_populated(chunk) == 0 {
            let off = vma_offset(CHUNK);
            if let Some(n) = self.pick_node(t, cpu_node, &pol, CHUNK, off) {
                self.objects[obj].populate_huge(chunk, n);
                self.node_used[n] += CHUNK;
                self.metrics.pgfault += 1;
                self.metrics.thp_fault_alloc += 1;
                if task_interleave {
                    self.threads[t].il_next += 1;
                }
                return Ok(self.machine.spec.costs.thp_fault_ns);
            }
        }
        let off = vma_offset(1);
        match self.pick_node(t, cpu_node, &pol, 1, off) {
            Some(n) => {
                self.objects[obj].populate_page(page, n);
                self.node_used[n] += 1;
                self.metrics.pgfault += 1;
                if task_interleave {
                    self.threads[t].il_next += 1;
                }
                Ok(self.machine.spec.costs.page_fault_ns)
            }
            None => {
                let p = &self.procs[pidx];
                Err(SimError::Input(InputError::new(
                    format!("workload {}", self.sc.workload.name()),
                    format!("process {} (pid {})", p.name, pidx + 1),
                    format!(
                        "out of memory: no node allowed by memory policy {pol} and cpuset mems {} has a free page (node use {:?} of {:?} pages)",
                        p.cpuset_mems, self.node_used, self.node_cap
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
        let o = &self.objects[obj];
        let src = o.node_of(page)?;
        if src == dst {
            return None;
        }
        let c = page / CHUNK;
        let nr = if o.is_huge(c) { o.chunk_len(c) } else { 1 };
        if self.node_used[dst] + nr + self.wmark_high[dst] > self.node_cap[dst] {
            self.metrics.pgmigrate_fail += nr;
            return None;
        }
        self.objects[obj].migrate(page, dst);
        self.node_used[src] -= nr;
        self.node_used[dst] += nr;
        self.metrics.pgmigrate_success += nr;
        self.series.migrated(self.obj_owner[obj], dst, nr);
        let k = &self.machine.spec.costs;
        let copy_ns = nr as f64 * PAGE_BYTES
            / numabal_model::machine::gib_s_to_bytes_per_ns(k.migrate_copy_gib_s);
        let cost = k.migrate_page_ns + copy_ns + k.tlb_shootdown_ns;
        self.migrate_ns += cost;
        self.migrate_shootdowns += 1;
        Some(cost)
    }

    // ----- the fluid step ------------------------------------------------------------

    pub(crate) fn slice_of(&self, t: usize, a: &AccessRt) -> (u64, u64) {
        let th = &self.threads[t];
        let pages = self.procs[th.proc].regions[a.region].pages;
        match a.slice {
            Slice::All => (0, pages),
            Slice::Thread => {
                let n = self.procs[th.proc].groups[th.group].nthreads as u64;
                thread_slice(pages, th.index as u64, n)
            }
        }
    }

    /// Weighted node mix of the pages `pattern` touches in `slice` (`a` gives the pattern's
    /// parameters), the weight of its not-yet-populated part, and the number of populated
    /// pages in the slice. Zipf is approximated by one bucket per power of two of the page rank, weighted
    /// by the integral of `(x+1)^-s` over the bucket.
    pub(crate) fn random_mix(
        &self,
        obj: usize,
        pattern: Pattern,
        a: &AccessRt,
        slice: (u64, u64),
        mix: &mut [f64],
    ) -> (f64, u64) {
        let o = &self.objects[obj];
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

    /// SMT state of CPU `c`'s core: (share of the core's memory-issue rate, share of its
    /// compute, busy siblings).
    pub(crate) fn smt_shares(&self, c: usize) -> (f64, f64, f64) {
        let core = &self.machine.spec.core;
        let k_s = self.sched.busy_siblings(c).max(1) as f64;
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
    pub(crate) fn demand(
        &self,
        c: usize,
        a: &AccessRt,
        smt: (f64, f64, f64),
        share: f64,
        mix: Vec<f64>,
    ) -> Demand {
        let core = &self.machine.spec.core;
        let (mem_share, cpu_share, k_s) = smt;
        let m_eff = a
            .mlp
            .unwrap_or(core.outstanding_lines_per_thread)
            .min(core.outstanding_lines_per_core / k_s);
        let per_latency = 1.0 / (m_eff * 64.0);
        Demand {
            cpu_node: self.machine.cpus[c].node,
            share,
            mix,
            miss: 1.0 - a.cache_hit,
            core_ns_per_byte: core.stream_ns_per_byte / mem_share + a.ns_per_byte / cpu_share,
            per_latency,
            hit_ns_per_byte: a.cache_hit * self.machine.spec.memory.llc_latency_ns * per_latency,
        }
    }

    /// ns/byte per memory node for a thread whose phase changed mid-interval, from the
    /// delays the interval's solve found.
    pub(crate) fn tau_for(&self, c: usize, a: &AccessRt, smt: (f64, f64, f64), tau: &mut [f64]) {
        self.cost
            .ns_per_byte(&self.demand(c, a, smt, 0.0, Vec::new()), tau);
    }

    pub(crate) fn account(&mut self, t: usize, cpu_node: usize, mem_node: usize, bytes: f64) {
        let pidx = self.threads[t].proc;
        self.series.access(cpu_node, cpu_node == mem_node, bytes);
        if cpu_node == mem_node {
            self.local_bytes += bytes;
            self.procs[pidx].bytes_local += bytes;
        } else {
            self.remote_bytes += bytes;
            self.procs[pidx].bytes_remote += bytes;
        }
    }

    /// The start of every hinting fault, by thread `t` on CPU `cpu` at `page` of its region
    /// `ri`: the PTE (or the THP's PMD) is made present again and the fault counted
    /// (`numa_hint_faults`, and `_local` when the page is on the CPU's node). `None` if it
    /// was not PROT_NONE or holds no page.
    pub(crate) fn take_hint(
        &mut self,
        t: usize,
        cpu: usize,
        ri: usize,
        page: u64,
    ) -> Option<HintAt> {
        let pidx = self.threads[t].proc;
        let obj = self.procs[pidx].regions[ri].obj;
        let o = &mut self.objects[obj];
        let head = o.head(page);
        if !o.is_prot(head) {
            return None;
        }
        o.clear_prot(head);
        let nid = o.node_of(head)?;
        let thisnid = self.machine.cpus[cpu].node;
        self.metrics.numa_hint_faults += 1;
        self.series.hint_fault(pidx, thisnid);
        if nid == thisnid {
            self.metrics.numa_hint_faults_local += 1;
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
    pub(crate) fn entry_pages(&self, obj: usize, head: u64) -> u64 {
        let o = &self.objects[obj];
        if o.is_huge(head / CHUNK) {
            o.chunk_len(head / CHUNK)
        } else {
            1
        }
    }

    pub(crate) fn check_deadlock(&self) -> Result<(), SimError> {
        if self.pending_starts > 0 {
            return Ok(());
        }
        let live = |s: TState| matches!(s, TState::Runnable | TState::Sleeping);
        let ths = &self.threads;
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
                    self.procs[t.proc].name, self.procs[t.proc].groups[t.group].name, t.index
                )
            })
            .collect();
        Err(SimError::Input(InputError::new(
            format!("workload {}", self.sc.workload.name()),
            "phase",
            format!(
                "deadlock at {:.3} s: threads wait in join/barrier phases that can never complete (e.g. {})",
                self.now as f64 / NS,
                blocked.join(", ")
            ),
        )))
    }

    pub(crate) fn check_invariants(&self) -> Result<(), SimError> {
        let nn = self.machine.nr_nodes();
        let mut used = vec![0u64; nn];
        for (o, obj) in self.objects.iter().enumerate() {
            obj.check()
                .map_err(|e| SimError::Invariant(format!("memory object {o}: {e}")))?;
            for (n, &p) in obj.node_pages().iter().enumerate() {
                used[n] += p;
            }
        }
        if used != self.node_used {
            return Err(SimError::Invariant(format!(
                "node use {:?} differs from the pages {:?}",
                self.node_used, used
            )));
        }
        for (n, (&u, &cap)) in used.iter().zip(&self.node_cap).enumerate() {
            if u > cap {
                return Err(SimError::Invariant(format!(
                    "node {n} holds {u} pages, more than its {cap}"
                )));
            }
        }
        self.sched.check().map_err(SimError::Invariant)?;
        for (t, th) in self.threads.iter().enumerate() {
            let on_rq = self.sched.tasks[t].cpu.is_some();
            if on_rq != (th.state == TState::Runnable) {
                return Err(SimError::Invariant(format!(
                    "thread {t} is {:?} but on a runqueue: {on_rq}",
                    th.state
                )));
            }
            if let Some(c) = self.sched.tasks[t].cpu
                && !self.procs[th.proc].cpuset_cpus.contains(c)
            {
                return Err(SimError::Invariant(format!(
                    "thread {t} runs on CPU {c} outside its cpuset"
                )));
            }
        }
        Ok(())
    }
}

/// The ranges of `slice` an access pattern touches, each with its share of the accesses.
/// Zipf is approximated by one range per power of two of the page rank, weighted by the
/// integral of `(x+1)^-s` over it.
pub(crate) fn pattern_ranges_of(
    pattern: Pattern,
    a: &AccessRt,
    slice: (u64, u64),
) -> Vec<(u64, u64, f64)> {
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
pub(crate) fn pattern_ranges(a: &AccessRt, slice: (u64, u64)) -> Vec<(u64, u64, f64)> {
    pattern_ranges_of(a.pattern, a, slice)
}

impl<'a> World<'a> {
    /// Each task's process (pid), by task id.
    pub(crate) fn task_pids(&self) -> Vec<u32> {
        self.threads.iter().map(|t| t.proc as u32 + 1).collect()
    }

    /// The memory policy of the access phase `t` is in, if any.
    pub(crate) fn phase_policy(&self, t: usize) -> Option<&MemPolicy> {
        let th = &self.threads[t];
        match self.procs[th.proc].groups[th.group].phases.get(th.phase) {
            Some(PhaseRt::Access(a)) => a.mempolicy.as_ref(),
            _ => None,
        }
    }

    /// The task's own memory policy (thread, process, current phase, workload).
    pub(crate) fn task_policy(&self, t: usize) -> Option<&MemPolicy> {
        let th = &self.threads[t];
        let p = &self.procs[th.proc];
        th.policy_thread
            .as_ref()
            .or(p.policy_proc.as_ref())
            .or(self.phase_policy(t))
            .or(p.wl_policy.as_ref())
    }

    /// `get_mm_rss`: resident pages of a process's mappings.
    pub(crate) fn mm_rss(&self, pidx: usize) -> u64 {
        self.procs[pidx]
            .regions
            .iter()
            .map(|r| self.objects[r.obj].populated())
            .sum()
    }

    /// The world at the start of a run (nothing runs until the engine boots it).
    pub(crate) fn new(sc: &'a Scenario) -> World<'a> {
        let m = &sc.machine;
        let mut rng = Pcg64Mcg::seed_from_u64(sc.sim.seed ^ 0x6e75_6d61_6261_6c00);
        let with_mem: Vec<usize> = (0..m.nr_nodes())
            .filter(|&n| m.node_usable_pages(n) > 0)
            .collect();
        let random_node = with_mem[rng.random_range(0..with_mem.len())];
        let tick_ns = (sc.sim.tick_ms * 1e6).round() as u64;
        World {
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
        }
    }

    /// The run's first events: shared memory objects exist, process starts (instance k of
    /// a `[[process]]` forks a little after k-1; with `jobs`, only the first `jobs` now, the
    /// others as earlier ones exit), the first tick, `numastat` samples.
    pub(crate) fn boot(&mut self) {
        let wl = &self.sc.workload;
        for s in &wl.spec.shared {
            let pages = s.size.pages();
            let thp = self.thp_for(s.thp, s.kind == SharedKind::File);
            self.objects
                .push(MemObject::new(pages, thp, self.machine.nr_nodes()));
            self.obj_refs.push(0);
            self.obj_owner.push(None);
            self.shared_objs.push(self.objects.len() - 1);
        }
        // Process starts: instance k of a [[process]] forks a little after k-1; with
        // `jobs`, only the first `jobs` now, the others as earlier ones exit.
        for (pi, p) in wl.spec.processes.iter().enumerate() {
            let mut t = p.start_s * NS;
            self.pending_starts += (p.instances - p.jobs.unwrap_or(p.instances)) as usize;
            self.next_instance.push(p.jobs.unwrap_or(p.instances));
            for inst in 0..p.jobs.unwrap_or(p.instances) {
                let jitter = self.rng.random_range(0.0..1.0) * 1e6;
                self.events.push(
                    (t + jitter) as u64,
                    EventKind::ProcessStart {
                        spec: pi as u32,
                        instance: inst,
                    },
                );
                self.pending_starts += 1;
                t += self.machine.spec.costs.thread_spawn_ns * 4.0;
            }
        }
        self.events.push(self.tick_ns, EventKind::Tick);
        let at: Vec<u64> = self
            .sc
            .sim
            .numastat_at_s
            .iter()
            .map(|&t| self.on_tick(t))
            .collect();
        for t in at {
            self.events
                .push(t, EventKind::NumastatSample { periodic: false });
        }
        let every = self.sc.sim.numastat_every_s;
        if every > 0.0 {
            self.events.push(
                self.on_tick(every),
                EventKind::NumastatSample { periodic: true },
            );
        }
    }
}

impl Thread {
    pub(crate) fn new(proc: usize, group: usize, index: u32, state: TState) -> Self {
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
