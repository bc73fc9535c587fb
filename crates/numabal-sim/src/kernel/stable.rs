//! Stable-NUMA (`stable`, the Stable-NUMA paper §IV) driven by the engine: the mechanism around the
//! policy core `numabal_policy::stable` — a fixed-interval scanner over each process's
//! allocated memory that unmaps the pages the core selects (`should_unmap`: the bypass
//! counters), NUMA hinting faults delivered to the core and its placements carried out,
//! the end of each scan sequence (thread move or swap with the moved threads'
//! thread-private pages, system-shared balance), and the load balancer kept inside a node
//! for joined threads (`can_migrate_task`). Per-page records (8 bytes) live here, per
//! mapping object, beside the PROT_NONE bits. Every simplification is listed in
//! docs/model-notes.md ("Stable-NUMA in the simulator").

use super::{KernelModel, KernelReport};
use crate::memory::CHUNK;
use crate::sched::Cause;
use crate::sched::{CanMigrate, LbCtx};
use crate::world::records::Metrics;
use crate::world::{HintAt, KernelHooks, NS, TState, World};
use numabal_model::{MemPolicy, Pid, Tid};
use numabal_policy::stable::{
    ClusterDecision, HintFault, JoinAt, PageRecord, PageState, Placement, StableNuma, Tunables,
};
use rand::RngExt;
use serde::{Deserialize, Serialize};

const MS: u64 = 1_000_000;

/// Per process: where its scanner is.
#[derive(Debug, Clone, Default)]
struct MmScan {
    /// ns: start of the next scan window.
    next_scan: u64,
    /// (region, page): where the next window starts.
    offset: (usize, u64),
    /// Completed scan sequences (the bypass counters' clock).
    seq: u64,
    alive: bool,
    /// Profiling has started (`join_at = first_scan`: its threads have joined).
    profiling: bool,
}

/// Counters of the `stable` model.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StableStats {
    /// Scan windows run.
    pub scan_windows: u64,
    /// Scan sequences completed (full passes over a process's allocated memory).
    pub scan_sequences: u64,
    /// Pages the scanner looked at.
    pub pages_scanned: u64,
    /// Pages the scanner left mapped because of their bypass counter.
    pub pages_bypassed: u64,
    /// Thread moves decided by the clustering (locality moves and rebalancing).
    pub thread_moves: u64,
    /// Of them, moves of the sub-group load balancing (`rebalance`).
    pub thread_rebalances: u64,
    /// Thread swaps decided by the clustering.
    pub thread_swaps: u64,
    /// Pages migrated at a hinting fault (thread-private to the owner, node-private to
    /// the sharers' node).
    pub pages_migrated_fault: u64,
    /// Thread-private pages that followed their owner after a move or swap.
    pub pages_migrated_follow: u64,
    /// System-shared pages moved by the 3/4 rule.
    pub pages_migrated_shared: u64,
    /// Page migrations that failed (destination node full).
    pub pages_migrate_failed: u64,
    /// Pages per state when their mapping was freed, or at the end for mappings still
    /// in use (pages never faulted on are not counted).
    pub page_states: std::collections::BTreeMap<String, u64>,
}

/// The model's state.
pub(crate) struct StableNumaKernel {
    core: StableNuma,
    /// Per mapping object: a record per base page (a THP's on its first page); empty until
    /// a process mapping it starts.
    recs: Vec<Vec<PageRecord>>,
    mms: Vec<MmScan>,
    pub stats: StableStats,
    pub scan_ns: f64,
}

impl StableNumaKernel {
    pub fn new(w: &World, tun: Tunables) -> StableNumaKernel {
        let node_cpus: Vec<u32> = w
            .machine()
            .nodes
            .iter()
            .map(|n| n.cpus.iter().count() as u32)
            .collect();
        let node_cpus = &node_cpus[..];
        let mut core = StableNuma::new(node_cpus.len(), tun);
        core.set_node_cpus(node_cpus);
        StableNumaKernel {
            core,
            recs: Vec::new(),
            mms: Vec::new(),
            stats: StableStats::default(),
            scan_ns: 0.0,
        }
    }
}

impl StableNumaKernel {
    /// A process started: records for its mappings, its scanner's first window one scan
    /// period from now, its root group's allowed nodes (those its cpuset has CPUs on). A
    /// process with no mappings is never scanned and its threads never join.
    fn stable_new_process(&mut self, w: &mut World, pidx: usize) {
        let objs: Vec<usize> = w.proc(pidx).regions.iter().map(|r| r.obj).collect();
        let nn = w.machine().nr_nodes();
        let allowed: Vec<bool> = (0..nn)
            .map(|n| {
                w.machine().nodes[n]
                    .cpus
                    .iter()
                    .any(|c| w.proc(pidx).cpuset_cpus.contains(c))
            })
            .collect();
        let now = w.now();
        let period = self.core.tunables().scan_period_ms * MS;
        for &o in &objs {
            w.object_mut(o).enable_hinting();
            let pages = w.object(o).pages as usize;
            let st = &mut *self;
            if st.recs.len() <= o {
                st.recs.resize(o + 1, Vec::new());
            }
            if st.recs[o].len() != pages {
                st.recs[o] = vec![PageRecord::NEW; pages];
            }
        }
        let st = &mut *self;
        if st.mms.len() <= pidx {
            st.mms.resize(pidx + 1, MmScan::default());
        }
        // A process without mappings stands for kernel threads (OS noise): no mm, so no
        // scanning and no root group, as `task_numa_work` skips tasks without an mm.
        let has_mm = !objs.is_empty();
        st.mms[pidx] = MmScan {
            next_scan: now + period,
            offset: (0, 0),
            seq: 0,
            alive: has_mm,
            profiling: false,
        };
        st.core.set_allowed_nodes(Pid(pidx as u32 + 1), &allowed);
    }

    /// A thread of process `pidx` was created on `cpu`: it joins its root group now with
    /// `join_at = creation`, or with `first_scan` if its process is being profiled
    /// already.
    fn stable_new_task(&mut self, w: &mut World, t: usize, cpu: usize) {
        let pidx = w.thread(t).proc;
        let node = w.machine().cpus[cpu].node;
        let st = &mut *self;
        let has_mm = st.mms.get(pidx).is_some_and(|m| m.alive);
        let join = match st.core.tunables().join_at {
            JoinAt::Creation => has_mm,
            JoinAt::FirstScan => has_mm && st.mms[pidx].profiling,
            JoinAt::FirstFault => false,
        };
        if join {
            st.core.join(Pid(pidx as u32 + 1), Tid(t as u32 + 1), node);
        }
    }

    /// The first scan window of `pidx` (`join_at = first_scan`): every live thread joins
    /// the sub-group of the node it runs on (or last ran on).
    fn stable_start_profiling(&mut self, w: &mut World, pidx: usize) {
        self.mms[pidx].profiling = true;
        if self.core.tunables().join_at != JoinAt::FirstScan {
            return;
        }
        let threads: Vec<usize> = w
            .proc(pidx)
            .groups
            .iter()
            .flat_map(|g| g.threads.iter().copied())
            .filter(|&t| w.thread(t).state != TState::Done)
            .collect();
        for t in threads {
            let task = &w.sched().tasks[t];
            let node = w.machine().cpus[task.cpu.unwrap_or(task.prev_cpu)].node;
            self.core
                .join(Pid(pidx as u32 + 1), Tid(t as u32 + 1), node);
        }
    }

    /// A thread exited: it leaves its sub-group.
    fn stable_task_exit(&mut self, t: usize) {
        self.core.on_thread_exit(Tid(t as u32 + 1));
    }

    /// A process exited: its root group goes; objects about to be freed report their
    /// system-shared pages.
    fn stable_exit_process(&mut self, pidx: usize) {
        let st = &mut *self;
        st.mms[pidx].alive = false;
        st.core.on_process_exit(Pid(pidx as u32 + 1));
    }

    /// An object is being freed (its last mapping went).
    fn stable_release_object(&mut self, w: &mut World, o: usize) {
        let recs = std::mem::take(&mut self.recs[o]);
        for (p, r) in recs.iter().enumerate() {
            if *r != PageRecord::NEW {
                let states = &mut self.stats.page_states;
                *states.entry(r.state().to_string()).or_insert(0) += 1;
            }
            if r.state() == PageState::SYSTEM_SHARED
                && let Some(n) = w.object(o).node_of(p as u64)
            {
                self.core.on_page_freed(r, n);
            }
        }
    }

    /// The load balancer's question for `stable`: no inter-node move of a joined thread.
    fn stable_can_migrate(&self, tid: usize, src: usize, dst: usize) -> bool {
        self.core.can_migrate_task(Tid(tid as u32 + 1), src, dst)
            == numabal_policy::MigrateVerdict::Allow
    }

    /// Every tick: each live process whose next window is due scans, in the context of one
    /// of its running threads (as `task_numa_work` does), which pays for it.
    fn stable_tick(&mut self, w: &mut World) {
        let nproc = w.nr_procs();
        for pidx in 0..nproc {
            let due = self
                .mms
                .get(pidx)
                .is_some_and(|m| m.alive && w.now() >= m.next_scan);
            if !due {
                continue;
            }
            // The thread whose tick reaches the deadline first: a random running one.
            let running: Vec<usize> = w
                .proc(pidx)
                .groups
                .iter()
                .flat_map(|g| g.threads.iter().copied())
                .filter(|&t| {
                    w.thread(t).state == TState::Runnable && w.sched().tasks[t].cpu.is_some()
                })
                .collect();
            if running.is_empty() {
                continue;
            }
            let t = running[w.rng().random_range(0..running.len())];
            let period = self.core.tunables().scan_period_ms * MS;
            let now = w.now();
            self.mms[pidx].next_scan = now + period;
            if !self.mms[pidx].profiling {
                self.stable_start_profiling(w, pidx);
            }
            let cost = self.stable_scan_window(w, pidx, t);
            self.scan_ns += cost;
            let node = w.thread_node(t);
            w.record_scan(Some(pidx), node, cost);
            w.charge_kernel(t, cost);
        }
    }

    /// One scan window of process `pidx`, run by thread `t`: up to `scan_size_mb` of
    /// allocated pages from where the last window stopped; each page the core selects is
    /// made PROT_NONE. At the end of the address space the scan sequence ends. Returns the
    /// CPU ns (PTEs visited, plus any migrations the sequence end does).
    fn stable_scan_window(&mut self, w: &mut World, pidx: usize, t: usize) -> f64 {
        let budget = self.core.tunables().scan_size_mb << 8;
        let pte_ns = w.machine().spec.costs.pte_update_ns;
        let (mut ri, mut page) = self.mms[pidx].offset;
        let seq = self.mms[pidx].seq;
        let nregions = w.proc(pidx).regions.len();
        let mut visited = 0u64;
        let mut updated = 0u64;
        let mut bypassed = 0u64;
        let mut wrapped = false;
        while visited < budget {
            if ri >= nregions {
                wrapped = true;
                break;
            }
            let r = &w.proc(pidx).regions[ri];
            if r.file_ro || page >= r.pages {
                ri += 1;
                page = 0;
                continue;
            }
            let obj = r.obj;
            let c = page / CHUNK;
            let o = w.object(obj);
            let cend = ((c + 1) * CHUNK).min(o.pages);
            if o.chunk_populated(c) == 0 {
                page = cend;
                continue;
            }
            let st = &mut *self;
            let recs = &st.recs[obj];
            let o = w.object_mut(obj);
            if o.is_huge(c) {
                let head = c * CHUNK;
                visited += o.chunk_len(c);
                if st.core.should_unmap(&recs[head as usize], seq, head) {
                    if o.set_prot(head) {
                        updated += o.chunk_len(c);
                    }
                } else {
                    bypassed += o.chunk_len(c);
                }
                page = cend;
                continue;
            }
            let mut marked = 0;
            while page < cend && visited < budget {
                if o.node_of(page).is_some() {
                    visited += 1;
                    if st.core.should_unmap(&recs[page as usize], seq, page) {
                        if o.mark_prot(page) {
                            marked += 1;
                        }
                    } else {
                        bypassed += 1;
                    }
                }
                page += 1;
            }
            o.prot_chunk_done(c, marked);
            updated += marked;
        }
        w.vmstat().numa_pte_updates += updated;
        let st = &mut *self;
        st.stats.scan_windows += 1;
        st.stats.pages_scanned += visited;
        st.stats.pages_bypassed += bypassed;
        st.mms[pidx].offset = (ri, page);
        let mut cost = visited as f64 * pte_ns;
        if wrapped {
            let st = &mut *self;
            st.mms[pidx].offset = (0, 0);
            st.mms[pidx].seq += 1;
            st.stats.scan_sequences += 1;
            cost += self.stable_sequence_end(w, pidx, t);
        }
        cost
    }

    /// The end of a scan sequence of `pidx`: the core's EMA update and clustering decision
    /// (carried out: the thread, or both threads of a swap, go to their new node with their
    /// thread-private pages) and the system-shared balance. Returns the migrations' CPU ns.
    fn stable_sequence_end(&mut self, w: &mut World, pidx: usize, _t: usize) -> f64 {
        let live: Vec<bool> = (0..w.nr_threads())
            .map(|t| w.thread(t).state != TState::Done)
            .collect();
        let out = self.core.on_scan_sequence_end(Pid(pidx as u32 + 1), |tid| {
            live.get(tid.idx() - 1).copied().unwrap_or(false)
        });
        let mut cost = 0.0;
        let mut moved: Vec<(usize, usize)> = Vec::new();
        if let Some(c) = &out.cluster {
            let cause = match c.decision {
                ClusterDecision::Nothing(_) => Cause::Policy,
                ClusterDecision::Move { .. } => {
                    self.stats.thread_moves += 1;
                    self.stats.thread_rebalances += u64::from(out.rebalanced);
                    Cause::Policy
                }
                ClusterDecision::Swap { .. } => {
                    self.stats.thread_swaps += 1;
                    Cause::PolicySwap
                }
            };
            for (tid, _, to) in c.decision.moves() {
                let t = tid.idx() - 1;
                w.move_task_to_node(t, to, cause);
                moved.push((t, to));
            }
        }
        for (t, node) in moved {
            cost += self.stable_follow_owner(w, pidx, t, node);
        }
        if let Some(sm) = out.shared {
            cost += self.stable_move_shared(w, sm.from, sm.to, sm.pages);
        }
        cost
    }

    /// The thread-private pages of thread `t` (in its process's mappings) follow it to
    /// `node`.
    fn stable_follow_owner(&mut self, w: &mut World, pidx: usize, t: usize, node: usize) -> f64 {
        let owner = Tid(t as u32 + 1);
        let mut objs: Vec<usize> = w.proc(pidx).regions.iter().map(|r| r.obj).collect();
        objs.dedup();
        let mut cost = 0.0;
        for obj in objs {
            let pages: Vec<u64> = {
                let st = &mut *self;
                let o = w.object(obj);
                st.recs[obj]
                    .iter()
                    .enumerate()
                    .filter(|(p, r)| {
                        r.private_owner() == Some(owner)
                            && o.head(*p as u64) == *p as u64
                            && o.node_of(*p as u64).is_some_and(|n| n != node)
                    })
                    .map(|(p, _)| p as u64)
                    .collect()
            };
            for p in pages {
                let nr = w.entry_pages(obj, p);
                match w.migrate_page(obj, p, node) {
                    Some(c) => {
                        cost += c;
                        w.vmstat().numa_pages_migrated += nr;
                        self.stats.pages_migrated_follow += nr;
                    }
                    None => self.stats.pages_migrate_failed += nr,
                }
            }
        }
        cost
    }

    /// Move `pages` system-shared pages from node `from` to node `to` (any process's, in
    /// object and address order).
    fn stable_move_shared(&mut self, w: &mut World, from: usize, to: usize, pages: u64) -> f64 {
        let mut left = pages;
        let mut cost = 0.0;
        for obj in 0..w.nr_objects() {
            if left == 0 {
                break;
            }
            let cand: Vec<u64> = {
                let st = &mut *self;
                let Some(recs) = st.recs.get(obj) else {
                    continue;
                };
                let o = w.object(obj);
                recs.iter()
                    .enumerate()
                    .filter(|(p, r)| {
                        r.state() == PageState::SYSTEM_SHARED
                            && o.head(*p as u64) == *p as u64
                            && o.node_of(*p as u64) == Some(from)
                    })
                    .map(|(p, _)| p as u64)
                    .take(left as usize)
                    .collect()
            };
            for p in cand {
                let nr = w.entry_pages(obj, p);
                match w.migrate_page(obj, p, to) {
                    Some(c) => {
                        cost += c;
                        let st = &mut *self;
                        let rec = st.recs[obj][p as usize];
                        st.core.on_page_migrated(&rec, from, to);
                        st.stats.pages_migrated_shared += nr;
                        w.vmstat().numa_pages_migrated += nr;
                    }
                    None => self.stats.pages_migrate_failed += nr,
                }
                left = left.saturating_sub(nr);
                if left == 0 {
                    break;
                }
            }
        }
        cost
    }

    /// A NUMA hinting fault under `stable` by thread `t` on CPU `cpu` at `page` of its
    /// region `ri`: the core classifies it and updates the page's record; a placement to
    /// another node migrates the page (when the memory policy is the default and the
    /// cpuset allows the node). Returns its CPU ns, the migration included.
    fn stable_fault(&mut self, w: &mut World, t: usize, cpu: usize, ri: usize, page: u64) -> f64 {
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
        let f = HintFault {
            pid: Pid(pidx as u32 + 1),
            tid: Tid(t as u32 + 1),
            node: thisnid,
            page_node: nid,
        };
        let st = &mut *self;
        let mut rec = st.recs[obj][head as usize];
        let tr = st.core.on_hint_fault(&mut rec, f);
        st.recs[obj][head as usize] = rec;
        let mut cost = w.machine().spec.costs.hint_fault_ns;
        if let Placement::Migrate(dst) = tr.placement
            && dst != nid
            && w.alloc_policy_ref(t, ri, head, w.phase_policy(t))
                .is_none_or(|p| *p == MemPolicy::Default)
            && w.proc(pidx).cpuset_mems.contains(dst)
        {
            match w.migrate_page(obj, head, dst) {
                Some(c) => {
                    cost += c;
                    w.vmstat().numa_pages_migrated += nr;
                    let st = &mut *self;
                    st.core.on_page_migrated(&rec, nid, dst);
                    st.stats.pages_migrated_fault += nr;
                }
                None => self.stats.pages_migrate_failed += nr,
            }
        }
        cost
    }

    /// What `stable` reports beyond the shared counters.
    fn stable_report(&self) -> Option<StableReport> {
        let st = self;
        let mut stats = st.stats.clone();
        for recs in &st.recs {
            for r in recs {
                if *r == PageRecord::NEW {
                    continue;
                }
                *stats.page_states.entry(r.state().to_string()).or_insert(0) += 1;
            }
        }
        Some(StableReport {
            scan_cpu_s: st.scan_ns / NS,
            stats,
        })
    }
}

/// `stable`'s report in the run result.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StableReport {
    /// CPU seconds of scanning.
    pub scan_cpu_s: f64,
    /// Counters.
    pub stats: StableStats,
}

impl KernelHooks for StableNumaKernel {
    fn process_start(&mut self, w: &mut World, pidx: usize) {
        self.stable_new_process(w, pidx);
    }
    fn wake_up_new_task(&mut self, w: &mut World, t: usize, cpu: usize) {
        self.stable_new_task(w, t, cpu);
    }
    fn task_exit(&mut self, _w: &mut World, t: usize) {
        self.stable_task_exit(t);
    }
    fn process_exit(&mut self, _w: &mut World, pidx: usize) {
        self.stable_exit_process(pidx);
    }
    fn object_release(&mut self, w: &mut World, obj: usize) {
        self.stable_release_object(w, obj);
    }
    fn tick(&mut self, w: &mut World) {
        self.stable_tick(w);
    }
    fn hinting(&self) -> bool {
        true
    }
    fn hinting_fault(&mut self, w: &mut World, t: usize, cpu: usize, ri: usize, page: u64) -> f64 {
        self.stable_fault(w, t, cpu, ri, page)
    }
    fn can_migrate_task(&self, _w: &World, ctx: &LbCtx) -> CanMigrate {
        if self.stable_can_migrate(ctx.tid as usize, ctx.src_node, ctx.dst_node) {
            CanMigrate::Yes
        } else {
            CanMigrate::No
        }
    }
}

impl KernelModel for StableNumaKernel {
    fn name(&self) -> Option<&'static str> {
        Some("stable")
    }
    fn metrics(&self, m: &mut Metrics) {
        m.scan_cpu_s = self.scan_ns / NS;
    }
    fn report(&self, _w: &World) -> KernelReport {
        KernelReport {
            numa_balancing: None,
            stable: self.stable_report(),
        }
    }
}
