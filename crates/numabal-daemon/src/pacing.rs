//! When passes come, and when softdirty clears a process's bits again.
//!
//! ```text
//!   pass gap   interval_ms if set, else the policy's interval asked after every pass
//!              (numad's -i min:max moves between the two), else DEFAULT_INTERVAL_MS;
//!              never under MIN_INTERVAL_MS; with nothing managed, at least
//!              idle_interval_ms
//!   softdirty  a process the policy wants sampled after the pass's decisions is cleared
//!              when the faults its clear may cause at the assumed fault_cost_ns fit
//!              softdirty_budget_pct of one CPU over the time since its last clear
//!              (ClearPacer): the first, every present entry, with 60 s of budget
//!              credited; the next, the faults the last caused (samples × sample_period,
//!              as they come); at least the shortest pass gap apart
//!   movers     threads moving pages: the CPU time over the last pass gap that no other
//!              program used (CPUs' idle time and the daemon's own), in CPUs,
//!              1..=MAX_MOVERS; a whole process's move may take as many as the
//!              CPUs its own threads used over that gap (ProcessCpus), up to MAX_MOVERS
//! ```

use crate::{DaemonSettings, MIN_INTERVAL_MS, MS};
use numabal_policy::{Policy, ProcessObs, ThreadObs};
use std::collections::BTreeMap;

/// The interval between passes when neither `interval_ms` nor the policy sets one, ms.
pub const DEFAULT_INTERVAL_MS: u64 = 1000;

/// The time to the next pass, ns: `interval_ms` if set, else what the policy asks for now
/// (numad's interval changes pass by pass), at least [`MIN_INTERVAL_MS`]; with nothing
/// managed, at least `idle_interval_ms`.
pub fn pass_gap_ns(s: &DaemonSettings, policy: &dyn Policy, managed: usize) -> u64 {
    let gap = at_least_min_interval(
        s.interval_ms
            .map(|ms| ms * MS)
            .or(policy.tick_interval_ns())
            .unwrap_or(DEFAULT_INTERVAL_MS * MS),
    );
    if managed == 0 {
        gap.max(s.idle_interval_ms * MS)
    } else {
        gap
    }
}

/// While nothing is managed the daemon still looks at the CPUs' idle time (`/proc/stat`,
/// one small read) every ordinary pass gap, and makes the next pass at once when they
/// were busy for at least one CPU's worth of the time since its last look: a program is
/// starting that may need placing. An idle host costs one read per gap and a full pass
/// per `idle_interval_ms`. The gap between looks, ns.
pub fn idle_look_gap_ns(s: &DaemonSettings, policy: &dyn Policy) -> u64 {
    pass_gap_ns(s, policy, 1)
}

/// Whether the host's CPUs were busy for at least one CPU's worth of `elapsed_ns`: the
/// CPUs' idle time summed went from `idle_before_ns` to `idle_now_ns` over that time.
pub fn host_busy(idle_before_ns: u64, idle_now_ns: u64, elapsed_ns: u64, nr_cpus: usize) -> bool {
    let idle = idle_now_ns.saturating_sub(idle_before_ns);
    let all = elapsed_ns.saturating_mul(nr_cpus as u64);
    elapsed_ns > 0 && all.saturating_sub(idle) >= elapsed_ns
}

/// Threads that move a process's pages at most ([`movers`]).
pub const MAX_MOVERS: usize = 8;

/// How many threads move pages in this pass: the CPU time no other program used over the
/// `elapsed_ns` since the last pass, in CPUs, to the nearest: the CPUs' idle time (per
/// CPU, from `idle_before_ns` to `idle_now_ns`) and the daemon's own CPU time in it
/// (`own_ns`: its pass and its last movers, whose CPUs are its to use again); at least one
/// (the daemon's own thread), at most [`MAX_MOVERS`]. The
/// kernel's balancing migrates in each faulting task's context, many CPUs at once; one
/// user-space thread copying a large process is the bottleneck of a placement (a 160 MiB
/// process beside four busy threads took 8.7 s alone in the TCG guest, docs/vm-tests.md).
/// CPUs that were busy are left to the threads running there.
pub fn movers(idle_before_ns: &[u64], idle_now_ns: &[u64], own_ns: u64, elapsed_ns: u64) -> usize {
    if elapsed_ns == 0 {
        return 1;
    }
    let idle: u64 = (idle_before_ns.iter().zip(idle_now_ns))
        .map(|(b, n)| n.saturating_sub(*b).min(elapsed_ns))
        .sum();
    let cpus = (idle + own_ns + elapsed_ns / 2) / elapsed_ns;
    (cpus as usize).clamp(1, MAX_MOVERS)
}

/// Pages a mover takes at the least: a smaller move is not worth another thread.
pub const MIN_SLICE: usize = 4096;

/// The threads that move `pages` pages when `movers` may: a slice of at least
/// [`MIN_SLICE`] pages each, at least one.
pub fn movers_for(movers: usize, pages: usize) -> usize {
    movers.min(pages / MIN_SLICE).max(1)
}

/// The threads that move a whole process's pages (`migrate_pages`): the pass's `movers`,
/// or as many as the CPUs the process's own threads used over the last pass gap
/// (`process_cpus`, [`ProcessCpus`]) when that is more; at most [`MAX_MOVERS`]. The
/// kernel migrates a process's pages in its own threads' hinting faults, as many at once
/// as it has threads running; movers for the process take, in all, the CPU time its
/// threads would have spent faulting, only sooner, and they share the CPUs its threads
/// run on (at their CFS share) rather than take another program's.
pub fn process_movers(movers: usize, process_cpus: usize) -> usize {
    movers.max(process_cpus).clamp(1, MAX_MOVERS)
}

/// The pass's `movers` shared out over the `processes` whose pages the pass moves: as
/// evenly as they go, the first ones one more when they do not divide, at least one each.
/// The processes' moves are made at the same time, each with its share (its whole moves
/// with [`process_movers`] of it): the kernel migrates each process's pages in its own
/// threads' faults, all at once, and a move waits mostly on the process's own CPUs (the
/// TLB shootdowns reach the CPUs that run it), so two processes' moves overlap where one
/// process's movers wait for the same CPUs (in the 7.2 guest two 160 MiB moves at once
/// took 11.7 s, one alone 10.4 s; docs/home-node.md).
pub fn movers_shares(movers: usize, processes: usize) -> Vec<usize> {
    let k = processes.max(1);
    (0..processes)
        .map(|i| (movers / k + usize::from(i < movers % k)).max(1))
        .collect()
}

/// The CPUs each process's threads used between two passes, from its CPU time
/// (`/proc/PID/stat`'s `utime + stime`, or the simulated host's).
#[derive(Debug, Clone, Default)]
pub struct ProcessCpus {
    /// Per process: the time of the last pass and its CPU time then, ns.
    last: BTreeMap<u32, (u64, u64)>,
}

impl ProcessCpus {
    /// The CPUs each of `procs` used since the last call, to the nearest: (pid, CPU time
    /// ns, age of its oldest thread ns). A process first seen is measured over its age
    /// (its CPU time since it started); one whose age is not known counts none. Processes
    /// not in `procs` are forgotten.
    pub fn update(
        &mut self,
        now_ns: u64,
        procs: impl IntoIterator<Item = (u32, u64, Option<u64>)>,
    ) -> BTreeMap<u32, usize> {
        let mut last = BTreeMap::new();
        let mut cpus = BTreeMap::new();
        for (pid, cpu_ns, age_ns) in procs {
            let since =
                (self.last.get(&pid).copied()).or(age_ns.map(|a| (now_ns.saturating_sub(a), 0)));
            if let Some((then, before)) = since
                && now_ns > then
            {
                let elapsed = now_ns - then;
                let used = cpu_ns.saturating_sub(before);
                cpus.insert(pid, ((used + elapsed / 2) / elapsed) as usize);
            }
            last.insert(pid, (now_ns, cpu_ns));
        }
        self.last = last;
        cpus
    }
}

/// (pid, CPU time ns, age of its oldest thread ns) of each of `procs`, as
/// [`ProcessCpus::update`] takes them.
pub fn process_times<'a>(
    procs: &'a [ProcessObs],
    threads: &'a [ThreadObs],
) -> impl Iterator<Item = (u32, u64, Option<u64>)> + 'a {
    procs.iter().map(move |p| {
        let ages = threads.iter().filter(|t| t.pid == p.pid);
        (p.pid.0, p.cpu_time_ns, ages.filter_map(|t| t.age_ns).max())
    })
}

/// The intervals in force while processes are managed, ns (shortest, longest), and what
/// sets them: `interval_ms`, or the policy.
pub fn interval_range_ns(s: &DaemonSettings, policy: &dyn Policy) -> (u64, u64, &'static str) {
    let (lo, hi, by) = match s.interval_ms {
        Some(ms) => (ms * MS, ms * MS, "interval_ms"),
        None => {
            let (lo, hi) = policy
                .tick_interval_range_ns()
                .unwrap_or((DEFAULT_INTERVAL_MS * MS, DEFAULT_INTERVAL_MS * MS));
            (lo, hi, "policy")
        }
    };
    (at_least_min_interval(lo), at_least_min_interval(hi), by)
}

/// An interval, ns, raised to [`MIN_INTERVAL_MS`].
pub fn at_least_min_interval(ns: u64) -> u64 {
    ns.max(MIN_INTERVAL_MS * MS)
}

/// softdirty: when each process's soft-dirty bits may be cleared. After a clear, every
/// entry the process writes takes a write fault, paid by its threads; `clear_refs` takes
/// the whole process, so a clear cannot be made smaller, only later. A process is cleared
/// when the policy wants it sampled (asked after the pass's decisions, so that a process
/// placed at once is never cleared for nothing) and the faults its clear may cause, at
/// `fault_cost_ns` each, fit `softdirty_budget_pct` of one CPU over the time since its
/// last clear, at least `interval_min_ns` ago. Before the first, every present entry may
/// be written, and the budget counts from [`FIRST_CLEAR_CREDIT_NS`] before the process was
/// first wanted; after it, the faults it caused are counted as their samples come. At the
/// defaults a process of 1.5 million entries or fewer (6 GiB of base pages) is cleared
/// when first wanted; one of 7 million (27 GiB) 220 s later; a clear that caused 7 million
/// faults is followed by the next 280 s later.
#[derive(Debug, Clone, Default)]
pub struct ClearPacer {
    /// Per process: when it was last cleared (or first wanted), ns, and the faults
    /// sampled since (`None`: never cleared).
    procs: BTreeMap<u32, (u64, Option<u64>)>,
}

/// The budget a process's first clear may draw on when it is first wanted: the kernel's
/// longest NUMA scan period (`numa_balancing_scan_period_max_ms`, 60 s), within which its
/// own scanner covers a process too.
pub const FIRST_CLEAR_CREDIT_NS: u64 = 60 * 1000 * MS;

impl ClearPacer {
    /// `faults` of process `pid` were sampled (samples × sample_period); before its first
    /// clear they are first touches, not the budget's.
    pub fn faulted(&mut self, pid: u32, faults: u64) {
        if let Some((_, Some(f))) = self.procs.get_mut(&pid) {
            *f += faults;
        }
    }

    /// Processes no longer managed forgotten.
    pub fn retain(&mut self, managed: impl Fn(u32) -> bool) {
        self.procs.retain(|&pid, _| managed(pid));
    }

    /// Whether process `pid` is to be cleared now (if so, the clear is counted as made).
    /// `entries`: its present page-table entries (a base page or a transparent huge page
    /// each), asked before its first clear only.
    pub fn due(
        &mut self,
        s: &DaemonSettings,
        now_ns: u64,
        interval_min_ns: u64,
        pid: u32,
        entries: impl FnOnce() -> u64,
    ) -> bool {
        let (since, faults) = *self.procs.entry(pid).or_insert((now_ns, None));
        let elapsed = now_ns.saturating_sub(since);
        let (faults, least, credit) = match faults {
            Some(f) => (f, interval_min_ns, 0),
            None => (entries(), 0, FIRST_CLEAR_CREDIT_NS),
        };
        if elapsed < least || elapsed + credit < budget_wait_ns(s, faults) {
            return false;
        }
        self.procs.insert(pid, (now_ns, Some(0)));
        true
    }
}

/// The time `faults` at the assumed `fault_cost_ns` take to fit `softdirty_budget_pct` of
/// one CPU, ns.
fn budget_wait_ns(s: &DaemonSettings, faults: u64) -> u64 {
    let cost_ns = faults as f64 * s.fault_cost_ns as f64;
    (cost_ns * 100.0 / s.softdirty_budget_pct) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use numabal_policy::numad::{Interval, Numad, Tunables};

    fn numad(i: &str) -> Numad {
        Numad::new(Tunables {
            i: Interval::Text(i.into()),
            ..Tunables::default()
        })
    }

    /// The interval is the policy's at each pass, not the one it asked for at start
    /// (numad's first pass comes at once: 1 ns), never under the floor.
    #[test]
    fn passes_are_paced_by_the_policy_interval_of_the_moment() {
        let s = DaemonSettings::default();
        let n = numad("5:15");
        assert_eq!(n.tick_interval_ns(), Some(1));
        assert_eq!(pass_gap_ns(&s, &n, 1), MIN_INTERVAL_MS * MS);
        assert_eq!(pass_gap_ns(&s, &n, 0), 5000 * MS, "idle_interval_ms");
        assert_eq!(
            interval_range_ns(&s, &n),
            (5000 * MS, 15_000 * MS, "policy")
        );
        // numad -i 0:3 would ask for 0 s after a move: the floor.
        assert_eq!(
            interval_range_ns(&s, &numad("0:3")),
            (MIN_INTERVAL_MS * MS, 3000 * MS, "policy")
        );
        let fixed = DaemonSettings {
            interval_ms: Some(200),
            ..DaemonSettings::default()
        };
        assert_eq!(pass_gap_ns(&fixed, &n, 1), 200 * MS);
        assert_eq!(
            interval_range_ns(&fixed, &n),
            (200 * MS, 200 * MS, "interval_ms")
        );
    }

    /// 8 CPUs over 1 s: 7.2 s idle is 0.8 CPU busy (an idle host with its daemons), 6.9 s
    /// is 1.1 CPUs busy (a program started).
    #[test]
    fn a_busy_host_is_one_busy_cpu_or_more() {
        let s = DaemonSettings::default();
        let n = numad("5:15");
        assert_eq!(idle_look_gap_ns(&s, &n), MIN_INTERVAL_MS * MS);
        assert!(!host_busy(0, 7_200 * MS, 1000 * MS, 8));
        assert!(host_busy(0, 6_900 * MS, 1000 * MS, 8));
        assert!(host_busy(5, 5, 1000 * MS, 1));
        assert!(!host_busy(5, 5, 0, 1));
    }

    /// 40960 faults at 2 µs is 82 ms of CPU: at 5 % of one CPU, 1.6 s apart.
    #[test]
    fn softdirty_clears_are_spaced_by_the_fault_budget() {
        let s = DaemonSettings::default();
        let mut p = ClearPacer::default();
        let gap = 1000 * MS;
        let t0 = 100 * 1000 * MS;
        // 1 GiB of base pages: 10.5 s of the budget, within the first clear's credit;
        // faults sampled before the clear are first touches, not its.
        p.faulted(1, 1_000_000);
        assert!(p.due(&s, t0, gap, 1, || 262_144));
        // It caused 40,960 faults: 1.6384 s of the budget, not one pass.
        p.faulted(1, 40_960);
        assert!(!p.due(&s, t0 + gap, gap, 1, || unreachable!()));
        assert!(p.due(&s, t0 + 1_638_400_000, gap, 1, || unreachable!()));
        // No faults since: the next at the shortest pass gap.
        assert!(!p.due(&s, t0 - 1 + 1_638_400_000 + gap, gap, 1, || unreachable!()));
        assert!(p.due(&s, t0 + 1_638_400_000 + gap, gap, 1, || unreachable!()));
        // 7 million entries (27 GiB of base pages): 280 s of the budget, 60 s of it
        // credited, so 220 s after it was first wanted.
        let big = 7_000_000;
        assert!(!p.due(&s, t0, gap, 2, || big));
        assert!(!p.due(&s, t0 + 219 * 1000 * MS, gap, 2, || big));
        assert!(p.due(&s, t0 + 220 * 1000 * MS, gap, 2, || big));
        // Forgotten when no longer managed: first wanted anew.
        p.retain(|pid| pid == 1);
        assert!(!p.due(&s, t0 + 300 * 1000 * MS, gap, 2, || big));
        assert_eq!(FIRST_CLEAR_CREDIT_NS, 60 * 1000 * MS);
    }

    /// Eight CPUs idle 0.9 + 0.5 + 0.5 + 1 + 0.6 of the pass are 3.5 idle CPUs: four
    /// movers; 3.499, three, or four when the daemon itself ran 0.6 of the pass; an idle
    /// count beyond the time elapsed counts as the time; none idle, or no time elapsed,
    /// still one (the daemon's thread); 16 idle, eight.
    #[test]
    fn movers_are_the_idle_cpus_of_the_pass() {
        let before = [0, 0, 0, 0, 10, 10, 10, 10];
        let now = [900, 0, 500, 500, 1010, 10, 10, 610];
        assert_eq!(movers(&before, &now, 0, 1000), 4);
        let now = [900, 0, 499, 500, 5000, 10, 10, 610];
        assert_eq!(movers(&before, &now, 0, 1000), 3);
        assert_eq!(movers(&before, &now, 600, 1000), 4);
        assert_eq!(movers(&before, &before, 0, 1000), 1);
        assert_eq!(movers(&before, &now, 0, 0), 1);
        assert_eq!(movers(&[0; 16], &[1000; 16], 0, 1000), MAX_MOVERS);
        assert_eq!(movers_for(4, 3 * MIN_SLICE + 1), 3);
        assert_eq!(movers_for(4, 100 * MIN_SLICE), 4);
        assert_eq!(movers_for(4, 10), 1);
    }

    /// The pass's movers over the processes it moves at once.
    #[test]
    fn the_movers_are_shared_out_over_the_processes_moved_at_once() {
        assert_eq!(movers_shares(5, 2), [3, 2]);
        assert_eq!(movers_shares(5, 1), [5]);
        assert_eq!(movers_shares(2, 3), [1, 1, 1], "at least one each");
        assert_eq!(movers_shares(8, 3), [3, 3, 2]);
        assert!(movers_shares(4, 0).is_empty());
    }

    /// A process's move takes as many movers as the CPUs its threads used, when more than
    /// the pass's, never more than MAX_MOVERS; the CPUs used are measured from the last
    /// pass, or from the process's start when it is first seen.
    #[test]
    fn a_process_moves_with_as_many_movers_as_it_runs_threads() {
        let mut c = ProcessCpus::default();
        // Seen first at 10 s: 1: 30 s of CPU in 10 s of age; 2: 5 s in 10 s; 3: no age.
        let first = c.update(
            10_000,
            [
                (1, 30_000, Some(10_000)),
                (2, 5_000, Some(10_000)),
                (3, 1, None),
            ],
        );
        assert_eq!(first, BTreeMap::from([(1, 3), (2, 1)]));
        // 1 s later: 1 ran 12 CPUs' worth; 2 none; 3 half a CPU.
        let next = c.update(
            11_000,
            [
                (1, 42_000, Some(11_000)),
                (2, 5_000, Some(11_000)),
                (3, 501, None),
            ],
        );
        assert_eq!(next, BTreeMap::from([(1, 12), (2, 0), (3, 1)]));
        assert_eq!(process_movers(2, next[&1]), MAX_MOVERS);
        assert_eq!(process_movers(2, next[&2]), 2);
        assert_eq!(process_movers(1, 3), 3);
        assert_eq!(process_movers(0, 0), 1);
    }
}
