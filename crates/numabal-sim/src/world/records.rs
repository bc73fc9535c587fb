//! What the world records as a run goes: run-level metrics, each process at the end,
//! `numastat -p` samples, stall and ping-pong histograms.

use serde::{Deserialize, Serialize};

/// Run-level metrics (SPEC.md interface contract).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Metrics {
    /// Simulated seconds until the last thread of the workload finished.
    pub runtime_s: f64,
    /// Bytes of DRAM traffic to the accessing CPU's node over all DRAM traffic.
    pub local_access_ratio: f64,
    /// PTEs made PROT_NONE by NUMA scanning (base pages).
    pub numa_pte_updates: u64,
    /// PMDs made PROT_NONE by NUMA scanning.
    pub numa_huge_pte_updates: u64,
    /// NUMA hinting faults (events).
    pub numa_hint_faults: u64,
    /// NUMA hinting faults on pages already local.
    pub numa_hint_faults_local: u64,
    /// Pages migrated by NUMA balancing (base pages).
    pub numa_pages_migrated: u64,
    /// Tasks moved to their preferred node (`migrate_task_to`).
    pub numa_task_migrated: u64,
    /// Tasks swapped (`migrate_swap`, counted per task; `autonuma-2012`: tasks exchanged
    /// by `sched_autonuma_balance`).
    pub numa_task_swapped: u64,
    /// Inter-node thread migrations, all causes.
    pub thread_migrations_internode: u64,
    /// CPU seconds spent scanning page tables.
    pub scan_cpu_s: f64,
    /// Of `scan_cpu_s`, the part run by asynchronous scan workers and charged to no task
    /// (`scan_async` without `scan_async_backcharge`; all of knuma_scand's under
    /// `autonuma-2012`).
    pub scan_cpu_hidden_s: f64,
    /// Intervals longer than 1 ms in which a runnable thread was kept from its own work:
    /// one block of kernel work in its context (a scan, a fault with its migration) or a
    /// wait for a CPU a NUMA scan worker or an `autonuma-2012` kernel thread (knuma_scand,
    /// knuma_migratedN) took. Lengths in `stalls`.
    pub stall_events_over_1ms: u64,
    /// The longest such interval, ms (any length; 0 if none).
    pub stall_max_ms: f64,
    /// First-touch page faults (4 KiB pages and THPs).
    pub pgfault: u64,
    /// THPs allocated at first touch.
    pub thp_fault_alloc: u64,
    /// Pages migrated for any reason (base pages).
    pub pgmigrate_success: u64,
    /// Pages that could not be migrated.
    pub pgmigrate_fail: u64,
    /// CPU seconds of user work (memory access and compute) of all threads.
    pub user_cpu_s: f64,
    /// CPU seconds of kernel work charged to threads (faults, migrations, scans).
    pub sys_cpu_s: f64,
    /// CPU seconds spent migrating pages, whoever paid (threads or a placement daemon).
    pub migrate_cpu_s: f64,
    /// GiB of memory accessed by all threads.
    pub accessed_gib: f64,
    /// Throughput in GiB accessed per simulated second.
    pub access_gib_per_s: f64,
    /// `numa_hint_faults` per simulated second of the run.
    pub numa_hint_faults_per_s: f64,
    /// `pgmigrate_success` per simulated second of the run (Stable-NUMA's Figure 16).
    pub page_migrations_per_s: f64,
    /// `thread_migrations_internode` per simulated second of the run (its Figure 15).
    pub thread_migrations_internode_per_s: f64,
    /// TLB shootdowns done by page migrations (one per migrated folio).
    pub migrate_tlb_shootdowns: u64,
    /// Their cost, `migrate_tlb_shootdowns` x `costs.tlb_shootdown_ns`, seconds (part of
    /// `migrate_cpu_s`).
    pub migrate_tlb_shootdown_s: f64,
    /// Inter-node round trips: a thread returned to a node it had left (intervals in
    /// `ping_pong`).
    pub thread_ping_pong_round_trips: u64,
    /// Work units completed by the workload's threads (`work_per_iteration`; daemons not
    /// counted): what an open-ended benchmark reports.
    pub work_units: f64,
    /// `work_units` per second of runtime (after `sim.warmup_s`: the work done after it
    /// over the time after it).
    pub throughput_per_s: f64,
    /// Memory tiering's counters and each tier's memory at the end (absent when memory
    /// tiering was off: `sim.demotion_enabled`, or NUMA balancing's tiering mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiering: Option<super::tiering::TieringStats>,
}

/// One process at the end.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProcessResult {
    /// Simulation-local pid.
    pub pid: u32,
    /// Command name.
    pub name: String,
    /// Resident MiB per node when the process exited (or at the end of the run).
    pub node_mb: Vec<f64>,
    /// Seconds from the process's start to its last thread's exit.
    pub runtime_s: f64,
    /// Threads it ran.
    pub threads: u32,
    /// Its DRAM traffic that was local.
    pub local_access_ratio: f64,
    /// Per node: its threads whose last CPU was there (at the end of the run).
    pub thread_nodes: Vec<u32>,
    /// Work units it completed (`work_per_iteration`).
    pub work_units: f64,
    /// `work_units` per second of its runtime (after `sim.warmup_s`, as above).
    pub throughput_per_s: f64,
}

/// Each live process's memory per node at one moment, as `numastat -p` shows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NumastatSample {
    /// Simulated time, seconds.
    pub t_s: f64,
    /// Live processes with mappings.
    pub processes: Vec<NumastatProcess>,
}

/// One process in a [`NumastatSample`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NumastatProcess {
    /// Process id.
    pub pid: u32,
    /// Its name.
    pub name: String,
    /// MB per node.
    pub node_mb: Vec<f64>,
    /// The node each live thread but the main one last ran on (its CPU's node, running or
    /// not), by thread id: where a placement check reads `/proc/PID/task/TID/stat`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub worker_nodes: Vec<usize>,
    /// Work units it has completed so far (`work_per_iteration`), for throughput over a
    /// part of the run (absent when 0).
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub work_units: f64,
}

/// What `/proc` shows of NUMA balancing at one moment, as the twin harness reads it in
/// the guest every second (scripts/vm/twin.sh): `/proc/vmstat`'s NUMA counters, each
/// workload task's `/proc/PID/sched` NUMA fields and CPU, each process's `numastat -p`.
/// The guest's raw text is parsed into the same record (`numabal twin`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProcSample {
    /// Seconds since the run started (the guest: since the workload started).
    pub t_s: f64,
    /// `/proc/vmstat`, cumulative since the start.
    pub vmstat: VmstatNuma,
    /// Live processes with memory, by pid.
    pub processes: Vec<ProcProcess>,
    /// MGLRU's generations of each node, as `/sys/kernel/debug/lru_gen` lists them (only
    /// with `sim.lru_gen`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lru_gen: Vec<LruGenNode>,
}

/// One node's generations in a [`ProcSample`], oldest first (`min_seq` to `max_seq`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LruGenNode {
    /// The node.
    pub node: usize,
    /// Its generations.
    pub gens: Vec<LruGenGen>,
}

/// One generation: its sequence number, age and anonymous pages (the debugfs file's
/// `seq age_ms anon` columns; the model has no file LRU).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct LruGenGen {
    /// Its sequence number.
    pub seq: u64,
    /// Milliseconds since it was made (`lrugen->timestamps`; the run's start for the first).
    pub age_ms: u64,
    /// Its pages (`lrugen->nr_pages`).
    pub pages: u64,
}

/// `/proc/vmstat`'s NUMA balancing and migration counters (base pages but for the
/// `numa_huge_pte_updates` PMDs and the fault events).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct VmstatNuma {
    /// `numa_pte_updates`.
    pub numa_pte_updates: u64,
    /// `numa_huge_pte_updates`.
    pub numa_huge_pte_updates: u64,
    /// `numa_hint_faults`.
    pub numa_hint_faults: u64,
    /// `numa_hint_faults_local`.
    pub numa_hint_faults_local: u64,
    /// `numa_pages_migrated`.
    pub numa_pages_migrated: u64,
    /// `pgmigrate_success`.
    pub pgmigrate_success: u64,
}

/// One process in a [`ProcSample`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProcProcess {
    /// Process id.
    pub pid: u32,
    /// Its name.
    pub name: String,
    /// `numastat -p`: MB per node.
    pub node_mb: Vec<f64>,
    /// Its threads, by thread id.
    pub tasks: Vec<ProcTask>,
}

/// One thread in a [`ProcProcess`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProcTask {
    /// Thread id.
    pub tid: u32,
    /// The CPU it runs or last ran on (`/proc/PID/task/TID/stat`, field 39).
    pub cpu: usize,
    /// That CPU's node.
    pub node: usize,
    /// Its `/proc/PID/task/TID/sched` NUMA fields (absent without NUMA balancing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched: Option<SchedNuma>,
}

/// The NUMA lines of `/proc/PID/sched` (kernel/sched/debug.c: `sched_show_numa`,
/// `print_numa_stats`). Fault counts are the decayed `NUMA_MEM` statistics.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SchedNuma {
    /// `mm->numa_scan_seq`.
    pub numa_scan_seq: u64,
    /// `numa_pages_migrated`: pages its hinting faults migrated.
    pub numa_pages_migrated: u64,
    /// `numa_preferred_nid` (-1: none).
    pub numa_preferred_nid: i64,
    /// `total_numa_faults`.
    pub total_numa_faults: u64,
    /// `numa_group_id`: the group's creator's pid, 0 when it has no group.
    pub numa_group_id: u32,
    /// Per node: `task_private`, `task_shared`, `group_private`, `group_shared`.
    pub faults: Vec<[u64; 4]>,
}

fn is_zero_f64(x: &f64) -> bool {
    *x == 0.0
}

/// Lower bounds of the stall-length buckets, ms (the last bucket is open-ended).
pub const STALL_BUCKETS_MS: [f64; 10] = [0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0];

/// Stall lengths in buckets: `count[i]` intervals were at least `bucket_ms[i]` and shorter
/// than `bucket_ms[i + 1]`; intervals under the first bound are not counted.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StallHistogram {
    /// Lower bound of each bucket, ms.
    pub bucket_ms: Vec<f64>,
    /// Intervals per bucket.
    pub count: Vec<u64>,
    /// Total length of the counted intervals, ms.
    pub total_ms: f64,
}

impl Default for StallHistogram {
    fn default() -> Self {
        StallHistogram {
            bucket_ms: STALL_BUCKETS_MS.to_vec(),
            count: vec![0; STALL_BUCKETS_MS.len()],
            total_ms: 0.0,
        }
    }
}

impl StallHistogram {
    /// Count one interval of `ms`.
    pub fn record(&mut self, ms: f64) {
        // Most records are single faults of a few microseconds: one comparison.
        if ms < self.bucket_ms[0] {
            return;
        }
        if let Some(i) = self.bucket_ms.iter().rposition(|&b| ms >= b) {
            self.count[i] += 1;
            self.total_ms += ms;
        }
    }

    /// Intervals of at least `ms` (a bucket bound).
    pub fn at_least(&self, ms: f64) -> u64 {
        self.bucket_ms
            .iter()
            .zip(&self.count)
            .filter(|(b, _)| **b >= ms)
            .map(|(_, c)| c)
            .sum()
    }
}

/// Lower bounds of the ping-pong interval buckets, seconds (the last is open-ended).
pub const PING_PONG_BUCKETS_S: [f64; 6] = [0.0, 0.01, 0.1, 1.0, 10.0, 100.0];

/// Ping-pong round trips of threads between nodes (Stable-NUMA's Figure 5): `count[i]`
/// round trips took at least `bucket_s[i]` and less than `bucket_s[i + 1]` from leaving a
/// node to coming back to it. Every return to a node the thread had left counts, timed
/// from its latest departure from that node.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PingPongHistogram {
    /// Lower bound of each bucket, s.
    pub bucket_s: Vec<f64>,
    /// Round trips per bucket.
    pub count: Vec<u64>,
}

impl Default for PingPongHistogram {
    fn default() -> Self {
        PingPongHistogram {
            bucket_s: PING_PONG_BUCKETS_S.to_vec(),
            count: vec![0; PING_PONG_BUCKETS_S.len()],
        }
    }
}

impl PingPongHistogram {
    /// Count one round trip of `s` seconds.
    pub fn record(&mut self, s: f64) {
        if let Some(i) = self.bucket_s.iter().rposition(|&b| s >= b) {
            self.count[i] += 1;
        }
    }

    /// Round trips shorter than `s` (a bucket bound).
    pub fn within(&self, s: f64) -> u64 {
        self.bucket_s
            .iter()
            .zip(&self.count)
            .filter(|(b, _)| **b < s)
            .map(|(_, c)| c)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stall_buckets() {
        let mut h = StallHistogram::default();
        for ms in [0.05, 0.1, 0.99, 1.0, 1.5, 63.9, 64.0, 500.0] {
            h.record(ms);
        }
        // 0.05 is below the first bound.
        assert_eq!(h.count, vec![1, 0, 1, 2, 0, 0, 0, 0, 1, 2]);
        assert_eq!(h.at_least(1.0), 5);
        assert!((h.total_ms - (0.1 + 0.99 + 1.0 + 1.5 + 63.9 + 64.0 + 500.0)).abs() < 1e-9);
    }

    #[test]
    fn ping_pong_buckets() {
        let mut h = PingPongHistogram::default();
        for s in [0.004, 0.01, 0.5, 0.99, 1.0, 9.0, 250.0] {
            h.record(s);
        }
        assert_eq!(h.count, vec![1, 1, 2, 2, 0, 1]);
        assert_eq!(h.within(1.0), 4);
        assert_eq!(h.within(10.0), 6);
    }
}

/// A node at the end of a run, as a placement tool (`numabal advise --state`) reads it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NodeState {
    /// `MemTotal`, bytes.
    pub mem_total_bytes: u64,
    /// `MemFree`, bytes.
    pub mem_free_bytes: u64,
    /// Idle time of the node's CPUs over the window, ns.
    pub cpu_idle_ns: u64,
}

/// Every node at the end of a run, with CPU idle time over its last seconds (like `numad
/// -w` without a daemon, which samples `/proc/stat` twice, 2 s apart).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NodeStateAtEnd {
    /// Simulated time at the end, s.
    pub t_s: f64,
    /// Length of the CPU sampling window, ns.
    pub window_ns: u64,
    /// By node id.
    pub nodes: Vec<NodeState>,
}
