//! placement: where processes are, one line each, as the daemon scenarios' `placed` shell
//! function prints it, in one program start (the shell's few dozen take seconds in a
//! loaded TCG guest, and made the scenarios' polls 6-8 s apart).

use numabal_testprogs::cli_main;
use numabal_testprogs::sample::{Placement, cpu_nodes};
use std::path::Path;
use std::process::ExitCode;

const USAGE: &str = "placement PID...
  For each PID still running, prints
    pid=P thread_nodes=[NODES] mem_node=M mem_frac=F mem_mb=MB
  (the nodes its workers, every task but the main thread, last ran on; the node holding
  most of its memory, numa_maps; that node's share; its memory in MiB). Exit status 0 when
  every PID runs with its workers on one node holding at least 90% of its memory, 1
  otherwise, 2 on a bad argument.";

fn parse(args: &[String]) -> Result<Option<Vec<u32>>, String> {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        return Ok(None);
    }
    if args.is_empty() {
        return Err("no PID given".into());
    }
    (args.iter())
        .map(|a| {
            a.parse()
                .map_err(|_| format!("{a:?} is not a pid (a whole number)"))
        })
        .collect::<Result<Vec<u32>, String>>()
        .map(Some)
}

fn run(pids: Vec<u32>) -> Result<ExitCode, String> {
    let root = Path::new("/");
    let nodes = cpu_nodes(root);
    let mut all = true;
    for pid in pids {
        match Placement::of(root, pid, &nodes) {
            Some(p) => {
                all &= p.placed();
                println!("{}", p.line());
            }
            None => all = false,
        }
    }
    Ok(if all {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn main() -> ExitCode {
    cli_main("placement", USAGE, parse, run)
}
