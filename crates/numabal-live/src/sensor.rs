//! Access sensors: which thread touched which page, from where. Each says what it cannot
//! see (`SensorKind::blind_spots`).
//!
//! ```text
//!  hint       kernel.numa_balancing=1: the kernel unmaps pages (task_numa_work) and its
//!             NUMA hinting faults arrive as software page-fault samples
//!             (perf_event_open PERF_COUNT_SW_PAGE_FAULTS, PERF_SAMPLE_TID|TIME|ADDR|CPU,
//!             one event per watched thread)
//!  softdirty  kernel.numa_balancing=0: the daemon write-protects a process's pages
//!             (/proc/PID/clear_refs = 4, clearing the soft-dirty bits) and samples the
//!             write faults that follow with the same events; paced by a fault budget
//!  damon      the kernel's data-access monitor: a kdamond per process (sysfs, Linux 6.2+),
//!             its hot regions read at each pass and credited to the threads that ran
//!             (numabal_daemon::damon; live/damon.rs)
//!  pmu        memory-access sampling with data source (PEBS, IBS, SPE): not built in this
//!             version (refused with the reason; no QEMU TCG guest has such a PMU)
//!  maps       numa_maps + each thread's CPU: no samples; policies that need them (stable)
//!             see no accesses
//! ```
//!
//! Sample addresses are rounded down to the start of their page, 4 KiB or a transparent
//! huge page (`PERF_SAMPLE_DATA_PAGE_SIZE`, Linux 5.11; 4 KiB where the kernel does not
//! say), so a huge page is one page to the policy; the page's node comes from a
//! `move_pages` query (no move) when the daemon's pass begins.

use crate::topology::{LiveError, err};
use perf_event_open::config::{Opts, Proc, SampleOn};
use perf_event_open::count::Counter;
use perf_event_open::event::sw::Software;
use perf_event_open::sample::Sampler;
use perf_event_open::sample::record::Record;
use std::collections::BTreeMap;
use std::path::Path;

pub use numabal_daemon::sensor::sensors_here;
pub use numabal_model::daemon::{SENSOR_NAMES, SensorKind};

/// `kernel.numa_balancing` under `root` (0 if the file is missing: no NUMA balancing).
pub fn numa_balancing(root: &Path) -> u32 {
    std::fs::read_to_string(root.join("proc/sys/kernel/numa_balancing"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// Every sensor, in the order `auto` prefers them, judged on the host under `root`: `None`
/// if it can work there, else why not. The one judgement behind `auto`'s choice and every
/// refusal.
pub fn judge(root: &Path) -> Vec<(SensorKind, Option<String>)> {
    let clear_refs = root.join("proc/self/clear_refs");
    // A fixture tree says by having the file; this host, by a page's soft-dirty bit.
    let soft_dirty = if !clear_refs.exists() {
        Some(format!("needs {}, missing", clear_refs.display()))
    } else if root == Path::new("/") && !soft_dirty_works() {
        Some("this kernel keeps no soft-dirty bits, built without CONFIG_MEM_SOFT_DIRTY".into())
    } else {
        None
    };
    numabal_daemon::sensor::judge(&numabal_daemon::sensor::HostFacts {
        numa_balancing: numa_balancing(root),
        soft_dirty,
        damon: crate::damon::unavailable(root),
        pmu: Some(
            "memory-access sampling with PEBS, IBS or SPE is not built in this version".into(),
        ),
    })
}

/// The sensor to use: the one asked for if it can work here, else an error saying why; with
/// `None`, the first of hint, softdirty, maps that works. Returns the sensor and the reason
/// for the choice.
pub fn choose(root: &Path, asked: Option<SensorKind>) -> Result<(SensorKind, String), LiveError> {
    choose_in(&judge(root), asked)
}

/// [`choose`] from a judgement already made (`judge`), for a caller that also reports it.
pub fn choose_in(
    judged: &[(SensorKind, Option<String>)],
    asked: Option<SensorKind>,
) -> Result<(SensorKind, String), LiveError> {
    numabal_daemon::sensor::choose(judged, asked).map_err(|e| err(Path::new("--sensor"), e))
}

/// Whether the running kernel tracks soft-dirty bits (`CONFIG_MEM_SOFT_DIRTY`): a page this
/// process just wrote shows bit 55 in `/proc/self/pagemap`. Without the option, writing 4 to
/// `clear_refs` is accepted and does nothing.
pub fn soft_dirty_works() -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let page = vec![1u8; 2 * 4096];
    let addr = (page.as_ptr() as u64 + 4095) & !4095;
    std::hint::black_box(&page);
    let Ok(mut f) = std::fs::File::open("/proc/self/pagemap") else {
        return false;
    };
    let mut entry = [0u8; 8];
    f.seek(SeekFrom::Start(addr / 4096 * 8))
        .and_then(|_| f.read_exact(&mut entry))
        .is_ok_and(|()| u64::from_le_bytes(entry) & (1 << 55) != 0)
}

/// Write-protect every page of `pid` for soft-dirty tracking (`clear_refs` = 4).
pub fn clear_soft_dirty(root: &Path, pid: u32) -> std::io::Result<()> {
    std::fs::write(root.join(format!("proc/{pid}/clear_refs")), "4")
}

pub use numabal_daemon::RawSample;

struct Watch {
    sampler: Sampler,
    /// Owns the event the sampler's ring buffer belongs to: kept alive, never read.
    _counter: Counter,
}

/// Software page-fault sampling, one event per watched thread.
pub struct FaultSampler {
    period: u64,
    ring_pages_log2: u8,
    watches: BTreeMap<u32, (u32, Watch)>,
    /// Samples taken so far.
    pub samples: u64,
    /// Threads that could not be watched (gone, or refused), and the last error.
    pub open_errors: u64,
}

impl FaultSampler {
    /// Sample one page fault in `period`, into rings of `2^ring_pages_log2` pages per thread.
    pub fn new(period: u64, ring_pages_log2: u8) -> FaultSampler {
        FaultSampler {
            period: period.max(1),
            ring_pages_log2,
            watches: BTreeMap::new(),
            samples: 0,
            open_errors: 0,
        }
    }

    /// Threads watched.
    pub fn watched(&self) -> usize {
        self.watches.len()
    }

    /// Watch `tid` of `pid` (no-op if it is watched). An error (the thread is gone, or
    /// `perf_event_open` is refused) is returned for the caller to log.
    pub fn watch(&mut self, pid: u32, tid: u32) -> std::io::Result<()> {
        if self.watches.contains_key(&tid) {
            return Ok(());
        }
        let mut opts = Opts {
            sample_on: SampleOn::Count(self.period),
            ..Opts::default()
        };
        opts.sample_format.data_addr = true;
        // The page size at the address (Linux 5.11): a transparent huge page is one page,
        // one record, one move_pages address. Older kernels refuse it: 4 KiB pages then.
        opts.sample_format.data_page_size = true;
        opts.record_id_format.task = true;
        opts.record_id_format.cpu = true;
        opts.record_id_format.time = true;
        let target = || (Proc(tid), perf_event_open::config::Cpu::ALL);
        let counter = Counter::new(Software::PageFault, target(), &opts)
            .or_else(|_| {
                opts.sample_format.data_page_size = false;
                Counter::new(Software::PageFault, target(), &opts)
            })
            .inspect_err(|_| self.open_errors += 1)?;
        let sampler = counter.sampler(self.ring_pages_log2)?;
        counter.enable()?;
        self.watches.insert(
            tid,
            (
                pid,
                Watch {
                    sampler,
                    _counter: counter,
                },
            ),
        );
        Ok(())
    }

    /// Stop watching threads not in `keep`.
    pub fn retain(&mut self, keep: impl Fn(u32) -> bool) {
        self.watches.retain(|&tid, _| keep(tid));
    }

    /// Every sample waiting in the rings, in thread order then time order.
    pub fn drain(&mut self, out: &mut Vec<RawSample>) {
        for (&tid, (pid, w)) in &self.watches {
            for (_, rec) in w.sampler.iter() {
                let Record::Sample(s) = rec else { continue };
                let Some(addr) = s.data_addr else { continue };
                let cpu = s.record_id.cpu.unwrap_or(u32::MAX);
                let (spid, stid) = s.record_id.task.map_or((*pid, tid), |t| (t.pid, t.tid));
                self.samples += 1;
                let size = s
                    .data_page_size
                    .filter(|z| z.is_power_of_two())
                    .unwrap_or(4096)
                    .max(4096);
                out.push(RawSample {
                    pid: spid,
                    tid: stid,
                    cpu,
                    addr: addr & !(size - 1),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choice_follows_the_kernel_setting() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        std::fs::create_dir_all(r.join("proc/sys/kernel")).unwrap();
        std::fs::create_dir_all(r.join("proc/self")).unwrap();
        std::fs::write(r.join("proc/sys/kernel/numa_balancing"), "1\n").unwrap();
        assert_eq!(choose(r, None).unwrap().0, SensorKind::Hint);
        std::fs::write(r.join("proc/sys/kernel/numa_balancing"), "0\n").unwrap();
        assert_eq!(choose(r, None).unwrap().0, SensorKind::Maps);
        std::fs::write(r.join("proc/self/clear_refs"), "").unwrap();
        assert_eq!(choose(r, None).unwrap().0, SensorKind::SoftDirty);
        // Every refusal gives the same list: what works here, and why the others do not.
        let list = "sensors here: softdirty, maps; not here: hint (needs \
                    kernel.numa_balancing=1, it is 0), damon (needs DAMON's sysfs interface \
                    (CONFIG_DAMON_SYSFS), DIR/sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds \
                    missing), pmu (memory-access sampling with PEBS, IBS \
                    or SPE is not built in this version)";
        for k in [SensorKind::Hint, SensorKind::Pmu] {
            let e = choose(r, Some(k)).unwrap_err().to_string();
            let e = e.replace(&r.display().to_string(), "DIR");
            assert_eq!(
                e,
                format!("--sensor: {} cannot work here ({list})", k.name())
            );
        }
        std::fs::remove_file(r.join("proc/self/clear_refs")).unwrap();
        let e = choose(r, Some(SensorKind::SoftDirty))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("sensors here: maps; not here: hint (needs"),
            "{e}"
        );
        assert!(e.contains("softdirty (needs "), "{e}");
        assert_eq!(SensorKind::parse("auto"), Ok(None));
        assert!(
            SensorKind::parse("ibs")
                .unwrap_err()
                .contains("allowed: auto")
        );
    }

    /// This thread's own page faults, sampled: first touches of fresh pages.
    #[test]
    fn samples_this_threads_page_faults() {
        let tid = crate::sys::gettid();
        let mut s = FaultSampler::new(1, 4);
        if let Err(e) = s.watch(std::process::id(), tid) {
            // perf_event_paranoid may forbid it for an unprivileged user: say so, loudly;
            // any other error is a failure.
            assert_eq!(
                e.kind(),
                std::io::ErrorKind::PermissionDenied,
                "perf_event_open: {e}"
            );
            eprintln!("perf_event_open refused here ({e}); sampling not tested");
            return;
        }
        // A fresh mapping without huge pages: 64 first touches, 64 faults. A Vec of 256 KiB
        // may come from heap memory an earlier test already touched (glibc raises its
        // mmap threshold as large blocks are freed), which does not fault: the CI run of
        // d5f4fd4 saw 19 of 64.
        let mut v = crate::sys::AnonMap::new(64 * 4096).unwrap();
        // Without THP in the kernel the advice is refused, and no huge page backs it anyway.
        let _ = v.advise_huge(false);
        for i in (0..v.len()).step_by(4096) {
            v[i] = 1;
        }
        let mut out = Vec::new();
        s.drain(&mut out);
        let lo = v.as_ptr() as u64 & !0xfff;
        let hi = lo + v.len() as u64;
        let ours = out
            .iter()
            .filter(|r| r.addr >= lo && r.addr < hi && r.tid == tid)
            .count();
        assert!(
            ours >= 32,
            "{ours} of 64 first touches sampled ({} samples)",
            out.len()
        );
        // softdirty: pages already written fault again after clear_refs=4.
        if !soft_dirty_works() {
            eprintln!("this kernel has no soft-dirty bits; clear_refs=4 not tested");
            return;
        }
        clear_soft_dirty(Path::new("/"), std::process::id()).unwrap();
        for i in (0..v.len()).step_by(4096) {
            v[i] = 2;
        }
        out.clear();
        s.drain(&mut out);
        let again = out
            .iter()
            .filter(|r| r.addr + 2 * 1024 * 1024 > lo && r.addr < hi && r.tid == tid)
            .count();
        assert!(
            again >= 1,
            "no write fault after clear_refs ({} samples)",
            out.len()
        );
        std::hint::black_box(&v);
    }
}
