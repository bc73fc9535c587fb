//! numa01-like: N processes, each with its memory first-touched on one node and T threads
//! writing all of it (see the crate docs and `--help`). The parent re-executes itself with
//! `--child` once per process and waits for them.

use numabal_testprogs::{Options, Prog, Sharing, child_args, main_with, run_process};
use std::process::{Child, Command, ExitCode};

fn spawn_children(o: &Options) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find my own binary: {e}"))?;
    let mut children: Vec<Child> = Vec::with_capacity(o.procs);
    for i in 0..o.procs {
        match Command::new(&exe).args(child_args(o)).spawn() {
            Ok(c) => children.push(c),
            Err(e) => {
                for c in &mut children {
                    let _ = c.kill();
                    let _ = c.wait();
                }
                return Err(format!("cannot start process {i} ({}): {e}", exe.display()));
            }
        }
    }
    let mut failed = Vec::new();
    for mut c in children {
        let pid = c.id();
        match c.wait() {
            Ok(s) if s.success() => {}
            Ok(s) => failed.push(format!("pid {pid} {s}")),
            Err(e) => failed.push(format!("pid {pid}: {e}")),
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("worker processes failed: {}", failed.join("; ")))
    }
}

fn main() -> ExitCode {
    main_with(Prog::Numa01, |o| {
        if o.child {
            run_process(Prog::Numa01, o, Sharing::Shared)
        } else {
            spawn_children(o)
        }
    })
}
