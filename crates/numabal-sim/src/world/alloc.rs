//! Memory: which policy governs an allocation, which node gets a page (the zonelist,
//! interleave, cpuset mems), first touches, page migration at the kernel's cost, the start
//! of a NUMA hinting fault, a process's memory per node.

use super::tiering::Mark;
use super::*;
use crate::memory::{CHUNK, PAGE_BYTES};
use numabal_model::InputError;
use numabal_model::mempolicy::weighted_interleave_nid;

impl World<'_> {
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
    /// `il_next` for a task interleave (the kernel's two interleave rules); weighted
    /// interleave walks the same position over the nodes' weights (`il_weights`).
    /// With memory tiering on, a node must keep free pages above `mark` (`tiering.rs`).
    pub(crate) fn pick_node(
        &self,
        t: usize,
        cpu_node: usize,
        pol: &MemPolicy,
        nr: u64,
        il_index: u64,
        mark: Mark,
    ) -> Option<usize> {
        let allowed = &self.procs[self.threads[t].proc].cpuset_mems;
        let room =
            |n: usize| self.node_used[n] + nr + self.tiering.mark(mark, n) <= self.node_cap[n];
        let fits = |n: usize| allowed.contains(n) && room(n);
        let zonelist = |from: usize| self.zonelists[from].iter().copied();
        match pol {
            MemPolicy::Default => zonelist(cpu_node).find(|&n| fits(n)),
            MemPolicy::Preferred(p) => {
                if fits(*p) {
                    return Some(*p);
                }
                zonelist(*p).find(|&n| fits(n))
            }
            MemPolicy::Bind(mask) => {
                // cpuset mems always win: a bind set outside them is rebound to the cpuset,
                // as the kernel does (set_mempolicy refuses such a set; cpuset changes
                // rebind existing policies).
                let rebound = !mask.intersects(allowed);
                zonelist(cpu_node)
                    .find(|&n| allowed.contains(n) && (rebound || mask.contains(n)) && room(n))
            }
            MemPolicy::Interleave(mask) | MemPolicy::WeightedInterleave(mask) => {
                // Weighted interleave leaves out nodes without memory, as mpol_set_nodemask
                // does (N_MEMORY); plain interleave here keeps them (they fall back).
                let weighted = matches!(pol, MemPolicy::WeightedInterleave(_));
                let set: Vec<usize> = mask
                    .and(allowed)
                    .iter()
                    .filter(|&n| n < self.machine.nr_nodes())
                    .filter(|&n| !weighted || self.machine.nodes[n].memory_bytes > 0)
                    .collect();
                if set.is_empty() {
                    return zonelist(cpu_node).find(|&n| fits(n));
                }
                // interleave_nid / weighted_interleave_nid; a full target falls back along
                // its own zonelist (alloc_pages_mpol with the target as preferred node).
                let target = if weighted {
                    weighted_interleave_nid(&set, &self.il_weights, il_index)
                } else {
                    set[(il_index % set.len() as u64) as usize]
                };
                if fits(target) {
                    return Some(target);
                }
                zonelist(target).find(|&n| fits(n))
            }
        }
    }

    /// A `[[tmpfs]]`'s files: `pages` base pages on node `n` before the run, on its LRU
    /// without PG_referenced (written, not mapped). No process maps their object, so its
    /// references stay 0: MGLRU's walks pass it by and no exit releases it.
    pub(crate) fn tmpfs_files(&mut self, pages: u64, n: usize) {
        let mut o = MemObject::new(pages, false, self.machine.nr_nodes());
        for p in 0..pages {
            o.populate_page(p, n);
        }
        let chunks = o.chunks();
        self.objects.push(o);
        self.obj_refs.push(0);
        self.obj_owner.push(None);
        let obj = self.objects.len() - 1;
        for c in 0..chunks {
            let len = self.objects[obj].chunk_len(c);
            self.lru_gen_add(obj, c * CHUNK, n, len, false);
        }
        // Written at boot: the frames' first use is not the run's.
        self.use_frames(n, pages);
        self.after_alloc(n);
    }

    /// `nr` more pages in use on node `n`; returns what the frames' first use costs
    /// (`core.host_first_use_ns` a page beyond the most the node has held). The guest's
    /// buddy allocator is taken to hand out freed frames before fresh ones: it does so
    /// for a THP while freed 2 MiB blocks stay unmerged on the order-9 list, and a base
    /// page's per-CPU lists hold the last freed; neither is modelled page by page.
    fn use_frames(&mut self, n: usize, nr: u64) -> f64 {
        self.node_used[n] += nr;
        let fresh = self.node_used[n].saturating_sub(self.node_peak[n]);
        if fresh == 0 {
            return 0.0;
        }
        self.node_peak[n] = self.node_used[n];
        fresh as f64 * self.machine.spec.core.host_first_use_ns.unwrap_or(0.0)
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
        // which moves on only when an allocation succeeds. Weighted interleave the same:
        // the counter stands for il_prev and il_weight (each node its weight of
        // allocations in a row), the offset for weighted_interleave_nid's ilx.
        let vma_pol =
            r.ranges.iter().any(|(a, b, _)| page >= *a && page < *b) || r.wl_policy.is_some();
        let il_next = self.threads[t].il_next as u64;
        let task_interleave = !vma_pol
            && matches!(
                pol,
                MemPolicy::Interleave(_) | MemPolicy::WeightedInterleave(_)
            );
        let vma_offset = |nr: u64| -> u64 { if vma_pol { page / nr } else { il_next } };
        let o = &self.objects[obj];
        let chunk = page / CHUNK;
        let mut reclaim_ns = 0.0;
        if o.thp_chunk(chunk) {
            let off = vma_offset(CHUNK);
            // A THP fault's allocation (GFP_TRANSHUGE_LIGHT under defrag's default,
            // `madvise`) neither wakes kswapd nor reclaims: its slow path only tries again
            // down to the min marks (`gfp_to_alloc_flags`' ALLOC_WMARK_MIN).
            let mut picked = self.pick_node(t, cpu_node, &pol, CHUNK, off, self.first_mark());
            if picked.is_none() && self.tiering.on() {
                picked = self.pick_node(t, cpu_node, &pol, CHUNK, off, Mark::Min);
            }
            if let Some(n) = picked {
                self.objects[obj].populate_huge(chunk, n);
                self.lru_gen_add(obj, chunk * CHUNK, n, CHUNK, true);
                let first_use_ns = self.use_frames(n, CHUNK);
                self.after_alloc(n);
                self.metrics.pgfault += 1;
                self.metrics.thp_fault_alloc += 1;
                if task_interleave {
                    self.threads[t].il_next += 1;
                }
                self.perf_fault(t, region, chunk * CHUNK);
                return Ok(self.machine.spec.costs.thp_fault_ns + first_use_ns);
            }
        }
        let off = vma_offset(1);
        let mut picked = self.pick_node(t, cpu_node, &pol, 1, off, self.first_mark());
        if picked.is_none() && self.tiering.on() {
            // The slow path: wake the kswapds, try down to the min marks, then reclaim
            // directly on the local node and try once more.
            let zl = self.zonelists[cpu_node].clone();
            self.wake_all_kswapds(&zl);
            picked = self.pick_node(t, cpu_node, &pol, 1, off, Mark::Min);
            if picked.is_none() {
                reclaim_ns = self.direct_reclaim(cpu_node);
                picked = self.pick_node(t, cpu_node, &pol, 1, off, Mark::Min);
            }
        }
        match picked {
            Some(n) => {
                self.objects[obj].populate_page(page, n);
                self.lru_gen_add(obj, page, n, 1, true);
                let first_use_ns = self.use_frames(n, 1);
                self.after_alloc(n);
                self.metrics.pgfault += 1;
                if task_interleave {
                    self.threads[t].il_next += 1;
                }
                self.perf_fault(t, region, page);
                Ok(self.machine.spec.costs.page_fault_ns + reclaim_ns + first_use_ns)
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
        if self.node_used[dst] + nr + self.wmark_high(dst) > self.node_cap[dst] {
            self.metrics.pgmigrate_fail += nr;
            return None;
        }
        Some(self.relocate(obj, page, src, dst, nr, true))
    }

    /// `move_pages(2)` of every present page of region `region` of process `pidx` to
    /// `node`, as [`migrate_page`](Self::migrate_page) moves each (a THP whole; a page the
    /// node has no room for stays); returns the cost. Only the process's own memory: a
    /// region it shares with another process is left, as MPOL_MF_MOVE leaves pages that
    /// others map.
    pub(crate) fn move_region(&mut self, pidx: usize, region: usize, node: usize) -> f64 {
        let obj = self.procs[pidx].regions[region].obj;
        if self.obj_refs[obj] > 1 {
            return 0.0;
        }
        let (first, end) = self.procs[pidx].regions[region].data;
        let mut ns = 0.0;
        let mut page = first;
        while page < end {
            let c = page / CHUNK;
            let o = &self.objects[obj];
            let next = if o.is_huge(c) {
                c * CHUNK + o.chunk_len(c)
            } else {
                page + 1
            };
            if let Some(cost) = self.migrate_page(obj, page, node) {
                ns += cost;
            }
            page = next.min(end);
        }
        ns
    }

    /// Move the entry at `page` (`nr` base pages) of object `obj` from `src` to `dst` at
    /// the kernel's cost, counting it; returns the cost. In memory tiering mode a move
    /// between the top tier and a lower one resets `last_cpupid`, which holds a scan time
    /// on a slow-tier page (`folio_migrate_flags`).
    ///
    /// `flush`: the move pays the TLB flush of its batch (`migrate_pages_batch` unmaps a
    /// batch's folios and flushes once, `try_to_unmap_flush`); reclaim's demotions pass
    /// it for the first page of each batch (a THP is a batch of its own), every other
    /// caller always. An object no process maps (a tmpfs file) has no entry to flush.
    pub(crate) fn relocate(
        &mut self,
        obj: usize,
        page: u64,
        src: usize,
        dst: usize,
        nr: u64,
        flush: bool,
    ) -> f64 {
        let referenced = self.lru_gen_del(obj, page, src, nr);
        self.relocate_isolated(obj, page, src, dst, nr, referenced, flush)
    }

    /// `relocate` for an entry already off `src`'s LRU (isolated by MGLRU's eviction),
    /// put on `dst`'s with PG_referenced as given.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn relocate_isolated(
        &mut self,
        obj: usize,
        page: u64,
        src: usize,
        dst: usize,
        nr: u64,
        referenced: bool,
        flush: bool,
    ) -> f64 {
        self.objects[obj].migrate(page, dst);
        self.lru_gen_add(obj, page, dst, nr, referenced);
        self.node_used[src] -= nr;
        let first_use_ns = self.use_frames(dst, nr);
        if self.tiering.tiering_mode && self.tiering.toptier(src) != self.tiering.toptier(dst) {
            let o = &mut self.objects[obj];
            if o.hinting() {
                let head = o.head(page);
                o.xchg_cpupid(head, u32::MAX);
            }
        }
        self.metrics.pgmigrate_success += nr;
        self.series.migrated(self.obj_owner[obj], dst, nr);
        let k = &self.machine.spec.costs;
        let copy_ns = nr as f64 * PAGE_BYTES
            / numabal_model::machine::gib_s_to_bytes_per_ns(k.migrate_copy_gib_s);
        let mut cost = k.migrate_page_ns + copy_ns + first_use_ns;
        if flush && self.obj_refs[obj] > 0 {
            cost += k.tlb_shootdown_ns + self.host_flush_wait(obj, false);
            self.migrate_shootdowns += 1;
        }
        self.migrate_ns += cost;
        cost
    }

    /// The mark a first touch's fast path keeps: the low watermark with memory tiering on.
    fn first_mark(&self) -> Mark {
        if self.tiering.on() {
            Mark::Low
        } else {
            Mark::Full
        }
    }

    /// On a shared host (`core.host_shootdown_ns`), the shootdown's wait for the CPUs that
    /// run threads of the process owning `obj`; with `core.mm_cpumask_kept`, for a flush
    /// that names no mm (`names_mm` false: a migration's batch), for the CPUs that ever ran
    /// one of its threads and now run anything (an idle CPU is in lazy TLB mode and gets no
    /// IPI; a flush naming the mm skips CPUs running another, `should_flush_tlb`).
    /// Simplified: every such CPU counts, the one a migrating fault
    /// runs on too (it flushes itself at no wait); only the owner's threads (another
    /// process mapping a shared object is not counted); the wait is per page but for
    /// reclaim's demotions (per batch, `relocate`'s `flush`), where 7.2 flushes once per
    /// batch of up to 512 base pages (a huge page is a batch of its own, and the guests'
    /// memory is mostly huge pages); and `mm_cpumask` is never trimmed
    /// (7.2 trims it at most once a second, by a flush that names the mm, which a
    /// migration's does not: munmap, mprotect, a hinting scan, a soft-dirty clear).
    pub(crate) fn host_flush_wait(&self, obj: usize, names_mm: bool) -> f64 {
        let core = &self.machine.spec.core;
        let (Some(_), Some(w)) = (core.host_cpus, core.host_shootdown_ns) else {
            return 0.0;
        };
        let Some(owner) = self.obj_owner[obj] else {
            return 0.0;
        };
        let owned = |t: usize| self.threads[t].proc == owner;
        let flushed = |c: usize| {
            let rq = self.sched.rq(c);
            if core.mm_cpumask_kept && !names_mm {
                let ran = |t: usize| owned(t) && self.sched.tasks[t].ran_on.contains(c);
                !rq.is_empty() && (0..self.threads.len()).any(ran)
            } else {
                rq.iter().any(|&t| owned(t as usize))
            }
        };
        w * (0..self.sched.nr_cpus()).filter(|&c| flushed(c)).count() as f64
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
        self.perf_fault(t, ri, head);
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

    /// NUMA hinting on every mapping of process `pidx`: its pages can be made PROT_NONE.
    pub(crate) fn enable_hinting(&mut self, pidx: usize) {
        for r in &self.procs[pidx].regions {
            self.objects[r.obj].enable_hinting();
        }
    }

    /// Make every present entry (base page or THP) of process `pidx` PROT_NONE, as a scan
    /// of all its memory would (its cost is the caller's to charge); returns the entries
    /// newly marked. (Only the trivial model of `kernel/fault_counter.rs` scans this way.)
    #[cfg(test)]
    pub(crate) fn protect_all(&mut self, pidx: usize) -> u64 {
        let mut marked = 0;
        for r in &self.procs[pidx].regions {
            let o = &mut self.objects[r.obj];
            let mut p = 0;
            while p < o.pages {
                let head = o.head(p);
                if o.node_of(head).is_some() && o.set_prot(head) {
                    marked += 1;
                }
                let c = head / CHUNK;
                p = head + if o.is_huge(c) { o.chunk_len(c) } else { 1 };
            }
        }
        marked
    }
}
