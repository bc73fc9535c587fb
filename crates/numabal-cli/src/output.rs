//! Human-readable output (numastat-like tables, comparison tables) and atomic JSON files.

use comfy_table::presets::UTF8_BORDERS_ONLY;
use comfy_table::{CellAlignment, Table};
use numabal_model::{Scenario, presets};
use numabal_sim::suite::{GEOMEAN_METRICS, Geomean};
use numabal_sim::{CompareResult, RunResult, SuiteResult};
use std::io::Write;
use std::path::Path;

use crate::Failure;

/// `numabal list`.
pub fn print_list() {
    let desc = |text: &str| -> String {
        toml::from_str::<toml::Table>(text)
            .ok()
            .and_then(|t| {
                t.get("description")
                    .and_then(|d| d.as_str().map(str::to_string))
            })
            .unwrap_or_default()
    };
    outln!("Machines (--machine NAME, or a TOML file):");
    for (n, t) in presets::MACHINES {
        outln!("  {n:<22} {}", desc(t));
    }
    outln!();
    outln!("Workloads (--workload NAME, or a TOML file):");
    for (n, t) in presets::WORKLOADS {
        outln!("  {n:<22} {}", desc(t));
    }
    outln!();
    outln!("Policies (--policy NAME):");
    for p in numabal_sim::policies::all() {
        outln!("  {:<22} {}", p.name, p.summary);
    }
    outln!();
    outln!("Suites (numabal suite NAME -m MACHINE, or a TOML file):");
    for (n, t) in presets::SUITES {
        outln!("  {n:<22} {}", desc(t));
    }
}

/// Write JSON to `path` through a temporary file in the same directory, so a failed run
/// never leaves a partial file.
pub fn write_json_atomic<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), Failure> {
    let label = path.display().to_string();
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| Failure::Internal(format!("{label}: {e}")))?;
    let mut text = inline_scalar_arrays(&text);
    text.push('\n');
    write_atomic(path, text.as_bytes())
}

/// serde_json's pretty layout with every array of plain numbers (or nulls, booleans) on
/// one line: a run's time series stays a few lines per figure instead of one per value.
pub fn inline_scalar_arrays(pretty: &str) -> String {
    let lines: Vec<&str> = pretty.lines().collect();
    let scalar = |l: &str| {
        let v = l.trim().trim_end_matches(',');
        v == "null"
            || v == "true"
            || v == "false"
            || (!v.is_empty()
                && v.bytes()
                    .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b)))
    };
    let mut out = String::with_capacity(pretty.len());
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        if l.ends_with('[') {
            // The values up to the closing bracket, if all scalars.
            let mut j = i + 1;
            while j < lines.len() && scalar(lines[j]) {
                j += 1;
            }
            if j > i + 1 && j < lines.len() && lines[j].trim_start().starts_with(']') {
                out.push_str(l);
                for (k, v) in lines[i + 1..j].iter().enumerate() {
                    if k > 0 {
                        out.push(' ');
                    }
                    out.push_str(v.trim());
                }
                out.push_str(lines[j].trim_start());
                out.push('\n');
                i = j + 1;
                continue;
            }
        }
        out.push_str(l);
        out.push('\n');
        i += 1;
    }
    out.pop();
    out
}

/// Write `bytes` to `path` whole or not at all: a temporary file beside it, synced, then
/// renamed over it.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    let label = path.display().to_string();
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "out.json".into());
    let tmp = dir.join(format!(".{name}.tmp{}", std::process::id()));
    let res = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    res.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Failure::Input(format!("{label}: cannot write the result: {e}"))
    })
}

/// numastat -p's multi-process layout: label 16 wide, then " %15.2f" per column.
pub fn numastat_table(processes: &[(String, Vec<f64>)], nr_nodes: usize) -> String {
    node_table(
        "Per-node process memory usage (in MBs)",
        processes,
        nr_nodes,
        2,
    )
}

/// numastat -p's layout for any per-node figure: a title, one row per process, a Total
/// column and row; `decimals` after the point.
pub fn node_table(
    title: &str,
    processes: &[(String, Vec<f64>)],
    nr_nodes: usize,
    decimals: usize,
) -> String {
    let mut s = format!("{title}\n");
    s.push_str(&format!("{:<16} ", "PID"));
    for n in 0..nr_nodes {
        s.push_str(&format!(" {:>15}", format!("Node {n}")));
    }
    s.push_str(&format!(" {:>15}\n", "Total"));
    let rule = format!(
        "{} {}\n",
        "-".repeat(16),
        (0..=nr_nodes)
            .map(|_| format!(" {}", "-".repeat(15)))
            .collect::<String>()
    );
    s.push_str(&rule);
    let mut totals = vec![0.0; nr_nodes];
    for (label, mb) in processes {
        s.push_str(&format!("{:<16} ", label));
        for (n, v) in mb.iter().enumerate() {
            s.push_str(&format!(" {v:>15.decimals$}"));
            totals[n] += v;
        }
        s.push_str(&format!(" {:>15.decimals$}\n", mb.iter().sum::<f64>()));
    }
    s.push_str(&rule);
    s.push_str(&format!("{:<16} ", "Total"));
    for v in &totals {
        s.push_str(&format!(" {v:>15.decimals$}"));
    }
    s.push_str(&format!(" {:>15.decimals$}\n", totals.iter().sum::<f64>()));
    s
}

/// `numabal sim`'s summary.
pub fn print_run(sc: &Scenario, r: &RunResult) {
    let m = &r.metrics;
    outln!(
        "{} on {} under {}, seed {}{}",
        r.scenario.workload,
        r.scenario.machine,
        r.scenario.policy,
        r.scenario.seed,
        if r.finished {
            ""
        } else {
            "  (stopped at sim.max_time_s: not finished)"
        }
    );
    outln!();
    outln!("  runtime                {:.2} s", m.runtime_s);
    if m.work_units > 0.0 {
        outln!(
            "  throughput             {:.2} work units/s ({:.0} units)",
            m.throughput_per_s,
            m.work_units
        );
    }
    outln!("  local access ratio     {:.3}", m.local_access_ratio);
    outln!(
        "  memory accessed        {:.1} GiB ({:.2} GiB/s)",
        m.accessed_gib,
        m.access_gib_per_s
    );
    outln!(
        "  CPU time               {:.1} s user, {:.2} s kernel",
        m.user_cpu_s,
        m.sys_cpu_s
    );
    outln!(
        "  page faults            {} (THP {})",
        m.pgfault,
        m.thp_fault_alloc
    );
    let causes: Vec<String> = r
        .thread_migrations_by_cause
        .iter()
        .filter(|(_, v)| **v > 0)
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    outln!(
        "  thread migrations      {} inter-node{}",
        m.thread_migrations_internode,
        if causes.is_empty() {
            String::new()
        } else {
            format!(" ({})", causes.join(", "))
        }
    );
    outln!(
        "  NUMA balancing         numa_pte_updates {}, numa_hint_faults {} (local {}), numa_pages_migrated {}",
        m.numa_pte_updates,
        m.numa_hint_faults,
        m.numa_hint_faults_local,
        m.numa_pages_migrated
    );
    outln!(
        "                         numa_task_migrated {}, numa_task_swapped {}, scan {:.2} CPU s ({:.2} s in workers)",
        m.numa_task_migrated,
        m.numa_task_swapped,
        m.scan_cpu_s,
        m.scan_cpu_hidden_s
    );
    outln!(
        "  stalls                 {} over 1 ms, longest {:.3} ms",
        m.stall_events_over_1ms,
        m.stall_max_ms
    );
    outln!(
        "  page migrations        pgmigrate_success {}, pgmigrate_fail {}",
        m.pgmigrate_success,
        m.pgmigrate_fail
    );
    // A daemon's decisions (numad's log lines), the first few; all are in the JSON.
    const SHOWN: usize = 12;
    for (i, l) in r.policy_log.iter().take(SHOWN).enumerate() {
        let head = if i == 0 { "  decisions" } else { "" };
        outln!("{head:<25}{:>8.1} s  {}", l.t_s, l.message);
    }
    if r.policy_log.len() > SHOWN {
        outln!(
            "{:<25}... {} more in the JSON's policy_log",
            "",
            r.policy_log.len() - SHOWN
        );
    }
    if let Some(nb) = &r.numa_balancing
        && nb.stats.async_scans > 0
    {
        let s = &nb.stats;
        outln!(
            "  scan_async             {} worker scans, {} on an idle CPU, {} outside the task's cpuset",
            s.async_scans,
            s.async_scans_idle_cpu,
            s.async_scans_outside_cpuset
        );
    }
    if let Some(aa) = r
        .numa_balancing
        .as_ref()
        .and_then(|n| n.autonuma_2012.as_ref())
    {
        let st = &aa.stats;
        outln!(
            "  AutoNUMA (2012)        knuma_scand full_scans {}, knuma_migrated pages {} (cancelled {}), last_nid rejects {}, exchanges {}",
            st.full_scans,
            st.pages_migrated.iter().sum::<u64>(),
            st.pages_cancelled,
            st.last_nid_rejected,
            st.exchanges
        );
    }
    outln!();
    let rows: Vec<(String, Vec<f64>)> = r
        .processes
        .iter()
        .map(|p| (format!("{} ({})", p.pid, p.name), p.node_mb.clone()))
        .collect();
    out!("{}", numastat_table(&rows, sc.machine.nr_nodes()));
    outln!("(memory of each process when it exited)");
}

/// A table as the terminal and the HTML report both show it: its cells formatted once, by
/// the one function that computes them, then drawn as text ([`comfy`]) or HTML.
#[derive(Debug, Clone, Default)]
pub struct Cells {
    /// The line above the table.
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// The line under the table (what the numbers mean), if any.
    pub note: String,
}

/// The table for the terminal: first column left, the others right.
pub fn comfy(c: &Cells) -> Table {
    let mut t = Table::new();
    t.load_style(UTF8_BORDERS_ONLY);
    t.set_header(c.header.clone());
    for r in &c.rows {
        t.add_row(r.clone());
    }
    for i in 1..c.header.len() {
        if let Some(col) = t.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

/// A statistic of the spread of runtimes (CV, NMMD, quartiles): undefined (`-`) with one
/// seed (or run).
pub fn spread(seeds: usize, text: impl FnOnce() -> String) -> String {
    if seeds < 2 { "-".into() } else { text() }
}

/// `numabal compare`'s table.
pub fn compare_cells(r: &CompareResult) -> Cells {
    let n = r.seeds.len();
    let base = r
        .policy_order
        .first()
        .and_then(|p| r.policies.get(p))
        .map(|p| p.runtime_s.mean);
    let rows = r
        .policy_order
        .iter()
        .map(|name| {
            let p = &r.policies[name];
            let g = |k: &str| p.metrics.get(k).copied().unwrap_or(0.0);
            let s = &p.runtime_s;
            let rel = base
                .filter(|b| *b > 0.0)
                .map(|b| format!(" ({:.2}x)", s.mean / b))
                .unwrap_or_default();
            vec![
                name.clone(),
                format!("{:.2}{rel}", s.mean),
                spread(n, || format!("{:.4}", s.cv)),
                format!("{:.2}", s.min),
                format!("{:.2}", s.max),
                spread(n, || format!("{:.4}", s.nmmd)),
                format!("{:.3}", g("local_access_ratio")),
                format!("{:.0}", g("numa_pages_migrated")),
                format!("{:.1}", g("thread_migrations_internode")),
            ]
        })
        .collect();
    Cells {
        title: format!("{} on {}, {n} seed(s) per policy", r.workload, r.machine),
        header: [
            "policy",
            "runtime mean (s)",
            "CV",
            "min",
            "max",
            "NMMD",
            "local ratio",
            "pages migrated",
            "thread migr.",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: r
            .policy_order
            .first()
            .map(|first| {
                format!(
                    "(ratios are against `{first}`; CV = sample standard deviation / mean; NMMD = (max - min) / mean{})",
                    if n < 2 { "; -: undefined with one seed" } else { "" }
                )
            })
            .unwrap_or_default(),
    }
}

/// `numabal compare`'s report.
pub fn print_compare(r: &CompareResult) {
    let c = compare_cells(r);
    outln!("{}", c.title);
    outln!("{}", comfy(&c));
    if !c.note.is_empty() {
        outln!("{}", c.note);
    }
}

/// A per-workload value or a geometric mean of the suite figure `key`, as printed; `-`
/// where it is undefined (not a number).
fn fmt_figure(key: &str, v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    match key {
        "runtime_s" => format!("{v:.2}"),
        "runtime_cv" | "runtime_nmmd" => format!("{v:.4}"),
        "local_access_ratio" => format!("{v:.3}"),
        "numa_hint_faults_per_s" => format!("{v:.1}"),
        "numa_pages_migrated" => format!("{v:.0}"),
        _ => format!("{v:.3}"),
    }
}

/// A ratio cell: `0.523x`, or `-` where it is undefined (the baseline is 0).
fn fmt_ratio(r: Option<f64>) -> String {
    r.map(|r| format!("{r:.3}x")).unwrap_or_else(|| "-".into())
}

/// The summary tables of `numabal suite`: geometric means per policy and their ratios to
/// the first policy. The means of CV and NMMD are undefined with one seed.
pub fn suite_summary_cells(r: &SuiteResult) -> [Cells; 2] {
    let mut header = vec!["policy".to_string()];
    header.extend(GEOMEAN_METRICS.iter().map(|m| m.label.to_string()));
    let n = r.workload_order.len();
    let one_seed = r.seeds.len() < 2;
    let (mut means, mut ratios) = (Vec::new(), Vec::new());
    for p in &r.policy_order {
        let g = |k: &str| r.geomean.get(p).and_then(|m| m.get(k));
        let mut row = vec![p.clone()];
        let mut rrow = vec![p.clone()];
        for m in GEOMEAN_METRICS {
            let spread = matches!(m.key, "runtime_cv" | "runtime_nmmd");
            match g(m.key).filter(|_| !(spread && one_seed)) {
                Some(Geomean {
                    value,
                    ratio,
                    zeros,
                }) => {
                    let zeros = if *zeros > 0 {
                        format!(" [{zeros}/{n} are 0]")
                    } else {
                        String::new()
                    };
                    row.push(format!("{}{zeros}", fmt_figure(m.key, *value)));
                    rrow.push(fmt_ratio(*ratio));
                }
                None => {
                    row.push("-".into());
                    rrow.push("-".into());
                }
            }
        }
        means.push(row);
        ratios.push(rrow);
    }
    let first = r.policy_order.first().cloned().unwrap_or_default();
    [
        Cells {
            title: format!("Geometric means over the {n} workloads"),
            header: header.clone(),
            rows: means,
            note: String::new(),
        },
        Cells {
            title: format!("Ratio to `{first}`"),
            header,
            rows: ratios,
            note: format!(
                "(geometric mean: exactly 0 when any workload's value is 0, [k/n are 0] counts them; \
                 a ratio to a mean of 0 is -; CV = sample standard deviation / mean; \
                 NMMD = (max - min) / mean{})",
                if one_seed {
                    "; CV and NMMD are undefined with one seed: -"
                } else {
                    ""
                }
            ),
        },
    ]
}

/// The summary of `numabal suite` as the terminal shows it.
pub fn suite_summary(r: &SuiteResult) -> String {
    let [means, ratios] = suite_summary_cells(r);
    format!(
        "{}\n{}\n{}\n{}\n{}\n",
        means.title,
        comfy(&means),
        ratios.title,
        comfy(&ratios),
        ratios.note
    )
}

/// One workload's table of `numabal suite` (`key`: its name in the suite).
pub fn workload_cells(key: &str, c: &CompareResult) -> Cells {
    let n = c.seeds.len();
    let base = c
        .policy_order
        .first()
        .and_then(|p| c.policies.get(p))
        .map(|p| p.runtime_s.mean);
    let rows = c
        .policy_order
        .iter()
        .map(|name| {
            let p = &c.policies[name];
            let g = |k: &str| p.metrics.get(k).copied().unwrap_or(f64::NAN);
            let s = &p.runtime_s;
            let rel = base
                .and_then(|b| numabal_sim::suite::ratio(s.mean, b))
                .map(|x| format!(" ({x:.2}x)"))
                .unwrap_or_default();
            vec![
                name.clone(),
                format!("{:.2}{rel}", s.mean),
                spread(n, || format!("{:.4}", s.cv)),
                spread(n, || format!("{:.4}", s.nmmd)),
                spread(n, || format!("{:.2} / {:.2} / {:.2}", s.q1, s.median, s.q3)),
                format!("{:.3}", g("local_access_ratio")),
                format!("{:.1}", g("numa_hint_faults_per_s")),
                format!("{:.0}", g("numa_pages_migrated")),
                format!("{:.3}", g("thread_migrations_internode_per_s")),
            ]
        })
        .collect();
    Cells {
        title: key.to_string(),
        header: [
            "policy",
            "runtime mean (s)",
            "CV",
            "NMMD",
            "q1 / median / q3 (s)",
            "local ratio",
            "hint faults/s",
            "pages migrated",
            "inter-node migr./s",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: String::new(),
    }
}

/// `numabal suite`'s report: a table per workload, then the summary.
pub fn print_suite(r: &SuiteResult) {
    outln!(
        "suite {} on {}: {} workload(s) x {} polic{} ({}) x {} seed(s)",
        r.suite,
        r.machine,
        r.workload_order.len(),
        r.policy_order.len(),
        if r.policy_order.len() == 1 {
            "y"
        } else {
            "ies"
        },
        r.policy_order.join(", "),
        r.seeds.len()
    );
    if !r.overrides.is_empty() {
        outln!("every run with --set {}", r.overrides.join(" --set "));
    }
    for w in &r.workload_order {
        let c = workload_cells(w, &r.workloads[w]);
        outln!();
        outln!("{}", c.title);
        outln!("{}", comfy(&c));
    }
    outln!();
    out!("{}", suite_summary(r));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ratio table: the first policy is 1.000x, a ratio to a mean of 0 is `-`, and a
    /// mean of 0 says how many workloads made it 0.
    #[test]
    fn suite_summary_ratio_column() {
        use numabal_sim::compare::{PolicyRuns, Stats};
        let runs = |rt: f64, migrated: f64| PolicyRuns {
            runtime_s: Stats::of(&[rt * 0.9, rt * 1.1]),
            metrics: [
                ("local_access_ratio", 0.5),
                ("numa_hint_faults_per_s", migrated),
                ("numa_pages_migrated", migrated),
                ("thread_migrations_internode_per_s", 1.0),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
            runs: Vec::new(),
        };
        let cmp = |w: &str, a: PolicyRuns, b: PolicyRuns| CompareResult {
            numabal_version: "x".into(),
            machine: "m".into(),
            workload: w.into(),
            seeds: vec![1, 2],
            policy_order: vec!["none".into(), "auto".into()],
            policies: [("none".to_string(), a), ("auto".to_string(), b)]
                .into_iter()
                .collect(),
        };
        let r = SuiteResult::from_compares(
            "s",
            "",
            Vec::new(),
            vec![
                cmp("a", runs(10.0, 0.0), runs(5.0, 100.0)),
                cmp("b", runs(40.0, 0.0), runs(20.0, 400.0)),
            ],
        );
        let text = suite_summary(&r);
        let lines: Vec<&str> = text.lines().collect();
        let row = |table: usize, policy: &str| -> Vec<String> {
            lines
                .iter()
                .filter(|l| l.starts_with(&format!("│ {policy} ")))
                .nth(table)
                .unwrap_or_else(|| panic!("{policy} row {table} in {text}"))
                .trim_matches('│')
                .split_whitespace()
                .map(String::from)
                .collect()
        };
        // Means: runtime sqrt(10 * 40) = 20 and sqrt(5 * 20) = 10; none migrates nothing.
        assert_eq!(row(0, "none")[1], "20.00");
        assert_eq!(row(0, "auto")[1], "10.00");
        assert!(text.contains("0 [2/2 are 0]"), "{text}");
        assert_eq!(row(0, "auto")[6], "200", "sqrt(100 * 400)");
        // Ratios to `none`: runtime 0.5, CV and local ratio 1, counters against 0: `-`.
        assert_eq!(
            row(1, "none"),
            [
                "none", "1.000x", "1.000x", "1.000x", "1.000x", "-", "-", "1.000x"
            ]
        );
        assert_eq!(
            row(1, "auto"),
            [
                "auto", "0.500x", "1.000x", "1.000x", "1.000x", "-", "-", "1.000x"
            ]
        );
        assert!(text.contains("Ratio to `none`"), "{text}");
    }

    #[test]
    fn numastat_layout_matches_numastat() {
        let t = numastat_table(&[("145 (numa-mem)".into(), vec![8.71, 9.39])], 2);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[1],
            "PID                        Node 0          Node 1           Total"
        );
        assert_eq!(
            lines[2],
            "----------------  --------------- --------------- ---------------"
        );
        assert_eq!(
            lines[3],
            "145 (numa-mem)               8.71            9.39           18.10"
        );
    }
}

/// Which `numactl --hardware` layout `numabal topology` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum NumactlStyle {
    /// numactl 2.0.9 as in the RHEL 7 memory brief's Figure 4.
    Rhel7,
    /// numactl 2.0.14 and later (three-wide ids, trailing spaces).
    Current,
}

/// A node as `numactl --hardware` prints it.
#[derive(Debug, Clone)]
pub struct NumactlNode {
    /// Node id.
    pub id: usize,
    /// Its CPUs.
    pub cpus: Vec<usize>,
    /// MemTotal, MB (bytes >> 20, as libnuma's `numa_node_size64`).
    pub size_mb: u64,
    /// MemFree, MB.
    pub free_mb: u64,
}

/// A simulated machine at rest: every node's CPUs, its size (MemTotal) and free memory
/// (what workloads may use: size less the node's reserved memory).
pub fn machine_numactl_nodes(m: &numabal_model::Machine) -> Vec<NumactlNode> {
    m.nodes
        .iter()
        .enumerate()
        .map(|(i, node)| NumactlNode {
            id: i,
            cpus: node.cpus.iter().collect(),
            size_mb: node.memory_bytes >> 20,
            free_mb: (node.memory_bytes - node.reserved_bytes) >> 20,
        })
        .collect()
}

/// `numactl --hardware`: nodes (ids may be sparse), their CPUs, size and free memory, then
/// the SLIT (`distance[i][j]` between the i-th and j-th node listed).
pub fn numactl_hardware(
    nodes: &[NumactlNode],
    distance: &[Vec<u32>],
    style: NumactlStyle,
) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let ids = numabal_model::Mask::from_ids(nodes.iter().map(|n| n.id));
    let _ = writeln!(o, "available: {} nodes ({ids})", nodes.len());
    for node in nodes {
        let i = node.id;
        let _ = write!(o, "node {i} cpus:");
        for c in &node.cpus {
            let _ = write!(o, " {c}");
        }
        o.push('\n');
        let _ = writeln!(o, "node {i} size: {} MB", node.size_mb);
        let _ = writeln!(o, "node {i} free: {} MB", node.free_mb);
    }
    o.push_str("node distances:\n");
    // (header start, id width, row label width, label end, cell width, after each field)
    let (head, id_w, row_w, sep, cell_w, trail) = match style {
        NumactlStyle::Rhel7 => ("node", 3, 2, ":", 4, ""),
        NumactlStyle::Current => ("node ", 3, 3, ": ", 3, " "),
    };
    o.push_str(head);
    for n in nodes {
        let _ = write!(o, "{:>id_w$}{trail}", n.id);
    }
    o.push('\n');
    for (n, row) in nodes.iter().zip(distance) {
        let _ = write!(o, "{:>row_w$}{sep}", n.id);
        for d in row {
            let _ = write!(o, "{d:>cell_w$}{trail}");
        }
        o.push('\n');
    }
    o
}

/// The live host: `numactl --hardware` plus sockets, SMT and last-level caches.
pub fn live_topology(t: &numabal_live::LiveTopology, style: NumactlStyle) -> String {
    use std::fmt::Write as _;
    let nodes: Vec<NumactlNode> = t
        .nodes
        .iter()
        .map(|n| NumactlNode {
            id: n.id,
            cpus: n.cpus.iter().collect(),
            size_mb: n.mem_total_bytes >> 20,
            free_mb: n.mem_free_bytes >> 20,
        })
        .collect();
    let distance: Vec<Vec<u32>> = t.nodes.iter().map(|n| n.distance.clone()).collect();
    let mut o = numactl_hardware(&nodes, &distance, style);
    let sockets: Vec<String> = t
        .sockets()
        .iter()
        .map(|(s, m)| format!("socket {s}: cpus {m}"))
        .collect();
    let _ = writeln!(o, "sockets: {} ({})", sockets.len(), sockets.join("; "));
    let _ = writeln!(o, "threads per core: {}", t.threads_per_core());
    let llcs = t.llcs();
    if llcs.is_empty() {
        o.push_str("last-level caches: not shown by sysfs\n");
    } else {
        let l: Vec<String> = llcs.iter().map(|m| format!("cpus {m}")).collect();
        let _ = writeln!(o, "last-level caches: {} ({})", llcs.len(), l.join("; "));
    }
    o
}

/// The `numastat -p` samples of a run (`--numastat`), oldest first.
pub fn print_numastat_samples(r: &RunResult, nr_nodes: usize) {
    for smp in &r.numastat {
        outln!();
        outln!("numastat -p at {:.2} s", smp.t_s);
        let rows: Vec<(String, Vec<f64>)> = smp
            .processes
            .iter()
            .map(|p| (format!("{} ({})", p.pid, p.name), p.node_mb.clone()))
            .collect();
        out!("{}", numastat_table(&rows, nr_nodes));
    }
}
