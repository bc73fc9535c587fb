//! `numabal stat`: this host's processes like `numastat -p` (memory per node from
//! `numa_maps`), plus where their threads last ran, per node.

use crate::Failure;
use crate::output;
use clap::Args;
use numabal_live::sensor::{
    FaultSampler, SensorKind, choose_in, clear_soft_dirty, judge, sensors_here,
};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct StatArgs {
    /// A pid, or a pattern matched against command lines (as `numastat -p`); repeatable.
    /// Without it: every process with memory. One that finds no process is said on stderr
    /// and the exit status is 1 (the others are still shown).
    #[arg(long = "pid", short = 'p', value_name = "PID|PATTERN")]
    pids: Vec<String>,
    /// Also sample the processes' page faults for this many seconds and print each one's
    /// local access ratio (accesses from a CPU of the page's node).
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
    sample_s: f64,
    /// The sensor for --sample-s: auto, hint (kernel.numa_balancing=1) or softdirty
    /// (clears the processes' soft-dirty bits once, then samples the write faults); a
    /// refusal lists the sensors that work here and why the others do not.
    #[arg(long, default_value = "auto")]
    sensor: String,
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
    // Bad input is refused before anything is printed.
    let sensor = sampling_sensor(a)?;
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
    // numastat's words for a -p that found nothing.
    let not_found: Vec<String> = a
        .pids
        .iter()
        .filter(|w| !chosen.iter().any(|p| matches(p, w)))
        .map(|w| match w.parse::<u32>() {
            Ok(pid) => format!("Found no process with pid {pid}"),
            Err(_) => format!("Found no processes containing pattern: \"{w}\""),
        })
        .collect();
    if chosen.is_empty() && !not_found.is_empty() {
        return Err(Failure::NotFound(not_found));
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
            for &(_, cpu, _, _) in &p.threads {
                if let Some(n) = cpu_nodes.get(cpu).copied().flatten() {
                    v[n] += 1.0;
                }
            }
            (label(p), v)
        })
        .collect();
    // Watching starts before the tables: a sensor that cannot watch fails before output.
    let watching = match sensor {
        Some(kind) => Some((kind, watch(a, kind, &chosen)?)),
        None => None,
    };
    out!("{}", output::numastat_table(&mem, nr));
    if topo.tiers.len() > 1 {
        out!("{}", output::tier_columns(&mem, &topo.tiers));
    }
    outln!();
    out!(
        "{}",
        output::node_table("Per-node threads (where each last ran)", &threads, nr, 0)
    );
    if let Some((kind, sampler)) = watching {
        local_ratio(a, kind, sampler, &chosen, &cpu_nodes);
    }
    if not_found.is_empty() {
        Ok(())
    } else {
        Err(Failure::NotFound(not_found))
    }
}

/// The sensor `--sample-s` samples with, `None` without it; a bad duration or a sensor that
/// cannot sample here is an input error.
fn sampling_sensor(a: &StatArgs) -> Result<Option<SensorKind>, Failure> {
    if !(0.0..=3600.0).contains(&a.sample_s) {
        return Err(Failure::Input(format!(
            "--sample-s: is {} (allowed: 0 to 3600 seconds)",
            a.sample_s
        )));
    }
    let asked =
        SensorKind::parse(&a.sensor).map_err(|e| Failure::Input(format!("--sensor: {e}")))?;
    if a.sample_s == 0.0 {
        return Ok(None);
    }
    let judged = judge(&a.root);
    let (kind, _) = choose_in(&judged, asked)?;
    if kind.samples_faults() {
        return Ok(Some(kind));
    }
    let here = sensors_here(&judged);
    Err(Failure::Input(match asked {
        None => format!("--sample-s: no sensor that samples works here ({here})"),
        Some(k) => format!(
            "--sensor: {} does not sample for stat (allowed with --sample-s: hint, softdirty; {here})",
            k.name()
        ),
    }))
}

/// Watch every thread of the chosen processes (softdirty: after clearing their bits).
fn watch(
    a: &StatArgs,
    kind: SensorKind,
    chosen: &[&numabal_live::Process],
) -> Result<FaultSampler, Failure> {
    let mut s = FaultSampler::new(1, 8);
    let mut errors = Vec::new();
    for p in chosen {
        for &(tid, _, _, _) in &p.threads {
            if let Err(e) = s.watch(p.stat.pid, tid) {
                errors.push(format!("{tid}: {e}"));
            }
        }
        if kind == SensorKind::SoftDirty {
            let _ = clear_soft_dirty(&a.root, p.stat.pid);
        }
    }
    if s.watched() == 0 {
        return Err(Failure::Input(format!(
            "--sample-s: no thread could be watched ({})",
            errors.join("; ")
        )));
    }
    Ok(s)
}

/// `--sample-s`: each chosen process's sampled accesses and the share from a CPU of the
/// page's node.
fn local_ratio(
    a: &StatArgs,
    kind: SensorKind,
    mut s: FaultSampler,
    chosen: &[&numabal_live::Process],
    cpu_nodes: &[Option<usize>],
) {
    let mut raw = Vec::new();
    let end = std::time::Instant::now() + std::time::Duration::from_secs_f64(a.sample_s);
    while std::time::Instant::now() < end {
        std::thread::sleep(std::time::Duration::from_millis(100));
        s.drain(&mut raw);
    }
    let pids: std::collections::BTreeSet<u32> = chosen.iter().map(|p| p.stat.pid).collect();
    let samples = numabal_live::daemon::resolve(&raw, &pids, cpu_nodes);
    outln!();
    outln!(
        "Local access ratio ({} sensor, {} s; {})",
        kind.name(),
        a.sample_s,
        kind.blind_spots()
    );
    outln!(
        "{:<28} {:>10} {:>10} {:>8}",
        "PID",
        "samples",
        "local",
        "ratio"
    );
    for p in chosen {
        let mine: Vec<_> = samples.iter().filter(|x| x.pid.0 == p.stat.pid).collect();
        let local = mine.iter().filter(|x| x.node == x.page_node).count();
        let ratio = if mine.is_empty() {
            "-".to_string()
        } else {
            format!("{:.3}", local as f64 / mine.len() as f64)
        };
        outln!(
            "{:<28} {:>10} {:>10} {:>8}",
            format!("{} ({})", p.stat.pid, p.name),
            mine.len(),
            local,
            ratio
        );
    }
}
