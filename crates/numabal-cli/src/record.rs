//! `numabal record`: this host's observations as a versioned JSON-lines recording (the
//! header with the topology, then one pass per interval), flushed pass by pass so an
//! interrupted recording keeps every finished pass. Replay through the simulator's
//! policies is still to come (issue 6).

use crate::Failure;
use clap::Args;
use numabal_live::daemon::MIN_INTERVAL_MS;
use numabal_live::record::{RECORD_VERSION, RecordHeader, RecordPass, write_line};
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct RecordArgs {
    /// The recording (JSON lines; an existing file is replaced).
    #[arg(long, short = 'o', value_name = "FILE")]
    out: PathBuf,
    /// Seconds between the starts of passes, 0.01 to 86400.
    #[arg(long, default_value_t = 5.0)]
    interval_s: f64,
    /// Stop after this many passes (default: until killed).
    #[arg(long)]
    passes: Option<u64>,
    /// Where the host's `/proc` and `/sys` are found (a fixture tree in tests).
    #[arg(long, default_value = "/")]
    root: PathBuf,
}

pub fn record(a: &RecordArgs) -> Result<(), Failure> {
    // Passes back to back would read every process's numa_maps without pause.
    let least = MIN_INTERVAL_MS as f64 / 1000.0;
    if !(least..=86_400.0).contains(&a.interval_s) {
        return Err(Failure::Input(format!(
            "--interval-s: is {} (allowed: {least} to 86400 seconds)",
            a.interval_s
        )));
    }
    let topo = numabal_live::read_topology(&a.root)?;
    // The first pass before the file: a host that cannot be read leaves nothing written.
    let start = Instant::now();
    let mut snapshot = numabal_live::observe(&a.root, &topo)?;
    let io = |e: std::io::Error| Failure::Input(format!("{}: cannot write: {e}", a.out.display()));
    let mut f = std::io::BufWriter::new(std::fs::File::create(&a.out).map_err(io)?);
    let header = RecordHeader {
        numabal_record: RECORD_VERSION,
        numabal_version: env!("CARGO_PKG_VERSION").to_string(),
        topology: topo.clone(),
    };
    write_line(&mut f, &header).map_err(io)?;
    let mut pass = 0u64;
    loop {
        let t_ns = start.elapsed().as_nanos() as u64;
        write_line(&mut f, &RecordPass { t_ns, snapshot }).map_err(io)?;
        pass += 1;
        if a.passes.is_some_and(|n| pass >= n) {
            return Ok(());
        }
        // The next pass starts an interval after this one started, however long it took.
        let next = start + Duration::from_secs_f64(a.interval_s * pass as f64);
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
        snapshot = numabal_live::observe(&a.root, &topo)?;
    }
}
