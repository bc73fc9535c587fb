//! The `damon` sensor on a host: DAMON's sysfs interface (`/sys/kernel/mm/damon/admin`),
//! one kdamond per monitored process, each with one context (`vaddr`), one target and one
//! `stat` scheme whose access pattern takes every region accessed at least once in the
//! last aggregation. At each pass the daemon asks each kdamond for the regions that
//! scheme tried (`update_schemes_tried_regions`) and reads them.
//!
//! ```text
//!  admin/kdamonds/nr_kdamonds = POOL           (at start, only if it was 0)
//!  kdamonds/K/contexts/0/operations = vaddr, monitoring_attrs/{intervals,nr_regions}
//!  kdamonds/K/contexts/0/schemes/0: action stat, nr_accesses 1..max, any size and age
//!  assign:  targets/0/pid_target = PID; state = on
//!  read:    state = update_schemes_tried_regions; schemes/0/tried_regions/N/{start,end,
//!           nr_accesses}
//!  release: state = off (a kdamond whose process exited has stopped by itself)
//!  stop:    every kdamond off, nr_kdamonds = 0
//! ```
//!
//! A host where another program uses DAMON (`nr_kdamonds` not 0) is left alone: writing
//! `nr_kdamonds` would remove that program's kdamonds. So is a host where one of the
//! kernel's own DAMON modules runs (DAMON_STAT, on by default in Debian's 7.2 kernels,
//! DAMON_RECLAIM, DAMON_LRU_SORT): they hold DAMON exclusively and a sysfs kdamond is
//! refused (`EBUSY`); turning them off is the operator's choice, never the daemon's. A
//! process beyond the pool's [`POOL`] kdamonds is not monitored (said in the log).
//!
//! `update_schemes_tried_regions` returns once the kdamond has applied its scheme again,
//! up to two aggregation intervals later (250-665 ms measured in the TCG guest): the
//! requests to the kdamonds are written from a thread each, so a pass waits for the
//! slowest one, not for their sum.

use numabal_daemon::damon::{Attrs, HotRegion};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};

/// Kdamonds made ready at start: processes monitored at once, at most.
pub const POOL: usize = 16;

/// DAMON's sysfs directory under `root`.
pub fn admin(root: &Path) -> PathBuf {
    root.join("sys/kernel/mm/damon/admin")
}

/// Why the `damon` sensor cannot work on the host under `root`, if it cannot: no DAMON
/// sysfs interface, a kernel before 6.2 (no `tried_regions`), another program's
/// kdamonds, or no right to write.
pub fn unavailable(root: &Path) -> Option<String> {
    let nr = admin(root).join("kdamonds/nr_kdamonds");
    let Ok(text) = std::fs::read_to_string(&nr) else {
        return Some(format!(
            "needs DAMON's sysfs interface (CONFIG_DAMON_SYSFS), {} missing",
            nr.display()
        ));
    };
    let release = std::fs::read_to_string(root.join("proc/sys/kernel/osrelease"));
    if let Some((major, minor)) = release.ok().as_deref().and_then(major_minor)
        && (major, minor) < (6, 2)
    {
        return Some(format!(
            "DAMON's sysfs interface has no tried_regions before Linux 6.2; this kernel is \
             {major}.{minor}"
        ));
    }
    for m in ["damon_stat", "damon_reclaim", "damon_lru_sort"] {
        let enabled = root.join(format!("sys/module/{m}/parameters/enabled"));
        if std::fs::read_to_string(&enabled).is_ok_and(|t| t.trim() == "Y") {
            return Some(format!(
                "the kernel's {} module holds DAMON ({} is Y; write N there to let numabal \
                 use DAMON)",
                m.to_uppercase(),
                enabled.display()
            ));
        }
    }
    match text.trim() {
        "0" => {}
        n => {
            return Some(format!(
                "DAMON is in use by another program ({} is {n}); numabal does not take it over",
                nr.display()
            ));
        }
    }
    if let Err(e) = std::fs::OpenOptions::new().write(true).open(&nr) {
        return Some(format!("cannot write {}: {e}", nr.display()));
    }
    None
}

/// `6.1.0-56-amd64` → (6, 1).
fn major_minor(release: &str) -> Option<(u32, u32)> {
    let mut it = release.trim().split(|c: char| !c.is_ascii_digit());
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

/// The pool of kdamonds and the process each monitors.
#[derive(Debug)]
pub struct Damon {
    kdamonds: PathBuf,
    /// Kdamond index by process.
    assigned: BTreeMap<u32, usize>,
    /// Processes that found no free kdamond (said once).
    pub unmonitored: BTreeSet<u32>,
}

fn write(path: &Path, value: impl std::fmt::Display) -> io::Result<()> {
    std::fs::write(path, value.to_string())
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

fn read_u64(path: &Path) -> io::Result<u64> {
    let t = std::fs::read_to_string(path)?;
    t.trim().parse().map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: not a number: {:?}", path.display(), t.trim()),
        )
    })
}

impl Damon {
    /// Make the pool ready: [`POOL`] kdamonds, each with its context, target slot and
    /// scheme set, none running. The caller has checked [`unavailable`].
    pub fn start(root: &Path, attrs: &Attrs) -> io::Result<Damon> {
        let kdamonds = admin(root).join("kdamonds");
        write(&kdamonds.join("nr_kdamonds"), POOL)?;
        for k in 0..POOL {
            let ctxs = kdamonds.join(format!("{k}/contexts"));
            write(&ctxs.join("nr_contexts"), 1)?;
            let ctx = ctxs.join("0");
            write(&ctx.join("operations"), "vaddr")?;
            let m = ctx.join("monitoring_attrs");
            write(&m.join("intervals/sample_us"), attrs.sample_us)?;
            write(&m.join("intervals/aggr_us"), attrs.aggr_us)?;
            write(&m.join("intervals/update_us"), attrs.update_us)?;
            // max before min: the kernel refuses a min above the max in force.
            write(&m.join("nr_regions/max"), attrs.max_nr_regions)?;
            write(&m.join("nr_regions/min"), attrs.min_nr_regions)?;
            write(&ctx.join("targets/nr_targets"), 1)?;
            write(&ctx.join("schemes/nr_schemes"), 1)?;
            let s = ctx.join("schemes/0");
            write(&s.join("action"), "stat")?;
            let p = s.join("access_pattern");
            for (what, min, max) in [
                ("sz", 0, u64::MAX),
                ("nr_accesses", 1, u64::from(attrs.max_nr_accesses())),
                ("age", 0, u64::from(u32::MAX)),
            ] {
                write(&p.join(format!("{what}/max")), max)?;
                write(&p.join(format!("{what}/min")), min)?;
            }
        }
        Ok(Damon {
            kdamonds,
            assigned: BTreeMap::new(),
            unmonitored: BTreeSet::new(),
        })
    }

    fn kdamond(&self, k: usize) -> PathBuf {
        self.kdamonds.join(k.to_string())
    }

    /// Monitor exactly the processes `pids`: kdamonds of processes left out are turned
    /// off, new processes get a free kdamond. Returns the errors met (a process that
    /// exited meanwhile, a kdamond refused), for the caller to log.
    pub fn set_targets(&mut self, pids: &BTreeSet<u32>) -> Vec<(u32, io::Error)> {
        let mut errors = Vec::new();
        let gone: Vec<(u32, usize)> = (self.assigned.iter())
            .filter(|(p, _)| !pids.contains(p))
            .map(|(&p, &k)| (p, k))
            .collect();
        for (pid, k) in gone {
            self.assigned.remove(&pid);
            self.turn_off(k);
        }
        self.unmonitored.retain(|p| pids.contains(p));
        let new: Vec<u32> = (pids.iter().copied())
            .filter(|p| !self.assigned.contains_key(p))
            .collect();
        for pid in new {
            let used: BTreeSet<usize> = self.assigned.values().copied().collect();
            let Some(k) = (0..POOL).find(|k| !used.contains(k)) else {
                self.unmonitored.insert(pid);
                continue;
            };
            self.unmonitored.remove(&pid);
            let d = self.kdamond(k);
            let on = write(&d.join("contexts/0/targets/0/pid_target"), pid)
                .and_then(|()| write(&d.join("state"), "on"));
            match on {
                Ok(()) => {
                    self.assigned.insert(pid, k);
                }
                Err(e) => errors.push((pid, e)),
            }
        }
        errors
    }

    /// Processes monitored now.
    pub fn monitored(&self) -> usize {
        self.assigned.len()
    }

    fn turn_off(&self, k: usize) {
        let state = self.kdamond(k).join("state");
        if std::fs::read_to_string(&state).is_ok_and(|s| s.trim() == "on") {
            let _ = write(&state, "off");
        }
    }

    /// The hot regions of every monitored process's last aggregation. A kdamond that has
    /// stopped (its process exited) gives none.
    pub fn hot(&self) -> Vec<HotRegion> {
        let updated: Vec<(u32, usize)> = std::thread::scope(|s| {
            let asks: Vec<_> = (self.assigned.iter())
                .map(|(&pid, &k)| {
                    let state = self.kdamond(k).join("state");
                    let ask = s.spawn(move || write(&state, "update_schemes_tried_regions"));
                    (pid, k, ask)
                })
                .collect();
            asks.into_iter()
                .filter_map(|(pid, k, ask)| ask.join().ok()?.ok().map(|()| (pid, k)))
                .collect()
        });
        let mut out = Vec::new();
        for (pid, k) in updated {
            let d = self.kdamond(k);
            let tried = d.join("contexts/0/schemes/0/tried_regions");
            let Ok(entries) = std::fs::read_dir(&tried) else {
                continue;
            };
            let mut idx: Vec<u64> = entries
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect();
            idx.sort_unstable();
            for i in idx {
                let r = tried.join(i.to_string());
                let read = |f| read_u64(&r.join(f));
                if let (Ok(start), Ok(end), Ok(nr)) =
                    (read("start"), read("end"), read("nr_accesses"))
                {
                    out.push(HotRegion {
                        pid,
                        start,
                        end,
                        nr_accesses: nr.min(u64::from(u32::MAX)) as u32,
                    });
                }
            }
        }
        out
    }

    /// Turn every kdamond off and remove them (`nr_kdamonds` = 0).
    pub fn stop(self) -> io::Result<()> {
        for k in 0..POOL {
            self.turn_off(k);
        }
        write(&self.kdamonds.join("nr_kdamonds"), 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(nr_kdamonds: &str, release: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        std::fs::create_dir_all(admin(r).join("kdamonds")).unwrap();
        std::fs::write(admin(r).join("kdamonds/nr_kdamonds"), nr_kdamonds).unwrap();
        std::fs::create_dir_all(r.join("proc/sys/kernel")).unwrap();
        std::fs::write(r.join("proc/sys/kernel/osrelease"), release).unwrap();
        dir
    }

    #[test]
    fn damon_is_judged_on_its_sysfs_the_release_and_other_users() {
        let d = host("0\n", "7.2.13-amd64\n");
        assert_eq!(unavailable(d.path()), None);
        let e = unavailable(host("0\n", "6.1.0-56-amd64\n").path()).unwrap();
        assert!(
            e.contains("no tried_regions before Linux 6.2; this kernel is 6.1"),
            "{e}"
        );
        let e = unavailable(host("2\n", "7.2.13\n").path()).unwrap();
        assert!(
            e.contains("in use by another program")
                && e.ends_with("is 2); numabal does not take it over"),
            "{e}"
        );
        let stat = host("0\n", "7.2.13\n");
        let m = stat.path().join("sys/module/damon_stat/parameters");
        std::fs::create_dir_all(&m).unwrap();
        std::fs::write(m.join("enabled"), "Y\n").unwrap();
        let e = unavailable(stat.path()).unwrap();
        assert!(
            e.starts_with("the kernel's DAMON_STAT module holds DAMON ("),
            "{e}"
        );
        std::fs::write(m.join("enabled"), "N\n").unwrap();
        assert_eq!(unavailable(stat.path()), None);
        let none = tempfile::tempdir().unwrap();
        let e = unavailable(none.path()).unwrap();
        assert!(
            e.starts_with("needs DAMON's sysfs interface (CONFIG_DAMON_SYSFS)"),
            "{e}"
        );
        assert_eq!(major_minor("6.12.117+deb13-amd64"), Some((6, 12)));
    }

    /// The pool on a fixture tree (directories the kernel would make are made here): what
    /// it writes, which kdamond a process gets, what it reads back.
    #[test]
    fn the_pool_assigns_kdamonds_and_reads_tried_regions() {
        let d = host("0\n", "7.2.13\n");
        let r = d.path();
        let kd = admin(r).join("kdamonds");
        for k in 0..POOL {
            for sub in [
                "contexts/0/monitoring_attrs/intervals",
                "contexts/0/monitoring_attrs/nr_regions",
                "contexts/0/targets/0",
                "contexts/0/schemes/0/access_pattern/sz",
                "contexts/0/schemes/0/access_pattern/nr_accesses",
                "contexts/0/schemes/0/access_pattern/age",
                "contexts/0/schemes/0/tried_regions",
            ] {
                std::fs::create_dir_all(kd.join(format!("{k}/{sub}"))).unwrap();
            }
        }
        let attrs = numabal_daemon::damon::ATTRS;
        let mut damon = Damon::start(r, &attrs).unwrap();
        let rd = |p: &str| std::fs::read_to_string(kd.join(p)).unwrap();
        assert_eq!(rd("nr_kdamonds"), "16");
        assert_eq!(rd("3/contexts/0/operations"), "vaddr");
        assert_eq!(
            rd("3/contexts/0/monitoring_attrs/intervals/aggr_us"),
            "100000"
        );
        assert_eq!(rd("3/contexts/0/schemes/0/action"), "stat");
        assert_eq!(
            rd("3/contexts/0/schemes/0/access_pattern/nr_accesses/min"),
            "1"
        );
        assert_eq!(
            rd("3/contexts/0/schemes/0/access_pattern/nr_accesses/max"),
            "20"
        );
        assert!(damon.set_targets(&BTreeSet::from([40, 7])).is_empty());
        assert_eq!(rd("0/contexts/0/targets/0/pid_target"), "7");
        assert_eq!(rd("1/contexts/0/targets/0/pid_target"), "40");
        assert_eq!(rd("1/state"), "on");
        // Process 7 leaves: its kdamond goes off and is the next one given out.
        assert!(damon.set_targets(&BTreeSet::from([40])).is_empty());
        assert_eq!(rd("0/state"), "off");
        assert!(damon.set_targets(&BTreeSet::from([40, 99])).is_empty());
        assert_eq!(rd("0/contexts/0/targets/0/pid_target"), "99");
        assert_eq!((rd("0/state").as_str(), damon.monitored()), ("on", 2));
        let tried = kd.join("1/contexts/0/schemes/0/tried_regions");
        for (i, (s, e, n)) in [(4096u64, 8192u64, 3u32), (1 << 21, 1 << 22, 20)]
            .iter()
            .enumerate()
        {
            let reg = tried.join(i.to_string());
            std::fs::create_dir_all(&reg).unwrap();
            std::fs::write(reg.join("start"), format!("{s}\n")).unwrap();
            std::fs::write(reg.join("end"), format!("{e}\n")).unwrap();
            std::fs::write(reg.join("nr_accesses"), format!("{n}\n")).unwrap();
        }
        std::fs::write(tried.join("total_bytes"), "0\n").unwrap();
        let hot = damon.hot();
        assert_eq!(
            hot,
            vec![
                HotRegion {
                    pid: 40,
                    start: 4096,
                    end: 8192,
                    nr_accesses: 3
                },
                HotRegion {
                    pid: 40,
                    start: 1 << 21,
                    end: 1 << 22,
                    nr_accesses: 20
                },
            ]
        );
        assert_eq!(rd("1/state"), "update_schemes_tried_regions");
        damon.stop().unwrap();
        assert_eq!(rd("nr_kdamonds"), "0");
    }
}
