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
use crate::autonuma::promote::{PromoteRules, PromoteState, Verdict};
use crate::autonuma::task::{
    Faults, GroupDecision, LOAD_AVG_MAX, NUMA_CPUBUF, NUMA_MEM, NUMA_MEMBUF, NumaGroup,
    fold_faults, group_decision, group_weight, task_weight,
};
use crate::autonuma::tunables::Tunables;
use crate::autonuma::vma::{SkipReason, VmaNumab};
use crate::memory::CHUNK;
use crate::sched::{CanMigrate, Cause, LbCtx};
use crate::world::records::{Metrics, SchedNuma};
use crate::world::tiering::TieringConfig;
use crate::world::{HintAt, KernelHooks, NS, TState, World};
use numabal_model::MemPolicy;
use serde::{Deserialize, Serialize};

mod fault;
mod placement;
mod scan;

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
    /// KVM guests: `mmu_notifier_invalidate_range_start` calls over guest memory (EPT
    /// zaps with a remote TLB flush).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub kvm_mmu_invalidations: u64,
    /// KVM guests: vCPUs kicked out of the guest by those flushes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub kvm_vcpu_kicks: u64,
    /// KVM guests: EPT violations of vCPUs on zapped guest memory.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub kvm_ept_faults: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
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
    /// Tiering mode: per node, its promotion state (`pglist_data`'s `nbp_*` fields).
    pub promote: Vec<PromoteState>,
    /// The policy name it runs under (`autonuma`, or a named configuration of it).
    pub name: &'static str,
}

impl Linux6 {
    pub fn new(w: &mut World, tun: Tunables) -> Linux6 {
        let cpu_nodes: Vec<usize> = w.machine().nodes_with_cpus().iter().collect();
        let nr_cpus = w.machine().nr_cpus();
        w.set_memory_tiering(
            tun.kernel,
            TieringConfig {
                tiering_mode: tun.tiering(),
                demotion_enabled: tun.demotion_enabled,
                demote_scale_factor: tun.demote_scale_factor,
                watermarks: false,
            },
        );
        Linux6 {
            promote: vec![PromoteState::default(); w.machine().nr_nodes()],
            name: "autonuma",
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

    /// The model under a named configuration's own policy name (`tpp`).
    pub fn named(mut self, name: &'static str) -> Linux6 {
        self.name = name;
        self
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
    /// A new process's NUMA state: `init_numa_balancing` (`mm_users == 1`) sets a fork's
    /// first scan `scan_delay` away; an exec'd program's new mm has `numa_next_scan` 0,
    /// which its first scan trigger sets (`scan_due`).
    fn numab_new_process(&mut self, w: &mut World, pidx: usize) {
        let now = w.now();
        let p = w.proc(pidx);
        let forked = w.scenario().workload.spec.processes[p.spec].is_forked(p.instance);
        let nregions = w.proc(pidx).regions.len();
        w.enable_hinting(pidx);
        let nb = &mut *self;
        let delay = nb.tun.scan_delay_ms * MS;
        while nb.mms.len() <= pidx {
            nb.mms.push(MmNuma::default());
        }
        nb.mms[pidx] = MmNuma {
            next_scan: if forked { now + delay } else { 0 },
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
        let tick = w.tick_ns();
        let pidx = w.thread(t).proc;
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
        w.set_numa_preferred_nid(t, preferred);
    }

    /// `update_scan_period` (from `migrate_task_rq_fair`, 3f9672baaa8d): a task with NUMA
    /// faults that moves to another node gets its first scan period back, unless it has
    /// completed a scan and moves to its preferred node or was not on it.
    fn update_scan_period(&mut self, w: &World, t: usize, src: usize, dst: usize) {
        let Some(tk) = self.tasks.get(t) else {
            return;
        };
        if src == dst || tk.faults.is_none() || w.thread(t).state == TState::Done {
            return;
        }
        if tk.scan_seq != 0 && (Some(dst) == tk.preferred || tk.preferred.is_some_and(|p| p != src))
        {
            return;
        }
        let gs = self.group_share(tk.group, w.machine().nr_nodes());
        let start = task_scan_start(w.mm_rss(w.thread(t).proc), &self.tun, gs);
        self.tasks[t].scan_period = start;
    }

    /// `task_numa_free` at exit: leave the group.
    fn numab_task_exit(&mut self, w: &mut World, t: usize) {
        let nn = w.machine().nr_nodes();
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
    fn task_migrated(&mut self, w: &mut World, t: usize, src: usize, dst: usize) {
        self.update_scan_period(w, t, src, dst);
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
        Some(self.name)
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
    /// `sched_show_numa`: the mm's scan sequence, the task's counters and its decayed
    /// `NUMA_MEM` faults per node with its group's (`show_numa_stats`). The group id is
    /// the creator's thread index + 1, as the group's `gid` is kept.
    fn sched_numa(&self, w: &World, t: usize) -> Option<SchedNuma> {
        let tk = self.tasks.get(t)?;
        let pidx = w.thread(t).proc;
        let ng = tk.group.map(|g| &self.groups[g]);
        let faults = (0..w.machine().nr_nodes())
            .map(|n| {
                let task = |private| {
                    tk.faults
                        .as_ref()
                        .map_or(0, |f| f.get(NUMA_MEM, n, private))
                };
                let group = |private| ng.map_or(0, |g| g.faults.get(NUMA_MEM, n, private));
                [task(true), task(false), group(true), group(false)]
            })
            .collect();
        Some(SchedNuma {
            numa_scan_seq: self.mms.get(pidx).map_or(0, |m| m.scan_seq),
            numa_pages_migrated: tk.pages_migrated,
            numa_preferred_nid: tk.preferred.map_or(-1, |n| n as i64),
            total_numa_faults: tk.total_faults,
            numa_group_id: ng.map_or(0, |g| g.gid),
            faults,
        })
    }
}
