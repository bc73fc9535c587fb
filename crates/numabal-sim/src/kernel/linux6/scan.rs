//! The scan: `task_tick_numa`'s trigger, `task_numa_work` over the VMAs (the per-VMA
//! rules of 6.4+, the cpuset skip of 6.16, the async-scan RFC's worker) and
//! `change_prot_numa`.

use super::*;
use crate::autonuma::version::KernelVersion;

impl Linux6 {
    /// `task_tick_numa` for every running task (processor sharing: all of them run).
    pub(super) fn numab_tick(&mut self, w: &mut World) {
        // CPUs' ticks are not synchronised: which thread of an mm reaches
        // `numa_next_scan` first varies, so the walk starts at a random thread.
        let n = w.nr_threads();
        if n == 0 {
            return;
        }
        let first = {
            use rand::RngExt;
            w.rng().random_range(0..n)
        };
        for k in 0..n {
            let t = (first + k) % n;
            if w.thread(t).state != TState::Runnable || w.sched().tasks[t].cpu.is_none() {
                continue;
            }
            let now_exec = w.thread(t).sum_exec_ns as u64;
            let now = w.now();
            let pidx = w.thread(t).proc;
            let nb = &mut *self;
            let tk = &nb.tasks[t];
            let period = tk.scan_period * MS;
            if now_exec <= tk.node_stamp + period {
                continue;
            }
            // The first trigger sets the period from the RSS (`period` above keeps the
            // fork-time value, as in the kernel).
            let start = (tk.node_stamp == 0).then(|| {
                let gs = nb.group_share(tk.group, w.machine().nr_nodes());
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
                    w.record_scan(Some(pidx), node, cost);
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
    pub(super) fn scan_async_worker(&mut self, w: &mut World, t: usize, cost: f64) {
        let Some(cpu) = w.sched().tasks[t].cpu else {
            return;
        };
        let backcharge = self.tun.scan_async_backcharge;
        // The task runs on `cpu`, so it shares it with at least the task unless the
        // worker found an idle CPU.
        let (wcpu, shared_with) = self.kthreads.cpu(w, cpu, w.machine().cpus[cpu].node);
        let idle = shared_with == 0;
        let outside = !w.proc(w.thread(t).proc).cpuset_cpus.contains(wcpu);
        let nb = &mut *self;
        nb.stats.async_scans += 1;
        nb.stats.async_scans_idle_cpu += idle as u64;
        nb.stats.async_scans_outside_cpuset += outside as u64;
        if backcharge {
            nb.tasks[t].node_stamp += 32 * cost as u64;
            w.charge_sys(cost);
        } else {
            nb.scan_hidden_ns += cost;
        }
        if backcharge && !idle {
            // The task, not its neighbours, gives the time up: paid like kernel work of
            // its own (it adds to its CPU time); the preempted thread still stalls.
            self.kthreads.hold(w, wcpu, cost);
            w.add_debt(t, cost);
            w.stall(cost);
        } else {
            if backcharge {
                w.add_exec(t, cost);
            }
            // On an idle CPU nobody loses anything; otherwise the worker preempts the
            // CPU's current thread and every runnable thread there loses its share.
            self.kthreads.run(w, wcpu, cost);
        }
    }

    /// Whether the VMA `ri` of process `pidx` may be scanned for task `t`, or why not.
    pub(super) fn vma_unsuitable(&self, w: &World, t: usize, ri: usize) -> Option<SkipReason> {
        let p = &w.proc(w.thread(t).proc);
        let r = &p.regions[ri];
        if r.file_ro {
            return Some(SkipReason::SharedRo);
        }
        // vma_policy_mof (mm/mempolicy.c): a VMA whose vm_ops has get_policy asks it, and
        // returns false unless the policy it gets has MPOL_F_MOF. shmem's returns its
        // shared policy, none unless mbind set one, so a shared anonymous (shmem) mapping
        // is not scanned, until the shmem fix (7.2, the 6.12 series) made no policy mean
        // the task's (the twin: perf bench's global buffer, docs/vm-tests.md).
        if r.vm_shared && !self.tun.kernel.shmem_scanned() {
            return Some(SkipReason::Unsuitable);
        }
        // Otherwise a VMA policy, or else the task's policy, must have MPOL_F_MOF; only the
        // default (local preferred) policy has it.
        if !r.ranges.is_empty() || r.wl_policy.is_some() {
            return Some(SkipReason::Unsuitable);
        }
        if w.task_policy(t).is_some_and(|p| *p != MemPolicy::Default) {
            return Some(SkipReason::Unsuitable);
        }
        None
    }

    /// `task_numa_work`'s first checks: the cpuset skip (6.16+: nothing can migrate when
    /// the cpuset allows one memory node) and `numa_next_scan`; when a scan is due, the
    /// next one is set a scan period later. False: no scan now.
    fn scan_due(&mut self, w: &World, t: usize) -> bool {
        let now = w.now();
        let pidx = w.thread(t).proc;
        let single_mem = w.proc(pidx).cpuset_mems.count() == 1;
        let tick = w.tick_ns();
        let nb = self;
        if nb.tun.cpuset_skip && nb.tun.kernel.cpuset_skip() && single_mem {
            nb.stats.cpuset_skips += 1;
            nb.trace
                .task(now, "sched_skip_cpuset_numa", t, pidx, String::new());
            return false;
        }
        let delay = nb.tun.scan_delay_ms * MS;
        let mm = &mut nb.mms[pidx];
        if mm.next_scan == 0 {
            mm.next_scan = now + delay;
        }
        if now < mm.next_scan {
            return false;
        }
        let period = nb.tasks[t].scan_period;
        nb.mms[pidx].next_scan = now + period * MS;
        nb.tasks[t].node_stamp += 2 * tick;
        nb.stats.scans += 1;
        true
    }

    /// `scan_window` (the async-scan RFC, Mel Gorman): the pages of VMA `ri` between the
    /// lowest and the highest faulting address of the previous and the current pass.
    fn fault_window(&self, pidx: usize, ri: usize, rpages: u64) -> (u64, u64) {
        let mm = &self.mms[pidx];
        match (mm.win_prev[ri], mm.win_cur[ri]) {
            (None, None) => (0, rpages),
            (a, b) => {
                let lo = a.map_or(u64::MAX, |w| w.0).min(b.map_or(u64::MAX, |w| w.0));
                let hi = a.map_or(0, |w| w.1).max(b.map_or(0, |w| w.1));
                (lo / CHUNK * CHUNK, (hi + 1).min(rpages))
            }
        }
    }

    /// `task_numa_work`: returns the CPU ns the scan took.
    pub(super) fn task_numa_work(&mut self, w: &mut World, t: usize) -> f64 {
        let now = w.now();
        let pidx = w.thread(t).proc;
        let pid = t as u32 + 1;
        let nthreads = w.proc(pidx).live as u64;
        if !self.scan_due(w, t) {
            return 0.0;
        }
        let nb = &mut *self;
        let delay = nb.tun.scan_delay_ms * MS;
        let mut pages = nb.tun.scan_pages() as i64;
        let mut virtpages = pages * 8;
        let kernel = nb.tun.kernel;
        let pid_filter = nb.tun.vma_pid_filter;
        let scan_window = nb.tun.scan_window;

        let nregions = w.proc(pidx).regions.len();
        let single_thread = w.proc(pidx).live == 1;
        let cpu_node = w.sched().tasks[t]
            .cpu
            .map_or(0, |c| w.machine().cpus[c].node);
        let k = &w.machine().spec.costs;
        let (pte_ns, tlb_ns) = (k.pte_update_ns, k.tlb_shootdown_ns);
        let mut cost = 0.0;
        let mut forced = false;
        let tier = self.tier_scan(w);
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
                let rpages = w.proc(pidx).regions[ri].pages;
                if off >= rpages {
                    ri += 1;
                    off = 0;
                    continue;
                }
                let mut skip = self.vma_unsuitable(w, t, ri);
                let nb = &mut *self;
                let mm = &mut nb.mms[pidx];
                // An informational reason: scanned although its PIDs are inactive.
                let mut scanned_anyway = None;
                if skip.is_none() {
                    let ctx = VmaCheck {
                        ri,
                        now,
                        delay,
                        pid,
                        nthreads,
                        kernel,
                        pid_filter: pid_filter && !forced,
                    };
                    (skip, scanned_anyway) = vma_numab_checks(mm, &ctx);
                    pids_skipped |= skip == Some(SkipReason::PidInactive);
                }
                if let Some(i) = scanned_anyway {
                    nb.skip_vma(now, t, pidx, i);
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
                    nb.fault_window(pidx, ri, rpages)
                } else {
                    (0, rpages)
                };
                let vm_shared = w.proc(pidx).regions[ri].vm_shared;
                let kvm_memslot = w.proc(pidx).regions[ri].kvm_memslot;
                let obj = w.proc(pidx).regions[ri].obj;
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
                    let (n, huge, visited) =
                        self.change_prot_numa(w, obj, start, end, skip_node, tier.as_ref());
                    let c = visited as f64 * pte_ns;
                    if visited > 0 && kvm_memslot {
                        self.kvm_invalidate(w, pidx);
                    }
                    if n > 0 {
                        cost += c + tlb_ns;
                        pages -= (end - start) as i64;
                        w.vmstat().numa_pte_updates += n;
                        w.vmstat().numa_huge_pte_updates += huge;
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
            if !forced && pids_skipped && kernel.scan_complete_vmas() {
                forced = true;
                continue 'retry;
            }
            let mm = &mut self.mms[pidx];
            Self::reset_scan(mm);
            break;
        }
        cost
    }

    /// What a scan does differently in memory-tiering mode (`None`: normal balancing
    /// alone, or no lower tier).
    fn tier_scan(&self, w: &World) -> Option<TierScan> {
        if !self.tun.tiering() || !w.tiering().tiers.tiered() {
            return None;
        }
        Some(TierScan {
            skip_toptier: !self.tun.normal(),
            // TPP's rule keeps its "accessed" mark in the field instead.
            stamp: !self.tun.promote_active_lru,
            toptier: w.tiering().tiers.toptier.clone(),
            now_ms: access_time_ms(w.now()),
        })
    }

    /// `reset_ptenuma_scan`: a pass over the address space is complete.
    pub(super) fn reset_scan(mm: &mut MmNuma) {
        mm.scan_seq += 1;
        mm.scan_offset = (0, 0);
        for (p, c) in mm.win_prev.iter_mut().zip(mm.win_cur.iter_mut()) {
            *p = c.take();
        }
    }

    /// `change_prot_numa` over pages [a, b) of an object: returns (base PTEs changed, huge
    /// PMDs changed, entries visited). Every present PTE visited costs `pte_update_ns`
    /// (reading it and its folio's checks dominate whether or not it changes); a THP's PMD
    /// costs the same as one PTE.
    pub(super) fn change_prot_numa(
        &mut self,
        w: &mut World,
        obj: usize,
        a: u64,
        b: u64,
        skip_node: Option<usize>,
        tier: Option<&TierScan>,
    ) -> (u64, u64, u64) {
        // Tiering mode: top-tier pages are left alone without normal balancing, and a
        // slow-tier page protected now records the time (`folio_xchg_access_time`).
        let skip_tier = |n: usize| tier.is_some_and(|t| t.skip_toptier && t.toptier[n]);
        let skip = |n: usize| skip_node == Some(n) || skip_tier(n);
        let stamp = |n: usize| tier.is_some_and(|t| t.stamp && !t.toptier[n]);
        let now_ms = tier.map_or(0, |t| t.now_ms);
        let o = w.object_mut(obj);
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
                let n = o.node_of(c * CHUNK);
                if !n.is_some_and(skip_tier) && o.set_prot(c * CHUNK) {
                    changed += o.chunk_len(c);
                    huge += 1;
                    if n.is_some_and(stamp) {
                        o.xchg_cpupid(c * CHUNK, now_ms);
                    }
                }
                p = cend;
                continue;
            }
            let mut marked = 0;
            for q in p..cend {
                if let Some(n) = o.node_of(q) {
                    visited += 1;
                    if !skip(n) && o.mark_prot(q) {
                        marked += 1;
                        if stamp(n) {
                            o.xchg_cpupid(q, now_ms);
                        }
                    }
                }
            }
            o.prot_chunk_done(c, marked);
            changed += marked;
            p = cend;
        }
        (changed, huge, visited)
    }

    /// The secondary MMU of a KVM guest's memory: `change_pmd_range` calls
    /// `mmu_notifier_invalidate_range_start` once it finds a populated PMD, and KVM's
    /// notifier zaps the range's EPT entries and flushes the TLBs of the VM's vCPUs
    /// (`kvm_flush_remote_tlbs`): each running vCPU exits and pays `kvm_tlb_flush_ns`. The
    /// vCPUs re-fault the zapped entries (`kvm_ept_fault_ns`, charged with the hinting
    /// fault each re-fault takes).
    /// Simplifications (docs/model-notes.md, "KVM guests"): one invalidation per scan
    /// window of a VMA (the kernel's is per 1 GiB PUD range, so a window across a 1 GiB
    /// boundary makes two); runnable vCPUs waiting for a CPU pay too (KVM flushes them
    /// at their next entry).
    fn kvm_invalidate(&mut self, w: &mut World, pidx: usize) {
        let ns = w.machine().spec.costs.kvm_tlb_flush_ns;
        self.stats.kvm_mmu_invalidations += 1;
        self.stats.kvm_vcpu_kicks += w.kick_vcpus(pidx, ns);
    }
}

/// What the per-VMA checks of `task_numa_work` need besides the mm.
struct VmaCheck {
    ri: usize,
    now: u64,
    delay: u64,
    pid: u32,
    nthreads: u64,
    kernel: KernelVersion,
    /// The PID filter applies (on, and not the forced retry).
    pid_filter: bool,
}

/// `task_numa_work`'s checks of a suitable VMA's `numab_state` (none before 6.4: every
/// suitable VMA is scanned): the scan delay, the PID windows' reset, `seq_completed`,
/// `vma_is_accessed`. Returns why it is skipped, and the informational reason when it is
/// scanned although its PIDs are inactive.
fn vma_numab_checks(mm: &mut MmNuma, c: &VmaCheck) -> (Option<SkipReason>, Option<SkipReason>) {
    let kernel = c.kernel;
    if !kernel.vma_numab_state() {
        return (None, None);
    }
    let seq = mm.scan_seq;
    let offset_inside = mm.scan_offset.0 == c.ri && mm.scan_offset.1 > 0;
    // numab_state is allocated on first sight, after the checks before this one.
    let v = mm.vmas[c.ri].get_or_insert_with(|| VmaNumab::new(c.now, seq, c.delay));
    if seq != 0 && c.now < v.next_scan {
        return (Some(SkipReason::ScanDelay), None);
    }
    // 6.7 moved the PID windows' reset before the checks; 6.4 to 6.6 reset them only for a
    // VMA that passed them.
    let early_reset = kernel.scan_complete_vmas();
    if early_reset {
        v.maybe_rotate(c.now, seq, c.delay);
    }
    let (skip, info) = if kernel.scan_complete_vmas() && v.prev_scan_seq == seq as i64 {
        mm.scan_offset = (c.ri + 1, 0);
        (Some(SkipReason::SeqCompleted), None)
    } else if c.pid_filter {
        match v.is_accessed(seq, c.pid, offset_inside, c.nthreads, kernel) {
            (false, _) => (Some(SkipReason::PidInactive), None),
            (true, info) => (None, info),
        }
    } else {
        (None, None)
    };
    if !early_reset
        && skip.is_none()
        && let Some(v) = mm.vmas[c.ri].as_mut()
    {
        v.maybe_rotate(c.now, seq, c.delay);
    }
    (skip, info)
}

/// A scan's tiering rules: skip top-tier pages (mode 2 without 1), stamp slow-tier ones.
pub(super) struct TierScan {
    skip_toptier: bool,
    stamp: bool,
    toptier: Vec<bool>,
    now_ms: u32,
}

/// `jiffies_to_msecs(jiffies)` as `last_cpupid` holds it: whole milliseconds of jiffies
/// (HZ = 250, 4 ms), within 32 bits (the kernel keeps at least 12 bits; with
/// `NR_CPUS = 8192` 21 bits, wrapping every 35 minutes: simplified to 32).
pub(super) fn access_time_ms(now_ns: u64) -> u32 {
    ((now_ns / 4_000_000) * 4) as u32
}
