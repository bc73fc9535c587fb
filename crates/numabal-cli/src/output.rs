//! Human-readable output (numastat-like tables, comparison tables) and atomic JSON files.

use comfy_table::presets::UTF8_BORDERS_ONLY;
use comfy_table::{CellAlignment, Table};
use numabal_model::{Scenario, presets};
use numabal_sim::{CompareResult, RunResult};
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
    println!("Machines (--machine NAME, or a TOML file):");
    for (n, t) in presets::MACHINES {
        println!("  {n:<22} {}", desc(t));
    }
    println!();
    println!("Workloads (--workload NAME, or a TOML file):");
    for (n, t) in presets::WORKLOADS {
        println!("  {n:<22} {}", desc(t));
    }
    println!();
    println!("Policies (--policy NAME):");
    for p in numabal_sim::policies::all() {
        println!("  {:<22} {}", p.name, p.summary);
    }
}

/// Write JSON to `path` through a temporary file in the same directory, so a failed run
/// never leaves a partial file.
pub fn write_json_atomic<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), Failure> {
    let label = path.display().to_string();
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| Failure::Internal(format!("{label}: {e}")))?;
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
        f.write_all(text.as_bytes())?;
        f.write_all(b"\n")?;
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
    let mut s = String::from("Per-node process memory usage (in MBs)\n");
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
            s.push_str(&format!(" {v:>15.2}"));
            totals[n] += v;
        }
        s.push_str(&format!(" {:>15.2}\n", mb.iter().sum::<f64>()));
    }
    s.push_str(&rule);
    s.push_str(&format!("{:<16} ", "Total"));
    for v in &totals {
        s.push_str(&format!(" {v:>15.2}"));
    }
    s.push_str(&format!(" {:>15.2}\n", totals.iter().sum::<f64>()));
    s
}

/// `numabal sim`'s summary.
pub fn print_run(sc: &Scenario, r: &RunResult) {
    let m = &r.metrics;
    println!(
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
    println!();
    println!("  runtime                {:.2} s", m.runtime_s);
    println!("  local access ratio     {:.3}", m.local_access_ratio);
    println!(
        "  memory accessed        {:.1} GiB ({:.2} GiB/s)",
        m.accessed_gib, m.access_gib_per_s
    );
    println!(
        "  CPU time               {:.1} s user, {:.2} s kernel",
        m.user_cpu_s, m.sys_cpu_s
    );
    println!(
        "  page faults            {} (THP {})",
        m.pgfault, m.thp_fault_alloc
    );
    let causes: Vec<String> = r
        .thread_migrations_by_cause
        .iter()
        .filter(|(_, v)| **v > 0)
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    println!(
        "  thread migrations      {} inter-node{}",
        m.thread_migrations_internode,
        if causes.is_empty() {
            String::new()
        } else {
            format!(" ({})", causes.join(", "))
        }
    );
    println!(
        "  NUMA balancing         numa_pte_updates {}, numa_hint_faults {} (local {}), numa_pages_migrated {}",
        m.numa_pte_updates, m.numa_hint_faults, m.numa_hint_faults_local, m.numa_pages_migrated
    );
    println!(
        "                         numa_task_migrated {}, numa_task_swapped {}, scan {:.2} CPU s ({:.2} s in workers)",
        m.numa_task_migrated, m.numa_task_swapped, m.scan_cpu_s, m.scan_cpu_hidden_s
    );
    println!(
        "  stalls                 {} over 1 ms, longest {:.3} ms",
        m.stall_events_over_1ms, m.stall_max_ms
    );
    if let Some(nb) = &r.numa_balancing
        && nb.stats.async_scans > 0
    {
        let s = &nb.stats;
        println!(
            "  scan_async             {} worker scans, {} on an idle CPU, {} outside the task's cpuset",
            s.async_scans, s.async_scans_idle_cpu, s.async_scans_outside_cpuset
        );
    }
    if let Some(aa) = r
        .numa_balancing
        .as_ref()
        .and_then(|n| n.autonuma_2012.as_ref())
    {
        let st = &aa.stats;
        println!(
            "  AutoNUMA (2012)        knuma_scand full_scans {}, knuma_migrated pages {} (cancelled {}), last_nid rejects {}, exchanges {}",
            st.full_scans,
            st.pages_migrated.iter().sum::<u64>(),
            st.pages_cancelled,
            st.last_nid_rejected,
            st.exchanges
        );
    }
    println!();
    let rows: Vec<(String, Vec<f64>)> = r
        .processes
        .iter()
        .map(|p| (format!("{} ({})", p.pid, p.name), p.node_mb.clone()))
        .collect();
    print!("{}", numastat_table(&rows, sc.machine.nr_nodes()));
    println!("(memory of each process when it exited)");
}

/// `numabal compare`'s table.
pub fn print_compare(r: &CompareResult) {
    println!(
        "{} on {}, {} seed(s) per policy",
        r.workload,
        r.machine,
        r.seeds.len()
    );
    let mut t = Table::new();
    t.load_style(UTF8_BORDERS_ONLY);
    t.set_header(vec![
        "policy",
        "runtime mean (s)",
        "CV",
        "min",
        "max",
        "NMMD",
        "local ratio",
        "pages migrated",
        "thread migr.",
    ]);
    let base = r
        .policy_order
        .first()
        .and_then(|p| r.policies.get(p))
        .map(|p| p.runtime_s.mean);
    for name in &r.policy_order {
        let p = &r.policies[name];
        let g = |k: &str| p.metrics.get(k).copied().unwrap_or(0.0);
        let rel = base
            .filter(|b| *b > 0.0)
            .map(|b| format!(" ({:.2}x)", p.runtime_s.mean / b))
            .unwrap_or_default();
        t.add_row(vec![
            name.clone(),
            format!("{:.2}{rel}", p.runtime_s.mean),
            format!("{:.4}", p.runtime_s.cv),
            format!("{:.2}", p.runtime_s.min),
            format!("{:.2}", p.runtime_s.max),
            format!("{:.4}", p.runtime_s.nmmd),
            format!("{:.3}", g("local_access_ratio")),
            format!("{:.0}", g("numa_pages_migrated")),
            format!("{:.1}", g("thread_migrations_internode")),
        ]);
    }
    for i in 1..9 {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    println!("{t}");
    if let Some(first) = r.policy_order.first() {
        println!(
            "(ratios are against `{first}`; CV = sample standard deviation / mean; NMMD = (max - min) / mean)"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
