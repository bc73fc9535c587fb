//! Suites: a named set of workloads run under the same policies and seeds on one machine
//! (`numabal suite`), described as data in `presets/suites/<name>.toml` or any TOML file:
//!
//! ```toml
//! name = "hpc"
//! description = "..."
//! workloads = ["npb_sp", "npb_lu", "my/workload.toml"]   # preset names or paths
//! policies = ["none", "autonuma", "stable"]               # default policies
//! seeds = 20                                              # default: seeds 1..=20
//! [set]                                                   # --set overrides of every run
//! "sim.transparent_hugepage" = "never"
//! ```
//!
//! `[set]` keys are dotted names as `--set` takes them; nested tables are flattened into
//! dotted keys, so `[set.sim]` with `transparent_hugepage = "never"` means the same. The
//! keys themselves are checked when the runs' scenarios are built, like `--set`.

use crate::error::InputError;
use crate::scenario::{Source, from_table, parse_toml};
use serde::{Deserialize, Serialize};

/// Most seeds a suite (or `--seeds`) may ask for, as `numabal compare`.
pub const MAX_SEEDS: u64 = 10_000;

/// A suite file as written.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SuiteSpec {
    /// Suite name.
    pub name: String,
    /// One line for `numabal list`.
    #[serde(default)]
    pub description: String,
    /// Workloads: preset names or paths to TOML files.
    pub workloads: Vec<String>,
    /// Policies run by default (`--policies` replaces them); the first is the baseline of
    /// the ratio columns.
    pub policies: Vec<String>,
    /// Seeds per policy and workload by default (seeds 1..=N; `--seeds` replaces it).
    pub seeds: u64,
    /// `--set` overrides applied to every run, before the command line's.
    #[serde(default)]
    pub set: toml::Table,
}

impl SuiteSpec {
    /// Parse and check a suite file. Errors name the source, the field and what is allowed.
    pub fn parse(src: &Source) -> Result<SuiteSpec, InputError> {
        let table = parse_toml(src)?;
        let spec: SuiteSpec = from_table(&src.label, table)?;
        spec.validate(&src.label)?;
        Ok(spec)
    }

    fn validate(&self, label: &str) -> Result<(), InputError> {
        if self.name.trim().is_empty() {
            return Err(InputError::new(label, "name", "must not be empty"));
        }
        if self.workloads.is_empty() {
            return Err(InputError::new(
                label,
                "workloads",
                "must name at least one workload (a preset name or a TOML file)",
            ));
        }
        if self.policies.is_empty() {
            return Err(InputError::new(
                label,
                "policies",
                "must name at least one policy (see `numabal list`)",
            ));
        }
        for (field, list) in [("workloads", &self.workloads), ("policies", &self.policies)] {
            if let Some(i) = list.iter().position(|s| s.trim().is_empty()) {
                return Err(InputError::new(
                    label,
                    format!("{field}[{i}]"),
                    "must not be empty",
                ));
            }
        }
        for (field, list) in [("workloads", &self.workloads), ("policies", &self.policies)] {
            if let Some((i, j)) = duplicate(list) {
                return Err(InputError::new(
                    label,
                    format!("{field}[{j}]"),
                    format!("`{}` is also {field}[{i}] (name each once)", list[j]),
                ));
            }
        }
        if self.seeds == 0 || self.seeds > MAX_SEEDS {
            return Err(InputError::new(
                label,
                "seeds",
                format!("is {} (allowed: 1-{MAX_SEEDS})", self.seeds),
            ));
        }
        self.sets()
            .map(|_| ())
            .map_err(|(key, msg)| InputError::new(label, format!("set.{key}"), msg))
    }

    /// The `[set]` table as `key=value` strings in `--set` syntax (keys in sorted order;
    /// values written as TOML, so strings keep their quotes).
    pub fn set_strings(&self) -> Vec<String> {
        self.sets().unwrap_or_default()
    }

    fn sets(&self) -> Result<Vec<String>, (String, String)> {
        let mut out = Vec::new();
        flatten("", &self.set, &mut out)?;
        Ok(out)
    }
}

/// A name given twice in a list: (first index, second index).
pub fn duplicate(list: &[String]) -> Option<(usize, usize)> {
    list.iter()
        .enumerate()
        .find_map(|(j, b)| list[..j].iter().position(|a| a == b).map(|i| (i, j)))
}

fn flatten(prefix: &str, t: &toml::Table, out: &mut Vec<String>) -> Result<(), (String, String)> {
    for (k, v) in t {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            toml::Value::Table(sub) => {
                if sub.is_empty() {
                    return Err((key, "an empty table sets nothing".into()));
                }
                flatten(&key, sub, out)?;
            }
            v => {
                if !key.contains('.') {
                    return Err((
                        key,
                        "must be a dotted name (allowed sections: machine, workload, policy, sim), e.g. \"sim.transparent_hugepage\" = \"never\"".into(),
                    ));
                }
                out.push(format!("{key}={v}"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets;

    fn src(text: &str) -> Source {
        Source {
            label: "s.toml".into(),
            text: text.into(),
        }
    }

    const OK: &str = "name = \"x\"\nworkloads = [\"numa02\"]\npolicies = [\"none\"]\nseeds = 3\n";

    #[test]
    fn parses_and_flattens_set() {
        let s = SuiteSpec::parse(&src(&format!(
            "{OK}[set]\n\"sim.transparent_hugepage\" = \"never\"\n[set.sim]\ntick_ms = 2\n[set.workload]\n\"process.0.region.0.size\" = \"1MiB\"\n"
        )))
        .unwrap();
        assert_eq!(s.seeds, 3);
        assert_eq!(
            s.set_strings(),
            vec![
                "sim.tick_ms=2",
                "sim.transparent_hugepage=\"never\"",
                "workload.process.0.region.0.size=\"1MiB\"",
            ]
        );
    }

    #[test]
    fn bad_fields_name_file_field_and_allowed_values() {
        let e = SuiteSpec::parse(&src(&format!("{OK}seed = 4\n"))).unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("s.toml: "), "{msg}");
        assert!(msg.contains("unknown field `seed`"), "{msg}");
        assert!(msg.contains("workloads") && msg.contains("seeds"), "{msg}");
        let e = SuiteSpec::parse(&src(&OK.replace("seeds = 3", "seeds = 0"))).unwrap_err();
        assert_eq!(e.to_string(), "s.toml: seeds: is 0 (allowed: 1-10000)");
        let e = SuiteSpec::parse(&src(&OK.replace("[\"numa02\"]", "[]"))).unwrap_err();
        assert_eq!(e.field, "workloads");
        let e = SuiteSpec::parse(&src(&format!("{OK}[set]\ntick_ms = 1\n"))).unwrap_err();
        assert_eq!(e.field, "set.tick_ms");
        assert!(e.message.contains("machine, workload, policy, sim"), "{e}");
        let e = SuiteSpec::parse(&src("name = \"x\"\nworkloads = \"numa02\"\n")).unwrap_err();
        assert_eq!(e.field, "workloads", "{e}");
    }

    /// The presets parse (their workloads and policies are checked when a suite runs).
    #[test]
    fn suite_presets_parse() {
        for (n, text) in presets::SUITES {
            let s = SuiteSpec::parse(&src(text)).unwrap_or_else(|e| panic!("{n}: {e}"));
            assert_eq!(&s.name, n);
        }
        let hpc = presets::suite("hpc").unwrap();
        let s = SuiteSpec::parse(&src(hpc)).unwrap();
        assert_eq!(s.workloads.len(), 12);
        assert_eq!(s.policies, ["none", "autonuma", "stable"]);
        assert_eq!(s.seeds, 20);
        assert_eq!(s.set_strings(), ["sim.transparent_hugepage=\"never\""]);
    }
}
