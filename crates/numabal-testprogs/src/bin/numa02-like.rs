//! numa02-like: one process, memory first-touched on one node, threads writing their own
//! slices (see the crate docs and `--help`).

use numabal_testprogs::{Parsed, Prog, Sharing, parse_args, run_process};
use std::process::ExitCode;

fn main() -> ExitCode {
    let prog = Prog::Numa02;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = match parse_args(prog, &args) {
        Ok(Parsed::Help) => {
            println!("{}", prog.usage());
            return ExitCode::SUCCESS;
        }
        Ok(Parsed::Run(o)) => o,
        Err(e) => {
            eprintln!("{}: error: {e} (try --help)", prog.name());
            return ExitCode::from(2);
        }
    };
    match run_process(prog, &o, Sharing::Private) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{}: error: {e}", prog.name());
            ExitCode::FAILURE
        }
    }
}
