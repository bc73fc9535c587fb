//! twin-sample: runs the twin's workload and samples what /proc shows of it every second
//! (`numabal_testprogs::sample`).

use numabal_testprogs::cli_main;
use numabal_testprogs::sample::{Select, sample, workload_pids};
use std::io::Write;
use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

const USAGE: &str = "twin-sample --comm NAME --out FILE [--min-rss-kb N] -- COMMAND [ARG...]
  Runs COMMAND (its output goes where this program's goes) and, at its start and every
  whole second after until it exits, appends to FILE what /proc shows: /proc/vmstat's
  NUMA counters and, for each process whose name starts with NAME and that has at least
  N KiB resident (default 16384), its tasks' CPUs and NUMA fields and its pages per node.
  Exits with COMMAND's exit status.";

struct Args {
    comm: String,
    out: String,
    min_rss_kb: u64,
    cmd: Vec<String>,
}

fn parse(args: &[String]) -> Result<Option<Args>, String> {
    let (mut comm, mut out, mut min_rss_kb) = (None, None, 16384);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--help" | "-h" => return Ok(None),
            "--" => break,
            "--comm" | "--out" | "--min-rss-kb" => {
                let v = it.next().ok_or(format!("{a} needs a value"))?;
                match a.as_str() {
                    "--comm" => comm = Some(v.clone()),
                    "--out" => out = Some(v.clone()),
                    _ => {
                        min_rss_kb = v.parse().map_err(|_| {
                            format!("--min-rss-kb is {v} (allowed: a whole number of KiB)")
                        })?
                    }
                }
            }
            other => {
                return Err(format!(
                    "unknown argument `{other}` (allowed: --comm, --out, --min-rss-kb, --help, -- COMMAND)"
                ));
            }
        }
    }
    let cmd: Vec<String> = it.cloned().collect();
    Ok(Some(Args {
        comm: comm.ok_or("--comm is missing")?,
        out: out.ok_or("--out is missing")?,
        min_rss_kb,
        cmd: if cmd.is_empty() {
            return Err("no COMMAND after --".into());
        } else {
            cmd
        },
    }))
}

fn main() -> ExitCode {
    cli_main("twin-sample", USAGE, parse, |a| run(&a).map(ExitCode::from))
}

fn run(a: &Args) -> Result<u8, String> {
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&a.out)
        .map_err(|e| format!("cannot open {}: {e}", a.out))?;
    let root = Path::new("/");
    let sel = Select {
        comm: &a.comm,
        min_rss_kb: a.min_rss_kb,
    };
    let write = |out: &mut std::fs::File, s: String| {
        out.write_all(s.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", a.out))
    };
    // The counters before the workload: the baseline of every sample.
    write(&mut out, sample(root, 0.0, &[]))?;
    let t0 = Instant::now();
    let mut child = Command::new(&a.cmd[0])
        .args(&a.cmd[1..])
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", a.cmd[0]))?;
    let mut k = 1u64;
    loop {
        // Sleep to the next whole second since the start (skipping any already past).
        let next = t0 + Duration::from_secs(k);
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            k = t0.elapsed().as_secs() + 1;
            continue;
        }
        k += 1;
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            return Ok(status.code().unwrap_or(1).clamp(0, 255) as u8);
        }
        let t = t0.elapsed().as_secs_f64();
        write(&mut out, sample(root, t, &workload_pids(root, &sel)))?;
    }
}
