//! The `damon` sensor's rules, one copy for both hosts: the monitoring attributes the
//! daemon gives DAMON, and how DAMON's hot regions become samples the policy reads.
//!
//! ```text
//!  DAMON (live: the kernel's kdamond; sim: world/damon.rs), one target per process:
//!    every sample_us: one page of each region checked for access (and made old)
//!    every aggr_us:   nr_accesses = intervals that page was accessed (0..aggr/sample);
//!                     adjacent regions alike merged, every region split in two or three
//!    every update_us: regions fitted to the process's mappings again
//!  at each pass: the regions of the last aggregation with nr_accesses ≥ 1 (hot)
//!    ─► an address every ADDR_STEP in each (at most MAX_ADDRS_PER_REGION)
//!    ─► credited to the process's thread that ran since the last pass, or to two of
//!       them when several ran (which two moves with the pass)
//!    ─► RawSample (thread, its CPU, address) ─► resolve, as the other sensors' samples
//! ```
//!
//! DAMON watches a process's address space, which its threads share: it cannot say
//! which thread touched a region. Crediting hot addresses to the threads that ran is what
//! `/proc` adds: exact for a process with one running thread; with two or more, every hot
//! chunk is seen by two threads (shared), so a policy following private memory to its
//! thread does not see private memory through this sensor.

use crate::RawSample;
use std::collections::BTreeMap;

/// DAMON's monitoring attributes (the sysfs names under `monitoring_attrs/`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attrs {
    /// `intervals/sample_us`: one access check per region this often.
    pub sample_us: u64,
    /// `intervals/aggr_us`: nr_accesses counted over this, then regions merged and split.
    pub aggr_us: u64,
    /// `intervals/update_us` (`ops_update_us`): regions fitted to the mappings this often.
    pub update_us: u64,
    /// `nr_regions/min`.
    pub min_nr_regions: u64,
    /// `nr_regions/max`.
    pub max_nr_regions: u64,
}

/// What the daemon asks of DAMON: its default intervals (5 ms, 100 ms, 1 s) and
/// `min_nr_regions`; `max_nr_regions` 200 rather than DAMON's 1000, as the live daemon
/// reads three sysfs files per hot region at each pass and DAMON's cost is one check per
/// region per sample interval (200 regions: 40,000 checks a second at most per process).
pub const ATTRS: Attrs = Attrs {
    sample_us: 5_000,
    aggr_us: 100_000,
    update_us: 1_000_000,
    min_nr_regions: 10,
    max_nr_regions: 200,
};

impl Attrs {
    /// The largest `nr_accesses`: sample intervals in an aggregation interval.
    pub fn max_nr_accesses(&self) -> u32 {
        (self.aggr_us / self.sample_us).max(1) as u32
    }
}

/// One hot region of a process, as DAMON's last aggregation left it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HotRegion {
    /// The monitored process.
    pub pid: u32,
    /// Start address (inclusive).
    pub start: u64,
    /// End address (exclusive).
    pub end: u64,
    /// Sample intervals of the aggregation in which its checked page was accessed.
    pub nr_accesses: u32,
}

/// Hot addresses are taken this far apart in a region (a transparent huge page).
pub const ADDR_STEP: u64 = 2 << 20;
/// At most this many addresses of one region in a pass (spread over it).
pub const MAX_ADDRS_PER_REGION: u64 = 64;

/// The addresses a hot region stands for: one every [`ADDR_STEP`] from its first
/// step-aligned address (its start if it holds none), at most [`MAX_ADDRS_PER_REGION`],
/// spread evenly over the region when it holds more; 4 KiB-aligned.
pub fn addresses(r: &HotRegion) -> Vec<u64> {
    if r.start >= r.end {
        return Vec::new();
    }
    let start = r.start.next_multiple_of(ADDR_STEP);
    let first = if start < r.end {
        start
    } else {
        r.start & !0xfff
    };
    let n = (r.end - first).div_ceil(ADDR_STEP);
    let k = n.min(MAX_ADDRS_PER_REGION);
    (0..k)
        .map(|i| (first + i * n / k * ADDR_STEP).min(r.end - 1) & !0xfff)
        .collect()
}

/// Threads that ran since the last pass, by process: from each thread's CPU time, which
/// `/proc` (or the simulated host) gives.
#[derive(Debug, Clone, Default)]
pub struct Ran {
    /// Each thread's CPU time at the last pass, ns.
    last: BTreeMap<u32, u64>,
}

impl Ran {
    /// The threads (tid, CPU) of each process whose CPU time grew since the last call;
    /// threads not seen are forgotten. `threads`: (pid, tid, CPU, CPU time ns).
    pub fn update(
        &mut self,
        threads: impl IntoIterator<Item = (u32, u32, Option<usize>, u64)>,
    ) -> BTreeMap<u32, Vec<(u32, u32)>> {
        let mut ran: BTreeMap<u32, Vec<(u32, u32)>> = BTreeMap::new();
        let mut now = BTreeMap::new();
        for (pid, tid, cpu, ns) in threads {
            now.insert(tid, ns);
            let before = self.last.get(&tid).copied();
            if let Some(cpu) = cpu
                && before.is_none_or(|b| ns > b)
            {
                ran.entry(pid).or_default().push((tid, cpu as u32));
            }
        }
        self.last = now;
        ran
    }
}

/// The samples DAMON's hot regions stand for this pass: each region's [`addresses`]
/// credited to the thread of its process that ran (`ran`, from [`Ran::update`]), or, when
/// two or more ran, to two of them: any of them may have touched it, and two threads are
/// what makes a chunk shared to a policy. Which two: the address's step number plus
/// `turn` (the pass) modulo their number, and the next, so that over passes every
/// running thread is named. Regions of processes with no thread that ran give nothing.
pub fn credit(
    hot: &[HotRegion],
    ran: &BTreeMap<u32, Vec<(u32, u32)>>,
    turn: u64,
) -> Vec<RawSample> {
    let mut out = Vec::new();
    for r in hot.iter().filter(|r| r.nr_accesses > 0) {
        let Some(threads) = ran.get(&r.pid).filter(|t| !t.is_empty()) else {
            continue;
        };
        let n = threads.len() as u64;
        for addr in addresses(r) {
            let k = (addr / ADDR_STEP).wrapping_add(turn) % n;
            for j in 0..n.min(2) {
                let (tid, cpu) = threads[((k + j) % n) as usize];
                out.push(RawSample {
                    pid: r.pid,
                    tid,
                    cpu,
                    addr,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hot(pid: u32, start: u64, end: u64, nr: u32) -> HotRegion {
        HotRegion {
            pid,
            start,
            end,
            nr_accesses: nr,
        }
    }

    #[test]
    fn a_region_stands_for_an_address_per_step_at_most_64() {
        const M: u64 = 1 << 20;
        assert_eq!(addresses(&hot(1, 0, 6 * M, 1)), vec![0, 2 * M, 4 * M]);
        // Unaligned: from the first aligned address; one too small for a step is its start.
        assert_eq!(addresses(&hot(1, 3 * M, 7 * M, 1)), vec![4 * M, 6 * M]);
        assert_eq!(addresses(&hot(1, M + 5, M + 9000, 1)), vec![M]);
        // 1 GiB is 512 steps: 64 addresses, every eighth step.
        let a = addresses(&hot(1, 0, 1024 * M, 1));
        assert_eq!(a.len(), 64);
        assert_eq!((a[0], a[1], a[63]), (0, 16 * M, 1008 * M));
        assert!(addresses(&hot(1, 5, 5, 1)).is_empty());
        assert_eq!(ATTRS.max_nr_accesses(), 20);
    }

    #[test]
    fn hot_addresses_go_to_the_threads_that_ran() {
        let mut ran = Ran::default();
        // First pass: every thread with a CPU counts as having run.
        let r = ran.update([(1, 1, Some(0), 10), (1, 2, Some(3), 5), (2, 7, None, 9)]);
        assert_eq!(r, BTreeMap::from([(1, vec![(1, 0), (2, 3)])]));
        // Second: thread 2 did not run, thread 7 has a CPU now but no more time.
        let r = ran.update([(1, 1, Some(1), 20), (1, 2, Some(3), 5), (2, 7, Some(2), 9)]);
        assert_eq!(r, BTreeMap::from([(1, vec![(1, 1)])]));
        const M: u64 = 1 << 20;
        let ran = BTreeMap::from([(1, vec![(1, 0), (2, 3)])]);
        let regions = [
            hot(1, 0, 6 * M, 3),
            hot(1, 8 * M, 10 * M, 0), // cold
            hot(2, 0, 2 * M, 5),      // no thread ran
        ];
        let got: Vec<(u32, u32, u64)> = credit(&regions, &ran, 1)
            .iter()
            .map(|s| (s.tid, s.cpu, s.addr))
            .collect();
        // Two threads ran: each address is credited to both, the one its step and the
        // pass name first.
        let (a, b) = ((1, 0), (2, 3));
        let at = |t: (u32, u32), addr| (t.0, t.1, addr);
        assert_eq!(
            got,
            vec![
                at(b, 0),
                at(a, 0),
                at(a, 2 * M),
                at(b, 2 * M),
                at(b, 4 * M),
                at(a, 4 * M)
            ]
        );
        // One thread ran: exact.
        let one = BTreeMap::from([(1, vec![(2, 3)])]);
        let got: Vec<(u32, u64)> = credit(&regions, &one, 7)
            .iter()
            .map(|s| (s.tid, s.addr))
            .collect();
        assert_eq!(got, vec![(2, 0), (2, 2 * M), (2, 4 * M)]);
        // Three ran: two per address, which two moving with the address and the pass, so
        // that every running thread is named.
        let three = BTreeMap::from([(1, vec![(1, 0), (2, 3), (3, 5)])]);
        let named: std::collections::BTreeSet<u32> = (0..2)
            .flat_map(|turn| credit(&regions[..1], &three, turn))
            .map(|s| s.tid)
            .collect();
        assert_eq!(named.len(), 3);
    }
}
