//! Small helpers the policies share.

/// The first value outside its range, as `(field, "is V (allowed: LO to HI)")`.
pub(crate) fn check_ranges(
    ranges: &[(&'static str, u64, u64, u64)],
) -> Result<(), (&'static str, String)> {
    for &(k, v, lo, hi) in ranges {
        if v < lo || v > hi {
            return Err((k, format!("is {v} (allowed: {lo} to {hi})")));
        }
    }
    Ok(())
}

/// Test helpers: preset machines and policy specs.
#[cfg(test)]
pub(crate) mod test {
    use numabal_model::Machine;
    use numabal_model::scenario::{Kind, PolicySpec, PresetResolver, Resolver, parse_toml};

    /// A preset machine.
    pub fn machine(name: &str) -> Machine {
        let src = PresetResolver.resolve(Kind::Machine, name).unwrap();
        let spec =
            numabal_model::scenario::from_table(&src.label, parse_toml(&src).unwrap()).unwrap();
        Machine::from_spec(spec, &src.label).unwrap()
    }

    /// A policy spec of `kind` with tunables `text` (TOML), labelled `test.toml`.
    pub fn spec(kind: &str, text: &str) -> PolicySpec {
        PolicySpec {
            kind: kind.into(),
            tunables: toml::from_str(text).unwrap(),
            label: "test.toml".into(),
        }
    }
}
