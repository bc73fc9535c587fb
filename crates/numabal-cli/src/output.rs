//! Human-readable output (numastat-like tables, comparison tables) and atomic JSON files.

use comfy_table::presets::UTF8_BORDERS_ONLY;
use comfy_table::{CellAlignment, Table};
use numabal_model::Scenario;
use numabal_sim::suite::{GEOMEAN_METRICS, Geomean};
use numabal_sim::{CompareResult, RunResult, SuiteResult};
use std::io::Write;
use std::path::Path;

use crate::Failure;

/// `--wide`: terminal text is not fitted to [`WIDTH`] columns.
static WIDE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The columns terminal text fits in by default (tables wrap their cells, long lines wrap
/// at spaces).
pub const WIDTH: usize = 100;

/// `--wide`: lay text out on one line however long.
pub fn set_wide(wide: bool) {
    WIDE.store(wide, std::sync::atomic::Ordering::Relaxed);
}

/// The width to fit text in, `None` with `--wide`.
pub fn width() -> Option<usize> {
    (!WIDE.load(std::sync::atomic::Ordering::Relaxed)).then_some(WIDTH)
}

/// `text` with every line longer than [`width()`] wrapped at spaces; continuation lines
/// start at column `indent` (where the line's value starts after its label).
pub fn fit(text: &str, indent: usize) -> String {
    let Some(w) = width() else {
        return text.to_string();
    };
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, nl) = line.strip_suffix('\n').map_or((line, ""), |b| (b, "\n"));
        let mut rest = body;
        let mut first = true;
        while rest.chars().count() + if first { 0 } else { indent } > w {
            let room = w - if first { 0 } else { indent };
            // The last space that keeps the line within the width (past the indent).
            let cut = rest
                .char_indices()
                .take_while(|(i, _)| rest[..*i].chars().count() <= room)
                .filter(|(i, c)| *c == ' ' && !rest[..*i].trim().is_empty())
                .map(|(i, _)| i)
                .last();
            let Some(cut) = cut else { break };
            if !first {
                out.extend(std::iter::repeat_n(' ', indent));
            }
            out += rest[..cut].trim_end();
            out.push('\n');
            rest = rest[cut..].trim_start();
            first = false;
        }
        if !first {
            out.extend(std::iter::repeat_n(' ', indent));
        }
        out += rest;
        out += nl;
    }
    out
}

/// `numabal list`: [`crate::api::presets`] under a heading each.
pub fn print_list() {
    use std::fmt::Write as _;
    let mut s = String::new();
    for (kind, list) in crate::api::presets() {
        let heading = match kind {
            "machines" => "Machines (--machine NAME, or a TOML file):",
            "workloads" => "Workloads (--workload NAME, or a TOML file):",
            "policies" => "Policies (--policy NAME):",
            _ => "Suites (numabal suite NAME -m MACHINE, or a TOML file):",
        };
        if !s.is_empty() {
            writeln!(s).ok();
        }
        writeln!(s, "{heading}").ok();
        for p in list {
            let runs = match (kind, p.sim, p.live) {
                ("policies", true, true) => " (simulator and daemon)",
                ("policies", false, true) => " (daemon only)",
                _ => "",
            };
            writeln!(s, "  {:<22} {}{runs}", p.name, p.description).ok();
        }
    }
    out!("{}", fit(&s, 25));
}

/// A saved JSON result (`--json` of a command) as its type, or why not in plain words:
/// `not JSON (line 3, column 7)`, or the key and what it holds against what is allowed
/// (the model's `plain_words`: no serde vocabulary).
pub fn parse_saved<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
    let v: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| format!("not JSON (line {}, column {})", e.line(), e.column()))?;
    from_saved(v)
}

/// [`parse_saved`] of a parsed value.
pub fn from_saved<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> Result<T, String> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = numabal_model::error::path_text(e.path());
        let why = numabal_model::error::plain_words(&e.inner().to_string());
        if path.is_empty() {
            why
        } else {
            format!("{path}: {why}")
        }
    })
}

/// An output file (`flag` names it) checked before any work: not a directory, in a
/// directory where a file can be created (the file is written there through a temporary
/// file, renamed), and, if `append`, an existing file that can be opened for appending.
/// Nothing is left behind by the check.
pub fn check_output_file(flag: &str, path: &Path, append: bool) -> Result<(), Failure> {
    let refuse = |why: String| Failure::Input(format!("{flag} {}: {why}", path.display()));
    if path.is_dir() {
        return Err(refuse("is a directory (allowed: a file name)".into()));
    }
    let dir = parent_dir(path);
    if !dir.is_dir() {
        return Err(refuse(format!("no directory {}", dir.display())));
    }
    probe(&dir).map_err(|e| refuse(format!("cannot create a file in {}: {e}", dir.display())))?;
    if append && path.exists() {
        std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| refuse(format!("cannot append to it: {e}")))?;
    }
    Ok(())
}

/// An output directory (`--svg-dir`) checked before any work: an existing directory where
/// files can be created, or one that can be made (its nearest existing ancestor is a
/// directory where it can be). It is made when the files are written.
pub fn check_output_dir(flag: &str, dir: &Path) -> Result<(), Failure> {
    let refuse = |why: String| Failure::Input(format!("{flag} {}: {why}", dir.display()));
    let mut existing = dir.to_path_buf();
    while !existing.exists() {
        existing = parent_dir(&existing);
    }
    if !existing.is_dir() {
        return Err(refuse(if existing == dir {
            "is a file, not a directory".into()
        } else {
            format!("{} is a file, not a directory", existing.display())
        }));
    }
    probe(&existing).map_err(|e| {
        refuse(format!(
            "cannot create files in {}: {e}",
            existing.display()
        ))
    })
}

/// The directory a path sits in (`.` for a bare name; `/` stays `/`).
fn parent_dir(path: &Path) -> std::path::PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        Some(_) => Path::new(".").to_path_buf(),
        None => path.to_path_buf(),
    }
}

/// Create and remove a file in `dir`: the only sure test that files can be made there
/// (permissions, read-only mounts, /proc and /sys all answer differently).
fn probe(dir: &Path) -> std::io::Result<()> {
    let p = dir.join(format!(".numabal-probe.tmp{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&p)?;
    std::fs::remove_file(&p)
}

/// Write JSON to `path` through a temporary file in the same directory, so a failed run
/// never leaves a partial file.
pub fn write_json_atomic<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), Failure> {
    let text =
        json_text(value).map_err(|e| Failure::Internal(format!("{}: {e}", path.display())))?;
    write_atomic(path, text.as_bytes())
}

/// A result as the `--json` file holds it: pretty, arrays of numbers on one line, a final
/// line break.
pub fn json_text<T: serde::Serialize>(value: &T) -> Result<String, serde_json::Error> {
    let mut text = inline_scalar_arrays(&serde_json::to_string_pretty(value)?);
    text.push('\n');
    Ok(text)
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
/// column and row; `decimals` after the point. numastat's widths (labels 16, numbers 15)
/// while they fit [`width()`] columns, else numbers as wide as the widest (numastat
/// -c: 8 nodes of up to 99999.99 MB fit); labels widen up to what fits, longer ones end in
/// an ellipsis.
pub fn node_table(
    title: &str,
    processes: &[(String, Vec<f64>)],
    nr_nodes: usize,
    decimals: usize,
) -> String {
    let header: Vec<String> = (0..nr_nodes).map(|n| format!("Node {n}")).collect();
    labeled_table(title, processes, &header, decimals)
}

/// [`node_table`] with its columns named by `columns` (one per value of a row).
pub fn labeled_table(
    title: &str,
    processes: &[(String, Vec<f64>)],
    columns: &[String],
    decimals: usize,
) -> String {
    let nr_nodes = columns.len();
    let mut totals = vec![0.0; nr_nodes];
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    for (label, v) in processes {
        let mut cells: Vec<String> = v.iter().map(|x| format!("{x:.decimals$}")).collect();
        cells.push(format!("{:.decimals$}", v.iter().sum::<f64>()));
        for (t, x) in totals.iter_mut().zip(v) {
            *t += x;
        }
        rows.push((label.clone(), cells));
    }
    let mut cells: Vec<String> = totals.iter().map(|x| format!("{x:.decimals$}")).collect();
    cells.push(format!("{:.decimals$}", totals.iter().sum::<f64>()));
    let mut header: Vec<String> = columns.to_vec();
    header.push("Total".into());
    let (label_w, num_w) = node_table_widths(&rows, &cells, &header);
    let line = |label: &str, cells: &[String]| -> String {
        let mut l = format!("{:<label_w$} ", ellipsis(label, label_w));
        for c in cells {
            l.push_str(&format!(" {c:>num_w$}"));
        }
        l + "\n"
    };
    let rule = format!(
        "{} {}\n",
        "-".repeat(label_w),
        format!(" {}", "-".repeat(num_w)).repeat(nr_nodes + 1)
    );
    let mut s = format!("{title}\n");
    s.push_str(&line("PID", &header));
    s.push_str(&rule);
    for (label, cells) in &rows {
        s.push_str(&line(label, cells));
    }
    s.push_str(&rule);
    s.push_str(&line("Total", &cells));
    s
}

/// (label, number) column widths of a node table: see [`node_table`].
fn node_table_widths(
    rows: &[(String, Vec<String>)],
    totals: &[String],
    header: &[String],
) -> (usize, usize) {
    let cols = header.len();
    let table_width = width().unwrap_or(usize::MAX);
    let mut num_w = 15;
    if 17 + cols * (num_w + 1) > table_width {
        num_w = rows
            .iter()
            .flat_map(|r| &r.1)
            .chain(totals)
            .chain(header)
            .map(|c| c.chars().count())
            .max()
            .unwrap_or(1);
    }
    let room = table_width.saturating_sub(1 + cols * (num_w + 1)).max(16);
    let longest = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
    (longest.clamp(16, room), num_w)
}

/// `s` cut to `width` characters, its end an ellipsis if cut.
fn ellipsis(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let mut t: String = s.chars().take(width.saturating_sub(1)).collect();
    t.push('…');
    t
}

/// `numabal sim`'s summary.
pub fn print_run(sc: &Scenario, r: &RunResult) {
    use std::fmt::Write as _;
    // The summary as text first, fitted to the width as a whole.
    let mut s = String::new();
    let m = &r.metrics;
    writeln!(
        s,
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
    )
    .ok();
    writeln!(s).ok();
    writeln!(s, "  runtime                {:.2} s", m.runtime_s).ok();
    if m.work_units > 0.0 {
        writeln!(
            s,
            "  throughput             {:.2} work units/s ({:.0} units)",
            m.throughput_per_s, m.work_units
        )
        .ok();
    }
    writeln!(s, "  local access ratio     {:.3}", m.local_access_ratio).ok();
    writeln!(
        s,
        "  memory accessed        {:.1} GiB ({:.2} GiB/s)",
        m.accessed_gib, m.access_gib_per_s
    )
    .ok();
    writeln!(
        s,
        "  CPU time               {:.1} s user, {:.2} s kernel",
        m.user_cpu_s, m.sys_cpu_s
    )
    .ok();
    writeln!(
        s,
        "  page faults            {} (THP {})",
        m.pgfault, m.thp_fault_alloc
    )
    .ok();
    let causes: Vec<String> = r
        .thread_migrations_by_cause
        .iter()
        .filter(|(_, v)| **v > 0)
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    writeln!(
        s,
        "  thread migrations      {} inter-node{}",
        m.thread_migrations_internode,
        if causes.is_empty() {
            String::new()
        } else {
            format!(" ({})", causes.join(", "))
        }
    )
    .ok();
    writeln!(
        s,
        "  NUMA balancing         numa_pte_updates {}, numa_hint_faults {} (local {}), numa_pages_migrated {}",
        m.numa_pte_updates,
        m.numa_hint_faults,
        m.numa_hint_faults_local,
        m.numa_pages_migrated
    ).ok();
    writeln!(
        s,
        "                         numa_task_migrated {}, numa_task_swapped {}, scan {:.2} CPU s ({:.2} s in workers)",
        m.numa_task_migrated,
        m.numa_task_swapped,
        m.scan_cpu_s,
        m.scan_cpu_hidden_s
    ).ok();
    writeln!(
        s,
        "  stalls                 {} over 1 ms, longest {:.3} ms",
        m.stall_events_over_1ms, m.stall_max_ms
    )
    .ok();
    writeln!(
        s,
        "  page migrations        pgmigrate_success {}, pgmigrate_fail {}",
        m.pgmigrate_success, m.pgmigrate_fail
    )
    .ok();
    if let Some(t) = &m.tiering {
        tiering_summary(&mut s, t);
    }
    daemon_summary(&mut s, r);
    // A daemon's decisions (numad's log lines), the first few; all are in the JSON.
    const SHOWN: usize = 12;
    for (i, l) in r.policy_log.iter().take(SHOWN).enumerate() {
        let head = if i == 0 { "  decisions" } else { "" };
        writeln!(s, "{head:<25}{:>8.1} s  {}", l.t_s, l.message).ok();
    }
    if r.policy_log.len() > SHOWN {
        writeln!(
            s,
            "{:<25}... {} more in the JSON's policy_log",
            "",
            r.policy_log.len() - SHOWN
        )
        .ok();
    }
    if let Some(nb) = &r.numa_balancing
        && nb.stats.async_scans > 0
    {
        let st = &nb.stats;
        writeln!(
            s,
            "  scan_async             {} worker scans, {} on an idle CPU, {} outside the task's cpuset",
            st.async_scans, st.async_scans_idle_cpu, st.async_scans_outside_cpuset
        ).ok();
    }
    if let Some(aa) = r
        .numa_balancing
        .as_ref()
        .and_then(|n| n.autonuma_2012.as_ref())
    {
        let st = &aa.stats;
        writeln!(
        s,
            "  AutoNUMA (2012)        knuma_scand full_scans {}, knuma_migrated pages {} (cancelled {}), last_nid rejects {}, exchanges {}",
            st.full_scans,
            st.pages_migrated.iter().sum::<u64>(),
            st.pages_cancelled,
            st.last_nid_rejected,
            st.exchanges
        ).ok();
    }
    out!("{}", fit(&s, 25));
    outln!();
    print_exit_memory(sc, r);
}

/// Each process's memory per node when it exited (numastat -p's table), and per memory
/// tier with memory tiering.
fn print_exit_memory(sc: &Scenario, r: &RunResult) {
    let rows: Vec<(String, Vec<f64>)> = r
        .processes
        .iter()
        .map(|p| (format!("{} ({})", p.pid, p.name), p.node_mb.clone()))
        .collect();
    out!("{}", numastat_table(&rows, sc.machine.nr_nodes()));
    outln!("(memory of each process when it exited)");
    if let Some(t) = &r.metrics.tiering {
        out!("{}", tier_table(&rows, &t.tiers));
    }
}

/// Memory tiering's counters in the run summary.
fn tiering_summary(s: &mut String, t: &numabal_sim::world::tiering::TieringStats) {
    use std::fmt::Write as _;
    writeln!(
        s,
        "  memory tiering         pgpromote_success {} ({:.1} MB/s), pgpromote_candidate {}, pgdemote_kswapd {}, pgdemote_direct {} ({:.1} MB/s demoted)",
        t.pgpromote_success,
        t.promote_mb_s,
        t.pgpromote_candidate,
        t.pgdemote_kswapd,
        t.pgdemote_direct,
        t.demote_mb_s
    )
    .ok();
    writeln!(
        s,
        "                         hint faults on lower tiers {}, promotions without room {}, kswapd {} wakeups, {:.2} CPU s",
        t.numa_hint_faults_slow_tier, t.pgpromote_no_room, t.kswapd_wakeups, t.kswapd_cpu_s
    )
    .ok();
    if t.damos_promoted + t.damos_demoted > 0 {
        writeln!(
            s,
            "                         DAMOS migrate_hot {} pages up a tier, migrate_cold {} down",
            t.damos_promoted, t.damos_demoted
        )
        .ok();
    }
    let tiers: Vec<String> = t
        .tiers
        .iter()
        .map(|u| {
            format!(
                "memory_tier{} (nodes {}) {:.0} MiB mean, {:.0} peak",
                u.tier, u.nodes, u.mean_mb, u.peak_mb
            )
        })
        .collect();
    writeln!(s, "                         {}", tiers.join("; ")).ok();
}

/// numastat -p's table summed per memory tier (a column per `memory_tierN`).
pub fn tier_table(
    processes: &[(String, Vec<f64>)],
    tiers: &[numabal_sim::world::tiering::TierUse],
) -> String {
    let tiers: Vec<(u32, numabal_model::Mask)> = tiers
        .iter()
        .map(|t| {
            let nodes = numabal_model::Mask::parse_list(&t.nodes, None).unwrap_or_default();
            (t.tier, nodes)
        })
        .collect();
    tier_columns(processes, &tiers)
}

/// [`tier_table`] from (N of `memory_tierN`, its nodes).
pub fn tier_columns(
    processes: &[(String, Vec<f64>)],
    tiers: &[(u32, numabal_model::Mask)],
) -> String {
    let nodes: Vec<&numabal_model::Mask> = tiers.iter().map(|(_, m)| m).collect();
    let rows: Vec<(String, Vec<f64>)> = processes
        .iter()
        .map(|(l, v)| {
            let per: Vec<f64> = nodes
                .iter()
                .map(|m| m.iter().filter_map(|n| v.get(n)).sum())
                .collect();
            (l.clone(), per)
        })
        .collect();
    let header: Vec<String> = tiers.iter().map(|(id, _)| format!("Tier {id}")).collect();
    labeled_table("Per-tier process memory usage (in MBs)", &rows, &header, 2)
}

/// A table as the terminal and the HTML report both show it: its cells formatted once, by
/// the one function that computes them, then drawn as text ([`comfy`]) or HTML. A `\n` in
/// a header splits it over two lines (the HTML joins them with a space).
#[derive(Debug, Clone, Default)]
pub struct Cells {
    /// The line above the table.
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// The lines under the table (what the numbers mean), if any.
    pub note: String,
}

/// The table as terminal text, first column left, the others right: as wide as its cells,
/// and only if that is wider than [`width()`], wrapped to it (cells wrap at spaces).
pub fn comfy(c: &Cells) -> String {
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
    let text = t.to_string();
    match width() {
        Some(w) if text.lines().any(|l| l.chars().count() > w) => {
            t.set_content_arrangement(comfy_table::ContentArrangement::Dynamic);
            t.set_width(w as u16);
            t.to_string()
        }
        _ => text,
    }
}

/// A table with its title and note, fitted to the terminal.
fn print_cells(c: &Cells) {
    outln!("{}", c.title);
    outln!("{}", comfy(c));
    if !c.note.is_empty() {
        out!("{}", fit(&format!("{}\n", c.note), 1));
    }
}

/// A policy's mean runtime and its ratio to the first policy's: `43.41 (1.03x)`.
fn runtime_cell(c: &CompareResult, s: &numabal_sim::compare::Stats) -> String {
    let base = c
        .policy_order
        .first()
        .and_then(|p| c.policies.get(p))
        .map(|p| p.runtime_s.mean);
    let rel = base
        .and_then(|b| numabal_sim::suite::ratio(s.mean, b))
        .map(|x| format!(" ({x:.2}x)"))
        .unwrap_or_default();
    format!("{:.2}{rel}", s.mean)
}

/// `numabal compare`'s table.
pub fn compare_cells(r: &CompareResult) -> Cells {
    let n = r.seeds.len();
    let rows = r
        .policy_order
        .iter()
        .map(|name| {
            let p = &r.policies[name];
            let g = |k: &str| p.metrics.get(k).copied().unwrap_or(0.0);
            let s = &p.runtime_s;
            vec![
                name.clone(),
                runtime_cell(r, s),
                fmt_undefined(s.cv, 4),
                format!("{:.2}", s.min),
                format!("{:.2}", s.max),
                fmt_undefined(s.nmmd, 4),
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
            "runtime\nmean (s)",
            "CV",
            "min\n(s)",
            "max\n(s)",
            "NMMD",
            "local\nratio",
            "pages\nmigrated",
            "thread migr.\nper run",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: r
            .policy_order
            .first()
            .map(|first| {
                format!(
                    "(ratios are against `{first}`; CV = sample standard deviation / mean; \
                     NMMD = (max - min) / mean; - where one run gives no spread; thread \
                     migrations: inter-node, mean count per run)"
                )
            })
            .unwrap_or_default(),
    }
}

/// `numabal compare`'s report.
pub fn print_compare(r: &CompareResult) {
    print_cells(&compare_cells(r));
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

/// A statistic with `decimals`, or `-` where it is undefined (one run has no spread).
pub fn fmt_undefined(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.decimals$}"))
}

/// At most 2 decimals, without trailing zeros: 24.0 is `24`, 1.5 `1.5`.
pub fn two_decimals(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A ratio cell: `0.523x`, or `-` where it is undefined (the baseline is 0).
fn fmt_ratio(r: Option<f64>) -> String {
    r.map(|r| format!("{r:.3}x")).unwrap_or_else(|| "-".into())
}

/// The summary tables of `numabal suite`: geometric means per policy and their ratios to
/// the first policy (undefined, `-`, for CV and NMMD with one seed).
pub fn suite_summary_cells(r: &SuiteResult) -> [Cells; 2] {
    let mut header = vec!["policy".to_string()];
    // Two-line headers keep the columns as narrow as their numbers.
    header.extend(
        GEOMEAN_METRICS
            .iter()
            .map(|m| m.label.replacen(' ', "\n", 1)),
    );
    let n = r.workload_order.len();
    let (mut means, mut ratios) = (Vec::new(), Vec::new());
    for p in &r.policy_order {
        let g = |k: &str| r.geomean.get(p).and_then(|m| m.get(k));
        let mut row = vec![p.clone()];
        let mut rrow = vec![p.clone()];
        for m in GEOMEAN_METRICS {
            match g(m.key) {
                Some(Geomean {
                    value,
                    ratio,
                    zeros,
                }) => {
                    let zeros = if *zeros > 0 {
                        format!(" [{zeros}/{n}]")
                    } else {
                        String::new()
                    };
                    let v = value.map_or_else(|| "-".into(), |v| fmt_figure(m.key, v));
                    row.push(format!("{v}{zeros}"));
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
            note: "(geometric mean: exactly 0 when any workload's value is 0, [k/n]: k of the \
                   n workloads are 0; - where it is undefined: a ratio to a mean of 0, a CV or \
                   NMMD of single runs; CV = sample standard deviation / mean; NMMD = (max - \
                   min) / mean)"
                .into(),
        },
    ]
}

/// The summary of `numabal suite` as the terminal shows it.
pub fn suite_summary(r: &SuiteResult) -> String {
    let [means, ratios] = suite_summary_cells(r);
    format!(
        "{}\n{}\n{}\n{}\n{}",
        means.title,
        comfy(&means),
        ratios.title,
        comfy(&ratios),
        fit(&format!("{}\n", ratios.note), 1)
    )
}

/// One workload's table of `numabal suite` (`key`: its name in the suite).
pub fn workload_cells(key: &str, c: &CompareResult) -> Cells {
    let rows = c
        .policy_order
        .iter()
        .map(|name| {
            let p = &c.policies[name];
            let g = |k: &str| p.metrics.get(k).copied().unwrap_or(f64::NAN);
            let s = &p.runtime_s;
            vec![
                name.clone(),
                runtime_cell(c, s),
                fmt_undefined(s.cv, 4),
                fmt_undefined(s.nmmd, 4),
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
            "runtime\nmean (s)",
            "CV",
            "NMMD",
            "local\nratio",
            "hint\nfaults/s",
            "pages\nmigrated",
            "inter-node\nmigr./s",
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
        outln!();
        print_cells(&workload_cells(w, &r.workloads[w]));
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
        assert!(text.contains("0 [2/2]"), "{text}");
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

    /// Every line of a table as wide as its header, at most 100 columns.
    fn aligned(t: &str) -> usize {
        let w: Vec<usize> = t.lines().skip(1).map(|l| l.chars().count()).collect();
        assert!(w.iter().all(|&x| x == w[0]), "{t}");
        assert!(w[0] <= WIDTH, "{t}");
        w[0]
    }

    /// Long names (a 7-digit pid and a 15-character comm on a host, any name in a
    /// simulation) keep the columns: the label column widens to what fits, then names are
    /// cut with an ellipsis; 8 nodes still fit 100 columns.
    #[test]
    fn numastat_columns_hold_with_long_names_and_many_nodes() {
        let host = "4194303 (kworker/u64:12+)".to_string();
        let t = numastat_table(
            &[
                (host.clone(), vec![1.0, 2.0]),
                ("1 (a)".into(), vec![0.0; 2]),
            ],
            2,
        );
        assert_eq!(aligned(&t), 25 + 1 + 3 * 16);
        assert!(t.contains(&format!("{host}  ")), "{t}");
        let long = format!("7 ({})", "x".repeat(90));
        let t = numastat_table(&[(long, vec![1.0, 2.0, 3.0, 4.0])], 4);
        assert_eq!(aligned(&t), WIDTH);
        assert!(t.contains("7 (xxx") && t.contains("x…  "), "{t}");
        let t = numastat_table(&[("1 (big)".into(), vec![12345.67; 8])], 8);
        assert_eq!(aligned(&t), 17 + 9 * 9);
        assert!(t.contains(" 98765.36\n"), "{t}");
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

/// A simulated machine's memory tiers as the kernel `k` forms them: each tier
/// (`memory_tierN` and its `nodelist`), every node's abstract distance, memory type and
/// performance, and its demotion targets.
pub fn memory_tiers(
    m: &numabal_model::Machine,
    t: &numabal_model::tiers::MemoryTiers,
    k: numabal_model::KernelVersion,
) -> String {
    use std::fmt::Write as _;
    let mut o = format!("memory tiers (Linux {}.{}):\n", k.major, k.minor);
    for tier in &t.tiers {
        let top = tier.nodes.iter().all(|n| t.toptier[n]);
        let _ = writeln!(
            o,
            "memory_tier{:<3} nodelist {}{}",
            tier.id,
            tier.nodes,
            if top { "  (top tier)" } else { "" }
        );
    }
    let _ = writeln!(
        o,
        "node  type  adistance  latency_ns  bandwidth_MB/s  demotion targets"
    );
    for n in 0..m.nr_nodes() {
        let Some(adist) = t.adistance[n] else {
            continue;
        };
        let p = numabal_model::tiers::node_perf(m, n);
        let targets = if t.demotion[n].is_empty() {
            "-".to_string()
        } else {
            t.demotion[n].to_string()
        };
        let _ = writeln!(
            o,
            "{n:>4}  {:<4}  {adist:>9}  {:>10}  {:>14}  {targets}",
            m.node_type(n).to_string(),
            p.latency_ns,
            p.bandwidth_mb_s
        );
    }
    if let Some(note) = &t.note {
        let _ = writeln!(o, "note: {note}");
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
    // The kernel's memory tiers, when it has more than one (a CPU-less slower node).
    if t.tiers.len() > 1 {
        let l: Vec<String> = t
            .tiers
            .iter()
            .map(|(id, m)| format!("memory_tier{id} nodelist {m}"))
            .collect();
        let _ = writeln!(o, "memory tiers: {}", l.join("; "));
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
        if let Some(t) = &r.metrics.tiering {
            out!("{}", tier_table(&rows, &t.tiers));
        }
    }
}

/// numabal's daemon on the simulated host: its sensor, passes, CPU and moves, from the
/// stop line of its decision log (the whole log is in the JSON's `daemon.log`).
fn daemon_summary(s: &mut String, r: &RunResult) {
    use std::fmt::Write as _;
    let Some(d) = &r.daemon else {
        return;
    };
    let Some(stop) = d.stop() else {
        return;
    };
    let n = |k: &str| stop[k].as_f64().unwrap_or(0.0);
    let sensor = d.settings.sensor.map_or("auto", |k| k.name());
    let passes = n("passes");
    let plural = if passes == 1.0 { "" } else { "es" };
    writeln!(
        s,
        "  numabal daemon         sensor {sensor}, {passes} pass{plural}, {} samples, {} soft-dirty faults",
        n("samples"),
        d.soft_dirty_faults
    )
    .ok();
    writeln!(
        s,
        "                         CPU {:.2} s ({:.2}% of one CPU), {} affinity changes",
        n("cpu_s"),
        n("cpu_pct_of_one_cpu"),
        n("affinity_changes"),
    )
    .ok();
    writeln!(
        s,
        "                         {} pages moved, {} deferred by migrate_mb_s",
        n("pages_moved"),
        n("pages_deferred"),
    )
    .ok();
}
