//! `[daemon]`: the settings of numabal's placement daemon, one table for both places it
//! runs — a host (`numabal daemon`'s TOML file and flags) and the simulator (a scenario's
//! `[daemon]` table, `--set daemon.KEY=VALUE`, where the policy runs as a simulated
//! user-space daemon).
//!
//! ```text
//!   [daemon]                      live  sim
//!   sensor = "auto"                ✓     ✓   auto: hint with numa_balancing=1, else softdirty,
//!                                              else damon
//!   interval_ms, idle_interval_ms  ✓     ✓
//!   migrate_mb_s, min_rss_mb       ✓     ✓
//!   sample_period                  ✓     ✓   one event in this many (pmu: 10000 by default)
//!   softdirty_budget_pct           ✓     ✓
//!   fault_cost_ns                  ✓     ✓   the daemon's assumption, not the kernel's cost
//!   numa_balancing                 -     ✓   the simulated host's kernel.numa_balancing
//!   start_s                        -     ✓   when the simulated daemon starts
//! ```

use crate::InputError;
use crate::KernelVersion;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Passes never come closer together than this, ms: a policy asking for less waits this
/// long. The least `interval_ms` too.
pub const MIN_INTERVAL_MS: u64 = 10;
/// The longest `interval_ms` and `idle_interval_ms`, ms.
pub const MAX_INTERVAL_MS: u64 = 3_600_000;
/// The largest `min_rss_mb` (16 TiB).
pub const MAX_MIN_RSS_MB: u64 = 1 << 24;
/// The `pmu` sensor's default period: one memory access (a 64-byte line) in this many.
pub const PMU_SAMPLE_PERIOD: u64 = 10_000;

/// An access sensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SensorKind {
    /// The kernel's NUMA hinting faults, sampled.
    Hint,
    /// Write faults after clearing soft-dirty bits, sampled.
    SoftDirty,
    /// The kernel's data-access monitor (DAMON): hot regions of each process.
    Damon,
    /// PMU memory-access sampling.
    Pmu,
    /// `numa_maps` and thread CPUs only.
    Maps,
}

/// The names `sensor` takes.
pub const SENSOR_NAMES: &str = "auto, hint, softdirty, damon, pmu, maps";

impl SensorKind {
    /// Its name on the command line, in files and in logs.
    pub fn name(self) -> &'static str {
        match self {
            SensorKind::Hint => "hint",
            SensorKind::SoftDirty => "softdirty",
            SensorKind::Damon => "damon",
            SensorKind::Pmu => "pmu",
            SensorKind::Maps => "maps",
        }
    }

    /// From a name; `auto` is `None`.
    pub fn parse(s: &str) -> Result<Option<SensorKind>, String> {
        Ok(Some(match s {
            "auto" => return Ok(None),
            "hint" => SensorKind::Hint,
            "softdirty" => SensorKind::SoftDirty,
            "damon" => SensorKind::Damon,
            "pmu" => SensorKind::Pmu,
            "maps" => SensorKind::Maps,
            other => {
                return Err(format!(
                    "unknown sensor `{other}` (allowed: {SENSOR_NAMES})"
                ));
            }
        }))
    }

    /// Whether it samples page accesses.
    pub fn samples(self) -> bool {
        !matches!(self, SensorKind::Maps)
    }

    /// Whether its samples are page faults (perf's software page-fault event).
    pub fn samples_faults(self) -> bool {
        matches!(self, SensorKind::Hint | SensorKind::SoftDirty)
    }

    /// What it cannot see.
    pub fn blind_spots(self) -> &'static str {
        match self {
            SensorKind::Hint => {
                "reads only (and writes) the kernel's scanner unmapped: pages it skips (VMAs \
                 it does not scan, pages of other cpusets' skipped tasks) are never seen; every \
                 other page fault (first touch, copy-on-write) is sampled too and counted alike"
            }
            SensorKind::SoftDirty => {
                "writes only: a page only read is never seen; one fault per page per clear, \
                 so the hottest and the coldest written page weigh the same; clearing soft-dirty \
                 bits disturbs any other user of them (CRIU's incremental dumps)"
            }
            SensorKind::Damon => {
                "which regions are hot, not which thread touches them: each hot address is \
                 credited to the thread of its process that ran in the pass, or to two of them \
                 when several ran, so every hot chunk of a process with two running threads \
                 looks shared; one page checked per region \
                 per sample interval, so a region's nr_accesses is the chance that page was \
                 touched, and a small hot area inside a big cold region shows only once the \
                 regions split around it; reads and writes alike, at no fault"
            }
            SensorKind::Pmu => {
                "one access in the sample period, so a page touched rarely may never be seen; \
                 live, not built in this version (no PEBS, IBS or SPE support yet)"
            }
            SensorKind::Maps => {
                "no accesses at all: only where each process's memory is and where its threads \
                 run (numa_maps, task stat)"
            }
        }
    }
}

/// The daemon's settings shared by the host and the simulator (the `[daemon]` table less
/// what only a host has: its policy name, dry run, log and record files, metrics port).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DaemonSettings {
    /// The access sensor; `None` (`auto`): chosen for the host.
    #[serde(default, with = "sensor_name")]
    pub sensor: Option<SensorKind>,
    /// Time between passes, ms; `None`: the policy's own interval, asked after every pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_ms: Option<u64>,
    /// Time between passes while no process is managed, ms.
    #[serde(default = "d_idle_interval")]
    pub idle_interval_ms: u64,
    /// Page migration budget, MiB/s (a token bucket with one second's worth banked).
    #[serde(default = "d_migrate_mb_s")]
    pub migrate_mb_s: f64,
    /// Processes with less resident memory are left alone, MiB.
    #[serde(default = "d_min_rss")]
    pub min_rss_mb: u64,
    /// Sample one event (a page fault; for `pmu` a memory access) in this many; `None`: 1,
    /// for `pmu` [`PMU_SAMPLE_PERIOD`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_period: Option<u64>,
    /// softdirty: the faults it causes may take at most this share of one CPU per process, %.
    #[serde(default = "d_softdirty_budget")]
    pub softdirty_budget_pct: f64,
    /// softdirty: the assumed cost of one write-protect fault, ns (the daemon's pacing
    /// assumption; a simulated kernel charges its own cost).
    #[serde(default = "d_fault_cost")]
    pub fault_cost_ns: u64,
    /// The simulator only: the simulated host's `kernel.numa_balancing` (0 or 1; 1 runs
    /// the Linux 6.x model, `autonuma`, with its default tunables beside the daemon).
    /// `None`: 1 with the `hint` sensor, else 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_balancing: Option<u32>,
    /// The simulator only: the release of the simulated host's kernel, whose NUMA
    /// balancing runs beside the daemon when `numa_balancing` is 1 (`autonuma`'s `kernel`,
    /// `MAJOR.MINOR`). `None`: that model's default release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelVersion>,
    /// The simulator only: the daemon's first pass this many seconds into the run (a
    /// guest script that starts the daemon once its workload has set up); `None`: at 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_s: Option<f64>,
}

fn d_idle_interval() -> u64 {
    5000
}
fn d_migrate_mb_s() -> f64 {
    1024.0
}
fn d_min_rss() -> u64 {
    64
}
fn d_softdirty_budget() -> f64 {
    5.0
}
fn d_fault_cost() -> u64 {
    2000
}

impl Default for DaemonSettings {
    fn default() -> Self {
        DaemonSettings {
            sensor: None,
            interval_ms: None,
            idle_interval_ms: d_idle_interval(),
            migrate_mb_s: d_migrate_mb_s(),
            min_rss_mb: d_min_rss(),
            sample_period: None,
            softdirty_budget_pct: d_softdirty_budget(),
            fault_cost_ns: d_fault_cost(),
            numa_balancing: None,
            kernel: None,
            start_s: None,
        }
    }
}

impl DaemonSettings {
    /// The sample period of sensor `k`.
    pub fn sample_period_of(&self, k: SensorKind) -> u64 {
        self.sample_period.unwrap_or(match k {
            SensorKind::Pmu => PMU_SAMPLE_PERIOD,
            _ => 1,
        })
    }

    /// The values within their ranges; the error names the field (no table prefix) and
    /// what is allowed.
    pub fn validate(&self, source: &str) -> Result<(), InputError> {
        let bad = |field: &str, msg: String| Err(InputError::new(source, field, msg));
        if let Some(v) = self.interval_ms
            && !(MIN_INTERVAL_MS..=MAX_INTERVAL_MS).contains(&v)
        {
            return bad(
                "interval_ms",
                format!("is {v} (allowed: {MIN_INTERVAL_MS} to {MAX_INTERVAL_MS} ms)"),
            );
        }
        if !(MIN_INTERVAL_MS..=MAX_INTERVAL_MS).contains(&self.idle_interval_ms) {
            return bad(
                "idle_interval_ms",
                format!(
                    "is {} (allowed: {MIN_INTERVAL_MS} to {MAX_INTERVAL_MS} ms)",
                    self.idle_interval_ms
                ),
            );
        }
        if !(0.0..=1e6).contains(&self.migrate_mb_s) {
            return bad(
                "migrate_mb_s",
                format!("is {} (allowed: 0 to 1000000 MiB/s)", self.migrate_mb_s),
            );
        }
        if self.min_rss_mb > MAX_MIN_RSS_MB {
            return bad(
                "min_rss_mb",
                format!(
                    "is {} (allowed: 0 to {MAX_MIN_RSS_MB} MiB)",
                    self.min_rss_mb
                ),
            );
        }
        if self.fault_cost_ns > 1_000_000_000 {
            return bad(
                "fault_cost_ns",
                format!("is {} (allowed: 0 to 1000000000 ns)", self.fault_cost_ns),
            );
        }
        if self.sample_period == Some(0) {
            return bad("sample_period", "is 0 (allowed: 1 or more)".into());
        }
        if !(self.softdirty_budget_pct > 0.0 && self.softdirty_budget_pct <= 100.0) {
            return bad(
                "softdirty_budget_pct",
                format!(
                    "is {} (allowed: above 0, at most 100)",
                    self.softdirty_budget_pct
                ),
            );
        }
        if let Some(v) = self.numa_balancing
            && v > 1
        {
            return bad("numa_balancing", format!("is {v} (allowed: 0 or 1)"));
        }
        if let Some(v) = self.start_s
            && !(0.0..=1e6).contains(&v)
        {
            return bad("start_s", format!("is {v} (allowed: 0 to 1000000 s)"));
        }
        Ok(())
    }
}

/// `sensor` as its name, `auto` for `None`.
mod sensor_name {
    use super::*;

    pub fn serialize<S: Serializer>(v: &Option<SensorKind>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(v.map_or("auto", |k| k.name()))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SensorKind>, D::Error> {
        let name = String::deserialize(d)?;
        SensorKind::parse(&name).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<DaemonSettings, InputError> {
        let t: toml::Table = toml::from_str(text).unwrap();
        let s: DaemonSettings = crate::scenario::from_table("d.toml", t)?;
        s.validate("d.toml")?;
        Ok(s)
    }

    #[test]
    fn defaults_are_the_live_daemons() {
        let s = parse("").unwrap();
        assert_eq!(s, DaemonSettings::default());
        assert_eq!(s.migrate_mb_s, 1024.0);
        assert_eq!(s.min_rss_mb, 64);
        assert_eq!(s.sample_period_of(SensorKind::SoftDirty), 1);
        assert_eq!(s.sample_period_of(SensorKind::Pmu), PMU_SAMPLE_PERIOD);
        let back: DaemonSettings =
            toml::from_str(&toml::to_string(&s).unwrap()).expect("round trip");
        assert_eq!(back, s);
    }

    #[test]
    fn bad_values_name_the_field_and_what_is_allowed() {
        for (text, want) in [
            (
                "sensor = \"pebs\"",
                "d.toml: sensor: unknown sensor `pebs` (allowed: auto, hint, softdirty, damon, pmu, maps)",
            ),
            (
                "interval_ms = 5",
                "d.toml: interval_ms: is 5 (allowed: 10 to 3600000 ms)",
            ),
            (
                "migrate_mb_s = -1.0",
                "d.toml: migrate_mb_s: is -1 (allowed: 0 to 1000000 MiB/s)",
            ),
            (
                "sample_period = 0",
                "d.toml: sample_period: is 0 (allowed: 1 or more)",
            ),
            (
                "start_s = -1.0",
                "d.toml: start_s: is -1 (allowed: 0 to 1000000 s)",
            ),
            (
                "softdirty_budget_pct = 0.0",
                "d.toml: softdirty_budget_pct: is 0 (allowed: above 0, at most 100)",
            ),
            (
                "min_rss_mb = 99999999999",
                "d.toml: min_rss_mb: is 99999999999 (allowed: 0 to 16777216 MiB)",
            ),
            (
                "numa_balancing = 2",
                "d.toml: numa_balancing: is 2 (allowed: 0 or 1)",
            ),
        ] {
            assert_eq!(parse(text).unwrap_err().to_string(), want, "{text}");
        }
        let e = parse("sensr = \"hint\"").unwrap_err().to_string();
        assert!(e.starts_with("d.toml: sensr: unknown field `sensr`"), "{e}");
    }
}
