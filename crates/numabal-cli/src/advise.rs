//! `numabal advise`: pre-placement advice like `numad -w CPUS:MB`, on an idle machine, on
//! the node state a simulated run ended in (`numabal sim --json`'s `node_state`), or on this
//! host as it is now (`--live`).

use crate::Failure;
use crate::fsresolver::FsResolver;
use crate::output::two_decimals;
use clap::Args;
use numabal_model::{InputError, Machine};
use numabal_policy::numad::{self, NodeRes};
use numabal_sim::RunResult;

#[derive(Args, Debug)]
pub struct AdviseArgs {
    /// Machine: a preset name or a TOML file (not with --live).
    #[arg(
        long,
        short = 'm',
        required_unless_present = "live",
        conflicts_with = "live"
    )]
    machine: Option<String>,
    /// Override a machine field (`machine.*`).
    #[arg(long = "set", value_name = "KEY=VALUE", conflicts_with = "live")]
    sets: Vec<String>,
    /// The JSON of a run (`numabal sim --json FILE`) on this machine: advise on the memory
    /// and CPU use it ended with (stop a run early with `--set sim.max_time_s=S`).
    /// Without it, the machine is idle.
    #[arg(long, value_name = "FILE", conflicts_with = "live")]
    state: Option<String>,
    /// Advise on this host as it is now, as `numad -w` does without a numad daemon: its
    /// nodes, their free memory (MemFree and Inactive(file), as numad counts it) and their
    /// free CPU over `--interval-ms`.
    #[arg(long)]
    live: bool,
    /// With --live: the window free CPU is measured over, ms (numad -w samples 2 s).
    #[arg(long, default_value_t = 2000, requires = "live", value_parser = clap::value_parser!(u64).range(10..=60_000))]
    interval_ms: u64,
    /// With --live: where the host's `/proc` and `/sys` are found (a fixture tree in tests).
    #[arg(long, default_value = "/", requires = "live")]
    root: std::path::PathBuf,
    /// CPUs the new process needs (decimals allowed: `1.5`).
    #[arg(long)]
    cpus: String,
    /// Memory it needs, MB.
    #[arg(long = "mem-mb")]
    mem_mb: u64,
    /// Print each node's free memory and CPU (numad's units) before the advice. (A request
    /// beyond every node's free memory or CPU together is warned about on stderr.)
    #[arg(long, short = 'v')]
    verbose: bool,
}

/// `--cpus` in hundredths, read like numad reads `-w` (two implied decimals).
fn parse_cpus(s: &str) -> Result<i64, InputError> {
    let bad = || {
        InputError::new(
            "command line",
            "--cpus",
            format!(
                "is `{s}` (allowed: a number of CPUs > 0 with at most 2 decimals, e.g. 5 or 1.5)"
            ),
        )
    };
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty() && frac.is_empty() || frac.len() > 2 {
        return Err(bad());
    }
    let i: i64 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| bad())?
    };
    let f: i64 = if frac.is_empty() {
        0
    } else {
        format!("{frac:0<2}").parse().map_err(|_| bad())?
    };
    if !(0..=1_000_000).contains(&i) || frac.starts_with(['+', '-']) {
        return Err(bad());
    }
    let v = i * 100 + f;
    if v <= 0 {
        return Err(bad());
    }
    Ok(v)
}

/// An idle machine as numad sees it: all CPUs free, all memory but the kernel's free.
fn idle_nodes(m: &Machine, htt: u32) -> Vec<NodeRes> {
    let totals = numad::node_cpus_total(m, htt);
    m.nodes
        .iter()
        .enumerate()
        .map(|(n, nd)| NodeRes {
            mbs_total: (nd.memory_bytes / numad::MEGABYTE) as i64,
            mbs_free: ((nd.memory_bytes - nd.reserved_bytes) / numad::MEGABYTE) as i64,
            cpus_total: totals[n],
            cpus_free: totals[n],
        })
        .collect()
}

/// The nodes as a run left them.
fn state_nodes(m: &Machine, path: &str, htt: u32) -> Result<Vec<NodeRes>, InputError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| InputError::new(path, "file", format!("cannot read: {e}")))?;
    let r: RunResult = crate::output::parse_saved(&text).map_err(|why| {
        InputError::new(
            path,
            "node_state",
            format!("not the JSON of `numabal sim --json`: {why}"),
        )
    })?;
    if r.scenario.machine != m.name() {
        return Err(InputError::new(
            path,
            "scenario.machine",
            format!(
                "is `{}` (allowed: `{}`, the --machine given)",
                r.scenario.machine,
                m.name()
            ),
        ));
    }
    let st = &r.node_state;
    if st.nodes.len() != m.nr_nodes() {
        return Err(InputError::new(
            path,
            "node_state.nodes",
            format!(
                "has {} nodes (allowed: {}, the nodes of {})",
                st.nodes.len(),
                m.nr_nodes(),
                m.name()
            ),
        ));
    }
    let totals = numad::node_cpus_total(m, htt);
    Ok(st
        .nodes
        .iter()
        .enumerate()
        .map(|(n, s)| NodeRes {
            mbs_total: (s.mem_total_bytes / numad::MEGABYTE) as i64,
            mbs_free: (s.mem_free_bytes / numad::MEGABYTE) as i64,
            cpus_total: totals[n],
            cpus_free: if st.window_ns == 0 {
                totals[n]
            } else {
                numad::node_cpus_free(m, n, s.cpu_idle_ns, st.window_ns, htt, totals[n])
            },
        })
        .collect())
}

/// This host's nodes as `numad -w` without a daemon sees them: free memory at the end of
/// the window, free CPU from the idle time over it.
fn live_nodes(
    root: &std::path::Path,
    interval_ms: u64,
    htt: u32,
) -> Result<(Machine, Vec<NodeRes>), Failure> {
    let topo = numabal_live::read_topology(root)?;
    let m = numabal_live::machine_of(root, &topo)?;
    let ncpus = topo.nr_cpu_ids();
    let (t0, idle0) = (
        std::time::Instant::now(),
        numabal_live::observe::read_cpu_idle(root, ncpus)?,
    );
    std::thread::sleep(std::time::Duration::from_millis(interval_ms));
    let idle1 = numabal_live::observe::read_cpu_idle(root, ncpus)?;
    let gap_ns = t0.elapsed().as_nanos() as u64;
    let now = numabal_live::read_topology(root)?;
    let totals = numad::node_cpus_total(&m, htt);
    let nodes = (now.nodes.iter().enumerate())
        .map(|(n, nd)| NodeRes {
            mbs_total: (nd.mem_total_bytes / numad::MEGABYTE) as i64,
            mbs_free: (nd.free_bytes() / numad::MEGABYTE) as i64,
            cpus_total: totals[n],
            cpus_free: numad::node_cpus_free(
                &m,
                n,
                numad::node_idle_ns(&m, n, &idle0, &idle1),
                gap_ns,
                htt,
                totals[n],
            ),
        })
        .collect();
    Ok((m, nodes))
}

pub fn advise(a: &AdviseArgs) -> Result<(), Failure> {
    let cpus = parse_cpus(&a.cpus)?;
    if a.mem_mb == 0 {
        return Err(InputError::new("command line", "--mem-mb", "is 0 (allowed: MB > 0)").into());
    }
    let htt = numad::Tunables::default().t;
    let (m, nodes) = match (&a.machine, &a.state) {
        (None, _) => live_nodes(&a.root, a.interval_ms, htt)?,
        (Some(name), state) => {
            let m = numabal_model::scenario::load_machine(name, &a.sets, &FsResolver)?;
            let nodes = match state {
                Some(p) => state_nodes(&m, p, htt)?,
                None => idle_nodes(&m, htt),
            };
            (m, nodes)
        }
    };
    if a.verbose {
        for (n, nd) in nodes.iter().enumerate() {
            outln!(
                "Node {n}: MBs_total {}, MBs_free {}, CPUs_total {}, CPUs_free {}",
                nd.mbs_total,
                nd.mbs_free,
                nd.cpus_total,
                nd.cpus_free
            );
        }
    }
    for w in beyond_the_machine(&nodes, cpus, &a.cpus, a.mem_mb as i64, htt) {
        eprintln!("numabal: warning: {w}; numad's answer, every node, follows");
    }
    let target = numad::advise(&nodes, &m.distance, cpus, a.mem_mb as i64);
    outln!("{}", target.to_list_string());
    Ok(())
}

/// What the request asks beyond every node's free memory or CPU together: no node set can
/// hold it (numad answers every node without a word). `cpus` in hundredths, `cpus_written`
/// as the user wrote it; `htt`, the percent of a core a hyperthread sibling counts.
fn beyond_the_machine(
    nodes: &[NodeRes],
    cpus: i64,
    cpus_written: &str,
    mbs: i64,
    htt: u32,
) -> Vec<String> {
    let free_mbs: i64 = nodes.iter().map(|n| n.mbs_free).sum();
    let free_cpus: i64 = nodes.iter().map(|n| n.cpus_free).sum();
    let n = nodes.len();
    let mut w = Vec::new();
    if mbs > free_mbs {
        w.push(format!(
            "--mem-mb {mbs}: no set of nodes can hold it (the {n} nodes have {free_mbs} MB \
             free in all)"
        ));
    }
    if cpus > free_cpus {
        w.push(format!(
            "--cpus {cpus_written}: no set of nodes can hold it (the {n} nodes have {} CPUs \
             free in all, a hyperthread sibling counting {htt}% of a core)",
            two_decimals(free_cpus as f64 / 100.0),
        ));
    }
    w
}
