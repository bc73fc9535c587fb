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
    /// The policy's tunables as the run used them (the registry's `Built::tunables`).
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub tunables: serde_json::Value,
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
    /// Inter-node thread migrations by Stable-NUMA's classes: `numa_move` (to the preferred
    /// node), `numa_swap` (exchanges, including `autonuma-2012`'s), `load_balance` (the CPU
    /// load balancer: periodic, active, and wakeup placement), `policy_move` (a placement
    /// policy's move, Stable-NUMA's included), `policy_swap` (Stable-NUMA's swap of two
    /// threads), `affinity` (forced by an affinity change).
    pub thread_migrations_by_class: BTreeMap<String, u64>,
    /// Intervals between a thread leaving a node and coming back to it.
    pub ping_pong: PingPongHistogram,
    /// Per process.
    pub processes: Vec<ProcessResult>,
    /// Per node: memory in use at the end, MiB.
    pub node_used_mb: Vec<f64>,
    /// Histogram of the lengths of the intervals in which a runnable thread was kept from
    /// its own work (see `stall_events_over_1ms`).
    pub stalls: StallHistogram,
    /// The kernel NUMA-balancing model's own counters and event log (kernel models only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_balancing: Option<crate::kernel::NumaBalancingReport>,
    /// `stable`'s counters (absent under other policies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stable: Option<crate::kernel::stable::StableReport>,
    /// `numastat -p` samples over the run (`sim.numastat_at_s`, `sim.numastat_every_s`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub numastat: Vec<NumastatSample>,
    /// What `/proc` showed of NUMA balancing every `sim.proc_every_s` (the twin harness's
    /// samples: docs/vm-tests.md, "The twin").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub proc_samples: Vec<ProcSample>,
    /// Per node and per process over the run, every `sim.series_every_s` (see `series`).
    #[serde(default)]
    pub series: crate::series::Series,
    /// A policy's decision log (numad's `Advising pid ...` and `PID ... moved` lines).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policy_log: Vec<crate::userspace::PolicyLogEntry>,
    /// Every node at the end (memory, CPU idle over the last 2 s), for placement advice on
    /// the state a run left (`numabal advise --state`).
    pub node_state: crate::world::records::NodeStateAtEnd,
    /// numabal's placement daemon on the simulated host (a `[daemon]` run, or
    /// `stable-daemon`): its policy object's type, settings and decision log in the live
    /// daemon's format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon: Option<crate::userspace::DaemonReport>,
}

pub use crate::world::records::*;
