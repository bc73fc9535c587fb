//! Task placement: `task_numa_placement` (the preferred node), `numa_migrate_preferred`,
//! `task_numa_migrate` with `task_numa_find_cpu` and `task_numa_compare`, and the load
//! balancer's `migrate_degrades_locality`.

use super::*;

impl Linux6 {
    /// `task_numa_placement`: once per pass of the mm, fold the buffers, pick the
    /// preferred node and adapt the scan period.
    pub(super) fn task_numa_placement(&mut self, w: &mut World, t: usize) {
        let nn = w.machine().nr_nodes();
        let now = w.now();
        let pidx = w.thread(t).proc;
        let rss = w.mm_rss(pidx);
        let sum_exec = w.thread(t).sum_exec_ns as u64;
        let runnable = w.sched().tasks[t].runnable;
        let nb = &mut *self;
        let seq = nb.mms[pidx].scan_seq;
        if nb.tasks[t].scan_seq == seq || nb.tasks[t].faults.is_none() {
            return;
        }
        let gs = nb.group_share(nb.tasks[t].group, nn);
        let tun = nb.tun.clone();
        let cpu_nodes = nb.cpu_nodes.clone();
        let tk = &mut nb.tasks[t];
        tk.scan_seq = seq;
        tk.scan_period_max = task_scan_max(rss, &tun, gs);
        let total = tk.locality[0] + tk.locality[1];
        // numa_get_avg_runtime
        let (runtime, period) = if tk.last_placement_ns != 0 {
            (
                sum_exec - tk.last_sum_exec,
                now.saturating_sub(tk.last_placement_ns),
            )
        } else {
            (
                (runnable / 1024.0 * LOAD_AVG_MAX as f64) as u64,
                LOAD_AVG_MAX,
            )
        };
        tk.last_sum_exec = sum_exec;
        tk.last_placement_ns = now;
        let gidx = tk.group;
        let mut faults = tk.faults.take().expect("checked");
        let mut tf = tk.total_faults;
        let pl = fold_faults(
            &mut faults,
            &mut tf,
            gidx.map(|g| &mut nb.groups[g]),
            runtime,
            period,
            total,
            &cpu_nodes,
        );
        let tk = &mut nb.tasks[t];
        tk.faults = Some(faults);
        tk.total_faults = tf;
        // preferred_group_nid: the argmax unchanged on NUMA_DIRECT topologies.
        if pl.max_faults > 0 && pl.max_nid != tk.preferred {
            tk.preferred = pl.max_nid;
            w.set_numa_preferred_nid(t, pl.max_nid);
        }
        let nb = &mut *self;
        let gs = nb.group_share(nb.tasks[t].group, nn);
        let tk = &mut nb.tasks[t];
        let upd = update_task_scan_period(
            tk.scan_period,
            tk.scan_period_max,
            pl.shared,
            pl.private,
            tk.locality,
            task_scan_min(rss, &tun),
            task_scan_max(rss, &tun, gs),
        );
        tk.scan_period = upd.period();
        if nb.tun.trace {
            // Not a kernel tracepoint: what /proc/PID/sched would show after a placement.
            let detail = format!(
                "numa_scan_seq={seq} preferred_nid={} numa_group_id={} shared={} private={} locality={:?} numa_scan_period={} {}",
                tk.preferred.map_or(-1, |n| n as i64),
                tk.group.map_or(0, |g| nb.groups[g].gid),
                pl.shared,
                pl.private,
                tk.locality,
                upd.period(),
                if matches!(upd, PeriodUpdate::Doubled(_)) {
                    "doubled"
                } else {
                    "adjusted"
                },
            );
            nb.trace.task(now, "task_numa_placement", t, pidx, detail);
        }
        let tk = &mut nb.tasks[t];
        match upd {
            PeriodUpdate::Doubled(p) => nb.mms[pidx].next_scan = now + p * MS,
            PeriodUpdate::Adjusted(_) => tk.locality = [0; 3],
        }
    }

    /// `numa_migrate_preferred`.
    pub(super) fn numa_migrate_preferred(&mut self, w: &mut World, t: usize) {
        let tick = w.tick_ns();
        let now = w.now();
        let Some(cpu) = w.sched().tasks[t].cpu else {
            return;
        };
        let nb = &mut *self;
        let tk = &mut nb.tasks[t];
        let Some(pref) = tk.preferred else {
            return;
        };
        if tk.faults.is_none() {
            return;
        }
        // min(HZ, msecs_to_jiffies(period) / 16) jiffies.
        let hz = NS as u64 / tick;
        let jiffies = (tk.scan_period * MS / tick / 16).min(hz);
        tk.migrate_retry = now + jiffies * tick;
        if w.machine().cpus[cpu].node == pref {
            return;
        }
        self.task_numa_migrate(w, t, cpu, pref);
    }

    pub(super) fn task_weight_of(&self, t: usize, nid: usize) -> i64 {
        let tk = &self.tasks[t];
        tk.faults
            .as_ref()
            .map_or(0, |f| task_weight(f, tk.total_faults, nid))
    }

    pub(super) fn group_weight_of(&self, t: usize, nid: usize) -> i64 {
        let nb = self;
        nb.tasks[t]
            .group
            .map_or(0, |g| group_weight(&nb.groups[g], nid))
    }

    /// `update_numa_stats` for a node.
    fn numa_stats(&self, w: &World, t: usize, nid: usize, find_idle: bool) -> NumaStats {
        let mut ns = NumaStats::default();
        let mut idle_core = None;
        for c in w.machine().nodes[nid].cpus.iter() {
            let (nr, _, _) = w.sched().fbq_counts(c);
            ns.load += w.sched().cpu_load(c);
            ns.runnable += w.sched().cpu_load(c);
            ns.util += w.sched().cpu_util(c);
            ns.nr_running += nr as i64;
            ns.capacity += 1024.0;
            ns.weight += 1;
            if find_idle && idle_core.is_none() && nr == 0 {
                if !w.sched().tasks[t].allowed.contains(c) {
                    continue;
                }
                if ns.idle_cpu.is_none() {
                    ns.idle_cpu = Some(c);
                }
                // numa_idle_core: a CPU whose SMT siblings are all idle.
                let core = w.machine().cpus[c].core;
                if w.machine().cores[core]
                    .cpus
                    .iter()
                    .all(|&s| w.sched().is_idle(s))
                {
                    idle_core = Some(c);
                }
            }
        }
        if idle_core.is_some() {
            ns.idle_cpu = idle_core;
        }
        ns
    }

    /// `task_numa_migrate`: move or swap `t` towards its preferred node.
    pub(super) fn task_numa_migrate(
        &mut self,
        w: &mut World,
        t: usize,
        src_cpu: usize,
        pref: usize,
    ) {
        let src_nid = w.machine().cpus[src_cpu].node;
        let pidx = w.thread(t).proc;
        let imbalance_pct = 100.0 + (117.0 - 100.0) / 2.0; // sd_numa 117 -> 108
        let imb_numa_nr = w.sched().imb_numa_nr().unwrap_or(1) as i64;
        let in_group = self.tasks[t].group.is_some();
        let tw_src = self.task_weight_of(t, src_nid);
        let gw_src = self.group_weight_of(t, src_nid);
        let mut env = Env {
            t,
            src_cpu,
            src_nid,
            dst_nid: pref,
            imb_numa_nr,
            src: self.numa_stats(w, t, src_nid, false),
            dst: self.numa_stats(w, t, pref, true),
            best_cpu: None,
            best_task: None,
            best_imp: 0,
        };
        env.src.classify(imbalance_pct);
        env.dst.classify(imbalance_pct);
        let taskimp = self.task_weight_of(t, pref) - tw_src;
        let groupimp = self.group_weight_of(t, pref) - gw_src;
        self.task_numa_find_cpu(w, &mut env, taskimp, groupimp);
        let nb = &mut *self;
        let multi = nb.tasks[t]
            .group
            .is_some_and(|g| nb.groups[g].active_nodes > 1);
        if env.best_cpu.is_none() || multi {
            let cpu_nodes = nb.cpu_nodes.clone();
            for nid in cpu_nodes {
                if nid == src_nid || Some(nid) == self.tasks[t].preferred {
                    continue;
                }
                let taskimp = self.task_weight_of(t, nid) - tw_src;
                let groupimp = self.group_weight_of(t, nid) - gw_src;
                if taskimp < 0 && groupimp < 0 {
                    continue;
                }
                env.dst_nid = nid;
                env.dst = self.numa_stats(w, t, nid, true);
                env.dst.classify(imbalance_pct);
                self.task_numa_find_cpu(w, &mut env, taskimp, groupimp);
            }
        }
        if in_group {
            let nid = env.best_cpu.map_or(src_nid, |c| w.machine().cpus[c].node);
            if Some(nid) != self.tasks[t].preferred {
                self.tasks[t].preferred = Some(nid);
                w.set_numa_preferred_nid(t, Some(nid));
            }
        }
        let now = w.now();
        let Some(best_cpu) = env.best_cpu else {
            let nb = &mut *self;
            nb.stats.numa_stick += 1;
            nb.trace.task(
                now,
                "sched_stick_numa",
                t,
                pidx,
                format!("src_cpu={src_cpu}"),
            );
            return;
        };
        let dst_nid = w.machine().cpus[best_cpu].node;
        match env.best_task {
            None => {
                w.migrate_task(t, src_cpu, best_cpu, Cause::NumaMove);
                w.vmstat().numa_task_migrated += 1;
                let nb = &mut *self;
                nb.trace.task(
                    now,
                    "sched_move_numa",
                    t,
                    pidx,
                    format!(
                        "src_cpu={src_cpu} src_nid={src_nid} dst_cpu={best_cpu} dst_nid={dst_nid}"
                    ),
                );
            }
            Some(cur) => {
                w.migrate_task(t, src_cpu, best_cpu, Cause::NumaSwap);
                w.migrate_task(cur, best_cpu, src_cpu, Cause::NumaSwap);
                w.vmstat().numa_task_swapped += 2;
                let cur_pid = w.thread(cur).proc;
                let nb = &mut *self;
                nb.trace.task(
                    now,
                    "sched_swap_numa",
                    t,
                    pidx,
                    format!(
                        "src_cpu={src_cpu} src_nid={src_nid} dst_tid={} dst_pid={} dst_cpu={best_cpu} dst_nid={dst_nid}",
                        cur + 1,
                        cur_pid + 1
                    ),
                );
            }
        }
    }

    /// `task_numa_find_cpu`.
    fn task_numa_find_cpu(&self, w: &World, env: &mut Env, taskimp: i64, groupimp: i64) {
        let mut maymove = false;
        if env.dst.node_type == NodeType::HasSpare {
            let src_running = env.src.nr_running - 1;
            let dst_running = env.dst.nr_running + 1;
            let mut imb = (dst_running - src_running).max(0);
            // adjust_numa_imbalance
            if dst_running <= env.imb_numa_nr && imb <= NUMA_IMBALANCE_MIN {
                imb = 0;
            }
            if imb == 0 {
                maymove = true;
                if let Some(c) = env.dst.idle_cpu {
                    env.best_cpu = Some(c);
                    env.best_task = None;
                    env.best_imp = 0;
                    return;
                }
            }
        } else {
            let load = w.sched().tasks[env.t].runnable;
            maymove = !env.load_too_imbalanced(env.src.load - load, env.dst.load + load);
        }
        for c in w.machine().nodes[env.dst_nid].cpus.iter() {
            if !w.sched().tasks[env.t].allowed.contains(c) {
                continue;
            }
            if self.task_numa_compare(w, env, c, taskimp, groupimp, maymove) {
                break;
            }
        }
    }

    /// `task_numa_compare` for one destination CPU; returns "stop searching".
    fn task_numa_compare(
        &self,
        w: &World,
        env: &mut Env,
        dst_cpu: usize,
        taskimp: i64,
        groupimp: i64,
        maymove: bool,
    ) -> bool {
        let nb = self;
        let p_ng = nb.tasks[env.t].group;
        let mut imp = if p_ng.is_some() { groupimp } else { taskimp };
        let moveimp = imp;
        let cur = w.sched().rq(dst_cpu).first().map(|&x| x as usize);
        if cur == Some(env.t) {
            return true;
        }
        let pref_of = |x: usize| nb.tasks[x].preferred;
        let assign_cur: Option<Option<usize>>;
        match cur {
            None => {
                if maymove && moveimp >= env.best_imp {
                    assign_cur = Some(None);
                } else {
                    return false;
                }
            }
            Some(cur) => {
                if !w.sched().tasks[cur].allowed.contains(env.src_cpu) {
                    return false;
                }
                if let Some(bt) = env.best_task
                    && pref_of(bt) == Some(env.src_nid)
                    && pref_of(cur) != Some(env.src_nid)
                {
                    return false;
                }
                let cur_ng = nb.tasks[cur].group;
                if cur_ng == p_ng {
                    if env.dst.node_type == NodeType::HasSpare {
                        return false;
                    }
                    imp = taskimp + self.task_weight_of(cur, env.src_nid)
                        - self.task_weight_of(cur, env.dst_nid);
                    if cur_ng.is_some() {
                        imp -= imp / 16;
                    }
                } else if cur_ng.is_some() && p_ng.is_some() {
                    imp += self.group_weight_of(cur, env.src_nid)
                        - self.group_weight_of(cur, env.dst_nid);
                } else {
                    imp += self.task_weight_of(cur, env.src_nid)
                        - self.task_weight_of(cur, env.dst_nid);
                }
                if pref_of(cur) == Some(env.dst_nid) {
                    imp -= imp / 16;
                }
                if pref_of(cur) == Some(env.src_nid) {
                    imp += imp / 8;
                }
                if maymove && moveimp > imp && moveimp > env.best_imp {
                    imp = moveimp;
                    assign_cur = Some(None);
                } else if env
                    .best_task
                    .is_some_and(|bt| pref_of(bt) != Some(env.src_nid))
                    && pref_of(cur) == Some(env.src_nid)
                {
                    assign_cur = Some(Some(cur));
                } else {
                    if imp < SMALLIMP || imp <= env.best_imp + SMALLIMP / 2 {
                        return false;
                    }
                    let load = w.sched().tasks[env.t].runnable - w.sched().tasks[cur].runnable;
                    if load != 0.0
                        && env.load_too_imbalanced(env.src.load - load, env.dst.load + load)
                    {
                        return false;
                    }
                    assign_cur = Some(Some(cur));
                }
            }
        }
        let Some(cur) = assign_cur else {
            return false;
        };
        let mut cpu = dst_cpu;
        if cur.is_none() {
            cpu = env.dst.idle_cpu.unwrap_or(dst_cpu);
            if !w.sched().is_idle(cpu)
                && let Some(b) = env.best_cpu
                && w.sched().is_idle(b)
            {
                cpu = b;
            }
        }
        env.best_cpu = Some(cpu);
        env.best_task = cur;
        env.best_imp = imp;
        if maymove && cur.is_none() && w.sched().is_idle(cpu) {
            return true;
        }
        if !maymove
            && env
                .best_task
                .is_some_and(|bt| pref_of(bt) == Some(env.src_nid))
        {
            return true;
        }
        false
    }

    /// `migrate_degrades_locality`, turned into the load balancer's hot/cold answer.
    pub(super) fn numab_can_migrate(&self, ctx: &LbCtx) -> CanMigrate {
        let nb = self;
        if ctx.active || ctx.src_node == ctx.dst_node {
            return CanMigrate::Yes;
        }
        let t = ctx.tid as usize;
        let Some(tk) = nb.tasks.get(t) else {
            return CanMigrate::Yes;
        };
        if tk.faults.is_none() {
            return CanMigrate::Yes;
        }
        let degrades: i64 = if tk.preferred == Some(ctx.src_node) {
            (ctx.src_nr_running > ctx.src_nr_preferred_running) as i64
        } else if tk.preferred == Some(ctx.dst_node) {
            -1
        } else if ctx.dst_idle {
            0
        } else if tk.group.is_some() {
            self.group_weight_of(t, ctx.src_node) - self.group_weight_of(t, ctx.dst_node)
        } else {
            self.task_weight_of(t, ctx.src_node) - self.task_weight_of(t, ctx.dst_node)
        };
        match degrades.signum() {
            1 => CanMigrate::Hot,
            -1 => CanMigrate::Better,
            _ => CanMigrate::Yes,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum NodeType {
    #[default]
    HasSpare,
    FullyBusy,
    Overloaded,
}

#[derive(Debug, Clone, Default)]
struct NumaStats {
    load: f64,
    runnable: f64,
    util: f64,
    nr_running: i64,
    capacity: f64,
    weight: i64,
    idle_cpu: Option<usize>,
    node_type: NodeType,
}

impl NumaStats {
    /// `numa_classify`.
    fn classify(&mut self, pct: f64) {
        let (cap, util, run) = (self.capacity, self.util, self.runnable);
        self.node_type = if self.nr_running > self.weight
            && (cap * 100.0 < util * pct || cap * pct < run * 100.0)
        {
            NodeType::Overloaded
        } else if self.nr_running < self.weight
            || (cap * 100.0 > util * pct && cap * pct > run * 100.0)
        {
            NodeType::HasSpare
        } else {
            NodeType::FullyBusy
        };
    }
}

/// `struct task_numa_env`.
struct Env {
    t: usize,
    src_cpu: usize,
    src_nid: usize,
    dst_nid: usize,
    imb_numa_nr: i64,
    src: NumaStats,
    dst: NumaStats,
    best_cpu: Option<usize>,
    best_task: Option<usize>,
    best_imp: i64,
}

impl Env {
    /// `load_too_imbalanced`.
    fn load_too_imbalanced(&self, src_load: f64, dst_load: f64) -> bool {
        let (sc, dc) = (self.src.capacity, self.dst.capacity);
        let imb = (dst_load * sc - src_load * dc).abs();
        let old = (self.dst.load * sc - self.src.load * dc).abs();
        imb > old
    }
}
