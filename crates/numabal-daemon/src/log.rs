//! The decision log: one JSON object per line, the same lines whichever host the daemon
//! runs on. Each builder gives a line's own keys; a backend adds the outcome of what it
//! did (`moved`, `deferred`, `gone`, `error`, `refused`, `dry_run`, and live, `took_s`: how
//! long a move held the pass).
//!
//! ```text
//!   {"start": version, "policy", "sensor", "sensor_why", ..., "migrate_mb_s"}  once
//!   {"t_s", "pid", "comm", "skip": why}            a process left alone (when the reason changes)
//!   {"t_s", "pid", "comm", "managed": true}        a process managed from this pass on
//!   {"t_s", "pid", "comm", "exited": true}         a managed process gone
//!   {"t_s", "pid", "decision": words}              the policy's own words
//!   {"t_s", "tid", "pid", "sched_setaffinity": cpus}
//!   {"t_s", "pid", "move_pages": addresses, "to": node, "moved", "deferred",
//!    "absent", "not_owned", "busy", "page_errors": {status: pages}}   (see NotMoved;
//!    "moved" and "deferred" in base pages, an address in a huge page its 512)
//!   {"t_s", "pid", "migrate_pages": {"from", "to"}, "moved", "not_moved" | "deferred"}
//!   {"tid", "pid", "restore": cpus}                on stop, each changed affinity (live,
//!                                                  also each inherited one: "inherited": true)
//!   {"stop": {"passes", "wall_s", "cpu_s", ..., "placement"}}
//! ```

use crate::{DaemonSettings, MS, SensorKind};
use numabal_model::{Mask, Pid, Tid};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// What the daemon did, counted (the stop line and the metrics).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// `sched_setaffinity` calls that succeeded.
    pub affinity_changes: u64,
    /// Base pages moved, by `move_pages` and `migrate_pages` alike (an address in a
    /// transparent huge page stands for its 512).
    pub pages_moved: u64,
    /// Pages a policy asked to move that the rate limit left for later.
    pub pages_deferred: u64,
    /// Pages the kernel would not move though they are the process's own (`-ENOMEM`, ...,
    /// and what `migrate_pages` left).
    pub pages_failed: u64,
    /// Addresses `move_pages` found no page at (`-EFAULT`, `-ENOENT`).
    pub pages_absent: u64,
    /// Pages the process cannot own, left where they are: other processes map them
    /// (`-EACCES`), or they are in a file-backed or shared mapping (never asked for).
    pub pages_not_owned: u64,
    /// Pages busy at the time (`-EBUSY`), for a later pass.
    pub pages_busy: u64,
    /// Calls that failed with `EPERM`, `ENOMEM`, `EINVAL` or another error.
    pub errors: u64,
    /// Threads and processes that were gone when acted on.
    pub gone: u64,
    /// Moves a destination node refused pages of for want of memory (`ENOMEM`); the node
    /// is then held back (the live daemon's back-off).
    pub node_full: u64,
}

/// How the daemon starts: what it runs and why.
#[derive(Debug, Clone)]
pub struct Start<'a> {
    /// The policy's name.
    pub policy: &'a str,
    /// The policy object's Rust type (the same in the simulator and on a host).
    pub policy_type: &'a str,
    /// Its tunables as the registry built them.
    pub tunables: &'a Value,
    /// The sensor chosen, and why.
    pub sensor: SensorKind,
    /// Why that sensor.
    pub sensor_why: &'a str,
    /// Changes nothing.
    pub dry_run: bool,
    /// The pass intervals in force, ns, and what sets them (`pacing::interval_range_ns`).
    pub interval: (u64, u64, &'a str),
    /// Its settings.
    pub settings: &'a DaemonSettings,
    /// The metrics address, if served.
    pub metrics: Option<String>,
}

/// The first line.
pub fn start(s: &Start) -> Value {
    let (lo, hi, by) = s.interval;
    json!({
        "start": env!("CARGO_PKG_VERSION"), "policy": s.policy, "policy_type": s.policy_type,
        "tunables": s.tunables, "sensor": s.sensor.name(),
        "sensor_why": s.sensor_why, "sensor_blind_spots": s.sensor.blind_spots(),
        "dry_run": s.dry_run, "interval_min_ms": lo / MS, "interval_max_ms": hi / MS,
        "interval_set_by": by, "idle_interval_ms": s.settings.idle_interval_ms,
        "migrate_mb_s": s.settings.migrate_mb_s, "metrics": s.metrics,
    })
}

/// A process left alone, and why.
pub fn skip(t_s: f64, pid: u32, comm: &str, why: &str) -> Value {
    json!({"t_s": t_s, "pid": pid, "comm": comm, "skip": why})
}

/// A process the daemon manages from now on (the first pass that judged it manageable).
pub fn managed(t_s: f64, pid: u32, comm: &str) -> Value {
    json!({"t_s": t_s, "pid": pid, "comm": comm, "managed": true})
}

/// A managed process that exited since the last pass.
pub fn exited(t_s: f64, pid: u32, comm: &str) -> Value {
    json!({"t_s": t_s, "pid": pid, "comm": comm, "exited": true})
}

/// The policy's own words (`Action::Log`).
pub fn decision(t_s: f64, pid: Pid, message: &str) -> Value {
    json!({"t_s": t_s, "pid": pid.0, "decision": message})
}

/// `sched_setaffinity` of a thread (its process, if it is still there).
pub fn affinity(t_s: f64, tid: u32, pid: Option<u32>, cpus: &Mask) -> Value {
    json!({"t_s": t_s, "tid": tid, "pid": pid, "sched_setaffinity": cpus.to_list_string()})
}

/// A thread's affinity as the caller knows it before the call (the base a refusal or a
/// gone thread is logged on).
pub fn affinity_of(t_s: f64, tid: u32, pid: Option<u32>) -> Value {
    json!({"t_s": t_s, "tid": tid, "pid": pid})
}

/// A thread whose affinity the daemon changed (given back on stop).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    /// Its process.
    pub pid: Pid,
    /// Its affinity before the daemon's first change.
    pub original: Mask,
    /// What the daemon set last.
    pub ours: Mask,
}

/// The own affinity of a thread the daemon has not changed yet: the mask it has `now`,
/// unless that is the mask the daemon set on another thread of its process `pid`. Then
/// the thread inherited it through `clone()` (a program's main thread placed before it
/// started its workers) and its own is that thread's own: the daemon may give it any
/// node the first thread could have had. An operator who set exactly the daemon's mask
/// on a new thread looks the same; that mask is not theirs to lose, only to be narrowed
/// within the first thread's own.
pub fn own_affinity(changed: &BTreeMap<Tid, Changed>, pid: Pid, now: Mask) -> Mask {
    (changed.values())
        .find(|c| c.pid == pid && c.ours == now)
        .map_or(now, |c| c.original.clone())
}

/// A thread that exited before its `sched_setaffinity`.
pub fn thread_gone(counts: &mut Counts, t_s: f64, tid: u32) -> Value {
    counts.gone += 1;
    let mut v = affinity_of(t_s, tid, None);
    v["gone"] = json!("thread exited before sched_setaffinity");
    v
}

/// The mask a thread's `sched_setaffinity` gets: `cpus` within its own affinity
/// `original` (its cpuset, and whatever the program set), never outside it; or the line
/// refusing it.
pub fn within_own_affinity(
    counts: &mut Counts,
    t_s: f64,
    tid: u32,
    pid: Pid,
    cpus: &Mask,
    original: &Mask,
) -> Result<Mask, Value> {
    let want = cpus.and(original);
    if want.is_empty() {
        counts.errors += 1;
        let mut v = affinity_of(t_s, tid, Some(pid.0));
        v["refused"] = json!(format!(
            "CPUs {cpus} are outside the thread's affinity {original}"
        ));
        return Err(v);
    }
    Ok(want)
}

/// `move_pages` of `addrs` addresses of `pid` to node `to`.
pub fn move_pages(t_s: f64, pid: Pid, addrs: usize, to: usize) -> Value {
    json!({"t_s": t_s, "pid": pid.0, "move_pages": addrs, "to": to})
}

/// The pages of a `move_pages` call that did not move, by the status the kernel gave each
/// (its name: `EFAULT`, ...). Only `failed` counts as a failure: an address without a page
/// has nothing to move, a page the process cannot own is not its to move (left alone, as
/// `migrate_pages` without `CAP_SYS_NICE` leaves pages other processes map), a busy page
/// may move at a later pass.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NotMoved {
    /// `-EFAULT` (no mapping there, or the shared zero page) and `-ENOENT` (not present).
    pub absent: u64,
    /// `-EACCES` (other processes map the page), and `NOT_OWNED`: an address in a
    /// file-backed or shared mapping, which the daemon does not ask to move.
    pub not_owned: u64,
    /// `-EBUSY`.
    pub busy: u64,
    /// Any other status (`-ENOMEM`: no room on the node; `stayed`: the page is on another
    /// node and no error was given), by name.
    pub failed: BTreeMap<String, u64>,
}

impl NotMoved {
    /// `n` pages given the status named `status`.
    pub fn add(&mut self, status: &str, n: u64) {
        if n == 0 {
            return;
        }
        match status {
            "EFAULT" | "ENOENT" => self.absent += n,
            "EACCES" | NOT_OWNED => self.not_owned += n,
            "EBUSY" => self.busy += n,
            _ => *self.failed.entry(status.to_string()).or_default() += n,
        }
    }

    /// Into the counters and the call's line `v` (keys only for what is not zero).
    pub fn record(&self, counts: &mut Counts, v: &mut Value) {
        let failed: u64 = self.failed.values().sum();
        counts.pages_absent += self.absent;
        counts.pages_not_owned += self.not_owned;
        counts.pages_busy += self.busy;
        counts.pages_failed += failed;
        for (key, n) in [
            ("absent", self.absent),
            ("not_owned", self.not_owned),
            ("busy", self.busy),
        ] {
            if n > 0 {
                v[key] = json!(n);
            }
        }
        if failed > 0 {
            v["page_errors"] = json!(self.failed);
        }
    }
}

/// [`NotMoved::add`]'s status for an address the daemon did not ask to move: in a
/// file-backed or shared mapping.
pub const NOT_OWNED: &str = "not owned";

/// `migrate_pages(pid, {from}, {to})`.
pub fn migrate_pages(t_s: f64, pid: Pid, from: usize, to: usize) -> Value {
    json!({"t_s": t_s, "pid": pid.0, "migrate_pages": {"from": from, "to": to}})
}

/// A whole-process spread of the pages on `from` over `nodes` (the daemon's own
/// `move_pages` of them).
pub fn interleave_pages(t_s: f64, pid: Pid, from: usize, nodes: &[usize]) -> Value {
    json!({"t_s": t_s, "pid": pid.0, "interleave_pages": {"from": from, "nodes": nodes}})
}

/// May `call` (`move_pages`, `migrate_pages`) move pages to `node`? Only if the process is
/// there (`mems_allowed`: its `Mems_allowed`, `None` when it exited) and `node` is in its
/// `Mems_allowed`; else the call's line `v` says why not and `counts` count it.
pub fn admit(
    counts: &mut Counts,
    v: &mut Value,
    call: &str,
    node: usize,
    mems_allowed: Option<&Mask>,
) -> bool {
    match mems_allowed {
        None => {
            counts.gone += 1;
            v["gone"] = json!(format!("process exited before {call}"));
            false
        }
        Some(m) if !m.contains(node) => {
            counts.errors += 1;
            v["refused"] = json!(format!("node {node} is outside Mems_allowed {m}"));
            false
        }
        Some(_) => true,
    }
}

/// On stop: a changed affinity given back.
pub fn restore(tid: u32, pid: Pid, original: &Mask) -> Value {
    json!({"tid": tid, "pid": pid.0, "restore": original.to_list_string()})
}

/// What the stop line sums up.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stop {
    /// Passes run.
    pub passes: u64,
    /// Time since the start, s (wall time live, simulated time in the simulator).
    pub wall_s: f64,
    /// The daemon's own CPU time (user + system), s.
    pub cpu_s: f64,
    /// Samples taken.
    pub samples: u64,
    /// Processes managed by the last pass.
    pub managed_last_pass: usize,
    /// What it did.
    pub counts: Counts,
    /// Each process's node from its threads' affinities ([`placement`]).
    pub placement: BTreeMap<u32, Option<usize>>,
}

/// The last line.
pub fn stop(s: &Stop) -> Value {
    let c = &s.counts;
    json!({"stop": {
        "passes": s.passes, "wall_s": s.wall_s, "cpu_s": s.cpu_s,
        "cpu_pct_of_one_cpu": 100.0 * s.cpu_s / s.wall_s.max(1e-9),
        "samples": s.samples, "managed_last_pass": s.managed_last_pass,
        "affinity_changes": c.affinity_changes, "pages_moved": c.pages_moved,
        "pages_deferred": c.pages_deferred, "pages_failed": c.pages_failed,
        "pages_absent": c.pages_absent, "pages_not_owned": c.pages_not_owned,
        "pages_busy": c.pages_busy,
        "errors": c.errors, "gone": c.gone, "node_full": c.node_full,
        "placement": s.placement,
    }})
}

/// Each process's node from its threads' affinities (`(pid, cpus)` pairs): the node whose
/// CPUs hold every one of them, or `None` if they span several.
pub fn placement<'a>(
    affinities: impl IntoIterator<Item = (Pid, &'a Mask)>,
    node_cpus: &[Mask],
) -> BTreeMap<u32, Option<usize>> {
    let mut out: BTreeMap<u32, Option<usize>> = BTreeMap::new();
    for (pid, cpus) in affinities {
        let node = node_cpus.iter().position(|n| cpus.is_subset(n));
        out.entry(pid.0)
            .and_modify(|n| {
                if *n != node {
                    *n = None;
                }
            })
            .or_insert(node);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_that_inherited_the_daemons_mask_has_its_creators_own() {
        let all = Mask::from_ids(0..8);
        let node0 = Mask::from_ids(0..2);
        let mut changed = BTreeMap::new();
        let c = |pid, ours: &Mask| Changed {
            pid: Pid(pid),
            original: all.clone(),
            ours: ours.clone(),
        };
        changed.insert(Tid(10), c(10, &node0));
        // A new thread of process 10 with the mask the daemon gave its main thread.
        assert_eq!(own_affinity(&changed, Pid(10), node0.clone()), all);
        // Another process's thread with that mask: set by someone else, kept.
        assert_eq!(own_affinity(&changed, Pid(11), node0.clone()), node0);
        // Process 10's thread with a mask the daemon never set: its own.
        let cpu3 = Mask::single(3);
        assert_eq!(own_affinity(&changed, Pid(10), cpu3.clone()), cpu3);
    }

    #[test]
    fn only_pages_of_the_process_own_that_stay_are_failures() {
        let mut n = NotMoved::default();
        for (status, pages) in [
            ("EFAULT", 510),
            ("ENOENT", 2),
            ("EACCES", 40),
            (NOT_OWNED, 8),
            ("EBUSY", 3),
        ] {
            n.add(status, pages);
        }
        n.add("ENOMEM", 0);
        let (mut c, mut v) = (Counts::default(), json!({"move_pages": 600}));
        n.record(&mut c, &mut v);
        assert_eq!(
            (
                c.pages_absent,
                c.pages_not_owned,
                c.pages_busy,
                c.pages_failed
            ),
            (512, 48, 3, 0)
        );
        assert_eq!(
            v,
            json!({"move_pages": 600, "absent": 512, "not_owned": 48, "busy": 3})
        );
        n.add("ENOMEM", 7);
        n.record(&mut c, &mut v);
        assert_eq!(c.pages_failed, 7);
        assert_eq!(v["page_errors"], json!({"ENOMEM": 7}));
    }

    #[test]
    fn placement_is_the_node_holding_every_thread() {
        let nodes = [Mask::from_ids([0, 1]), Mask::from_ids([2, 3])];
        let (a, b, c) = (
            Mask::from_ids([0, 1]),
            Mask::single(1),
            Mask::from_ids([2, 3]),
        );
        let p = placement(
            [
                (Pid(1), &a),
                (Pid(1), &b),
                (Pid(2), &a),
                (Pid(2), &c),
                (Pid(3), &c),
            ],
            &nodes,
        );
        assert_eq!(p[&1], Some(0));
        assert_eq!(p[&2], None);
        assert_eq!(p[&3], Some(1));
    }

    #[test]
    fn lines_have_the_keys_readers_rely_on() {
        let v = stop(&Stop {
            passes: 3,
            wall_s: 2.0,
            cpu_s: 0.1,
            ..Stop::default()
        });
        assert_eq!(v["stop"]["cpu_pct_of_one_cpu"], 5.0);
        assert!(v["stop"]["placement"].is_object());
        let m = move_pages(1.5, Pid(7), 12, 1);
        assert_eq!(
            (m["move_pages"].as_u64(), m["to"].as_u64()),
            (Some(12), Some(1))
        );
        let a = affinity(1.5, 8, Some(7), &Mask::from_ids([2, 3]));
        assert_eq!(a["sched_setaffinity"], "2-3");
        let mut c = Counts::default();
        let mut v = m.clone();
        assert!(admit(&mut c, &mut v, "move_pages", 1, Some(&Mask::full(2))));
        assert!(!admit(
            &mut c,
            &mut v,
            "move_pages",
            2,
            Some(&Mask::full(2))
        ));
        assert_eq!(v["refused"], "node 2 is outside Mems_allowed 0-1");
        assert!(!admit(&mut c, &mut v, "move_pages", 0, None));
        assert_eq!((c.errors, c.gone), (1, 1));
    }
}
