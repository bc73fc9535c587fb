//! Where tasks run when they start or wake up, and moves a policy or an affinity change
//! asks for. New tasks go down the domains to the idlest group and CPU (`find_idlest_cpu`,
//! fork/exec balancing); waking tasks look for an idle CPU around their previous one
//! (`select_idle_sibling`).

use numabal_model::Mask;

use super::stats::{GroupType, Sgs, adjust_numa_imbalance, group_classify};
use super::topology::{Group, Level, Span};
use super::{CAPACITY, Cause, Move, Sched};

impl Sched {
    /// Place a new task (fork or exec balancing from `parent_cpu`) and enqueue it.
    pub fn wake_new(&mut self, tid: u32, parent_cpu: usize) -> usize {
        let cpu = self.find_idlest_cpu(tid, parent_cpu);
        self.enqueue(tid, cpu);
        cpu
    }

    /// Wake a sleeping task: `select_idle_sibling` around its previous CPU.
    pub fn wake(&mut self, tid: u32, now: u64) -> usize {
        let prev = self.tasks[tid as usize].prev_cpu;
        let cpu = self.select_idle_sibling(tid, prev);
        self.enqueue(tid, cpu);
        if self.cpu_node[cpu] != self.cpu_node[prev] {
            self.moves.push(Move {
                tid,
                from: prev,
                to: cpu,
                cause: Cause::Wakeup,
            });
        }
        let _ = now;
        cpu
    }

    /// The task's allowed CPUs changed; move it if its CPU is no longer allowed.
    pub fn set_allowed(&mut self, tid: u32, allowed: Mask, now: u64) {
        self.tasks[tid as usize].allowed = allowed;
        if let Some(cpu) = self.tasks[tid as usize].cpu
            && !self.tasks[tid as usize].allowed.contains(cpu)
        {
            let to = self.select_idle_sibling(tid, cpu);
            let to = if self.tasks[tid as usize].allowed.contains(to) {
                to
            } else {
                self.find_idlest_cpu(tid, cpu)
            };
            self.migrate(tid, cpu, to, Cause::Affinity, now);
        }
    }

    /// The least loaded CPU of `node` that `tid` may run on.
    fn least_loaded_cpu(&self, tid: u32, node: usize) -> Option<usize> {
        let allowed = &self.tasks[tid as usize].allowed;
        (0..self.cpus.len())
            .filter(|&c| self.cpu_node[c] == node && allowed.contains(c))
            .min_by(|&a, &b| {
                let la = (self.cpus[a].tasks.len(), self.busy_siblings(a));
                let lb = (self.cpus[b].tasks.len(), self.busy_siblings(b));
                la.cmp(&lb).then(a.cmp(&b))
            })
    }

    /// A policy moves `tid` to `node`: a runnable task goes to the node's least loaded
    /// allowed CPU now; a waiting one is re-homed there (its previous CPU becomes that
    /// CPU, as `set_task_cpu` on a sleeping task would), so it wakes on the node. Returns
    /// whether it moved.
    pub fn policy_move(&mut self, tid: u32, node: usize, cause: Cause, now: u64) -> bool {
        let task = &self.tasks[tid as usize];
        let from = task.cpu.unwrap_or(task.prev_cpu);
        if self.cpu_node[from] == node {
            return false;
        }
        let Some(to) = self.least_loaded_cpu(tid, node) else {
            return false;
        };
        if self.tasks[tid as usize].cpu.is_some() {
            self.migrate(tid, from, to, cause, now);
        } else {
            self.tasks[tid as usize].prev_cpu = to;
            self.tasks[tid as usize].recent_used_cpu = None;
            self.moves.push(Move {
                tid,
                from,
                to,
                cause,
            });
        }
        true
    }

    /// `update_sg_wakeup_stats`: unlike balancing, no `smt_balance`, and the average load
    /// of fully busy groups too.
    fn update_sg_wakeup_stats(&self, g: &Group, pct: u64) -> Sgs {
        let mut s = self.sum_group(g);
        s.gtype = group_classify(pct, &s, false, false);
        if s.gtype == GroupType::Overloaded || s.gtype == GroupType::FullyBusy {
            s.avg_load = s.load * CAPACITY / s.capacity;
        }
        s
    }

    /// `find_idlest_cpu` (`sched_balance_find_dst_cpu` since Linux 6.10) for fork/exec.
    fn find_idlest_cpu(&self, tid: u32, start: usize) -> usize {
        self.exec_cpu(&self.tasks[tid as usize].allowed, start)
    }

    /// Where fork/exec balancing from `start` would put a task allowed on `allowed`
    /// (`find_idlest_cpu`), without creating one.
    pub fn exec_cpu(&self, allowed: &Mask, start: usize) -> usize {
        let allowed = allowed.clone();
        // The highest contiguous level with fork balancing.
        let mut lvl = None;
        for (i, l) in self.levels.iter().enumerate() {
            if l.balance_fork {
                lvl = Some(i);
            } else {
                break;
            }
        }
        let mut cpu = start;
        let Some(mut li) = lvl else {
            return self.fallback_cpu(&allowed, start);
        };
        if !self.levels[li]
            .span(cpu)
            .cpus
            .iter()
            .any(|&c| allowed.contains(c))
        {
            return self.fallback_cpu(&allowed, start);
        }
        loop {
            let level = &self.levels[li];
            let span = level.span(cpu);
            let mut next_cpu = cpu;
            if let Some(g) = self.find_idlest_group(level, span, &allowed, cpu) {
                next_cpu = self.find_idlest_group_cpu(g, &allowed, cpu);
            }
            if next_cpu != cpu {
                let w = span.cpus.len();
                cpu = next_cpu;
                // Restart at the new CPU's highest level strictly smaller than the one used.
                match (0..self.levels.len())
                    .rev()
                    .find(|&j| self.levels[j].span(cpu).cpus.len() < w)
                {
                    Some(j) => li = j,
                    None => break,
                }
            } else if li == 0 {
                break;
            } else {
                li -= 1;
            }
        }
        if allowed.contains(cpu) {
            cpu
        } else {
            self.fallback_cpu(&allowed, start)
        }
    }

    /// No domain to place the task in: stay on `start` if allowed, else the allowed CPU
    /// with the fewest tasks.
    fn fallback_cpu(&self, allowed: &Mask, start: usize) -> usize {
        if allowed.contains(start) {
            return start;
        }
        allowed
            .iter()
            .filter(|&c| c < self.cpus.len())
            .min_by_key(|&c| (self.cpus[c].tasks.len(), c))
            .unwrap_or(start)
    }

    /// `find_idlest_group` (`sched_balance_find_dst_group` since 6.10): the idlest group
    /// of `span` allowed by `allowed`, or `None` to stay in the local group.
    fn find_idlest_group<'a>(
        &self,
        level: &Level,
        span: &'a Span,
        allowed: &Mask,
        cpu: usize,
    ) -> Option<&'a Group> {
        let pct = level.imbalance_pct;
        let mut local: Option<Sgs> = None;
        let mut idlest: Option<(&Group, Sgs)> = None;
        for (i, g) in span.ring(cpu).into_iter().enumerate() {
            if !g.cpus.iter().any(|&c| allowed.contains(c)) {
                continue;
            }
            let s = self.update_sg_wakeup_stats(g, pct);
            if i == 0 && g.cpus.contains(&cpu) {
                local = Some(s);
                continue;
            }
            if idlest
                .as_ref()
                .is_none_or(|(_, is)| update_pick_idlest(is, &s))
            {
                idlest = Some((g, s));
            }
        }
        let (ig, is) = idlest?;
        let Some(ls) = local else { return Some(ig) };
        if ls.gtype < is.gtype {
            return None;
        }
        if ls.gtype > is.gtype {
            return Some(ig);
        }
        match ls.gtype {
            GroupType::Overloaded | GroupType::FullyBusy => {
                let imb = CAPACITY * (pct as f64 - 100.0) / 100.0;
                if level.numa() && is.avg_load + imb >= ls.avg_load {
                    return None;
                }
                if is.avg_load >= ls.avg_load + imb {
                    return None;
                }
                if 100.0 * ls.avg_load <= pct as f64 * is.avg_load {
                    return None;
                }
            }
            // Neither type is set for a wakeup (`update_sg_wakeup_stats`).
            GroupType::SmtBalance | GroupType::LlcBalance => return None,
            GroupType::HasSpare => {
                if level.numa() {
                    let local_allowed = span
                        .groups
                        .iter()
                        .find(|g| g.cpus.contains(&cpu))
                        .map(|g| g.cpus.iter().filter(|&&c| allowed.contains(c)).count() as u64)
                        .unwrap_or(0);
                    let nr = local_allowed.min(span.imb_numa_nr);
                    let diff = ls.idle.abs_diff(is.idle);
                    if adjust_numa_imbalance(diff, ls.nr + 1, nr) == 0 {
                        return None;
                    }
                }
                if ls.idle >= is.idle {
                    return None;
                }
            }
        }
        Some(ig)
    }

    /// `find_idlest_group_cpu` (`sched_balance_find_dst_group_cpu` since 6.10): the most
    /// recently idle allowed CPU of the group, else the least loaded one.
    fn find_idlest_group_cpu(&self, g: &Group, allowed: &Mask, this_cpu: usize) -> usize {
        if g.cpus.len() == 1 {
            return g.cpus[0];
        }
        let mut latest: Option<(u64, usize)> = None;
        let mut least: Option<(f64, usize)> = None;
        for &c in g.cpus.iter().filter(|&&c| allowed.contains(c)) {
            if self.is_idle(c) {
                let stamp = self.cpus[c].idle_stamp;
                if latest.is_none_or(|(s, _)| stamp > s) {
                    latest = Some((stamp, c));
                }
            } else if latest.is_none() {
                let l = self.cpu_load(c);
                if least.is_none_or(|(m, _)| l < m) {
                    least = Some((l, c));
                }
            }
        }
        latest
            .map(|(_, c)| c)
            .or(least.map(|(_, c)| c))
            .unwrap_or(this_cpu)
    }

    /// `select_idle_sibling(p, prev, target = prev)` (no wake_affine: wakers are timers,
    /// barriers and joins, modelled as waking on the previous CPU's LLC).
    fn select_idle_sibling(&mut self, tid: u32, prev: usize) -> usize {
        let allowed = self.tasks[tid as usize].allowed.clone();
        let ok = |c: usize| allowed.contains(c);
        if ok(prev) && self.is_idle(prev) {
            return prev; // (before recent_used_cpu is updated, as in the kernel)
        }
        if let Some(r) = self.tasks[tid as usize].recent_used_cpu
            && r != prev
            && self.llc_of[r] == self.llc_of[prev]
            && ok(r)
            && self.is_idle(r)
        {
            self.tasks[tid as usize].recent_used_cpu = Some(prev);
            return r;
        }
        self.tasks[tid as usize].recent_used_cpu = Some(prev);
        let llc = &self.llc_cpus[self.llc_of[prev]];
        let n = llc.len();
        let start = llc.iter().position(|&c| c == prev).unwrap_or(0);
        // A fully idle core first, then any idle CPU, scanning from prev+1.
        let order: Vec<usize> = (1..=n).map(|i| llc[(start + i) % n]).collect();
        for &c in &order {
            if ok(c)
                && self.core_cpus[self.core_of[c]]
                    .iter()
                    .all(|&s| self.is_idle(s))
            {
                return c;
            }
        }
        for &c in &order {
            if ok(c) && self.is_idle(c) {
                return c;
            }
        }
        if ok(prev) {
            return prev;
        }
        self.find_idlest_cpu(tid, prev)
    }
}

/// `update_pick_idlest`: whether group statistics `s` are idler than `idlest`'s.
fn update_pick_idlest(idlest: &Sgs, s: &Sgs) -> bool {
    if s.gtype != idlest.gtype {
        return s.gtype < idlest.gtype;
    }
    match s.gtype {
        GroupType::Overloaded | GroupType::FullyBusy => idlest.avg_load > s.avg_load,
        GroupType::SmtBalance | GroupType::LlcBalance => false,
        GroupType::HasSpare => {
            !(idlest.idle > s.idle || (idlest.idle == s.idle && idlest.util <= s.util))
        }
    }
}
