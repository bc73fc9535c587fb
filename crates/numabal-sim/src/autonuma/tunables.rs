//! The kernel model's tunables, under their kernel names (debugfs
//! `/sys/kernel/debug/sched/numa_balancing/`), plus the options that switch on the changes
//! proposed in the reference documents.

use super::version::KernelVersion;
use numabal_model::InputError;
use numabal_model::scenario::PolicySpec;
use serde::{Deserialize, Serialize};

/// Tunables and options of `autonuma` (Linux 6.x).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Tunables {
    /// The Linux release whose scan rules the model follows (`autonuma::version`): 6.1
    /// to 7.2, the newest by default. `vma_pid_filter` and `cpuset_skip` turn off a rule
    /// the release has; they cannot give a release one it lacks.
    pub kernel: KernelVersion,
    /// `scan_delay_ms`: delay before a new mm (and a new VMA) is first scanned.
    pub scan_delay_ms: u64,
    /// `scan_period_min_ms`: lower bound of the time to scan the whole RSS.
    pub scan_period_min_ms: u64,
    /// `scan_period_max_ms`: upper bound of the time to scan the whole RSS.
    pub scan_period_max_ms: u64,
    /// `scan_size_mb`: pages protected per scan window.
    pub scan_size_mb: u64,
    /// The v6.4+ per-VMA PID-activity filter (`vma_is_accessed`).
    pub vma_pid_filter: bool,
    /// The cpuset scan-skip patch: return early from `task_numa_work` when the cpuset allows one memory
    /// node (v6.16+).
    pub cpuset_skip: bool,
    /// The async-scan RFC: run the scan in a kernel worker on the task's node instead of the task.
    pub scan_async: bool,
    /// The async-scan RFC: charge the worker's CPU time back to the task.
    pub scan_async_backcharge: bool,
    /// The async-scan RFC (Mel Gorman): scan only between the lowest and highest address that took
    /// a hinting fault in the previous pass.
    pub scan_window: bool,
    /// Record a tracepoint-like event log in the result.
    pub trace: bool,
    /// `kernel.numa_balancing`: 1 normal balancing, 2 memory tiering (promotion of hot
    /// slow-tier pages only), 3 both.
    #[serde(skip_serializing_if = "is_one")]
    pub numa_balancing: u8,
    /// `kernel.numa_balancing_promote_rate_limit_MBps`: promotion candidates per second
    /// and target node, MB (tiering mode).
    #[serde(skip_serializing_if = "is_default_rate_limit")]
    pub promote_rate_limit_mbps: u64,
    /// debugfs `numa_balancing/hot_threshold_ms`: a slow-tier page is hot when it faults
    /// sooner than this after the scan that protected it (tiering mode).
    #[serde(skip_serializing_if = "is_default_hot_threshold")]
    pub hot_threshold_ms: u64,
    /// Hot-page selection by hint-fault latency (6.1); false: every slow-tier fault
    /// promotes, as in 5.18-6.0 (tiering mode).
    #[serde(skip_serializing_if = "is_true")]
    pub promote_hot_selection: bool,
    /// The hot threshold's automatic adjustment to the rate limit (6.1; tiering mode).
    #[serde(skip_serializing_if = "is_true")]
    pub promote_adjust_threshold: bool,
    /// `/sys/kernel/mm/numa/demotion_enabled` as this kernel is configured (either this or
    /// `sim.demotion_enabled` turns it on).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub demotion_enabled: bool,
    /// TPP's promotion rule (tiering mode): a slow-tier page is promoted only from the
    /// active LRU, so its first hinting fault marks it accessed and a later one promotes it;
    /// no hot threshold.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub promote_active_lru: bool,
    /// TPP's `vm.demote_scale_factor`, in 1/10000 of a top-tier node: kswapd keeps that
    /// much free (WMARK_DEMOTE), woken when an allocation leaves less; 0: upstream's marks.
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub demote_scale_factor: u64,
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

fn is_one(v: &u8) -> bool {
    *v == 1
}
fn is_default_rate_limit(v: &u64) -> bool {
    *v == 65536
}
fn is_default_hot_threshold(v: &u64) -> bool {
    *v == 1000
}
fn is_true(v: &bool) -> bool {
    *v
}

impl Default for Tunables {
    fn default() -> Self {
        Tunables {
            kernel: KernelVersion::NEWEST,
            scan_delay_ms: 1000,
            scan_period_min_ms: 1000,
            scan_period_max_ms: 60000,
            scan_size_mb: 256,
            vma_pid_filter: true,
            cpuset_skip: true,
            scan_async: false,
            scan_async_backcharge: false,
            scan_window: false,
            trace: false,
            numa_balancing: 1,
            promote_rate_limit_mbps: 65536,
            hot_threshold_ms: 1000,
            promote_hot_selection: true,
            promote_adjust_threshold: true,
            demotion_enabled: false,
            promote_active_lru: false,
            demote_scale_factor: 0,
        }
    }
}

/// Every tunable's name, as a policy table writes it.
const NAMES: &[&str] = &[
    "kernel",
    "scan_delay_ms",
    "scan_period_min_ms",
    "scan_period_max_ms",
    "scan_size_mb",
    "vma_pid_filter",
    "cpuset_skip",
    "scan_async",
    "scan_async_backcharge",
    "scan_window",
    "trace",
    "numa_balancing",
    "promote_rate_limit_mbps",
    "hot_threshold_ms",
    "promote_hot_selection",
    "promote_adjust_threshold",
    "demotion_enabled",
    "promote_active_lru",
    "demote_scale_factor",
];

impl Tunables {
    /// Parse a policy table's tunables over `defaults` (a named configuration's own,
    /// `key = value` in the policy table's syntax), the given keys winning.
    pub fn from_spec_over(
        spec: &PolicySpec,
        defaults: &[(&str, toml::Value)],
    ) -> Result<Tunables, InputError> {
        let mut s = spec.clone();
        for (k, v) in defaults {
            s.tunables.entry(k.to_string()).or_insert_with(|| v.clone());
        }
        Tunables::from_spec(&s)
    }

    /// Parse a policy table's tunables; unknown keys and out-of-range values are input
    /// errors naming the key.
    pub fn from_spec(spec: &PolicySpec) -> Result<Tunables, InputError> {
        let t: Tunables = spec.parse_tunables(NAMES)?;
        let positive = [
            ("scan_period_min_ms", t.scan_period_min_ms),
            ("scan_period_max_ms", t.scan_period_max_ms),
            ("scan_size_mb", t.scan_size_mb),
        ];
        for (k, v) in positive {
            if v == 0 {
                return Err(InputError::new(
                    &spec.label,
                    format!("policy.{k}"),
                    "must be at least 1",
                ));
            }
        }
        if !(1..=3).contains(&t.numa_balancing) {
            return Err(InputError::new(
                &spec.label,
                "policy.numa_balancing",
                format!(
                    "is {} (allowed: 1 normal balancing, 2 memory tiering, 3 both)",
                    t.numa_balancing
                ),
            ));
        }
        if t.promote_rate_limit_mbps == 0 || t.hot_threshold_ms == 0 {
            let k = if t.hot_threshold_ms == 0 {
                "hot_threshold_ms"
            } else {
                "promote_rate_limit_mbps"
            };
            return Err(InputError::new(
                &spec.label,
                format!("policy.{k}"),
                "must be at least 1",
            ));
        }
        if t.scan_async_backcharge && !t.scan_async {
            return Err(InputError::new(
                &spec.label,
                "policy.scan_async_backcharge",
                "charges the asynchronous scan worker back to the task: needs scan_async = true (allowed: false without it)",
            ));
        }
        if t.scan_period_min_ms > t.scan_period_max_ms {
            return Err(InputError::new(
                &spec.label,
                "policy.scan_period_min_ms",
                format!(
                    "must not exceed scan_period_max_ms ({})",
                    t.scan_period_max_ms
                ),
            ));
        }
        // Keep every product below u64 overflow (ms and pages): a week, 1 TiB.
        let limits = [
            ("scan_delay_ms", t.scan_delay_ms, 604_800_000),
            ("scan_period_max_ms", t.scan_period_max_ms, 604_800_000),
            ("scan_size_mb", t.scan_size_mb, 1 << 20),
            (
                "promote_rate_limit_mbps",
                t.promote_rate_limit_mbps,
                1 << 30,
            ),
            ("hot_threshold_ms", t.hot_threshold_ms, 3_600_000),
            ("demote_scale_factor", t.demote_scale_factor, 10_000),
        ];
        for (k, v, max) in limits {
            if v > max {
                return Err(InputError::new(
                    &spec.label,
                    format!("policy.{k}"),
                    format!("must be at most {max}"),
                ));
            }
        }
        Ok(t)
    }

    /// Memory-tiering mode (`NUMA_BALANCING_MEMORY_TIERING`).
    pub fn tiering(&self) -> bool {
        self.numa_balancing & 2 != 0
    }
    /// Normal balancing (`NUMA_BALANCING_NORMAL`).
    pub fn normal(&self) -> bool {
        self.numa_balancing & 1 != 0
    }

    /// `scan_size_mb` in 4 KiB pages.
    pub fn scan_pages(&self) -> u64 {
        self.scan_size_mb << (20 - 12)
    }
}
