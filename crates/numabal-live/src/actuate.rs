//! The daemon's hands: a policy's actions carried out with system calls, within the safety
//! rules, rate-limited, every outcome logged. Every affinity changed is remembered with the
//! thread's own, and given back by [`Actuator::restore`] (on SIGTERM/SIGINT).
//!
//! ```text
//!  SetThreadAffinity / MoveThread  sched_setaffinity(tid, cpus ∩ the thread's own affinity)
//!  MovePages                       move_pages(pid, ...) in chunks, to a node of its Mems_allowed,
//!                                  within the MB/s budget (the rest is left for a later pass)
//!  MigrateProcessPages             migrate_pages(pid, from, to) of the pages it alone maps;
//!                                  what left `from` (numa_maps before and after) is charged
//!                                  to the budget after
//!  Log                             the decision log
//! ```
//!
//! A thread or process that exits mid-operation (`ESRCH`, every page `-EFAULT`) is logged,
//! not an error; `EPERM`, `ENOMEM`, `EBUSY` (per page) and `EACCES` (a page other processes
//! map) are counted and logged.

use crate::sys;
use numabal_daemon::log as line;
use numabal_model::{Mask, Pid, Tid};
use numabal_policy::Action;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Pages per `move_pages` call.
pub const MOVE_CHUNK: usize = 512;
const PAGE: f64 = numabal_daemon::budget::PAGE;

pub use numabal_daemon::RateLimit;
pub use numabal_daemon::log::{Changed, Counts, placement};

/// Carries out actions.
#[derive(Debug)]
pub struct Actuator {
    dry_run: bool,
    rate: RateLimit,
    changed: BTreeMap<Tid, Changed>,
    /// Counters.
    pub counts: Counts,
}

fn errno_name(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ESRCH) => "ESRCH".into(),
        Some(libc::EPERM) => "EPERM".into(),
        Some(libc::ENOMEM) => "ENOMEM".into(),
        Some(libc::EBUSY) => "EBUSY".into(),
        Some(libc::EINVAL) => "EINVAL".into(),
        Some(libc::EACCES) => "EACCES".into(),
        Some(libc::ENODEV) => "ENODEV".into(),
        Some(libc::E2BIG) => "E2BIG".into(),
        _ => e.to_string(),
    }
}

/// Bytes of `pid` on `node` now (`/proc/PID/numa_maps`); `None` when it cannot be read
/// (the process exited).
fn bytes_on(pid: Pid, node: usize) -> Option<u64> {
    let path = std::path::PathBuf::from(format!("/proc/{}/numa_maps", pid.0));
    let text = std::fs::read_to_string(&path).ok()?;
    let maps = crate::procfs::parse_numa_maps(&path, &text).ok()?;
    Some(maps.node_bytes.get(&node).copied().unwrap_or(0))
}

/// What the actuator needs to know of a process.
#[derive(Debug, Clone)]
pub struct Target {
    /// `Mems_allowed` (its cpuset's memory nodes).
    pub mems_allowed: Mask,
    /// Resident bytes per node (to charge `migrate_pages` to the budget).
    pub node_bytes: Vec<u64>,
}

impl Actuator {
    /// An actuator; `dry_run` logs what it would do and does nothing.
    pub fn new(dry_run: bool, migrate_mb_s: f64) -> Actuator {
        Actuator {
            dry_run,
            rate: RateLimit::new(migrate_mb_s),
            changed: BTreeMap::new(),
            counts: Counts::default(),
        }
    }

    /// Threads whose affinity the daemon changed.
    pub fn changed(&self) -> &BTreeMap<Tid, Changed> {
        &self.changed
    }

    /// Whether `tid`'s current affinity is the one the daemon set (so a narrowed affinity
    /// is the daemon's own doing, not an operator's).
    pub fn is_ours(&self, tid: Tid, current: &Mask) -> bool {
        self.changed.get(&tid).is_some_and(|c| &c.ours == current)
    }

    /// The affinity `tid` had before the daemon changed it.
    pub fn original(&self, tid: Tid) -> Option<&Mask> {
        self.changed.get(&tid).map(|c| &c.original)
    }

    /// Forget threads that are gone.
    pub fn forget(&mut self, live: impl Fn(Tid) -> bool) {
        self.changed.retain(|&t, _| live(t));
    }

    /// Carry out one action of `pid_of`'s process at `now_ns`; returns the log lines.
    pub fn apply(
        &mut self,
        a: &Action,
        now_ns: u64,
        pid_of: impl Fn(Tid) -> Option<Pid>,
        target: impl Fn(Pid) -> Option<Target>,
        node_cpus: &[Mask],
    ) -> Vec<Value> {
        let t_s = now_ns as f64 / 1e9;
        let mut log = Vec::new();
        match a {
            Action::Log { pid, message } => {
                log.push(line::decision(t_s, *pid, message));
            }
            Action::SetThreadAffinity { tid, cpus } => {
                log.push(self.set_affinity(t_s, *tid, cpus, pid_of(*tid)));
            }
            Action::MoveThread { tid, node } => {
                let cpus = node_cpus.get(*node).cloned().unwrap_or_default();
                log.push(self.set_affinity(t_s, *tid, &cpus, pid_of(*tid)));
            }
            Action::MovePages { pid, addrs, node } => {
                log.push(self.move_pages(now_ns, *pid, addrs, *node, target(*pid)));
            }
            Action::MigrateProcessPages { pid, from, to } => {
                log.push(self.migrate_pages(now_ns, *pid, *from, *to, target(*pid)));
            }
            other => log.push(json!({"t_s": t_s, "not_done": format!("{other:?}"),
                "why": "not a live action (mempolicies are set by the program or numactl)"})),
        }
        log
    }

    fn set_affinity(&mut self, t_s: f64, tid: Tid, cpus: &Mask, pid: Option<Pid>) -> Value {
        let Some(pid) = pid else {
            return line::thread_gone(&mut self.counts, t_s, tid.0);
        };
        let base = line::affinity_of(t_s, tid.0, Some(pid.0));
        let original = match self.changed.get(&tid) {
            Some(c) => c.original.clone(),
            None if self.dry_run => cpus.clone(),
            None => match sys::get_affinity(tid.0) {
                Ok(m) => m,
                Err(e) => return self.failed(base, "sched_getaffinity", &e),
            },
        };
        let want =
            match line::within_own_affinity(&mut self.counts, t_s, tid.0, pid, cpus, &original) {
                Ok(m) => m,
                Err(refused) => return refused,
            };
        let mut v = line::affinity(t_s, tid.0, Some(pid.0), &want);
        if self.dry_run {
            v["dry_run"] = json!(true);
            return v;
        }
        match sys::set_affinity(tid.0, &want) {
            Ok(()) => {
                self.counts.affinity_changes += 1;
                self.changed.insert(
                    tid,
                    Changed {
                        pid,
                        original,
                        ours: want,
                    },
                );
                v
            }
            Err(e) => self.failed(v, "sched_setaffinity", &e),
        }
    }

    fn failed(&mut self, mut v: Value, call: &str, e: &std::io::Error) -> Value {
        let name = errno_name(e);
        if name == "ESRCH" {
            self.counts.gone += 1;
            v["gone"] = json!(format!("{call}: ESRCH (exited mid-operation)"));
        } else {
            self.counts.errors += 1;
            v["error"] = json!(format!("{call}: {name}"));
        }
        v
    }

    fn move_pages(
        &mut self,
        now_ns: u64,
        pid: Pid,
        addrs: &[u64],
        node: usize,
        target: Option<Target>,
    ) -> Value {
        let t_s = now_ns as f64 / 1e9;
        let mut v = line::move_pages(t_s, pid, addrs.len(), node);
        let mems = target.as_ref().map(|t| &t.mems_allowed);
        if !line::admit(&mut self.counts, &mut v, "move_pages", node, mems) {
            return v;
        }
        let budget = self.rate.pages(now_ns);
        let n = addrs.len().min(budget);
        if n < addrs.len() {
            self.counts.pages_deferred += (addrs.len() - n) as u64;
            v["deferred"] = json!(addrs.len() - n);
        }
        if self.dry_run {
            v["dry_run"] = json!(true);
            return v;
        }
        let (mut moved, mut busy, mut failed) = (0u64, 0u64, 0u64);
        let mut errs: BTreeMap<String, u64> = BTreeMap::new();
        for chunk in addrs[..n].chunks(MOVE_CHUNK) {
            let a: Vec<usize> = chunk.iter().map(|&x| x as usize).collect();
            match sys::move_pages_to(pid.0, &a, node) {
                Ok(st) => {
                    for s in st {
                        if s == node as i32 {
                            moved += 1;
                        } else if s == -libc::EBUSY {
                            busy += 1;
                        } else if s < 0 {
                            failed += 1;
                            *errs
                                .entry(errno_name(&std::io::Error::from_raw_os_error(-s)))
                                .or_default() += 1;
                        }
                    }
                }
                Err(e) => return self.failed(v, "move_pages", &e),
            }
        }
        self.rate.charge(moved as f64 * PAGE);
        self.counts.pages_moved += moved;
        self.counts.pages_failed += busy + failed;
        v["moved"] = json!(moved);
        if busy > 0 {
            v["ebusy"] = json!(busy);
        }
        if !errs.is_empty() {
            v["page_errors"] = json!(errs);
        }
        v
    }

    fn migrate_pages(
        &mut self,
        now_ns: u64,
        pid: Pid,
        from: usize,
        to: usize,
        target: Option<Target>,
    ) -> Value {
        let t_s = now_ns as f64 / 1e9;
        let mut v = line::migrate_pages(t_s, pid, from, to);
        let mems = target.as_ref().map(|t| &t.mems_allowed);
        if !line::admit(&mut self.counts, &mut v, "migrate_pages", to, mems) {
            return v;
        }
        let target = target.expect("admitted");
        let bytes = target.node_bytes.get(from).copied().unwrap_or(0);
        if self.rate.pages(now_ns) == 0 {
            let pages = bytes / 4096;
            self.counts.pages_deferred += pages;
            v["deferred"] = json!(pages);
            return v;
        }
        if self.dry_run {
            v["dry_run"] = json!(true);
            return v;
        }
        let before = bytes_on(pid, from);
        match sys::migrate_pages(pid.0, &Mask::single(from), &Mask::single(to)) {
            Ok(left) => {
                // What left `from` is what moved: pages other processes map stay (the call
                // runs without CAP_SYS_NICE: sys::migrate_pages) and cost no copy, nor do
                // pages the kernel could not move (`left`, no room on `to`).
                let moved = match (before, bytes_on(pid, from)) {
                    (Some(b), Some(a)) => b.saturating_sub(a) / 4096,
                    _ => (bytes / 4096).saturating_sub(left as u64),
                };
                self.rate.charge((moved * 4096) as f64);
                self.counts.pages_moved += moved;
                self.counts.pages_failed += left as u64;
                v["not_moved"] = json!(left);
                v
            }
            Err(e) => self.failed(v, "migrate_pages", &e),
        }
    }

    /// Give every changed thread its own affinity back, unless someone else changed it
    /// since (then it is left as they set it). Returns the log lines.
    pub fn restore(&mut self) -> Vec<Value> {
        let mut log = Vec::new();
        for (tid, c) in std::mem::take(&mut self.changed) {
            let mut v = line::restore(tid.0, c.pid, &c.original);
            match sys::get_affinity(tid.0) {
                Ok(now) if now != c.ours => {
                    v["left"] = json!(format!("changed since by someone else to {now}"));
                }
                Ok(_) => {
                    if let Err(e) = sys::set_affinity(tid.0, &c.original) {
                        v = self.failed(v, "sched_setaffinity", &e);
                    }
                }
                Err(e) => v = self.failed(v, "sched_getaffinity", &e),
            }
            log.push(v);
        }
        log
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On this process's own thread: set, remembered with the original, restored.
    #[test]
    fn affinity_is_changed_within_the_threads_own_and_restored() {
        let tid = Tid(sys::gettid());
        let pid = Pid(std::process::id());
        let before = sys::get_affinity(tid.0).unwrap();
        let one = Mask::single(before.first().unwrap());
        let mut a = Actuator::new(false, 64.0);
        let log = a.apply(
            &Action::SetThreadAffinity {
                tid,
                cpus: one.clone(),
            },
            0,
            |_| Some(pid),
            |_| None,
            &[],
        );
        assert_eq!(sys::get_affinity(tid.0).unwrap(), one, "{log:?}");
        assert!(a.is_ours(tid, &one));
        // CPUs outside the thread's affinity are refused, not forced.
        let outside = Mask::from_ids((0..4096).filter(|c| !before.contains(*c)).take(1));
        if !outside.is_empty() {
            let log = a.apply(
                &Action::SetThreadAffinity { tid, cpus: outside },
                0,
                |_| Some(pid),
                |_| None,
                &[],
            );
            assert!(log[0]["refused"].is_string(), "{log:?}");
        }
        let log = a.restore();
        assert_eq!(sys::get_affinity(tid.0).unwrap(), before, "{log:?}");
        // A thread that is gone is logged, not an error.
        let mut a = Actuator::new(false, 64.0);
        let log = a.apply(
            &Action::SetThreadAffinity {
                tid: Tid(u32::MAX / 2),
                cpus: one,
            },
            0,
            |_| Some(pid),
            |_| None,
            &[],
        );
        assert!(log[0]["gone"].is_string(), "{log:?}");
        assert_eq!(a.counts.gone, 1);
    }

    #[test]
    fn pages_move_within_mems_allowed_and_the_budget() {
        let pid = Pid(std::process::id());
        let v = vec![1u8; 8 * 4096];
        let first = (v.as_ptr() as u64 + 4095) & !4095;
        let addrs: Vec<u64> = (0..4).map(|i| first + i * 4096).collect();
        let here = sys::query_nodes(pid.0, &[first as usize]).unwrap()[0] as usize;
        let target = || {
            Some(Target {
                mems_allowed: Mask::single(here),
                node_bytes: vec![],
            })
        };
        let mut a = Actuator::new(false, 64.0);
        let mv = |node| Action::MovePages {
            pid,
            addrs: addrs.clone(),
            node,
        };
        let log = a.apply(&mv(here), 0, |_| None, |_| target(), &[]);
        assert_eq!(log[0]["moved"], 4, "{log:?}");
        let log = a.apply(&mv(here + 1), 0, |_| None, |_| target(), &[]);
        assert!(log[0]["refused"].is_string(), "{log:?}");
        // A budget of 8 KiB/s moves 2 pages now and defers the rest.
        let mut a = Actuator::new(false, 8.0 / 1024.0);
        let log = a.apply(&mv(here), 0, |_| None, |_| target(), &[]);
        assert_eq!(
            (log[0]["moved"].as_u64(), log[0]["deferred"].as_u64()),
            (Some(2), Some(2))
        );
        std::hint::black_box(&v);
    }
}
