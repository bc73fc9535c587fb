//! The commands as functions, for the Python package (`crates/numabal-py`): the same
//! scenario building, the same one-line errors and the same JSON text as `numabal sim`,
//! `compare`, `suite` and `sweep`, returned instead of printed or written. Nothing here
//! prints: progress is off, tables come back as text.

use crate::sweep::{GivenGrid, Plan, SweepArgs};
use crate::{CompareArgs, Failure, ScenarioArgs, SuiteArgs, build_checked, output, stdout};
use std::path::{Path, PathBuf};

/// What went wrong, in the command's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// Bad input (the command's exit status 2); otherwise a failure of the run or the host
    /// (status 1).
    pub input: bool,
    /// The one line the command prints after `numabal: `.
    pub message: String,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<Failure> for Error {
    fn from(e: Failure) -> Self {
        let input = matches!(e, Failure::Input(_));
        Error {
            input,
            message: e.message(),
        }
    }
}

fn internal(message: String) -> Error {
    Error {
        input: false,
        message,
    }
}

/// A command's result: its `--json` text, byte for byte, and what it prints.
#[derive(Debug, Clone)]
pub struct Output {
    pub json: String,
    pub text: String,
}

fn output_of<T: serde::Serialize>(r: &T, print: impl FnOnce()) -> Result<Output, Error> {
    let json = output::json_text(r).map_err(|e| internal(format!("result as JSON: {e}")))?;
    Ok(Output {
        json,
        text: stdout::capture(print),
    })
}

/// Machine, workload (preset names or TOML files) or a scenario file, and `--set`s.
#[derive(Debug, Clone, Default)]
pub struct ScenarioSpec {
    pub machine: Option<String>,
    pub workload: Option<String>,
    pub scenario: Option<String>,
    pub sets: Vec<String>,
}

impl ScenarioSpec {
    fn args(&self) -> ScenarioArgs {
        ScenarioArgs {
            machine: self.machine.clone(),
            workload: self.workload.clone(),
            scenario: self.scenario.clone(),
            sets: self.sets.clone(),
        }
    }
}

/// `numabal sim --json` (the policy `none` when neither it nor a scenario file names one).
pub fn run(s: &ScenarioSpec, policy: Option<&str>, seed: Option<u64>) -> Result<Output, Error> {
    let policy = policy
        .map(str::to_string)
        .or_else(|| s.scenario.is_none().then(|| "none".into()));
    let sc = build_checked(&s.args(), policy, seed).map_err(Failure::from)?;
    let r = numabal_sim::run(&sc).map_err(Failure::from)?;
    output_of(&r, || output::print_run(&sc, &r))
}

/// `numabal compare --json`: every policy over seeds `first_seed ..` (`seeds` of them).
pub fn compare(
    s: &ScenarioSpec,
    policies: &[String],
    seeds: u64,
    first_seed: u64,
    jobs: Option<usize>,
) -> Result<Output, Error> {
    let a = CompareArgs {
        scenario: s.args(),
        policies: policies.to_vec(),
        seeds,
        first_seed,
        jobs,
        json: None,
        report: Default::default(),
        quiet: true,
    };
    let r = crate::compare_result(&a)?;
    output_of(&r, || output::print_compare(&r))
}

/// `numabal suite --json` of a suite (a preset or a TOML file) on `machine`; `policies`
/// and `seeds` replace the suite's when given.
pub fn suite(
    suite: &str,
    machine: &str,
    policies: &[String],
    seeds: Option<u64>,
    sets: &[String],
    jobs: Option<usize>,
) -> Result<Output, Error> {
    let a = SuiteArgs {
        suite: suite.to_string(),
        machine: machine.to_string(),
        policies: policies.to_vec(),
        seeds,
        sets: sets.to_vec(),
        jobs,
        json: None,
        report: Default::default(),
        quiet: true,
    };
    let r = crate::suite::suite_result(&a)?;
    output_of(&r, || output::print_suite(&r))
}

/// A sweep's grid: a TOML file as `numabal sweep --grid` reads it, or the same table as
/// TOML or JSON text (its errors name `label`).
#[derive(Debug, Clone)]
pub enum Grid {
    File(PathBuf),
    Toml { label: String, text: String },
    Json { label: String, text: String },
}

impl Grid {
    fn parts(&self) -> Result<(SweepArgs, Option<GivenGrid>), Error> {
        let mut a = SweepArgs::default();
        let given = match self {
            Grid::File(p) => {
                a.grid = Some(p.clone());
                None
            }
            Grid::Toml { label, text } => {
                let src = numabal_model::scenario::Source {
                    label: label.clone(),
                    text: text.clone(),
                };
                let table = numabal_model::scenario::parse_toml(&src).map_err(Failure::from)?;
                Some(GivenGrid {
                    label: label.clone(),
                    table,
                })
            }
            Grid::Json { label, text } => {
                let table = serde_json::from_str::<toml::Table>(text).map_err(|e| Error {
                    input: true,
                    message: format!("{label}: not a grid table: {e}"),
                })?;
                Some(GivenGrid {
                    label: label.clone(),
                    table,
                })
            }
        };
        Ok((a, given))
    }
}

/// A grid with every run's scenario built and checked: its runs, one at a time, for an
/// executor that spreads them (the Python package's Ray executor).
pub struct Sweep(Plan);

impl Sweep {
    pub fn new(grid: &Grid) -> Result<Sweep, Error> {
        let (a, given) = grid.parts()?;
        Ok(Sweep(Plan::new(&a, given)?))
    }

    /// Every run's key (the results file's `key`), in the grid's order.
    pub fn keys(&self) -> Vec<String> {
        self.0.keys()
    }

    /// Run `i`: its line of the results file, as `numabal sweep` writes it (no line break).
    pub fn run(&self, i: usize) -> Result<String, Error> {
        Ok(self.0.run_line(i)?)
    }
}

/// `numabal sweep --grid ... --out OUT`: the runs not yet in `out` (resumed as the command
/// does), `jobs` at a time, at most `max_runs` of them.
pub fn sweep_local(
    grid: &Grid,
    out: &Path,
    jobs: Option<usize>,
    max_runs: Option<usize>,
    quiet: bool,
) -> Result<(), Error> {
    let (mut a, given) = grid.parts()?;
    a.out = out.to_path_buf();
    a.jobs = jobs;
    a.max_runs = max_runs;
    a.quiet = quiet;
    Ok(crate::sweep::sweep_grid(&a, given)?)
}

/// The keys of the runs in a results file (none if it does not exist); a last line cut
/// short by an interrupted write is dropped from the file, as `numabal sweep` does.
pub fn results_done(out: &Path) -> Result<Vec<String>, Error> {
    Ok(crate::sweep::resume(out)?.into_iter().collect())
}

/// A preset or a policy, as `numabal list` shows it.
#[derive(Debug, Clone)]
pub struct Preset {
    pub name: String,
    pub description: String,
    /// Policies only: runs in the simulator / in the daemon.
    pub sim: bool,
    pub live: bool,
}

/// `numabal list`: machines, workloads, policies and suites, in its order (it prints
/// these).
pub fn presets() -> Vec<(&'static str, Vec<Preset>)> {
    use numabal_model::presets;
    let desc = |text: &str| {
        toml::from_str::<toml::Table>(text)
            .ok()
            .and_then(|t| {
                t.get("description")
                    .and_then(|d| d.as_str().map(String::from))
            })
            .unwrap_or_default()
    };
    let files = |list: &[(&str, &str)]| -> Vec<Preset> {
        list.iter()
            .map(|(n, t)| Preset {
                name: n.to_string(),
                description: desc(t),
                sim: true,
                live: false,
            })
            .collect()
    };
    let policies = numabal_sim::registry::standard()
        .entries()
        .iter()
        .map(|p| Preset {
            name: p.name.to_string(),
            description: p.summary.to_string(),
            sim: p.sim,
            live: p.live,
        })
        .collect();
    vec![
        ("machines", files(presets::MACHINES)),
        ("workloads", files(presets::WORKLOADS)),
        ("policies", policies),
        ("suites", files(presets::SUITES)),
    ]
}
