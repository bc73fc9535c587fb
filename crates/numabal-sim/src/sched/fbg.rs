//! Finding the imbalance at one level (kernel/sched/fair.c): the statistics of the groups
//! (`update_sd_lb_stats`), the busiest group and whether pulling from it is worth it
//! (`find_busiest_group`), how much to pull and in which unit (`calculate_imbalance`),
//! and the busiest runqueue of that group (`find_busiest_queue`, with NUMA's `fbq_type`).
//! balance.rs runs these and moves the tasks.

use super::balance::LbEnv;
use super::stats::{GroupType, Sgs, adjust_numa_imbalance, group_classify};
use super::topology::Group;
use super::{CAPACITY, Sched};

/// `enum migration_type`: what `env.imbalance` counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Migration {
    Task,
    Load,
    Util,
    /// `migrate_llc_task` (cache-aware scheduling): one task preferring the balancing
    /// CPU's LLC.
    LlcTask,
}

/// `enum fbq_type`, in the kernel's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Fbq {
    Regular,
    Remote,
    All,
}

/// `struct sd_lb_stats`: the local group's statistics, the busiest other group (its
/// index in the ring and statistics) and the level's average load.
struct SdLbStats {
    local: Sgs,
    busiest: Option<(usize, Sgs)>,
    avg_load: f64,
}

impl Sched {
    /// `update_sg_lb_stats`; only a non-local group whose balancing CPU is idle can be
    /// `smt_balance`, only a non-local one above the LLC `llc_balance`.
    fn update_sg_lb_stats(&self, env: &LbEnv, g: &Group, local: bool) -> Sgs {
        let mut s = self.sum_group(g);
        // group_smt_balance: a non-local SMT core running two tasks while dst is idle.
        let smt_balance = !local && env.dst_idle() && g.smt && s.nr > 1;
        let llc_balance = !local && self.llc_balance(env, g, &mut s);
        s.gtype = group_classify(env.imbalance_pct, &s, smt_balance, llc_balance);
        // Balancing computes avg_load only for overloaded groups.
        if s.gtype == GroupType::Overloaded {
            s.avg_load = s.load * CAPACITY / s.capacity;
        }
        s
    }

    /// `update_sd_lb_stats` over `groups`, the span's groups in ring order from the local
    /// one (`groups[0]`).
    fn update_sd_lb_stats(&self, env: &LbEnv, groups: &[&Group]) -> SdLbStats {
        let local = self.update_sg_lb_stats(env, groups[0], true);
        let mut busiest: Option<(usize, Sgs)> = None;
        let mut total_load = local.load;
        let mut total_cap = local.capacity;
        for (gi, g) in groups.iter().enumerate().skip(1) {
            let s = self.update_sg_lb_stats(env, g, false);
            total_load += s.load;
            total_cap += s.capacity;
            if s.nr == 0 {
                continue;
            }
            if busiest
                .as_ref()
                .is_none_or(|(_, b)| update_sd_pick_busiest(b, &s))
            {
                busiest = Some((gi, s));
            }
        }
        SdLbStats {
            local,
            busiest,
            avg_load: total_load * CAPACITY / total_cap,
        }
    }

    /// `find_busiest_group` (`sched_balance_find_src_group` since Linux 6.10): the index in
    /// `groups` of the group to pull from, with `env.migration_type` and `env.imbalance`
    /// set, or `None` when the level is balanced.
    pub(super) fn find_busiest_group(&self, env: &mut LbEnv, groups: &[&Group]) -> Option<usize> {
        let sds = self.update_sd_lb_stats(env, groups);
        let (bgi, b) = sds.busiest?;
        let local = &sds.local;
        let pct = env.imbalance_pct;
        let dst_idle = env.dst_idle();
        if local.gtype > b.gtype {
            return None;
        }
        if local.gtype == GroupType::Overloaded {
            let lavg = local.load * CAPACITY / local.capacity;
            if lavg >= b.avg_load || lavg >= sds.avg_load || 100.0 * b.avg_load <= pct as f64 * lavg
            {
                return None;
            }
        }
        // SD_PREFER_SIBLING: even out sibling groups' task counts (`goto force_balance`,
        // past the idle-CPU tests below).
        let force = env.span.prefer_sibling
            && local.gtype == GroupType::HasSpare
            && (sibling_imbalance(dst_idle, &b, local) > 1 || b.gtype == GroupType::LlcBalance);
        if !force && b.gtype != GroupType::Overloaded {
            let out = !dst_idle
                || (b.gtype != GroupType::SmtBalance || local.smt == b.smt)
                    && ((b.weight > 1 && local.idle <= b.idle + 1) || b.nr == 1);
            if out {
                return None;
            }
        }
        calculate_imbalance(env, local, &b, sds.avg_load);
        if env.imbalance <= 0.0 {
            return None;
        }
        Some(bgi)
    }

    /// `find_busiest_queue` (`sched_balance_find_src_rq` since 6.10): the runqueue of
    /// group `bg` to pull from.
    pub(super) fn find_busiest_queue(&self, env: &LbEnv, bg: &Group) -> Option<usize> {
        let cpu = env.dst_cpu;
        // fbq_type: on NUMA levels, runqueues whose tasks are better placed than the
        // busiest group's are passed over, so well-placed NUMA tasks are pulled last.
        let fbq_type = if env.numa {
            let (nr, numa_nr, pref) = bg.cpus.iter().fold((0, 0, 0), |acc, &c| {
                let (a, b, p) = self.fbq_counts(c);
                (acc.0 + a, acc.1 + b, acc.2 + p)
            });
            fbq_classify(nr, numa_nr, pref)
        } else {
            Fbq::All
        };
        let mut src: Option<usize> = None;
        let mut best = (0.0f64, 0usize);
        for &c in &bg.cpus {
            let nr = self.cpus[c].tasks.len();
            if nr == 0 {
                continue;
            }
            // LBF_ALL_PINNED: a runqueue none of whose tasks may run here is taken out of
            // the search and the search redone (`goto redo`): pass over it.
            if !self.cpus[c]
                .tasks
                .iter()
                .any(|&t| self.tasks[t as usize].allowed.contains(cpu))
            {
                continue;
            }
            if env.numa {
                let (a, b, p) = self.fbq_counts(c);
                if fbq_classify(a, b, p) > fbq_type {
                    continue;
                }
            }
            let better = match env.migration_type {
                Migration::Task => nr as f64 > best.0,
                Migration::Load => {
                    let l = self.cpu_load(c);
                    if nr == 1 && l > env.imbalance {
                        false
                    } else {
                        l > best.0
                    }
                }
                Migration::Util => nr > 1 && self.cpu_util(c) > best.0,
                Migration::LlcTask => self.llc_count(c, self.llc_of[cpu]) as f64 > best.0,
            };
            if better {
                best = match env.migration_type {
                    Migration::Task => (nr as f64, c),
                    Migration::Load => (self.cpu_load(c), c),
                    Migration::Util => (self.cpu_util(c), c),
                    Migration::LlcTask => (self.llc_count(c, self.llc_of[cpu]) as f64, c),
                };
                src = Some(c);
            }
        }
        src
    }

    /// (`nr_running`, `nr_numa_running`, `nr_preferred_running`) of a runqueue.
    pub fn fbq_counts(&self, cpu: usize) -> (usize, usize, usize) {
        let node = self.cpu_node[cpu];
        let mut numa = 0;
        let mut pref = 0;
        for &t in &self.cpus[cpu].tasks {
            if let Some(p) = self.tasks[t as usize].numa_preferred_nid {
                numa += 1;
                if p == node {
                    pref += 1;
                }
            }
        }
        (self.cpus[cpu].tasks.len(), numa, pref)
    }
}

/// `update_sd_pick_busiest`: whether group statistics `s` are busier than `busiest`'s.
fn update_sd_pick_busiest(busiest: &Sgs, s: &Sgs) -> bool {
    let b = busiest;
    if s.gtype != b.gtype {
        return s.gtype > b.gtype;
    }
    match s.gtype {
        GroupType::Overloaded => s.avg_load > b.avg_load,
        // update_llc_busiest: more tasks preferring the balancing CPU's LLC.
        GroupType::LlcBalance => s.nr_pref_dst_llc > b.nr_pref_dst_llc,
        GroupType::FullyBusy => !(s.avg_load < b.avg_load || (s.avg_load == b.avg_load && b.smt)),
        // smt_balance groups with no idle CPU compare like fully busy ones.
        GroupType::SmtBalance if s.idle == 0 && b.idle == 0 => {
            !(s.avg_load < b.avg_load || (s.avg_load == b.avg_load && b.smt))
        }
        GroupType::SmtBalance | GroupType::HasSpare => {
            if s.smt != b.smt {
                !(s.smt && s.nr <= 1)
            } else {
                !(s.idle > b.idle || (s.idle == b.idle && s.nr <= b.nr))
            }
        }
    }
}

/// `sibling_imbalance`: the task imbalance between the busiest group `b` and the local
/// group `l`, scaled by their numbers of cores; only an idle CPU evens out task counts.
fn sibling_imbalance(dst_idle: bool, b: &Sgs, l: &Sgs) -> u64 {
    if !dst_idle || b.nr == 0 {
        return 0;
    }
    if b.cores == l.cores {
        return b.nr.saturating_sub(l.nr);
    }
    let mut imb = (l.cores * b.nr).saturating_sub(b.cores * l.nr);
    imb = (2 * imb + l.cores + b.cores) / (l.cores + b.cores);
    if imb <= 1 && l.nr == 0 && b.nr > 1 {
        imb = 2;
    }
    imb
}

/// `calculate_imbalance`: sets `env.migration_type` and `env.imbalance` from the local
/// group, the busiest group `b` and the level's average load.
fn calculate_imbalance(env: &mut LbEnv, local: &Sgs, b: &Sgs, sds_avg: f64) {
    let dst_idle = env.dst_idle();
    let prefer_sibling = env.span.prefer_sibling;
    let (mtype, imbalance): (Migration, f64) = if b.gtype == GroupType::SmtBalance {
        (Migration::Task, 1.0)
    } else if b.gtype == GroupType::LlcBalance {
        (Migration::LlcTask, 1.0)
    } else if local.gtype == GroupType::HasSpare {
        if b.gtype > GroupType::FullyBusy && !env.share_llc {
            let mut imb = (local.capacity.max(local.util) - local.util).max(0.0);
            if dst_idle && imb == 0.0 {
                (Migration::Task, 1.0)
            } else {
                if imb < 1.0 {
                    imb = 0.0;
                }
                (Migration::Util, imb)
            }
        } else {
            let mut imb = if b.weight == 1 || prefer_sibling {
                sibling_imbalance(dst_idle, b, local)
            } else {
                local.idle.saturating_sub(b.idle)
            };
            if env.numa {
                imb = adjust_numa_imbalance(imb, local.nr + 1, env.span.imb_numa_nr);
            }
            (Migration::Task, (imb >> 1) as f64)
        }
    } else {
        let lavg = local.load * CAPACITY / local.capacity;
        if local.gtype < GroupType::Overloaded && (lavg >= b.avg_load || lavg >= sds_avg) {
            (Migration::Load, 0.0)
        } else {
            let imb = ((b.avg_load - sds_avg) * b.capacity).min((sds_avg - lavg) * local.capacity)
                / CAPACITY;
            (Migration::Load, imb.max(0.0))
        }
    };
    env.migration_type = mtype;
    env.imbalance = imbalance;
}

/// `fbq_classify_group` / `fbq_classify_rq`.
fn fbq_classify(nr: usize, numa: usize, preferred: usize) -> Fbq {
    if nr > numa {
        Fbq::Regular
    } else if nr > preferred {
        Fbq::Remote
    } else {
        Fbq::All
    }
}
