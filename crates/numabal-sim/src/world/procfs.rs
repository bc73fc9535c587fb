//! The world as a user-space daemon reads it from `/proc` and `/sys`: per-process
//! `stat`/`numa_maps` figures, per-node `meminfo`, per-CPU idle time (`/proc/stat`), and
//! the node state at the end of a run (what `numabal advise --state` reads).

use super::records::{NodeState, NodeStateAtEnd};
use super::{NS, TState, World};
use crate::memory::PAGE_BYTES;
use numabal_model::{Pid, Tid};
use numabal_policy::{NodeObs, ProcessObs, ThreadObs};

/// Seconds of CPU sampling behind the node state at the end.
const STATE_WINDOW_S: u64 = 2;

impl World<'_> {
    /// Keep per-CPU busy times at whole seconds (the last few).
    pub(crate) fn snapshot_busy(&mut self) {
        let sec = self.now / NS as u64;
        if self
            .busy_snapshots
            .back()
            .is_some_and(|(t, _)| *t / NS as u64 == sec)
        {
            return;
        }
        self.busy_snapshots
            .push_back((self.now, self.cpu_busy_ns.clone()));
        while self.busy_snapshots.len() > STATE_WINDOW_S as usize + 2 {
            self.busy_snapshots.pop_front();
        }
    }

    /// The nodes now, CPU idle over the last `STATE_WINDOW_S` seconds (or since the start).
    pub(crate) fn node_state_at_end(&self) -> NodeStateAtEnd {
        let want = self.now.saturating_sub(STATE_WINDOW_S * NS as u64);
        let (t0, busy0) = self
            .busy_snapshots
            .iter()
            .rev()
            .find(|(t, _)| *t <= want)
            .map(|(t, b)| (*t, b.clone()))
            .unwrap_or_else(|| (0, vec![0.0; self.cpu_busy_ns.len()]));
        let window = self.now - t0;
        let mem = self.node_obs();
        NodeStateAtEnd {
            t_s: self.now as f64 / NS,
            window_ns: window,
            nodes: (0..self.machine.nr_nodes())
                .map(|n| {
                    let busy: f64 = self.machine.nodes[n]
                        .cpus
                        .iter()
                        .map(|c| self.cpu_busy_ns[c] - busy0[c])
                        .sum();
                    let cpus = self.machine.nodes[n].cpus.count() as f64;
                    NodeState {
                        mem_total_bytes: mem[n].mem_total_bytes,
                        mem_free_bytes: mem[n].mem_free_bytes,
                        cpu_idle_ns: (cpus * window as f64 - busy).max(0.0) as u64,
                    }
                })
                .collect(),
        }
    }

    /// Idle time of every CPU since the start, ns.
    pub(crate) fn cpu_idle_ns(&self) -> Vec<u64> {
        self.cpu_busy_ns
            .iter()
            .map(|&b| (self.now as f64 - b).max(0.0) as u64)
            .collect()
    }

    /// Every node's `MemTotal` and `MemFree`.
    pub(crate) fn node_obs(&self) -> Vec<NodeObs> {
        (0..self.machine.nr_nodes())
            .map(|n| NodeObs {
                // MemTotal counts what the kernel reserved at boot; MemFree does not.
                mem_total_bytes: self.machine.nodes[n].memory_bytes,
                mem_free_bytes: self.node_cap[n].saturating_sub(self.node_used[n])
                    * PAGE_BYTES as u64,
            })
            .collect()
    }

    /// Every live process with mappings, as `/proc/PID` shows it.
    pub(crate) fn process_obs(&self) -> Vec<ProcessObs> {
        self.live_processes()
            .into_iter()
            .map(|i| {
                let p = &self.procs[i];
                let node_bytes = self.process_node_bytes(i);
                let vsize: u64 = p.regions.iter().map(|r| r.pages * PAGE_BYTES as u64).sum();
                let threads: Vec<usize> = p
                    .groups
                    .iter()
                    .flat_map(|g| g.threads.iter().copied())
                    .collect();
                let live = threads
                    .iter()
                    .filter(|&&t| self.threads[t].state != TState::Done)
                    .count();
                let cpu_ns: f64 = threads.iter().map(|&t| self.threads[t].sum_exec_ns).sum();
                ProcessObs {
                    pid: Pid(i as u32 + 1),
                    comm: p.name.clone(),
                    num_threads: live as u32,
                    cpu_time_ns: cpu_ns.max(0.0) as u64,
                    vsize_bytes: vsize,
                    rss_bytes: node_bytes.iter().sum(),
                    node_bytes,
                    // numad marks a process whose numa_maps has a token starting with
                    // `interleave`: weighted interleave's `weighted interleave:N` too.
                    interleaved: p.regions.iter().any(|r| {
                        r.ranges.iter().any(|(_, _, pol)| {
                            matches!(
                                pol,
                                numabal_model::MemPolicy::Interleave(_)
                                    | numabal_model::MemPolicy::WeightedInterleave(_)
                            )
                        })
                    }),
                    mems_allowed: p.cpuset_mems.clone(),
                    // The simulator's qemu-kvm processes name their vCPU threads' group
                    // `vcpu`; its size is the `-smp` numad reads from the command line.
                    kvm_vcpus: p
                        .groups
                        .iter()
                        .find(|g| g.name == "vcpu")
                        .map(|g| g.nthreads),
                }
            })
            .collect()
    }

    /// Every live thread and the CPU it is on.
    pub(crate) fn thread_obs(&self) -> Vec<ThreadObs> {
        self.threads
            .iter()
            .enumerate()
            .filter(|(_, th)| th.state != TState::Done)
            .map(|(t, th)| {
                let cpu = self.sched.tasks[t].cpu;
                ThreadObs {
                    tid: Tid(t as u32 + 1),
                    pid: Pid(th.proc as u32 + 1),
                    cpu,
                    node: cpu.map(|c| self.machine.cpus[c].node),
                    cpu_time_ns: th.sum_exec_ns.max(0.0) as u64,
                    age_ns: Some(self.now - th.start_ns),
                }
            })
            .collect()
    }

    /// The page at `addr` in process `pidx`'s simulated address space: (region, page).
    /// Each mapping starts at its own [`REGION_SPAN`] boundary ([`page_addr`]).
    pub(crate) fn page_at(&self, pidx: usize, addr: u64) -> Option<(usize, u64)> {
        let ri = (addr / REGION_SPAN).checked_sub(1)? as usize;
        let page = (addr % REGION_SPAN) / PAGE_SIZE;
        let r = self.procs[pidx].regions.get(ri)?;
        (page < r.pages).then_some((ri, page))
    }
}

impl World<'_> {
    /// The node of page `page` of region `ri` of process `pidx` (`None`: not present), as
    /// a `move_pages` query (no move) reports it.
    pub(crate) fn page_node(&self, pidx: usize, ri: usize, page: u64) -> Option<usize> {
        let obj = self.procs[pidx].regions.get(ri)?.obj;
        self.objects[obj].node_of(page)
    }

    /// Present entries (base pages, and a THP once) of process `pidx`'s mappings: what a
    /// page-table walk of it (`numa_maps`, `clear_refs`) visits.
    pub(crate) fn present_entries(&self, pidx: usize) -> u64 {
        self.procs[pidx]
            .regions
            .iter()
            .map(|r| {
                let o = &self.objects[r.obj];
                let huge: u64 = (0..o.chunks())
                    .filter(|&c| o.is_huge(c))
                    .map(|c| o.chunk_len(c))
                    .sum();
                let thps = (0..o.chunks()).filter(|&c| o.is_huge(c)).count() as u64;
                o.populated() - huge + thps
            })
            .sum()
    }

    /// A mapping of process `pidx` has an explicit memory policy (the program's `mbind`,
    /// or a policy's): `numa_maps` shows it. A task policy (`set_mempolicy`, numactl) does
    /// not show.
    pub(crate) fn has_vma_policy(&self, pidx: usize) -> bool {
        self.procs[pidx]
            .regions
            .iter()
            .any(|r| r.wl_policy.is_some() || !r.ranges.is_empty())
    }

    /// The main thread of process `pidx` (its first task; `/proc/PID/status` is its).
    pub(crate) fn main_thread(&self, pidx: usize) -> Option<usize> {
        self.procs[pidx]
            .groups
            .first()
            .and_then(|g| g.threads.first().copied())
    }
}

/// Bytes of a base page.
const PAGE_SIZE: u64 = 4096;

/// The address space of a simulated process: region `ri` is mapped at `(ri + 1) *
/// REGION_SPAN` (1 TiB apart, room for any region), so addresses name pages the way a
/// live daemon's samples do.
pub const REGION_SPAN: u64 = 1 << 40;

/// The address of page `page` of region `ri` in a simulated process.
pub fn page_addr(ri: usize, page: u64) -> u64 {
    (ri as u64 + 1) * REGION_SPAN + page * PAGE_SIZE
}
