//! Recordings: the observation stream of a host as versioned JSON lines, for replay
//! through any policy (`numabal record`; replay is still to come).
//!
//! ```text
//!  line 1   {"numabal_record": 1, "numabal_version": "...", "topology": {...}}
//!  line k   {"t_ns": ..., "threads": [...], "processes": [...], "nodes": [...],
//!            "cpu_idle_ns": [...]}      one per pass, in time order
//! ```

use crate::observe::Snapshot;
use crate::topology::{LiveError, LiveTopology, err, read};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;

/// The format version this build writes and reads.
pub const RECORD_VERSION: u32 = 1;

/// The first line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordHeader {
    /// Format version ([`RECORD_VERSION`]).
    pub numabal_record: u32,
    /// The numabal that wrote it.
    pub numabal_version: String,
    /// The host.
    pub topology: LiveTopology,
}

/// One pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordPass {
    /// ns since the recording started.
    pub t_ns: u64,
    /// What was observed.
    #[serde(flatten)]
    pub snapshot: Snapshot,
}

/// Write one value as a line.
pub fn write_line<T: Serialize>(w: &mut impl Write, v: &T) -> std::io::Result<()> {
    serde_json::to_writer(&mut *w, v)?;
    w.write_all(b"\n")?;
    w.flush()
}

/// Read a recording; errors name the file and the line.
pub fn read_record(path: &Path) -> Result<(RecordHeader, Vec<RecordPass>), LiveError> {
    let text = read(path)?;
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, first) = lines
        .next()
        .ok_or_else(|| err(path, "empty (no header line)"))?;
    let header: RecordHeader = serde_json::from_str(first).map_err(|e| {
        err(
            path,
            format!(
                "line 1: not a numabal recording header ({})",
                json_words(&e)
            ),
        )
    })?;
    if header.numabal_record != RECORD_VERSION {
        return Err(err(
            path,
            format!(
                "line 1: numabal_record is {} (allowed: {RECORD_VERSION})",
                header.numabal_record
            ),
        ));
    }
    let mut passes = Vec::new();
    for (i, l) in lines {
        let p: RecordPass = serde_json::from_str(l).map_err(|e| {
            err(
                path,
                format!("line {}: not a pass ({})", i + 1, json_words(&e)),
            )
        })?;
        if passes.last().is_some_and(|q: &RecordPass| q.t_ns > p.t_ns) {
            return Err(err(path, format!("line {}: t_ns goes back in time", i + 1)));
        }
        passes.push(p);
    }
    Ok((header, passes))
}

/// A JSON error in plain words, without serde_json's position (the line is named already):
/// `column 21: is "x" (allowed: a whole number from 0 to 4294967295)`.
fn json_words(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let msg = text.strip_suffix(&suffix).unwrap_or(&text);
    format!(
        "column {}: {}",
        e.column(),
        numabal_model::error::plain_words(msg)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::observe;
    use crate::procfs::fixture as pf;
    use crate::topology::{fixture as tf, read_topology};

    #[test]
    fn a_recording_reads_back_equal() {
        let dir = tempfile::tempdir().unwrap();
        tf::guest_2n(dir.path());
        pf::process(
            dir.path(),
            145,
            "process 0",
            "7f00 default anon=10 N0=5 N1=5 kernelpagesize_kB=4\n",
            &[(145, 0), (146, 3)],
        );
        std::fs::write(
            dir.path().join("proc/stat"),
            "cpu0 0 0 0 7 0\ncpu3 0 0 0 9 0\n",
        )
        .unwrap();
        let topo = read_topology(dir.path()).unwrap();
        let snap = observe(dir.path(), &topo).unwrap();
        let path = dir.path().join("rec.jsonl");
        let mut f = std::fs::File::create(&path).unwrap();
        let header = RecordHeader {
            numabal_record: RECORD_VERSION,
            numabal_version: "test".into(),
            topology: topo.clone(),
        };
        write_line(&mut f, &header).unwrap();
        for t in [0, 5_000_000_000] {
            write_line(
                &mut f,
                &RecordPass {
                    t_ns: t,
                    snapshot: snap.clone(),
                },
            )
            .unwrap();
        }
        let (h, passes) = read_record(&path).unwrap();
        assert_eq!(h, header);
        assert_eq!(passes.len(), 2);
        assert_eq!(passes[1].snapshot, snap);
        // Masks are cpulists in the file.
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"cpus\":\"2-3\""), "{text}");
        // A version this build does not know, and a broken line, are named.
        std::fs::write(
            &path,
            text.replacen("\"numabal_record\":1", "\"numabal_record\":9", 1),
        )
        .unwrap();
        let e = read_record(&path).unwrap_err().to_string();
        assert!(
            e.ends_with("line 1: numabal_record is 9 (allowed: 1)"),
            "{e}"
        );
        std::fs::write(
            &path,
            format!("{}\n{{\"t_ns\": 1}}\n", text.lines().next().unwrap()),
        )
        .unwrap();
        let e = read_record(&path).unwrap_err().to_string();
        assert!(e.contains("line 2: not a pass"), "{e}");
    }
}
