//! The fluid step: between two events every running thread progresses at the rate the
//! cost model gives it; threads woken or spawned inside the interval run its rest.

use super::*;
use crate::memory::PAGE_BYTES;
use crate::sched::LbCtx;
use numabal_model::workload::Pattern;
use std::rc::Rc;

/// What a random pattern's node mix depends on: the object and its generation, the phase
/// (its pattern's parameters) and the slice.
type MixKey = (usize, u64, *const AccessRt, (u64, u64));

/// `advance`'s working buffers, kept in the world between intervals.
#[derive(Debug, Default)]
pub(crate) struct StepBuffers {
    /// (thread, CPU, share of the interval) of every running thread.
    running: Vec<(usize, usize, f64)>,
    busy_before: Vec<bool>,
    demands: Vec<Demand>,
    /// Index in `demands` of each running thread's demand.
    dem_of: Vec<Option<usize>>,
    smt_info: Vec<(f64, f64, f64)>,
    /// Node-mix vectors of earlier intervals' demands, for reuse.
    mixes: Vec<Vec<f64>>,
}

impl World<'_> {
    pub(crate) fn advance(
        &mut self,
        ag: &mut Agents<'_>,
        t0: u64,
        t1: u64,
    ) -> Result<(), SimError> {
        let dt = (t1 - t0) as f64;
        let ncpu = self.sched.nr_cpus();
        let nn = self.machine.nr_nodes();
        // On a shared host every running CPU runs slower, for the whole interval
        // (simplification: the count at its start).
        let h = self.host_speed_at(t0, 0);
        self.host_speed = h;
        let StepBuffers {
            mut running,
            mut busy_before,
            mut demands,
            mut dem_of,
            mut smt_info,
            mut mixes,
        } = std::mem::take(&mut self.step);
        // Running threads and their shares.
        running.clear();
        for c in 0..ncpu {
            let rq = self.sched.rq(c);
            let k = rq.len();
            for &t in rq {
                running.push((t as usize, c, h / k as f64));
            }
        }
        self.note_switches(&running, t0, t1);
        busy_before.clear();
        busy_before.extend((0..ncpu).map(|c| !self.sched.rq(c).is_empty()));
        for (c, &busy) in busy_before.iter().enumerate() {
            self.cpu_free_from[c] = (!busy).then_some(t0);
        }
        self.interval_end = Some(t1);
        self.gather_demands(
            &running,
            dt,
            &mut demands,
            &mut dem_of,
            &mut smt_info,
            &mut mixes,
        );
        self.cost.solve(&demands);
        // Run every thread for its share of the interval.
        let mut tau = vec![0.0; nn];
        for (ri, &(t, c, share)) in running.iter().enumerate() {
            if self.threads[t].state != TState::Runnable || self.sched.tasks[t].cpu != Some(c) {
                continue;
            }
            if let Some(di) = dem_of[ri] {
                self.cost.ns_per_byte(&demands[di], &mut tau);
            }
            self.run_thread(
                ag,
                t,
                c,
                share,
                t0,
                dt,
                &mut tau,
                dem_of[ri].is_some(),
                smt_info[ri],
            )?;
        }
        // Threads woken or spawned during the interval run the rest of it if their CPU is
        // free by then (it ran out of work, or was idle all along). They were not part of
        // the cost model's solve; they see the delays it found.
        // Earliest first; ties in the order they were recorded.
        while let Some(i) = (0..self.late.len()).min_by_key(|&i| (self.late[i].at, i)) {
            let Late { t, at, wake } = self.late.remove(i);
            if wake {
                if self.threads[t].state == TState::Sleeping {
                    self.wake(t, at); // records it again as runnable since `at`
                }
                continue;
            }
            let Some(c) = self.sched.tasks[t].cpu else {
                continue;
            };
            if self.threads[t].state != TState::Runnable || self.sched.rq(c).len() != 1 {
                continue;
            }
            let Some(free) = self.cpu_free_from[c].take() else {
                continue;
            };
            let start = at.max(free);
            if start >= t1 {
                continue;
            }
            self.note_late_switch(t, c, t1);
            let smt = self.smt_shares(c);
            self.run_thread(
                ag,
                t,
                c,
                h,
                start,
                (t1 - start) as f64,
                &mut tau,
                false,
                smt,
            )?;
        }
        self.interval_end = None;
        self.sched.update_load(t1 - t0);
        // CPUs that ran out of work look for more.
        let mut sched = std::mem::take(&mut self.sched);
        for (c, &was_busy) in busy_before.iter().enumerate() {
            if was_busy && sched.rq(c).is_empty() {
                sched.newidle_balance(c, t1, &|x: &LbCtx| ag.can_migrate(self, x));
            }
        }
        self.sched = sched;
        self.count_moves();
        self.step = StepBuffers {
            running,
            busy_before,
            demands,
            dem_of,
            smt_info,
            mixes,
        };
        Ok(())
    }

    /// What every running thread asks of the memory system this interval (`demands`, and
    /// for each running thread the index of its demand and its core's SMT state), the
    /// demands' node mixes in vectors kept from earlier intervals.
    fn gather_demands(
        &self,
        running: &[(usize, usize, f64)],
        dt: f64,
        demands: &mut Vec<Demand>,
        dem_of: &mut Vec<Option<usize>>,
        smt_info: &mut Vec<(f64, f64, f64)>,
        mixes: &mut Vec<Vec<f64>>,
    ) {
        let nn = self.machine.nr_nodes();
        mixes.extend(demands.drain(..).map(|d: Demand| d.mix));
        dem_of.clear();
        dem_of.resize(running.len(), None);
        smt_info.clear();
        // The last random pattern's mix: threads of one phase over one slice see the same
        // pages in the same state (nothing changes while demands are gathered), so the
        // mix is computed once for them (same inputs, same bits).
        let mut last_mix: Option<(MixKey, Vec<f64>, f64)> = None;
        for (ri, &(t, c, share)) in running.iter().enumerate() {
            let smt = self.smt_shares(c);
            smt_info.push(smt);
            let th = &self.threads[t];
            let PhaseRt::Access(a) =
                (match self.procs[th.proc].groups[th.group].phases.get(th.phase) {
                    Some(p) => p,
                    None => continue,
                })
            else {
                continue;
            };
            let node = self.machine.cpus[c].node;
            let mut mix = mixes.pop().unwrap_or_default();
            mix.clear();
            mix.resize(nn, 0.0);
            let slice = if th.prog.started {
                th.prog.slice
            } else {
                self.slice_of(t, a)
            };
            let obj = self.procs[th.proc].regions[a.region].obj;
            let (unpop, _) = if a.pattern == Pattern::Sweep {
                // The pages just ahead of the sweep, as many as it touched last interval.
                let window = (th.window_bytes.max(256.0 * 1024.0) / PAGE_BYTES).ceil() as u64;
                let start = slice.0 + (th.prog.pos / PAGE_BYTES) as u64;
                let end = (start + window).min(slice.1);
                self.random_mix(obj, Pattern::Uniform, a, (start.min(end), end), &mut mix)
            } else {
                let key = (obj, self.objects[obj].generation, Rc::as_ptr(a), slice);
                match &last_mix {
                    Some((k, m, u)) if *k == key => {
                        mix.copy_from_slice(m);
                        (*u, 0)
                    }
                    _ => {
                        let r = self.random_mix(obj, a.pattern, a, slice, &mut mix);
                        last_mix = Some((key, mix.clone(), r.0));
                        r
                    }
                }
            };
            mix[node] += unpop;
            let total: f64 = mix.iter().sum();
            if total > 0.0 {
                // 0 / total is 0: only the nodes with a share are divided.
                mix.iter_mut()
                    .filter(|x| **x != 0.0)
                    .for_each(|x| *x /= total);
            } else {
                mix[node] = 1.0;
            }
            // Kernel work owed at the start of the interval is time without memory traffic.
            let debt_frac = (th.debt_ns / (share * dt)).min(1.0);
            dem_of[ri] = Some(demands.len());
            demands.push(self.demand(c, a, smt, share * (1.0 - debt_frac), mix));
        }
    }

    /// Run thread `t` on CPU `c` for `share * dt` ns of CPU time from `t0`.
    /// `tau_known`: `tau` already holds this thread's ns/byte for its current phase.
    /// `smt`: (memory issue share, compute share, busy siblings) of its core.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run_thread(
        &mut self,
        ag: &mut Agents<'_>,
        t: usize,
        c: usize,
        share: f64,
        t0: u64,
        dt: f64,
        tau: &mut [f64],
        tau_known: bool,
        smt: (f64, f64, f64),
    ) -> Result<(), SimError> {
        let cpu_share = smt.1;
        let mut budget = share * dt;
        let total = budget;
        let node = self.machine.cpus[c].node;
        let slot = Slot { t0, share, total };
        let wall = |used: f64| slot.wall(used);
        let mut tau_valid = tau_known;
        let mut bytes_this = 0.0;
        let exec0 = self.threads[t].sum_exec_ns;
        let (user0, sys0) = (self.user_ns, self.sys_ns);
        // Steps that neither spend time nor move the program on mean a simulator bug.
        let mut guard = 0u64;
        let mut last = (budget, self.threads[t].phase, self.threads[t].iter);
        while budget > 0.0 && self.threads[t].state == TState::Runnable {
            let now = (budget, self.threads[t].phase, self.threads[t].iter);
            if now == last {
                guard += 1;
                if guard > MAX_STEPS {
                    return Err(SimError::Invariant(format!("thread {t} made no progress")));
                }
            } else {
                guard = 0;
                last = now;
            }
            // Kernel work owed (faults) comes first.
            let debt = self.threads[t].debt_ns;
            if debt > 0.0 {
                let pay = debt.min(budget);
                self.threads[t].debt_ns -= pay;
                self.threads[t].sum_exec_ns += pay;
                budget -= pay;
                continue;
            }
            let (pidx, g) = (self.threads[t].proc, self.threads[t].group);
            let phase_idx = self.threads[t].phase;
            let grp = &self.procs[pidx].groups[g];
            if phase_idx >= grp.phases.len() {
                if self.end_iteration(ag, t, wall(total - budget))? {
                    tau_valid = false;
                    continue;
                }
                break;
            }
            let phase = grp.phases[phase_idx].clone();
            match phase {
                PhaseRt::Access(a) => {
                    if !self.threads[t].prog.started {
                        self.start_access(t, &a, wall(total - budget));
                    }
                    if !tau_valid {
                        self.tau_for(c, &a, smt, tau);
                        tau_valid = true;
                    }
                    let before = budget;
                    let (used, bytes, done) = if a.pattern == Pattern::Sweep {
                        self.sweep(ag, t, node, &a, budget, tau, slot)?
                    } else {
                        self.random_access(ag, t, node, &a, budget, tau, slot)?
                    };
                    budget -= used;
                    self.threads[t].sum_exec_ns += used;
                    bytes_this += bytes;
                    if done {
                        self.advance_phase(t);
                        tau_valid = false;
                    } else if budget >= before {
                        break;
                    }
                }
                PhaseRt::Compute(ns, jitter) => {
                    budget = self.run_compute(t, ns, jitter, cpu_share, budget);
                }
                other => {
                    if self.wait_phase(ag, t, c, &other, wall(total - budget))? {
                        budget = 0.0;
                    }
                }
            }
        }
        self.threads[t].window_bytes = bytes_this;
        if self.host_speed < 1.0 {
            // What `/proc` shows is wall time: the thread held its CPU for `work / speed`.
            let h = self.host_speed;
            let th = &mut self.threads[t];
            th.sum_exec_ns = exec0 + (th.sum_exec_ns - exec0) / h;
            self.user_ns = user0 + (self.user_ns - user0) / h;
            self.sys_ns = sys0 + (self.sys_ns - sys0) / h;
        }
        self.cpu_busy_ns[c] += (self.threads[t].sum_exec_ns - exec0).max(0.0);
        Ok(())
    }

    /// A pass over the phases is done at `at`: the process's work counts it; the thread
    /// starts the next iteration (true) or exits.
    fn end_iteration(&mut self, ag: &mut Agents<'_>, t: usize, at: u64) -> Result<bool, SimError> {
        let (pidx, g) = (self.threads[t].proc, self.threads[t].group);
        let w = self.procs[pidx].groups[g].work_per_iteration;
        self.procs[pidx].work_units += w;
        if at as f64 >= self.sc.sim.warmup_s * NS {
            self.procs[pidx].work_units_warm += w;
        }
        let grp = &self.procs[pidx].groups[g];
        let th = &mut self.threads[t];
        th.iter += 1;
        if th.iter < grp.iterations {
            th.phase = 0;
            th.prog = Prog::default();
            return Ok(true);
        }
        self.finish_thread(ag, t, at)?;
        Ok(false)
    }

    /// An access phase starts at `now_wall`: its slice, and how much it has to do (bytes,
    /// passes over the slice, or a wall-clock duration).
    fn start_access(&mut self, t: usize, a: &AccessRt, now_wall: u64) {
        let slice = self.slice_of(t, a);
        let slice_bytes = (slice.1 - slice.0) as f64 * PAGE_BYTES;
        let th = &mut self.threads[t];
        th.prog = Prog {
            started: true,
            slice,
            pop_cursor: slice.0,
            ..Prog::default()
        };
        match a.amount {
            Amount::Seconds(s) => {
                th.prog.timed = true;
                th.prog.left = f64::INFINITY;
                th.prog.until_ns = now_wall + (s * NS) as u64;
            }
            Amount::Bytes(b) if a.passes.is_none() => th.prog.left = b,
            Amount::Bytes(_) => th.prog.left = a.passes.unwrap_or(1.0) * slice_bytes,
        }
    }

    /// A compute phase of `ns` (jittered once, at its start) at `cpu_share` of a core,
    /// within `budget` ns of CPU time; returns the budget left.
    fn run_compute(&mut self, t: usize, ns: f64, jitter: f64, cpu_share: f64, budget: f64) -> f64 {
        let ns = if self.threads[t].prog.started {
            ns
        } else {
            self.jittered(ns, jitter)
        };
        let th = &mut self.threads[t];
        if !th.prog.started {
            th.prog = Prog {
                started: true,
                left: ns,
                ..Prog::default()
            };
        }
        let need = th.prog.left / cpu_share;
        if need <= budget {
            th.sum_exec_ns += need;
            self.user_ns += need;
            self.advance_phase(t);
            budget - need
        } else {
            th.prog.left -= budget * cpu_share;
            th.sum_exec_ns += budget;
            self.user_ns += budget;
            0.0
        }
    }

    /// A sleep, spawn, join, barrier or move_pages phase reached at `at` by thread `t` on CPU `c`;
    /// true if the thread stops running for the rest of the interval.
    fn wait_phase(
        &mut self,
        ag: &mut Agents<'_>,
        t: usize,
        c: usize,
        phase: &PhaseRt,
        at: u64,
    ) -> Result<bool, SimError> {
        let (pidx, g) = (self.threads[t].proc, self.threads[t].group);
        match *phase {
            PhaseRt::Sleep(ns, jitter) => {
                let ns = self.jittered(ns, jitter);
                self.advance_phase(t);
                self.block(t, TState::Sleeping, at);
                self.wake_at(t, at + ns as u64);
                Ok(true)
            }
            PhaseRt::Spawn(target) => {
                self.advance_phase(t);
                if self.procs[pidx].groups[target].threads.is_empty() {
                    let n = self.procs[pidx].groups[target].nthreads;
                    self.start_group(ag, pidx, target, c, at)?;
                    // `clone` is work the thread asked for, not a stall.
                    let cost = self.machine.spec.costs.thread_spawn_ns * n as f64;
                    self.threads[t].debt_ns += cost;
                    self.sys_ns += cost;
                }
                Ok(false)
            }
            PhaseRt::Join(target) => {
                let tg = &self.procs[pidx].groups[target];
                if !tg.threads.is_empty() && tg.done == tg.nthreads {
                    let done_at = self.group_done_at(pidx, target);
                    self.advance_phase(t);
                    if done_at > at {
                        // Finished, but later than this thread's present.
                        self.block(t, TState::Sleeping, at);
                        self.wake_at(t, done_at);
                        return Ok(true);
                    }
                    Ok(false)
                } else {
                    self.procs[pidx].groups[target].joiners.push((t, at));
                    self.block(t, TState::Blocked, at);
                    Ok(true)
                }
            }
            PhaseRt::Barrier => {
                self.procs[pidx].groups[g].barrier_waiting.push((t, at));
                self.block(t, TState::Blocked, at);
                self.maybe_release_barrier(pidx, g, at);
                Ok(true)
            }
            PhaseRt::MovePages(region, node) => {
                self.advance_phase(t);
                // The system call's work, paid as the thread runs on.
                let cost = self.move_region(pidx, region, node);
                self.threads[t].debt_ns += cost;
                self.sys_ns += cost;
                Ok(false)
            }
            PhaseRt::Access(_) | PhaseRt::Compute(..) => Ok(false),
        }
    }
}

impl World<'_> {
    /// SMT state of CPU `c`'s core: (share of the core's memory-issue rate, share of its
    /// compute, busy siblings).
    pub(crate) fn smt_shares(&self, c: usize) -> (f64, f64, f64) {
        let core = &self.machine.spec.core;
        let k_s = self.sched.busy_siblings(c).max(1) as f64;
        if k_s > 1.0 {
            (
                core.smt_memory_throughput / k_s,
                core.smt_compute_throughput / k_s,
                k_s,
            )
        } else {
            (1.0, 1.0, 1.0)
        }
    }

    /// What a thread running access phase `a` on CPU `c` asks of the memory system, for
    /// `share` of the interval over the node `mix`. `smt` is `smt_shares(c)`.
    pub(crate) fn demand(
        &self,
        c: usize,
        a: &AccessRt,
        smt: (f64, f64, f64),
        share: f64,
        mix: Vec<f64>,
    ) -> Demand {
        let core = &self.machine.spec.core;
        let (mem_share, cpu_share, k_s) = smt;
        let m_eff = a
            .mlp
            .unwrap_or(core.outstanding_lines_per_thread)
            .min(core.outstanding_lines_per_core / k_s);
        let per_latency = 1.0 / (m_eff * 64.0);
        Demand {
            cpu_node: self.machine.cpus[c].node,
            share,
            mix,
            miss: 1.0 - a.cache_hit,
            core_ns_per_byte: core.stream_ns_per_byte / mem_share + a.ns_per_byte / cpu_share,
            per_latency,
            hit_ns_per_byte: a.cache_hit * self.machine.spec.memory.llc_latency_ns * per_latency,
        }
    }

    /// ns/byte per memory node for a thread whose phase changed mid-interval, from the
    /// delays the interval's solve found.
    pub(crate) fn tau_for(&self, c: usize, a: &AccessRt, smt: (f64, f64, f64), tau: &mut [f64]) {
        self.cost
            .ns_per_byte(&self.demand(c, a, smt, 0.0, Vec::new()), tau);
    }
}

impl World<'_> {
    /// The scheduler's work at a tick: runqueue rotation, then periodic load balancing,
    /// asking `ag` before each inter-node move.
    pub(crate) fn tick_balance(&mut self, ag: &Agents<'_>) {
        // The tick's accounting (task_tick_cache, account_mm_sched) before the softirq's
        // balancing.
        self.sched.tick_llc(self.now);
        self.sched.rotate();
        let mut sched = std::mem::take(&mut self.sched);
        sched.tick_balance(self.now, self.tick_ns, &|c: &LbCtx| ag.can_migrate(self, c));
        self.sched = sched;
    }
}
