//! numa02-like: one process, memory first-touched on one node, threads writing their own
//! slices (see the crate docs and `--help`).

use numabal_testprogs::{Prog, Sharing, main_with, run_process};
use std::process::ExitCode;

fn main() -> ExitCode {
    main_with(Prog::Numa02, |o| {
        run_process(Prog::Numa02, o, Sharing::Private)
    })
}
