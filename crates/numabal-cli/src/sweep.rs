//! `numabal sweep`: a grid of runs (machines × workloads × policies × tunable values ×
//! seeds) from a TOML file or flags, run in parallel, one JSON line appended to the results
//! file per finished run. An existing results file is resumed: runs already in it are not
//! redone (a line cut short by an interruption is dropped and its run made again).
//!
//! ```toml
//! machines = ["tiny-2n4"]
//! workloads = ["numa01"]
//! policies = ["autonuma"]
//! seeds = 5                     # seeds first_seed .. first_seed + seeds - 1
//! first_seed = 1
//! set = ["sim.max_time_s=60"]   # fixed overrides
//! [vary]                        # every combination of these values
//! "policy.scan_delay_ms" = [100, 1000, 5000]
//! [each]                        # one field at a time, the others at their defaults
//! "policy.scan_size_mb" = [64, 256]
//! "policy.scan_period_min_ms" = [100, 1000]
//! ```

use crate::{Failure, ScenarioArgs, build_checked};
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use numabal_model::Scenario;
use rayon::prelude::*;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// The grid as a TOML file (machines, workloads, policies, seeds, first_seed, set,
    /// [vary]); flags add to it.
    #[arg(long, value_name = "FILE")]
    grid: Option<PathBuf>,
    /// Machines (repeatable).
    #[arg(long, short = 'm')]
    machine: Vec<String>,
    /// Workloads (repeatable).
    #[arg(long, short = 'w')]
    workload: Vec<String>,
    /// Policies, comma-separated.
    #[arg(long, value_delimiter = ',')]
    policies: Vec<String>,
    /// Seeds per grid point.
    #[arg(long)]
    seeds: Option<u64>,
    /// First seed.
    #[arg(long)]
    first_seed: Option<u64>,
    /// A field and its values, e.g. `--vary policy.scan_delay_ms=100,1000` (repeatable:
    /// every combination).
    #[arg(long, value_name = "KEY=V1,V2,...")]
    vary: Vec<String>,
    /// A field and its values, one field at a time (the others at their defaults), e.g.
    /// `--each policy.scan_delay_ms=100,1000 --each policy.scan_size_mb=64,256`: 4 points.
    #[arg(long, value_name = "KEY=V1,V2,...")]
    each: Vec<String>,
    /// A fixed override, e.g. `--set sim.max_time_s=60`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// The results: one JSON line per finished run; an existing file is resumed.
    #[arg(long, short = 'o', value_name = "FILE")]
    out: PathBuf,
    /// Also write every result in the file as CSV (one row per run, sorted by run).
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Worker threads (default: every core).
    #[arg(long)]
    jobs: Option<usize>,
    /// Stop after this many new runs (the rest is left for a resumed sweep).
    #[arg(long)]
    max_runs: Option<usize>,
    /// No progress on stderr.
    #[arg(long)]
    quiet: bool,
    /// The report of every result in the file (`numabal report` of it).
    #[command(flatten)]
    report: crate::ReportOut,
}

#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
struct GridFile {
    #[serde(default)]
    machines: Vec<String>,
    #[serde(default)]
    workloads: Vec<String>,
    #[serde(default)]
    policies: Vec<String>,
    seeds: Option<u64>,
    first_seed: Option<u64>,
    #[serde(default)]
    set: Vec<String>,
    #[serde(default)]
    vary: BTreeMap<String, Vec<toml::Value>>,
    #[serde(default)]
    each: BTreeMap<String, Vec<toml::Value>>,
}

/// One run of the grid.
#[derive(Debug, Clone)]
struct Point {
    machine: String,
    workload: String,
    policy: String,
    vary: Vec<(String, String)>,
    seed: u64,
}

impl Point {
    /// The run's identity in the results file.
    fn key(&self) -> String {
        format!("{}|seed={}", self.base_key(), self.seed)
    }

    /// The grid point's identity, seed aside: runs that differ only by seed share it (and
    /// their scenario).
    fn base_key(&self) -> String {
        let mut k = format!(
            "machine={}|workload={}|policy={}",
            self.machine, self.workload, self.policy
        );
        for (f, v) in &self.vary {
            k += &format!("|{f}={v}");
        }
        k
    }
}

fn input(msg: impl Into<String>) -> Failure {
    Failure::Input(msg.into())
}

/// The grid from the file and the flags.
fn grid(a: &SweepArgs) -> Result<(Vec<Point>, Vec<String>), Failure> {
    let g = match &a.grid {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .map_err(|e| input(format!("{}: cannot read: {e}", p.display())))?;
            toml::from_str::<GridFile>(&text).map_err(|e| {
                input(format!(
                    "{}: {}",
                    p.display(),
                    e.message().replace('\n', " ")
                ))
            })?
        }
        None => GridFile::default(),
    };
    let src = a
        .grid
        .as_ref()
        .map_or("--".to_string(), |p| format!("{}: ", p.display()));
    let machines: Vec<String> = g.machines.iter().chain(&a.machine).cloned().collect();
    let workloads: Vec<String> = g.workloads.iter().chain(&a.workload).cloned().collect();
    let policies: Vec<String> = g.policies.iter().chain(&a.policies).cloned().collect();
    for (name, flag, v) in [
        ("machines", "--machine", &machines),
        ("workloads", "--workload", &workloads),
        ("policies", "--policies", &policies),
    ] {
        if v.is_empty() {
            return Err(input(format!(
                "{src}{name}: none given (allowed: names or TOML files, in the grid file or \
                 with {flag})"
            )));
        }
    }
    let seeds = a.seeds.or(g.seeds).unwrap_or(1);
    if seeds == 0 || seeds > 10_000 {
        return Err(input(format!("{src}seeds: is {seeds} (allowed: 1-10000)")));
    }
    let first = a.first_seed.or(g.first_seed).unwrap_or(1);
    let lists = |file: &BTreeMap<String, Vec<toml::Value>>,
                 flags: &[String],
                 what: &str|
     -> Result<BTreeMap<String, Vec<String>>, Failure> {
        let mut m: BTreeMap<String, Vec<String>> = file
            .iter()
            .map(|(k, vs)| (k.clone(), vs.iter().map(|v| v.to_string()).collect()))
            .collect();
        for v in flags {
            let Some((k, vs)) = v.split_once('=') else {
                return Err(input(format!("--{what} {v}: expected KEY=V1,V2,...")));
            };
            m.insert(
                k.trim().to_string(),
                vs.split(',').map(|s| s.trim().to_string()).collect(),
            );
        }
        if let Some((k, _)) = m
            .iter()
            .find(|(_, vs)| vs.is_empty() || vs.iter().any(|v| v.is_empty()))
        {
            return Err(input(format!(
                "{src}{what}.{k}: an empty value (allowed: a list of one or more values)"
            )));
        }
        Ok(m)
    };
    let vary = lists(&g.vary, &a.vary, "vary")?;
    let each = lists(&g.each, &a.each, "each")?;
    // Every combination of the varied values, in key order.
    let mut combos: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for (k, vs) in &vary {
        combos = combos
            .iter()
            .flat_map(|c| {
                vs.iter().map(move |v| {
                    let mut c = c.clone();
                    c.push((k.clone(), v.clone()));
                    c
                })
            })
            .collect();
    }
    // One field at a time: each value of each field alone, crossed with the combinations.
    if !each.is_empty() {
        let singles: Vec<(String, String)> = each
            .iter()
            .flat_map(|(k, vs)| vs.iter().map(move |v| (k.clone(), v.clone())))
            .collect();
        combos = combos
            .iter()
            .flat_map(|c| {
                singles.iter().map(move |kv| {
                    let mut c = c.clone();
                    c.push(kv.clone());
                    c
                })
            })
            .collect();
    }
    let mut points = Vec::new();
    for m in &machines {
        for w in &workloads {
            for p in &policies {
                for c in &combos {
                    for s in first..first + seeds {
                        points.push(Point {
                            machine: m.clone(),
                            workload: w.clone(),
                            policy: p.clone(),
                            vary: c.clone(),
                            seed: s,
                        });
                    }
                }
            }
        }
    }
    let sets: Vec<String> = g.set.iter().chain(&a.sets).cloned().collect();
    Ok((points, sets))
}

fn scenario(p: &Point, sets: &[String]) -> Result<Scenario, Failure> {
    let mut all = sets.to_vec();
    all.extend(p.vary.iter().map(|(k, v)| format!("{k}={v}")));
    let args = ScenarioArgs {
        machine: Some(p.machine.clone()),
        workload: Some(p.workload.clone()),
        scenario: None,
        sets: all,
    };
    Ok(build_checked(&args, Some(p.policy.clone()), Some(p.seed))?)
}

/// How every sweep result line starts (serde_json writes its keys in order).
const LINE_START: &str = "{\"finished\":";

/// The run key of a results line, if it is one numabal sweep wrote.
fn result_key(line: &str) -> Option<String> {
    let v = serde_json::from_str::<Value>(line).ok()?;
    let ours = v["metrics"].is_object() && v["numabal_version"].is_string();
    ours.then(|| v["key"].as_str().map(String::from)).flatten()
}

/// The keys already in the results file. A last line cut short (an interrupted write: the
/// start of one of our lines) is dropped from the file; anything else that is not our JSON
/// lines (another file given by mistake, binary data) is refused and left untouched.
fn resume(path: &Path) -> Result<BTreeSet<String>, Failure> {
    let not_ours = |why: String| {
        input(format!(
            "{}: {why} (allowed: the JSON lines numabal sweep writes, or a new file)",
            path.display()
        ))
    };
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeSet::new()),
        Err(e) => return Err(input(format!("{}: cannot read: {e}", path.display()))),
    };
    let text = String::from_utf8(bytes)
        .map_err(|_| not_ours("not a sweep results file: not text".into()))?;
    let mut keys = BTreeSet::new();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut good = 0;
    for (i, l) in lines.iter().enumerate() {
        let cut_short = i + 1 == lines.len()
            && !l.ends_with('\n')
            && (l.starts_with(LINE_START) || LINE_START.starts_with(*l));
        match result_key(l.trim_end()) {
            Some(k) if l.ends_with('\n') => {
                keys.insert(k);
                good += l.len();
            }
            _ if cut_short => {
                eprintln!(
                    "numabal sweep: {}: line {} is incomplete (an interrupted write): dropped, \
                     its run is made again",
                    path.display(),
                    i + 1
                );
                std::fs::write(path, &text[..good])
                    .map_err(|e| input(format!("{}: cannot write: {e}", path.display())))?;
            }
            _ => return Err(not_ours(format!("line {}: not a sweep result", i + 1))),
        }
    }
    Ok(keys)
}

pub fn sweep(a: &SweepArgs) -> Result<(), Failure> {
    if a.jobs == Some(0) {
        return Err(input("--jobs: must be at least 1"));
    }
    let (points, sets) = grid(a)?;
    // One scenario per grid point, built (and so checked) before any run: bad input fails
    // first. A run sets its seed on it, as `numabal compare` does.
    let mut built: BTreeMap<String, Scenario> = BTreeMap::new();
    for p in &points {
        if let std::collections::btree_map::Entry::Vacant(e) = built.entry(p.base_key()) {
            e.insert(scenario(p, &sets)?);
        }
    }
    a.report.prepare(None)?;
    crate::output::check_output_file("--out", &a.out, true)?;
    if let Some(csv) = &a.csv {
        crate::output::check_output_file("--csv", csv, false)?;
    }
    let done = resume(&a.out)?;
    let remaining: Vec<&Point> = points.iter().filter(|p| !done.contains(&p.key())).collect();
    let already = points.len() - remaining.len();
    let todo: Vec<&Point> = remaining
        .into_iter()
        .take(a.max_runs.unwrap_or(usize::MAX))
        .collect();
    if !a.quiet {
        eprintln!(
            "numabal sweep: {} runs in the grid, {already} already in {}, {} to run now",
            points.len(),
            a.out.display(),
            todo.len()
        );
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&a.out)
        .map_err(|e| input(format!("{}: cannot write: {e}", a.out.display())))?;
    let file = Mutex::new(file);
    let bar = if a.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::with_draw_target(Some(todo.len() as u64), ProgressDrawTarget::stderr())
    };
    if let Ok(style) = ProgressStyle::with_template(
        "{elapsed_precise} [{bar:30}] {pos}/{len} runs, eta {eta} {wide_msg}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    let finished = AtomicUsize::new(0);
    let one = |p: &&Point| -> Result<(), Failure> {
        let mut sc = built[&p.base_key()].clone();
        sc.sim.seed = p.seed;
        let r = numabal_sim::run(&sc)?;
        let line = json!({
            "key": p.key(), "machine": p.machine, "workload": p.workload, "policy": p.policy,
            "vary": p.vary.iter().cloned().collect::<BTreeMap<String, String>>(),
            "seed": p.seed, "finished": r.finished, "metrics": r.metrics,
            "stalls": r.stalls, "ping_pong": r.ping_pong, "tunables": r.scenario.tunables,
            "numabal_version": env!("CARGO_PKG_VERSION"),
        });
        {
            // One write per line, flushed: a run is in the file whole or not at all (but
            // for a kill during the write, which resume() repairs).
            let mut f = file
                .lock()
                .map_err(|_| Failure::Internal("results file lock".into()))?;
            f.write_all(format!("{line}\n").as_bytes())
                .and_then(|()| f.flush())
                .map_err(|e| input(format!("{}: cannot write: {e}", a.out.display())))?;
        }
        let n = finished.fetch_add(1, Ordering::Relaxed) + 1;
        if bar.is_hidden() {
            if !a.quiet && (n.is_multiple_of(10) || n == todo.len()) {
                eprintln!("numabal sweep: {n}/{} runs done", todo.len());
            }
        } else {
            bar.inc(1);
            bar.set_message(format!("{} {} seed {}", p.workload, p.policy, p.seed));
        }
        Ok(())
    };
    let res: Result<Vec<()>, Failure> = match a.jobs {
        Some(t) => rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build()
            .map_err(|e| Failure::Internal(format!("cannot start {t} worker threads: {e}")))?
            .install(|| todo.par_iter().map(one).collect()),
        None => todo.par_iter().map(one).collect(),
    };
    bar.finish_and_clear();
    res?;
    let total = already + finished.load(Ordering::Relaxed);
    if !a.quiet {
        eprintln!(
            "numabal sweep: {} new runs; {total} of {} in {}",
            finished.load(Ordering::Relaxed),
            points.len(),
            a.out.display()
        );
    }
    if let Some(csv) = &a.csv {
        write_csv(&a.out, csv)?;
    }
    if a.report.wanted() {
        let r = crate::report::Report::load(&a.out)?;
        a.report.write(&r, "sweep")?;
    }
    Ok(())
}

/// Every result line as a CSV row, sorted by run: machine, workload, policy, the varied
/// fields, seed, finished, then each numeric metric.
fn write_csv(results: &Path, csv: &Path) -> Result<(), Failure> {
    let text = std::fs::read_to_string(results)
        .map_err(|e| input(format!("{}: cannot read: {e}", results.display())))?;
    let mut rows: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    rows.sort_by(|a, b| a["key"].as_str().cmp(&b["key"].as_str()));
    let mut vary_keys: BTreeSet<String> = BTreeSet::new();
    let mut metric_keys: BTreeSet<String> = BTreeSet::new();
    for r in &rows {
        if let Some(v) = r["vary"].as_object() {
            vary_keys.extend(v.keys().cloned());
        }
        if let Some(m) = r["metrics"].as_object() {
            metric_keys.extend(
                m.iter()
                    .filter(|(_, v)| v.is_number())
                    .map(|(k, _)| k.clone()),
            );
        }
    }
    let field = |s: &str| {
        if s.contains([',', '"', '\n']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    let mut out = String::new();
    let mut head: Vec<String> = ["machine", "workload", "policy"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    head.extend(vary_keys.iter().cloned());
    head.extend(["seed".to_string(), "finished".to_string()]);
    head.extend(metric_keys.iter().cloned());
    out += &head.iter().map(|h| field(h)).collect::<Vec<_>>().join(",");
    out.push('\n');
    let text_of = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    for r in &rows {
        let mut cells: Vec<String> = ["machine", "workload", "policy"]
            .iter()
            .map(|k| text_of(&r[*k]))
            .collect();
        cells.extend(vary_keys.iter().map(|k| text_of(&r["vary"][k])));
        cells.push(text_of(&r["seed"]));
        cells.push(text_of(&r["finished"]));
        cells.extend(metric_keys.iter().map(|k| text_of(&r["metrics"][k])));
        out += &cells.iter().map(|c| field(c)).collect::<Vec<_>>().join(",");
        out.push('\n');
    }
    crate::output::write_atomic(csv, out.as_bytes())
}
