//! `numabal stat`: this host's processes like `numastat -p` (memory per node from
//! `numa_maps`), plus where their threads last ran, per node.

use crate::Failure;
use crate::output;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct StatArgs {
    /// A pid, or a pattern matched against command lines (as `numastat -p`); repeatable.
    /// Without it: every process with memory.
    #[arg(long = "pid", short = 'p', value_name = "PID|PATTERN")]
    pids: Vec<String>,
    /// Where the host's `/proc` and `/sys` are found (a fixture tree in tests).
    #[arg(long, default_value = "/")]
    root: PathBuf,
}

/// `-p` as numastat reads it: a pid, or a pattern in the command line (or name).
fn matches(p: &numabal_live::Process, w: &str) -> bool {
    match w.parse::<u32>() {
        Ok(n) => p.stat.pid == n,
        Err(_) => p.cmdline.contains(w) || p.name.contains(w),
    }
}

pub fn stat(a: &StatArgs) -> Result<(), Failure> {
    let topo = numabal_live::read_topology(&a.root)?;
    let nr = topo.nr_node_ids();
    let cpu_nodes = topo.cpu_nodes();
    let mut procs = Vec::new();
    for pid in numabal_live::pids(&a.root)? {
        // A process that exits while being read is skipped.
        if let Some(p) = numabal_live::read_process(&a.root, pid)? {
            procs.push(p);
        }
    }
    // On this host, not numabal itself (its command line holds the pattern).
    let me = (a.root == std::path::Path::new("/")).then(std::process::id);
    let wanted = |p: &numabal_live::Process| -> bool {
        if Some(p.stat.pid) == me {
            return false;
        }
        if a.pids.is_empty() {
            return p.maps.node_bytes.values().any(|&b| b > 0);
        }
        a.pids.iter().any(|w| matches(p, w))
    };
    let chosen: Vec<&numabal_live::Process> = procs.iter().filter(|p| wanted(p)).collect();
    for w in &a.pids {
        if !chosen.iter().any(|p| matches(p, w)) {
            return Err(Failure::Input(format!(
                "-p {w}: no such process under {} (allowed: a pid, or a pattern in a command line)",
                a.root.join("proc").display()
            )));
        }
    }
    let label = |p: &numabal_live::Process| format!("{} ({})", p.stat.pid, p.name);
    let mem: Vec<(String, Vec<f64>)> = chosen
        .iter()
        .map(|p| {
            let mut v = vec![0.0; nr];
            for (&n, &b) in &p.maps.node_bytes {
                if n < nr {
                    v[n] += b as f64 / (1u64 << 20) as f64;
                }
            }
            (label(p), v)
        })
        .collect();
    let threads: Vec<(String, Vec<f64>)> = chosen
        .iter()
        .map(|p| {
            let mut v = vec![0.0; nr];
            for &(_, cpu) in &p.threads {
                if let Some(n) = cpu_nodes.get(cpu).copied().flatten() {
                    v[n] += 1.0;
                }
            }
            (label(p), v)
        })
        .collect();
    print!("{}", output::numastat_table(&mem, nr));
    println!();
    print!(
        "{}",
        output::node_table("Per-node threads (where each last ran)", &threads, nr, 0)
    );
    Ok(())
}
