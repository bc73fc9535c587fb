//! The NUMA hinting fault: `do_numa_page` (the two-stage filter, `mpol_misplaced`, the
//! migration), `task_numa_fault` and `task_numa_group`.

use super::scan::access_time_ms;
use super::*;

/// TPP: the slow-tier page was found accessed by a fault (on its way to the active LRU).
const ACCESSED: u32 = u32::MAX - 1;

impl Linux6 {
    /// A NUMA hinting fault by thread `t` on CPU `cpu` at `page` of its region `ri`
    /// (`do_numa_page` / `do_huge_pmd_numa_page`). Returns its CPU ns, the migration
    /// included (one block of kernel work in the faulting thread).
    pub(super) fn numab_fault(
        &mut self,
        w: &mut World,
        t: usize,
        cpu: usize,
        ri: usize,
        page: u64,
    ) -> f64 {
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
            let r = &w.proc(pidx).regions[ri];
            (r.file_ro, r.vm_shared && w.obj_refs(obj) > 1)
        };
        let pid = t as u32 + 1;
        let mut flags = 0;
        if file_ro {
            flags |= TNF_NO_GROUP;
        }
        if vm_shared {
            flags |= TNF_SHARED;
        }
        // Tiering mode: a slow-tier page's last_cpupid holds its scan time, not a cpupid.
        let use_time = self.tun.tiering() && !w.tiering().toptier(nid);
        let last = if use_time {
            CpuPid::UNSET
        } else {
            CpuPid(w.object(obj).cpupid(head))
        };
        if !w.tiering().toptier(nid) {
            w.tiering_stats().numa_hint_faults_slow_tier += 1;
        }
        let now = w.now();
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
        let misplaced = nid != thisnid
            && w.alloc_policy_ref(t, ri, head, w.phase_policy(t))
                .is_none_or(|p| *p == MemPolicy::Default)
            && w.proc(pidx).cpuset_mems.contains(thisnid);
        if misplaced && use_time {
            if self.should_promote(w, obj, head, thisnid, nr) {
                target = Some(thisnid);
            }
        } else if misplaced {
            let this = CpuPid::new(cpu, pid);
            w.object_mut(obj).xchg_cpupid(head, this.0);
            // A slow-tier page outside tiering mode migrates only once a CPU has been
            // recorded (a time left in the field from tiering mode is no CPU).
            let stale = !w.tiering().toptier(nid) && last.cpu() >= w.machine().nr_cpus();
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
                last_node: (!last.pid_unset() && last.cpu() < w.machine().nr_cpus())
                    .then(|| w.machine().cpus[last.cpu()].node),
                dst_nid: thisnid,
                dst_has_memory: w.node_cap(thisnid) > 0,
                group,
            };
            if !stale && should_migrate(&input).0 {
                target = Some(thisnid);
            }
        }
        let mut mem_node = nid;
        let mut cost = w.machine().spec.costs.hint_fault_ns;
        // A vCPU reaches a protected page of guest memory through an EPT violation (the
        // invalidation zapped its entry): KVM's GUP takes the hinting fault, then maps the
        // EPT entry again, one per fault (a THP's 2 MiB entry, or one 4 KiB page).
        if w.proc(pidx).regions[ri].kvm_memslot && w.is_vcpu(t) {
            cost += w.machine().spec.costs.kvm_ept_fault_ns;
            self.stats.kvm_ept_faults += 1;
        }
        if let Some(dst) = target {
            // Tiering mode: a target without room above its high mark wakes its kswapd.
            let room = !self.tun.tiering() || w.promotion_room(dst, nr);
            if let Some(c) = room.then(|| w.migrate_page(obj, head, dst)).flatten() {
                flags |= TNF_MIGRATED;
                mem_node = dst;
                w.vmstat().numa_pages_migrated += nr;
                if !w.tiering().toptier(nid)
                    && w.tiering().toptier(dst)
                    && (self.tun.tiering() || !self.tun.kernel.pgpromote_tiering_only())
                {
                    w.count_promotion(dst, nr);
                }
                cost += c;
            } else {
                flags |= TNF_MIGRATE_FAIL;
            }
        }
        self.task_numa_fault(w, t, cpu, last, mem_node, nr, flags, now);
        cost
    }

    /// `should_numa_migrate_memory`'s tiering branch for a fault on the slow-tier entry at
    /// `head` (`nr` pages), promoting to `dst`: the hint-fault latency from the scan time
    /// the page holds (the fault's time stored in its place), then `promote.rs`.
    fn should_promote(
        &mut self,
        w: &mut World,
        obj: usize,
        head: u64,
        dst: usize,
        nr: u64,
    ) -> bool {
        if self.tun.promote_active_lru {
            return self.active_lru_promote(w, obj, head, nr);
        }
        let now_ms = access_time_ms(w.now());
        let scanned = w.object_mut(obj).xchg_cpupid(head, now_ms);
        let latency = now_ms.wrapping_sub(scanned) as u64;
        let rules = PromoteRules {
            hot_threshold_ms: self.tun.hot_threshold_ms,
            rate_limit_pages: self.tun.promote_rate_limit_mbps << (20 - 12),
            adjust_period_ms: self.tun.scan_period_max_ms,
            hot_selection: self.tun.promote_hot_selection,
            adjust_threshold: self.tun.promote_adjust_threshold,
        };
        let free_enough = w.free_space_enough(dst);
        let v = self.promote[dst].decide(&rules, now_ms as u64, latency, nr, free_enough);
        if matches!(v, Verdict::Promote | Verdict::RateLimited) {
            w.tiering_stats().pgpromote_candidate += nr;
        }
        v.promote()
    }

    /// TPP's rule: promote a slow-tier page only from the active LRU. Its first fault
    /// marks it accessed (`mark_page_accessed`, kept in `last_cpupid`, reset when it
    /// changes tier); a later one finds it active and promotes it.
    fn active_lru_promote(&mut self, w: &mut World, obj: usize, head: u64, nr: u64) -> bool {
        if w.object(obj).cpupid(head) == ACCESSED {
            w.tiering_stats().pgpromote_candidate += nr;
            return true;
        }
        w.object_mut(obj).xchg_cpupid(head, ACCESSED);
        false
    }

    /// `task_numa_fault(last_cpupid, mem_node, pages, flags)`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn task_numa_fault(
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
        // No statistics of faults on a lower tier in tiering mode (nor of a first fault
        // there outside it): the fast tier's placement is not the slow tier's business.
        if !w.tiering().toptier(mem_node)
            && (self.tun.tiering() || last.cpu() >= w.machine().nr_cpus())
        {
            return;
        }
        let nn = w.machine().nr_nodes();
        let pid = t as u32 + 1;
        let cpu_node = w.machine().cpus[cpu].node;
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
    pub(super) fn task_numa_group(
        &mut self,
        w: &mut World,
        t: usize,
        last: CpuPid,
        flags: u32,
    ) -> bool {
        let nn = w.machine().nr_nodes();
        let pidx = w.thread(t).proc;
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
        let partner = if cpu < w.sched().nr_cpus() {
            w.sched()
                .rq(cpu)
                .first()
                .map(|&x| x as usize)
                .filter(|&x| last.matches(x as u32 + 1))
        } else {
            None
        };
        let theirs = partner.and_then(|p| nb.tasks.get(p).and_then(|tk| tk.group));
        let same_mm = partner.is_some_and(|p| w.thread(p).proc == pidx);
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
}
