//! The original AutoNUMA (Andrea Arcangeli, 2012; `autonuma-2012`) driven by the engine:
//! the global `knuma_scand` kernel thread, NUMA hinting faults with the `last_nid`
//! false-sharing filter, the per-node `knuma_migratedN` kernel threads and their queues,
//! `sched_autonuma_balance` (CPU follows memory) from the balancing softirq, and the
//! load balancer's `task_selected_nid` preference. The decision rules live in
//! `crate::autonuma::aa2012`; this module holds the state and walks the engine's memory,
//! threads and runqueues. Every simplification is listed in docs/model-notes.md
//! ("Original AutoNUMA (autonuma-2012)").

use super::kthread::{KThreads, Trace};
use super::linux6::NumabStats;
use super::{KernelModel, KernelReport, NumaBalancingReport};
use crate::autonuma::aa2012::{
    Candidate, KnumaScand, MigrateQueue, MmAutonuma, PageAutonuma, QueuedPage, ScanEnv, ScandRun,
    TaskAutonuma, Tunables, memory_follow_cpu, sched_autonuma_balance,
};
use crate::memory::CHUNK;
use crate::sched::{CanMigrate, Cause, LbCtx};
use crate::world::records::Metrics;
use crate::world::{HintAt, KernelHooks, NS, World};
use numabal_model::MemPolicy;
use rand::RngExt;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

const MS: u64 = 1_000_000;

/// One `knuma_migratedN`: its lists and where it is in its loop.
#[derive(Debug, Clone)]
pub(crate) struct KnumaMigrated {
    pub queue: MigrateQueue,
    /// Waiting to be woken (its lists were empty when it last looked).
    pub waiting: bool,
    /// ns: end of its `migrate_sleep_millisecs` sleep (when not waiting).
    pub wake_at: u64,
    /// Pages isolated by the current `knumad_do_migrate`, not yet migrated.
    pub batch: VecDeque<(usize, QueuedPage, u64)>,
    /// CPU time owed by the page that overran the last tick's share, ns.
    pub credit: f64,
    /// The CPU it last ran on (it is bound to its node).
    pub prev_cpu: usize,
}

/// The original AutoNUMA: its tunables, kernel threads and state.
pub(crate) struct AutoNuma2012 {
    tun: Tunables,
    aa: Aa,
    kthreads: KThreads,
    trace: Trace,
    /// knuma_scand's CPU time (all of it on kernel threads).
    scan_ns: f64,
    scan_hidden_ns: f64,
}

impl AutoNuma2012 {
    /// The model at boot: knuma_scand has run since then, so the workload starts at a
    /// random point of its sleep between passes (drawn from the world's random source).
    pub fn new(w: &mut World, tun: Tunables) -> AutoNuma2012 {
        let first = w
            .rng()
            .random_range(0..=tun.scan_sleep_pass_millisecs * 1_000_000);
        let m = w.machine();
        let node_cpu: Vec<usize> = (0..m.nr_nodes())
            .map(|n| m.nodes[n].cpus.iter().next().unwrap_or(0))
            .collect();
        AutoNuma2012 {
            aa: Aa::new(m.nr_nodes(), first, &node_cpu),
            kthreads: KThreads::new(m.nr_cpus()),
            trace: Trace::new(tun.trace),
            tun,
            scan_ns: 0.0,
            scan_hidden_ns: 0.0,
        }
    }
}

/// The model's state.
pub(crate) struct Aa {
    pub scand: KnumaScand,
    /// CPU knuma_scand last ran on.
    pub scand_cpu: usize,
    /// Per node.
    pub migrated: Vec<KnumaMigrated>,
    /// Per process (`mm->mm_autonuma`).
    pub mms: Vec<MmAutonuma>,
    /// Per task (`p->task_autonuma`).
    pub tasks: Vec<TaskAutonuma>,
    pub stats: Aa2012Stats,
    /// CPU ns of the current knuma_scand step.
    step_ns: f64,
}

/// Counters of the original AutoNUMA model (sysfs names where the patch set had them).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Aa2012Stats {
    /// `knuma_scand/full_scans`: completed passes over all mms.
    pub full_scans: u64,
    /// `knuma_scand/pages_scanned`: knuma_scand progress in completed passes.
    pub pages_scanned: u64,
    /// knuma_scand wakeups that scanned.
    pub scan_steps: u64,
    /// `knuma_migrated/pages_migrated`, per destination node.
    pub pages_migrated: Vec<u64>,
    /// Batches migrated (`knumad_do_migrate` runs that isolated something).
    pub migrate_batches: u64,
    /// Pages queued for migration by hinting faults.
    pub pages_queued: u64,
    /// Queued pages taken off again by the `last_nid` filter (false sharing).
    pub pages_cancelled: u64,
    /// Hinting faults the `last_nid` filter refused (the previous fault came from
    /// another node).
    pub last_nid_rejected: u64,
    /// Hinting faults of tasks with a memory policy (not accounted).
    pub faults_mempolicy: u64,
    /// Task exchanges by `sched_autonuma_balance`.
    pub exchanges: u64,
    /// `sched_autonuma_balance` calls.
    pub balance_calls: u64,
    /// Per node: pages still queued at the end.
    pub queued_at_end: Vec<u64>,
}

/// One process's `mm_autonuma` at the end.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MmAutonumaReport {
    /// Process.
    pub pid: u32,
    /// `mm_numa_fault_pass`.
    pub mm_numa_fault_pass: u64,
    /// `mm_numa_fault[nid]`.
    pub mm_numa_fault: Vec<u64>,
    /// `mm_numa_fault_tot`.
    pub mm_numa_fault_tot: u64,
}

/// One task's `task_autonuma` at the end (or at its exit).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TaskAutonumaReport {
    /// Task.
    pub tid: u32,
    /// Its process.
    pub pid: u32,
    /// `task_selected_nid` (-1 for none).
    pub task_selected_nid: i64,
    /// `task_numa_fault[nid]`.
    pub task_numa_fault: Vec<u64>,
    /// `task_numa_fault_tot`.
    pub task_numa_fault_tot: u64,
}

/// What `autonuma-2012` reports beyond the shared counters.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Aa2012Report {
    /// Counters.
    pub stats: Aa2012Stats,
    /// Per process.
    pub mm_autonuma: Vec<MmAutonumaReport>,
    /// Per task.
    pub task_autonuma: Vec<TaskAutonumaReport>,
}

impl Aa {
    /// The state at boot: knuma_scand somewhere in its pass sleep (`first_wake_ns`), the
    /// knuma_migrated threads waiting.
    pub fn new(nr_nodes: usize, first_wake_ns: u64, node_first_cpu: &[usize]) -> Aa {
        Aa {
            scand: KnumaScand::new(nr_nodes, first_wake_ns),
            scand_cpu: node_first_cpu.first().copied().unwrap_or(0),
            migrated: node_first_cpu
                .iter()
                .map(|&c| KnumaMigrated {
                    queue: MigrateQueue::new(nr_nodes),
                    waiting: true,
                    wake_at: 0,
                    batch: VecDeque::new(),
                    credit: 0.0,
                    prev_cpu: c,
                })
                .collect(),
            mms: Vec::new(),
            tasks: Vec::new(),
            stats: Aa2012Stats {
                pages_migrated: vec![0; nr_nodes],
                ..Default::default()
            },
            step_ns: 0.0,
        }
    }

    pub fn report(&self, task_pids: &[u32]) -> Aa2012Report {
        let mut stats = self.stats.clone();
        stats.full_scans = self.scand.full_scans;
        stats.pages_scanned = self.scand.pages_scanned;
        stats.scan_steps = self.scand.steps;
        stats.queued_at_end = self
            .migrated
            .iter()
            .map(|k| k.queue.nr_migrate_pages)
            .collect();
        Aa2012Report {
            stats,
            mm_autonuma: self
                .mms
                .iter()
                .enumerate()
                .map(|(i, m)| MmAutonumaReport {
                    pid: i as u32 + 1,
                    mm_numa_fault_pass: m.mm_numa_fault_pass,
                    mm_numa_fault: m.mm_numa_fault.clone(),
                    mm_numa_fault_tot: m.mm_numa_fault_tot,
                })
                .collect(),
            task_autonuma: self
                .tasks
                .iter()
                .enumerate()
                .map(|(t, ta)| TaskAutonumaReport {
                    tid: t as u32 + 1,
                    pid: task_pids.get(t).copied().unwrap_or(0),
                    task_selected_nid: ta.task_selected_nid.map_or(-1, |n| n as i64),
                    task_numa_fault: ta.task_numa_fault.clone(),
                    task_numa_fault_tot: ta.task_numa_fault_tot,
                })
                .collect(),
        }
    }
}

impl AutoNuma2012 {
    /// `autonuma_enter` at fork: the mm joins the tail of knuma_scand's list.
    fn aa_new_process(&mut self, w: &mut World, pidx: usize) {
        w.enable_hinting(pidx);
        let nn = w.machine().nr_nodes();
        let aa = &mut self.aa;
        while aa.mms.len() <= pidx {
            aa.mms.push(MmAutonuma::new(nn));
        }
        aa.scand.mm_head.push(pidx);
    }

    /// A new task starts with empty statistics and no selected node
    /// (`task_autonuma_reset`: `AUTONUMA_SCHED_RESET_FLAG` is on by default).
    fn aa_new_task(&mut self, w: &mut World, t: usize) {
        let nn = w.machine().nr_nodes();
        let aa = &mut self.aa;
        debug_assert_eq!(aa.tasks.len(), t);
        aa.tasks.push(TaskAutonuma::new(nn));
    }

    /// `autonuma_exit`: the process's mm leaves knuma_scand's list.
    fn aa_exit_process(&mut self, pidx: usize) {
        self.aa.scand.mm_exit(pidx);
    }

    /// An object's pages are freed: its queued pages leave the knuma_migrated counts.
    fn aa_release_object(&mut self, w: &mut World, obj: usize) {
        // Isolated pages of the mapping are freed, not migrated: out of every batch.
        for k in &mut self.aa.migrated {
            k.batch.retain(|(_, e, _)| e.obj != obj);
        }
        let o = w.object(obj);
        if !o.hinting() {
            return;
        }
        let mut by_dst: Vec<(usize, u64)> = Vec::new();
        for c in 0..o.chunks() {
            if o.chunk_populated(c) == 0 {
                continue;
            }
            let (first, len) = (c * CHUNK, o.chunk_len(c));
            let heads: Vec<(u64, u64)> = if o.is_huge(c) {
                vec![(first, len)]
            } else {
                (first..first + len).map(|p| (p, 1)).collect()
            };
            for (p, nr) in heads {
                if let Some(d) = PageAutonuma(o.cpupid(p)).migrate_nid() {
                    by_dst.push((d, nr));
                }
            }
        }
        let aa = &mut self.aa;
        for (d, nr) in by_dst {
            aa.migrated[d].queue.remove(nr);
        }
    }

    /// The kernel threads' work at a tick: knuma_scand's wakeups that are due, then each
    /// knuma_migratedN.
    fn aa_tick(&mut self, w: &mut World) {
        let tun = self.tun.clone();
        let st = tun.scand();
        // Wakeups due by now, each at its own time (several if a sleep is below a tick).
        for _ in 0..1000 {
            let at = self.aa.scand.wake_at;
            if at > w.now() {
                break;
            }
            let mut sc = std::mem::replace(&mut self.aa.scand, KnumaScand::new(0, 0));
            self.aa.step_ns = 0.0;
            let r = sc.run(
                &mut ScandEnv {
                    w,
                    aa: &mut self.aa,
                },
                at,
                st,
            );
            let cost = std::mem::take(&mut self.aa.step_ns);
            let (full, scanned) = (sc.full_scans, sc.pages_scanned);
            self.aa.scand = sc;
            match r {
                ScandRun::WakeMigrated => {
                    let aa = &mut self.aa;
                    for k in &mut aa.migrated {
                        if k.waiting && k.queue.nr_migrate_pages > 0 {
                            k.waiting = false;
                            k.wake_at = at;
                        }
                    }
                }
                ScandRun::Scanned { pass_done } => {
                    if cost > 0.0 {
                        let nb = &mut *self;
                        nb.scan_ns += cost;
                        nb.scan_hidden_ns += cost;
                        let prev = self.aa.scand_cpu;
                        let node = w.machine().cpus[prev].node;
                        let (cpu, _) = self.kthreads.cpu(w, prev, node);
                        self.kthreads.run(w, cpu, cost);
                        // One step walks several mms: its time is the node's only.
                        let node = w.machine().cpus[cpu].node;
                        w.record_scan(None, node, cost);
                        self.aa.scand_cpu = cpu;
                    }
                    if pass_done {
                        let nb = &mut *self;
                        nb.trace.kthread(
                            at,
                            "knuma_scand",
                            format!("full_scans={full} pages_scanned={scanned}"),
                        );
                    }
                }
            }
        }
        for node in 0..self.aa.migrated.len() {
            self.knuma_migrated(w, node, &tun);
        }
    }

    /// knuma_migratedN at a tick: if due, isolate a batch (`knumad_do_migrate`: up to
    /// `pages_to_migrate`, round robin over source nodes, while the node is above its
    /// high watermark); migrate as much of the batch as its CPU share of the tick pays
    /// for; when the batch is done, sleep `migrate_sleep_millisecs` if pages are left,
    /// else wait to be woken.
    fn knuma_migrated(&mut self, w: &mut World, node: usize, tun: &Tunables) {
        let now = w.now();
        let tick = w.tick_ns() as f64;
        {
            let k = &self.aa.migrated[node];
            if k.batch.is_empty() && (k.waiting || k.wake_at > now) {
                return;
            }
        }
        if self.aa.migrated[node].batch.is_empty() {
            let free = w.node_cap(node).saturating_sub(w.node_used(node));
            let wmark = w.wmark_high(node);
            let nb = &mut *self;
            let aa = &mut nb.aa;
            let batch = aa.migrated[node].queue.isolate(
                node,
                tun.pages_to_migrate(),
                |src, e| {
                    let o = w.object_mut(e.obj);
                    // The kernel unlinks a page from its list when it is freed; here the
                    // entries of a freed mapping stay until they reach the tail and are
                    // dropped (a private mapping's page arrays are gone by then).
                    if e.page >= o.pages || o.node_of(e.page) != Some(src) {
                        return None;
                    }
                    let pa = PageAutonuma(o.cpupid(e.page));
                    if pa.migrate_nid() != Some(node) {
                        return None;
                    }
                    o.xchg_cpupid(e.page, pa.isolated().0);
                    Some(if o.is_huge(e.page / CHUNK) {
                        o.chunk_len(e.page / CHUNK)
                    } else {
                        1
                    })
                },
                // autonuma_balance_pgdat: free pages above the high watermark plus the
                // pages isolated so far.
                |nr| free > wmark + nr,
            );
            if batch.is_empty() {
                let k = &mut aa.migrated[node];
                k.waiting = k.queue.nr_migrate_pages == 0;
                k.wake_at = now + tun.migrate_sleep_millisecs * MS;
                return;
            }
            aa.stats.migrate_batches += 1;
            aa.migrated[node].batch = batch.into();
        }
        let prev = self.aa.migrated[node].prev_cpu;
        let (cpu, shared_with) = self.kthreads.cpu(w, prev, node);
        let budget = tick * w.host_speed() / (shared_with + 1) as f64;
        let mut credit = self.aa.migrated[node].credit + budget;
        let mut used = 0.0;
        while credit > 0.0 {
            let Some((_, e, _)) = self.aa.migrated[node].batch.pop_front() else {
                break;
            };
            // Back on the LRU whatever happens.
            let o = w.object_mut(e.obj);
            if o.hinting() {
                let pa = PageAutonuma(o.cpupid(e.page));
                if pa.is_isolated() {
                    o.xchg_cpupid(e.page, pa.with_migrate_nid(None).0);
                }
            }
            let nr = match w.object(e.obj).node_of(e.page) {
                Some(_) if w.object(e.obj).is_huge(e.page / CHUNK) => {
                    w.object(e.obj).chunk_len(e.page / CHUNK)
                }
                Some(_) => 1,
                None => continue,
            };
            if let Some(c) = w.migrate_page(e.obj, e.page, node) {
                w.vmstat().numa_pages_migrated += nr;
                self.aa.stats.pages_migrated[node] += nr;
                credit -= c;
                used += c;
            }
        }
        self.aa.migrated[node].prev_cpu = cpu;
        if used > 0.0 {
            self.kthreads.run(w, cpu, used);
        }
        let k = &mut self.aa.migrated[node];
        if k.batch.is_empty() {
            // Sleeping or waiting: no CPU time is banked.
            k.credit = 0.0;
            k.waiting = k.queue.nr_migrate_pages == 0;
            k.wake_at = now + used as u64 + tun.migrate_sleep_millisecs * MS;
        } else {
            k.credit = credit.min(0.0);
        }
    }

    /// A NUMA hinting fault of `t` on CPU `cpu` at `page` of its region `ri`
    /// (`__pte_numa_fixup` / the huge PMD path, then `numa_hinting_fault`). Returns its CPU
    /// ns (migration is knuma_migrated's work, not the task's).
    fn aa_fault(&mut self, w: &mut World, t: usize, cpu: usize, ri: usize, page: u64) -> f64 {
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
        let cost = w.machine().spec.costs.hint_fault_ns;
        // numa_hinting_fault acts only for tasks without a memory policy.
        if w.task_policy(t).is_some_and(|p| *p != MemPolicy::Default) {
            self.aa.stats.faults_mempolicy += 1;
            return cost;
        }
        // Simplification: never queue a page for a node outside the task's cpuset mems (the
        // 2012 daemon allocated with GFP_THISNODE from a kernel thread and did not check).
        let may_queue = w.proc(pidx).cpuset_mems.contains(thisnid);
        let pa = PageAutonuma(w.object(obj).cpupid(head));
        let r = memory_follow_cpu(pa, thisnid, nid, may_queue);
        w.object_mut(obj).xchg_cpupid(head, r.page.0);
        let ptm = self.tun.pages_to_migrate();
        let now = w.now();
        let aa = &mut self.aa;
        if let Some(d) = r.dequeued_from {
            aa.migrated[d].queue.remove(nr);
            if r.rejected {
                aa.stats.pages_cancelled += nr;
            }
        }
        if r.rejected {
            aa.stats.last_nid_rejected += 1;
        }
        if let Some(d) = r.queue_to {
            aa.stats.pages_queued += nr;
            let k = &mut aa.migrated[d];
            let crossed = k.queue.add(nid, QueuedPage { obj, page: head }, nr, ptm);
            if crossed && k.waiting {
                k.waiting = false;
                k.wake_at = now;
            }
        }
        let pass = aa.mms[pidx].mm_numa_fault_pass;
        aa.tasks[t].fault(r.access_nid, nr, pass);
        cost
    }

    /// `sched_autonuma_balance` for the current task of every CPU whose balancing softirq
    /// ran this tick while busy (`run_rebalance_domains` with `idle_balance` false), in
    /// CPU order. An exchange is done at once by both CPUs' stoppers; both CPUs count as
    /// `rq->autonuma_balance` (not initiators, not candidates) for the rest of the tick.
    fn aa_sched_balance(&mut self, w: &mut World) {
        let cpus = w.sched().balanced_busy.clone();
        let ncpu = w.machine().nr_cpus();
        let mut pending = vec![false; ncpu];
        for this_cpu in cpus {
            if pending[this_cpu] {
                continue;
            }
            let Some(&p) = w.sched().rq(this_cpu).first() else {
                continue;
            };
            let p = p as usize;
            let pidx = w.thread(p).proc;
            let this_nid = w.machine().cpus[this_cpu].node;
            let aa = &mut self.aa;
            let mut cands = Vec::new();
            for nid in 0..w.machine().nr_nodes() {
                if nid == this_nid {
                    continue;
                }
                for c in w.machine().nodes[nid].cpus.iter() {
                    if !w.sched().tasks[p].allowed.contains(c) || pending[c] {
                        continue;
                    }
                    let Some(&q) = w.sched().rq(c).first() else {
                        continue; // idle: CFS's business
                    };
                    let q = q as usize;
                    if !w.sched().tasks[q].allowed.contains(this_cpu) {
                        continue;
                    }
                    let qp = w.thread(q).proc;
                    let same_mm = qp == pidx;
                    let (fault, tot) = if same_mm {
                        let ta = &aa.tasks[q];
                        (ta.task_numa_fault[nid], ta.task_numa_fault_tot)
                    } else {
                        let ma = &aa.mms[qp];
                        (ma.mm_numa_fault[nid], ma.mm_numa_fault_tot)
                    };
                    cands.push(Candidate {
                        cpu: c,
                        nid,
                        same_mm,
                        fault,
                        tot,
                    });
                }
            }
            let b = sched_autonuma_balance(this_nid, &aa.tasks[p], &aa.mms[pidx], &cands);
            let now = w.now();
            let aa = &mut self.aa;
            aa.stats.balance_calls += 1;
            aa.tasks[p].task_selected_nid = Some(b.selected_nid);
            let Some((i, diff)) = b.exchange else {
                continue;
            };
            let dst = cands[i].cpu;
            let q = w.sched().rq(dst)[0] as usize;
            w.migrate_task(p, this_cpu, dst, Cause::AutonumaExchange);
            w.migrate_task(q, dst, this_cpu, Cause::AutonumaExchange);
            pending[this_cpu] = true;
            pending[dst] = true;
            w.vmstat().numa_task_swapped += 2;
            self.aa.stats.exchanges += 1;
            let dst_nid = w.machine().cpus[dst].node;
            let qpid = w.thread(q).proc;
            let nb = &mut *self;
            nb.trace.task(
                now,
                "autonuma_exchange",
                p,
                pidx,
                format!(
                    "src_cpu={this_cpu} src_nid={this_nid} dst_tid={} dst_pid={} dst_cpu={dst} dst_nid={dst_nid} weight_diff={diff} type={}",
                    q + 1,
                    qpid + 1,
                    if cands[i].same_mm { "thread" } else { "process" }
                ),
            );
        }
    }

    /// `sched_autonuma_can_migrate_task` for an inter-node load-balancer move: a task
    /// whose `task_selected_nid` is another node is only taken in the second pass
    /// (`LBF_NUMA` off); `load_balance_strict` is off by default, so that pass takes it.
    fn aa_can_migrate(&self, ctx: &LbCtx) -> CanMigrate {
        if ctx.active {
            return CanMigrate::Yes;
        }
        match self
            .aa
            .tasks
            .get(ctx.tid as usize)
            .and_then(|t| t.task_selected_nid)
        {
            Some(n) if n != ctx.dst_node => CanMigrate::Later,
            _ => CanMigrate::Yes,
        }
    }
}

/// What knuma_scand's walk sees: the world and the model's per-mm state.
struct ScandEnv<'x, 'w> {
    w: &'x mut World<'w>,
    aa: &'x mut Aa,
}

impl ScanEnv for ScandEnv<'_, '_> {
    fn vmas(&self, mm: usize) -> Vec<(u64, bool)> {
        // Only anonymous memory without a VMA policy: file mappings and shmem (no
        // anon_vma) and mbind ranges are skipped.
        self.w
            .proc(mm)
            .regions
            .iter()
            .map(|r| {
                let ok = !r.file_ro && !r.vm_shared && r.ranges.is_empty() && r.wl_policy.is_none();
                (r.pages, ok)
            })
            .collect()
    }

    fn exiting(&self, mm: usize) -> bool {
        self.w.proc(mm).end_ns.is_some()
    }

    /// Simplification: PTE mode only (`knuma_scand/pmd`, one hint per PMD, is not
    /// modelled); every present PTE costs `pte_update_ns`, a THP's PMD one.
    fn scan_pmd(&mut self, mm: usize, vma: usize, a: u64, b: u64, counts: &mut [u64]) -> u64 {
        let obj = self.w.proc(mm).regions[vma].obj;
        // page_mapcount != 1: mapped by several processes (per mapping object here).
        let shared = self.w.obj_refs(obj) > 1;
        let pte_ns = self.w.machine().spec.costs.pte_update_ns;
        let o = self.w.object_mut(obj);
        let c = a / CHUNK;
        if o.chunk_populated(c) == 0 {
            return 0;
        }
        let mut visited = 0u64;
        let mut progress = 0;
        let (mut ptes, mut huge) = (0, 0);
        if o.is_huge(c) {
            let head = c * CHUNK;
            let len = o.chunk_len(c);
            visited += 1;
            progress = CHUNK;
            if !shared {
                let n = o.node_of(head).expect("populated THP");
                counts[PageAutonuma(o.cpupid(head)).page_migrate_nid(n)] += len;
                if o.set_prot(head) {
                    ptes += len;
                    huge += 1;
                }
            }
        } else {
            for q in a..b {
                let Some(n) = o.node_of(q) else {
                    continue;
                };
                visited += 1;
                if shared {
                    continue;
                }
                counts[PageAutonuma(o.cpupid(q)).page_migrate_nid(n)] += 1;
                if o.set_prot(q) {
                    progress += 1;
                    ptes += 1;
                }
            }
        }
        self.w.vmstat().numa_pte_updates += ptes;
        self.w.vmstat().numa_huge_pte_updates += huge;
        self.aa.step_ns += visited as f64 * pte_ns;
        progress
    }

    fn flush_tlb_range(&mut self, _mm: usize, _vma: usize, start: u64, end: u64) {
        if end > start {
            let ns = self.w.machine().spec.costs.tlb_shootdown_ns;
            self.aa.step_ns += ns;
        }
    }

    fn mm_pass_start(&mut self, mm: usize) {
        self.aa.mms[mm].mm_numa_fault_pass += 1;
    }

    fn mm_pass_done(&mut self, mm: usize, counts: &[u64]) {
        self.aa.mms[mm].flush(counts);
    }
}

impl KernelHooks for AutoNuma2012 {
    fn process_start(&mut self, w: &mut World, pidx: usize) {
        self.aa_new_process(w, pidx);
    }
    fn sched_fork(&mut self, w: &mut World, t: usize, _parent: Option<usize>) {
        self.aa_new_task(w, t);
    }
    fn process_exit(&mut self, _w: &mut World, pidx: usize) {
        self.aa_exit_process(pidx);
    }
    fn object_release(&mut self, w: &mut World, obj: usize) {
        self.aa_release_object(w, obj);
    }
    fn tick(&mut self, w: &mut World) {
        self.aa_tick(w);
    }
    fn after_load_balance(&mut self, w: &mut World) {
        self.aa_sched_balance(w);
    }
    fn hinting(&self) -> bool {
        true
    }
    fn hinting_fault(&mut self, w: &mut World, t: usize, cpu: usize, ri: usize, page: u64) -> f64 {
        self.aa_fault(w, t, cpu, ri, page)
    }
    fn can_migrate_task(&self, _w: &World, ctx: &LbCtx) -> CanMigrate {
        self.aa_can_migrate(ctx)
    }
}

impl KernelModel for AutoNuma2012 {
    fn name(&self) -> Option<&'static str> {
        Some("autonuma-2012")
    }
    fn metrics(&self, m: &mut Metrics) {
        m.scan_cpu_s = self.scan_ns / NS;
        m.scan_cpu_hidden_s = self.scan_hidden_ns / NS;
    }
    fn report(&self, w: &World) -> KernelReport {
        let pids: Vec<u32> = w.task_pids();
        KernelReport {
            numa_balancing: Some(NumaBalancingReport {
                stats: NumabStats::default(),
                trace: self.trace.events.clone(),
                autonuma_2012: Some(self.aa.report(&pids)),
            }),
            stable: None,
        }
    }
}
