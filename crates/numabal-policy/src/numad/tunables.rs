//! Tunables of `numad`, under numad's option letters (`numad.8`, `numad.c` `main`), with
//! numad's defaults and ranges; the constants numad compiles in are tunables under the
//! names of its `#define`s.

use numabal_model::InputError;
use numabal_model::scenario::PolicySpec;
use serde::{Deserialize, Serialize};

/// `-i [min:]max`, as numad writes it: `15` or `"5:15"`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Interval {
    /// `max` only (`min` keeps its default, 5).
    Max(u64),
    /// `"min:max"` or `"max"`.
    Text(String),
}

impl<'de> Deserialize<'de> for Interval {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        numabal_model::units::whole_or_text(
            d,
            "seconds as a whole number such as 15, or \"min:max\" such as \"5:15\"",
            Interval::Max,
            |s| Ok(Interval::Text(s.to_string())),
        )
    }
}

/// Tunables of `numad`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Tunables {
    /// `-u`: target utilisation of a node's resources, percent (10 to 130; above 100 only
    /// CPUs are oversubscribed).
    pub u: u32,
    /// `-m`: target memory locality, percent (50 to 100): a bound process with at least this
    /// share of its memory on its nodes is left alone.
    pub m: u32,
    /// `-i`: seconds between passes, `[min:]max`: `min` after a pass that moved a process,
    /// `max` after one that did not.
    pub i: Interval,
    /// `-t`: value of a hyperthread sibling, percent of a core (0 to 100).
    pub t: u32,
    /// `-K`: 1 keeps processes with interleaved memory spread (skipped for 30 minutes), 0
    /// merges them like any other.
    #[serde(rename = "K")]
    pub k: u32,
    /// `MEMORY_THRESHOLD`: a process is managed above this resident size, MB.
    pub memory_threshold_mb: u64,
    /// `CPU_THRESHOLD`: ... and above this CPU use, hundredths of a CPU.
    pub cpu_threshold: u64,
    /// `MIN_DELAY_FOR_REEVALUATION`: a bound process is not reconsidered for this long,
    /// seconds (unless it sits on the busiest node and could do better elsewhere).
    pub min_delay_for_reevaluation_s: u64,
}

impl Default for Tunables {
    fn default() -> Self {
        Tunables {
            u: 85,
            m: 90,
            i: Interval::Text("5:15".into()),
            t: 20,
            k: 0,
            memory_threshold_mb: 300,
            cpu_threshold: 50,
            min_delay_for_reevaluation_s: 300,
        }
    }
}

/// Tunable names, in declaration order.
pub const TUNABLES: &[&str] = &[
    "u",
    "m",
    "i",
    "t",
    "K",
    "memory_threshold_mb",
    "cpu_threshold",
    "min_delay_for_reevaluation_s",
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

    /// `-i` as (min, max) seconds. `max` alone keeps numad's default `min` of 5, and numad
    /// refuses a `max` below `min` ("Max interval must be greater than min").
    pub fn interval_s(&self) -> Result<(u64, u64), String> {
        let bad = |s: &str| {
            format!(
                "is {s:?} (allowed: \"[min:]max\" seconds, 0 <= min <= max, 1 <= max <= 86400; \
                 min defaults to 5)"
            )
        };
        let text = match &self.i {
            Interval::Max(m) => m.to_string(),
            Interval::Text(s) => s.clone(),
        };
        let (min, max): (u64, u64) = match text.split_once(':') {
            Some((a, b)) => (
                a.trim().parse().map_err(|_| bad(&text))?,
                b.trim().parse().map_err(|_| bad(&text))?,
            ),
            None => (5, text.trim().parse().map_err(|_| bad(&text))?),
        };
        if max < 1 || min > max || max > 86_400 {
            return Err(bad(&text));
        }
        Ok((min, max))
    }

    /// Range checks: `(field, message)` of the first bad value.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let ranges: [(&str, u64, u64, u64); 7] = [
            ("u", self.u.into(), 10, 130),
            ("m", self.m.into(), 50, 100),
            ("t", self.t.into(), 0, 100),
            ("K", self.k.into(), 0, 1),
            ("memory_threshold_mb", self.memory_threshold_mb, 0, 1 << 30),
            ("cpu_threshold", self.cpu_threshold, 0, 100_000),
            (
                "min_delay_for_reevaluation_s",
                self.min_delay_for_reevaluation_s,
                0,
                86_400,
            ),
        ];
        crate::util::check_ranges(&ranges)?;
        self.interval_s().map_err(|e| ("i", e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(text: &str) -> PolicySpec {
        crate::util::test::spec("numad", text)
    }

    fn err(text: &str) -> String {
        Tunables::from_spec(&spec(text)).unwrap_err().to_string()
    }

    #[test]
    fn defaults_and_numads_option_syntax() {
        let t = Tunables::from_spec(&spec("")).unwrap();
        assert_eq!(t, Tunables::default());
        assert_eq!(t.interval_s().unwrap(), (5, 15));
        let t = Tunables::from_spec(&spec("u = 100\ni = 30\nK = 1")).unwrap();
        assert_eq!((t.u, t.k), (100, 1));
        assert_eq!(t.interval_s().unwrap(), (5, 30));
        let t = Tunables::from_spec(&spec("i = \"2:10\"")).unwrap();
        assert_eq!(t.interval_s().unwrap(), (2, 10));
        let t = Tunables::from_spec(&spec("i = \"0:3\"")).unwrap();
        assert_eq!(t.interval_s().unwrap(), (0, 3));
    }

    #[test]
    fn bad_values_name_the_option_and_what_is_allowed() {
        assert_eq!(
            err("u = 131"),
            "test.toml: policy.u: is 131 (allowed: 10 to 130)"
        );
        assert_eq!(
            err("m = 49"),
            "test.toml: policy.m: is 49 (allowed: 50 to 100)"
        );
        assert_eq!(err("K = 2"), "test.toml: policy.K: is 2 (allowed: 0 to 1)");
        assert_eq!(
            err("i = \"9:3\""),
            "test.toml: policy.i: is \"9:3\" (allowed: \"[min:]max\" seconds, 0 <= min <= max, \
             1 <= max <= 86400; min defaults to 5)"
        );
        // max alone below numad's default min of 5.
        assert!(err("i = 3").starts_with("test.toml: policy.i: is \"3\""));
        assert!(err("i = \"x\"").starts_with("test.toml: policy.i: is \"x\""));
        // Neither a number nor text: what was given and the two forms, in plain words.
        assert_eq!(
            err("i = true"),
            "test.toml: policy.i: is true (allowed: seconds as a whole number such as 15, or \
             \"min:max\" such as \"5:15\")"
        );
        assert!(err("i = -3").starts_with("test.toml: policy.i: is -3 (allowed: seconds"));
        let e = err("w = 1");
        assert!(
            e.starts_with("test.toml: policy.w: unknown tunable (allowed: u, m, i, t, K,"),
            "{e}"
        );
    }
}
