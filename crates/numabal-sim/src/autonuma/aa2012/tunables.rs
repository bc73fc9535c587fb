//! The original AutoNUMA's tunables, under the patch set's sysfs names
//! (`/sys/kernel/mm/autonuma/knuma_scand/`, `.../knuma_migrated/`).

use numabal_model::InputError;
use numabal_model::scenario::PolicySpec;
use serde::{Deserialize, Serialize};

const MS: u64 = 1_000_000;

/// Tunables of `autonuma-2012`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Tunables {
    /// Record a tracepoint-like event log in the result.
    pub trace: bool,
    /// `knuma_scand/scan_sleep_pass_millisecs`: knuma_scand's sleep after a full pass.
    pub scan_sleep_pass_millisecs: u64,
    /// `knuma_scand/scan_sleep_millisecs`: its sleep between steps.
    pub scan_sleep_millisecs: u64,
    /// `knuma_scand/pages_to_scan`, MiB per step.
    pub pages_to_scan_mb: u64,
    /// `knuma_migrated/pages_to_migrate`, MiB per step and node.
    pub pages_to_migrate_mb: u64,
    /// `knuma_migrated/migrate_sleep_millisecs`.
    pub migrate_sleep_millisecs: u64,
}

impl Default for Tunables {
    fn default() -> Self {
        Tunables {
            trace: false,
            scan_sleep_pass_millisecs: 10000,
            scan_sleep_millisecs: 100,
            pages_to_scan_mb: 128,
            pages_to_migrate_mb: 128,
            migrate_sleep_millisecs: 100,
        }
    }
}

/// Every tunable's name, as a policy table writes it.
const NAMES: &[&str] = &[
    "scan_sleep_pass_millisecs",
    "scan_sleep_millisecs",
    "pages_to_scan_mb",
    "pages_to_migrate_mb",
    "migrate_sleep_millisecs",
    "trace",
];

impl Tunables {
    /// Parse a policy table's tunables; unknown keys and out-of-range values are input
    /// errors naming the key.
    pub fn from_spec(spec: &PolicySpec) -> Result<Tunables, InputError> {
        let t: Tunables = spec.parse_tunables(NAMES)?;
        // At least 1; at most a week (ms) or 1 TiB (MiB), keeping every product below u64
        // overflow.
        let checks = [
            (
                "scan_sleep_pass_millisecs",
                t.scan_sleep_pass_millisecs,
                604_800_000,
            ),
            ("scan_sleep_millisecs", t.scan_sleep_millisecs, 604_800_000),
            ("pages_to_scan_mb", t.pages_to_scan_mb, 1 << 20),
            ("pages_to_migrate_mb", t.pages_to_migrate_mb, 1 << 20),
            (
                "migrate_sleep_millisecs",
                t.migrate_sleep_millisecs,
                604_800_000,
            ),
        ];
        for (k, v, _) in checks {
            if v == 0 {
                return Err(error(spec, k, "must be at least 1".into()));
            }
        }
        for (k, v, max) in checks {
            if v > max {
                return Err(error(spec, k, format!("must be at most {max}")));
            }
        }
        Ok(t)
    }

    /// knuma_scand's tunables in the units its walk uses.
    pub fn scand(&self) -> super::ScandTunables {
        super::ScandTunables {
            pages_to_scan: self.pages_to_scan_mb << 8,
            scan_sleep_ns: self.scan_sleep_millisecs * MS,
            scan_sleep_pass_ns: self.scan_sleep_pass_millisecs * MS,
        }
    }

    /// `pages_to_migrate` in 4 KiB pages.
    pub fn pages_to_migrate(&self) -> u64 {
        self.pages_to_migrate_mb << 8
    }
}

fn error(spec: &PolicySpec, key: &str, msg: String) -> InputError {
    InputError::new(&spec.label, format!("policy.{key}"), msg)
}
