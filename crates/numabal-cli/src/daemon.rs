//! `numabal daemon` (issue 6, in progress): the shared policy core run on this host's
//! observations. So far dry-run only: every pass reads `/proc` and `/sys`, runs the policy,
//! and prints the decisions as JSON lines; the actuators (`sched_setaffinity`,
//! `migrate_pages`) and the safety rules come next.

use crate::Failure;
use clap::Args;
use numabal_model::scenario::PolicySpec;
use numabal_policy::Action;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct DaemonArgs {
    /// Policy of the shared core with periodic passes (numad).
    #[arg(long, short = 'p', default_value = "numad")]
    policy: String,
    /// A policy tunable, e.g. `--set policy.u=100`.
    #[arg(long = "set", value_name = "policy.KEY=VALUE")]
    sets: Vec<String>,
    /// Log the decisions only (required until the actuators exist).
    #[arg(long)]
    dry_run: bool,
    /// Stop after this many passes (default: run until killed).
    #[arg(long)]
    passes: Option<u64>,
    /// Where the host's `/proc` and `/sys` are found (a fixture tree in tests).
    #[arg(long, default_value = "/")]
    root: PathBuf,
}

fn policy_spec(a: &DaemonArgs) -> Result<PolicySpec, Failure> {
    policy_spec_of(&a.policy, &a.sets)
}

/// A core policy from its name and `--set policy.KEY=VALUE` strings.
pub(crate) fn policy_spec_of(name: &str, sets: &[String]) -> Result<PolicySpec, Failure> {
    let mut tunables = toml::Table::new();
    for s in sets {
        let Some((k, v)) = s.split_once('=') else {
            return Err(Failure::Input(format!(
                "--set {s}: expected policy.KEY=VALUE"
            )));
        };
        let Some(key) = k.trim().strip_prefix("policy.") else {
            return Err(Failure::Input(format!(
                "--set {s}: only policy.* applies here (allowed: policy.KEY=VALUE)"
            )));
        };
        // A TOML value (number, boolean, quoted string), else the text as a string.
        let value = toml::from_str::<toml::Table>(&format!("x = {v}"))
            .ok()
            .and_then(|mut t| t.remove("x"))
            .unwrap_or_else(|| toml::Value::String(v.to_string()));
        tunables.insert(key.to_string(), value);
    }
    Ok(PolicySpec {
        kind: name.to_string(),
        tunables,
        label: "--policy".into(),
    })
}

/// A decision as a JSON line.
pub(crate) fn decision(t_s: f64, a: &Action) -> serde_json::Value {
    use serde_json::json;
    match a {
        Action::Log { pid, message } => json!({"t_s": t_s, "pid": pid.0, "log": message}),
        Action::SetThreadAffinity { tid, cpus } => {
            json!({"t_s": t_s, "would": "sched_setaffinity", "tid": tid.0, "cpus": cpus.to_list_string()})
        }
        Action::MigrateProcessPages { pid, from, to } => {
            json!({"t_s": t_s, "would": "migrate_pages", "pid": pid.0, "from": from, "to": to})
        }
        other => json!({"t_s": t_s, "would": format!("{other:?}")}),
    }
}

pub fn daemon(a: &DaemonArgs) -> Result<(), Failure> {
    if !a.dry_run {
        return Err(Failure::Input(
            "numabal daemon: the actuators (sched_setaffinity, migrate_pages) are not built yet; \
             run with --dry-run to log the decisions"
                .into(),
        ));
    }
    let mut policy = numabal_policy::build(&policy_spec(a)?)?;
    if policy.tick_interval_ns().is_none() {
        return Err(Failure::Input(format!(
            "--policy {}: has no periodic passes, nothing to run (allowed: numad)",
            a.policy
        )));
    }
    let topo = numabal_live::read_topology(&a.root)?;
    let machine = numabal_live::machine_of(&a.root, &topo)?;
    let start = Instant::now();
    let mut out = Vec::new();
    let mut pass = 0u64;
    loop {
        let snap = numabal_live::observe(&a.root, &topo)?;
        let now = start.elapsed().as_nanos() as u64;
        out.clear();
        policy.on_tick(&machine, &snap.observation(now), &mut out);
        for act in &out {
            println!("{}", decision(now as f64 / 1e9, act));
        }
        pass += 1;
        if a.passes.is_some_and(|n| pass >= n) {
            return Ok(());
        }
        let wait = policy.tick_interval_ns().unwrap_or(1_000_000_000);
        std::thread::sleep(Duration::from_nanos(wait));
    }
}
