//! Tunables of `stable`. The paper's own constants (the swap threshold 1.5, the 3/4 rule of
//! system-shared balancing) are tunables with the paper's values as defaults; every value the
//! paper leaves open has a documented default (`docs/model-notes.md`, "Stable-NUMA").

use numabal_model::InputError;
use numabal_model::scenario::PolicySpec;
use serde::{Deserialize, Serialize};

/// How an EMA entry of the thread tables starts (§IV-B gives the factor 0.5, not the start).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EmaStart {
    /// The first scan sequence an entry sees sets it to that sequence's count, so a thread
    /// that joins late weighs as much as the threads already there.
    FirstSample,
    /// Entries start at 0: the first sequence counts half.
    Zero,
}

/// When a thread joins its root group (§IV-B: "whenever a thread first joins a root group",
/// without saying when that is).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JoinAt {
    /// When the thread is created (`clone`, or the process's first thread at `exec`): the
    /// root group is the address space, and the thread is in it from the start, in the
    /// sub-group of the node fork balancing put it on.
    Creation,
    /// When profiling of its address space starts: the threads alive at the process's
    /// first scan window join then, later threads as they are created.
    FirstScan,
    /// At the thread's first NUMA hinting fault.
    FirstFault,
}

/// Tunables of `stable`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Tunables {
    /// Scanner: the fixed time between the starts of two scan windows ("Stable-NUMA scans all
    /// the pages in a process and performs the page unmapping at a fixed interval"); the
    /// kernel's `numa_scan_period` without its adaptation. Read by a backend's scanner.
    pub scan_period_ms: u64,
    /// Scanner: pages looked at per scan window (the kernel's `scan_size_mb`). Read by a
    /// backend's scanner.
    pub scan_size_mb: u64,
    /// Unmapping interval, in scan sequences, of a page whose bypass counter is clear; a
    /// counter of n makes it `bypass_base_scans << n`.
    pub bypass_base_scans: u32,
    /// Start of the thread-node and thread-thread EMAs.
    pub ema_start: EmaStart,
    /// Stable-NUMA's own load balancing between sub-groups (`cluster::rebalance`) at a
    /// sequence end where the paper's rule moves nothing.
    pub rebalance: bool,
    /// When a thread joins its root group (from then on the load balancer keeps it inside
    /// its node). Read by a backend; the core joins a thread at its first fault at the
    /// latest.
    pub join_at: JoinAt,
    /// "The load of the source sub-group is sufficiently higher than the destination
    /// sub-group": at least this many more runnable threads.
    pub move_load_margin: u32,
    /// The kernel's inter-node balance threshold: the NUMA sched domain's `imbalance_pct`
    /// (Linux 6.x 117; Linux 5.0, the paper's kernel, 125).
    pub imbalance_pct: u32,
    /// Swap when the source thread shares more than this many times the victim's pages with
    /// the rest of the destination sub-group (the paper's swap threshold, 1.5).
    pub swap_threshold: f64,
    /// Move system-shared pages when the smallest per-node count is below this percentage of
    /// the largest (the paper's three-fourth: 75).
    pub shared_balance_pct: u32,
}

impl Default for Tunables {
    fn default() -> Self {
        Tunables {
            scan_period_ms: 1000,
            scan_size_mb: 256,
            bypass_base_scans: 1,
            ema_start: EmaStart::FirstSample,
            join_at: JoinAt::FirstScan,
            rebalance: true,
            move_load_margin: 2,
            imbalance_pct: 117,
            swap_threshold: 1.5,
            shared_balance_pct: 75,
        }
    }
}

/// Tunable names, in declaration order.
pub const TUNABLES: &[&str] = &[
    "scan_period_ms",
    "scan_size_mb",
    "bypass_base_scans",
    "ema_start",
    "join_at",
    "rebalance",
    "move_load_margin",
    "imbalance_pct",
    "swap_threshold",
    "shared_balance_pct",
];

impl Tunables {
    /// Parse a policy table's tunables; unknown keys and out-of-range values are input
    /// errors naming the key and what is allowed.
    pub fn from_spec(spec: &PolicySpec) -> Result<Tunables, InputError> {
        let t: Tunables = spec.parse_tunables(TUNABLES)?;
        t.validate()
            .map_err(|(field, msg)| InputError::new(&spec.label, format!("policy.{field}"), msg))?;
        Ok(t)
    }

    /// Range checks: `(field, message)` of the first bad value.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        // Upper bounds keep every product below overflow (ms and pages: a week, 1 TiB) and
        // `bypass_base_scans << 7` far below u64.
        let ranges: [(&str, u64, u64, u64); 6] = [
            ("scan_period_ms", self.scan_period_ms, 1, 604_800_000),
            ("scan_size_mb", self.scan_size_mb, 1, 1 << 20),
            (
                "bypass_base_scans",
                self.bypass_base_scans.into(),
                1,
                1 << 20,
            ),
            ("move_load_margin", self.move_load_margin.into(), 1, 1 << 20),
            ("imbalance_pct", self.imbalance_pct.into(), 100, 1000),
            ("shared_balance_pct", self.shared_balance_pct.into(), 1, 100),
        ];
        crate::util::check_ranges(&ranges)?;
        let s = self.swap_threshold;
        if !(1.0..=1000.0).contains(&s) {
            return Err(("swap_threshold", format!("is {s} (allowed: 1.0 to 1000.0)")));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(text: &str) -> PolicySpec {
        crate::util::test::spec("stable", text)
    }

    fn err(text: &str) -> String {
        Tunables::from_spec(&spec(text)).unwrap_err().to_string()
    }

    #[test]
    fn defaults_and_overrides() {
        assert_eq!(Tunables::from_spec(&spec("")).unwrap(), Tunables::default());
        let t = Tunables::from_spec(&spec(
            "bypass_base_scans = 2\nema_start = \"zero\"\nswap_threshold = 2.0\nimbalance_pct = 125",
        ))
        .unwrap();
        assert_eq!(t.bypass_base_scans, 2);
        assert_eq!(t.ema_start, EmaStart::Zero);
        assert_eq!(t.swap_threshold, 2.0);
        assert_eq!(t.imbalance_pct, 125);
    }

    #[test]
    fn bad_values_name_the_field_and_what_is_allowed() {
        assert_eq!(
            err("bypass_base_scans = 0"),
            "test.toml: policy.bypass_base_scans: is 0 (allowed: 1 to 1048576)"
        );
        assert_eq!(
            err("imbalance_pct = 99"),
            "test.toml: policy.imbalance_pct: is 99 (allowed: 100 to 1000)"
        );
        assert_eq!(
            err("shared_balance_pct = 101"),
            "test.toml: policy.shared_balance_pct: is 101 (allowed: 1 to 100)"
        );
        assert_eq!(
            err("swap_threshold = 0.5"),
            "test.toml: policy.swap_threshold: is 0.5 (allowed: 1.0 to 1000.0)"
        );
        assert_eq!(
            err("swap_threshold = nan"),
            "test.toml: policy.swap_threshold: is NaN (allowed: 1.0 to 1000.0)"
        );
        let e = err("ema_start = \"last\"");
        assert!(
            e.starts_with("test.toml: policy.ema_start: is \"last\" (allowed: ")
                && e.contains("first_sample")
                && e.contains("zero")
                && !e.contains('\n'),
            "{e}"
        );
        let e = err("scan_size = 1");
        assert!(
            e.starts_with("test.toml: policy.scan_size: unknown tunable (allowed: scan_period_ms,"),
            "{e}"
        );
        let e = err("move_load_margin = -1");
        assert_eq!(
            e,
            "test.toml: policy.move_load_margin: is -1 (allowed: a whole number from 0 to \
             4294967295)"
        );
    }
}
