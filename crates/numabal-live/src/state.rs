//! The state file: every affinity the daemon changed, with the thread's own, kept where what
//! a daemon could not give back (SIGKILL, the OOM killer, a crash) is given back by the next
//! daemon, or by `numabal daemon --restore`.
//!
//! ```text
//!  start:  STATE.lock flock'ed and held while running (one daemon a state file; the
//!          lock file names its pid)
//!          STATE left by a daemon that did not stop cleanly ─► its threads that still
//!          run (same id, same start time) restored as a stop restores ─► STATE removed
//!  a pass that changes affinities:
//!          write-ahead: STATE with every change the pass will make ─► the changes
//!          ─► STATE as they came out
//!  each write: STATE.tmp, fsync, rename over STATE: a reader finds the old file or the
//!          new one, whole
//!  stop:   restore ─► STATE removed
//! ```
//!
//! A thread is named by its id and its start time (`/proc/TID/stat` field 22, clock ticks
//! after boot): an id the kernel has given to a new thread since is not the thread that was
//! changed. A file from an earlier boot (`/proc/sys/kernel/random/boot_id`) names no thread
//! that runs now.

use crate::sys;
use crate::topology::{LiveError, err};
use numabal_daemon::log::Changed;
use numabal_model::{Mask, Pid, Tid};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where the daemon keeps its state unless told otherwise (`/run` is emptied at boot, as
/// the state is then void).
pub const DEFAULT_PATH: &str = "/run/numabal/state.json";
const VERSION: u32 = 1;

/// The file as written.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct Saved {
    version: u32,
    boot_id: String,
    daemon_pid: u32,
    threads: Vec<SavedThread>,
}

#[derive(Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct SavedThread {
    tid: u32,
    pid: u32,
    /// The thread's start time, clock ticks after boot.
    started: u64,
    /// Its affinity before the daemon's first change, a CPU list.
    original: String,
    /// What the daemon set last (or is about to set: written ahead).
    ours: String,
}

/// What a daemon that did not stop cleanly left in the state file.
#[derive(Debug, Default, PartialEq)]
pub struct Left {
    /// The pid of the daemon that wrote it.
    pub daemon_pid: u32,
    /// Its changes whose thread still runs, to restore.
    pub changed: BTreeMap<Tid, Changed>,
    /// Threads it named that have exited (or whose id is now another thread's).
    pub gone: usize,
    /// Why nothing of it applies, when nothing does (a file from an earlier boot).
    pub void: Option<String>,
}

/// The daemon's state file, locked for it.
#[derive(Debug)]
pub struct StateFile {
    path: PathBuf,
    /// Held open: the lock lasts as long as the descriptor.
    _lock: std::fs::File,
    boot_id: String,
    /// Start times of the threads written so far (read once a thread).
    started: BTreeMap<Tid, u64>,
}

/// The boot's id, or an empty string when the kernel gives none.
fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// A thread's start time (`/proc/TID/stat` field 22), or `None` when it has exited.
pub fn thread_started(tid: Tid) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", tid.0)).ok()?;
    started_of(&stat)
}

/// Field 22 of a `stat` line (the fields after the command name's closing parenthesis).
fn started_of(stat: &str) -> Option<u64> {
    stat.rsplit_once(") ")?.1.split(' ').nth(19)?.parse().ok()
}

fn lock_path(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(".lock");
    PathBuf::from(p)
}

fn tmp_path(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(".tmp");
    PathBuf::from(p)
}

impl StateFile {
    /// Lock `path` for this process (its directory made if missing) and read what an
    /// earlier daemon left there. Errors: the directory cannot be made or written, another
    /// daemon holds the lock, or the file is not a state file (then it is left as it is, for
    /// an operator to look at).
    pub fn open(path: &Path) -> Result<(StateFile, Option<Left>), LiveError> {
        let cannot = |what: &str, e: std::io::Error| {
            err(
                path,
                format!(
                    "cannot keep the daemon's state here: {what}: {e}; give --state-file FILE or run --dry-run"
                ),
            )
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| cannot("making its directory", e))?;
        }
        let lock = lock_path(path);
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&lock)
            .map_err(|e| cannot("opening its lock file", e))?;
        if !sys::try_lock(&file).map_err(|e| cannot("locking it", e))? {
            let holder = std::fs::read_to_string(&lock).unwrap_or_default();
            return Err(err(
                path,
                format!(
                    "another numabal daemon (pid {}) keeps its state here; stop it first, or give \
                     --state-file FILE",
                    holder.trim()
                ),
            ));
        }
        file.set_len(0)
            .and_then(|()| write!(file, "{}", std::process::id()))
            .map_err(|e| cannot("writing its lock file", e))?;
        let boot_id = boot_id();
        let left = read_left(path, &boot_id)?;
        let state = StateFile {
            path: path.to_path_buf(),
            _lock: file,
            boot_id,
            started: BTreeMap::new(),
        };
        Ok((state, left))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Replace the file with `changed` (threads that have exited left out), atomically.
    pub fn write(&mut self, changed: &BTreeMap<Tid, Changed>) -> std::io::Result<()> {
        self.started.retain(|t, _| changed.contains_key(t));
        let mut threads = Vec::with_capacity(changed.len());
        for (&tid, c) in changed {
            let started = match self.started.get(&tid) {
                Some(&s) => s,
                None => match thread_started(tid) {
                    Some(s) => *self.started.entry(tid).or_insert(s),
                    None => continue,
                },
            };
            threads.push(SavedThread {
                tid: tid.0,
                pid: c.pid.0,
                started,
                original: c.original.to_list_string(),
                ours: c.ours.to_list_string(),
            });
        }
        let saved = Saved {
            version: VERSION,
            boot_id: self.boot_id.clone(),
            daemon_pid: std::process::id(),
            threads,
        };
        let tmp = tmp_path(&self.path);
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(serde_json::to_string(&saved)?.as_bytes())?;
        f.write_all(b"\n")?;
        f.sync_all()?;
        std::fs::rename(&tmp, &self.path)
    }

    /// Remove the file (everything in it given back); a missing file is no error.
    pub fn remove(&mut self) -> std::io::Result<()> {
        self.started.clear();
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

/// The state left at `path`, if a file is there.
fn read_left(path: &Path, boot_id: &str) -> Result<Option<Left>, LiveError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(err(path, format!("cannot read the state left there: {e}"))),
    };
    parse_left(&text, boot_id, thread_started)
        .map(Some)
        .map_err(|m| err(path, m))
}

/// A state file's text read against this boot, each thread's start time now from
/// `started_now`; the error says what is wrong with the file.
pub(crate) fn parse_left(
    text: &str,
    boot_id: &str,
    started_now: impl Fn(Tid) -> Option<u64>,
) -> Result<Left, String> {
    let saved: Saved = serde_json::from_str(text).map_err(|e| {
        format!("not a numabal state file ({e}); move it away to start, nothing in it was read")
    })?;
    if saved.version != VERSION {
        return Err(format!(
            "state file version {} (this numabal reads version {VERSION}); move it away to start",
            saved.version
        ));
    }
    let mut left = Left {
        daemon_pid: saved.daemon_pid,
        ..Left::default()
    };
    if saved.boot_id != boot_id {
        left.void = Some(format!(
            "written in another boot ({}), its threads are gone",
            saved.boot_id
        ));
        left.gone = saved.threads.len();
        return Ok(left);
    }
    for t in saved.threads {
        let mask = |s: &str, field: &str| {
            Mask::parse_list(s, None).map_err(|e| {
                format!(
                    "thread {}: {field} {s:?} is not a CPU list ({e}); move it away to start",
                    t.tid
                )
            })
        };
        let (original, ours) = (mask(&t.original, "original")?, mask(&t.ours, "ours")?);
        if started_now(Tid(t.tid)) != Some(t.started) {
            left.gone += 1;
            continue;
        }
        let c = Changed {
            pid: Pid(t.pid),
            original,
            ours,
        };
        left.changed.insert(Tid(t.tid), c);
    }
    Ok(left)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn changed(pid: u32, original: &str, ours: &str) -> Changed {
        Changed {
            pid: Pid(pid),
            original: Mask::parse_list(original, None).unwrap(),
            ours: Mask::parse_list(ours, None).unwrap(),
        }
    }

    /// Written, read back by the next daemon: the same changes, for the threads that still
    /// run; a thread of the same id started later is not the one that was changed.
    #[test]
    fn a_state_file_is_read_back_for_the_threads_that_still_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run/numabal/state.json");
        let me = Tid(sys::gettid());
        let (mut state, left) = StateFile::open(&path).unwrap();
        assert_eq!(left, None);
        let mut map = BTreeMap::new();
        map.insert(me, changed(std::process::id(), "0-7", "2-3"));
        // A thread that is gone is not written.
        map.insert(Tid(u32::MAX - 1), changed(1, "0-7", "0-1"));
        state.write(&map).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!tmp_path(&path).exists());
        let started = thread_started(me).unwrap();
        let now = |t: Tid| (t == me).then_some(started);
        let left = parse_left(&text, &boot_id(), now).unwrap();
        assert_eq!(left.daemon_pid, std::process::id());
        assert_eq!(left.gone, 0);
        assert_eq!(left.changed.get(&me), map.get(&me));
        assert_eq!(left.changed.len(), 1);
        // The same id, started later: another thread.
        let later = |t: Tid| (t == me).then_some(started + 1);
        let left = parse_left(&text, &boot_id(), later).unwrap();
        assert_eq!((left.changed.len(), left.gone), (0, 1));
        // Another boot: nothing applies.
        let left = parse_left(&text, "another", now).unwrap();
        assert!(left.void.is_some() && left.changed.is_empty());
        state.remove().unwrap();
        assert!(!path.exists());
    }

    /// One daemon a state file: a second is refused while the first holds the lock, and
    /// the refusal names the holder.
    #[test]
    fn a_second_daemon_is_refused_the_same_state_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        let (first, _) = StateFile::open(&path).unwrap();
        // flock locks belong to the open file: a second open in this process is refused too.
        let e = StateFile::open(&path).unwrap_err().to_string();
        assert!(
            e.contains(&format!(
                "another numabal daemon (pid {}) keeps its state here",
                std::process::id()
            )),
            "{e}"
        );
        drop(first);
        assert!(StateFile::open(&path).is_ok());
    }

    /// A file that is not a state file is refused with the reason, and left where it is.
    #[test]
    fn a_damaged_state_file_is_refused_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        let bad_mask = format!(
            "{{\"version\":1,\"boot_id\":\"{}\",\"daemon_pid\":1,\"threads\":[{{\"tid\":1,\
             \"pid\":1,\"started\":1,\"original\":\"a\",\"ours\":\"0\"}}]}}",
            boot_id()
        );
        for text in [
            "{\"version\":1,",
            "{\"version\":2,\"boot_id\":\"x\",\"daemon_pid\":1,\"threads\":[]}",
            &bad_mask,
        ] {
            std::fs::write(&path, text).unwrap();
            let e = StateFile::open(&path).unwrap_err().to_string();
            assert!(e.contains("move it away to start"), "{e}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        }
    }

    #[test]
    fn field_22_of_stat_is_the_start_time() {
        let stat = "12 (a) b) S 1 12 12 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 4242 1000 10";
        assert_eq!(started_of(stat), Some(4242));
        assert_eq!(started_of("12 (a"), None);
    }
}
