//! What a run produces: the JSON contract of SPEC.md ("metrics", "processes") plus
//! detail for reports. Counter names follow `/proc/vmstat` where one exists.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The scenario a result belongs to.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ScenarioSummary {
    /// Machine name.
    pub machine: String,
    /// Workload name.
    pub workload: String,
    /// Policy name.
    pub policy: String,
    /// Seed.
    pub seed: u64,
    /// `--set` overrides as given.
    pub overrides: Vec<String>,
}

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
    /// Tasks swapped (`migrate_swap`, counted per task).
    pub numa_task_swapped: u64,
    /// Inter-node thread migrations, all causes.
    pub thread_migrations_internode: u64,
    /// CPU seconds spent scanning page tables.
    pub scan_cpu_s: f64,
    /// Kernel work blocks (faults, migrations, scans) longer than 1 ms in one thread.
    pub stall_events_over_1ms: u64,
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
}

/// The result of one run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunResult {
    /// numabal version.
    pub numabal_version: String,
    /// What was run.
    pub scenario: ScenarioSummary,
    /// Whether every thread finished before `sim.max_time_s`.
    pub finished: bool,
    /// Run metrics.
    pub metrics: Metrics,
    /// Inter-node thread migrations by cause.
    pub thread_migrations_by_cause: BTreeMap<String, u64>,
    /// Per process.
    pub processes: Vec<ProcessResult>,
    /// Per node: memory in use at the end, MiB.
    pub node_used_mb: Vec<f64>,
    /// The kernel NUMA-balancing model's own counters and event log (kernel models only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_balancing: Option<NumaBalancingReport>,
}

/// What the kernel model reports beyond `/proc/vmstat`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NumaBalancingReport {
    /// Counters (scans, skips by reason, groups, stick events).
    pub stats: crate::engine::NumabStats,
    /// Tracepoint-like events (with `policy.trace = true`), at most 100000.
    pub trace: Vec<crate::engine::TraceEvent>,
}
