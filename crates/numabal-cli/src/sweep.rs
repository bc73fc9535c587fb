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

use crate::entry::Entry;
use crate::{Failure, ScenarioArgs, build_checked};
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use numabal_model::InputError;
use numabal_model::Scenario;
use numabal_model::scenario::Kind;
use numabal_model::suite::duplicate;
use rayon::prelude::*;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Args, Debug, Default)]
pub struct SweepArgs {
    /// The grid as a TOML file (machines, workloads, policies, seeds, first_seed, set,
    /// [vary]); flags add to it.
    #[arg(long, value_name = "FILE")]
    pub(crate) grid: Option<PathBuf>,
    /// Machines (repeatable).
    #[arg(long, short = 'm')]
    machine: Vec<String>,
    /// Workloads (repeatable).
    #[arg(long, short = 'w')]
    workload: Vec<String>,
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "POLICY,...",
        help = crate::policy_help("Policies, comma-separated, each once")
    )]
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
    pub(crate) out: PathBuf,
    /// Also write every result in the file as CSV (one row per run, sorted by run).
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Worker threads (default: every core).
    #[arg(long)]
    pub(crate) jobs: Option<usize>,
    /// Stop after this many new runs (the rest is left for a resumed sweep).
    #[arg(long)]
    pub(crate) max_runs: Option<usize>,
    /// No progress on stderr.
    #[arg(long)]
    pub(crate) quiet: bool,
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
    /// Indexes of its machine, workload and policy in [`Grid::entries`].
    from: [usize; 3],
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

/// The grid, and where each of its parts was written, to name it in errors.
struct Grid {
    points: Vec<Point>,
    /// Fixed overrides (`set`, `--set`).
    sets: Vec<String>,
    /// Machines, workloads and policies: each with the entry it was written as.
    entries: [Vec<(String, Entry)>; 3],
    /// Every override a run may get (`key=value`) and where it was written:
    /// `grid.toml: vary."policy.scan_delay_ms"[1]`, `--vary policy.scan_delay_ms=100,x`.
    origin: BTreeMap<String, String>,
}

fn input(msg: impl Into<String>) -> Failure {
    Failure::Input(msg.into())
}

/// A list from the file and the flags, each entry with where it was written; a name given
/// twice is refused.
fn entries(
    kind: Kind,
    file: (&[String], Option<&str>, &str),
    flags: (&[String], &str),
) -> Result<Vec<(String, Entry)>, Failure> {
    let (in_file, path, list) = file;
    let (in_flags, flag) = flags;
    let all: Vec<(String, Entry)> = in_file
        .iter()
        .enumerate()
        .map(|(i, n)| (n.clone(), Entry::new(kind, n, path, list, i)))
        .chain(
            in_flags
                .iter()
                .enumerate()
                .map(|(i, n)| (n.clone(), Entry::new(kind, n, None, flag, i))),
        )
        .collect();
    let names: Vec<String> = all.iter().map(|(n, _)| n.clone()).collect();
    if let Some((i, j)) = duplicate(&names) {
        let (first, second) = (&all[i].1.at, &all[j].1.at);
        let also = match first == second {
            true => String::new(),
            false => format!(": here and as {first}"),
        };
        return Err(input(format!(
            "{second}: `{}` is given twice{also} (name each once)",
            names[j]
        )));
    }
    if all.is_empty() {
        let file = path.map_or(String::new(), |p| format!("{p}: {list} or "));
        return Err(input(format!(
            "{flag}: none given (allowed: names or TOML files, in {file}{flag})"
        )));
    }
    Ok(all)
}

/// `[vary]`/`[each]` of the file and `--vary`/`--each`: each field's values, and where
/// each `field=value` was written (into `origin`).
fn value_lists(
    file: &BTreeMap<String, Vec<toml::Value>>,
    path: Option<&str>,
    flags: &[String],
    what: &str,
    origin: &mut BTreeMap<String, String>,
) -> Result<BTreeMap<String, Vec<String>>, Failure> {
    let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (k, vs) in file {
        let at = format!("{}: {what}.{k:?}", path.unwrap_or_default());
        if vs.is_empty() {
            return Err(input(format!(
                "{at}: an empty list (allowed: one or more values)"
            )));
        }
        let vs: Vec<String> = vs.iter().map(|v| v.to_string()).collect();
        for (i, v) in vs.iter().enumerate() {
            origin.insert(format!("{k}={v}"), format!("{at}[{i}]"));
        }
        m.insert(k.clone(), vs);
    }
    for raw in flags {
        let at = format!("--{what} {raw}");
        let Some((k, vs)) = raw.split_once('=') else {
            return Err(input(format!("{at}: expected KEY=V1,V2,...")));
        };
        let k = k.trim().to_string();
        let vs: Vec<String> = vs.split(',').map(|s| s.trim().to_string()).collect();
        if k.is_empty() || vs.iter().any(|v| v.is_empty()) {
            return Err(input(format!(
                "{at}: an empty key or value (allowed: KEY=V1,V2,... with one or more values)"
            )));
        }
        for v in &vs {
            origin.insert(format!("{k}={v}"), at.clone());
        }
        m.insert(k, vs);
    }
    Ok(m)
}

/// Every combination of the `vary` values (in key order), each crossed with each value of
/// each `each` field alone.
fn combinations(
    vary: &BTreeMap<String, Vec<String>>,
    each: &BTreeMap<String, Vec<String>>,
) -> Vec<Vec<(String, String)>> {
    let mut combos: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for (k, vs) in vary {
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
    if each.is_empty() {
        return combos;
    }
    let singles: Vec<(String, String)> = each
        .iter()
        .flat_map(|(k, vs)| vs.iter().map(move |v| (k.clone(), v.clone())))
        .collect();
    combos
        .iter()
        .flat_map(|c| {
            singles.iter().map(move |kv| {
                let mut c = c.clone();
                c.push(kv.clone());
                c
            })
        })
        .collect()
}

/// A grid given as a table instead of a file (the Python package's dict or TOML text):
/// its errors name `label` where they would name the file.
pub(crate) struct GivenGrid {
    pub(crate) label: String,
    pub(crate) table: toml::Table,
}

/// The grid from the file (or `given`) and the flags.
fn grid(a: &SweepArgs, given: Option<GivenGrid>) -> Result<Grid, Failure> {
    let (g, label) = match (given, &a.grid) {
        (Some(g), _) => (
            numabal_model::scenario::from_table(&g.label, g.table)?,
            Some(g.label),
        ),
        (None, Some(p)) => (
            crate::fsresolver::toml_file(p)?,
            Some(p.display().to_string()),
        ),
        (None, None) => (GridFile::default(), None),
    };
    let file = label.as_deref();
    let entries = [
        entries(
            Kind::Machine,
            (&g.machines, file, "machines"),
            (&a.machine, "--machine"),
        )?,
        entries(
            Kind::Workload,
            (&g.workloads, file, "workloads"),
            (&a.workload, "--workload"),
        )?,
        entries(
            Kind::Policy,
            (&g.policies, file, "policies"),
            (&a.policies, "--policies"),
        )?,
    ];
    let src = file.map_or("--".to_string(), |p| format!("{p}: "));
    let seeds = a.seeds.or(g.seeds).unwrap_or(1);
    if seeds == 0 || seeds > 10_000 {
        return Err(input(format!("{src}seeds: is {seeds} (allowed: 1-10000)")));
    }
    let first = a.first_seed.or(g.first_seed).unwrap_or(1);
    let mut origin = BTreeMap::new();
    for (i, s) in g.set.iter().enumerate() {
        origin.insert(
            s.clone(),
            format!("{}: set[{i}] ({s})", file.unwrap_or_default()),
        );
    }
    let vary = value_lists(&g.vary, file, &a.vary, "vary", &mut origin)?;
    let each = value_lists(&g.each, file, &a.each, "each", &mut origin)?;
    let combos = combinations(&vary, &each);
    let mut points = Vec::new();
    for (mi, (m, _)) in entries[0].iter().enumerate() {
        for (wi, (w, _)) in entries[1].iter().enumerate() {
            for (pi, (p, _)) in entries[2].iter().enumerate() {
                for c in &combos {
                    for s in first..first + seeds {
                        points.push(Point {
                            machine: m.clone(),
                            workload: w.clone(),
                            policy: p.clone(),
                            vary: c.clone(),
                            seed: s,
                            from: [mi, wi, pi],
                        });
                    }
                }
            }
        }
    }
    let sets: Vec<String> = g.set.iter().chain(&a.sets).cloned().collect();
    Ok(Grid {
        points,
        sets,
        entries,
        origin,
    })
}

/// The scenario of a grid point; an error names the entry of the grid that caused it.
fn scenario(p: &Point, g: &Grid) -> Result<Scenario, Failure> {
    let mut all = g.sets.clone();
    all.extend(p.vary.iter().map(|(k, v)| format!("{k}={v}")));
    let args = ScenarioArgs {
        machine: Some(p.machine.clone()),
        workload: Some(p.workload.clone()),
        scenario: None,
        sets: all,
    };
    build_checked(&args, Some(p.policy.clone()), Some(p.seed)).map_err(|e| blame(e, p, g).into())
}

/// Name the grid's entry behind `e`: a `set`/`vary`/`each` value, or the machine, workload
/// or policy.
fn blame(mut e: InputError, p: &Point, g: &Grid) -> InputError {
    let entry = |i: usize| &g.entries[i][p.from[i]].1;
    if let Some(raw) = e.source.strip_prefix("--set ") {
        // Of several workloads, a workload's key may fail for one only: say which.
        let of_workload = raw.starts_with("workload.") && g.entries[1].len() > 1;
        if let Some(at) = g.origin.get(raw) {
            // The key is in the origin already; the field adds nothing.
            let field = e.field.replace('[', ".").replace(']', "");
            if raw.split_once('=').is_some_and(|(k, _)| k.trim() == field) {
                e.field.clear();
            }
            e.source = at.clone();
        }
        return match of_workload {
            true => entry(1).blame(e),
            false => e,
        };
    }
    crate::entry::blame_first(&[entry(0), entry(1), entry(2)], e)
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
pub(crate) fn resume(path: &Path) -> Result<BTreeSet<String>, Failure> {
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

/// A grid with every run's scenario built (and so checked): what a sweep runs, whoever
/// runs it (this command, the Python package's executors).
pub(crate) struct Plan {
    grid: Grid,
    built: BTreeMap<String, Scenario>,
}

impl Plan {
    /// The grid of `a` (its file, or `given`), every scenario built before any run: bad
    /// input fails first. A run sets its seed on its point's scenario, as `numabal
    /// compare` does.
    pub(crate) fn new(a: &SweepArgs, given: Option<GivenGrid>) -> Result<Plan, Failure> {
        let grid = grid(a, given)?;
        let mut built: BTreeMap<String, Scenario> = BTreeMap::new();
        for p in &grid.points {
            if let std::collections::btree_map::Entry::Vacant(e) = built.entry(p.base_key()) {
                e.insert(scenario(p, &grid)?);
            }
        }
        Ok(Plan { grid, built })
    }

    /// Every run's key, in the grid's order.
    pub(crate) fn keys(&self) -> Vec<String> {
        self.grid.points.iter().map(Point::key).collect()
    }

    /// Run `i` of the grid: its line of the results file (no line break).
    pub(crate) fn run_line(&self, i: usize) -> Result<String, Failure> {
        let p = self.grid.points.get(i).ok_or_else(|| {
            input(format!(
                "run {i}: not in the grid (allowed: 0 to {})",
                self.grid.points.len().saturating_sub(1)
            ))
        })?;
        self.line(p)
    }

    fn line(&self, p: &Point) -> Result<String, Failure> {
        let mut sc = self.built[&p.base_key()].clone();
        sc.sim.seed = p.seed;
        let r = numabal_sim::run(&sc)?;
        Ok(json!({
            "key": p.key(), "machine": p.machine, "workload": p.workload, "policy": p.policy,
            "vary": p.vary.iter().cloned().collect::<BTreeMap<String, String>>(),
            "seed": p.seed, "finished": r.finished, "metrics": r.metrics,
            "stalls": r.stalls, "ping_pong": r.ping_pong, "tunables": r.scenario.tunables,
            "numabal_version": env!("CARGO_PKG_VERSION"),
        })
        .to_string())
    }
}

pub fn sweep(a: &SweepArgs) -> Result<(), Failure> {
    sweep_grid(a, None)
}

/// `numabal sweep` of `a`'s grid, or of `given` (the Python package's local executor).
pub(crate) fn sweep_grid(a: &SweepArgs, given: Option<GivenGrid>) -> Result<(), Failure> {
    if a.jobs == Some(0) {
        return Err(input("--jobs: must be at least 1"));
    }
    let plan = Plan::new(a, given)?;
    let points = &plan.grid.points;
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
        let line = plan.line(p)?;
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
