//! Workloads for the QEMU NUMA guests (`scripts/vm/`, docs/vm-tests.md), shaped like
//! Andrea Arcangeli's autonuma-benchmark:
//!
//! ```text
//!  numa01-like  N processes; each first-touches its buffer on one node, then T threads all
//!               write the whole buffer (shared by the process's threads)
//!  numa02-like  one process; buffer first-touched on one node, then T threads each write
//!               their own slice (thread-private data)
//! ```
//!
//! "First-touched on a node": the main thread is pinned to that node's CPUs while it writes
//! every page, so the kernel's default local policy puts all of it there; then the thread's
//! affinity goes back to every online CPU, so neither the process nor its threads look
//! "narrowed" to a balancer. Memory is a `Vec<AtomicU64>` written with relaxed stores (plain
//! moves on x86), so threads share it without `unsafe`.
//!
//! `--mem-node K` then moves the whole buffer to node K with `move_pages(2)` before any
//! writer starts, so the writers begin on memory of node K, a CPU-less slow node too, under
//! the default policy: the kernel's NUMA balancing may move (or, in its tiering mode,
//! promote) it. (`mbind`/`set_mempolicy` around the first touch would place it there
//! directly; numabal's one module of system calls, `numabal_live::sys`, has no wrapper for
//! them, and `move_pages` leaves the same pages on node K with no policy to reset.)

pub mod costs;
pub mod sample;

use numabal_model::Mask;
use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Which program is parsing its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prog {
    Numa01,
    Numa02,
}

impl Prog {
    pub fn name(self) -> &'static str {
        match self {
            Prog::Numa01 => "numa01-like",
            Prog::Numa02 => "numa02-like",
        }
    }

    pub fn usage(self) -> String {
        match self {
            Prog::Numa01 => format!(
                "usage: numa01-like [--procs N] [--mb M] [--threads T] [--seconds S] [--node K]\n\
                 \x20                  [--mem-node L]\n\
                 \n\
                 N processes (default {DEFAULT_PROCS}), each with M MiB (default {DEFAULT_MB}) \
                 first-touched from node K's CPUs\n\
                 (default node 0), then T threads (default: the number of CPUs of node K) \
                 that all write\n\
                 the whole process buffer for S seconds (default {DEFAULT_SECONDS}). Prints \
                 `numa01-like pid=P mb=M threads=T ...`\n\
                 per process once its memory is placed and `numa01-like pid=P iterations=I ...` \
                 at the end.\n\
                 {MEM_NODE_USAGE}"
            ),
            Prog::Numa02 => format!(
                "usage: numa02-like [--mb M] [--threads T] [--seconds S] [--node K] \
                 [--mem-node L]\n\
                 \n\
                 One process with M MiB (default {DEFAULT_MB}) first-touched from node K's CPUs \
                 (default node 0),\n\
                 then T threads (default: every online CPU) each writing only its own slice \
                 for S seconds\n\
                 (default {DEFAULT_SECONDS}). Prints `numa02-like pid=P mb=M threads=T ...` \
                 once its memory is placed\n\
                 and `numa02-like pid=P iterations=I ...` at the end.\n\
                 {MEM_NODE_USAGE}"
            ),
        }
    }
}

/// `--mem-node` in both programs' usage.
const MEM_NODE_USAGE: &str = "With --mem-node L the memory is then moved to node L \
     (move_pages(2); no memory policy is\nset) before any writer starts; node L may have no \
     CPUs. The start line ends in `mem_node=L`.";

pub const DEFAULT_PROCS: usize = 2;
pub const DEFAULT_MB: u64 = 128;
pub const DEFAULT_SECONDS: u64 = 60;

const MAX_PROCS: u64 = 256;
const MAX_THREADS: u64 = 1024;
const MAX_MB: u64 = 1 << 20;
const MAX_SECONDS: u64 = 7 * 24 * 3600;
const MAX_NODE: u64 = 4095;

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// numa01-like: worker processes to start.
    pub procs: usize,
    /// MiB per process.
    pub mb: u64,
    /// Threads per process; `None`: the program's machine-dependent default.
    pub threads: Option<usize>,
    pub seconds: u64,
    /// The node whose CPUs first-touch the memory.
    pub node: usize,
    /// The node the memory is moved to after the first touch, before the writers start.
    pub mem_node: Option<usize>,
    /// numa01-like internal: be one worker process (how the parent starts its children).
    pub child: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            procs: DEFAULT_PROCS,
            mb: DEFAULT_MB,
            threads: None,
            seconds: DEFAULT_SECONDS,
            node: 0,
            mem_node: None,
            child: false,
        }
    }
}

/// Result of parsing: run, or print the usage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    Help,
    Run(Options),
}

fn number(opt: &str, v: &str, min: u64, max: u64) -> Result<u64, String> {
    match v.parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(format!(
            "{opt} takes a whole number from {min} to {max}, got `{v}`"
        )),
    }
}

/// Parse the arguments after the program name. `--opt VALUE` and `--opt=VALUE` both work.
pub fn parse_args(prog: Prog, args: &[String]) -> Result<Parsed, String> {
    let mut o = Options::default();
    let mut procs_given = false;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (opt, inline) = match arg.split_once('=') {
            Some((a, v)) if a.starts_with("--") => (a, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let takes_value = matches!(
            opt,
            "--procs" | "--mb" | "--threads" | "--seconds" | "--node" | "--mem-node"
        );
        if !takes_value && inline.is_some() {
            return Err(format!("{opt} takes no value"));
        }
        let mut value = || -> Result<String, String> {
            match &inline {
                Some(v) => Ok(v.clone()),
                None => it.next().cloned().ok_or(format!("{opt} needs a value")),
            }
        };
        match opt {
            "-h" | "--help" => return Ok(Parsed::Help),
            "--procs" if prog == Prog::Numa01 => {
                o.procs = number(opt, &value()?, 1, MAX_PROCS)? as usize;
                procs_given = true;
            }
            "--mb" => o.mb = number(opt, &value()?, 1, MAX_MB)?,
            "--threads" => o.threads = Some(number(opt, &value()?, 1, MAX_THREADS)? as usize),
            "--seconds" => o.seconds = number(opt, &value()?, 1, MAX_SECONDS)?,
            "--node" => o.node = number(opt, &value()?, 0, MAX_NODE)? as usize,
            "--mem-node" => o.mem_node = Some(number(opt, &value()?, 0, MAX_NODE)? as usize),
            "--child" if prog == Prog::Numa01 => o.child = true,
            _ => return Err(format!("unknown argument `{arg}`")),
        }
    }
    if o.child && procs_given {
        return Err("--child runs one worker process; it takes no --procs".into());
    }
    Ok(Parsed::Run(o))
}

/// The arguments a numa01-like parent gives each child.
pub fn child_args(o: &Options) -> Vec<String> {
    let mut a = vec![
        "--child".to_string(),
        format!("--mb={}", o.mb),
        format!("--seconds={}", o.seconds),
        format!("--node={}", o.node),
    ];
    if let Some(t) = o.threads {
        a.push(format!("--threads={t}"));
    }
    if let Some(n) = o.mem_node {
        a.push(format!("--mem-node={n}"));
    }
    a
}

/// A cpulist file (`0-1,4`) under `root` (normally `/`).
fn read_list(root: &Path, rel: &str) -> Result<Mask, String> {
    let path = root.join(rel);
    let text =
        fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Mask::parse_list(&text, None).map_err(|e| format!("{}: {e}", path.display()))
}

/// The CPUs of `node` (`/sys/devices/system/node/nodeN/cpulist`); an error if it has none.
pub fn node_cpus(root: &Path, node: usize) -> Result<Mask, String> {
    let m = read_list(root, &format!("sys/devices/system/node/node{node}/cpulist"))?;
    if m.is_empty() {
        return Err(format!(
            "node {node} has no CPUs to first-touch its memory from"
        ));
    }
    Ok(m)
}

/// Every online CPU (`/sys/devices/system/cpu/online`).
pub fn online_cpus(root: &Path) -> Result<Mask, String> {
    let m = read_list(root, "sys/devices/system/cpu/online")?;
    if m.is_empty() {
        return Err("no online CPUs listed in /sys/devices/system/cpu/online".into());
    }
    Ok(m)
}

/// `mb` MiB of words, every one written (so every page is faulted in by this thread).
pub fn alloc_touched(mb: u64) -> Result<Vec<AtomicU64>, String> {
    let words = mb
        .checked_mul(1 << 20)
        .map(|b| b / 8)
        .and_then(|w| usize::try_from(w).ok())
        .ok_or(format!("{mb} MiB does not fit in this address space"))?;
    let mut v: Vec<AtomicU64> = Vec::new();
    v.try_reserve_exact(words)
        .map_err(|e| format!("cannot allocate {mb} MiB: {e}"))?;
    v.extend((0..words).map(|_| AtomicU64::new(1)));
    Ok(v)
}

/// Base pages of this machine (`move_pages` addresses one per page).
const PAGE: usize = 4096;

/// Move every page of `words` to `node` with `move_pages(2)` (this process's own pages,
/// `MPOL_MF_MOVE`; a THP moves whole at its first address). Returns the pages that are not
/// on `node` afterwards (a full node, a busy page), asked of the kernel again: the status
/// `move_pages` gives the second address of a THP it has just queued is `-EBUSY`, though
/// the THP then moves.
pub fn move_to_node(words: &[AtomicU64], node: usize) -> Result<usize, String> {
    if words.is_empty() {
        return Ok(0);
    }
    let start = words.as_ptr() as usize;
    let end = start + std::mem::size_of_val(words);
    let addrs: Vec<usize> = (start / PAGE..end.div_ceil(PAGE))
        .map(|p| p * PAGE)
        .collect();
    let pid = std::process::id();
    let mut unmoved = 0;
    for batch in addrs.chunks(1024) {
        numabal_live::sys::move_pages_to(pid, batch, node)
            .map_err(|e| format!("cannot move the memory to node {node}: move_pages: {e}"))?;
    }
    for batch in addrs.chunks(1024) {
        let at = numabal_live::sys::query_nodes(pid, batch)
            .map_err(|e| format!("cannot ask where the memory is: move_pages: {e}"))?;
        unmoved += at.iter().filter(|&&s| s != node as i32).count();
    }
    Ok(unmoved)
}

/// Words between deadline checks (512 KiB).
const CHUNK: usize = 1 << 16;

/// Write `value` over all of `words`, starting at `start` and wrapping around. Returns
/// whether the pass finished before `deadline`.
pub fn write_pass(words: &[AtomicU64], start: usize, value: u64, deadline: Instant) -> bool {
    let start = if words.is_empty() {
        0
    } else {
        start % words.len()
    };
    let (head, tail) = words.split_at(start);
    for part in [tail, head] {
        for chunk in part.chunks(CHUNK) {
            if Instant::now() >= deadline {
                return false;
            }
            for w in chunk {
                w.store(value, Ordering::Relaxed);
            }
        }
    }
    true
}

/// How the threads of a process share its buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    /// Every thread writes the whole buffer (numa01): thread `i` starts at `i/T` of it.
    Shared,
    /// Thread `i` writes only slice `i` of `T` (numa02).
    Private,
}

/// The part of `len` words thread `i` of `threads` writes: (offset, length).
pub fn slice_of(len: usize, threads: usize, i: usize, sharing: Sharing) -> (usize, usize) {
    let threads = threads.max(1);
    let per = len / threads;
    match sharing {
        Sharing::Shared => (per * i, len),
        Sharing::Private if i + 1 == threads => (per * i, len - per * i),
        Sharing::Private => (per * i, per),
    }
}

/// Run `threads` writer threads over `words` for `seconds`; the complete passes of each.
pub fn run_writers(
    words: &[AtomicU64],
    threads: usize,
    sharing: Sharing,
    seconds: u64,
) -> Result<Vec<u64>, String> {
    if sharing == Sharing::Private && words.len() < threads {
        return Err(format!(
            "{} words cannot be split among {threads} threads",
            words.len()
        ));
    }
    let deadline = Instant::now() + Duration::from_secs(seconds);
    std::thread::scope(|s| {
        let mut handles = Vec::with_capacity(threads);
        for i in 0..threads {
            let (off, len) = slice_of(words.len(), threads, i, sharing);
            let (mine, start) = match sharing {
                Sharing::Shared => (words, off),
                Sharing::Private => (&words[off..off + len], 0),
            };
            let h = std::thread::Builder::new()
                .spawn_scoped(s, move || {
                    let mut passes = 0u64;
                    while write_pass(mine, start, passes + 2, deadline) {
                        passes += 1;
                    }
                    passes
                })
                .map_err(|e| format!("cannot start thread {i}: {e}"))?;
            handles.push(h);
        }
        handles
            .into_iter()
            .enumerate()
            .map(|(i, h)| h.join().map_err(|_| format!("writer thread {i} panicked")))
            .collect()
    })
}

/// One worker process: place the memory, print the start line, write, print the end line.
pub fn run_process(prog: Prog, o: &Options, sharing: Sharing) -> Result<(), String> {
    let root = Path::new("/");
    let node = node_cpus(root, o.node)?;
    let all = online_cpus(root)?;
    let threads = match o.threads {
        Some(t) => t,
        None => match prog {
            Prog::Numa01 => node.count(),
            Prog::Numa02 => all.count(),
        },
    };
    let tid = numabal_live::sys::gettid();
    // Its own mask as the kernel keeps it (a CPU offline now included), given back after
    // the first touch: a program that set the online CPUs would narrow itself once an
    // offline CPU came back.
    let own = numabal_live::actuate::affinity_now(tid).unwrap_or_else(|_| all.clone());
    numabal_live::sys::set_affinity(tid, &node).map_err(|e| {
        format!(
            "cannot pin to node {}'s CPUs {}: {e}",
            o.node,
            node.to_list_string()
        )
    })?;
    let words = alloc_touched(o.mb)?;
    numabal_live::sys::set_affinity(tid, &own).map_err(|e| {
        format!(
            "cannot restore affinity to CPUs {}: {e}",
            own.to_list_string()
        )
    })?;
    // Moved before any writer exists: no access races the move (nothing to stop).
    let moved = match o.mem_node {
        None => String::new(),
        Some(n) => match move_to_node(&words, n)? {
            0 => format!(" mem_node={n}"),
            u => format!(" mem_node={n} unmoved_pages={u}"),
        },
    };
    let pid = std::process::id();
    let name = prog.name();
    println!(
        "{name} pid={pid} mb={} threads={threads} touched_on_node={} affinity={}{moved}",
        o.mb,
        o.node,
        own.to_list_string()
    );
    let passes = run_writers(&words, threads, sharing, o.seconds)?;
    let total: u64 = passes.iter().sum();
    let each: Vec<String> = passes.iter().map(u64::to_string).collect();
    println!(
        "{name} pid={pid} iterations={total} per_thread={} seconds={}",
        each.join(","),
        o.seconds
    );
    Ok(())
}

/// A program's `main`: `parse` the command line (`None`: `--help`, which prints `usage`; a
/// bad argument is one line and exit status 2), then `run` what it gives; an error of
/// `run` is one line and exit status 1.
pub fn cli_main<A>(
    name: &str,
    usage: &str,
    parse: impl FnOnce(&[String]) -> Result<Option<A>, String>,
    run: impl FnOnce(A) -> Result<std::process::ExitCode, String>,
) -> std::process::ExitCode {
    use std::process::ExitCode;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let a = match parse(&args) {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{usage}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("{name}: error: {e} (try --help)");
            return ExitCode::from(2);
        }
    };
    run(a).unwrap_or_else(|e| {
        eprintln!("{name}: error: {e}");
        ExitCode::FAILURE
    })
}

/// numa01-like's and numa02-like's `main` ([`cli_main`] with their options).
pub fn main_with(
    prog: Prog,
    run: impl FnOnce(&Options) -> Result<(), String>,
) -> std::process::ExitCode {
    let parse = |args: &[String]| {
        parse_args(prog, args).map(|p| match p {
            Parsed::Help => None,
            Parsed::Run(o) => Some(o),
        })
    };
    cli_main(prog.name(), &prog.usage(), parse, |o| {
        run(&o).map(|()| std::process::ExitCode::SUCCESS)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn run(prog: Prog, s: &str) -> Options {
        match parse_args(prog, &args(s)) {
            Ok(Parsed::Run(o)) => o,
            other => panic!("{s}: {other:?}"),
        }
    }

    fn err(prog: Prog, s: &str) -> String {
        match parse_args(prog, &args(s)) {
            Err(e) => e,
            other => panic!("{s}: expected an error, got {other:?}"),
        }
    }

    #[test]
    fn defaults() {
        let o = run(Prog::Numa01, "");
        assert_eq!(o, Options::default());
        assert_eq!(
            (o.procs, o.mb, o.threads, o.seconds, o.node),
            (2, 128, None, 60, 0)
        );
        assert_eq!(run(Prog::Numa02, ""), Options::default());
    }

    #[test]
    fn separate_and_inline_values() {
        let o = run(
            Prog::Numa01,
            "--procs 4 --mb=64 --threads 3 --seconds=10 --node 1",
        );
        assert_eq!(
            o,
            Options {
                procs: 4,
                mb: 64,
                threads: Some(3),
                seconds: 10,
                node: 1,
                mem_node: None,
                child: false
            }
        );
        let o = run(Prog::Numa02, "--threads=8 --mb 16");
        assert_eq!((o.threads, o.mb), (Some(8), 16));
        for p in [Prog::Numa01, Prog::Numa02] {
            assert_eq!(run(p, "--mem-node 2").mem_node, Some(2));
            assert_eq!(run(p, "--mem-node=0").mem_node, Some(0));
            assert_eq!(err(p, "--mem-node"), "--mem-node needs a value",);
            assert_eq!(
                err(p, "--mem-node 4096"),
                "--mem-node takes a whole number from 0 to 4095, got `4096`"
            );
        }
    }

    #[test]
    fn help() {
        for p in [Prog::Numa01, Prog::Numa02] {
            assert_eq!(parse_args(p, &args("--mb 3 -h")), Ok(Parsed::Help));
            assert_eq!(parse_args(p, &args("--help")), Ok(Parsed::Help));
            assert!(p.usage().starts_with(&format!("usage: {}", p.name())));
        }
    }

    #[test]
    fn bad_values_are_one_line_errors() {
        for (p, s, want) in [
            (Prog::Numa01, "--mb", "--mb needs a value"),
            (
                Prog::Numa01,
                "--mb x",
                "--mb takes a whole number from 1 to 1048576, got `x`",
            ),
            (
                Prog::Numa01,
                "--mb=0",
                "--mb takes a whole number from 1 to 1048576, got `0`",
            ),
            (
                Prog::Numa01,
                "--mb -5",
                "--mb takes a whole number from 1 to 1048576, got `-5`",
            ),
            (
                Prog::Numa01,
                "--procs 0",
                "--procs takes a whole number from 1 to 256, got `0`",
            ),
            (
                Prog::Numa01,
                "--threads 1.5",
                "--threads takes a whole number from 1 to 1024, got `1.5`",
            ),
            (
                Prog::Numa02,
                "--seconds 0",
                "--seconds takes a whole number from 1 to 604800, got `0`",
            ),
            (
                Prog::Numa02,
                "--node=99999",
                "--node takes a whole number from 0 to 4095, got `99999`",
            ),
            (
                Prog::Numa01,
                "--seconds 99999999999999999999999",
                "--seconds takes a whole number from 1 to 604800, got `99999999999999999999999`",
            ),
        ] {
            let e = err(p, s);
            assert_eq!(e, want, "{s}");
            assert!(!e.contains('\n'));
        }
    }

    #[test]
    fn unknown_and_misplaced_arguments() {
        assert_eq!(err(Prog::Numa01, "--bogus"), "unknown argument `--bogus`");
        assert_eq!(err(Prog::Numa01, "10"), "unknown argument `10`");
        assert_eq!(err(Prog::Numa02, "--procs 2"), "unknown argument `--procs`");
        assert_eq!(err(Prog::Numa02, "--child"), "unknown argument `--child`");
        assert_eq!(err(Prog::Numa01, "--help=yes"), "--help takes no value");
        assert_eq!(
            err(Prog::Numa01, "--child --procs 2"),
            "--child runs one worker process; it takes no --procs"
        );
    }

    #[test]
    fn child_arguments_round_trip() {
        let o = run(
            Prog::Numa01,
            "--procs 3 --mb 7 --seconds 5 --node 2 --threads 4 --mem-node 3",
        );
        let c = child_args(&o);
        let back = match parse_args(Prog::Numa01, &c) {
            Ok(Parsed::Run(b)) => b,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            back,
            Options {
                procs: DEFAULT_PROCS,
                child: true,
                ..o.clone()
            }
        );
        let o = run(Prog::Numa01, "--mb 7");
        assert!(
            !child_args(&o)
                .iter()
                .any(|a| a.starts_with("--threads") || a.starts_with("--mem-node"))
        );
    }

    #[test]
    fn cpulists_from_sysfs() {
        let d = tempfile::tempdir().unwrap();
        let n0 = d.path().join("sys/devices/system/node/node0");
        let n1 = d.path().join("sys/devices/system/node/node1");
        let cpu = d.path().join("sys/devices/system/cpu");
        for p in [&n0, &n1, &cpu] {
            fs::create_dir_all(p).unwrap();
        }
        fs::write(n0.join("cpulist"), "0-1,4\n").unwrap();
        fs::write(n1.join("cpulist"), "\n").unwrap();
        fs::write(cpu.join("online"), "0-7\n").unwrap();
        assert_eq!(node_cpus(d.path(), 0).unwrap(), Mask::from_ids([0, 1, 4]));
        assert_eq!(
            node_cpus(d.path(), 1).unwrap_err(),
            "node 1 has no CPUs to first-touch its memory from"
        );
        assert!(
            node_cpus(d.path(), 2)
                .unwrap_err()
                .starts_with("cannot read ")
        );
        assert_eq!(online_cpus(d.path()).unwrap(), Mask::full(8));
    }

    #[test]
    fn slices() {
        assert_eq!(slice_of(10, 3, 0, Sharing::Private), (0, 3));
        assert_eq!(slice_of(10, 3, 2, Sharing::Private), (6, 4));
        assert_eq!(slice_of(10, 3, 1, Sharing::Shared), (3, 10));
        let total: usize = (0..3).map(|i| slice_of(10, 3, i, Sharing::Private).1).sum();
        assert_eq!(total, 10);
    }

    #[test]
    fn writers_cover_the_buffer() {
        let w = alloc_touched(1).unwrap();
        assert_eq!(w.len(), (1 << 20) / 8);
        assert!(write_pass(
            &w,
            5,
            9,
            Instant::now() + Duration::from_secs(60)
        ));
        assert!(w.iter().all(|x| x.load(Ordering::Relaxed) == 9));
        // Past the deadline: nothing written.
        assert!(!write_pass(&w, 0, 3, Instant::now()));
        assert!(w.iter().all(|x| x.load(Ordering::Relaxed) == 9));
        for sharing in [Sharing::Shared, Sharing::Private] {
            let passes = run_writers(&w, 3, sharing, 1).unwrap();
            assert_eq!(passes.len(), 3);
            assert!(passes.iter().all(|&p| p > 0), "{passes:?}");
        }
        assert!(run_writers(&w[..2], 3, Sharing::Private, 1).is_err());
    }
}
