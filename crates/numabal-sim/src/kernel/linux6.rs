//! The kernel's automatic NUMA balancing driven by the engine (Linux 6.x, `autonuma`):
//! scan trigger and `task_numa_work`, `change_prot_numa`, the hinting fault
//! (`do_numa_page`, `numa_migrate_check`, `mpol_misplaced`), `task_numa_fault`,
//! `task_numa_group`, `task_numa_placement`, `task_numa_migrate` and the load balancer's
//! `migrate_degrades_locality`. Pure arithmetic lives in `crate::autonuma`; this module
//! holds the state and walks the engine's memory, threads and runqueues. Every
//! simplification is listed in docs/model-notes.md ("Kernel NUMA balancing").

use super::kthread::{KThreads, Trace};
use super::{KernelModel, KernelReport, NumaBalancingReport};
use crate::autonuma::filter::{CpuPid, FilterInput, GroupFaults, should_migrate};
use crate::autonuma::period::{
    GroupShare, PeriodUpdate, task_scan_max, task_scan_min, task_scan_start,
    update_task_scan_period,
};
use crate::autonuma::task::{
    Faults, GroupDecision, LOAD_AVG_MAX, NUMA_CPUBUF, NUMA_MEMBUF, NumaGroup, fold_faults,
    group_decision, group_weight, task_weight,
};
use crate::autonuma::tunables::Tunables;
use crate::autonuma::vma::{SkipReason, VmaNumab};
use crate::memory::CHUNK;
use crate::sched::{CanMigrate, Cause, LbCtx};
use crate::world::records::Metrics;
use crate::world::{HintAt, KernelHooks, NS, TState, World};
use numabal_model::MemPolicy;
use serde::{Deserialize, Serialize};

const MS: u64 = 1_000_000;
/// `SMALLIMP`: smallest improvement worth a swap.
const SMALLIMP: i64 = 30;
/// `NUMA_IMBALANCE_MIN`.
const NUMA_IMBALANCE_MIN: i64 = 2;

/// TNF flags (include/linux/sched/numa_balancing.h).
pub(crate) const TNF_MIGRATED: u32 = 0x01;
pub(crate) const TNF_NO_GROUP: u32 = 0x02;
pub(crate) const TNF_SHARED: u32 = 0x04;
pub(crate) const TNF_FAULT_LOCAL: u32 = 0x08;
pub(crate) const TNF_MIGRATE_FAIL: u32 = 0x10;

/// Per-task state (`task_struct` NUMA fields).
#[derive(Debug, Clone)]
pub(crate) struct TaskNuma {
    pub scan_period: u64,
    pub scan_period_max: u64,
    pub scan_seq: u64,
    /// ns of the task's own CPU time.
    pub node_stamp: u64,
    pub preferred: Option<usize>,
    /// ns (wall).
    pub migrate_retry: u64,
    pub faults: Option<Faults>,
    pub total_faults: u64,
    pub locality: [u64; 3],
    pub pages_migrated: u64,
    pub last_placement_ns: u64,
    pub last_sum_exec: u64,
    pub group: Option<usize>,
}

/// Per-mm state.
#[derive(Debug, Clone, Default)]
pub(crate) struct MmNuma {
    /// ns; 0 = not set yet.
    pub next_scan: u64,
    /// (region, page): where the next window starts.
    pub scan_offset: (usize, u64),
    pub scan_seq: u64,
    pub vmas: Vec<Option<VmaNumab>>,
    /// scan_window: per region, lowest/highest faulting page in the current and the
    /// previous pass.
    pub win_cur: Vec<Option<(u64, u64)>>,
    pub win_prev: Vec<Option<(u64, u64)>>,
}

/// Counters of the kernel model beyond `/proc/vmstat`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct NumabStats {
    /// `task_numa_work` invocations that scanned.
    pub scans: u64,
    /// `task_numa_work` returns at the cpuset single-node check (`sched_skip_cpuset_numa`).
    pub cpuset_skips: u64,
    /// VMAs skipped, by `sched_skip_vma_numa` reason.
    pub vma_skips: std::collections::BTreeMap<String, u64>,
    /// `sched_stick_numa`: no better CPU found or the move failed.
    pub numa_stick: u64,
    /// numa_groups formed.
    pub numa_groups_created: u64,
    /// Task joins into another group.
    pub numa_group_joins: u64,
    /// Hinting faults that counted as private / shared (pages).
    pub fault_pages_private: u64,
    /// Shared fault pages.
    pub fault_pages_shared: u64,
    /// `scan_async`: scans run by a worker; of them, on an idle CPU of the task's node, and
    /// on a CPU outside the task's cpuset.
    pub async_scans: u64,
    /// Worker scans that found an idle CPU.
    pub async_scans_idle_cpu: u64,
    /// Worker scans on a CPU the task's cpuset does not allow.
    pub async_scans_outside_cpuset: u64,
}

/// The kernel model's state.
pub(crate) struct Linux6 {
    pub tun: Tunables,
    pub tasks: Vec<TaskNuma>,
    pub mms: Vec<MmNuma>,
    pub groups: Vec<NumaGroup>,
    pub cpu_nodes: Vec<usize>,
    pub stats: NumabStats,
    pub trace: Trace,
    pub scan_ns: f64,
    /// `scan_async`: scan worker time charged to no task.
    pub scan_hidden_ns: f64,
    /// `scan_async`: the scan workers.
    pub kthreads: KThreads,
}

impl Linux6 {
    pub fn new(w: &World, tun: Tunables) -> Linux6 {
        let cpu_nodes: Vec<usize> = w.machine.nodes_with_cpus().iter().collect();
        let nr_cpus = w.machine.nr_cpus();
        Linux6 {
            trace: Trace::new(tun.trace),
            tun,
            tasks: Vec::new(),
            mms: Vec::new(),
            groups: Vec::new(),
            cpu_nodes,
            stats: NumabStats::default(),
            scan_ns: 0.0,
            scan_hidden_ns: 0.0,
            kthreads: KThreads::new(nr_cpus),
        }
    }

    /// Count and trace a `sched_skip_vma_numa` event.
    fn skip_vma(&mut self, now: u64, t: usize, pidx: usize, r: SkipReason) {
        *self
            .stats
            .vma_skips
            .entry(r.name().to_string())
            .or_insert(0) += 1;
        self.trace.task(
            now,
            "sched_skip_vma_numa",
            t,
            pidx,
            format!("reason={}", r.name()),
        );
    }

    fn group_share(&self, g: Option<usize>, nn: usize) -> Option<GroupShare> {
        g.map(|g| {
            let ng = &self.groups[g];
            let (shared, private) = ng.shared_private(nn);
            GroupShare {
                refcount: ng.nr_tasks,
                shared,
                private,
            }
        })
    }
}

impl Linux6 {
    /// `init_numa_balancing` for a new process (`mm_users == 1`).
    fn numab_new_process(&mut self, w: &mut World, pidx: usize) {
        let now = w.now;
        let nregions = w.procs[pidx].regions.len();
        let objs: Vec<usize> = w.procs[pidx].regions.iter().map(|r| r.obj).collect();
        for o in objs {
            w.objects[o].enable_hinting();
        }
        let nb = &mut *self;
        let delay = nb.tun.scan_delay_ms * MS;
        while nb.mms.len() <= pidx {
            nb.mms.push(MmNuma::default());
        }
        nb.mms[pidx] = MmNuma {
            next_scan: now + delay,
            scan_offset: (0, 0),
            scan_seq: 0,
            vmas: vec![None; nregions],
            win_cur: vec![None; nregions],
            win_prev: vec![None; nregions],
        };
    }

    /// `init_numa_balancing` for a new task. The first thread of a process is the new
    /// process's task; later ones are threads of a parent (`parent`) and inherit its
    /// preferred node, with the staggered first trigger.
    fn numab_new_task(&mut self, w: &mut World, t: usize, parent: Option<usize>) {
        let tick = w.tick_ns;
        let pidx = w.threads[t].proc;
        let nb = &mut *self;
        let delay = nb.tun.scan_delay_ms;
        let (stamp, preferred) = match parent {
            None => (0, None),
            // min(task_scan_max(parent) [ms], period * mm_users * NSEC_PER_MSEC) + 2 ticks:
            // the kernel compares a millisecond value with nanoseconds, so the first
            // operand wins and the stagger is ~2 ticks plus a few tens of microseconds.
            Some(p) => {
                let pt = &nb.tasks[p];
                (pt.scan_period_max.max(1) + 2 * tick, pt.preferred)
            }
        };
        let tn = TaskNuma {
            scan_period: delay,
            scan_period_max: 0,
            scan_seq: nb.mms.get(pidx).map_or(0, |m| m.scan_seq),
            node_stamp: stamp,
            preferred,
            migrate_retry: 0,
            faults: None,
            total_faults: 0,
            locality: [0; 3],
            pages_migrated: 0,
            last_placement_ns: 0,
            last_sum_exec: 0,
            group: None,
        };
        let nb = &mut *self;
        debug_assert_eq!(nb.tasks.len(), t);
        nb.tasks.push(tn);
        w.sched.tasks[t].numa_preferred_nid = preferred;
    }

    /// `task_numa_free` at exit: leave the group.
    fn numab_task_exit(&mut self, w: &mut World, t: usize) {
        let nn = w.machine.nr_nodes();
        let nb = &mut *self;
        let tk = &mut nb.tasks[t];
        if let (Some(g), Some(f)) = (tk.group.take(), tk.faults.as_ref()) {
            let total = tk.total_faults;
            let f = f.clone();
            let ng = &mut nb.groups[g];
            ng.transfer(&f, total, nn, false);
            ng.nr_tasks -= 1;
        }
    }

    /// `task_tick_numa` for every running task (processor sharing: all of them run).
    fn numab_tick(&mut self, w: &mut World) {
        // CPUs' ticks are not synchronised: which thread of an mm reaches
        // `numa_next_scan` first varies, so the walk starts at a random thread.
        let n = w.threads.len();
        if n == 0 {
            return;
        }
        let first = {
            use rand::RngExt;
            w.rng.random_range(0..n)
        };
        for k in 0..n {
            let t = (first + k) % n;
            if w.threads[t].state != TState::Runnable || w.sched.tasks[t].cpu.is_none() {
                continue;
            }
            let now_exec = w.threads[t].sum_exec_ns as u64;
            let now = w.now;
            let pidx = w.threads[t].proc;
            let nb = &mut *self;
            let tk = &nb.tasks[t];
            let period = tk.scan_period * MS;
            if now_exec <= tk.node_stamp + period {
                continue;
            }
            // The first trigger sets the period from the RSS (`period` above keeps the
            // fork-time value, as in the kernel).
            let start = (tk.node_stamp == 0).then(|| {
                let gs = nb.group_share(tk.group, w.machine.nr_nodes());
                task_scan_start(w.mm_rss(pidx), &nb.tun, gs)
            });
            let nb = &mut *self;
            let tk = &mut nb.tasks[t];
            if let Some(p) = start {
                tk.scan_period = p;
            }
            tk.node_stamp += period;
            if now >= nb.mms[pidx].next_scan {
                let cost = self.task_numa_work(w, t);
                if cost > 0.0 {
                    self.scan_ns += cost;
                    // An async worker runs on the task's node too (scan_async_worker).
                    let node = w.thread_node(t);
                    w.series.scanned(Some(pidx), node, cost);
                    if self.tun.scan_async {
                        self.scan_async_worker(w, t, cost);
                    } else {
                        w.charge_kernel(t, cost);
                        // Overhead cap: run 32x the scan's time before the next trigger.
                        self.tasks[t].node_stamp += 32 * cost as u64;
                    }
                }
            }
        }
    }

    /// The async-scan RFC's `scan_async`: the scan of task `t`, costing `cost` ns, runs in a kernel
    /// worker queued on the node of the task's CPU instead of in the task. The worker takes
    /// an idle CPU of that node if there is one (the first after the task's CPU, as
    /// `select_idle_sibling` looks within the LLC); otherwise it competes for the task's own
    /// CPU (the waker's, the affine choice) and keeps that CPU's runnable threads from
    /// running until it is done. Its CPU time belongs to no task (`scan_cpu_hidden_s`)
    /// unless `scan_async_backcharge` charges it to the task: then the task's CPU time and
    /// the 32x overhead cap count it, and on a contended CPU the task, not the others, gives
    /// up the CPU time (as a vruntime charge would, over time).
    fn scan_async_worker(&mut self, w: &mut World, t: usize, cost: f64) {
        let Some(cpu) = w.sched.tasks[t].cpu else {
            return;
        };
        let backcharge = self.tun.scan_async_backcharge;
        // The task runs on `cpu`, so it shares it with at least the task unless the
        // worker found an idle CPU.
        let (wcpu, shared_with) = self.kthreads.cpu(w, cpu, w.machine.cpus[cpu].node);
        let idle = shared_with == 0;
        let outside = !w.procs[w.threads[t].proc].cpuset_cpus.contains(wcpu);
        let nb = &mut *self;
        nb.stats.async_scans += 1;
        nb.stats.async_scans_idle_cpu += idle as u64;
        nb.stats.async_scans_outside_cpuset += outside as u64;
        if backcharge {
            nb.tasks[t].node_stamp += 32 * cost as u64;
            w.sys_ns += cost;
        } else {
            nb.scan_hidden_ns += cost;
        }
        if backcharge && !idle {
            // The task, not its neighbours, gives the time up: paid like kernel work of
            // its own (it adds to its CPU time); the preempted thread still stalls.
            self.kthreads.hold(w, wcpu, cost);
            w.threads[t].debt_ns += cost;
            w.stall(cost);
        } else {
            if backcharge {
                w.threads[t].sum_exec_ns += cost;
            }
            // On an idle CPU nobody loses anything; otherwise the worker preempts the
            // CPU's current thread and every runnable thread there loses its share.
            self.kthreads.run(w, wcpu, cost);
        }
    }

    /// Whether the VMA `ri` of process `pidx` may be scanned for task `t`, or why not.
    fn vma_unsuitable(&self, w: &World, t: usize, ri: usize) -> Option<SkipReason> {
        let p = &w.procs[w.threads[t].proc];
        let r = &p.regions[ri];
        if r.file_ro {
            return Some(SkipReason::SharedRo);
        }
        // vma_policy_mof: a VMA policy, or else the task's policy, must have MPOL_F_MOF;
        // only the default (local preferred) policy has it.
        if !r.ranges.is_empty() || r.wl_policy.is_some() {
            return Some(SkipReason::Unsuitable);
        }
        if w.task_policy(t).is_some_and(|p| *p != MemPolicy::Default) {
            return Some(SkipReason::Unsuitable);
        }
        None
    }

    /// `task_numa_work`: returns the CPU ns the scan took.
    fn task_numa_work(&mut self, w: &mut World, t: usize) -> f64 {
        let now = w.now;
        let pidx = w.threads[t].proc;
        let pid = t as u32 + 1;
        // The cpuset scan-skip patch (v6.16+): nothing can migrate when the cpuset allows one memory node.
        let single_mem = w.procs[pidx].cpuset_mems.count() == 1;
        let tick = w.tick_ns;
        let nthreads = w.procs[pidx].live as u64;
        let nb = &mut *self;
        if nb.tun.cpuset_skip && single_mem {
            nb.stats.cpuset_skips += 1;
            nb.trace
                .task(now, "sched_skip_cpuset_numa", t, pidx, String::new());
            return 0.0;
        }
        let delay = nb.tun.scan_delay_ms * MS;
        let mm = &mut nb.mms[pidx];
        if mm.next_scan == 0 {
            mm.next_scan = now + delay;
        }
        if now < mm.next_scan {
            return 0.0;
        }
        let period = nb.tasks[t].scan_period;
        nb.mms[pidx].next_scan = now + period * MS;
        nb.tasks[t].node_stamp += 2 * tick;
        nb.stats.scans += 1;
        let mut pages = nb.tun.scan_pages() as i64;
        let mut virtpages = pages * 8;
        let pid_filter = nb.tun.vma_pid_filter;
        let scan_window = nb.tun.scan_window;

        let nregions = w.procs[pidx].regions.len();
        let single_thread = w.procs[pidx].live == 1;
        let cpu_node = w.sched.tasks[t].cpu.map_or(0, |c| w.machine.cpus[c].node);
        let k = &w.machine.spec.costs;
        let (pte_ns, tlb_ns) = (k.pte_update_ns, k.tlb_shootdown_ns);
        let mut cost = 0.0;
        let mut forced = false;
        let mut pids_skipped = false;
        // If nothing is at or after the offset, wrap first.
        {
            let mm = &mut self.mms[pidx];
            if mm.scan_offset.0 >= nregions {
                Self::reset_scan(mm);
            }
        }
        'retry: loop {
            let (mut ri, mut off) = self.mms[pidx].scan_offset;
            while ri < nregions {
                let rpages = w.procs[pidx].regions[ri].pages;
                if off >= rpages {
                    ri += 1;
                    off = 0;
                    continue;
                }
                let mut skip = self.vma_unsuitable(w, t, ri);
                let nb = &mut *self;
                let mm = &mut nb.mms[pidx];
                let seq = mm.scan_seq;
                let offset_inside = mm.scan_offset.0 == ri && mm.scan_offset.1 > 0;
                if skip.is_none() {
                    // numab_state is allocated on first sight, after the checks above.
                    let v = mm.vmas[ri].get_or_insert_with(|| VmaNumab::new(now, seq, delay));
                    if seq != 0 && now < v.next_scan {
                        skip = Some(SkipReason::ScanDelay);
                    } else {
                        v.maybe_rotate(now, seq, delay);
                        if v.prev_scan_seq == seq as i64 {
                            mm.scan_offset = (ri + 1, 0);
                            skip = Some(SkipReason::SeqCompleted);
                        } else if pid_filter && !forced {
                            let (acc, info) = v.is_accessed(seq, pid, offset_inside, nthreads);
                            if !acc {
                                pids_skipped = true;
                                skip = Some(SkipReason::PidInactive);
                            } else if let Some(i) = info {
                                nb.skip_vma(now, t, pidx, i);
                            }
                        }
                    }
                }
                if let Some(reason) = skip {
                    nb.skip_vma(now, t, pidx, reason);
                    ri += 1;
                    off = 0;
                    continue;
                }
                // The async-scan RFC (Mel Gorman): only between the lowest and the highest faulting
                // address of the previous and the current pass.
                let (lo, hi) = if scan_window {
                    let mm = &nb.mms[pidx];
                    match (mm.win_prev[ri], mm.win_cur[ri]) {
                        (None, None) => (0, rpages),
                        (a, b) => {
                            let lo = a.map_or(u64::MAX, |w| w.0).min(b.map_or(u64::MAX, |w| w.0));
                            let hi = a.map_or(0, |w| w.1).max(b.map_or(0, |w| w.1));
                            (lo / CHUNK * CHUNK, (hi + 1).min(rpages))
                        }
                    }
                } else {
                    (0, rpages)
                };
                let vm_shared = w.procs[pidx].regions[ri].vm_shared;
                let obj = w.procs[pidx].regions[ri].obj;
                // change_pte_range's single-threaded optimisation: folios already on the
                // scanning CPU's node are not protected.
                let skip_node = (single_thread && !vm_shared).then_some(cpu_node);
                let mut start = off.max(lo);
                if start >= hi {
                    start = rpages;
                }
                let mut stopped = false;
                while start < rpages {
                    let end = (start + pages.max(0) as u64).div_ceil(CHUNK) * CHUNK;
                    let end = end.min(rpages).min(hi.max(start + 1));
                    let (n, huge, c) = self.change_prot_numa(w, obj, start, end, skip_node, pte_ns);
                    if n > 0 {
                        cost += c + tlb_ns;
                        pages -= (end - start) as i64;
                        w.metrics.numa_pte_updates += n;
                        w.metrics.numa_huge_pte_updates += huge;
                    } else {
                        cost += c;
                    }
                    virtpages -= (end - start) as i64;
                    start = if end >= hi { rpages } else { end };
                    if pages <= 0 || virtpages <= 0 {
                        stopped = true;
                        break;
                    }
                }
                let nb = &mut *self;
                let mm = &mut nb.mms[pidx];
                if stopped {
                    mm.scan_offset = if start >= rpages {
                        (ri + 1, 0)
                    } else {
                        (ri, start)
                    };
                    if start >= rpages {
                        let seq = mm.scan_seq as i64;
                        if let Some(v) = mm.vmas[ri].as_mut() {
                            v.prev_scan_seq = seq;
                        }
                    }
                    break 'retry;
                }
                let seq = mm.scan_seq as i64;
                if let Some(v) = mm.vmas[ri].as_mut() {
                    v.prev_scan_seq = seq;
                }
                if forced {
                    mm.scan_offset = (ri + 1, 0);
                    break 'retry;
                }
                ri += 1;
                off = 0;
            }
            // The VMA list is exhausted.
            if !forced && pids_skipped {
                forced = true;
                continue 'retry;
            }
            let mm = &mut self.mms[pidx];
            Self::reset_scan(mm);
            break;
        }
        cost
    }

    /// `reset_ptenuma_scan`: a pass over the address space is complete.
    fn reset_scan(mm: &mut MmNuma) {
        mm.scan_seq += 1;
        mm.scan_offset = (0, 0);
        for (p, c) in mm.win_prev.iter_mut().zip(mm.win_cur.iter_mut()) {
            *p = c.take();
        }
    }

    /// `change_prot_numa` over pages [a, b) of an object: returns (base PTEs changed, huge
    /// PMDs changed, CPU ns). Every present PTE visited costs `pte_update_ns` (reading it
    /// and its folio's checks dominate whether or not it changes); a THP's PMD costs the
    /// same as one PTE.
    fn change_prot_numa(
        &mut self,
        w: &mut World,
        obj: usize,
        a: u64,
        b: u64,
        skip_node: Option<usize>,
        pte_ns: f64,
    ) -> (u64, u64, f64) {
        let o = &mut w.objects[obj];
        let mut p = a;
        let mut changed = 0;
        let mut huge = 0;
        let mut visited = 0u64;
        while p < b {
            let c = p / CHUNK;
            let cend = ((c + 1) * CHUNK).min(b);
            if o.chunk_populated(c) == 0 {
                p = cend;
                continue;
            }
            if o.is_huge(c) {
                visited += 1;
                if o.set_prot(c * CHUNK) {
                    changed += o.chunk_len(c);
                    huge += 1;
                }
                p = cend;
                continue;
            }
            for q in p..cend {
                if let Some(n) = o.node_of(q) {
                    visited += 1;
                    if skip_node != Some(n) && o.set_prot(q) {
                        changed += 1;
                    }
                }
            }
            p = cend;
        }
        (changed, huge, visited as f64 * pte_ns)
    }

    /// A NUMA hinting fault by thread `t` on CPU `cpu` at `page` of its region `ri`
    /// (`do_numa_page` / `do_huge_pmd_numa_page`). Returns its CPU ns, the migration
    /// included (one block of kernel work in the faulting thread).
    fn numab_fault(&mut self, w: &mut World, t: usize, cpu: usize, ri: usize, page: u64) -> f64 {
        let Some(HintAt {
            pidx,
            obj,
            head,
            nid,
            nr,
            thisnid,
        }) = w.take_hint(t, cpu, ri, page)
        else {
            return 0.0;
        };
        let (file_ro, vm_shared) = {
            let r = &w.procs[pidx].regions[ri];
            (r.file_ro, r.vm_shared && w.obj_refs[obj] > 1)
        };
        let pid = t as u32 + 1;
        let mut flags = 0;
        if file_ro {
            flags |= TNF_NO_GROUP;
        }
        if vm_shared {
            flags |= TNF_SHARED;
        }
        let last = CpuPid(w.objects[obj].cpupid(head));
        let now = w.now;
        {
            let nb = &mut *self;
            if let Some(Some(v)) = nb.mms[pidx].vmas.get_mut(ri) {
                v.record_pid(pid);
            }
            if nb.tun.scan_window {
                let w = &mut nb.mms[pidx].win_cur[ri];
                *w = Some(match *w {
                    None => (page, page),
                    Some((lo, hi)) => (lo.min(page), hi.max(page)),
                });
            }
        }
        if nid == thisnid {
            flags |= TNF_FAULT_LOCAL;
        }
        // mpol_misplaced: only the default (MPOL_PREFERRED local, MOF|MORON) policy
        // migrates; a local page returns before the filter, so last_cpupid is not updated.
        let mut target = None;
        if nid != thisnid
            && w.alloc_policy_ref(t, ri, head, w.phase_policy(t))
                .is_none_or(|p| *p == MemPolicy::Default)
            && w.procs[pidx].cpuset_mems.contains(thisnid)
        {
            let this = CpuPid::new(cpu, pid);
            w.objects[obj].xchg_cpupid(head, this.0);
            let nb = &mut *self;
            let tk = &nb.tasks[t];
            let group = tk.group.map(|g| {
                let ng = &nb.groups[g];
                GroupFaults {
                    cpu_src: ng.faults_cpu(nid),
                    cpu_dst: ng.faults_cpu(thisnid),
                    mem_src: ng.faults_mem(nid),
                    mem_dst: ng.faults_mem(thisnid),
                }
            });
            let input = FilterInput {
                pid,
                preferred_nid: tk.preferred,
                scan_seq: tk.scan_seq,
                last,
                last_node: (!last.pid_unset() && last.cpu() < w.machine.nr_cpus())
                    .then(|| w.machine.cpus[last.cpu()].node),
                dst_nid: thisnid,
                dst_has_memory: w.node_cap[thisnid] > 0,
                group,
            };
            if should_migrate(&input).0 {
                target = Some(thisnid);
            }
        }
        let mut mem_node = nid;
        let mut cost = w.machine.spec.costs.hint_fault_ns;
        if let Some(dst) = target {
            if let Some(c) = w.migrate_page(obj, head, dst) {
                flags |= TNF_MIGRATED;
                mem_node = dst;
                w.metrics.numa_pages_migrated += nr;
                cost += c;
            } else {
                flags |= TNF_MIGRATE_FAIL;
            }
        }
        self.task_numa_fault(w, t, cpu, last, mem_node, nr, flags, now);
        cost
    }

    /// `task_numa_fault(last_cpupid, mem_node, pages, flags)`.
    #[allow(clippy::too_many_arguments)]
    fn task_numa_fault(
        &mut self,
        w: &mut World,
        t: usize,
        cpu: usize,
        last: CpuPid,
        mem_node: usize,
        pages: u64,
        flags: u32,
        now: u64,
    ) {
        let nn = w.machine.nr_nodes();
        let pid = t as u32 + 1;
        let cpu_node = w.machine.cpus[cpu].node;
        {
            let tk = &mut self.tasks[t];
            if tk.faults.is_none() {
                tk.faults = Some(Faults::new(nn, 4));
                tk.total_faults = 0;
                tk.locality = [0; 3];
            }
        }
        let mut local = flags & TNF_FAULT_LOCAL != 0;
        let mut private = if last.pid_unset() {
            true
        } else {
            last.matches(pid)
        };
        if !private && flags & TNF_NO_GROUP == 0 {
            private = self.task_numa_group(w, t, last, flags);
        }
        {
            let nb = &mut *self;
            if let Some(g) = nb.tasks[t].group {
                let ng = &nb.groups[g];
                if !private
                    && !local
                    && ng.active_nodes > 1
                    && ng.active(cpu_node)
                    && ng.active(mem_node)
                {
                    local = true;
                }
            }
        }
        if now > self.tasks[t].migrate_retry {
            self.task_numa_placement(w, t);
            self.numa_migrate_preferred(w, t);
        }
        let nb = &mut *self;
        if private {
            nb.stats.fault_pages_private += pages;
        } else {
            nb.stats.fault_pages_shared += pages;
        }
        let tk = &mut nb.tasks[t];
        if flags & TNF_MIGRATED != 0 {
            tk.pages_migrated += pages;
        }
        if flags & TNF_MIGRATE_FAIL != 0 {
            tk.locality[2] += pages;
        }
        let f = tk.faults.as_mut().expect("allocated above");
        *f.at(NUMA_MEMBUF, mem_node, private) += pages;
        *f.at(NUMA_CPUBUF, cpu_node, private) += pages;
        tk.locality[local as usize] += pages;
    }

    /// `task_numa_group`: on a shared fault, create a singleton group and perhaps join the
    /// group of the task now running on the recorded CPU. Returns whether the fault counts
    /// as private.
    fn task_numa_group(&mut self, w: &mut World, t: usize, last: CpuPid, flags: u32) -> bool {
        let nn = w.machine.nr_nodes();
        let pidx = w.threads[t].proc;
        let nb = &mut *self;
        if nb.tasks[t].group.is_none() {
            let tk = &nb.tasks[t];
            let f = tk.faults.clone().unwrap_or_else(|| Faults::new(nn, 4));
            let g = NumaGroup::new(t as u32 + 1, &f, tk.total_faults, nn);
            nb.groups.push(g);
            nb.tasks[t].group = Some(nb.groups.len() - 1);
            nb.stats.numa_groups_created += 1;
        }
        let my = nb.tasks[t].group.expect("just created");
        // The task running on the recorded CPU now, if its PID matches the record.
        let cpu = last.cpu();
        let partner = if cpu < w.sched.nr_cpus() {
            w.sched
                .rq(cpu)
                .first()
                .map(|&x| x as usize)
                .filter(|&x| last.matches(x as u32 + 1))
        } else {
            None
        };
        let theirs = partner.and_then(|p| nb.tasks.get(p).and_then(|tk| tk.group));
        let same_mm = partner.is_some_and(|p| w.threads[p].proc == pidx);
        let d = group_decision(
            (my, nb.groups[my].nr_tasks),
            theirs.map(|g| (g, nb.groups[g].nr_tasks)),
            same_mm,
            flags & TNF_SHARED != 0,
        );
        match d {
            GroupDecision::NoPartner | GroupDecision::Smaller => false,
            GroupDecision::FalsePositive => true,
            GroupDecision::Join => {
                let g = theirs.expect("join has a group");
                let tk = &nb.tasks[t];
                if let Some(f) = tk.faults.clone() {
                    let total = tk.total_faults;
                    nb.groups[my].transfer(&f, total, nn, false);
                    nb.groups[g].transfer(&f, total, nn, true);
                }
                nb.groups[my].nr_tasks -= 1;
                nb.groups[g].nr_tasks += 1;
                nb.tasks[t].group = Some(g);
                nb.stats.numa_group_joins += 1;
                false
            }
        }
    }

    /// `task_numa_placement`: once per pass of the mm, fold the buffers, pick the
    /// preferred node and adapt the scan period.
    fn task_numa_placement(&mut self, w: &mut World, t: usize) {
        let nn = w.machine.nr_nodes();
        let now = w.now;
        let pidx = w.threads[t].proc;
        let rss = w.mm_rss(pidx);
        let sum_exec = w.threads[t].sum_exec_ns as u64;
        let runnable = w.sched.tasks[t].runnable;
        let nb = &mut *self;
        let seq = nb.mms[pidx].scan_seq;
        if nb.tasks[t].scan_seq == seq || nb.tasks[t].faults.is_none() {
            return;
        }
        let gs = nb.group_share(nb.tasks[t].group, nn);
        let tun = nb.tun.clone();
        let cpu_nodes = nb.cpu_nodes.clone();
        let tk = &mut nb.tasks[t];
        tk.scan_seq = seq;
        tk.scan_period_max = task_scan_max(rss, &tun, gs);
        let total = tk.locality[0] + tk.locality[1];
        // numa_get_avg_runtime
        let (runtime, period) = if tk.last_placement_ns != 0 {
            (
                sum_exec - tk.last_sum_exec,
                now.saturating_sub(tk.last_placement_ns),
            )
        } else {
            (
                (runnable / 1024.0 * LOAD_AVG_MAX as f64) as u64,
                LOAD_AVG_MAX,
            )
        };
        tk.last_sum_exec = sum_exec;
        tk.last_placement_ns = now;
        let gidx = tk.group;
        let mut faults = tk.faults.take().expect("checked");
        let mut tf = tk.total_faults;
        let pl = fold_faults(
            &mut faults,
            &mut tf,
            gidx.map(|g| &mut nb.groups[g]),
            runtime,
            period,
            total,
            &cpu_nodes,
        );
        let tk = &mut nb.tasks[t];
        tk.faults = Some(faults);
        tk.total_faults = tf;
        // preferred_group_nid: the argmax unchanged on NUMA_DIRECT topologies.
        if pl.max_faults > 0 && pl.max_nid != tk.preferred {
            tk.preferred = pl.max_nid;
            w.sched.tasks[t].numa_preferred_nid = pl.max_nid;
        }
        let nb = &mut *self;
        let gs = nb.group_share(nb.tasks[t].group, nn);
        let tk = &mut nb.tasks[t];
        let upd = update_task_scan_period(
            tk.scan_period,
            tk.scan_period_max,
            pl.shared,
            pl.private,
            tk.locality,
            task_scan_min(rss, &tun),
            task_scan_max(rss, &tun, gs),
        );
        tk.scan_period = upd.period();
        if nb.tun.trace {
            // Not a kernel tracepoint: what /proc/PID/sched would show after a placement.
            let detail = format!(
                "numa_scan_seq={seq} preferred_nid={} numa_group_id={} shared={} private={} locality={:?} numa_scan_period={} {}",
                tk.preferred.map_or(-1, |n| n as i64),
                tk.group.map_or(0, |g| nb.groups[g].gid),
                pl.shared,
                pl.private,
                tk.locality,
                upd.period(),
                if matches!(upd, PeriodUpdate::Doubled(_)) {
                    "doubled"
                } else {
                    "adjusted"
                },
            );
            nb.trace.task(now, "task_numa_placement", t, pidx, detail);
        }
        let tk = &mut nb.tasks[t];
        match upd {
            PeriodUpdate::Doubled(p) => nb.mms[pidx].next_scan = now + p * MS,
            PeriodUpdate::Adjusted(_) => tk.locality = [0; 3],
        }
    }

    /// `numa_migrate_preferred`.
    fn numa_migrate_preferred(&mut self, w: &mut World, t: usize) {
        let tick = w.tick_ns;
        let now = w.now;
        let Some(cpu) = w.sched.tasks[t].cpu else {
            return;
        };
        let nb = &mut *self;
        let tk = &mut nb.tasks[t];
        let Some(pref) = tk.preferred else {
            return;
        };
        if tk.faults.is_none() {
            return;
        }
        // min(HZ, msecs_to_jiffies(period) / 16) jiffies.
        let hz = NS as u64 / tick;
        let jiffies = (tk.scan_period * MS / tick / 16).min(hz);
        tk.migrate_retry = now + jiffies * tick;
        if w.machine.cpus[cpu].node == pref {
            return;
        }
        self.task_numa_migrate(w, t, cpu, pref);
    }

    fn task_weight_of(&self, t: usize, nid: usize) -> i64 {
        let tk = &self.tasks[t];
        tk.faults
            .as_ref()
            .map_or(0, |f| task_weight(f, tk.total_faults, nid))
    }

    fn group_weight_of(&self, t: usize, nid: usize) -> i64 {
        let nb = self;
        nb.tasks[t]
            .group
            .map_or(0, |g| group_weight(&nb.groups[g], nid))
    }

    /// `update_numa_stats` for a node.
    fn numa_stats(&self, w: &World, t: usize, nid: usize, find_idle: bool) -> NumaStats {
        let mut ns = NumaStats::default();
        let mut idle_core = None;
        for c in w.machine.nodes[nid].cpus.iter() {
            let (nr, _, _) = w.sched.fbq_counts(c);
            ns.load += w.sched.cpu_load(c);
            ns.runnable += w.sched.cpu_load(c);
            ns.util += w.sched.cpu_util(c);
            ns.nr_running += nr as i64;
            ns.capacity += 1024.0;
            ns.weight += 1;
            if find_idle && idle_core.is_none() && nr == 0 {
                if !w.sched.tasks[t].allowed.contains(c) {
                    continue;
                }
                if ns.idle_cpu.is_none() {
                    ns.idle_cpu = Some(c);
                }
                // numa_idle_core: a CPU whose SMT siblings are all idle.
                let core = w.machine.cpus[c].core;
                if w.machine.cores[core]
                    .cpus
                    .iter()
                    .all(|&s| w.sched.is_idle(s))
                {
                    idle_core = Some(c);
                }
            }
        }
        if idle_core.is_some() {
            ns.idle_cpu = idle_core;
        }
        ns
    }

    /// `task_numa_migrate`: move or swap `t` towards its preferred node.
    fn task_numa_migrate(&mut self, w: &mut World, t: usize, src_cpu: usize, pref: usize) {
        let src_nid = w.machine.cpus[src_cpu].node;
        let pidx = w.threads[t].proc;
        let imbalance_pct = 100.0 + (117.0 - 100.0) / 2.0; // sd_numa 117 -> 108
        let imb_numa_nr = w.sched.imb_numa_nr().unwrap_or(1) as i64;
        let in_group = self.tasks[t].group.is_some();
        let tw_src = self.task_weight_of(t, src_nid);
        let gw_src = self.group_weight_of(t, src_nid);
        let mut env = Env {
            t,
            src_cpu,
            src_nid,
            dst_nid: pref,
            imb_numa_nr,
            src: self.numa_stats(w, t, src_nid, false),
            dst: self.numa_stats(w, t, pref, true),
            best_cpu: None,
            best_task: None,
            best_imp: 0,
        };
        env.src.classify(imbalance_pct);
        env.dst.classify(imbalance_pct);
        let taskimp = self.task_weight_of(t, pref) - tw_src;
        let groupimp = self.group_weight_of(t, pref) - gw_src;
        self.task_numa_find_cpu(w, &mut env, taskimp, groupimp);
        let nb = &mut *self;
        let multi = nb.tasks[t]
            .group
            .is_some_and(|g| nb.groups[g].active_nodes > 1);
        if env.best_cpu.is_none() || multi {
            let cpu_nodes = nb.cpu_nodes.clone();
            for nid in cpu_nodes {
                if nid == src_nid || Some(nid) == self.tasks[t].preferred {
                    continue;
                }
                let taskimp = self.task_weight_of(t, nid) - tw_src;
                let groupimp = self.group_weight_of(t, nid) - gw_src;
                if taskimp < 0 && groupimp < 0 {
                    continue;
                }
                env.dst_nid = nid;
                env.dst = self.numa_stats(w, t, nid, true);
                env.dst.classify(imbalance_pct);
                self.task_numa_find_cpu(w, &mut env, taskimp, groupimp);
            }
        }
        if in_group {
            let nid = env.best_cpu.map_or(src_nid, |c| w.machine.cpus[c].node);
            if Some(nid) != self.tasks[t].preferred {
                self.tasks[t].preferred = Some(nid);
                w.sched.tasks[t].numa_preferred_nid = Some(nid);
            }
        }
        let now = w.now;
        let Some(best_cpu) = env.best_cpu else {
            let nb = &mut *self;
            nb.stats.numa_stick += 1;
            nb.trace.task(
                now,
                "sched_stick_numa",
                t,
                pidx,
                format!("src_cpu={src_cpu}"),
            );
            return;
        };
        let dst_nid = w.machine.cpus[best_cpu].node;
        match env.best_task {
            None => {
                w.sched
                    .migrate(t as u32, src_cpu, best_cpu, Cause::NumaMove, now);
                w.metrics.numa_task_migrated += 1;
                let nb = &mut *self;
                nb.trace.task(
                    now,
                    "sched_move_numa",
                    t,
                    pidx,
                    format!(
                        "src_cpu={src_cpu} src_nid={src_nid} dst_cpu={best_cpu} dst_nid={dst_nid}"
                    ),
                );
            }
            Some(cur) => {
                w.sched
                    .migrate(t as u32, src_cpu, best_cpu, Cause::NumaSwap, now);
                w.sched
                    .migrate(cur as u32, best_cpu, src_cpu, Cause::NumaSwap, now);
                w.metrics.numa_task_swapped += 2;
                let cur_pid = w.threads[cur].proc;
                let nb = &mut *self;
                nb.trace.task(
                    now,
                    "sched_swap_numa",
                    t,
                    pidx,
                    format!(
                        "src_cpu={src_cpu} src_nid={src_nid} dst_tid={} dst_pid={} dst_cpu={best_cpu} dst_nid={dst_nid}",
                        cur + 1,
                        cur_pid + 1
                    ),
                );
            }
        }
    }

    /// `task_numa_find_cpu`.
    fn task_numa_find_cpu(&self, w: &World, env: &mut Env, taskimp: i64, groupimp: i64) {
        let mut maymove = false;
        if env.dst.node_type == NodeType::HasSpare {
            let src_running = env.src.nr_running - 1;
            let dst_running = env.dst.nr_running + 1;
            let mut imb = (dst_running - src_running).max(0);
            // adjust_numa_imbalance
            if dst_running <= env.imb_numa_nr && imb <= NUMA_IMBALANCE_MIN {
                imb = 0;
            }
            if imb == 0 {
                maymove = true;
                if let Some(c) = env.dst.idle_cpu {
                    env.best_cpu = Some(c);
                    env.best_task = None;
                    env.best_imp = 0;
                    return;
                }
            }
        } else {
            let load = w.sched.tasks[env.t].runnable;
            maymove = !env.load_too_imbalanced(env.src.load - load, env.dst.load + load);
        }
        for c in w.machine.nodes[env.dst_nid].cpus.iter() {
            if !w.sched.tasks[env.t].allowed.contains(c) {
                continue;
            }
            if self.task_numa_compare(w, env, c, taskimp, groupimp, maymove) {
                break;
            }
        }
    }

    /// `task_numa_compare` for one destination CPU; returns "stop searching".
    fn task_numa_compare(
        &self,
        w: &World,
        env: &mut Env,
        dst_cpu: usize,
        taskimp: i64,
        groupimp: i64,
        maymove: bool,
    ) -> bool {
        let nb = self;
        let p_ng = nb.tasks[env.t].group;
        let mut imp = if p_ng.is_some() { groupimp } else { taskimp };
        let moveimp = imp;
        let cur = w.sched.rq(dst_cpu).first().map(|&x| x as usize);
        if cur == Some(env.t) {
            return true;
        }
        let pref_of = |x: usize| nb.tasks[x].preferred;
        let assign_cur: Option<Option<usize>>;
        match cur {
            None => {
                if maymove && moveimp >= env.best_imp {
                    assign_cur = Some(None);
                } else {
                    return false;
                }
            }
            Some(cur) => {
                if !w.sched.tasks[cur].allowed.contains(env.src_cpu) {
                    return false;
                }
                if let Some(bt) = env.best_task
                    && pref_of(bt) == Some(env.src_nid)
                    && pref_of(cur) != Some(env.src_nid)
                {
                    return false;
                }
                let cur_ng = nb.tasks[cur].group;
                if cur_ng == p_ng {
                    if env.dst.node_type == NodeType::HasSpare {
                        return false;
                    }
                    imp = taskimp + self.task_weight_of(cur, env.src_nid)
                        - self.task_weight_of(cur, env.dst_nid);
                    if cur_ng.is_some() {
                        imp -= imp / 16;
                    }
                } else if cur_ng.is_some() && p_ng.is_some() {
                    imp += self.group_weight_of(cur, env.src_nid)
                        - self.group_weight_of(cur, env.dst_nid);
                } else {
                    imp += self.task_weight_of(cur, env.src_nid)
                        - self.task_weight_of(cur, env.dst_nid);
                }
                if pref_of(cur) == Some(env.dst_nid) {
                    imp -= imp / 16;
                }
                if pref_of(cur) == Some(env.src_nid) {
                    imp += imp / 8;
                }
                if maymove && moveimp > imp && moveimp > env.best_imp {
                    imp = moveimp;
                    assign_cur = Some(None);
                } else if env
                    .best_task
                    .is_some_and(|bt| pref_of(bt) != Some(env.src_nid))
                    && pref_of(cur) == Some(env.src_nid)
                {
                    assign_cur = Some(Some(cur));
                } else {
                    if imp < SMALLIMP || imp <= env.best_imp + SMALLIMP / 2 {
                        return false;
                    }
                    let load = w.sched.tasks[env.t].runnable - w.sched.tasks[cur].runnable;
                    if load != 0.0
                        && env.load_too_imbalanced(env.src.load - load, env.dst.load + load)
                    {
                        return false;
                    }
                    assign_cur = Some(Some(cur));
                }
            }
        }
        let Some(cur) = assign_cur else {
            return false;
        };
        let mut cpu = dst_cpu;
        if cur.is_none() {
            cpu = env.dst.idle_cpu.unwrap_or(dst_cpu);
            if !w.sched.is_idle(cpu)
                && let Some(b) = env.best_cpu
                && w.sched.is_idle(b)
            {
                cpu = b;
            }
        }
        env.best_cpu = Some(cpu);
        env.best_task = cur;
        env.best_imp = imp;
        if maymove && cur.is_none() && w.sched.is_idle(cpu) {
            return true;
        }
        if !maymove
            && env
                .best_task
                .is_some_and(|bt| pref_of(bt) == Some(env.src_nid))
        {
            return true;
        }
        false
    }

    /// `migrate_degrades_locality`, turned into the load balancer's hot/cold answer.
    fn numab_can_migrate(&self, ctx: &LbCtx) -> CanMigrate {
        let nb = self;
        if ctx.active || ctx.src_node == ctx.dst_node {
            return CanMigrate::Yes;
        }
        let t = ctx.tid as usize;
        let Some(tk) = nb.tasks.get(t) else {
            return CanMigrate::Yes;
        };
        if tk.faults.is_none() {
            return CanMigrate::Yes;
        }
        let degrades: i64 = if tk.preferred == Some(ctx.src_node) {
            (ctx.src_nr_running > ctx.src_nr_preferred_running) as i64
        } else if tk.preferred == Some(ctx.dst_node) {
            -1
        } else if ctx.dst_idle {
            0
        } else if tk.group.is_some() {
            self.group_weight_of(t, ctx.src_node) - self.group_weight_of(t, ctx.dst_node)
        } else {
            self.task_weight_of(t, ctx.src_node) - self.task_weight_of(t, ctx.dst_node)
        };
        if degrades > 0 {
            CanMigrate::Hot
        } else {
            CanMigrate::Yes
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum NodeType {
    #[default]
    HasSpare,
    FullyBusy,
    Overloaded,
}

#[derive(Debug, Clone, Default)]
struct NumaStats {
    load: f64,
    runnable: f64,
    util: f64,
    nr_running: i64,
    capacity: f64,
    weight: i64,
    idle_cpu: Option<usize>,
    node_type: NodeType,
}

impl NumaStats {
    /// `numa_classify`.
    fn classify(&mut self, pct: f64) {
        let (cap, util, run) = (self.capacity, self.util, self.runnable);
        self.node_type = if self.nr_running > self.weight
            && (cap * 100.0 < util * pct || cap * pct < run * 100.0)
        {
            NodeType::Overloaded
        } else if self.nr_running < self.weight
            || (cap * 100.0 > util * pct && cap * pct > run * 100.0)
        {
            NodeType::HasSpare
        } else {
            NodeType::FullyBusy
        };
    }
}

/// `struct task_numa_env`.
struct Env {
    t: usize,
    src_cpu: usize,
    src_nid: usize,
    dst_nid: usize,
    imb_numa_nr: i64,
    src: NumaStats,
    dst: NumaStats,
    best_cpu: Option<usize>,
    best_task: Option<usize>,
    best_imp: i64,
}

impl Env {
    /// `load_too_imbalanced`.
    fn load_too_imbalanced(&self, src_load: f64, dst_load: f64) -> bool {
        let (sc, dc) = (self.src.capacity, self.dst.capacity);
        let imb = (dst_load * sc - src_load * dc).abs();
        let old = (self.dst.load * sc - self.src.load * dc).abs();
        imb > old
    }
}

impl KernelHooks for Linux6 {
    fn process_start(&mut self, w: &mut World, pidx: usize) {
        self.numab_new_process(w, pidx);
    }
    fn sched_fork(&mut self, w: &mut World, t: usize, parent: Option<usize>) {
        self.numab_new_task(w, t, parent);
    }
    fn task_exit(&mut self, w: &mut World, t: usize) {
        self.numab_task_exit(w, t);
    }
    fn tick(&mut self, w: &mut World) {
        self.numab_tick(w);
    }
    fn hinting(&self) -> bool {
        true
    }
    fn hinting_fault(&mut self, w: &mut World, t: usize, cpu: usize, ri: usize, page: u64) -> f64 {
        self.numab_fault(w, t, cpu, ri, page)
    }
    fn can_migrate_task(&self, _w: &World, ctx: &LbCtx) -> CanMigrate {
        self.numab_can_migrate(ctx)
    }
}

impl KernelModel for Linux6 {
    fn name(&self) -> Option<&'static str> {
        Some("autonuma")
    }
    fn metrics(&self, m: &mut Metrics) {
        m.scan_cpu_s = self.scan_ns / NS;
        m.scan_cpu_hidden_s = self.scan_hidden_ns / NS;
    }
    fn report(&self, _w: &World) -> KernelReport {
        KernelReport {
            numa_balancing: Some(NumaBalancingReport {
                stats: self.stats.clone(),
                trace: self.trace.events.clone(),
                autonuma_2012: None,
            }),
            stable: None,
        }
    }
}
