//! Group statistics, shared by fork placement (`update_sg_wakeup_stats`, placement.rs)
//! and load balancing (`update_sg_lb_stats`, fbg.rs): the sums over a group's CPUs,
//! `group_classify`, and the NUMA imbalance allowance both apply.

use super::topology::Group;
use super::{CAPACITY, Sched};

const NUMA_IMBALANCE_MIN: u64 = 2;

/// `enum group_type`, in the kernel's order (a later type is busier).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum GroupType {
    HasSpare,
    FullyBusy,
    SmtBalance,
    /// `group_llc_balance` (cache-aware scheduling): threads there prefer the balancing
    /// CPU's LLC.
    LlcBalance,
    Overloaded,
}

/// `struct sg_lb_stats`.
#[derive(Debug, Clone)]
pub(super) struct Sgs {
    pub(super) nr: u64,
    pub(super) idle: u64,
    pub(super) weight: u64,
    pub(super) cores: u64,
    pub(super) load: f64,
    pub(super) util: f64,
    pub(super) runnable: f64,
    pub(super) capacity: f64,
    pub(super) gtype: GroupType,
    pub(super) avg_load: f64,
    pub(super) smt: bool,
    /// `nr_pref_dst_llc`: tasks outside the balancing CPU's LLC that prefer it.
    pub(super) nr_pref_dst_llc: u64,
}

impl Sched {
    /// The sums over a group's CPUs, in CPU order; classified as having spare capacity,
    /// with no average load, until the caller says otherwise.
    pub(super) fn sum_group(&self, g: &Group) -> Sgs {
        let mut s = Sgs {
            nr: 0,
            idle: 0,
            weight: g.cpus.len() as u64,
            cores: g.cores as u64,
            load: 0.0,
            util: 0.0,
            runnable: 0.0,
            capacity: CAPACITY * g.cpus.len() as f64,
            gtype: GroupType::HasSpare,
            avg_load: 0.0,
            smt: g.smt,
            nr_pref_dst_llc: 0,
        };
        for &c in &g.cpus {
            let nr = self.cpus[c].tasks.len() as u64;
            s.nr += nr;
            s.load += self.cpu_load(c);
            s.util += self.cpu_util(c);
            s.runnable += self.cpu_load(c);
            if nr == 0 {
                s.idle += 1;
            }
        }
        s
    }
}

/// `group_classify` with `group_is_overloaded` and `group_has_capacity`; `smt_balance` is
/// `sgs->group_smt_balance` and `llc_balance` cache-aware scheduling's `llc_balance()`,
/// which only `update_sg_lb_stats` sets.
pub(super) fn group_classify(pct: u64, s: &Sgs, smt_balance: bool, llc_balance: bool) -> GroupType {
    let overloaded = s.nr > s.weight
        && (s.capacity * 100.0 < s.util * pct as f64
            || s.capacity * (pct as f64) < s.runnable * 100.0);
    let has_capacity = s.nr < s.weight
        || !(s.capacity * (pct as f64) < s.runnable * 100.0)
            && s.capacity * 100.0 > s.util * pct as f64;
    if overloaded {
        GroupType::Overloaded
    } else if llc_balance {
        GroupType::LlcBalance
    } else if smt_balance {
        GroupType::SmtBalance
    } else if !has_capacity {
        GroupType::FullyBusy
    } else {
        GroupType::HasSpare
    }
}

/// `adjust_numa_imbalance`: a destination running at most `imb_numa_nr` tasks may keep
/// an imbalance of up to `NUMA_IMBALANCE_MIN` tasks.
pub(super) fn adjust_numa_imbalance(imb: u64, dst_running: u64, imb_numa_nr: u64) -> u64 {
    if dst_running > imb_numa_nr {
        return imb;
    }
    if imb <= NUMA_IMBALANCE_MIN {
        return 0;
    }
    imb
}
