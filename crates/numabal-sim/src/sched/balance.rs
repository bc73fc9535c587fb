//! Load balancing (kernel/sched/fair.c): when it runs (periodic balancing at the tick over
//! the levels whose interval expired, newly-idle balancing), which CPU of a group balances
//! (`should_we_balance`), and what moves (`detach_tasks`/`can_migrate_task`,
//! `attach_tasks`, active balancing after repeated failures). fbg.rs finds the busiest
//! group and runqueue and the imbalance.
//!
//! ```text
//!   tick_balance ─► rebalance_domains ─┐  (per CPU, levels bottom-up)
//!   newidle_balance ───────────────────┴─► load_balance
//!       should_we_balance
//!       find_busiest_group ─ update_sd_lb_stats, calculate_imbalance      fbg.rs
//!       find_busiest_queue                                                fbg.rs
//!       detach_tasks ─ can_migrate_task ─ CanMove (engine: veto, locality)
//!       attach_tasks
//!       nothing moved: need_active_balance ─► active_load_balance_cpu_stop
//! ```

use super::fbg::Migration;
use super::topology::{Group, LevelKind, Span};
use super::{CanMigrate, CanMove, Cause, LbCtx, Sched};

/// `enum cpu_idle_type`: the balancing context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CpuIdleType {
    NotIdle,
    Idle,
    NewlyIdle,
}

/// `struct lb_env`: one balancing attempt of `dst_cpu` at level `li`.
pub(super) struct LbEnv {
    pub(super) dst_cpu: usize,
    pub(super) li: usize,
    pub(super) idle: CpuIdleType,
    /// `dst_cpu`'s span at the level (shared: balancing moves tasks while reading it).
    pub(super) span: std::rc::Rc<Span>,
    pub(super) kind: LevelKind,
    pub(super) imbalance_pct: u64,
    pub(super) numa: bool,
    pub(super) share_llc: bool,
    pub(super) cache_nice_tries: u32,
    /// Set by `calculate_imbalance` (the kernel's zeroed `lb_env` starts at
    /// `migrate_load`).
    pub(super) migration_type: Migration,
    /// What is left to move, in `migration_type`'s unit.
    pub(super) imbalance: f64,
    /// `LBF_LLC_PINNED`: a task was refused only to keep its preferred LLC, which is not
    /// a failure.
    pub(super) llc_pinned: bool,
}

impl LbEnv {
    fn new(s: &Sched, cpu: usize, li: usize, idle: CpuIdleType) -> Self {
        let level = &s.levels[li];
        LbEnv {
            dst_cpu: cpu,
            li,
            idle,
            span: level.span(cpu).clone(),
            kind: level.kind,
            imbalance_pct: level.imbalance_pct,
            numa: level.numa(),
            share_llc: level.share_llc(),
            cache_nice_tries: level.cache_nice_tries,
            migration_type: Migration::Load,
            imbalance: 0.0,
            llc_pinned: false,
        }
    }

    /// The balancing CPU is idle or newly idle.
    pub(super) fn dst_idle(&self) -> bool {
        self.idle != CpuIdleType::NotIdle
    }
}

/// `can_migrate_task`'s verdict on one task.
enum Verdict {
    Migrate,
    Skip,
    /// `CanMigrate::Later` in the first pass: try again in the second.
    Defer,
}

impl Sched {
    /// Periodic balancing at a tick: every CPU whose interval expired balances.
    pub fn tick_balance(&mut self, now: u64, tick_ns: u64, can_move: CanMove<'_>) {
        self.balanced_busy.clear();
        for cpu in 0..self.cpus.len() {
            self.rebalance_domains(cpu, now, tick_ns, can_move);
        }
    }

    /// `rebalance_domains` (`sched_balance_domains` since 6.10) of one CPU: its levels
    /// bottom-up, each whose interval expired, until one says to stop climbing.
    fn rebalance_domains(&mut self, cpu: usize, now: u64, tick_ns: u64, can_move: CanMove<'_>) {
        let mut idle = if self.is_idle(cpu) {
            CpuIdleType::Idle
        } else {
            CpuIdleType::NotIdle
        };
        let busy_at_start = idle == CpuIdleType::NotIdle;
        let mut ran = false;
        for li in 0..self.levels.len() {
            let busy = idle == CpuIdleType::NotIdle;
            let interval_ns = self.get_sd_balance_interval(cpu, li, busy, tick_ns);
            if now < self.cpus[cpu].last_balance[li] + interval_ns {
                continue;
            }
            if busy_at_start && !ran {
                self.balanced_busy.push(cpu);
            }
            ran = true;
            let (moved, cont) = self.load_balance(cpu, li, idle, now, can_move);
            self.cpus[cpu].last_balance[li] = now;
            if moved > 0 {
                idle = if self.is_idle(cpu) {
                    CpuIdleType::Idle
                } else {
                    CpuIdleType::NotIdle
                };
            }
            if !cont {
                break;
            }
        }
    }

    /// `get_sd_balance_interval` in ns: the level's interval, times `busy_factor` (16)
    /// and one tick shorter on a busy CPU, at least one tick.
    fn get_sd_balance_interval(&self, cpu: usize, li: usize, busy: bool, tick_ns: u64) -> u64 {
        let jiffy_ms = tick_ns as f64 / 1e6;
        let interval_ms = self.cpus[cpu].balance_interval_ms[li] * if busy { 16.0 } else { 1.0 };
        let mut interval_ns = (interval_ms.max(jiffy_ms) * 1e6) as u64;
        if busy {
            interval_ns = interval_ns.saturating_sub(tick_ns).max(tick_ns);
        }
        interval_ns
    }

    /// Whether any CPU has more than one runnable task (the root domain is "overloaded").
    fn rd_overloaded(&self) -> bool {
        self.cpus.iter().any(|c| c.tasks.len() > 1)
    }

    /// Newly-idle balancing of a CPU that just ran out of work.
    pub fn newidle_balance(&mut self, cpu: usize, now: u64, can_move: CanMove<'_>) {
        if !self.is_idle(cpu) || !self.rd_overloaded() {
            return;
        }
        for li in 0..self.levels.len() {
            let (moved, cont) = self.load_balance(cpu, li, CpuIdleType::NewlyIdle, now, can_move);
            if moved > 0 || !cont {
                break;
            }
        }
    }

    /// `load_balance` (`sched_balance_rq` since 6.10): returns (tasks moved, continue
    /// with higher levels).
    fn load_balance(
        &mut self,
        cpu: usize,
        li: usize,
        idle: CpuIdleType,
        now: u64,
        can_move: CanMove<'_>,
    ) -> (usize, bool) {
        let mut env = LbEnv::new(self, cpu, li, idle);
        let span = std::rc::Rc::clone(&env.span);
        let groups = span.ring(cpu);
        if !self.should_we_balance(&env, groups[0]) {
            if idle != CpuIdleType::NewlyIdle {
                // Not this CPU's turn: like the kernel, count it as balanced at this level
                // and stop climbing.
                self.balanced(cpu, li, idle);
            }
            return (0, false);
        }
        // record_sg_llc_stats at the first level above the LLC (its groups are LLCs): each
        // group after it was judged, so a remote group is judged on its stats of an earlier
        // balance, and the local one, judged first, on fresh ones.
        let record = self.cache.enabled
            && idle != CpuIdleType::NewlyIdle
            && li > 0
            && self.levels[li - 1].share_llc()
            && !env.share_llc;
        if record {
            self.record_llc_stats(&groups[..1]);
        }
        let busiest = self.find_busiest_group(&mut env, &groups);
        if record {
            self.record_llc_stats(&groups[1..]);
        }
        let Some(bgi) = busiest else {
            self.balanced(cpu, li, idle);
            return (0, true);
        };
        let Some(src) = self.find_busiest_queue(&env, groups[bgi]) else {
            self.balanced(cpu, li, idle);
            return (0, true);
        };

        let detached = self.detach_tasks(&mut env, src, now, can_move);
        let mut moved = detached.len();
        self.attach_tasks(&env, src, &detached);

        if moved == 0 {
            if idle != CpuIdleType::NewlyIdle && !env.llc_pinned {
                self.cpus[cpu].nr_balance_failed[li] += 1;
            }
            if self.need_active_balance(&env, src)
                && self.active_load_balance_cpu_stop(&env, src, now, can_move)
            {
                moved = 1;
            }
        } else {
            self.cpus[cpu].nr_balance_failed[li] = 0;
        }
        // An imbalance was found: back to the shortest interval.
        self.cpus[cpu].balance_interval_ms[li] = self.levels[li].span(cpu).cpus.len() as f64;
        (moved, true)
    }

    /// `should_we_balance`: a newly idle CPU balances while it is still idle; otherwise
    /// only one CPU of the local group does, the first idle CPU of an idle core, else the
    /// first idle CPU, else the group's first CPU.
    fn should_we_balance(&self, env: &LbEnv, local_g: &Group) -> bool {
        let cpu = env.dst_cpu;
        if env.idle == CpuIdleType::NewlyIdle {
            return self.is_idle(cpu);
        }
        let mut idle_smt = None;
        let mut chosen = None;
        let mut skip: Vec<usize> = Vec::new();
        let mut cands = local_g.cpus.clone();
        cands.sort_unstable();
        for &c in &cands {
            if skip.contains(&c) || !self.is_idle(c) {
                continue;
            }
            let siblings = &self.core_cpus[self.core_of[c]];
            if env.kind != LevelKind::Smt
                && siblings.len() > 1
                && !siblings.iter().all(|&s| self.is_idle(s))
            {
                if idle_smt.is_none() {
                    idle_smt = Some(c);
                }
                skip.extend(siblings.iter().copied());
                continue;
            }
            chosen = Some(c);
            break;
        }
        let balancer = chosen.or(idle_smt).unwrap_or(cands[0]);
        balancer == cpu
    }

    /// `detach_tasks`: takes tasks off `src` from the tail (least recently run), never the
    /// current task, until the imbalance is met; a newly idle CPU takes one. Returns them
    /// in the order taken.
    fn detach_tasks(
        &mut self,
        env: &mut LbEnv,
        src: usize,
        now: u64,
        can_move: CanMove<'_>,
    ) -> Vec<u32> {
        let mut detached = Vec::new();
        let failed = self.cpus[env.dst_cpu].nr_balance_failed[env.li];
        // Pass 0 skips `CanMigrate::Later` tasks; pass 1 (only if one was skipped and
        // some imbalance is left) takes them too.
        let mut deferred = false;
        'passes: for pass in 0..2 {
            if pass == 1
                && (!deferred || (env.idle == CpuIdleType::NewlyIdle && !detached.is_empty()))
            {
                break;
            }
            let candidates: Vec<u32> = self.cpus[src].tasks.iter().skip(1).rev().copied().collect();
            for t in candidates {
                if self.cpus[src].tasks.len() <= 1 || env.imbalance <= 0.0 {
                    break 'passes;
                }
                match self.can_migrate_task(env, t, src, failed, pass == 1, can_move) {
                    Verdict::Migrate => {}
                    Verdict::Defer => {
                        deferred = true;
                        continue;
                    }
                    Verdict::Skip => continue,
                }
                let amount = match env.migration_type {
                    Migration::Task | Migration::LlcTask => 1.0,
                    Migration::Load => self.tasks[t as usize].runnable.max(1.0),
                    Migration::Util => self.tasks[t as usize].util,
                };
                if !matches!(env.migration_type, Migration::Task | Migration::LlcTask)
                    && amount / 2f64.powi(failed.min(63) as i32) > env.imbalance
                {
                    continue;
                }
                env.imbalance -= amount;
                self.detach_task(t, src, now);
                detached.push(t);
                if env.idle == CpuIdleType::NewlyIdle {
                    break 'passes;
                }
            }
        }
        detached
    }

    /// `can_migrate_task`: the task may run on the balancing CPU; across nodes, the
    /// engine's answer (policy veto, NUMA locality), where a cache-hot task moves only
    /// after `cache_nice_tries` failed attempts and a `Later` one only in the second pass.
    fn can_migrate_task(
        &self,
        env: &mut LbEnv,
        t: u32,
        src: usize,
        failed: u32,
        second_pass: bool,
        can_move: CanMove<'_>,
    ) -> Verdict {
        let cpu = env.dst_cpu;
        if !self.tasks[t as usize].allowed.contains(cpu) {
            return Verdict::Skip;
        }
        if self.cpu_node[src] == self.cpu_node[cpu] {
            return self.llc_verdict(env, t, src, failed);
        }
        let ctx = self.lb_ctx(t, src, cpu, env.idle == CpuIdleType::Idle, false);
        match can_move(&ctx) {
            CanMigrate::Yes => self.llc_verdict(env, t, src, failed),
            CanMigrate::Better => Verdict::Migrate,
            CanMigrate::Hot if failed > env.cache_nice_tries => Verdict::Migrate,
            CanMigrate::Later if second_pass => Verdict::Migrate,
            CanMigrate::Later => Verdict::Defer,
            CanMigrate::Hot | CanMigrate::No => Verdict::Skip,
        }
    }

    /// A move neutral for NUMA locality (`migrate_degrades_locality` 0): refused if it
    /// breaks the task's preferred LLC (`migrate_degrades_llc`), which pins it unless this
    /// pass moves LLC tasks.
    fn llc_verdict(&self, env: &mut LbEnv, t: u32, src: usize, failed: u32) -> Verdict {
        let llc_task = env.migration_type == Migration::LlcTask;
        if self.migrate_degrades_llc(t, src, env.dst_cpu, llc_task, failed, env.cache_nice_tries) {
            env.llc_pinned |= !llc_task;
            return Verdict::Skip;
        }
        Verdict::Migrate
    }

    /// `attach_tasks`: the detached tasks join the balancing CPU's runqueue in the order
    /// they were taken.
    fn attach_tasks(&mut self, env: &LbEnv, src: usize, tasks: &[u32]) {
        for &t in tasks {
            self.attach_task(t, src, env.dst_cpu, Cause::LoadBalance);
        }
    }

    /// `need_active_balance`: not off a CPU whose tasks are all in their preferred LLC
    /// (`alb_break_llc`); a pass moving a task to its preferred LLC; a periodic pass
    /// that moved nothing, counting tasks, after more than `cache_nice_tries + 2` failures.
    fn need_active_balance(&self, env: &LbEnv, src: usize) -> bool {
        if self.alb_break_llc(src, env.dst_cpu) {
            return false;
        }
        env.migration_type == Migration::LlcTask
            || env.idle != CpuIdleType::NewlyIdle
                && env.migration_type == Migration::Task
                && self.cpus[env.dst_cpu].nr_balance_failed[env.li] > env.cache_nice_tries + 2
    }

    /// `active_load_balance_cpu_stop`: the stopper pushes `src`'s current task to the
    /// balancing CPU, unless affinity or the engine forbids it (locality is not
    /// considered: `LBF_ACTIVE_LB`). Returns whether it moved.
    fn active_load_balance_cpu_stop(
        &mut self,
        env: &LbEnv,
        src: usize,
        now: u64,
        can_move: CanMove<'_>,
    ) -> bool {
        let cpu = env.dst_cpu;
        let Some(&cur) = self.cpus[src].tasks.first() else {
            return false;
        };
        let allowed = self.tasks[cur as usize].allowed.contains(cpu)
            && (self.cpu_node[src] == self.cpu_node[cpu]
                || can_move(&self.lb_ctx(cur, src, cpu, true, true)) != CanMigrate::No);
        if !allowed {
            return false;
        }
        self.migrate(cur, src, cpu, Cause::ActiveBalance, now);
        self.cpus[cpu].nr_balance_failed[env.li] = 0;
        true
    }

    fn lb_ctx(&self, tid: u32, src: usize, dst: usize, dst_idle: bool, active: bool) -> LbCtx {
        let (nr, _, pref) = self.fbq_counts(src);
        LbCtx {
            tid,
            src_cpu: src,
            src_node: self.cpu_node[src],
            dst_node: self.cpu_node[dst],
            src_nr_running: nr,
            src_nr_preferred_running: pref,
            dst_idle,
            active,
        }
    }

    /// `out_balanced`: reset the failure count; periodic passes also back off the interval
    /// (newly-idle passes do not, as they ignore intervals).
    fn balanced(&mut self, cpu: usize, li: usize, idle: CpuIdleType) {
        self.cpus[cpu].nr_balance_failed[li] = 0;
        if idle == CpuIdleType::NewlyIdle {
            return;
        }
        let w = self.levels[li].span(cpu).cpus.len() as f64;
        let bi = &mut self.cpus[cpu].balance_interval_ms[li];
        if *bi < 2.0 * w {
            *bi = (*bi * 2.0).min(2.0 * w);
        }
    }
}
