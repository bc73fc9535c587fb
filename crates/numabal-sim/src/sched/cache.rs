//! Cache-aware scheduling (`CONFIG_SCHED_CACHE`, Linux 7.2, kernel/sched/fair.c): the load
//! balancer gathers a process's threads on the LLC where the process has run most.
//! `sim.llc_balancing` turns it on (the kernel's debugfs `sched/llc_balancing/enabled`,
//! on by default in 7.2); it needs more than one LLC of more than one CPU
//! (`sched_cache_present`).
//!
//! ```text
//!   update_load ── account_mm_sched: each process's share of each CPU's run time,
//!                  halved every llc_epoch_period (10 ms)
//!   tick ───────── task_cache_work (once per 10 ms per process): the preferred LLC is
//!                  the one with the largest summed share, switched only at 2x;
//!                  nr_running_avg (integer EWMA of the threads running now);
//!                  preferred_llc of the queued threads (none on a NUMA conflict)
//!   load_balance ─ record_sg_llc_stats (first level above the LLC, not newly idle)
//!                  llc_balance: a remote group with threads preferring dst's LLC,
//!                    when can_migrate_llc says MIG_LLC, is group_llc_balance
//!                  migrate_llc_task: one such thread, actively if it runs alone
//!                  migrate_degrades_llc: other moves may not break a preference
//!                  alb_break_llc: no active move off a CPU whose threads are home
//! ```
//!
//! can_migrate_llc, on the LLCs' summed utilisation (util < 75 % of capacity "fits",
//! 50 % with SMT; "greater" is more than 1.2x):
//!
//! ```text
//!   both LLCs over capacity after the move             unrestricted (generic balancing)
//!   to the preferred LLC: it would not fit and be greater than the source   forbid
//!   away from it: it would still fit, or not be greater than the destination  forbid
//!   otherwise                                           migrate (MIG_LLC)
//! ```
//!
//! Simplifications (docs/model-notes.md, "Cache-aware scheduling"): run time decays
//! continuously at the epochs' rate instead of halving at each 10 ms boundary; the
//! capacity test (`exceed_llc_capacity`) never refuses, as the process's footprint, the
//! NUMA-hinting-fault pages of `task_numa_placement`, is not kept (it is 0 without NUMA
//! balancing's normal mode); a refusal by `invalid_llc_nr` inside `can_migrate_llc_task`
//! clears the preference at the next tick, not at once; the stopper moves the source's
//! current task, as for every active balance here.

use super::balance::LbEnv;
use super::stats::Sgs;
use super::topology::Group;
use super::{CAPACITY, Sched};

/// `llc_epoch_period`: 10 ms.
const EPOCH_NS: f64 = 10e6;
/// `llc_epoch_affinity_timeout`: a process none of whose threads ran for this many
/// epochs loses its preference.
const AFFINITY_TIMEOUT_NS: u64 = 5 * 10_000_000;
/// `llc_imb_pct`.
const LLC_IMB_PCT: f64 = 20.0;
/// `llc_overaggr_pct`, raised by half without SMT.
const LLC_OVERAGGR_PCT: f64 = 50.0;

/// `enum llc_mig`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LlcMig {
    Forbid,
    Llc,
    Unrestricted,
}

/// A process's `mm->sc_stat`.
#[derive(Debug, Clone, Default)]
struct MmSched {
    /// Its threads' decayed run time per CPU (`pcpu_sched->runtime`), ns.
    runtime: Vec<f64>,
    /// `sc_stat.cpu`: the CPU whose LLC is preferred.
    cpu: Option<usize>,
    /// `sc_stat.nr_running_avg`.
    nr_running_avg: i64,
    /// `sc_stat.next_scan`, ns.
    next_scan: u64,
    /// The last tick at which a thread of it ran (`sc_stat.epoch`), ns.
    last_run: u64,
    /// Its live threads (`get_nr_threads`), kept here as the balancer asks on every check.
    nr_threads: usize,
}

/// Cache-aware scheduling's state.
#[derive(Debug, Clone, Default)]
pub(super) struct SchedCache {
    pub(super) enabled: bool,
    /// By process (`Task::mm`).
    mms: Vec<MmSched>,
    /// Each CPU's decayed run time of user threads (`rq->cpu_runtime`), ns.
    cpu_runtime: Vec<f64>,
    /// Per LLC, the (utilisation, capacity) `record_sg_llc_stats` last wrote.
    llc_stats: Vec<(f64, f64)>,
    /// `cpu_smt_num_threads`.
    smt_threads: usize,
}

impl Sched {
    /// Turn cache-aware scheduling on (`sim.llc_balancing`); nothing changes unless the
    /// topmost level sharing an LLC has a parent (`sched_cache_present`: several LLCs, of
    /// more than one CPU).
    pub fn enable_llc_balancing(&mut self) {
        let nllc = self.llc_cpus.len();
        let top = self.levels.iter().rposition(|l| l.share_llc());
        if top.is_none_or(|i| i + 1 >= self.levels.len()) {
            return;
        }
        let c = &mut self.cache;
        c.enabled = true;
        c.cpu_runtime = vec![0.0; self.cpus.len()];
        c.llc_stats = vec![(0.0, 0.0); nllc];
        c.smt_threads = self.core_cpus.iter().map(Vec::len).max().unwrap_or(1);
    }

    /// The task belongs to process `mm` (its threads share one preference).
    pub fn set_mm(&mut self, tid: u32, mm: u32) {
        self.tasks[tid as usize].mm = Some(mm);
        let c = &mut self.cache;
        if !c.enabled {
            return;
        }
        if c.mms.len() <= mm as usize {
            let n = self.cpus.len();
            c.mms.resize_with(mm as usize + 1, || MmSched {
                runtime: vec![0.0; n],
                ..MmSched::default()
            });
        }
        c.mms[mm as usize].nr_threads += 1;
    }

    /// A thread of a process left (`exit`).
    pub(super) fn llc_task_exit(&mut self, tid: u32) {
        if let Some(mm) = self.tasks[tid as usize].mm.filter(|_| self.cache.enabled) {
            self.cache.mms[mm as usize].nr_threads -= 1;
        }
    }

    /// `account_mm_sched`'s run time over `dt` ns, the runqueues as they are (each of a
    /// CPU's `k` tasks ran `dt / k`).
    pub(super) fn account_llc_runtime(&mut self, dt: u64) {
        if !self.cache.enabled {
            return;
        }
        let decay = 0.5f64.powf(dt as f64 / EPOCH_NS);
        let c = &mut self.cache;
        // A process without threads is never read again.
        for m in c.mms.iter_mut().filter(|m| m.nr_threads > 0) {
            m.runtime.iter_mut().for_each(|r| *r *= decay);
        }
        for (cpu, q) in self.cpus.iter().enumerate() {
            c.cpu_runtime[cpu] *= decay;
            if q.tasks.is_empty() {
                continue;
            }
            let share = dt as f64 / q.tasks.len() as f64;
            for &t in &q.tasks {
                if let Some(mm) = self.tasks[t as usize].mm {
                    c.mms[mm as usize].runtime[cpu] += share;
                    c.cpu_runtime[cpu] += share;
                }
            }
        }
    }

    /// At a tick: a running thread of each process scans (`task_cache_work`) when due, and
    /// the queued threads take the process's preferred LLC (`account_mm_sched`).
    pub fn tick_llc(&mut self, now: u64) {
        if !self.cache.enabled {
            return;
        }
        // The running (current) threads, in CPU order; the first of each process scans.
        let running: Vec<(u32, usize, usize)> = (0..self.cpus.len())
            .filter_map(|cpu| {
                let &t = self.cpus[cpu].tasks.first()?;
                Some((t, self.tasks[t as usize].mm? as usize, cpu))
            })
            .collect();
        let mut scanned = vec![false; self.cache.mms.len()];
        for &(t, mm, cpu) in &running {
            let m = &mut self.cache.mms[mm];
            if now.saturating_sub(m.last_run) > AFFINITY_TIMEOUT_NS {
                m.cpu = None;
            }
            m.last_run = now;
            if !scanned[mm] && now >= m.next_scan {
                scanned[mm] = true;
                self.task_cache_work(mm, t, cpu, now);
            }
            if self.invalid_llc_nr(mm, cpu) {
                self.cache.mms[mm].cpu = None;
            }
        }
        for q in 0..self.cpus.len() {
            for i in 0..self.cpus[q].tasks.len() {
                let t = self.cpus[q].tasks[i];
                let pref = self.pref_llc(t);
                self.tasks[t as usize].preferred_llc = pref;
            }
        }
    }

    /// `get_pref_llc`: the process's preferred LLC, none if it is on another node than
    /// the task's NUMA-preferred one.
    fn pref_llc(&self, t: u32) -> Option<usize> {
        let task = &self.tasks[t as usize];
        let cpu = self.cache.mms.get(task.mm? as usize)?.cpu?;
        match task.numa_preferred_nid {
            Some(n) if self.cpu_node[cpu] != n => None,
            _ => Some(self.llc_of[cpu]),
        }
    }

    /// `invalid_llc_nr` at `cpu`: a single thread, or more threads running on average
    /// than `cpu`'s LLC has cores (`fits_capacity`, with `llc_aggr_tolerance` 1).
    fn invalid_llc_nr(&self, mm: usize, cpu: usize) -> bool {
        if self.cache.mms[mm].nr_threads <= 1 {
            return true;
        }
        let avg = self.cache.mms[mm].nr_running_avg.max(0) as u64;
        let llc_size = self.llc_cpus[self.llc_of[cpu]].len() as u64;
        avg * self.cache.smt_threads as u64 * 1280 >= llc_size * 1024
    }

    /// `task_cache_work` for process `mm`, run by its thread `t` on `cpu`.
    fn task_cache_work(&mut self, mm: usize, t: u32, cpu: usize, now: u64) {
        self.cache.mms[mm].next_scan = now + EPOCH_NS as u64;
        if self.invalid_llc_nr(mm, cpu) {
            // Returns before the average is updated: once over the limit, it stays.
            self.cache.mms[mm].cpu = None;
            return;
        }
        let scan = self.llc_scan_cpus(mm, t);
        let m = &self.cache.mms[mm];
        let cur_llc = m.cpu.map(|c| self.llc_of[c]);
        let (mut best, mut best_cpu, mut cur_occ, mut nr_running) = (0.0f64, None, 0.0f64, 0i64);
        for (llc, cpus) in self.llc_cpus.iter().enumerate() {
            if !cpus.iter().any(|&c| scan[c]) {
                continue;
            }
            let (mut a_occ, mut m_occ, mut m_cpu) = (0.0f64, 0.0f64, None);
            for &c in cpus {
                let occ = CAPACITY * m.runtime[c] / (self.cache.cpu_runtime[c] + 1.0);
                a_occ += occ;
                if occ > m_occ {
                    (m_occ, m_cpu) = (occ, Some(c));
                }
                let cur = self.cpus[c].tasks.first();
                if cur.is_some_and(|&x| self.tasks[x as usize].mm == Some(mm as u32)) {
                    nr_running += 1;
                }
            }
            if a_occ > best {
                (best, best_cpu) = (a_occ, m_cpu);
            }
            if cur_llc == Some(llc) {
                cur_occ = a_occ;
            }
        }
        let llc_size = self.llc_cpus[self.llc_of[cpu]].len() as i64;
        let m = &mut self.cache.mms[mm];
        if best > 2.0 * cur_occ {
            m.cpu = best_cpu;
        }
        // update_avg_scale: integer division, truncated toward zero.
        m.nr_running_avg += (nr_running - m.nr_running_avg) / (llc_size >> 2).clamp(2, 8);
    }

    /// `get_scan_cpumasks`: every CPU, or with a NUMA-preferred node that node, the
    /// preferred LLC's node and the task's own.
    fn llc_scan_cpus(&self, mm: usize, t: u32) -> Vec<bool> {
        let task = &self.tasks[t as usize];
        let Some(pref) = task.numa_preferred_nid else {
            return vec![true; self.cpus.len()];
        };
        let own = task.cpu.map(|c| self.cpu_node[c]);
        let llc_node = self.cache.mms[mm].cpu.map(|c| self.cpu_node[c]);
        (0..self.cpus.len())
            .map(|c| {
                let n = self.cpu_node[c];
                n == pref || Some(n) == own || Some(n) == llc_node
            })
            .collect()
    }

    /// `record_sg_llc_stats` for the groups of a level whose groups are LLCs.
    pub(super) fn record_llc_stats(&mut self, groups: &[&Group]) {
        for g in groups {
            let util: f64 = g.cpus.iter().map(|&c| self.cpu_util(c)).sum();
            let llc = self.llc_of[g.cpus[0]];
            self.cache.llc_stats[llc] = (util, CAPACITY * g.cpus.len() as f64);
        }
    }

    /// `llc_balance`: group `g` (not the local one), of a level above the LLC, has tasks
    /// preferring the balancing CPU's LLC (`s.nr_pref_dst_llc`, set here), and that LLC
    /// may take one (`can_migrate_llc` of no task toward it); not after
    /// `cache_nice_tries + 1` failures.
    pub(super) fn llc_balance(&self, env: &LbEnv, g: &Group, s: &mut Sgs) -> bool {
        if !self.cache.enabled || env.share_llc {
            return false;
        }
        s.nr_pref_dst_llc = self.nr_pref_dst_llc(g, env.dst_cpu);
        let failed = self.cpus[env.dst_cpu].nr_balance_failed[env.li];
        let first = g.cpus.iter().copied().min().unwrap_or(env.dst_cpu);
        failed < env.cache_nice_tries + 1
            && s.nr_pref_dst_llc > 0
            && self.can_migrate_llc(first, env.dst_cpu, 0.0, true) == LlcMig::Llc
    }

    /// `fits_llc_capacity`.
    fn fits_llc(&self, util: f64, cap: f64) -> bool {
        let aggr = if self.cache.smt_threads == 1 {
            LLC_OVERAGGR_PCT * 1.5
        } else {
            LLC_OVERAGGR_PCT
        };
        util * 100.0 < cap * aggr
    }

    /// `can_migrate_llc`: may a task of utilisation `tsk_util` go from `src`'s LLC to
    /// `dst`'s, toward (`to_pref`) or away from its preferred one?
    pub(super) fn can_migrate_llc(
        &self,
        src: usize,
        dst: usize,
        tsk_util: f64,
        to_pref: bool,
    ) -> LlcMig {
        let (su, sc) = self.cache.llc_stats[self.llc_of[src]];
        let (du, dc) = self.cache.llc_stats[self.llc_of[dst]];
        // The LLCs as the move would leave them.
        let su = (su - tsk_util).max(0.0);
        let du = du + tsk_util;
        if !self.fits_llc(du, dc) && !self.fits_llc(su, sc) {
            return LlcMig::Unrestricted;
        }
        let greater = |a: f64, b: f64| a * 100.0 > b * (100.0 + LLC_IMB_PCT);
        let forbid = if to_pref {
            !self.fits_llc(du, dc) && greater(du, su)
        } else {
            self.fits_llc(su, sc) || !greater(su, du)
        };
        if forbid { LlcMig::Forbid } else { LlcMig::Llc }
    }

    /// `can_migrate_llc_task`: task `t` from `src` to `dst`, judged by its process's
    /// preferred LLC.
    pub(super) fn can_migrate_llc_task(&self, src: usize, dst: usize, t: u32) -> LlcMig {
        let Some(mm) = self.tasks[t as usize].mm else {
            return LlcMig::Unrestricted;
        };
        let mm = mm as usize;
        let Some(pcpu) = self.cache.mms[mm].cpu else {
            return LlcMig::Unrestricted;
        };
        let (sl, dl, pl) = (self.llc_of[src], self.llc_of[dst], self.llc_of[pcpu]);
        if sl == dl || self.invalid_llc_nr(mm, dst) {
            return LlcMig::Unrestricted;
        }
        let to_pref = match (dl == pl, sl == pl) {
            (true, _) => true,
            (false, true) => false,
            (false, false) => return LlcMig::Unrestricted,
        };
        self.can_migrate_llc(src, dst, self.tasks[t as usize].util, to_pref)
    }

    /// Tasks queued on `cpu` that prefer LLC `llc` (`sd->llc_counts[llc]`).
    pub(super) fn llc_count(&self, cpu: usize, llc: usize) -> u64 {
        self.cpus[cpu]
            .tasks
            .iter()
            .filter(|&&t| self.tasks[t as usize].preferred_llc == Some(llc))
            .count() as u64
    }

    /// `nr_pref_dst_llc` of a group: its tasks outside `dst`'s LLC that prefer it.
    pub(super) fn nr_pref_dst_llc(&self, g: &Group, dst: usize) -> u64 {
        let dl = self.llc_of[dst];
        g.cpus
            .iter()
            .filter(|&&c| self.llc_of[c] != dl)
            .map(|&c| self.llc_count(c, dl))
            .sum()
    }

    /// `migrate_degrades_llc`: would moving `t` from `src` to `dst` break its preference
    /// (`llc_task`: a `migrate_llc_task` pass, which moves only tasks preferring `dst`)?
    /// Given up after `cache_nice_tries + 1` failures.
    pub(super) fn migrate_degrades_llc(
        &self,
        t: u32,
        src: usize,
        dst: usize,
        llc_task: bool,
        failed: u32,
        cnt: u32,
    ) -> bool {
        if !self.cache.enabled || failed > cnt {
            return false;
        }
        if llc_task && self.tasks[t as usize].preferred_llc != Some(self.llc_of[dst]) {
            return true;
        }
        self.can_migrate_llc_task(src, dst, t) == LlcMig::Forbid
    }

    /// `alb_break_llc`: no active balance off `src` toward another LLC when every task
    /// there is in its preferred LLC and the one running alone (or may not leave).
    pub(super) fn alb_break_llc(&self, src: usize, dst: usize) -> bool {
        if !self.cache.enabled || self.llc_of[src] == self.llc_of[dst] {
            return false;
        }
        let q = &self.cpus[src].tasks;
        let home = self.llc_count(src, self.llc_of[src]) as usize;
        if home == 0 || home != q.len() {
            return false;
        }
        q.len() <= 1
            || self.can_migrate_llc(src, dst, self.tasks[q[0] as usize].util, false)
                == LlcMig::Forbid
    }
}

#[cfg(test)]
mod tests {
    use super::super::Cause;
    use super::super::tests::{allow_all, machine};
    use super::*;
    use numabal_model::Mask;

    const TICK: u64 = 4_000_000;

    /// Ticks `from..to` of 4 ms, as the engine's tick runs them.
    fn run_ticks(s: &mut Sched, from: u64, to: u64) {
        for k in from..to {
            s.update_load(TICK);
            s.tick_llc(k * TICK);
            s.rotate();
            s.tick_balance(k * TICK, TICK, &allow_all);
        }
    }

    /// tiny-2n4 (2 nodes x 2 CPUs, an LLC per node, no SMT) with a process (mm 0) whose
    /// first thread ran alone on CPU 0 for a second, then two threads of it placed on
    /// CPUs 1 and 2 (nodes 0 and 1) while the first sleeps. Returns the scheduler.
    fn split_process(llc_balancing: bool) -> Sched {
        let mut s = Sched::new(&machine("tiny-2n4"));
        if llc_balancing {
            s.enable_llc_balancing();
            assert!(s.cache.enabled);
        }
        let main = s.add_task(Mask::single(0), 0);
        s.set_mm(main, 0);
        s.wake_new(main, 0);
        run_ticks(&mut s, 1, 250);
        for cpu in [1, 2] {
            let t = s.add_task(Mask::single(cpu), 0);
            s.set_mm(t, 0);
            assert_eq!(s.wake_new(t, 0), cpu);
            s.tasks[t as usize].allowed = Mask::full(4);
        }
        s.tasks[main as usize].allowed = Mask::full(4);
        s.dequeue(main, 250 * TICK);
        s.moves.clear();
        s
    }

    fn nodes_of_threads(s: &Sched) -> Vec<usize> {
        [1usize, 2]
            .iter()
            .map(|&t| s.node_of(s.tasks[t].cpu.unwrap()))
            .collect()
    }

    /// Linux 7.2's cache-aware balancing pulls the thread on node 1 to the LLC where the
    /// process ran (an active move: it runs alone), and keeps both there; without it the
    /// NUMA imbalance allowance leaves them where they were placed.
    #[test]
    fn llc_balancing_gathers_a_process_on_the_llc_it_ran_on() {
        let mut s = split_process(true);
        run_ticks(&mut s, 250, 750);
        s.check().unwrap();
        assert_eq!(nodes_of_threads(&s), vec![0, 0]);
        assert_eq!(s.cache.mms[0].cpu.map(|c| s.llc_of[c]), Some(s.llc_of[0]));
        let pulled: Vec<Cause> = s.moves.iter().map(|m| m.cause).collect();
        assert_eq!(
            pulled,
            vec![Cause::ActiveBalance],
            "one active move, none back"
        );
        let mut s = split_process(false);
        run_ticks(&mut s, 250, 750);
        assert_eq!(nodes_of_threads(&s), vec![0, 1]);
        assert!(s.moves.is_empty());
    }

    /// can_migrate_llc on LLCs of 2 CPUs without SMT: "fits" is below 1536 of 2048.
    #[test]
    fn can_migrate_llc_follows_the_kernels_rules() {
        let mut s = Sched::new(&machine("tiny-2n4"));
        s.enable_llc_balancing();
        let mut at = |src: f64, dst: f64, tsk: f64, to_pref: bool| {
            s.cache.llc_stats = vec![(src, 2048.0), (dst, 2048.0)];
            s.can_migrate_llc(0, 2, tsk, to_pref)
        };
        // Both LLCs too busy: generic balancing decides.
        assert_eq!(at(1900.0, 1700.0, 100.0, true), LlcMig::Unrestricted);
        // Toward the preferred LLC: refused only if it would not fit and be > 1.2x src.
        assert_eq!(at(1200.0, 1000.0, 600.0, true), LlcMig::Forbid);
        assert_eq!(at(1200.0, 500.0, 600.0, true), LlcMig::Llc);
        assert_eq!(at(2000.0, 1000.0, 600.0, true), LlcMig::Llc);
        // Away from it: only if it stays busy and > 1.2x the destination.
        assert_eq!(at(1800.0, 100.0, 600.0, false), LlcMig::Forbid);
        assert_eq!(at(2000.0, 100.0, 200.0, false), LlcMig::Llc);
        assert_eq!(at(2000.0, 1100.0, 400.0, false), LlcMig::Forbid);
        // Both too busy as the move would leave them: generic balancing decides.
        assert_eq!(at(2000.0, 1400.0, 200.0, false), LlcMig::Unrestricted);
        // Judged as the move leaves them: both busy before, but the source then fits.
        assert_eq!(at(1700.0, 1600.0, 400.0, false), LlcMig::Forbid);
    }

    /// nr_running_avg is an integer EWMA (divisor 2 for an LLC of 2 CPUs): two threads
    /// running keep it at 1, valid; three once take it to 2, and it stays there (the
    /// scan returns before updating it), so the process loses its preference for good.
    #[test]
    fn invalid_llc_nr_latches() {
        let mut s = split_process(true);
        run_ticks(&mut s, 250, 350);
        assert_eq!(s.cache.mms[0].nr_running_avg, 1);
        assert!(s.cache.mms[0].cpu.is_some());
        let t = s.add_task(Mask::single(3), 0);
        s.set_mm(t, 0);
        s.wake_new(t, 0);
        run_ticks(&mut s, 350, 360);
        assert_eq!(s.cache.mms[0].nr_running_avg, 2);
        assert_eq!(s.cache.mms[0].cpu, None);
        s.exit(t, 360 * TICK);
        run_ticks(&mut s, 360, 460);
        assert_eq!(
            (s.cache.mms[0].nr_running_avg, s.cache.mms[0].cpu),
            (2, None)
        );
    }
}
