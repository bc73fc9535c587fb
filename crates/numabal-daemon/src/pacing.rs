//! When passes come, and when softdirty clears a process's bits again.
//!
//! ```text
//!   pass gap   interval_ms if set, else the policy's interval asked after every pass
//!              (numad's -i min:max moves between the two), else DEFAULT_INTERVAL_MS;
//!              never under MIN_INTERVAL_MS; with nothing managed, at least
//!              idle_interval_ms
//!   softdirty  after a clear, the faults it caused (samples × sample_period) at the
//!              assumed fault_cost_ns, spread over enough time to stay within
//!              softdirty_budget_pct of one CPU; at least the shortest pass gap
//!   movers     threads moving pages: the CPU time over the last pass gap that no other
//!              program used (CPUs' idle time and the daemon's own), in CPUs,
//!              1..=MAX_MOVERS
//! ```

use crate::{DaemonSettings, MIN_INTERVAL_MS, MS};
use numabal_policy::Policy;

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

/// softdirty: when a process whose bits are cleared now may be cleared again, ns: the
/// `faults` the last clear caused, at the assumed `fault_cost_ns`, spread over enough time
/// to stay within `softdirty_budget_pct` of one CPU; at least `interval_min_ns`.
pub fn next_clear_ns(s: &DaemonSettings, now_ns: u64, faults: u64, interval_min_ns: u64) -> u64 {
    let cost_ns = faults as f64 * s.fault_cost_ns as f64;
    let wait = (cost_ns * 100.0 / s.softdirty_budget_pct) as u64;
    now_ns + wait.max(interval_min_ns)
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
        assert_eq!(next_clear_ns(&s, 0, 40_960, 1000 * MS), 1_638_400_000);
        assert_eq!(next_clear_ns(&s, 7, 0, 1000 * MS), 7 + 1000 * MS);
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
}
