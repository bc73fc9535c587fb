//! numa-costs: what page faults, PTE changes, page moves and memory cost on this machine,
//! measured from user space (`numabal_testprogs::costs`). Prints one line per figure:
//! `cost NAME VALUE UNIT # how`.

use numabal_testprogs::cli_main;
use numabal_testprogs::costs::{Host, Run, figures};
use std::path::Path;
use std::process::ExitCode;

const USAGE: &str = "numa-costs [--mb N] [--runs N]
  Measures, on this machine, what the kernel's NUMA work and memory cost (first-touch
  faults, PTE changes, write-protect faults, move_pages per base page and per THP, TLB
  shootdown, thread spawn, /proc reads, one thread's write bandwidth and load latency,
  local and remote). Needs two nodes with CPUs.
  --mb N    memory per measurement, MiB, a multiple of 2 (default 64, 2 to 1024)
  --runs N  repetitions; each figure is their median (default 5, 1 to 100)";

fn parse(args: &[String]) -> Result<Option<(usize, usize)>, String> {
    let (mut mb, mut runs) = (64u64, 5u64);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (key, max, min) = match a.as_str() {
            "--help" | "-h" => return Ok(None),
            "--mb" => (&mut mb, 1024, 2),
            "--runs" => (&mut runs, 100, 1),
            other => {
                return Err(format!(
                    "unknown argument `{other}` (allowed: --mb, --runs, --help)"
                ));
            }
        };
        let v = it.next().ok_or(format!("{a} needs a value"))?;
        *key = v
            .parse()
            .ok()
            .filter(|n| (min..=max).contains(n))
            .ok_or(format!(
                "{a} is {v} (allowed: a whole number from {min} to {max})"
            ))?;
    }
    if mb % 2 != 0 {
        return Err(format!(
            "--mb is {mb} (allowed: a multiple of 2 MiB, to hold whole THPs)"
        ));
    }
    Ok(Some(((mb as usize) << 20, runs as usize)))
}

fn main() -> ExitCode {
    cli_main("numa-costs", USAGE, parse, |(bytes, runs)| {
        let host = Host::read(Path::new("/"))?;
        let measured = (0..runs)
            .map(|i| {
                eprintln!("numa-costs: run {} of {runs}", i + 1);
                Run::measure(&host, bytes)
            })
            .collect::<Result<Vec<_>, _>>()?;
        for f in figures(&measured, bytes) {
            println!("cost {} {:.3} {} # {}", f.name, f.value, f.unit, f.how);
        }
        Ok(ExitCode::SUCCESS)
    })
}
