//! `numabal daemon`: the shared policy core run on this host (`numabal_live::daemon`), set
//! up from a TOML file (`--config`) and the command line (which wins). The file's
//! `[policy]` table is the simulator's; `[daemon]` and `[safety]` are the daemon's own:
//!
//! ```toml
//! [daemon]
//! policy = "stable-daemon"     # or "numad", "home-node"
//! sensor = "auto"              # auto, hint, softdirty, damon, pmu, maps
//! dry_run = false
//! interval_ms = 1000           # default: the policy's own (numad: -i min:max, pass by pass)
//! idle_interval_ms = 5000      # between full passes while no process is managed and the
//!                              # CPUs are idle (a busy host brings the pass forward)
//! migrate_mb_s = 1024          # page migration budget
//! min_rss_mb = 64              # smaller processes are left alone
//! sample_period = 1            # sample one page fault in this many
//! softdirty_budget_pct = 5     # share of one CPU the soft-dirty faults may take, per process
//! fault_cost_ns = 2000         # assumed cost of one such fault
//! decision_log = "/var/log/numabal/decisions.jsonl"   # default: standard output
//! metrics_port = 9893          # Prometheus text on 127.0.0.1; 0 or absent: off
//! record = "/var/lib/numabal/recording.jsonl"
//! state_file = "/run/numabal/state.json"   # every changed affinity, for a restart or
//!                                          # `numabal daemon --restore` after a kill
//! [safety]
//! allow_names = []  deny_names = []  allow_uids = []  deny_uids = []  deny_cgroups = []
//! manage_narrowed = false
//! [policy]
//! scan_period_ms = 1000
//! ```

use crate::Failure;
use clap::Args;
use numabal_live::daemon::Config;
use numabal_live::safety::Rules;
use numabal_model::DaemonSettings;
use numabal_model::InputError;
use numabal_model::SensorKind;
use numabal_model::scenario::{PolicySpec, set_blamed};
use numabal_policy::Action;
use serde::Deserialize;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

#[derive(Args, Debug)]
pub struct DaemonArgs {
    /// The daemon's TOML file ([daemon], [safety], [policy]); the command line wins.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    // The help lists the registry's live policies (numabal_sim::registry).
    #[arg(long, short = 'p', value_name = "POLICY", help = live_policy_help())]
    policy: Option<String>,
    /// A policy tunable, e.g. `--set policy.u=100`.
    #[arg(long = "set", value_name = "policy.KEY=VALUE")]
    sets: Vec<String>,
    /// Access sensor: auto, hint, softdirty, damon, pmu, maps.
    #[arg(long)]
    sensor: Option<String>,
    /// Log the decisions, change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Milliseconds between passes, 10 to 3600000 (default: the policy's interval, asked
    /// after every pass: numad's -i min:max).
    #[arg(long)]
    interval_ms: Option<u64>,
    /// Page migration budget, MiB/s.
    #[arg(long)]
    migrate_mb_s: Option<f64>,
    /// Leave processes with less resident memory alone, MiB.
    #[arg(long)]
    min_rss_mb: Option<u64>,
    /// softdirty: share of one CPU the faults it causes may take, per process, %.
    #[arg(long)]
    softdirty_budget_pct: Option<f64>,
    /// Manage only processes with these names (repeatable).
    #[arg(long, value_name = "NAME")]
    allow: Vec<String>,
    /// Never manage processes with these names (repeatable).
    #[arg(long, value_name = "NAME")]
    deny: Vec<String>,
    /// The decision log (JSON lines, appended); default: standard output.
    #[arg(long, value_name = "FILE")]
    decision_log: Option<PathBuf>,
    /// Serve Prometheus metrics on 127.0.0.1:PORT (0: off).
    #[arg(long)]
    metrics_port: Option<u16>,
    /// Record every pass's observation (for `numabal sim --trace`).
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Stop after this many passes (default: until SIGTERM or SIGINT).
    #[arg(long)]
    passes: Option<u64>,
    /// Where every changed affinity is kept, so that a daemon started after this one was
    /// killed, or `--restore`, gives them back (default: /run/numabal/state.json).
    #[arg(long, value_name = "FILE")]
    state_file: Option<PathBuf>,
    /// Only give back what a daemon that did not stop cleanly left in the state file, then
    /// exit (the systemd unit's ExecStopPost).
    #[arg(long)]
    restore: bool,
    /// Where the host's `/proc` and `/sys` are found (a fixture tree in tests).
    #[arg(long, default_value = "/")]
    root: PathBuf,
}

fn live_policy_help() -> String {
    format!(
        "Policy of the shared core: {} (the first is the default)",
        numabal_sim::registry::standard().names(|e| e.live)
    )
}

#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    #[serde(default)]
    daemon: DaemonTable,
    #[serde(default)]
    safety: SafetyTable,
    #[serde(default)]
    policy: toml::Table,
}

#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
struct DaemonTable {
    policy: Option<String>,
    sensor: Option<String>,
    dry_run: Option<bool>,
    interval_ms: Option<u64>,
    idle_interval_ms: Option<u64>,
    migrate_mb_s: Option<f64>,
    min_rss_mb: Option<u64>,
    sample_period: Option<u64>,
    softdirty_budget_pct: Option<f64>,
    fault_cost_ns: Option<u64>,
    /// A simulated host's setting: refused here with the reason.
    numa_balancing: Option<toml::Value>,
    /// A simulated host's setting: refused here with the reason.
    kernel: Option<toml::Value>,
    /// A simulated daemon's setting: refused here with the reason.
    start_s: Option<toml::Value>,
    decision_log: Option<PathBuf>,
    metrics_port: Option<u16>,
    record: Option<PathBuf>,
    state_file: Option<PathBuf>,
}

#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
struct SafetyTable {
    #[serde(default)]
    allow_names: Vec<String>,
    #[serde(default)]
    deny_names: Vec<String>,
    #[serde(default)]
    allow_uids: Vec<u32>,
    #[serde(default)]
    deny_uids: Vec<u32>,
    #[serde(default)]
    deny_cgroups: Vec<String>,
    #[serde(default)]
    manage_narrowed: bool,
}

/// A core policy from its name, a `[policy]` table and `--set policy.KEY=VALUE` strings
/// (which win).
pub(crate) fn policy_spec_with(
    name: &str,
    mut tunables: toml::Table,
    sets: &[String],
    label: &str,
) -> Result<PolicySpec, Failure> {
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
        label: label.into(),
    })
}

/// A core policy from its name and `--set policy.KEY=VALUE` strings.
pub(crate) fn policy_spec_of(name: &str, sets: &[String]) -> Result<PolicySpec, Failure> {
    policy_spec_with(name, toml::Table::new(), sets, "--policy")
}

/// A decision as a JSON line (the dry run of `numabal sim --trace`).
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
        Action::MovePages { pid, addrs, node } => {
            json!({"t_s": t_s, "would": "move_pages", "pid": pid.0, "pages": addrs.len(), "to": node})
        }
        Action::InterleaveProcessPages { pid, from, nodes } => {
            json!({"t_s": t_s, "would": "interleave_pages", "pid": pid.0, "from": from, "nodes": nodes})
        }
        other => json!({"t_s": t_s, "would": format!("{other:?}")}),
    }
}

/// The daemon's settings and policy from the file and the command line.
fn settings(a: &DaemonArgs) -> Result<(Config, PolicySpec), Failure> {
    let file = match &a.config {
        Some(p) => crate::fsresolver::toml_file(p)?,
        None => FileConfig::default(),
    };
    let src = |field: &str| match &a.config {
        Some(p) => format!("{}: daemon.{field}", p.display()),
        None => format!("--{}", field.replace('_', "-")),
    };
    let d = &file.daemon;
    let sensor_name = a
        .sensor
        .clone()
        .or(d.sensor.clone())
        .unwrap_or("auto".into());
    let sensor = SensorKind::parse(&sensor_name)
        .map_err(|e| Failure::Input(format!("{}: {e}", src("sensor"))))?;
    if d.numa_balancing.is_some() {
        return Err(Failure::Input(format!(
            "{}: is the simulated host's kernel.numa_balancing (allowed only in a scenario's \
             [daemon] table; on a host its own sysctl decides)",
            src("numa_balancing")
        )));
    }
    if d.kernel.is_some() {
        return Err(Failure::Input(format!(
            "{}: is the simulated host's kernel release (allowed only in a scenario's [daemon] \
             table; on a host the running kernel is the one)",
            src("kernel")
        )));
    }
    if d.start_s.is_some() {
        return Err(Failure::Input(format!(
            "{}: is when a simulated daemon starts (allowed only in a scenario's [daemon] \
             table; on a host the daemon starts when it is run)",
            src("start_s")
        )));
    }
    let defaults = DaemonSettings::default();
    let settings = DaemonSettings {
        sensor,
        interval_ms: a.interval_ms.or(d.interval_ms),
        idle_interval_ms: d.idle_interval_ms.unwrap_or(defaults.idle_interval_ms),
        migrate_mb_s: a
            .migrate_mb_s
            .or(d.migrate_mb_s)
            .unwrap_or(defaults.migrate_mb_s),
        min_rss_mb: a.min_rss_mb.or(d.min_rss_mb).unwrap_or(defaults.min_rss_mb),
        sample_period: d.sample_period,
        softdirty_budget_pct: a
            .softdirty_budget_pct
            .or(d.softdirty_budget_pct)
            .unwrap_or(defaults.softdirty_budget_pct),
        fault_cost_ns: d.fault_cost_ns.unwrap_or(defaults.fault_cost_ns),
        numa_balancing: None,
        kernel: None,
        start_s: None,
    };
    // The checks a simulated daemon's settings get too; the error names where the value
    // was written.
    settings
        .validate("")
        .map_err(|e| Failure::Input(format!("{}: {}", src(&e.field), e.message)))?;
    let mut c = Config {
        settings,
        dry_run: a.dry_run || d.dry_run.unwrap_or(false),
        root: a.root.clone(),
        passes: a.passes,
        decision_log: a.decision_log.clone().or(d.decision_log.clone()),
        metrics_port: a.metrics_port.or(d.metrics_port).filter(|&p| p != 0),
        record: a.record.clone().or(d.record.clone()),
        state_file: Some(
            (a.state_file.clone().or(d.state_file.clone()))
                .unwrap_or_else(|| numabal_live::state::DEFAULT_PATH.into()),
        ),
        ..Config::default()
    };
    let s = &file.safety;
    c.rules = Rules {
        allow_names: s.allow_names.iter().chain(&a.allow).cloned().collect(),
        deny_names: s.deny_names.iter().chain(&a.deny).cloned().collect(),
        allow_uids: s.allow_uids.clone(),
        deny_uids: s.deny_uids.clone(),
        deny_cgroups: s.deny_cgroups.clone(),
        manage_narrowed: s.manage_narrowed,
    };
    let name = a
        .policy
        .clone()
        .or(d.policy.clone())
        .unwrap_or_else(|| default_live_policy().into());
    let label = a
        .config
        .as_ref()
        .map_or("--policy".to_string(), |p| p.display().to_string());
    let spec = policy_spec_with(&name, file.policy, &a.sets, &label)?;
    Ok((c, spec))
}

/// The live policy of `spec`; an error caused by a `--set policy.KEY=VALUE` is that
/// option's (the model's rule, `set_blamed`), and `--policy`'s own needs no field.
pub(crate) fn build_live_policy(
    spec: &PolicySpec,
    sets: &[String],
) -> Result<numabal_sim::registry::Built, Failure> {
    Ok(numabal_sim::registry::standard()
        .build_live(spec)
        .map_err(|e| blame_set(e, sets))?)
}

/// The daemon's policy when none is named: the registry's first live one.
fn default_live_policy() -> &'static str {
    numabal_sim::registry::standard()
        .live()
        .next()
        .map_or("numad", |e| e.name)
}

fn blame_set(mut e: InputError, sets: &[String]) -> InputError {
    let set = sets.iter().rev().find(|s| {
        s.split_once('=')
            .is_some_and(|(k, _)| set_blamed(k.trim(), &e.field, &e.message))
    });
    if let Some(s) = set {
        e.source = format!("--set {s}");
    }
    if e.source == "--policy" && e.field == "policy" {
        e.field.clear();
    }
    e
}

pub fn daemon(a: &DaemonArgs) -> Result<(), Failure> {
    let (mut cfg, spec) = settings(a)?;
    let built = build_live_policy(&spec, &a.sets)?;
    cfg.policy_tunables = built.tunables;
    cfg.policy_name = spec.kind.clone();
    let policy = built.policy;
    let stop = Arc::new(AtomicBool::new(false));
    let hup = Arc::new(AtomicBool::new(false));
    // SIGTERM and SIGINT set `stop`, SIGHUP `hup` (a reload), and wake the daemon from its
    // wait between passes (signal-hook's own thread, so nothing runs in a signal handler).
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP])
        .map_err(|e| Failure::Internal(format!("cannot handle SIGTERM, SIGINT and SIGHUP: {e}")))?;
    let (flag, hup_flag, daemon_thread) = (stop.clone(), hup.clone(), std::thread::current());
    std::thread::spawn(move || {
        for sig in signals.forever() {
            let f = if sig == SIGHUP { &hup_flag } else { &flag };
            f.store(true, std::sync::atomic::Ordering::Relaxed);
            daemon_thread.unpark();
        }
    });
    let mut sink: Box<dyn Write> = match &cfg.decision_log {
        Some(p) => Box::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|e| Failure::Input(format!("{}: cannot write: {e}", p.display())))?,
        ),
        None => Box::new(std::io::stdout()),
    };
    // A decision log nobody reads any more (its pipe closed) stops the daemon as SIGTERM
    // does, restoring what it changed: an operator never loses decisions unnoticed.
    let mut log = |v: serde_json::Value| {
        if let Err(e) = writeln!(sink, "{v}").and_then(|()| sink.flush())
            && e.kind() == std::io::ErrorKind::BrokenPipe
        {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    };
    if a.restore {
        let path = cfg.state_file.clone().expect("settings give a path");
        let mut restored = (0, 0);
        numabal_live::daemon::restore_left(&path, &mut |v| {
            let kept = ["left", "already", "error", "gone"]
                .iter()
                .any(|k| v.get(k).is_some());
            restored.0 += (v["restore"].is_string() && !kept) as usize;
            restored.1 += v.get("error").is_some() as usize;
            log(v)
        })?;
        eprintln!(
            "numabal daemon --restore: {} {} given back from {}, {} {}",
            restored.0,
            if restored.0 == 1 {
                "affinity"
            } else {
                "affinities"
            },
            path.display(),
            restored.1,
            if restored.1 == 1 { "error" } else { "errors" }
        );
        return Ok(());
    }
    // A reload reads the file and the command line again, as at the start.
    let mut read = || -> Result<Config, String> {
        let (mut c, spec) = settings(a).map_err(|f| f.message())?;
        let built = build_live_policy(&spec, &a.sets).map_err(|f| f.message())?;
        c.policy_tunables = built.tunables;
        c.policy_name = spec.kind;
        Ok(c)
    };
    let reload = numabal_live::daemon::Reload {
        asked: &hup,
        read: &mut read,
    };
    let s = numabal_live::daemon::run(&cfg, policy, &stop, Some(reload), &mut log)?;
    eprintln!(
        "numabal daemon: {} {} in {:.1} s, {:.3} s of CPU ({:.2}% of one CPU), {} samples",
        s.passes,
        if s.passes == 1 { "pass" } else { "passes" },
        s.wall_s,
        s.cpu_s,
        100.0 * s.cpu_s / s.wall_s.max(1e-9),
        s.samples
    );
    Ok(())
}
