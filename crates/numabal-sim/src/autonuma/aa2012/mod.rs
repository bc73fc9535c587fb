//! The original AutoNUMA (Andrea Arcangeli, 2012): the pure parts, with the patch set's
//! names (`mm/autonuma.c`, `kernel/sched/numa.c`, `Documentation/vm/autonuma.txt`; research
//! notes §7, the AutoNUMA benchmark table (2012)). The kernel model drives them (`kernel/aa2012.rs`).
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
mod tests;
mod tunables;

pub use tunables::Tunables;
