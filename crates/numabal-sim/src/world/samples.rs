//! What the world records as it goes: `numastat -p` samples, the time series, thread
//! moves between nodes (by cause, with ping-pong round trips).

use super::*;
use crate::memory::PAGE_BYTES;

impl World<'_> {
    /// `t` seconds rounded up to a tick (a tick is an event already, so a sample there adds
    /// no step to the run and cannot change it).
    pub(crate) fn on_tick(&self, t: f64) -> u64 {
        ((t * NS) as u64).div_ceil(self.tick_ns).max(1) * self.tick_ns
    }

    /// Schedule a periodic sample at the next multiple of `every` seconds (counted from 0,
    /// so rounding to ticks does not drift), at least a tick from now.
    fn schedule_periodic(&mut self, every: f64, kind: EventKind) {
        let k = (self.now as f64 / NS / every).round() + 1.0;
        let next = self.on_tick(k * every).max(self.now + self.tick_ns);
        self.events.push(next, kind);
    }

    /// Record every live process's memory per node now (once per instant, when samples
    /// coincide); a periodic sample schedules the next multiple of `numastat_every_s`
    /// (counted from 0, so rounding to ticks does not drift).
    pub(crate) fn numastat_sample(&mut self, periodic: bool) {
        if periodic {
            let every = self.sc.sim.numastat_every_s;
            self.schedule_periodic(every, EventKind::NumastatSample { periodic: true });
        }
        if self
            .numastat
            .last()
            .is_some_and(|l| l.t_s == self.now as f64 / NS)
        {
            return;
        }
        let processes = self
            .live_processes()
            .into_iter()
            .map(|i| records::NumastatProcess {
                pid: i as u32 + 1,
                name: self.procs[i].name.clone(),
                node_mb: self.process_node_mb(i),
                worker_nodes: self.worker_nodes(i),
                work_units: self.procs[i].work_units,
            })
            .collect();
        self.numastat.push(records::NumastatSample {
            t_s: self.now as f64 / NS,
            processes,
        });
    }

    /// What `/proc` shows now (`sim.proc_every_s`), without the kernel model's
    /// `/proc/PID/sched` fields (the engine adds them); schedules the next sample.
    pub(crate) fn proc_sample(&mut self) -> records::ProcSample {
        self.schedule_periodic(self.sc.sim.proc_every_s, EventKind::ProcSample);
        let m = &self.metrics;
        let vmstat = records::VmstatNuma {
            numa_pte_updates: m.numa_pte_updates,
            numa_huge_pte_updates: m.numa_huge_pte_updates,
            numa_hint_faults: m.numa_hint_faults,
            numa_hint_faults_local: m.numa_hint_faults_local,
            numa_pages_migrated: m.numa_pages_migrated,
            pgmigrate_success: m.pgmigrate_success,
        };
        let processes = self
            .live_processes()
            .into_iter()
            .map(|i| records::ProcProcess {
                pid: i as u32 + 1,
                name: self.procs[i].name.clone(),
                node_mb: self.process_node_mb(i),
                tasks: self
                    .live_threads(i)
                    .into_iter()
                    .map(|t| {
                        let task = &self.sched.tasks[t];
                        let cpu = task.cpu.unwrap_or(task.prev_cpu);
                        records::ProcTask {
                            tid: t as u32,
                            cpu,
                            node: self.machine.cpus[cpu].node,
                            sched: None,
                        }
                    })
                    .collect(),
            })
            .collect();
        records::ProcSample {
            t_s: self.now as f64 / NS,
            vmstat,
            processes,
            lru_gen: self.lru_gen_sample(),
        }
    }

    /// Keep a `/proc` sample.
    pub(crate) fn push_proc_sample(&mut self, s: records::ProcSample) {
        self.proc_samples.push(s);
    }

    /// The `/proc` samples so far.
    pub(crate) fn proc_samples(&self) -> &[records::ProcSample] {
        &self.proc_samples
    }

    /// A time-series sample now (it reads counters only). `at_end`: the run's last, which
    /// also has the processes that exited since the previous sample, at their exit.
    pub(crate) fn series_sample(&mut self, at_end: bool) {
        let node_mb: Vec<f64> = self
            .node_used
            .iter()
            .map(|&p| p as f64 * PAGE_BYTES / (1u64 << 20) as f64)
            .collect();
        if at_end && self.series.last_ns() == Some(self.now) {
            self.series.pop_last();
        }
        let since = self.series.last_ns();
        // Index, name, MiB per node, (local, remote) bytes: of each process to sample.
        type Sampled = (usize, String, Vec<f64>, (f64, f64));
        let procs: Vec<Sampled> = (0..self.procs.len())
            .filter_map(|i| {
                let p = &self.procs[i];
                let mb = match (p.end_ns, &p.node_mb_end) {
                    (None, _) if !p.regions.is_empty() => self.process_node_mb(i),
                    (Some(e), Some(mb)) if at_end && since.is_none_or(|s| e > s) => mb.clone(),
                    _ => return None,
                };
                Some((i, p.name.clone(), mb, (p.bytes_local, p.bytes_remote)))
            })
            .collect();
        let now = self.now;
        self.series.sample(
            now,
            &node_mb,
            procs
                .iter()
                .map(|(i, name, mb, b)| (*i, name.as_str(), mb.as_slice(), *b)),
        );
    }

    pub(crate) fn count_moves(&mut self) {
        let nn = self.machine.nr_nodes();
        for mv in self.sched.moves.drain(..) {
            let (from, to) = (
                self.machine.cpus[mv.from].node,
                self.machine.cpus[mv.to].node,
            );
            if from == to {
                continue;
            }
            self.node_moves.push((mv.tid as usize, from, to));
            if self.procs[self.threads[mv.tid as usize].proc].daemon {
                continue;
            }
            self.migrations[mv.cause as usize] += 1;
            self.series
                .thread_moved(self.threads[mv.tid as usize].proc, to);
            // Ping-pong: back on a node it left; the interval runs from the last departure.
            let t = mv.tid as usize;
            if self.left_node_at.len() <= t {
                self.left_node_at.resize(t + 1, Vec::new());
            }
            let left = &mut self.left_node_at[t];
            if left.is_empty() {
                left.resize(nn, u64::MAX);
            }
            if left[to] != u64::MAX {
                let s = self.now.saturating_sub(left[to]) as f64 / NS;
                self.ping_pong.record(s);
                self.metrics.thread_ping_pong_round_trips += 1;
                left[to] = u64::MAX;
            }
            left[from] = self.now;
        }
    }

    /// The inter-node task moves since the last call, for the kernel model
    /// (`migrate_task_rq_fair`): (task, from node, to node).
    pub(crate) fn take_node_moves(&mut self) -> Vec<(usize, usize, usize)> {
        std::mem::take(&mut self.node_moves)
    }

    /// A time-series sample if one is due now.
    pub(crate) fn series_sample_if_due(&mut self) {
        if self.series.due(self.now) {
            self.series_sample(false);
        }
    }
}

impl World<'_> {
    /// The node each live thread of process `pidx` but its main one last ran on.
    fn worker_nodes(&self, pidx: usize) -> Vec<usize> {
        let main = self.main_thread(pidx);
        self.live_threads(pidx)
            .into_iter()
            .filter(|&t| Some(t) != main)
            .map(|t| {
                let task = &self.sched.tasks[t];
                self.machine.cpus[task.cpu.unwrap_or(task.prev_cpu)].node
            })
            .collect()
    }

    /// A process's threads that have not exited, by thread id.
    fn live_threads(&self, pidx: usize) -> Vec<usize> {
        let mut tids: Vec<usize> = self.procs[pidx]
            .groups
            .iter()
            .flat_map(|g| g.threads.iter().copied())
            .filter(|&t| self.threads[t].state != TState::Done)
            .collect();
        tids.sort_unstable();
        tids
    }
}
