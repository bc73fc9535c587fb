//! `numabal twin`: a guest run of a workload under a real kernel's NUMA balancing and the
//! simulator's run of the same workload, side by side (issue 17; docs/vm-tests.md, "The
//! twin"). The guest's raw `/proc` text (scripts/vm/scenarios/twin.sh) is parsed into the
//! simulator's own `proc_samples` record, so both sides go through one comparison:
//! totals of the NUMA counters, the final process-to-node placement and the time it was
//! reached, each judged PASS or FAIL against the bounds the twin is held to.

use crate::Failure;
use crate::output;
use crate::svg;
use clap::Args;
use numabal_sim::result::{ProcProcess, ProcSample, ProcTask, RunResult, SchedNuma, VmstatNuma};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Totals may differ from the kernel's by this fraction of the kernel's.
pub const TOTAL_TOLERANCE: f64 = 0.25;
/// The time to converge may differ by this fraction of the kernel's.
pub const CONVERGE_TOLERANCE: f64 = 0.30;
/// A process's memory is on one node when that node holds this share of it.
const HOME_SHARE: f64 = 0.9;

#[derive(Args, Debug)]
pub struct TwinArgs {
    /// The guest scenario's output (scripts/vm/scenarios/twin.sh: the lines between
    /// `@@ twin raw begin` and `@@ twin raw end`).
    #[arg(long, value_name = "FILE")]
    guest: PathBuf,
    /// The simulator's result of the same workload (`numabal sim ... --set
    /// sim.proc_every_s=1 --json FILE`).
    #[arg(long, value_name = "FILE")]
    sim: PathBuf,
    /// Write both sides' samples and the figures as JSON here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Draw the counters and each process's memory over time, kernel and simulator on the
    /// same axes, as SVG here.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
}

/// One side of the twin.
#[derive(Debug, Serialize)]
pub struct Side {
    /// `uname -r` of the guest, or the simulator's machine, workload and policy.
    pub what: String,
    /// Samples, counters relative to the first (the guest's at the workload's start).
    pub samples: Vec<ProcSample>,
}

/// A process's placement: the node holding at least 90 % of its memory (none: spread)
/// and the nodes its workers (every task but the first, the main thread) are on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Placement {
    pub name: String,
    pub mem_node: Option<usize>,
    pub worker_nodes: Vec<usize>,
}

/// One figure, kernel against simulator.
#[derive(Debug, Serialize)]
pub struct Figure {
    pub name: String,
    pub kernel: String,
    pub sim: String,
    pub pass: bool,
    /// What the bound is, or why the figure failed.
    pub note: String,
}

#[derive(Serialize)]
struct Out<'a> {
    guest: &'a Side,
    sim: &'a Side,
    figures: &'a [Figure],
}

pub fn twin(a: &TwinArgs) -> Result<(), Failure> {
    let sim_r = load_sim(&a.sim)?;
    let nr_nodes = sim_r.node_used_mb.len();
    let text = std::fs::read_to_string(&a.guest).map_err(|e| {
        Failure::Input(format!(
            "--guest {}: cannot read it: {e}",
            a.guest.display()
        ))
    })?;
    let guest = parse_guest(&text, nr_nodes)
        .map_err(|e| Failure::Input(format!("--guest {}: {e}", a.guest.display())))?;
    if let Some(j) = &a.json {
        output::check_output_file("--json", j, false)?;
    }
    if let Some(s) = &a.svg {
        output::check_output_file("--svg", s, false)?;
    }
    let sc = &sim_r.scenario;
    let sim = Side {
        what: format!(
            "simulator: {} on {} under {}",
            sc.workload, sc.machine, sc.policy
        ),
        samples: sim_r.proc_samples.clone(),
    };
    let figures = compare(&guest, &sim);
    print(&guest, &sim, &figures);
    if let Some(j) = &a.json {
        output::write_json_atomic(
            j,
            &Out {
                guest: &guest,
                sim: &sim,
                figures: &figures,
            },
        )?;
    }
    if let Some(s) = &a.svg {
        // The workload and the kernel; the legend says which line is which side.
        let title = format!("{}: {} and its model", sc.workload, guest.what);
        let doc = svg::lines_svg(&title, &panels(&guest, &sim))
            .ok_or_else(|| Failure::Internal("the twin's figure could not be drawn".into()))?;
        output::write_atomic(s, doc.as_bytes())?;
    }
    let failed = figures.iter().filter(|f| !f.pass).count();
    if failed > 0 {
        return Err(Failure::Failed(format!(
            "twin: {failed} of {} figures failed",
            figures.len()
        )));
    }
    Ok(())
}

fn load_sim(p: &Path) -> Result<RunResult, Failure> {
    let text = std::fs::read_to_string(p)
        .map_err(|e| Failure::Input(format!("--sim {}: cannot read it: {e}", p.display())))?;
    let r: RunResult = serde_json::from_str(&text).map_err(|e| {
        Failure::Input(format!(
            "--sim {}: not the JSON result of `numabal sim`: {e}",
            p.display()
        ))
    })?;
    if r.proc_samples.is_empty() {
        return Err(Failure::Input(format!(
            "--sim {}: has no proc_samples (run the simulator with --set sim.proc_every_s=1)",
            p.display()
        )));
    }
    Ok(r)
}

/// The guest's raw samples as `proc_samples`, counters relative to the first sample.
pub fn parse_guest(text: &str, nr_nodes: usize) -> Result<Side, String> {
    let kernel = text
        .lines()
        .find_map(|l| l.strip_prefix("kernel "))
        .unwrap_or("?")
        .trim()
        .to_string();
    let raw: Vec<&str> = text
        .lines()
        .skip_while(|l| l.trim() != "@@ twin raw begin")
        .skip(1)
        .take_while(|l| l.trim() != "@@ twin raw end")
        .collect();
    if raw.is_empty() {
        return Err("no samples between `@@ twin raw begin` and `@@ twin raw end`".into());
    }
    let mut samples = Vec::new();
    let mut cur: Option<Building> = None;
    // "@cpus CPU:NODE ...": the guest's CPUs and their nodes (numactl --hardware).
    let mut cpu_node = BTreeMap::new();
    for (i, line) in raw.iter().enumerate() {
        let bad = |what: &str| format!("sample line {}: {what}: `{line}`", i + 1);
        let mut f = line.split_whitespace();
        match f.next() {
            Some("@sample") => {
                if let Some(b) = cur.take() {
                    samples.push(b.finish(nr_nodes));
                }
                let t = f
                    .next()
                    .and_then(|t| t.parse().ok())
                    .ok_or_else(|| bad("no time"))?;
                cur = Some(Building::new(t));
            }
            Some("@cpus") => {
                for p in f {
                    let (c, n) = p.split_once(':').ok_or_else(|| bad("not CPU:NODE"))?;
                    let (c, n) = c
                        .parse()
                        .ok()
                        .zip(n.parse().ok())
                        .ok_or_else(|| bad("not CPU:NODE"))?;
                    cpu_node.insert(c, n);
                }
            }
            Some(kind) => {
                let b = cur
                    .as_mut()
                    .ok_or_else(|| bad("before the first @sample"))?;
                let rest: Vec<&str> = f.collect();
                b.line(kind, &rest, line, nr_nodes, &cpu_node)
                    .map_err(|e| bad(&e))?;
            }
            None => {}
        }
    }
    if let Some(b) = cur.take() {
        samples.push(b.finish(nr_nodes));
    }
    // Counters since the workload started: the first sample is its baseline.
    let base = samples[0].vmstat;
    for s in &mut samples {
        s.vmstat = minus(s.vmstat, base);
    }
    Ok(Side {
        what: format!("Linux {kernel} (guest)"),
        samples,
    })
}

fn minus(a: VmstatNuma, b: VmstatNuma) -> VmstatNuma {
    VmstatNuma {
        numa_pte_updates: a.numa_pte_updates.saturating_sub(b.numa_pte_updates),
        numa_huge_pte_updates: a
            .numa_huge_pte_updates
            .saturating_sub(b.numa_huge_pte_updates),
        numa_hint_faults: a.numa_hint_faults.saturating_sub(b.numa_hint_faults),
        numa_hint_faults_local: a
            .numa_hint_faults_local
            .saturating_sub(b.numa_hint_faults_local),
        numa_pages_migrated: a.numa_pages_migrated.saturating_sub(b.numa_pages_migrated),
        pgmigrate_success: a.pgmigrate_success.saturating_sub(b.pgmigrate_success),
    }
}

/// A process as a sample's lines show it: name, tasks, KiB per node.
type Seen = (String, Vec<ProcTask>, BTreeMap<usize, f64>);

/// A sample as its lines come.
struct Building {
    t_s: f64,
    vmstat: VmstatNuma,
    /// pid -> (name, tasks, KiB per node).
    procs: BTreeMap<u32, Seen>,
    /// The task whose `/proc/PID/task/TID/sched` lines come now.
    sched_of: Option<(u32, u32)>,
}

impl Building {
    fn new(t_s: f64) -> Building {
        Building {
            t_s,
            vmstat: VmstatNuma::default(),
            procs: BTreeMap::new(),
            sched_of: None,
        }
    }

    fn line(
        &mut self,
        kind: &str,
        f: &[&str],
        line: &str,
        nr_nodes: usize,
        cpu_node: &BTreeMap<usize, usize>,
    ) -> Result<(), String> {
        let num = |i: usize| -> Result<u64, String> {
            f.get(i)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("field {} is not a number", i + 2))
        };
        match kind {
            "vmstat" => {
                let v = num(1)?;
                let m = &mut self.vmstat;
                match f.first().copied() {
                    Some("numa_pte_updates") => m.numa_pte_updates = v,
                    Some("numa_huge_pte_updates") => m.numa_huge_pte_updates = v,
                    Some("numa_hint_faults") => m.numa_hint_faults = v,
                    Some("numa_hint_faults_local") => m.numa_hint_faults_local = v,
                    Some("numa_pages_migrated") => m.numa_pages_migrated = v,
                    Some("pgmigrate_success") => m.pgmigrate_success = v,
                    _ => return Err("an unknown vmstat counter".into()),
                }
            }
            "@task" => {
                let (pid, tid, cpu) = (num(0)? as u32, num(1)? as u32, num(2)? as usize);
                let node = *cpu_node
                    .get(&cpu)
                    .ok_or(format!("CPU {cpu} is not in the @cpus line"))?;
                let name = f.get(3).map_or("", |c| c).replace('_', " ");
                let p = self
                    .procs
                    .entry(pid)
                    .or_insert_with(|| (name, Vec::new(), BTreeMap::new()));
                p.1.push(ProcTask {
                    tid,
                    cpu,
                    node,
                    sched: None,
                });
            }
            "@sched" => self.sched_of = Some((num(0)? as u32, num(1)? as u32)),
            "sched" => {
                let (pid, tid) = self.sched_of.ok_or("a sched line before its @sched")?;
                let task = self
                    .procs
                    .get_mut(&pid)
                    .and_then(|p| p.1.iter_mut().find(|t| t.tid == tid))
                    .ok_or("a sched line of a task without its @task line")?;
                let s = task.sched.get_or_insert_with(|| SchedNuma {
                    numa_preferred_nid: -1,
                    faults: vec![[0; 4]; nr_nodes],
                    ..SchedNuma::default()
                });
                sched_line(s, line.trim_start_matches("sched").trim())?;
            }
            "numa_maps" => {
                let (pid, node, kb) = (num(0)? as u32, num(1)? as usize, num(2)?);
                if node >= nr_nodes {
                    return Err(format!(
                        "node {node}, but the simulated machine has {nr_nodes}"
                    ));
                }
                if let Some(p) = self.procs.get_mut(&pid) {
                    *p.2.entry(node).or_insert(0.0) += kb as f64;
                }
            }
            _ => return Err("an unknown kind of line".into()),
        }
        Ok(())
    }

    fn finish(self, nr_nodes: usize) -> ProcSample {
        let processes = self
            .procs
            .into_iter()
            .map(|(pid, (name, mut tasks, kb))| {
                tasks.sort_by_key(|t| t.tid);
                let node_mb = (0..nr_nodes)
                    .map(|n| kb.get(&n).copied().unwrap_or(0.0) / 1024.0)
                    .collect();
                ProcProcess {
                    pid,
                    name,
                    node_mb,
                    tasks,
                }
            })
            .collect();
        ProcSample {
            t_s: self.t_s,
            vmstat: self.vmstat,
            processes,
            lru_gen: Vec::new(),
        }
    }
}

/// One NUMA line of `/proc/PID/sched` (kernel/sched/debug.c: `sched_show_numa`).
fn sched_line(s: &mut SchedNuma, l: &str) -> Result<(), String> {
    let kv = |l: &str| -> Option<(String, i64)> {
        let (k, v) = l.split_once(':')?;
        Some((k.trim().to_string(), v.trim().parse().ok()?))
    };
    if let Some(rest) = l.strip_prefix("numa_faults ") {
        let mut v = BTreeMap::new();
        for p in rest.split_whitespace() {
            let (k, n) = p.split_once('=').ok_or("numa_faults without key=value")?;
            v.insert(
                k,
                n.parse::<u64>()
                    .map_err(|_| format!("numa_faults {k} is not a number"))?,
            );
        }
        let node = *v.get("node").ok_or("numa_faults without node=")? as usize;
        let slot = s
            .faults
            .get_mut(node)
            .ok_or(format!("numa_faults of node {node}, outside the machine"))?;
        for (i, k) in [
            "task_private",
            "task_shared",
            "group_private",
            "group_shared",
        ]
        .iter()
        .enumerate()
        {
            slot[i] = v.get(k).copied().unwrap_or(0);
        }
    } else if let Some(rest) = l.strip_prefix("current_node=") {
        let gid = rest
            .split("numa_group_id=")
            .nth(1)
            .and_then(|g| g.trim().parse().ok());
        s.numa_group_id = gid.ok_or("current_node line without numa_group_id")?;
    } else if let Some((k, v)) = kv(l) {
        match k.as_str() {
            "mm->numa_scan_seq" => s.numa_scan_seq = v as u64,
            "numa_pages_migrated" => s.numa_pages_migrated = v as u64,
            "numa_preferred_nid" => s.numa_preferred_nid = v,
            "total_numa_faults" => s.total_numa_faults = v as u64,
            _ => {}
        }
    }
    Ok(())
}

/// Each process's placement in a sample.
pub fn placement(s: &ProcSample) -> Vec<Placement> {
    s.processes
        .iter()
        .map(|p| {
            let total: f64 = p.node_mb.iter().sum();
            let (home, mb) = p
                .node_mb
                .iter()
                .copied()
                .enumerate()
                .fold((0, f64::MIN), |b, (n, v)| if v > b.1 { (n, v) } else { b });
            let mut worker_nodes: Vec<usize> = p.tasks.iter().skip(1).map(|t| t.node).collect();
            worker_nodes.sort_unstable();
            worker_nodes.dedup();
            Placement {
                name: program_name(&p.name).to_string(),
                mem_node: (total > 0.0 && mb / total >= HOME_SHARE).then_some(home),
                worker_nodes,
            }
        })
        .collect()
}

/// A process's name without an instance number: perf bench numa names its processes
/// `process_0`, `process_1`, ... (read as `process 0`), where the simulator's instances
/// of one process all bear its name, `process`.
fn program_name(name: &str) -> &str {
    match name.rsplit_once(' ') {
        Some((base, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => name,
    }
}

/// The two placements are the same up to renaming nodes other than node 0 (where every
/// workload first-touches; the others are alike on the guest's flat SLIT) and exchanging
/// processes of one name.
pub fn same_placement(a: &[Placement], b: &[Placement], nr_nodes: usize) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut want = a.to_vec();
    want.sort();
    let rest: Vec<usize> = (1..nr_nodes).collect();
    permutations(&rest).into_iter().any(|perm| {
        let map = |n: usize| if n == 0 { 0 } else { perm[n - 1] };
        let mut got: Vec<Placement> = b
            .iter()
            .map(|p| {
                let mut w: Vec<usize> = p.worker_nodes.iter().map(|&n| map(n)).collect();
                w.sort_unstable();
                Placement {
                    name: p.name.clone(),
                    mem_node: p.mem_node.map(map),
                    worker_nodes: w,
                }
            })
            .collect();
        got.sort();
        got == want
    })
}

fn permutations(v: &[usize]) -> Vec<Vec<usize>> {
    if v.len() <= 1 {
        return vec![v.to_vec()];
    }
    let mut out = Vec::new();
    for i in 0..v.len() {
        let mut rest = v.to_vec();
        let x = rest.remove(i);
        for mut p in permutations(&rest) {
            p.insert(0, x);
            out.push(p);
        }
    }
    out
}

/// The samples in which the workload runs whole: every process of it there (as many as
/// any sample had), each with its workers (a task besides the main thread). The samples
/// of its start and of its exit, as processes come and go, are left out.
fn whole(samples: &[ProcSample]) -> Vec<&ProcSample> {
    let most = samples.iter().map(|s| s.processes.len()).max().unwrap_or(0);
    samples
        .iter()
        .filter(|s| {
            most > 0 && s.processes.len() == most && s.processes.iter().all(|p| p.tasks.len() > 1)
        })
        .collect()
}

/// The placement at the end: in the last sample of the workload running whole.
pub fn final_placement(samples: &[ProcSample]) -> Vec<Placement> {
    whole(samples)
        .last()
        .map(|s| placement(s))
        .unwrap_or_default()
}

/// When the placement last changed: the first sample (of the workload running whole) from
/// which every later one has the final placement.
pub fn converged_at(samples: &[ProcSample]) -> Option<f64> {
    let with = whole(samples);
    let last = placement(with.last()?);
    let mut at = with.last()?.t_s;
    for s in with.iter().rev() {
        if placement(s) != last {
            break;
        }
        at = s.t_s;
    }
    Some(at)
}

/// The figures: the totals within ±25 %, the final placement, the time to converge within
/// ±30 %.
pub fn compare(guest: &Side, sim: &Side) -> Vec<Figure> {
    let nr_nodes = guest
        .samples
        .iter()
        .chain(&sim.samples)
        .flat_map(|s| &s.processes)
        .map(|p| p.node_mb.len())
        .max()
        .unwrap_or(1);
    let end = |s: &Side| s.samples.last().map(|x| x.vmstat).unwrap_or_default();
    let (g, m) = (end(guest), end(sim));
    let mut out = Vec::new();
    for (name, k, s) in [
        ("numa_pte_updates", g.numa_pte_updates, m.numa_pte_updates),
        ("numa_hint_faults", g.numa_hint_faults, m.numa_hint_faults),
        (
            "numa_hint_faults_local",
            g.numa_hint_faults_local,
            m.numa_hint_faults_local,
        ),
        (
            "numa_pages_migrated",
            g.numa_pages_migrated,
            m.numa_pages_migrated,
        ),
    ] {
        let ratio = if k > 0 {
            s as f64 / k as f64
        } else if s == 0 {
            1.0
        } else {
            f64::INFINITY
        };
        out.push(Figure {
            name: name.into(),
            kernel: k.to_string(),
            sim: s.to_string(),
            pass: (ratio - 1.0).abs() <= TOTAL_TOLERANCE,
            note: format!("simulated/kernel {ratio:.3} (bound 0.75 to 1.25)"),
        });
    }
    let (pg, ps) = (
        final_placement(&guest.samples),
        final_placement(&sim.samples),
    );
    out.push(Figure {
        name: "final placement".into(),
        kernel: describe(&pg),
        sim: describe(&ps),
        pass: same_placement(&pg, &ps, nr_nodes),
        note: "the same, nodes 1.. renamed and instances exchanged".into(),
    });
    let (cg, cs) = (converged_at(&guest.samples), converged_at(&sim.samples));
    let (pass, note) = match (cg, cs) {
        (Some(k), Some(s)) => {
            let ratio = if k > 0.0 {
                s / k
            } else if s == 0.0 {
                1.0
            } else {
                f64::INFINITY
            };
            (
                (ratio - 1.0).abs() <= CONVERGE_TOLERANCE,
                format!("simulated/kernel {ratio:.3} (bound 0.70 to 1.30)"),
            )
        }
        _ => (false, "a side has no sample with processes".into()),
    };
    let secs = |c: Option<f64>| c.map_or("-".into(), |c| format!("{c:.1} s"));
    out.push(Figure {
        name: "converged after".into(),
        kernel: secs(cg),
        sim: secs(cs),
        pass,
        note,
    });
    out
}

fn describe(p: &[Placement]) -> String {
    p.iter()
        .map(|x| {
            let mem = x.mem_node.map_or("spread".into(), |n| format!("mem {n}"));
            let w: Vec<String> = x.worker_nodes.iter().map(|n| n.to_string()).collect();
            format!("{mem}, threads {}", w.join("+"))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn print(guest: &Side, sim: &Side, figures: &[Figure]) {
    outln!("twin: {} | {}", guest.what, sim.what);
    outln!("{:<24} {:>16} {:>16}", "t (s)", "kernel", "simulated");
    // The counters every 10 s of the guest's samples, with the simulator's at that time.
    for g in guest
        .samples
        .iter()
        .filter(|s| (s.t_s.round() as u64).is_multiple_of(10) && s.t_s > 0.5)
    {
        let m = sim
            .samples
            .iter()
            .min_by(|a, b| (a.t_s - g.t_s).abs().total_cmp(&(b.t_s - g.t_s).abs()));
        let mv = m.map(|x| x.vmstat).unwrap_or_default();
        outln!(
            "{:<24} {:>16} {:>16}",
            format!("{:.0} hint faults", g.t_s),
            g.vmstat.numa_hint_faults,
            mv.numa_hint_faults
        );
    }
    outln!("figures, each judged against its bound:");
    for f in figures {
        outln!(
            "{}: {:<24} kernel {} | simulated {} | {}",
            if f.pass { "PASS" } else { "FAIL" },
            f.name,
            f.kernel,
            f.sim,
            f.note
        );
    }
}

/// The figure: each counter over time, and each process's largest share of memory on one
/// node, kernel and simulator on the same axes.
fn panels(guest: &Side, sim: &Side) -> Vec<svg::Panel> {
    let counter = |name: &str, get: fn(&VmstatNuma) -> u64| svg::Panel {
        title: name.into(),
        x_desc: "seconds".into(),
        y_desc: "since the start".into(),
        lines: [("kernel", guest), ("simulated", sim)]
            .iter()
            .map(|(label, side)| svg::Line {
                label: (*label).into(),
                points: side
                    .samples
                    .iter()
                    .map(|s| (s.t_s, Some(get(&s.vmstat) as f64)))
                    .collect(),
            })
            .collect(),
        ..svg::Panel::default()
    };
    let share = svg::Panel {
        title: "each process's memory on its fullest node".into(),
        x_desc: "seconds".into(),
        y_desc: "share".into(),
        y_min_top: 1.0,
        lines: [("kernel", guest), ("simulated", sim)]
            .iter()
            .flat_map(|(label, side)| {
                let n = side
                    .samples
                    .iter()
                    .map(|s| s.processes.len())
                    .max()
                    .unwrap_or(0);
                (0..n).map(move |i| svg::Line {
                    label: format!("{label} process {}", i + 1),
                    points: side
                        .samples
                        .iter()
                        .map(|s| {
                            let share = s.processes.get(i).and_then(|p| {
                                let t: f64 = p.node_mb.iter().sum();
                                (t > 0.0).then(|| p.node_mb.iter().copied().fold(0.0, f64::max) / t)
                            });
                            (s.t_s, share)
                        })
                        .collect(),
                })
            })
            .collect(),
        ..svg::Panel::default()
    };
    vec![
        counter("numa_pte_updates", |v| v.numa_pte_updates),
        counter("numa_hint_faults", |v| v.numa_hint_faults),
        counter("numa_hint_faults_local", |v| v.numa_hint_faults_local),
        counter("numa_pages_migrated", |v| v.numa_pages_migrated),
        share,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two samples of one process of two tasks, as scripts/vm/scenarios/twin.sh prints them.
    const RAW: &str = "== twin: numa01-like\nkernel 6.1.0-56-amd64\n@@ twin raw begin\n\
@cpus 0:0 1:0 2:1 3:1\n@sample 0.0\nvmstat numa_pte_updates 100\nvmstat numa_hint_faults 10\n\
@sample 1.0\nvmstat numa_pte_updates 612\nvmstat numa_hint_faults 11\n\
vmstat numa_hint_faults_local 1\nvmstat numa_pages_migrated 512\n\
@task 7 7 0 numa01-like\n@task 7 9 3 numa01-like\n@sched 7 9\n\
sched mm->numa_scan_seq                              :                    2\n\
sched numa_pages_migrated                          :                  512\n\
sched numa_preferred_nid                           :                    1\n\
sched total_numa_faults                            :                   40\n\
sched current_node=1, numa_group_id=0\n\
sched numa_faults node=0 task_private=0 task_shared=8 group_private=0 group_shared=0\n\
sched numa_faults node=1 task_private=32 task_shared=0 group_private=0 group_shared=0\n\
numa_maps 7 1 122880\nnuma_maps 7 0 8192\n@@ twin raw end\n";

    #[test]
    fn the_guests_raw_text_becomes_proc_samples() {
        let side = parse_guest(RAW, 2).unwrap();
        assert_eq!(side.what, "Linux 6.1.0-56-amd64 (guest)");
        let last = side.samples.last().unwrap();
        // Counters since the workload started: the first sample is the baseline.
        assert_eq!(last.vmstat.numa_pte_updates, 512);
        assert_eq!(last.vmstat.numa_hint_faults, 1);
        let p = &last.processes[0];
        assert_eq!((p.pid, p.name.as_str()), (7, "numa01-like"));
        assert_eq!(p.node_mb, vec![8.0, 120.0]);
        assert_eq!(
            p.tasks.iter().map(|t| (t.tid, t.node)).collect::<Vec<_>>(),
            [(7, 0), (9, 1)]
        );
        let s = p.tasks[1].sched.as_ref().unwrap();
        assert_eq!(
            (s.numa_scan_seq, s.numa_preferred_nid, s.total_numa_faults),
            (2, 1, 40)
        );
        assert_eq!(s.faults, vec![[0, 8, 0, 0], [32, 0, 0, 0]]);
        assert!(p.tasks[0].sched.is_none());
        let pl = placement(last);
        assert_eq!(pl[0].mem_node, Some(1));
        assert_eq!(pl[0].worker_nodes, [1]);
    }

    #[test]
    fn bad_raw_text_is_refused_with_its_line() {
        assert!(
            parse_guest("no samples here", 2)
                .unwrap_err()
                .contains("no samples")
        );
        let e = parse_guest(
            "@@ twin raw begin\n@sample 0\n@task 1 1 5 x\n@@ twin raw end\n",
            2,
        )
        .unwrap_err();
        assert!(e.contains("line 2") && e.contains("CPU 5"), "{e}");
    }

    #[test]
    fn placements_match_up_to_renamed_nodes_and_exchanged_instances() {
        let p = |mem, w: &[usize]| Placement {
            name: "p".into(),
            mem_node: mem,
            worker_nodes: w.to_vec(),
        };
        let a = [p(Some(2), &[2]), p(None, &[0, 1])];
        // Node 2 -> 3, node 1 -> 2, the processes listed the other way round.
        assert!(same_placement(&a, &[p(None, &[0, 2]), p(Some(3), &[3])], 4));
        // Node 0, where memory is first touched, keeps its name.
        assert!(!same_placement(
            &a,
            &[p(Some(0), &[0]), p(None, &[1, 2])],
            4
        ));
        assert!(!same_placement(&a, &[p(Some(2), &[2])], 4));
    }

    #[test]
    fn instances_numbered_by_the_program_are_one_process_name() {
        // perf's process_0 and process_1 in the guest, the simulator's two `process`.
        let sample = |names: [&str; 2]| ProcSample {
            t_s: 0.0,
            vmstat: VmstatNuma::default(),
            processes: names
                .iter()
                .enumerate()
                .map(|(i, n)| ProcProcess {
                    pid: i as u32 + 1,
                    name: n.to_string(),
                    node_mb: if i == 0 {
                        vec![10.0, 0.0]
                    } else {
                        vec![0.0, 10.0]
                    },
                    tasks: Vec::new(),
                })
                .collect(),
            lru_gen: Vec::new(),
        };
        let guest = placement(&sample(["process 0", "process 1"]));
        let sim = placement(&sample(["process", "process"]));
        assert!(same_placement(&guest, &sim, 2));
        assert_eq!(program_name("numa01-like"), "numa01-like");
        assert_eq!(program_name("process 12"), "process");
        assert_eq!(program_name("a b"), "a b");
    }
}
