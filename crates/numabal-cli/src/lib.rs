//! `numabal`: the command line. Thin by design: it resolves names to files, calls the
//! library, formats results, and turns errors into one line and an exit status
//! (2 for bad input, 1 for internal errors). A library as well as the `numabal` binary
//! (`main.rs` calls [`main`]), so that the Python package ([`api`]) builds scenarios, names
//! errors and writes JSON exactly as the commands do.

// First: its out!/outln! macros are used by every module below.
#[macro_use]
mod stdout;

mod advise;
pub mod api;
mod daemon;
mod entry;
mod fsresolver;
mod output;
mod progress;
mod record;
mod replay;
mod report;
mod stat;
mod suite;
mod svg;
mod sweep;
mod twin;

use clap::{Args, Parser, Subcommand};
use fsresolver::FsResolver;
use numabal_model::InputError;
use numabal_model::scenario::{PolicySpec, Scenario, ScenarioInput};
use numabal_model::suite::duplicate;
use numabal_sim::SimError;
use std::path::PathBuf;
use std::process::ExitCode;

/// NUMA balancing that people can see, test and trust: a kernel-faithful simulator of
/// NUMA balancing policies.
#[derive(Parser, Debug)]
#[command(name = "numabal", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,
    /// Lay out terminal text and tables on as many columns as they need (default: fit 100).
    #[arg(long, global = true)]
    wide: bool,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run the default comparison and explain what it shows (also: `numabal` alone).
    Demo(DemoArgs),
    /// List the machines, workloads and policies available.
    List,
    /// Simulate one run.
    Sim(SimArgs),
    /// Run several policies over several seeds and compare them.
    Compare(CompareArgs),
    /// Run a suite (several workloads) under several policies and seeds: a table per
    /// workload and geometric means over the workloads.
    Suite(SuiteArgs),
    /// Print a machine's NUMA layout like `numactl --hardware`: nodes, CPUs, size, free
    /// memory on an idle machine, SLIT distances.
    Topology(TopologyArgs),
    /// Pre-placement advice like `numad -w CPUS:MB`: the nodes a new process should use, on
    /// an idle machine or on the state a run ended in (`--state run.json`).
    Advise(advise::AdviseArgs),
    /// This host's processes like `numastat -p`: memory per node from numa_maps, and the
    /// nodes their threads last ran on. Exit status 1 if a -p found no process (said on
    /// stderr, as numastat), 2 for bad input.
    Stat(stat::StatArgs),
    /// The placement daemon on this host: a policy of the shared policy core (stable-daemon,
    /// numad, home-node; `numabal daemon --help` lists them) on live observations, acting through sched_setaffinity and move_pages/migrate_pages
    /// within the safety rules; decisions as JSON lines.
    Daemon(daemon::DaemonArgs),
    /// A grid of runs (machines x workloads x policies x tunable values x seeds), in
    /// parallel, one JSON line per finished run; an existing results file is resumed.
    Sweep(sweep::SweepArgs),
    /// Record this host's observations (topology, then one pass per interval) as versioned
    /// JSON lines.
    Record(record::RecordArgs),
    /// The report of a saved result (`--json` of sim, compare or suite, or a sweep's
    /// results file): one self-contained HTML file and/or the figures as SVG.
    Report(ReportArgs),
    /// A guest's run of a workload under a real kernel's NUMA balancing beside the
    /// simulator's run of it (scripts/vm/twin.sh): the NUMA counters, each process's
    /// placement and the time it was reached, PASS or FAIL per figure; exit status 1 if
    /// any failed.
    Twin(twin::TwinArgs),
}

/// Where a command writes its report.
#[derive(Args, Debug, Clone, Default)]
struct ReportOut {
    /// Write the report here: one self-contained HTML file (figures as inline SVG, no
    /// script, nothing fetched) with a summary table, the scenario, the tunables and the
    /// numabal version.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Write each figure of the report as an SVG file into this directory (memory.svg:
    /// each process's memory per node over time; locality, activity, runtime, counters,
    /// stalls, ping-pong, throughput where there is data).
    #[arg(long, value_name = "DIR")]
    svg_dir: Option<PathBuf>,
}

impl ReportOut {
    fn wanted(&self) -> bool {
        self.html.is_some() || self.svg_dir.is_some()
    }

    /// Where the report and the `--json` result go, checked before the runs (a bad path
    /// fails first, not after the work).
    fn prepare(&self, json: Option<&std::path::Path>) -> Result<(), Failure> {
        if let Some(json) = json {
            output::check_output_file("--json", json, false)?;
        }
        if let Some(html) = &self.html {
            output::check_output_file("--html", html, false)?;
        }
        if let Some(dir) = &self.svg_dir {
            output::check_output_dir("--svg-dir", dir)?;
        }
        Ok(())
    }

    fn write(&self, r: &report::Report, cmd: &str) -> Result<(), Failure> {
        if let Some(dir) = &self.svg_dir {
            std::fs::create_dir_all(dir).map_err(|e| {
                Failure::Input(format!("--svg-dir {}: cannot make it: {e}", dir.display()))
            })?;
        }
        r.write(self.html.as_deref(), self.svg_dir.as_deref(), cmd)
    }
}

#[derive(Args, Debug)]
struct ReportArgs {
    /// A saved result: the `--json` of sim, compare or suite, or a sweep's `--out` file.
    #[arg(value_name = "RESULT")]
    result: PathBuf,
    #[command(flatten)]
    out: ReportOut,
}

#[derive(Args, Debug)]
struct TopologyArgs {
    /// Machine: a preset name or a TOML file. Without it: this host, from sysfs under
    /// `--root`, with its sockets, SMT siblings and last-level caches.
    #[arg(long, short = 'm')]
    machine: Option<String>,
    /// Where the host's `/sys` is found (a fixture tree in tests).
    #[arg(long, default_value = "/", conflicts_with = "machine")]
    root: PathBuf,
    /// Override a machine field, e.g. `--set machine.topology.memory_per_node=32GiB`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// `rhel7`: the layout of the RHEL memory brief's Figure 4 (numactl 2.0.9: `node  0  1`,
    /// ` 0:  10  21`); `current`: numactl 2.0.14+ (`node   0   1 `, `  0:  10  21 `, with the
    /// trailing spaces).
    #[arg(long, value_enum, default_value = "rhel7")]
    style: output::NumactlStyle,
    /// The Linux release whose memory tiers are shown for a simulated machine with
    /// CPU-less or slower nodes (6.1 to 7.2; tiers from HMAT performance since 6.11).
    #[arg(long, default_value = "7.2", conflicts_with = "root")]
    kernel: String,
}

#[derive(Args, Debug, Clone)]
struct ScenarioArgs {
    /// Machine: a preset name (see `numabal list`) or a TOML file.
    #[arg(long, short = 'm')]
    machine: Option<String>,
    /// Workload: a preset name or a TOML file.
    #[arg(long, short = 'w')]
    workload: Option<String>,
    /// A scenario file naming machine, workload, policy and [sim] settings.
    #[arg(long)]
    scenario: Option<String>,
    /// Override any scenario field or policy tunable by its dotted name, e.g.
    /// `--set machine.memory.controller_gib_s=10` or `--set sim.tick_ms=1`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
}

#[derive(Args, Debug)]
struct SimArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
    // The help lists every policy from the registry (numabal_sim::registry).
    #[arg(long, short = 'p', value_name = "POLICY", help = policy_help("Policy"))]
    policy: Option<String>,
    /// Seed of every random choice (same seed, same output).
    #[arg(long)]
    seed: Option<u64>,
    /// Write the machine-readable result here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Print `numastat -p` tables over the run: at 1 s (start: after the first
    /// allocations), every `--numastat-every` seconds if given, and at the end.
    #[arg(long)]
    numastat: bool,
    /// With `--numastat`: also every this many simulated seconds
    /// (`--set sim.numastat_every_s=S`).
    #[arg(long, value_name = "S", requires = "numastat")]
    numastat_every: Option<f64>,
    /// Replay a recording (`numabal record`) through the policy instead of simulating a
    /// workload; the machine is the recording's, the decisions go to stdout.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["json", "numastat", "seed"])]
    trace: Option<PathBuf>,
    #[command(flatten)]
    report: ReportOut,
    /// No progress on stderr.
    #[arg(long)]
    quiet: bool,
    /// At the end, print on stderr what the simulator did: events handled, intervals
    /// stepped, hinting faults, wall time and the rates per wall second (for benchmarks)
    #[arg(long)]
    engine_stats: bool,
}

#[derive(Args, Debug)]
struct CompareArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
    #[arg(
        long,
        value_delimiter = ',',
        required = true,
        value_name = "POLICY,...",
        help = policy_help("Comma-separated policies, each once")
    )]
    policies: Vec<String>,
    /// Number of seeds per policy (seeds 1..=K unless --first-seed is given).
    #[arg(long, default_value_t = 5)]
    seeds: u64,
    /// First seed.
    #[arg(long, default_value_t = 1)]
    first_seed: u64,
    /// Runs in parallel (default: one per core).
    #[arg(long)]
    jobs: Option<usize>,
    /// Write the machine-readable result here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    #[command(flatten)]
    report: ReportOut,
    /// No progress on stderr.
    #[arg(long)]
    quiet: bool,
}

#[derive(Args, Debug)]
struct SuiteArgs {
    /// Suite: a preset name (see `numabal list`) or a TOML file.
    #[arg(value_name = "SUITE")]
    suite: String,
    /// Machine: a preset name (see `numabal list`) or a TOML file.
    #[arg(long, short = 'm')]
    machine: String,
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "POLICY,...",
        help = policy_help(
            "Comma-separated policies, each once (default: the suite's); the first is the \
             baseline of the ratios"
        )
    )]
    policies: Vec<String>,
    /// Seeds per policy and workload: seeds 1..=N (default: the suite's).
    #[arg(long)]
    seeds: Option<u64>,
    /// Override a field of every run, after the suite's `[set]` (see `numabal sim --help`).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Runs in parallel (default: one per core).
    #[arg(long)]
    jobs: Option<usize>,
    /// Write the machine-readable result here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    #[command(flatten)]
    report: ReportOut,
    /// No progress on stderr.
    #[arg(long)]
    quiet: bool,
}

#[derive(Args, Debug, Default)]
struct DemoArgs {
    /// Seeds per policy.
    #[arg(long, default_value_t = 3)]
    seeds: u64,
    /// Write the machine-readable comparison here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    #[command(flatten)]
    report: ReportOut,
    /// No progress on stderr.
    #[arg(long)]
    quiet: bool,
}

/// The help of an option naming policies: `what`, then every policy of the registry, so
/// the help cannot fall behind it.
fn policy_help(what: &str) -> String {
    let names = numabal_sim::registry::standard().names(|e| e.sim);
    format!("{what}: {names}, or a TOML file")
}

enum Failure {
    /// Bad input: one line, status 2.
    Input(String),
    /// A search that found nothing (`stat -p` matching no process): a line for each, status
    /// 1, as `grep` finding nothing.
    NotFound(Vec<String>),
    /// A bug: status 1.
    Internal(String),
    /// Checks that ran and failed (`twin`'s figures): said on stderr, status 1.
    Failed(String),
}

impl Failure {
    /// What it says, in one line.
    fn message(&self) -> String {
        match self {
            Failure::Input(m) | Failure::Internal(m) | Failure::Failed(m) => m.clone(),
            Failure::NotFound(lines) => lines.join("; "),
        }
    }
}

impl From<InputError> for Failure {
    fn from(e: InputError) -> Self {
        Failure::Input(e.to_string())
    }
}

impl From<numabal_live::LiveError> for Failure {
    fn from(e: numabal_live::LiveError) -> Self {
        Failure::Input(e.to_string())
    }
}

impl From<SimError> for Failure {
    fn from(e: SimError) -> Self {
        match e {
            SimError::Input(i) => Failure::Input(i.to_string()),
            SimError::Invariant(_) => Failure::Internal(e.to_string()),
        }
    }
}

fn topology(a: &TopologyArgs) -> Result<(), Failure> {
    match &a.machine {
        Some(name) => {
            let m = numabal_model::scenario::load_machine(name, &a.sets, &FsResolver)?;
            let nodes = output::machine_numactl_nodes(&m);
            out!("{}", output::numactl_hardware(&nodes, &m.distance, a.style));
            let k = numabal_model::KernelVersion::parse(&a.kernel).ok_or_else(|| {
                Failure::Input(format!(
                    "--kernel {}: not a modelled release (allowed: {})",
                    a.kernel,
                    numabal_model::kernel_version::ALLOWED
                ))
            })?;
            let tiers = m.memory_tiers(k);
            if tiers.tiered() || tiers.note.is_some() {
                out!("{}", output::memory_tiers(&m, &tiers, k));
            }
        }
        None => {
            if let Some(s) = a.sets.first() {
                return Err(Failure::Input(format!(
                    "--set {s}: applies to a simulated machine only (allowed with --machine)"
                )));
            }
            let t =
                numabal_live::read_topology(&a.root).map_err(|e| Failure::Input(e.to_string()))?;
            out!("{}", output::live_topology(&t, a.style));
        }
    }
    Ok(())
}

/// The `numabal` command: parse the arguments, run, say what failed in one line.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // clap prints usage errors on stderr and help/version on stdout.
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    output::set_wide(cli.wide);
    let res = match cli.cmd {
        None => demo(&DemoArgs {
            seeds: 3,
            ..Default::default()
        }),
        Some(Cmd::Demo(a)) => demo(&a),
        Some(Cmd::List) => {
            output::print_list();
            Ok(())
        }
        Some(Cmd::Sim(a)) => sim(&a),
        Some(Cmd::Compare(a)) => compare(&a),
        Some(Cmd::Suite(a)) => suite::suite(&a),
        Some(Cmd::Topology(a)) => topology(&a),
        Some(Cmd::Advise(a)) => advise::advise(&a),
        Some(Cmd::Stat(a)) => stat::stat(&a),
        Some(Cmd::Daemon(a)) => daemon::daemon(&a),
        Some(Cmd::Sweep(a)) => sweep::sweep(&a),
        Some(Cmd::Record(a)) => record::record(&a),
        Some(Cmd::Report(a)) => report_cmd(&a),
        Some(Cmd::Twin(a)) => twin::twin(&a),
    };
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Input(msg)) => {
            eprintln!("numabal: {msg}");
            ExitCode::from(2)
        }
        Err(Failure::NotFound(lines)) => {
            for l in lines {
                eprintln!("numabal: {l}");
            }
            ExitCode::from(1)
        }
        Err(Failure::Internal(msg)) | Err(Failure::Failed(msg)) => {
            eprintln!("numabal: {msg}");
            ExitCode::from(1)
        }
    }
}

/// `--policies` names each policy once.
fn policies_once(policies: &[String]) -> Result<(), Failure> {
    match duplicate(policies) {
        Some((_, j)) => Err(Failure::Input(format!(
            "--policies: `{}` is given twice (name each policy once)",
            policies[j]
        ))),
        None => Ok(()),
    }
}

fn build(s: &ScenarioArgs, policy: Option<String>, seed: Option<u64>) -> Result<Scenario, Failure> {
    Ok(build_checked(s, policy, seed)?)
}

/// A scenario whose policy has been validated too.
fn build_checked(
    s: &ScenarioArgs,
    policy: Option<String>,
    seed: Option<u64>,
) -> Result<Scenario, InputError> {
    let input = ScenarioInput {
        scenario: s.scenario.clone(),
        machine: s.machine.clone(),
        workload: s.workload.clone(),
        policy,
        seed,
        sets: s.sets.clone(),
    };
    // The policy is validated now so a bad tunable fails before any work; so is the way it
    // runs as numabal's daemon (a [daemon] table for a policy that is none, a sensor the
    // simulated host cannot offer).
    let sc = Scenario::build_with(&input, &FsResolver, &|p, m| {
        numabal_sim::registry::standard().check(p, m)
    })?;
    numabal_sim::registry::standard()
        .build_run(&sc.policy, sc.daemon.as_ref())
        .map_err(|e| blame_daemon(e, s))?;
    Ok(sc)
}

/// A `[daemon]` error named where the setting was written: the last `--set daemon.KEY`
/// of the field (or any `--set daemon.*` for the table as a whole), else the scenario file.
fn blame_daemon(mut e: InputError, s: &ScenarioArgs) -> InputError {
    if e.source != "[daemon]" {
        return e;
    }
    let key = format!("daemon.{}", e.field);
    let set = s.sets.iter().rev().find(|x| {
        let k = x.split_once('=').map_or(x.as_str(), |(k, _)| k.trim());
        if e.field.is_empty() {
            k.starts_with("daemon.")
        } else {
            k == key
        }
    });
    e.field = if e.field.is_empty() {
        String::new()
    } else {
        key
    };
    match (set, &s.scenario) {
        (Some(x), _) => e.source = format!("--set {x}"),
        (None, Some(f)) => e.source = f.clone(),
        (None, None) => {}
    }
    e
}

fn sim(a: &SimArgs) -> Result<(), Failure> {
    if let Some(trace) = &a.trace {
        let s = &a.scenario;
        if s.machine.is_some() || s.workload.is_some() || s.scenario.is_some() {
            return Err(Failure::Input(
                "--trace: replays a recording on its own machine (not allowed with --machine, \
                 --workload or --scenario)"
                    .into(),
            ));
        }
        if a.report.wanted() {
            return Err(Failure::Input(
                "--trace: a replay prints decisions only (not allowed with --html or --svg-dir)"
                    .into(),
            ));
        }
        let policy = a.policy.clone().unwrap_or_else(|| "numad".into());
        return replay::replay(trace, &policy, &s.sets);
    }
    let mut scenario = a.scenario.clone();
    if a.numastat {
        scenario.sets.push("sim.numastat_at_s=[1.0]".into());
    }
    let every = a
        .numastat_every
        .map(|s| format!("sim.numastat_every_s={s}"));
    scenario.sets.extend(every.clone());
    let policy = a
        .policy
        .clone()
        .or_else(|| a.scenario.scenario.is_none().then(|| "none".into()));
    let sc = build_checked(&scenario, policy, a.seed).map_err(|mut e| {
        // The option the user gave, not the --set it stands for.
        if every
            .as_ref()
            .is_some_and(|s| e.source == format!("--set {s}"))
        {
            e.source = "--numastat-every".into();
            e.field.clear();
        }
        e
    })?;
    a.report.prepare(a.json.as_deref())?;
    let progress = progress::Progress::simulated("sim", a.quiet);
    let started = std::time::Instant::now();
    let r = numabal_sim::run_counted(
        numabal_sim::registry::standard(),
        &sc,
        Some(&|p| progress.simulated_to(p)),
    );
    progress.finish();
    let (r, counts) = r?;
    if a.engine_stats {
        print_engine_stats(&r, counts, started.elapsed().as_secs_f64());
    }
    if let Some(path) = &a.json {
        output::write_json_atomic(path, &r)?;
    }
    output::print_run(&sc, &r);
    if a.numastat {
        output::print_numastat_samples(&r, sc.machine.nr_nodes());
    }
    a.report.write(&report::Report::of_run(&r), "sim")?;
    Ok(())
}

/// One line on stderr: what the engine did, and per wall second.
fn print_engine_stats(r: &numabal_sim::RunResult, c: numabal_sim::EngineCounts, wall_s: f64) {
    let per = |x: f64| x / wall_s.max(1e-9);
    let hint = r.metrics.numa_hint_faults as f64;
    eprintln!(
        "engine: {} events, {} steps, {hint} hinting faults, {:.3} s wall; per wall second: \
         {:.1} simulated s, {:.0} events, {:.0} steps, {:.0} hinting faults",
        c.events,
        c.steps,
        wall_s,
        per(r.metrics.runtime_s),
        per(c.events as f64),
        per(c.steps as f64),
        per(hint),
    );
}

fn compare(a: &CompareArgs) -> Result<(), Failure> {
    let r = compare_result(a)?;
    if let Some(path) = &a.json {
        output::write_json_atomic(path, &r)?;
    }
    output::print_compare(&r);
    a.report.write(&report::Report::of_compare(&r), "compare")?;
    Ok(())
}

/// `compare`'s runs, every input checked first (where the results go too).
fn compare_result(a: &CompareArgs) -> Result<numabal_sim::CompareResult, Failure> {
    if a.seeds == 0 || a.seeds > 10_000 {
        return Err(Failure::Input(format!(
            "--seeds: is {} (allowed: 1-10000)",
            a.seeds
        )));
    }
    if a.jobs == Some(0) {
        return Err(Failure::Input("--jobs: must be at least 1".into()));
    }
    policies_once(&a.policies)?;
    let first = a.policies.first().cloned();
    let sc = build(&a.scenario, first, None)?;
    let mut specs: Vec<PolicySpec> = Vec::new();
    for p in &a.policies {
        let one = build(&a.scenario, Some(p.clone()), None)?;
        specs.push(one.policy);
    }
    let seeds: Vec<u64> = (0..a.seeds).map(|i| a.first_seed + i).collect();
    a.report.prepare(a.json.as_deref())?;
    let progress = progress::Progress::runs("compare", (specs.len() * seeds.len()) as u64, a.quiet);
    let r = numabal_sim::compare_observed(&sc, &specs, &seeds, a.jobs, &|r| {
        progress.run_done(&format!("{} seed {}", r.scenario.policy, r.scenario.seed))
    });
    progress.finish();
    Ok(r?)
}

fn report_cmd(a: &ReportArgs) -> Result<(), Failure> {
    if !a.out.wanted() {
        return Err(Failure::Input(
            "report: say where it goes (--html FILE and/or --svg-dir DIR)".into(),
        ));
    }
    let r = report::Report::load(&a.result)?;
    a.out.prepare(None)?;
    a.out.write(&r, "report")
}

fn demo(a: &DemoArgs) -> Result<(), Failure> {
    let args = CompareArgs {
        scenario: ScenarioArgs {
            machine: Some("autonuma-2n24".into()),
            workload: Some("numa02".into()),
            scenario: None,
            sets: Vec::new(),
        },
        policies: vec![
            "bind".into(),
            "none".into(),
            "reverse-bind".into(),
            "interleave".into(),
            "autonuma".into(),
            "stable".into(),
        ],
        seeds: a.seeds.max(1),
        first_seed: 1,
        jobs: None,
        json: a.json.clone(),
        report: a.report.clone(),
        quiet: a.quiet,
    };
    // Where the results go is checked before the text: a bad path fails at once.
    args.report.prepare(args.json.as_deref())?;
    outln!("numabal demo: numa02 (autonuma-benchmark) on the 24-CPU AutoNUMA benchmark machine");
    outln!();
    outln!("One process with a thread per CPU; main() first-touches the whole 1 GiB buffer on its");
    outln!("own node, then every thread zeroes its own slice 800 times. Without NUMA balancing");
    outln!("(`none`) half the threads work on remote memory and all of them share one memory");
    outln!("controller; `bind` (HARD_BIND) puts each slice next to its thread; `reverse-bind`");
    outln!("(INVERSE_BIND) puts every slice on the other node; `interleave` spreads pages over");
    outln!("both nodes. The AutoNUMA benchmark table (2012) measured none/bind = 1.52 and");
    outln!("reverse/bind = 1.92 on the real machine; the ratios below are against bind.");
    outln!("Then the balancers, which start from `none`'s placement and must find `bind`'s:");
    outln!("`autonuma` (the Linux 6.x kernel's NUMA balancing: scanning, hinting faults, page");
    outln!("and task migration) and `stable` (Stable-NUMA's page states and thread clustering).");
    outln!("`--html report.html` draws it all: memory per node over time, locality, faults,");
    outln!("migrations, runtime boxes.");
    outln!();
    compare(&args)?;
    outln!();
    outln!(
        "Try: numabal demo --html demo.html                     (the report of this comparison)"
    );
    outln!(
        "     numabal sim -m autonuma-2n24 -w numa01 -p autonuma --svg-dir fig  (memory moving apart)"
    );
    outln!("     numabal compare -m autonuma-2n24 -w numa01 --policies none,bind,reverse-bind");
    outln!("     numabal list");
    Ok(())
}
