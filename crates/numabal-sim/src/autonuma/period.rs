//! Scan-period bounds and adaptation (kernel/sched/fair.c: `task_nr_scan_windows`,
//! `task_scan_min`, `task_scan_start`, `task_scan_max`, `update_task_scan_period`).
//! Integer arithmetic as in the kernel, so hand-worked values match exactly.

use super::tunables::Tunables;

/// "Never scan more than this many MB/s."
pub const MAX_SCAN_WINDOW: u64 = 2560;
/// The period is split into this many slots when adapting it.
pub const NUMA_PERIOD_SLOTS: u64 = 10;
/// Aim for 70% local (or private) faults.
pub const NUMA_PERIOD_THRESHOLD: u64 = 7;

/// `task_nr_scan_windows`: the RSS in `scan_size_mb` windows, at least one.
pub fn nr_scan_windows(rss_pages: u64, tun: &Tunables) -> u64 {
    let nr_scan_pages = tun.scan_pages();
    let rss = if rss_pages == 0 {
        nr_scan_pages
    } else {
        rss_pages
    };
    rss.div_ceil(nr_scan_pages).max(1)
}

/// What a numa_group contributes to the period bounds: its task count and its decayed
/// `NUMA_MEM` shared and private faults summed over nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupShare {
    /// `refcount_read(&ng->refcount)`.
    pub refcount: u64,
    /// Shared faults (priv index 0).
    pub shared: u64,
    /// Private faults (priv index 1).
    pub private: u64,
}

/// `task_scan_min`: per-window period floor, ms.
pub fn task_scan_min(rss_pages: u64, tun: &Tunables) -> u64 {
    let windows = MAX_SCAN_WINDOW / tun.scan_size_mb;
    let floor = 1000u64.checked_div(windows).unwrap_or(1000);
    floor.max(tun.scan_period_min_ms / nr_scan_windows(rss_pages, tun))
}

/// `task_scan_start`: the first period of a task, ms (group-scaled `task_scan_min`).
pub fn task_scan_start(rss_pages: u64, tun: &Tunables, group: Option<GroupShare>) -> u64 {
    let smin = task_scan_min(rss_pages, tun);
    let mut period = smin;
    if let Some(g) = group {
        let shared = g.shared;
        let private = g.private;
        period *= g.refcount;
        period *= shared + 1;
        period /= private + shared + 1;
    }
    smin.max(period)
}

/// `task_scan_max`: per-window period ceiling, ms (group-scaled).
pub fn task_scan_max(rss_pages: u64, tun: &Tunables, group: Option<GroupShare>) -> u64 {
    let smin = task_scan_min(rss_pages, tun);
    let mut smax = tun.scan_period_max_ms / nr_scan_windows(rss_pages, tun);
    if let Some(g) = group {
        let period = smax * g.refcount * (g.shared + 1) / (g.private + g.shared + 1);
        smax = smax.max(period);
    }
    smin.max(smax)
}

/// What `update_task_scan_period` decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeriodUpdate {
    /// Idle or migrating too fast: the period doubled (capped at the max) and the mm's next
    /// scan is pushed out by the new period. `numa_faults_locality` is left as it is.
    Doubled(u64),
    /// The period moved by slots within [min, max]; the locality counters are cleared.
    Adjusted(u64),
}

impl PeriodUpdate {
    /// The new `numa_scan_period`.
    pub fn period(self) -> u64 {
        match self {
            PeriodUpdate::Doubled(p) | PeriodUpdate::Adjusted(p) => p,
        }
    }
}

/// `update_task_scan_period(p, shared, private)`: `locality` is
/// `numa_faults_locality` = [remote, local, failed migrations]; `min`/`max` are
/// `task_scan_min`/`task_scan_max` of the task; `period_max` its `numa_scan_period_max`.
/// The kernel's comments on the two slow-down branches are swapped relative to their
/// conditions; this is what executes (private checked first).
pub fn update_task_scan_period(
    period: u64,
    period_max: u64,
    shared: u64,
    private: u64,
    locality: [u64; 3],
    min: u64,
    max: u64,
) -> PeriodUpdate {
    let [remote, local, failed] = locality;
    if local + shared == 0 || failed > 0 {
        return PeriodUpdate::Doubled(period_max.min(period * 2));
    }
    let slot = period.div_ceil(NUMA_PERIOD_SLOTS).max(1);
    let lr = (local * NUMA_PERIOD_SLOTS) / (local + remote).max(1);
    let ps = (private * NUMA_PERIOD_SLOTS) / (private + shared).max(1);
    let th = NUMA_PERIOD_THRESHOLD;
    let new = if ps >= th {
        period + (ps - th).max(1) * slot
    } else if lr >= th {
        period + (lr - th).max(1) * slot
    } else {
        let diff = (th - ps.max(lr)) * slot;
        period.saturating_sub(diff)
    };
    PeriodUpdate::Adjusted(new.clamp(min, max.max(min)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 256; // pages per MiB

    /// The RSS table of the research notes, §2.1.
    #[test]
    fn scan_min_max_table() {
        let t = Tunables::default();
        let rows = [
            (200 * MB, 1, 1000, 60000),
            (256 * MB, 1, 1000, 60000),
            (1024 * MB, 4, 250, 15000),
            (4096 * MB, 16, 100, 3750),
            (65536 * MB, 256, 100, 234),
        ];
        for (rss, w, min, max) in rows {
            assert_eq!(nr_scan_windows(rss, &t), w, "rss {rss}");
            assert_eq!(task_scan_min(rss, &t), min, "rss {rss}");
            assert_eq!(task_scan_max(rss, &t, None), max, "rss {rss}");
        }
        // An empty mm counts as one window.
        assert_eq!(nr_scan_windows(0, &t), 1);
        // 200 GiB: the floor holds both bounds at 100 ms.
        assert_eq!(task_scan_max(200 * 1024 * MB, &t, None), 100);
        // scan_size_mb >= 2560: the floor is 1000 ms.
        let big = Tunables {
            scan_size_mb: 4096,
            ..Tunables::default()
        };
        assert_eq!(task_scan_min(64 * 1024 * MB, &big), 1000);
    }

    #[test]
    fn group_scaling() {
        let t = Tunables::default();
        // 1 GiB, 4 tasks, mostly shared: max 15000 * 4 * 901 / 1001 = 54005 (54005.99).
        let g = GroupShare {
            refcount: 4,
            shared: 900,
            private: 100,
        };
        assert_eq!(task_scan_max(1024 * MB, &t, Some(g)), 54005);
        assert_eq!(task_scan_start(1024 * MB, &t, Some(g)), 900);
        // Mostly private: the scaled value is below the plain one, which wins.
        let p = GroupShare {
            refcount: 2,
            shared: 0,
            private: 1000,
        };
        assert_eq!(task_scan_max(1024 * MB, &t, Some(p)), 15000);
        assert_eq!(task_scan_start(1024 * MB, &t, Some(p)), 250);
    }

    #[test]
    fn update_each_branch() {
        // (period, max, shared, private, locality, min, max) -> result, worked by hand.
        // Idle (no local, no shared): double, capped by numa_scan_period_max.
        assert_eq!(
            update_task_scan_period(1000, 60000, 0, 50, [50, 0, 0], 1000, 60000),
            PeriodUpdate::Doubled(2000)
        );
        assert_eq!(
            update_task_scan_period(40000, 60000, 0, 0, [0, 0, 0], 1000, 60000),
            PeriodUpdate::Doubled(60000)
        );
        // A failed migration doubles even when faults look good.
        assert_eq!(
            update_task_scan_period(1000, 60000, 10, 90, [0, 100, 1], 1000, 60000),
            PeriodUpdate::Doubled(2000)
        );
        // Mostly private (ps = 9): +2 slots of 100.
        assert_eq!(
            update_task_scan_period(1000, 60000, 10, 90, [90, 10, 0], 1000, 60000),
            PeriodUpdate::Adjusted(1200)
        );
        // ps exactly 7: +max(0,1) = 1 slot.
        assert_eq!(
            update_task_scan_period(1000, 60000, 30, 70, [90, 10, 0], 1000, 60000),
            PeriodUpdate::Adjusted(1100)
        );
        // Shared (ps = 2) but local (lr = 8): +1 slot.
        assert_eq!(
            update_task_scan_period(1000, 60000, 80, 20, [20, 80, 0], 1000, 60000),
            PeriodUpdate::Adjusted(1100)
        );
        // Shared and remote: ps = 2, lr = 4: -(7 - 4) = -3 slots, clamped to min.
        assert_eq!(
            update_task_scan_period(2000, 60000, 80, 20, [60, 40, 0], 1000, 60000),
            PeriodUpdate::Adjusted(1400)
        );
        assert_eq!(
            update_task_scan_period(1000, 60000, 80, 20, [60, 40, 0], 1000, 60000),
            PeriodUpdate::Adjusted(1000)
        );
        // slot rounds up: period 95 -> slot 10.
        assert_eq!(
            update_task_scan_period(95, 60000, 0, 10, [0, 10, 0], 10, 60000),
            PeriodUpdate::Adjusted(125)
        );
        // Clamped to the max.
        assert_eq!(
            update_task_scan_period(3700, 3750, 0, 10, [0, 10, 0], 100, 3750),
            PeriodUpdate::Adjusted(3750)
        );
    }
}
