//! Helpers: scenarios from presets or inline TOML.

use numabal_model::InputError;
use numabal_model::scenario::{
    Kind, Resolver, Scenario, ScenarioInput, Source, preset_source, unknown_name,
};
use numabal_sim::RunResult;

/// Presets plus named inline texts.
pub struct Inline(pub Vec<(&'static str, String)>);

impl Resolver for Inline {
    fn resolve(&self, kind: Kind, name: &str) -> Result<Source, InputError> {
        if let Some((_, t)) = self.0.iter().find(|(n, _)| *n == name) {
            return Ok(Source {
                label: format!("inline {name}"),
                text: t.clone(),
            });
        }
        preset_source(kind, name).ok_or_else(|| unknown_name(kind, name, false))
    }
}

pub fn scenario_with(
    r: &Inline,
    machine: &str,
    workload: &str,
    policy: &str,
    seed: u64,
    sets: &[&str],
) -> Scenario {
    let input = ScenarioInput {
        machine: Some(machine.into()),
        workload: Some(workload.into()),
        policy: Some(policy.into()),
        seed: Some(seed),
        sets: sets.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    Scenario::build(&input, r).unwrap_or_else(|e| panic!("{e}"))
}

pub fn scenario(machine: &str, workload: &str, policy: &str, seed: u64) -> Scenario {
    scenario_with(&Inline(Vec::new()), machine, workload, policy, seed, &[])
}

pub fn run(sc: &Scenario) -> RunResult {
    numabal_sim::run(sc).unwrap_or_else(|e| panic!("{e}"))
}
