//! spawner: short-lived processes as fast as it can start them, for the daemon's storm
//! scenario (scripts/vm/scenarios/daemon-storm.sh): a shell loop of `/bin/true` forks a
//! shell and execs busybox each time, which a TCG guest does about 170 times a second with
//! eight loops; `posix_spawn` (std's `Command`) of a small program from several threads
//! starts more.

use numabal_testprogs::cli_main;
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const USAGE: &str = "spawner [--threads T] [--seconds S] [PROGRAM]
  Starts PROGRAM (default /bin/true) over and over from T threads (default 8) for S
  seconds (default 60), each waiting for its child, then prints
    spawner started=N seconds=S per_second=R";

struct Options {
    threads: usize,
    seconds: u64,
    program: String,
}

fn parse(args: &[String]) -> Result<Option<Options>, String> {
    let mut o = Options {
        threads: 8,
        seconds: 60,
        program: "/bin/true".into(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut number = |what: &str, max: u64| -> Result<u64, String> {
            let v = it.next().ok_or(format!("{a} needs a value"))?;
            match v.parse::<u64>() {
                Ok(n) if (1..=max).contains(&n) => Ok(n),
                _ => Err(format!("{a}: {v:?} is not {what} (allowed: 1 to {max})")),
            }
        };
        match a.as_str() {
            "--help" | "-h" => return Ok(None),
            "--threads" => o.threads = number("a thread count", 256)? as usize,
            "--seconds" => o.seconds = number("a number of seconds", 86_400)?,
            p if !p.starts_with('-') => o.program = p.to_string(),
            _ => return Err(format!("unknown option {a:?}")),
        }
    }
    Ok(Some(o))
}

fn run(o: Options) -> Result<ExitCode, String> {
    let started = AtomicU64::new(0);
    let failed = AtomicU64::new(0);
    let t0 = Instant::now();
    let end = t0 + Duration::from_secs(o.seconds);
    std::thread::scope(|s| {
        for _ in 0..o.threads {
            s.spawn(|| {
                while Instant::now() < end {
                    let r = Command::new(&o.program)
                        .stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .status();
                    let n = if r.is_ok() { &started } else { &failed };
                    n.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    let (n, f) = (
        started.load(Ordering::Relaxed),
        failed.load(Ordering::Relaxed),
    );
    if n == 0 {
        return Err(format!("could not start {} ({f} tries)", o.program));
    }
    let s = t0.elapsed().as_secs_f64();
    println!(
        "spawner started={n} seconds={s:.1} per_second={:.0}",
        n as f64 / s
    );
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    cli_main("spawner", USAGE, parse, run)
}
