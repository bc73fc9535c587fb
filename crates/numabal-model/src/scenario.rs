//! Scenarios: a machine, a workload, a policy and simulator settings, each from a preset or
//! a TOML file, with `--set key=value` overrides applied by dotted name before the typed
//! parse, so an unknown key fails exactly like an unknown key in a file.
//!
//! File access is the caller's: a [`Resolver`] turns a name into text. This keeps the
//! crate free of I/O and lets tests use in-memory sources.

use crate::daemon::DaemonSettings;
use crate::error::{InputError, path_text};
use crate::machine::{Machine, MachineSpec};
use crate::presets;
use crate::workload::{Workload, WorkloadSpec};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// What a name refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A machine preset or file.
    Machine,
    /// A workload preset or file.
    Workload,
    /// A policy name or file.
    Policy,
    /// A scenario file.
    Scenario,
    /// A suite preset or file (`numabal suite`).
    Suite,
}

impl Kind {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Machine => "machine",
            Kind::Workload => "workload",
            Kind::Policy => "policy",
            Kind::Scenario => "scenario",
            Kind::Suite => "suite",
        }
    }
}

/// Text and a label naming where it came from (a path, or `preset <name>`).
#[derive(Debug, Clone)]
pub struct Source {
    /// For error messages.
    pub label: String,
    /// TOML text.
    pub text: String,
}

/// Turns a name given on the command line or in a file into text.
pub trait Resolver {
    /// Look up `name` of the given kind. Policies are names handled by the caller; a
    /// resolver only needs to answer for files.
    fn resolve(&self, kind: Kind, name: &str) -> Result<Source, InputError>;
}

/// Presets only: what tests and library users get without a file system.
pub struct PresetResolver;

impl Resolver for PresetResolver {
    fn resolve(&self, kind: Kind, name: &str) -> Result<Source, InputError> {
        preset_source(kind, name).ok_or_else(|| unknown_name(kind, name, false))
    }
}

/// The preset of that kind and name, if there is one.
pub fn preset_source(kind: Kind, name: &str) -> Option<Source> {
    let text = match kind {
        Kind::Machine => presets::machine(name),
        Kind::Workload => presets::workload(name),
        Kind::Suite => presets::suite(name),
        _ => None,
    }?;
    Some(Source {
        label: format!("preset {name}"),
        text: text.to_string(),
    })
}

/// The error for a name that is neither a preset nor a file.
pub fn unknown_name(kind: Kind, name: &str, files_allowed: bool) -> InputError {
    let names: Vec<&str> = match kind {
        Kind::Machine => presets::MACHINES.iter().map(|(n, _)| *n).collect(),
        Kind::Workload => presets::WORKLOADS.iter().map(|(n, _)| *n).collect(),
        Kind::Suite => presets::SUITES.iter().map(|(n, _)| *n).collect(),
        _ => Vec::new(),
    };
    let files = if files_allowed {
        ", or a path to a TOML file"
    } else {
        ""
    };
    // A suite is named by `numabal suite`'s first argument, not by an option.
    let source = match kind {
        Kind::Suite => "numabal suite".to_string(),
        _ => format!("--{}", kind.as_str()),
    };
    InputError::new(
        source,
        "",
        format!(
            "unknown {} `{name}` (allowed: {}{files})",
            kind.as_str(),
            names.join(", ")
        ),
    )
}

/// Parse TOML text; errors give line and column.
pub fn parse_toml(src: &Source) -> Result<toml::Table, InputError> {
    toml::from_str::<toml::Table>(&src.text).map_err(|e| {
        let (line, col) = match e.span() {
            Some(span) => line_col(&src.text, span.start),
            None => (0, 0),
        };
        InputError::new(
            format!("{}:{line}:{col}", src.label),
            "",
            format!("malformed TOML: {}", e.message()),
        )
    })
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
    (line, col)
}

/// Deserialize a table into `T`, naming the failing field.
pub fn from_table<T: DeserializeOwned>(label: &str, table: toml::Table) -> Result<T, InputError> {
    from_value(label, toml::Value::Table(table))
}

/// Deserialize a value into `T`. The one place user input meets serde: errors name the
/// field by its path and say what is allowed in plain words ([`InputError::parsed`]).
pub fn from_value<T: DeserializeOwned>(label: &str, value: toml::Value) -> Result<T, InputError> {
    deserialize_value(value).map_err(|(path, msg)| InputError::parsed(label, &path, &msg))
}

/// Deserialize a value into `T`; an error as (path, message).
pub(crate) fn deserialize_value<T: DeserializeOwned>(
    value: toml::Value,
) -> Result<T, (String, String)> {
    serde_path_to_error::deserialize(value.clone()).map_err(|e| {
        let msg = e.inner().message();
        // toml says neither what was given nor which names are allowed when a field that
        // takes a name (`pattern = "zipf"`) gets something else: ask again with a name
        // that cannot be one, and serde lists them.
        let msg = if msg.contains("expected string only") || msg.starts_with("wanted exactly 1") {
            names_allowed::<T>(value, e.path()).unwrap_or_else(|| msg.to_string())
        } else {
            msg.to_string()
        };
        (path_text(e.path()), msg)
    })
}

/// For a field that takes a name but was given `value`'s entry at `path`: `is 5 (allowed:
/// never, madvise, always)`.
fn names_allowed<T: DeserializeOwned>(
    mut value: toml::Value,
    path: &serde_path_to_error::Path,
) -> Option<String> {
    use serde_path_to_error::Segment;
    let mut at = &mut value;
    for seg in path.iter() {
        at = match (seg, at) {
            (Segment::Map { key }, toml::Value::Table(t)) => t.get_mut(key)?,
            (Segment::Seq { index }, toml::Value::Array(a)) => a.get_mut(*index)?,
            _ => return None,
        };
    }
    let given = std::mem::replace(at, toml::Value::String("\u{1}".into()));
    let e = serde_path_to_error::deserialize::<_, T>(value).err()?;
    let msg = e.inner().message();
    let (_, names) = crate::error::quoted(msg.strip_prefix("unknown variant ")?)?;
    Some(format!(
        "is {given} ({})",
        crate::error::allowed_names(names)
    ))
}

/// Transparent huge page mode (`/sys/kernel/mm/transparent_hugepage/enabled`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Thp {
    /// No THP.
    Never,
    /// THP only for regions that ask (`thp = true`, `MADV_HUGEPAGE`): Debian's default.
    #[default]
    Madvise,
    /// THP for every anonymous region.
    Always,
}

/// `[sim]`: simulator settings.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SimSettings {
    /// Seed of every random choice in the run.
    #[serde(default = "d_seed")]
    pub seed: u64,
    /// Scheduler tick (CONFIG_HZ=250 gives 4 ms). Also the longest interval over which
    /// access rates are held constant.
    #[serde(default = "d_tick")]
    pub tick_ms: f64,
    /// Stop the run here even if threads have not finished.
    #[serde(default = "d_max_time")]
    pub max_time_s: f64,
    /// Transparent huge pages.
    #[serde(default)]
    pub transparent_hugepage: Thp,
    /// Check every invariant (pages on one node, node capacity, affinity) at every tick.
    #[serde(default)]
    pub check_invariants: bool,
    /// Record each live process's memory per node (`numastat -p`) at these times, seconds
    /// (each rounded up to a tick, so sampling never changes the run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub numastat_at_s: Vec<f64>,
    /// ...and every this many seconds (0: not periodically).
    #[serde(default, skip_serializing_if = "is_zero_f")]
    pub numastat_every_s: f64,
    /// Sample `/proc` as the twin harness reads it in the guest (`/proc/vmstat`'s NUMA
    /// counters, each task's `/proc/PID/sched` NUMA fields and CPU, `numastat -p`) every
    /// this many seconds (0: never): the result's `proc_samples`.
    #[serde(default, skip_serializing_if = "is_zero_f")]
    pub proc_every_s: f64,
    /// The run's time series (per node and per process: memory, local access ratio,
    /// hinting faults, pages migrated, thread migrations, scan CPU) every this many
    /// seconds; 0: automatically, every second and then every 2, 4, ... s as the run grows,
    /// so it keeps 128 to 256 samples.
    #[serde(default, skip_serializing_if = "is_zero_f")]
    pub series_every_s: f64,
    /// The scheduler lets a NUMA node run a few more tasks than its neighbours before it
    /// balances (Linux 5.7+: `adjust_numa_imbalance`, sized by `imb_numa_nr` since 5.16),
    /// at fork and in load balancing. `false`: kernels before 5.7 (RHEL 6's 2.6.32, RHEL
    /// 7's 3.10), which send a new task to the idlest node and balance nodes without it.
    #[serde(default = "d_true", skip_serializing_if = "is_true")]
    pub allow_numa_imbalance: bool,
    /// Work done before this time is left out of `throughput_per_s` (a benchmark's ramp-up,
    /// as SPECjbb's 30 s before each measurement); 0 counts the whole run.
    #[serde(default, skip_serializing_if = "is_zero_f")]
    pub warmup_s: f64,
    /// `/sys/kernel/mm/numa/demotion_enabled`: reclaim on a node with a lower memory tier
    /// demotes its cold pages there instead of leaving them (kswapd and direct reclaim).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub demotion_enabled: bool,
    /// Cache-aware scheduling (`CONFIG_SCHED_CACHE`, Linux 7.2; its switch is debugfs's
    /// `sched/llc_balancing/enabled`, on by default there): the load balancer gathers a
    /// process's threads on the LLC where it has run most. Off by default in the model
    /// (docs/model-notes.md, "Cache-aware scheduling").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub llc_balancing: bool,
    /// MGLRU, the multi-gen LRU (`CONFIG_LRU_GEN_ENABLED`, on in Debian's 6.12 and 7.2):
    /// reclaim with memory tiering on demotes in MGLRU's order (generations, aging walks,
    /// look-around) instead of the model's CLOCK. Off by default (docs/model-notes.md,
    /// "MGLRU").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lru_gen: bool,
    /// DAMON_STAT (`CONFIG_DAMON_STAT_ENABLED_DEFAULT`, Linux 6.17+, on in Debian's 7.2):
    /// a kdamond sampling the physical address space from boot, whose checks clear the
    /// accessed bits MGLRU's aging walk reads. Off by default (docs/model-notes.md,
    /// "DAMON_STAT").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub damon_stat: bool,
    /// `vm.min_free_kbytes`, KiB: the memory the kernel keeps free, from which every
    /// node's watermarks follow (min, low, high, promo). Unset: the value the kernel sets
    /// at boot, from the machine's memory and, with transparent huge pages on, khugepaged's
    /// floor (docs/model-notes.md, "Memory tiering").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_free_kbytes: Option<u64>,
}

/// The largest `sim.min_free_kbytes`: 64 GiB.
const MAX_MIN_FREE_KBYTES: u64 = 64 << 20;

fn is_zero_f(x: &f64) -> bool {
    *x == 0.0
}

fn d_true() -> bool {
    true
}

fn is_true(x: &bool) -> bool {
    *x
}

fn d_seed() -> u64 {
    1
}
fn d_tick() -> f64 {
    4.0
}
fn d_max_time() -> f64 {
    86400.0
}

impl Default for SimSettings {
    fn default() -> Self {
        SimSettings {
            seed: d_seed(),
            tick_ms: d_tick(),
            max_time_s: d_max_time(),
            transparent_hugepage: Thp::default(),
            check_invariants: false,
            numastat_at_s: Vec::new(),
            numastat_every_s: 0.0,
            proc_every_s: 0.0,
            series_every_s: 0.0,
            allow_numa_imbalance: true,
            warmup_s: 0.0,
            demotion_enabled: false,
            llc_balancing: false,
            lru_gen: false,
            damon_stat: false,
            min_free_kbytes: None,
        }
    }
}

impl SimSettings {
    fn validate(&self, label: &str) -> Result<(), InputError> {
        if !(self.tick_ms >= 0.1 && self.tick_ms <= 100.0) {
            return Err(InputError::new(
                label,
                "tick_ms",
                format!("is {} (allowed: 0.1 to 100)", self.tick_ms),
            ));
        }
        if let Some(t) = self
            .numastat_at_s
            .iter()
            .find(|t| !(**t >= 0.0 && **t <= 1e7))
        {
            return Err(InputError::new(
                label,
                "numastat_at_s",
                format!("has {t} (allowed: times from 0 to 10000000 s)"),
            ));
        }
        // Sampling intervals: 0 (what 0 means), or a tick to 10^7 s.
        let tick_s = self.tick_ms / 1e3;
        for (field, e, zero) in [
            ("numastat_every_s", self.numastat_every_s, "0"),
            ("proc_every_s", self.proc_every_s, "0"),
            ("series_every_s", self.series_every_s, "0 for automatic"),
        ] {
            if !(e == 0.0 || (e >= tick_s && e <= 1e7)) {
                return Err(InputError::new(
                    label,
                    field,
                    format!("is {e} (allowed: {zero}, or a tick ({tick_s} s) to 10000000)"),
                ));
            }
        }
        if let Some(kb) = self.min_free_kbytes
            && !(128..=MAX_MIN_FREE_KBYTES).contains(&kb)
        {
            return Err(InputError::new(
                label,
                "min_free_kbytes",
                format!(
                    "is {kb} (allowed: 128 to {MAX_MIN_FREE_KBYTES} KiB, or unset for the boot value)"
                ),
            ));
        }
        if !(self.max_time_s > 0.0 && self.max_time_s <= 1e7) {
            return Err(InputError::new(
                label,
                "max_time_s",
                format!("is {} (allowed: > 0 and <= 10000000)", self.max_time_s),
            ));
        }
        if !(self.warmup_s >= 0.0 && self.warmup_s < self.max_time_s) {
            return Err(InputError::new(
                label,
                "warmup_s",
                format!(
                    "is {} (allowed: >= 0 and below max_time_s, {})",
                    self.warmup_s, self.max_time_s
                ),
            ));
        }
        Ok(())
    }
}

/// A policy by kind plus its tunables; the policy crate validates the tunables.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicySpec {
    /// `none`, `bind`, ...
    pub kind: String,
    /// Remaining keys of the table.
    pub tunables: toml::Table,
    /// Where it came from, for errors.
    pub label: String,
}

impl PolicySpec {
    /// Deserialize the tunables into a policy's own type. A wrong type or an unknown key is
    /// an input error naming `policy.<key>`; unknown keys list `allowed`.
    pub fn parse_tunables<T: serde::de::DeserializeOwned>(
        &self,
        allowed: &[&str],
    ) -> Result<T, InputError> {
        from_table(&self.label, self.tunables.clone()).map_err(|mut e| {
            // serde lists every field of the type; a flavour takes only some of them.
            if e.message.starts_with("unknown field") {
                e.message = format!("unknown tunable (allowed: {})", allowed.join(", "));
            }
            e.within("policy")
        })
    }
}

/// Everything a run needs, validated.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The machine.
    pub machine: Machine,
    /// The workload checked against the machine.
    pub workload: Workload,
    /// The policy and its tunables.
    pub policy: PolicySpec,
    /// Simulator settings.
    pub sim: SimSettings,
    /// The policy runs as numabal's placement daemon on the simulated host, with these
    /// settings (a `[daemon]` table or `--set daemon.KEY=VALUE`); `None`: no such table.
    pub daemon: Option<DaemonSettings>,
    /// The `--set` overrides applied, as given.
    pub overrides: Vec<String>,
}

/// What the user asked for: names (presets or paths) and overrides.
#[derive(Debug, Clone, Default)]
pub struct ScenarioInput {
    /// A scenario file giving any of the others.
    pub scenario: Option<String>,
    /// Machine name or path.
    pub machine: Option<String>,
    /// Workload name or path.
    pub workload: Option<String>,
    /// Policy name or path.
    pub policy: Option<String>,
    /// Seed (overrides the scenario's).
    pub seed: Option<u64>,
    /// `key=value` overrides.
    pub sets: Vec<String>,
}

/// One parsed `--set`.
#[derive(Debug, Clone)]
struct Override {
    raw: String,
    section: String,
    path: Vec<String>,
    value: toml::Value,
}

fn parse_override(raw: &str) -> Result<Override, InputError> {
    let label = format!("--set {raw}");
    let (key, val) = raw.split_once('=').ok_or_else(|| {
        InputError::new(
            &label,
            "",
            "expected key=value, e.g. policy.scan_size_mb=512",
        )
    })?;
    let mut parts: Vec<String> = key
        .trim()
        .split('.')
        .map(|s| s.trim().to_string())
        .collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(InputError::new(&label, key, "empty component in the key"));
    }
    let section = parts.remove(0);
    if !["machine", "workload", "policy", "sim", "daemon"].contains(&section.as_str()) {
        return Err(InputError::new(
            &label,
            key,
            format!(
                "unknown section `{section}` (allowed: machine, workload, policy, sim, daemon)"
            ),
        ));
    }
    if parts.is_empty() {
        return Err(InputError::new(
            &label,
            key,
            format!("name a field inside `{section}`, e.g. {section}.<field>"),
        ));
    }
    // A TOML value if it parses as one (numbers, booleans, arrays, quoted strings), else a bare string.
    let value = match toml::from_str::<toml::Table>(&format!("v = {}", val.trim())) {
        Ok(mut t) => t
            .remove("v")
            .unwrap_or(toml::Value::String(val.to_string())),
        Err(_) => toml::Value::String(val.trim().to_string()),
    };
    Ok(Override {
        raw: raw.to_string(),
        section,
        path: parts,
        value,
    })
}

fn apply_override(table: &mut toml::Table, ov: &Override) -> Result<(), InputError> {
    let label = format!("--set {}", ov.raw);
    let full = format!("{}.{}", ov.section, ov.path.join("."));
    let mut cur: &mut toml::Value = &mut toml::Value::Table(std::mem::take(table));
    // Work on an owned Value, then put it back.
    let mut root = std::mem::replace(cur, toml::Value::Boolean(false));
    cur = &mut root;
    let n = ov.path.len();
    for (i, seg) in ov.path.iter().enumerate() {
        let last = i + 1 == n;
        match cur {
            toml::Value::Table(t) => {
                if last {
                    t.insert(seg.clone(), ov.value.clone());
                    break;
                }
                if !t.contains_key(seg) {
                    // Let the typed parse report unknown keys; create intermediate tables.
                    t.insert(seg.clone(), toml::Value::Table(toml::Table::new()));
                }
                cur = t.get_mut(seg).expect("just inserted");
            }
            toml::Value::Array(a) => {
                let idx: usize = seg.parse().map_err(|_| {
                    InputError::new(
                        &label,
                        &full,
                        format!(
                            "`{seg}` must be an array index (0-{})",
                            a.len().saturating_sub(1)
                        ),
                    )
                })?;
                if idx >= a.len() {
                    return Err(InputError::new(
                        &label,
                        &full,
                        format!(
                            "index {idx} is out of range (the array has {} entries)",
                            a.len()
                        ),
                    ));
                }
                if last {
                    a[idx] = ov.value.clone();
                    break;
                }
                cur = &mut a[idx];
            }
            _ => {
                return Err(InputError::new(
                    &label,
                    &full,
                    format!("`{seg}`'s parent is not a table or an array"),
                ));
            }
        }
    }
    match root {
        toml::Value::Table(t) => {
            *table = t;
            Ok(())
        }
        _ => unreachable!("root is a table"),
    }
}

/// Where a section's keys sit, so an error names a key as the user wrote it: in their own
/// file or preset (`topology.sockets` of a machine file), or in a table of a scenario file
/// (`machine.topology.sockets`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    OwnFile,
    Inline,
}

/// Deserialize `table` for section `section` (see [`place`]).
fn typed<T: DeserializeOwned>(
    label: &str,
    section: &str,
    at: Place,
    table: toml::Table,
    ovs: &[Override],
) -> Result<T, InputError> {
    from_table::<T>(label, table).map_err(|e| place(e, section, at, ovs))
}

/// An error about a section's field, reported where the field was written: against the
/// `--set` that put it there (`--set machine.memory.bogus=1: machine.memory: ...`), in a
/// scenario file's table (`machine.memory...`), or in its own file (`memory...`).
fn place(mut e: InputError, section: &str, at: Place, ovs: &[Override]) -> InputError {
    let f = e.field.replace('[', ".").replace(']', "");
    let blamed = ovs
        .iter()
        .filter(|o| o.section == section)
        .rev()
        .find(|o| set_blamed(&o.path.join("."), &f, &e.message));
    if let Some(ov) = blamed {
        e.source = format!("--set {}", ov.raw);
        return e.within(section);
    }
    match at {
        Place::Inline => e.within(section),
        Place::OwnFile => e,
    }
}

/// Did the `--set` of `path` cause an error at `field` (both dotted, indexes as numbers)?
/// Yes if the error is at or inside the value it set, or at a table above it (an unknown
/// key, a check of the whole table).
pub fn set_blamed(path: &str, field: &str, message: &str) -> bool {
    if field.is_empty() {
        let first = path.split('.').next().unwrap_or_default();
        return message.contains(&format!("`{first}`"));
    }
    field == path
        || field.starts_with(&format!("{path}."))
        || path.starts_with(&format!("{field}."))
}

/// Load a machine by preset name or file, with `machine.*` overrides (`--set`).
pub fn load_machine(
    name: &str,
    sets: &[String],
    resolver: &dyn Resolver,
) -> Result<Machine, InputError> {
    let ovs: Vec<Override> = sets
        .iter()
        .map(|s| parse_override(s))
        .collect::<Result<_, _>>()?;
    if let Some(o) = ovs.iter().find(|o| o.section != "machine") {
        return Err(InputError::new(
            format!("--set {}", o.raw),
            &o.section,
            "only machine.* fields apply here (allowed: machine.<field>=<value>)",
        ));
    }
    let (mtable, mlabel, at) = section_source(
        resolver,
        Kind::Machine,
        toml::Value::String(name.to_string()),
        "",
    )?;
    machine_of(mtable, &mlabel, at, &ovs)
}

/// Load a workload by name, flattening `include`s.
pub fn load_workload_spec(
    resolver: &dyn Resolver,
    name: &str,
) -> Result<(WorkloadSpec, String), InputError> {
    let src = resolver.resolve(Kind::Workload, name)?;
    let table = parse_toml(&src)?;
    let label = src.label.clone();
    let spec = flatten_workload(resolver, table, &label, Place::OwnFile, 0)?;
    Ok((spec, label))
}

fn flatten_workload(
    resolver: &dyn Resolver,
    table: toml::Table,
    label: &str,
    at: Place,
    depth: usize,
) -> Result<WorkloadSpec, InputError> {
    if depth > 8 {
        return Err(InputError::new(
            label,
            "include",
            "includes nest deeper than 8 (a cycle?)",
        ));
    }
    let mut spec: WorkloadSpec = typed(label, "workload", at, table, &[])?;
    for inc in std::mem::take(&mut spec.include) {
        let src = resolver
            .resolve(Kind::Workload, &inc)
            .map_err(|e| InputError::new(label, "include", e.message))?;
        let t = parse_toml(&src)?;
        let sub = flatten_workload(resolver, t, &src.label, Place::OwnFile, depth + 1)?;
        spec.shared.extend(sub.shared);
        spec.processes.extend(sub.processes);
        spec.damos.extend(sub.damos);
        spec.tmpfs.extend(sub.tmpfs);
    }
    Ok(spec)
}

/// A section: a name from the command line (`scen_label` empty), or a scenario file's
/// value: a name, or a table with an optional `preset`.
fn section_source(
    resolver: &dyn Resolver,
    kind: Kind,
    v: toml::Value,
    scen_label: &str,
) -> Result<(toml::Table, String, Place), InputError> {
    // A bad name in a scenario file is the file's error, not the option's.
    let resolve = |name: &str| {
        resolver.resolve(kind, name).map_err(|e| {
            if !scen_label.is_empty() && e.source == format!("--{}", kind.as_str()) {
                InputError::new(scen_label, kind.as_str(), e.message)
            } else {
                e
            }
        })
    };
    match v {
        toml::Value::String(name) => {
            if kind == Kind::Policy {
                if names_file(&name) {
                    let src = resolve(&name)?;
                    return Ok((parse_toml(&src)?, src.label, Place::OwnFile));
                }
                return Ok(match scen_label {
                    "" => (policy_named(&name), "--policy".into(), Place::OwnFile),
                    _ => (policy_named(&name), scen_label.into(), Place::Inline),
                });
            }
            let src = resolve(&name)?;
            Ok((parse_toml(&src)?, src.label, Place::OwnFile))
        }
        toml::Value::Table(mut t) => match t.remove("preset") {
            Some(toml::Value::String(name)) => {
                let (mut base, label) = if kind == Kind::Policy && !names_file(&name) {
                    (policy_named(&name), format!("policy {name}"))
                } else {
                    let src = resolve(&name)?;
                    (parse_toml(&src)?, src.label)
                };
                merge(&mut base, t);
                Ok((base, format!("{scen_label} ({label})"), Place::Inline))
            }
            Some(_) => Err(InputError::new(
                scen_label,
                format!("{}.preset", kind.as_str()),
                "must be a name in quotes (a preset or a TOML file)",
            )),
            None => Ok((t, scen_label.to_string(), Place::Inline)),
        },
        _ => Err(InputError::new(
            scen_label,
            kind.as_str(),
            "must be a name in quotes or a table",
        )),
    }
}

fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// A name that is a file path (`my.toml`, `dir/x`) rather than a preset or policy name.
pub fn names_file(name: &str) -> bool {
    name.ends_with(".toml") || name.contains('/')
}

/// The table of a policy given by name.
fn policy_named(name: &str) -> toml::Table {
    let mut t = toml::Table::new();
    t.insert("kind".into(), toml::Value::String(name.to_string()));
    t
}

/// Checks a policy spec on the scenario's machine (the policy crates know its tunables and
/// what they need of a machine; this crate does not).
pub type PolicyCheck<'a> = &'a dyn Fn(&PolicySpec, &Machine) -> Result<(), InputError>;

impl Scenario {
    /// Build and validate a scenario (the policy's tunables are not checked: see
    /// [`Scenario::build_with`]).
    pub fn build(input: &ScenarioInput, resolver: &dyn Resolver) -> Result<Scenario, InputError> {
        Scenario::build_with(input, resolver, &|_, _| Ok(()))
    }

    /// Build and validate a scenario, the policy with `check_policy`; its errors are
    /// placed as every other (the `--set` that caused them, or where the key sits).
    pub fn build_with(
        input: &ScenarioInput,
        resolver: &dyn Resolver,
        check_policy: PolicyCheck,
    ) -> Result<Scenario, InputError> {
        let ovs: Vec<Override> = input
            .sets
            .iter()
            .map(|s| parse_override(s))
            .collect::<Result<_, _>>()?;
        let (mut scen, scen_label) = scenario_file(input, resolver)?;
        let pick = |kind: Kind,
                    cli: &Option<String>,
                    scen: &mut toml::Table|
         -> Result<(toml::Table, String, Place), InputError> {
            if let Some(name) = cli {
                let name = toml::Value::String(name.clone());
                return section_source(resolver, kind, name, "");
            }
            match scen.remove(kind.as_str()) {
                Some(v) => section_source(resolver, kind, v, &scen_label),
                None => Err(InputError::new(
                    format!("--{}", kind.as_str()),
                    "",
                    format!(
                        "no {} given (use --{} NAME or a scenario file)",
                        kind.as_str(),
                        kind.as_str()
                    ),
                )),
            }
        };
        let (mtable, mlabel, mat) = pick(Kind::Machine, &input.machine, &mut scen)?;
        let machine = machine_of(mtable, &mlabel, mat, &ovs)?;
        let (wtable, wlabel, wat) = pick(Kind::Workload, &input.workload, &mut scen)?;
        let workload = workload_of(resolver, wtable, &wlabel, wat, &machine, &ovs)?;
        let (ptable, plabel, pat) = pick(Kind::Policy, &input.policy, &mut scen)?;
        let policy = policy_of(ptable, plabel, pat, &ovs, &machine, check_policy)?;
        let sim = sim_of(&mut scen, &scen_label, input.seed, &ovs)?;
        let daemon = daemon_of(&mut scen, &scen_label, &ovs)?;
        Ok(Scenario {
            machine,
            workload,
            policy,
            sim,
            daemon,
            overrides: input.sets.clone(),
        })
    }
}

/// The scenario file's table and label (empty without one); unknown keys are refused.
fn scenario_file(
    input: &ScenarioInput,
    resolver: &dyn Resolver,
) -> Result<(toml::Table, String), InputError> {
    let Some(name) = &input.scenario else {
        return Ok((toml::Table::new(), String::new()));
    };
    let src = resolver.resolve(Kind::Scenario, name)?;
    let scen = parse_toml(&src)?;
    let allowed = ["machine", "workload", "policy", "sim", "daemon", "seed"];
    if let Some(k) = scen.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(InputError::new(
            &src.label,
            k.clone(),
            format!("unknown key (allowed: {})", allowed.join(", ")),
        ));
    }
    Ok((scen, src.label))
}

fn machine_of(
    mut table: toml::Table,
    label: &str,
    at: Place,
    ovs: &[Override],
) -> Result<Machine, InputError> {
    for ov in ovs.iter().filter(|o| o.section == "machine") {
        apply_override(&mut table, ov)?;
    }
    let spec: MachineSpec = typed(label, "machine", at, table, ovs)?;
    Machine::from_spec(spec, label).map_err(|e| place(e, "machine", at, ovs))
}

/// The workload, includes flattened before the overrides so that indexes refer to the
/// whole list.
fn workload_of(
    resolver: &dyn Resolver,
    table: toml::Table,
    label: &str,
    at: Place,
    machine: &Machine,
    ovs: &[Override],
) -> Result<Workload, InputError> {
    let spec = flatten_workload(resolver, table, label, at, 0)?;
    let Ok(toml::Value::Table(mut table)) = toml::Value::try_from(&spec) else {
        return Err(InputError::new(
            label,
            "",
            "internal: cannot re-serialise the workload",
        ));
    };
    for ov in ovs.iter().filter(|o| o.section == "workload") {
        apply_override(&mut table, ov)?;
    }
    let spec: WorkloadSpec = typed(label, "workload", at, table, ovs)?;
    Workload::resolve(spec, machine, label).map_err(|e| place(e, "workload", at, ovs))
}

fn policy_of(
    mut table: toml::Table,
    label: String,
    at: Place,
    ovs: &[Override],
    machine: &Machine,
    check: PolicyCheck,
) -> Result<PolicySpec, InputError> {
    for ov in ovs.iter().filter(|o| o.section == "policy") {
        apply_override(&mut table, ov)?;
    }
    let err = |msg: &str| place(InputError::new(&label, "kind", msg), "policy", at, ovs);
    let kind = match table.remove("kind") {
        Some(toml::Value::String(k)) => k,
        Some(_) => return Err(err("must be a policy name in quotes (see `numabal list`)")),
        None => return Err(err("missing (e.g. kind = \"none\")")),
    };
    let policy = PolicySpec {
        kind,
        tunables: table,
        label: label.clone(),
    };
    // The policy crates name fields `policy.<key>`; the key sits where `at` says.
    check(&policy, machine).map_err(|mut e| {
        e.field = match e.field.strip_prefix("policy") {
            Some("") => String::new(),
            Some(rest) if rest.starts_with('.') => rest[1..].to_string(),
            _ => e.field,
        };
        place(e, "policy", at, ovs)
    })?;
    Ok(policy)
}

/// Sim settings: the scenario's `[sim]` table, its top-level `seed`, `--seed`, then the
/// overrides.
fn sim_of(
    scen: &mut toml::Table,
    scen_label: &str,
    seed: Option<u64>,
    ovs: &[Override],
) -> Result<SimSettings, InputError> {
    let mut table = match scen.remove("sim") {
        Some(toml::Value::Table(t)) => t,
        Some(_) => return Err(InputError::new(scen_label, "sim", "must be a table")),
        None => toml::Table::new(),
    };
    if let Some(v) = scen.remove("seed") {
        // Checked here, where it sits: the top-level `seed`, not `sim.seed`.
        // A TOML integer that is a whole number >= 0 is a valid seed as it stands.
        from_value::<u64>(scen_label, v.clone()).map_err(|e| e.within("seed"))?;
        table.insert("seed".into(), v);
    }
    if let Some(s) = seed {
        table.insert("seed".into(), seed_value(s, "--seed", "")?);
    }
    for ov in ovs.iter().filter(|o| o.section == "sim") {
        apply_override(&mut table, ov)?;
    }
    let label = if scen_label.is_empty() {
        "[sim]"
    } else {
        scen_label
    };
    let sim: SimSettings = typed(label, "sim", Place::Inline, table, ovs)?;
    sim.validate(label)
        .map_err(|e| place(e, "sim", Place::Inline, ovs))?;
    Ok(sim)
}

/// Daemon settings: the scenario's `[daemon]` table, then the `daemon.*` overrides; `None`
/// when neither is there.
fn daemon_of(
    scen: &mut toml::Table,
    scen_label: &str,
    ovs: &[Override],
) -> Result<Option<DaemonSettings>, InputError> {
    let mut table = match scen.remove("daemon") {
        Some(toml::Value::Table(t)) => t,
        Some(_) => return Err(InputError::new(scen_label, "daemon", "must be a table")),
        None if ovs.iter().any(|o| o.section == "daemon") => toml::Table::new(),
        None => return Ok(None),
    };
    for ov in ovs.iter().filter(|o| o.section == "daemon") {
        apply_override(&mut table, ov)?;
    }
    let label = if scen_label.is_empty() {
        "[daemon]"
    } else {
        scen_label
    };
    let d: DaemonSettings = typed(label, "daemon", Place::Inline, table, ovs)?;
    d.validate(label)
        .map_err(|e| place(e, "daemon", Place::Inline, ovs))?;
    Ok(Some(d))
}

/// A seed as a TOML integer (which stops at `i64::MAX`).
fn seed_value(seed: u64, source: &str, field: &str) -> Result<toml::Value, InputError> {
    let s = i64::try_from(seed).map_err(|_| {
        InputError::new(
            source,
            field,
            format!("is {seed} (allowed: 0 to {})", i64::MAX),
        )
    })?;
    Ok(toml::Value::Integer(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(m: &str, w: &str, p: &str, sets: &[&str]) -> ScenarioInput {
        ScenarioInput {
            machine: Some(m.into()),
            workload: Some(w.into()),
            policy: Some(p.into()),
            sets: sets.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn every_preset_loads() {
        for (m, _) in presets::MACHINES {
            for (w, _) in presets::WORKLOADS {
                let r = Scenario::build(&input(m, w, "none", &[]), &PresetResolver);
                if *w == "os_noise" {
                    // A fragment to include: every process is a daemon.
                    let e = r.expect_err("os_noise alone is not a workload");
                    assert!(e.field.contains("daemon"), "{e}");
                    continue;
                }
                // Some workloads do not fit small machines, or name the CPUs of a bigger
                // one in a cpuset; that must be a clean error.
                if let Err(e) = &r {
                    assert!(
                        e.message.contains("usable memory")
                            || e.message.contains("must name CPUs of the machine"),
                        "{m}/{w}: {e}"
                    );
                }
            }
        }
        let s = Scenario::build(
            &input("autonuma-2n24", "numa01", "none", &[]),
            &PresetResolver,
        )
        .unwrap();
        assert_eq!(s.machine.nr_cpus(), 24);
        assert_eq!(s.workload.threads, vec![vec![12]]);
    }

    /// Issue 4's machines: two sockets with sub-NUMA clustering, four nodes, B with more
    /// cores than A; the SLIT shows the other node of the socket nearer than the other socket.
    #[test]
    fn stable_machines_have_four_snc_nodes() {
        let load = |m: &str| {
            Scenario::build(&input(m, "numa02", "none", &[]), &PresetResolver)
                .unwrap()
                .machine
        };
        let (a, b) = (load("stable-a"), load("stable-b"));
        for m in [&a, &b] {
            assert_eq!(m.nr_nodes(), 4);
            let d = &m.spec.topology.distance;
            assert_eq!((d[0][0], d[0][1], d[0][2], d[0][3]), (10, 11, 21, 21));
            assert_eq!((d[2][3], d[3][1]), (11, 21));
        }
        assert_eq!((a.nr_cpus(), b.nr_cpus()), (32, 56));
    }

    /// An in-memory file system: presets, then these files.
    struct Files(Vec<(&'static str, String)>);

    impl Resolver for Files {
        fn resolve(&self, kind: Kind, name: &str) -> Result<Source, InputError> {
            match self.0.iter().find(|(n, _)| *n == name) {
                Some((n, text)) => Ok(Source {
                    label: n.to_string(),
                    text: text.clone(),
                }),
                None => PresetResolver.resolve(kind, name),
            }
        }
    }

    /// Errors name a key where the user wrote it: in its own file without a section, in a
    /// scenario file with its table, the top-level `seed` as `seed`, a `--set` as given.
    #[test]
    fn errors_name_keys_where_they_sit() {
        let tiny = presets::machine("tiny-2n4").unwrap();
        let files = Files(vec![
            ("m.toml", tiny.replace("sockets = 2", "sockets = \"two\"")),
            ("p.toml", "kind = \"none\"\nx = 1\n".into()),
            (
                "s.toml",
                "seed = \"x\"\nmachine = \"tiny-2n4\"\nworkload = \"numa02\"\n".into(),
            ),
            (
                "t.toml",
                "workload = \"numa02\"\npolicy = \"nosuch\"\n[machine]\npreset = \"tiny-2n4\"\n"
                    .into(),
            ),
        ]);
        let build = |i: ScenarioInput| {
            let check = |p: &PolicySpec, _: &Machine| match p.tunables.keys().next() {
                Some(k) => Err(InputError::new(&p.label, format!("policy.{k}"), "no")),
                None if p.kind == "nosuch" => Err(InputError::new(&p.label, "policy", "no")),
                None => Ok(()),
            };
            Scenario::build_with(&i, &files, &check)
                .unwrap_err()
                .to_string()
        };
        let e = build(input("m.toml", "numa02", "none", &[]));
        assert!(e.starts_with("m.toml: topology.sockets: is \"two\""), "{e}");
        assert_eq!(
            build(input("tiny-2n4", "numa02", "p.toml", &[])),
            "p.toml: x: no"
        );
        let e = build(input("tiny-2n4", "numa02", "none", &["policy.y=1"]));
        assert_eq!(e, "--set policy.y=1: policy.y: no");
        let scen = |name: &str| ScenarioInput {
            scenario: Some(name.into()),
            policy: Some("none".into()),
            ..Default::default()
        };
        let e = build(scen("s.toml"));
        assert_eq!(e, "s.toml: seed: is \"x\" (allowed: a whole number >= 0)");
        let e = build(ScenarioInput {
            policy: None,
            ..scen("t.toml")
        });
        assert_eq!(e, "t.toml: policy: no");
        // Fields inside arrays are matched to the --set that wrote them.
        let e = build(input(
            "tiny-2n4",
            "numa02",
            "none",
            &["workload.process.0.region.0.size=true"],
        ));
        assert!(
            e.starts_with(
                "--set workload.process.0.region.0.size=true: workload.process[0].region[0].size: is true"
            ),
            "{e}"
        );
    }

    #[test]
    fn overrides_apply_and_unknown_keys_fail() {
        let s = Scenario::build(
            &input(
                "tiny-2n4",
                "numa02",
                "none",
                &["sim.tick_ms=1", "machine.memory.queue_scale_ns=7"],
            ),
            &PresetResolver,
        )
        .unwrap();
        assert_eq!(s.sim.tick_ms, 1.0);
        assert_eq!(s.machine.spec.memory.queue_scale_ns, 7.0);

        let e = Scenario::build(
            &input("tiny-2n4", "numa02", "none", &["machine.memory.bogus=1"]),
            &PresetResolver,
        )
        .unwrap_err();
        assert!(e.source.starts_with("--set machine.memory.bogus"), "{e}");
        assert!(e.message.contains("unknown field `bogus`"), "{e}");
        assert!(
            e.message.contains("local_latency_ns"),
            "names allowed keys: {e}"
        );

        let e = Scenario::build(
            &input("tiny-2n4", "numa02", "none", &["nosuch.x=1"]),
            &PresetResolver,
        )
        .unwrap_err();
        assert!(
            e.message
                .contains("allowed: machine, workload, policy, sim"),
            "{e}"
        );
    }
}
