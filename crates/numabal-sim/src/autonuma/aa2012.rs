//! The original AutoNUMA (Andrea Arcangeli, 2012): the pure parts, with the patch set's
//! names (`mm/autonuma.c`, `kernel/sched/numa.c`, `Documentation/vm/autonuma.txt`; research
//! notes §7, the AutoNUMA benchmark table (2012)). The engine drives them (`engine/aa2012.rs`).
//!
//! ```text
//!  knuma_scand (one global kthread)          NUMA hinting fault (task context)
//!   every scan_sleep_millisecs: scan           last_nid_set: false-sharing filter
//!   pages_to_scan of the next mm, mark   ──►   memory follows CPU: queue the page on
//!   PTEs NUMA, count mm_autonuma              knuma_migratedN's list [page_nid]
//!   pass done: sleep scan_sleep_pass          CPU follows memory: task_autonuma
//!        │                                          │
//!        ▼                                          ▼
//!  knuma_migratedN (one per node)            sched_autonuma_balance (SCHED_SOFTIRQ)
//!   round robin over source nodes,             task/mm weights, exchange with the
//!   pages_to_migrate per migrate_sleep         running task of a remote CPU;
//!                                              task_selected_nid biases CFS
//! ```

use std::collections::VecDeque;

/// `AUTONUMA_BALANCE_SCALE`: weights are in thousandths.
pub const AUTONUMA_BALANCE_SCALE: u64 = 1000;

const NID_NONE: u32 = 0xffff;
/// In the `autonuma_migrate_nid` field: isolated by knuma_migrated (off the LRU, being
/// migrated; `autonuma_migrate_nid` is -1).
const NID_ISOLATED: u32 = 0xfffe;

/// `page_autonuma` of one page (or THP), packed in the page's 32-bit slot that the Linux
/// 6.x model uses for `last_cpupid`: `autonuma_last_nid` in the low 16 bits,
/// `autonuma_migrate_nid` (the knuma_migrated queue the page is on) in the high 16 bits,
/// `0xffff` for -1. A fresh page holds all ones: both -1, as `page_autonuma` starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageAutonuma(pub u32);

impl PageAutonuma {
    /// Both fields -1.
    pub const UNSET: PageAutonuma = PageAutonuma(u32::MAX);

    /// `autonuma_last_nid`.
    pub fn last_nid(self) -> Option<usize> {
        let v = self.0 & 0xffff;
        (v != NID_NONE).then_some(v as usize)
    }

    /// `autonuma_migrate_nid`.
    pub fn migrate_nid(self) -> Option<usize> {
        let v = self.0 >> 16;
        (v != NID_NONE && v != NID_ISOLATED).then_some(v as usize)
    }

    /// Isolated by knuma_migrated for migration (not on the LRU).
    pub fn is_isolated(self) -> bool {
        self.0 >> 16 == NID_ISOLATED
    }

    /// Taken off the queue and isolated.
    pub fn isolated(self) -> PageAutonuma {
        PageAutonuma((self.0 & 0xffff) | (NID_ISOLATED << 16))
    }

    /// With `autonuma_last_nid` set.
    pub fn with_last_nid(self, n: Option<usize>) -> PageAutonuma {
        let v = n.map_or(NID_NONE, |n| n as u32);
        PageAutonuma((self.0 & 0xffff_0000) | v)
    }

    /// With `autonuma_migrate_nid` set.
    pub fn with_migrate_nid(self, n: Option<usize>) -> PageAutonuma {
        let v = n.map_or(NID_NONE, |n| n as u32);
        PageAutonuma((self.0 & 0xffff) | (v << 16))
    }

    /// `page_migrate_nid`: where the page is queued to go, else where it is.
    pub fn page_migrate_nid(self, page_nid: usize) -> usize {
        self.migrate_nid().unwrap_or(page_nid)
    }
}

/// What `numa_hinting_fault_memory_follow_cpu` decided for one fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowCpu {
    /// The page's new `page_autonuma`.
    pub page: PageAutonuma,
    /// The node the fault is accounted to in `task_autonuma` (`access_nid`): the
    /// faulting CPU's node when the filter passed, else the page's node.
    pub access_nid: usize,
    /// The page left the queue of this knuma_migrated (cancelled by false sharing, or
    /// now local).
    pub dequeued_from: Option<usize>,
    /// The page joins the queue of this knuma_migrated (list of its current node).
    pub queue_to: Option<usize>,
    /// `last_nid_set` refused: the previous fault came from another node.
    pub rejected: bool,
}

/// `last_nid_set` + `numa_hinting_fault_memory_follow_cpu` for a fault from `this_nid` on
/// a page on `page_nid`. `may_queue` is false when the page must not move to `this_nid`
/// (the faulting task's cpuset). A page isolated by knuma_migrated is not on the LRU: the
/// filter still records the fault, but it is accounted on the page's node.
///
/// The false-sharing filter: a fault is acted on only if the previous hinting fault on
/// the page came from the same node (or none was recorded: a new page migrates on its
/// first fault); otherwise a pending migration is cancelled. `last_nid` always becomes
/// `this_nid`. A remote page that passes is queued for `this_nid`'s knuma_migrated; a
/// local one leaves any queue.
pub fn memory_follow_cpu(
    pa: PageAutonuma,
    this_nid: usize,
    page_nid: usize,
    may_queue: bool,
) -> FollowCpu {
    let last = pa.last_nid();
    let queued = pa.migrate_nid();
    let pass = last.is_none_or(|l| l == this_nid);
    let mut page = pa.with_last_nid(Some(this_nid));
    if queued.is_some() && !pass {
        page = page.with_migrate_nid(None);
    }
    if !pass || pa.is_isolated() {
        return FollowCpu {
            page,
            access_nid: page_nid,
            dequeued_from: queued,
            queue_to: None,
            rejected: !pass,
        };
    }
    let (mut dequeued_from, mut queue_to) = (None, None);
    if this_nid != page_nid {
        if !may_queue {
            return FollowCpu {
                page,
                access_nid: page_nid,
                dequeued_from: None,
                queue_to: None,
                rejected: false,
            };
        }
        // autonuma_migrate_page_add: nothing to do if already queued there.
        if queued != Some(this_nid) {
            dequeued_from = queued;
            queue_to = Some(this_nid);
            page = page.with_migrate_nid(Some(this_nid));
        }
    } else {
        dequeued_from = queued;
        page = page.with_migrate_nid(None);
    }
    FollowCpu {
        page,
        access_nid: this_nid,
        dequeued_from,
        queue_to,
        rejected: false,
    }
}

/// `task_autonuma`: per-thread statistics from its hinting faults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskAutonuma {
    /// `task_selected_nid` (-1: none), set by `sched_autonuma_balance`.
    pub task_selected_nid: Option<usize>,
    /// `task_numa_fault_pass`: the mm's knuma_scand pass of the last fault.
    pub task_numa_fault_pass: u64,
    /// `task_numa_fault[nid]`, pages.
    pub task_numa_fault: Vec<u64>,
    /// `task_numa_fault_tot`.
    pub task_numa_fault_tot: u64,
}

impl TaskAutonuma {
    /// `task_autonuma_reset` (new tasks start empty: `AUTONUMA_SCHED_RESET_FLAG`).
    pub fn new(nr_nodes: usize) -> TaskAutonuma {
        TaskAutonuma {
            task_selected_nid: None,
            task_numa_fault_pass: 0,
            task_numa_fault: vec![0; nr_nodes],
            task_numa_fault_tot: 0,
        }
    }

    /// `numa_hinting_fault_cpu_follow_memory`: on the task's first fault in a new pass of
    /// its mm (`mm_pass`), halve the counters (`cpu_follow_memory_pass`); then count
    /// `pages` on `access_nid`.
    pub fn fault(&mut self, access_nid: usize, pages: u64, mm_pass: u64) {
        if self.task_numa_fault_pass != mm_pass {
            for f in &mut self.task_numa_fault {
                *f >>= 1;
            }
            self.task_numa_fault_tot >>= 1;
            self.task_numa_fault_pass = mm_pass;
        }
        self.task_numa_fault[access_nid] += pages;
        self.task_numa_fault_tot += pages;
    }
}

/// `mm_autonuma`: per-process working set by node, from knuma_scand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MmAutonuma {
    /// `mm_numa_fault_pass`: knuma_scand passes over this mm begun.
    pub mm_numa_fault_pass: u64,
    /// `mm_numa_fault[nid]`: anonymous pages (by `page_migrate_nid`), decayed.
    pub mm_numa_fault: Vec<u64>,
    /// `mm_numa_fault_tot`.
    pub mm_numa_fault_tot: u64,
}

impl MmAutonuma {
    /// A new mm: nothing counted (`mm_numa_fault_tot` 0 until its first full scan).
    pub fn new(nr_nodes: usize) -> MmAutonuma {
        MmAutonuma {
            mm_numa_fault_pass: 0,
            mm_numa_fault: vec![0; nr_nodes],
            mm_numa_fault_tot: 0,
        }
    }

    /// End of a knuma_scand pass over the mm: halve the counters and add the pass's
    /// counts (`Documentation/vm/autonuma.txt`: "dividing the total memory in half and
    /// adding the new totals"; the August 2012 `mm_numa_fault_tmp_flush` replaced them).
    pub fn flush(&mut self, pass_counts: &[u64]) {
        let mut tot = 0;
        for (f, &c) in self.mm_numa_fault.iter_mut().zip(pass_counts) {
            *f = (*f >> 1) + c;
            tot += *f;
        }
        self.mm_numa_fault_tot = tot;
    }
}

/// A weight in `AUTONUMA_BALANCE_SCALE` (the kernel raises `tot` to `fault` if a racy
/// read made it smaller).
pub fn weight(fault: u64, tot: u64) -> u64 {
    if tot == 0 {
        return 0;
    }
    fault * AUTONUMA_BALANCE_SCALE / tot.max(fault)
}

/// The running task of a CPU on another node, as `__sched_autonuma_balance` sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// Its CPU.
    pub cpu: usize,
    /// The CPU's node.
    pub nid: usize,
    /// A thread of the balancing task's own process: compare task statistics
    /// (`w_type_thread`); otherwise mm statistics.
    pub same_mm: bool,
    /// Its faults on `nid`: `task_numa_fault[nid]` of the task if `same_mm`, else
    /// `mm_numa_fault[nid]` of its mm.
    pub fault: u64,
    /// The matching total.
    pub tot: u64,
}

/// What `__sched_autonuma_balance` decided for the current task of a CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Balance {
    /// The new `task_selected_nid`.
    pub selected_nid: usize,
    /// Exchange with the task running on this candidate (index into the slice), with
    /// `this_diff + other_diff`.
    pub exchange: Option<(usize, u64)>,
}

/// `__sched_autonuma_balance` for the task running on `this_nid` with statistics `task`
/// in an mm with `mm`, against the running tasks of the CPUs of other nodes
/// (`candidates`, in node then CPU order; the caller has left out idle CPUs, CPUs with an
/// exchange pending and tasks not allowed on this CPU).
///
/// No faults yet, or no full scan of the mm: select this node. If this node has the
/// largest task weight and the largest mm weight: select it. Otherwise pick the candidate
/// with the largest `this_diff + other_diff` where both are positive: `this_diff` =
/// (weight on the candidate's node) - (weight here), `other_diff` = (weight on the
/// candidate's node) - (the candidate's own weight there), task weights between threads of
/// one process, mm weights otherwise; ties keep the first. The selected node is the
/// chosen candidate's, else this node.
pub fn sched_autonuma_balance(
    this_nid: usize,
    task: &TaskAutonuma,
    mm: &MmAutonuma,
    candidates: &[Candidate],
) -> Balance {
    let stay = Balance {
        selected_nid: this_nid,
        exchange: None,
    };
    if mm.mm_numa_fault_tot == 0 || task.task_numa_fault_tot == 0 {
        return stay;
    }
    let nn = task.task_numa_fault.len();
    let task_w: Vec<u64> = (0..nn)
        .map(|n| weight(task.task_numa_fault[n], task.task_numa_fault_tot))
        .collect();
    let mm_w: Vec<u64> = (0..nn)
        .map(|n| weight(mm.mm_numa_fault[n], mm.mm_numa_fault_tot))
        .collect();
    // Argmax with a strict `>` from 0: ties go to the lower node, all-zero selects none.
    let argmax = |w: &[u64]| {
        let mut best = (0, None);
        for (n, &x) in w.iter().enumerate() {
            if x > best.0 {
                best = (x, Some(n));
            }
        }
        best.1
    };
    if argmax(&task_w) == Some(this_nid) && argmax(&mm_w) == Some(this_nid) {
        return stay;
    }
    let mut best: Option<(usize, u64)> = None;
    for (i, c) in candidates.iter().enumerate() {
        if c.nid == this_nid || c.tot == 0 {
            continue;
        }
        let w_other = weight(c.fault, c.tot) as i64;
        let (w_nid, w_this) = if c.same_mm {
            (task_w[c.nid] as i64, task_w[this_nid] as i64)
        } else {
            (mm_w[c.nid] as i64, mm_w[this_nid] as i64)
        };
        let other_diff = w_nid - w_other;
        let this_diff = w_nid - w_this;
        if other_diff > 0 && this_diff > 0 {
            let d = (other_diff + this_diff) as u64;
            if best.is_none_or(|(_, b)| d > b) {
                best = Some((i, d));
            }
        }
    }
    match best {
        Some((i, d)) => Balance {
            selected_nid: candidates[i].nid,
            exchange: Some((i, d)),
        },
        None => stay,
    }
}

/// One page (or THP) on a knuma_migrated list: the memory object and the page (a THP's
/// first page).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueuedPage {
    /// Memory object.
    pub obj: usize,
    /// Page.
    pub page: u64,
}

/// A knuma_migratedN's lists: `pgdat->autonuma_migrate_head[src_nid]` (pages on node
/// `src_nid` waiting to come to this node) and `autonuma_nr_migrate_pages`.
///
/// Entries are removed lazily: cancelling a queued page only clears its
/// `autonuma_migrate_nid` and lowers the count; `isolate` drops entries whose page is no
/// longer queued here (the caller's `take` says so). A page cancelled and queued again is
/// found at its older position.
#[derive(Debug, Clone, Default)]
pub struct MigrateQueue {
    /// Per source node, newest first (`list_add`); isolation takes the oldest.
    pub heads: Vec<VecDeque<QueuedPage>>,
    /// `autonuma_nr_migrate_pages`: base pages queued.
    pub nr_migrate_pages: u64,
}

impl MigrateQueue {
    /// Empty lists for `nr_nodes` source nodes.
    pub fn new(nr_nodes: usize) -> MigrateQueue {
        MigrateQueue {
            heads: vec![VecDeque::new(); nr_nodes],
            nr_migrate_pages: 0,
        }
    }

    /// `__autonuma_migrate_page_add`: queue `nr` pages from `src`. Returns whether the
    /// count crossed `pages_to_migrate` (the point where the daemon is woken).
    pub fn add(&mut self, src: usize, p: QueuedPage, nr: u64, pages_to_migrate: u64) -> bool {
        self.heads[src].push_front(p);
        let before = self.nr_migrate_pages;
        self.nr_migrate_pages += nr;
        self.nr_migrate_pages >= pages_to_migrate && before < pages_to_migrate
    }

    /// `__autonuma_migrate_page_remove` of `nr` pages (the entry stays until isolation
    /// skips it).
    pub fn remove(&mut self, nr: u64) {
        self.nr_migrate_pages = self.nr_migrate_pages.saturating_sub(nr);
    }

    /// `knumad_do_migrate`'s isolation loop for destination `dst`: while
    /// `balanced(pages isolated so far)` (`autonuma_balance_pgdat`), take the oldest entry
    /// of each source list in node order (`isolate_migratepages`: one per list per round),
    /// until `pages_to_migrate` pages or nothing is left. `take(src, entry)` returns the
    /// pages of an entry still queued here (and dequeues the page), or `None` for a stale
    /// entry, which is dropped. Returns (source node, entry, pages) in isolation order.
    pub fn isolate(
        &mut self,
        dst: usize,
        pages_to_migrate: u64,
        mut take: impl FnMut(usize, QueuedPage) -> Option<u64>,
        mut balanced: impl FnMut(u64) -> bool,
    ) -> Vec<(usize, QueuedPage, u64)> {
        let mut out = Vec::new();
        let mut nr = 0;
        loop {
            if !balanced(nr) {
                break;
            }
            let mut isolated = 0;
            for src in 0..self.heads.len() {
                if src == dst {
                    continue;
                }
                while let Some(e) = self.heads[src].pop_back() {
                    if let Some(n) = take(src, e) {
                        self.nr_migrate_pages = self.nr_migrate_pages.saturating_sub(n);
                        isolated += n;
                        out.push((src, e, n));
                        break;
                    }
                }
            }
            if isolated == 0 {
                break;
            }
            nr += isolated;
            if nr >= pages_to_migrate {
                break;
            }
        }
        out
    }
}

/// What knuma_scand's walk needs from the address spaces it scans.
pub trait ScanEnv {
    /// The VMAs of `mm` in address order: (pages, scannable). Not scannable: no
    /// `anon_vma` (file mappings) or a VMA memory policy (`vma_policy`).
    fn vmas(&self, mm: usize) -> Vec<(u64, bool)>;
    /// `knumad_test_exit`: the mm is going away.
    fn exiting(&self, mm: usize) -> bool;
    /// `knuma_scand_pmd` over pages `[start, end)` (within one 2 MiB PMD) of VMA `vma`:
    /// count each present, unshared page in `counts[page_migrate_nid]` and mark it NUMA
    /// unless it already is; returns the progress: pages newly marked (a THP: always
    /// `HPAGE_PMD_NR`).
    fn scan_pmd(&mut self, mm: usize, vma: usize, start: u64, end: u64, counts: &mut [u64]) -> u64;
    /// `flush_tlb_range` after a VMA's part was scanned in one step.
    fn flush_tlb_range(&mut self, mm: usize, vma: usize, start: u64, end: u64);
    /// knuma_scand starts a pass over `mm` (`mm_numa_fault_pass++`).
    fn mm_pass_start(&mut self, mm: usize);
    /// knuma_scand finished a pass over `mm` (`mm_numa_fault_tmp_flush`).
    fn mm_pass_done(&mut self, mm: usize, counts: &[u64]);
}

/// Where knuma_scand is in its loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScandPhase {
    /// Between steps of a pass (`scan_sleep_millisecs`), or ready to start one.
    Scan,
    /// First half of the sleep after a pass; at its end knuma_migrated is woken.
    PassSleepFirstHalf,
    /// Second half of the sleep after a pass.
    PassSleepSecondHalf,
}

/// What a knuma_scand wakeup did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScandRun {
    /// Scanned; a pass ended if `pass_done`.
    Scanned {
        /// `full_scans` was incremented.
        pass_done: bool,
    },
    /// Mid-pass-sleep: `wake_up_knuma_migrated` (flush the lists below
    /// `pages_to_migrate`).
    WakeMigrated,
}

/// knuma_scand: `knuma_scand_data` and its loop.
#[derive(Debug, Clone)]
pub struct KnumaScand {
    /// `knuma_scand_data.mm_head`: registered mms (process indices), in fork order.
    pub mm_head: Vec<usize>,
    /// The mm being scanned (`None` between passes).
    pub mm: Option<usize>,
    /// Where in it: (VMA, page).
    pub address: (usize, u64),
    /// `mm_numa_fault_tmp`: this pass's counts for the current mm.
    pub fault_tmp: Vec<u64>,
    /// Progress since the last sleep.
    pub progress: u64,
    /// Progress in the current pass.
    pub total_progress: u64,
    /// Sysfs `full_scans`.
    pub full_scans: u64,
    /// Sysfs `pages_scanned` (progress of completed passes).
    pub pages_scanned: u64,
    /// Wakeups that scanned.
    pub steps: u64,
    /// Loop position.
    pub phase: ScandPhase,
    /// ns: next wakeup.
    pub wake_at: u64,
}

/// knuma_scand's tunables, in pages and ns.
#[derive(Debug, Clone, Copy)]
pub struct ScandTunables {
    /// `pages_to_scan`.
    pub pages_to_scan: u64,
    /// `scan_sleep_millisecs`, ns.
    pub scan_sleep_ns: u64,
    /// `scan_sleep_pass_millisecs`, ns.
    pub scan_sleep_pass_ns: u64,
}

/// `HPAGE_PMD_NR`.
const PMD_PAGES: u64 = crate::memory::CHUNK;

impl KnumaScand {
    /// A knuma_scand that wakes first at `wake_at` and starts a pass.
    pub fn new(nr_nodes: usize, wake_at: u64) -> KnumaScand {
        KnumaScand {
            mm_head: Vec::new(),
            mm: None,
            address: (0, 0),
            fault_tmp: vec![0; nr_nodes],
            progress: 0,
            total_progress: 0,
            full_scans: 0,
            pages_scanned: 0,
            steps: 0,
            phase: ScandPhase::PassSleepSecondHalf,
            wake_at,
        }
    }

    /// `autonuma_exit`: forget an mm unless knuma_scand is in it (then the next step
    /// finds it exiting and moves on).
    pub fn mm_exit(&mut self, mm: usize) {
        if self.mm != Some(mm) {
            self.mm_head.retain(|&m| m != mm);
        }
    }

    /// `knumad_do_scan`: scan the current mm (starting the next pass if none) until
    /// `pages_to_scan` progress or the end of the mm. Returns the progress.
    pub fn do_scan(&mut self, env: &mut impl ScanEnv, pages_to_scan: u64) -> u64 {
        let mm = match self.mm {
            Some(m) => m,
            None => {
                let Some(&m) = self.mm_head.first() else {
                    return pages_to_scan;
                };
                self.mm = Some(m);
                self.address = (0, 0);
                env.mm_pass_start(m);
                m
            }
        };
        let exiting = env.exiting(mm);
        let vmas = if exiting { Vec::new() } else { env.vmas(mm) };
        let (mut vi, mut addr) = self.address;
        let mut progress = 1;
        // The kernel's `for` steps to `vm_next` even when the budget ran out inside a VMA
        // and ends the mm if that was the last VMA; a real address space ends with the
        // stack, so that never cuts a pass short. The model has no stack VMA and resumes
        // at the saved address instead.
        while vi < vmas.len() && progress < pages_to_scan {
            let (pages, scannable) = vmas[vi];
            if !scannable || addr >= pages {
                if !scannable {
                    progress += 1;
                }
                vi += 1;
                addr = 0;
                continue;
            }
            let start = addr;
            while addr < pages {
                let end = ((addr / PMD_PAGES + 1) * PMD_PAGES).min(pages);
                progress += env.scan_pmd(mm, vi, addr, end, &mut self.fault_tmp);
                addr = end;
                if progress >= pages_to_scan {
                    break;
                }
            }
            env.flush_tlb_range(mm, vi, start, addr);
            if addr >= pages {
                vi += 1;
                addr = 0;
            }
        }
        self.address = (vi, addr);
        if exiting || vi >= vmas.len() {
            let pos = self.mm_head.iter().position(|&m| m == mm);
            let next = pos.and_then(|p| self.mm_head.get(p + 1)).copied();
            if exiting {
                self.mm_head.retain(|&m| m != mm);
            } else {
                env.mm_pass_done(mm, &self.fault_tmp);
            }
            self.fault_tmp.iter_mut().for_each(|c| *c = 0);
            self.mm = next;
            self.address = (0, 0);
            if let Some(n) = next {
                env.mm_pass_start(n);
            }
        }
        progress
    }

    /// One wakeup of knuma_scand at `now` (at or after `wake_at`): the body of its loop
    /// until it sleeps again. Scans in `do_scan` calls until more than `pages_to_scan`
    /// progress (then sleeps `scan_sleep_millisecs`) or the end of a pass (then sleeps
    /// `scan_sleep_pass_millisecs`, in two halves with `wake_up_knuma_migrated` between).
    pub fn run(&mut self, env: &mut impl ScanEnv, now: u64, tun: ScandTunables) -> ScandRun {
        let half = tun.scan_sleep_pass_ns / 2;
        if self.phase == ScandPhase::PassSleepFirstHalf {
            self.phase = ScandPhase::PassSleepSecondHalf;
            self.wake_at = now + half;
            return ScandRun::WakeMigrated;
        }
        self.steps += 1;
        loop {
            let p = self.do_scan(env, tun.pages_to_scan);
            self.progress += p;
            self.total_progress += p;
            if self.mm.is_none() {
                self.pages_scanned += self.total_progress;
                self.total_progress = 0;
                self.full_scans += 1;
                self.phase = ScandPhase::PassSleepFirstHalf;
                self.wake_at = now + half;
                return ScandRun::Scanned { pass_done: true };
            }
            if self.progress > tun.pages_to_scan {
                self.progress = 0;
                self.phase = ScandPhase::Scan;
                self.wake_at = now + tun.scan_sleep_ns;
                return ScandRun::Scanned { pass_done: false };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_autonuma_packing() {
        let p = PageAutonuma::UNSET;
        assert_eq!((p.last_nid(), p.migrate_nid()), (None, None));
        let p = p.with_last_nid(Some(3)).with_migrate_nid(Some(1));
        assert_eq!((p.last_nid(), p.migrate_nid()), (Some(3), Some(1)));
        assert_eq!(p.page_migrate_nid(0), 1);
        let p = p.with_migrate_nid(None);
        assert_eq!((p.last_nid(), p.migrate_nid()), (Some(3), None));
        assert_eq!(p.page_migrate_nid(0), 0);
        assert_eq!(p.with_last_nid(None), PageAutonuma::UNSET);
    }

    /// The last_nid false-sharing filter, every case of (last_nid, queued, this, page).
    #[test]
    fn last_nid_filter_truth_table() {
        let pa = |last: Option<usize>, mig: Option<usize>| {
            PageAutonuma::UNSET
                .with_last_nid(last)
                .with_migrate_nid(mig)
        };
        // (last_nid, migrate_nid, this_nid, page_nid) ->
        // (access_nid, dequeued_from, queue_to, rejected, new last, new migrate)
        #[allow(clippy::type_complexity)]
        let cases: &[(
            (Option<usize>, Option<usize>, usize, usize),
            (
                usize,
                Option<usize>,
                Option<usize>,
                bool,
                Option<usize>,
                Option<usize>,
            ),
        )] = &[
            // First fault on a new page, remote: queued at once (no second fault needed).
            (
                (None, None, 1, 0),
                (1, None, Some(1), false, Some(1), Some(1)),
            ),
            // First fault, local: nothing to do.
            ((None, None, 0, 0), (0, None, None, false, Some(0), None)),
            // Second consecutive remote fault from the same node: queued.
            (
                (Some(1), None, 1, 0),
                (1, None, Some(1), false, Some(1), Some(1)),
            ),
            // ...already queued there: stays where it is.
            (
                (Some(1), Some(1), 1, 0),
                (1, None, None, false, Some(1), Some(1)),
            ),
            // Remote fault after a fault from another node: refused, last_nid
            // overwritten, accounted on the page's node.
            ((Some(0), None, 1, 0), (0, None, None, true, Some(1), None)),
            // ...and a pending migration to node 2 is cancelled (false sharing).
            (
                (Some(2), Some(2), 1, 0),
                (0, Some(2), None, true, Some(1), None),
            ),
            // Local fault after a remote one: refused too (the filter runs first).
            (
                (Some(1), Some(1), 0, 0),
                (0, Some(1), None, true, Some(0), None),
            ),
            // Local fault from the same node as last time with a stale queue: dequeued.
            (
                (Some(0), Some(1), 0, 0),
                (0, Some(1), None, false, Some(0), None),
            ),
            // Remote, same node as last, but queued for another node: moved over.
            (
                (Some(2), Some(1), 2, 0),
                (2, Some(1), Some(2), false, Some(2), Some(2)),
            ),
        ];
        for &((last, mig, this, page), want) in cases {
            let r = memory_follow_cpu(pa(last, mig), this, page, true);
            let got = (
                r.access_nid,
                r.dequeued_from,
                r.queue_to,
                r.rejected,
                r.page.last_nid(),
                r.page.migrate_nid(),
            );
            assert_eq!(
                got, want,
                "last {last:?} queued {mig:?} this {this} page {page}"
            );
        }
        // Isolated by knuma_migrated (off the LRU): recorded, not queued, accounted on
        // the page's node; the isolation mark stays.
        let iso = pa(Some(1), None).isolated();
        assert!(iso.is_isolated() && iso.migrate_nid().is_none());
        let r = memory_follow_cpu(iso, 1, 0, true);
        assert_eq!((r.access_nid, r.queue_to, r.rejected), (0, None, false));
        assert!(r.page.is_isolated());
        let r = memory_follow_cpu(iso, 0, 0, true);
        assert_eq!(
            (r.access_nid, r.rejected, r.page.last_nid()),
            (0, true, Some(0))
        );
        assert!(r.page.is_isolated());
        // Not allowed to go to this node: the filter still records it, nothing queued.
        let r = memory_follow_cpu(pa(None, None), 1, 0, false);
        assert_eq!((r.access_nid, r.queue_to, r.rejected), (0, None, false));
        assert_eq!(r.page.last_nid(), Some(1));
    }

    #[test]
    fn task_stats_halve_once_per_pass() {
        let mut t = TaskAutonuma::new(2);
        t.fault(0, 100, 1);
        t.fault(1, 50, 1);
        assert_eq!(
            (t.task_numa_fault.clone(), t.task_numa_fault_tot),
            (vec![100, 50], 150)
        );
        // First fault of pass 2 halves, the next does not.
        t.fault(1, 10, 2);
        assert_eq!(
            (t.task_numa_fault.clone(), t.task_numa_fault_tot),
            (vec![50, 35], 85)
        );
        t.fault(1, 1, 2);
        assert_eq!(
            (t.task_numa_fault.clone(), t.task_numa_fault_tot),
            (vec![50, 36], 86)
        );
        let mut m = MmAutonuma::new(2);
        m.flush(&[1000, 0]);
        m.flush(&[0, 1000]);
        assert_eq!(
            (m.mm_numa_fault.clone(), m.mm_numa_fault_tot),
            (vec![500, 1000], 1500)
        );
    }

    fn task(faults: &[u64]) -> TaskAutonuma {
        let mut t = TaskAutonuma::new(faults.len());
        t.task_numa_fault = faults.to_vec();
        t.task_numa_fault_tot = faults.iter().sum();
        t
    }

    fn mm(faults: &[u64]) -> MmAutonuma {
        let mut m = MmAutonuma::new(faults.len());
        m.mm_numa_fault = faults.to_vec();
        m.mm_numa_fault_tot = faults.iter().sum();
        m
    }

    /// A hand-worked exchange: a thread on node 0 whose faults are 30/70 (task weights 300,
    /// 700) in a process with 40/60 of its memory on nodes 0/1 (mm weights 400, 600).
    #[test]
    fn weights_and_exchange_choice() {
        assert_eq!(weight(1, 3), 333);
        assert_eq!(weight(5, 4), 1000);
        assert_eq!(weight(0, 0), 0);
        let t = task(&[30, 70]);
        let m = mm(&[400, 600]);
        let c = |cpu, same_mm, fault, tot| Candidate {
            cpu,
            nid: 1,
            same_mm,
            fault,
            tot,
        };
        let cands = [
            // A sibling thread at 800 on node 1: other_diff = 700 - 800 < 0.
            c(6, true, 80, 100),
            // A sibling at 500: this_diff = 700 - 300 = 400, other_diff = 200: 600.
            c(7, true, 50, 100),
            // Another process with 550 of its memory on node 1: mm weights,
            // this_diff = 600 - 400 = 200, other_diff = 50: 250.
            c(8, false, 550, 1000),
            // Another process at 100 on node 1: 200 + 500 = 700, the best.
            c(9, false, 100, 1000),
            // Equal total later: the first is kept.
            c(10, false, 100, 1000),
            // No statistics: skipped.
            c(11, false, 0, 0),
        ];
        let b = sched_autonuma_balance(0, &t, &m, &cands);
        assert_eq!(
            b,
            Balance {
                selected_nid: 1,
                exchange: Some((3, 700))
            }
        );
        // Converged here (both maxima on node 0): stay, no search.
        let b = sched_autonuma_balance(0, &task(&[70, 30]), &mm(&[600, 400]), &cands);
        assert_eq!(b.exchange, None);
        assert_eq!(b.selected_nid, 0);
        // Task here but mm elsewhere: search; nobody qualifies -> stay selected here.
        let b = sched_autonuma_balance(0, &task(&[70, 30]), &m, &cands[..2]);
        assert_eq!(b.exchange, None);
        assert_eq!(b.selected_nid, 0);
        // No full scan of the mm yet, or no faults: select the current node.
        let b = sched_autonuma_balance(1, &t, &mm(&[0, 0]), &cands);
        assert_eq!((b.selected_nid, b.exchange), (1, None));
        let b = sched_autonuma_balance(1, &task(&[0, 0]), &m, &cands);
        assert_eq!((b.selected_nid, b.exchange), (1, None));
    }

    /// knuma_migrated takes one page per source list per round, oldest first, and stops
    /// at `pages_to_migrate` (after the round that reaches it) or when the destination
    /// is short of memory.
    #[test]
    fn knuma_migrated_round_robin_and_rate_limit() {
        let mut q = MigrateQueue::new(4);
        let pg = |obj, page| QueuedPage { obj, page };
        let mut woke = Vec::new();
        for i in 0..5 {
            woke.push(q.add(0, pg(0, i), 1, 12));
            woke.push(q.add(1, pg(1, i), 1, 12));
            woke.push(q.add(3, pg(3, i), 1, 12));
        }
        assert_eq!(q.nr_migrate_pages, 15);
        // Woken once, when the count reached 12.
        assert_eq!(woke.iter().filter(|&&w| w).count(), 1);
        assert!(woke[11]);
        // Page (1, 1) was cancelled (false sharing): its entry is stale.
        q.remove(1);
        let take = |_src: usize, p: QueuedPage| (p != pg(1, 1)).then_some(1);
        let got = q.isolate(2, 4, take, |_| true);
        let order: Vec<(usize, u64)> = got.iter().map(|&(s, p, _)| (s, p.page)).collect();
        // Round 1: the oldest of nodes 0, 1, 3 (3 pages < 4); round 2: the next ones,
        // skipping the cancelled page of node 1: 6 pages >= 4, stop.
        assert_eq!(order, vec![(0, 0), (1, 0), (3, 0), (0, 1), (1, 2), (3, 1)]);
        assert_eq!(q.nr_migrate_pages, 14 - 6);
        // Destination short of memory after 2 pages (autonuma_balance_pgdat).
        let got = q.isolate(2, 100, |_, _| Some(1), |nr| nr < 2);
        assert_eq!(got.len(), 3, "one round of three, then the check fails");
        // Drain: stops when nothing is left.
        let got = q.isolate(2, 100, |_, _| Some(1), |_| true);
        assert_eq!(got.len(), 5);
        assert_eq!(q.nr_migrate_pages, 0);
        assert!(q.isolate(2, 100, |_, _| Some(1), |_| true).is_empty());
    }

    /// A fake address space: every page present; marks kept per page.
    struct Fake {
        mms: Vec<Vec<(u64, bool)>>,
        marked: Vec<Vec<Vec<bool>>>,
        gone: Vec<bool>,
        starts: Vec<usize>,
        done: Vec<(usize, Vec<u64>)>,
        flushes: u64,
    }

    impl Fake {
        fn new(mms: Vec<Vec<(u64, bool)>>) -> Fake {
            let marked = mms
                .iter()
                .map(|v| v.iter().map(|&(p, _)| vec![false; p as usize]).collect())
                .collect();
            let n = mms.len();
            Fake {
                mms,
                marked,
                gone: vec![false; n],
                starts: Vec::new(),
                done: Vec::new(),
                flushes: 0,
            }
        }
    }

    impl ScanEnv for Fake {
        fn vmas(&self, mm: usize) -> Vec<(u64, bool)> {
            self.mms[mm].clone()
        }
        fn exiting(&self, mm: usize) -> bool {
            self.gone[mm]
        }
        fn scan_pmd(&mut self, mm: usize, vma: usize, a: u64, b: u64, counts: &mut [u64]) -> u64 {
            let mut n = 0;
            for p in a..b {
                counts[0] += 1;
                let m = &mut self.marked[mm][vma][p as usize];
                if !*m {
                    *m = true;
                    n += 1;
                }
            }
            n
        }
        fn flush_tlb_range(&mut self, _: usize, _: usize, _: u64, _: u64) {
            self.flushes += 1;
        }
        fn mm_pass_start(&mut self, mm: usize) {
            self.starts.push(mm);
        }
        fn mm_pass_done(&mut self, mm: usize, counts: &[u64]) {
            self.done.push((mm, counts.to_vec()));
        }
    }

    const MS: u64 = 1_000_000;
    const GIB: u64 = 1 << 18; // pages

    fn tun(mb: u64) -> ScandTunables {
        ScandTunables {
            pages_to_scan: mb << 8,
            scan_sleep_ns: 100 * MS,
            scan_sleep_pass_ns: 10_000 * MS,
        }
    }

    /// Runs knuma_scand until `passes` full scans; returns the wakeup times that scanned.
    fn drive(s: &mut KnumaScand, env: &mut Fake, t: ScandTunables, passes: u64) -> Vec<u64> {
        let mut times = Vec::new();
        while s.full_scans < passes {
            let now = s.wake_at;
            if let ScandRun::Scanned { .. } = s.run(env, now, t) {
                times.push(now);
            }
        }
        times
    }

    /// One process with 1 GiB resident at 128 MB per step: 8 steps mark it (each stops one
    /// PMD past the budget: 1 + 64 x 512 > 32768); the 8th reaches the mm's end and so
    /// completes the pass; then 10 s of sleep. The second pass marks nothing new (no fault
    /// cleared a mark) and so walks the whole mm in one step.
    #[test]
    fn pass_timing_steps_per_pass() {
        let mut env = Fake::new(vec![vec![(GIB, true)]]);
        env.mms[0].insert(0, (100, false)); // a file mapping: progress 1, not scanned
        env.marked[0].insert(0, vec![false; 100]);
        let mut s = KnumaScand::new(2, 0);
        s.mm_head.push(0);
        let times = drive(&mut s, &mut env, tun(128), 1);
        assert_eq!(times.len(), 8);
        assert_eq!(times[7], 700 * MS);
        assert_eq!(s.pages_scanned, GIB + 8 + 1);
        assert!(env.marked[0][1].iter().all(|&m| m));
        assert!(env.marked[0][0].iter().all(|&m| !m));
        assert_eq!(env.done, vec![(0, vec![GIB, 0])]);
        assert_eq!(s.phase, ScandPhase::PassSleepFirstHalf);
        // Half a pass sleep, then knuma_migrated is woken, then the other half.
        assert_eq!(s.run(&mut env, s.wake_at, tun(128)), ScandRun::WakeMigrated);
        assert_eq!(s.wake_at, 700 * MS + 10_000 * MS);
        let times = drive(&mut s, &mut env, tun(128), 2);
        assert_eq!(times, vec![10_700 * MS]);
        assert_eq!(env.starts, vec![0, 0]);
        // 3 GiB at 512 MB per step: 6 steps.
        let mut env = Fake::new(vec![vec![(3 * GIB, true)]]);
        let mut s = KnumaScand::new(2, 0);
        s.mm_head.push(0);
        assert_eq!(drive(&mut s, &mut env, tun(512), 1).len(), 6);
    }

    /// Several mms in one pass, in registration order; a step continues into the next mm
    /// when the first ends below the budget; exiting mms are dropped (at once, or when
    /// knuma_scand next looks at the one it is in).
    #[test]
    fn pass_walks_every_mm() {
        let mut env = Fake::new(vec![
            vec![(1000, true)],
            vec![(40_000, true)],
            vec![(1000, true)],
        ]);
        let mut s = KnumaScand::new(2, 0);
        s.mm_head.extend([0, 1, 2]);
        // Step 1: mm 0 (1001 progress), then mm 1 up to the budget.
        let r = s.run(&mut env, 0, tun(128));
        assert_eq!(r, ScandRun::Scanned { pass_done: false });
        assert_eq!(s.mm, Some(1));
        assert_eq!(env.starts, vec![0, 1]);
        assert_eq!(env.done, vec![(0, vec![1000, 0])]);
        env.gone[1] = true;
        s.mm_exit(1);
        assert_eq!(s.mm_head, vec![0, 1, 2]);
        env.gone[0] = true;
        s.mm_exit(0);
        assert_eq!(s.mm_head, vec![1, 2]);
        drive(&mut s, &mut env, tun(128), 1);
        assert_eq!(s.mm_head, vec![2]);
        assert_eq!(env.starts, vec![0, 1, 2]);
        assert_eq!(env.done.iter().map(|d| d.0).collect::<Vec<_>>(), vec![0, 2]);
        assert_eq!(s.mm, None);
    }
}
