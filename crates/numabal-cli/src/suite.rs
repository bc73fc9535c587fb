//! `numabal suite`: resolve the suite and every scenario up front (so bad input fails before
//! any run), run everything, report progress on stderr and results on stdout.

use crate::entry::Entry;
use crate::fsresolver::FsResolver;
use crate::{Failure, ScenarioArgs, SuiteArgs, build_checked, output};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use numabal_model::scenario::{Kind, PolicySpec, Resolver, names_file};
use numabal_model::suite::MAX_SEEDS;
use numabal_model::{InputError, Scenario, SuiteSpec};
use numabal_sim::RunResult;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

pub fn suite(a: &SuiteArgs) -> Result<(), Failure> {
    let r = suite_result(a)?;
    if let Some(path) = &a.json {
        output::write_json_atomic(path, &r)?;
    }
    output::print_suite(&r);
    a.report
        .write(&crate::report::Report::of_suite(&r), "suite")?;
    Ok(())
}

/// The suite's runs, every input checked first (where the results go too).
pub fn suite_result(a: &SuiteArgs) -> Result<numabal_sim::SuiteResult, Failure> {
    if let Some(n) = a.seeds
        && (n == 0 || n > MAX_SEEDS)
    {
        return Err(Failure::Input(format!(
            "--seeds: is {n} (allowed: 1-{MAX_SEEDS})"
        )));
    }
    if a.jobs == Some(0) {
        return Err(Failure::Input("--jobs: must be at least 1".into()));
    }
    let src = FsResolver.resolve(Kind::Suite, &a.suite)?;
    let spec = SuiteSpec::parse(&src)?;
    let label = src.label.clone();
    // Relative workload paths in a suite file are relative to the suite file.
    let dir = (!label.starts_with("preset ")).then(|| Path::new(&a.suite).parent());
    let suite_sets = spec.set_strings();
    let mut sets = suite_sets.clone();
    sets.extend(a.sets.iter().cloned());
    let from_suite = a.policies.is_empty();
    let policies = if from_suite {
        spec.policies.clone()
    } else {
        a.policies.clone()
    };
    crate::policies_once(&a.policies)?;
    let seeds: Vec<u64> = (1..=a.seeds.unwrap_or(spec.seeds)).collect();

    let args = |workload: String| ScenarioArgs {
        machine: Some(a.machine.clone()),
        workload: Some(workload),
        scenario: None,
        sets: sets.clone(),
    };
    let workloads: Vec<String> = spec
        .workloads
        .iter()
        .map(|w| match dir.flatten() {
            Some(d) if names_file(w) && Path::new(w).is_relative() => {
                d.join(w).display().to_string()
            }
            _ => w.clone(),
        })
        .collect();
    let file = Some(label.as_str());
    let policy_entries: Vec<Entry> = policies
        .iter()
        .enumerate()
        .map(|(i, p)| match from_suite {
            true => Entry::new(Kind::Policy, p, file, "policies", i),
            false => Entry::new(Kind::Policy, p, None, "--policies", i),
        })
        .collect();
    // `entries`: the entries the run was built from, its workload's first.
    let blame = |e: InputError, entries: &[&Entry]| -> InputError {
        let of_workload = e.source.starts_with("--set workload.");
        // A suite's [set] key is the suite file's error (and of one workload, if its key is).
        if suite_sets.iter().any(|s| e.source == format!("--set {s}")) {
            let at = match of_workload {
                true => entries[0].at.clone(),
                false => label.clone(),
            };
            return InputError::new(at, format!("set.{}", e.field), e.message);
        }
        // A --set of the workload fails for one workload: say which.
        if of_workload {
            return entries[0].blame(e);
        }
        crate::entry::blame_first(entries, e)
    };
    let mut bases: Vec<Scenario> = Vec::with_capacity(workloads.len());
    for (i, w) in workloads.iter().enumerate() {
        let entry = Entry::new(Kind::Workload, &spec.workloads[i], file, "workloads", i).read_as(w);
        let sc = build_checked(&args(w.clone()), policies.first().cloned(), None)
            .map_err(|e| blame(e, &[&entry, &policy_entries[0]]))?;
        bases.push(sc);
    }
    let mut specs: Vec<PolicySpec> = Vec::with_capacity(policies.len());
    for (p, entry) in policies.iter().zip(&policy_entries) {
        let sc = build_checked(&args(workloads[0].clone()), Some(p.clone()), None)
            .map_err(|e| blame(e, &[entry]))?;
        specs.push(sc.policy);
    }

    let names: Vec<String> = bases
        .iter()
        .map(|b| b.workload.name().to_string())
        .collect();
    a.report.prepare(a.json.as_deref())?;
    let progress = Progress::new(names, policies.len() * seeds.len(), a.quiet);
    if !a.quiet {
        eprintln!(
            "numabal suite: {} on {}: {} workloads x {} policies x {} seeds = {} runs",
            spec.name,
            bases[0].machine.name(),
            bases.len(),
            specs.len(),
            seeds.len(),
            progress.total
        );
    }
    let r = numabal_sim::suite(
        &spec.name,
        &spec.description,
        &bases,
        &specs,
        &seeds,
        a.jobs,
        &|w, r| progress.done(w, r),
    );
    progress.bar.finish_and_clear();
    Ok(r?)
}

/// Progress on stderr: a bar on a terminal, else one line per finished workload.
struct Progress {
    bar: ProgressBar,
    quiet: bool,
    total: usize,
    per_workload: usize,
    names: Vec<String>,
    done: AtomicUsize,
    done_of: Vec<AtomicUsize>,
}

impl Progress {
    fn new(names: Vec<String>, per_workload: usize, quiet: bool) -> Progress {
        let total = names.len() * per_workload;
        let target = if quiet {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        };
        let bar = ProgressBar::with_draw_target(Some(total as u64), target);
        if let Ok(style) = ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} runs, eta {eta} {wide_msg}",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        Progress {
            bar,
            quiet,
            total,
            per_workload,
            done_of: names.iter().map(|_| AtomicUsize::new(0)).collect(),
            names,
            done: AtomicUsize::new(0),
        }
    }

    fn done(&self, w: usize, r: &RunResult) {
        let n = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        let finished = self.done_of[w].fetch_add(1, Ordering::Relaxed) + 1 == self.per_workload;
        if self.bar.is_hidden() {
            if finished && !self.quiet {
                eprintln!(
                    "numabal suite: {} done ({n}/{} runs)",
                    self.names[w], self.total
                );
            }
            return;
        }
        self.bar.inc(1);
        self.bar.set_message(format!(
            "{} {} seed {}",
            r.scenario.workload, r.scenario.policy, r.scenario.seed
        ));
        if finished {
            self.bar.println(format!("{} done", self.names[w]));
        }
    }
}
