//! The world's part of a run's result: run-level metrics, thread migrations by cause,
//! each process at the end.

use super::records::{Metrics, NumastatSample, PingPongHistogram, ProcessResult, StallHistogram};
use super::{NS, World};
use crate::memory::PAGE_BYTES;
use crate::sched::Cause;
use std::collections::BTreeMap;

impl World<'_> {
    /// The run-level metrics at the end (without the kernel model's share).
    pub(crate) fn run_metrics(&self) -> Metrics {
        let finished = self.work_done();
        let end = self
            .threads
            .iter()
            .filter(|t| !self.procs[t.proc].daemon)
            .filter_map(|t| t.end_ns)
            .max()
            .unwrap_or(self.now);
        let runtime_ns = if finished { end } else { self.now };
        let mut m = self.metrics.clone();
        m.runtime_s = runtime_ns as f64 / NS;
        let total = self.local_bytes + self.remote_bytes;
        m.local_access_ratio = if total > 0.0 {
            self.local_bytes / total
        } else {
            1.0
        };
        m.thread_migrations_internode = self.migrations.iter().sum();
        m.user_cpu_s = self.user_ns / NS;
        m.sys_cpu_s = self.sys_ns / NS;
        m.migrate_cpu_s = self.migrate_ns / NS;
        m.tiering = self.tiering_result(m.runtime_s);
        m.accessed_gib = total / (1u64 << 30) as f64;
        m.access_gib_per_s = if m.runtime_s > 0.0 {
            m.accessed_gib / m.runtime_s
        } else {
            0.0
        };
        let per_s = |x: f64| {
            if m.runtime_s > 0.0 {
                x / m.runtime_s
            } else {
                0.0
            }
        };
        m.numa_hint_faults_per_s = per_s(m.numa_hint_faults as f64);
        m.page_migrations_per_s = per_s(m.pgmigrate_success as f64);
        m.thread_migrations_internode_per_s = per_s(m.thread_migrations_internode as f64);
        m.work_units = self
            .procs
            .iter()
            .filter(|p| !p.daemon)
            .map(|p| p.work_units)
            .sum();
        // Throughput over the measured part of the run (after `sim.warmup_s`).
        let warmup_s = self.sc.sim.warmup_s;
        let warm: f64 = self
            .procs
            .iter()
            .filter(|p| !p.daemon)
            .map(|p| p.work_units_warm)
            .sum();
        m.throughput_per_s = if m.runtime_s > warmup_s {
            warm / (m.runtime_s - warmup_s)
        } else {
            0.0
        };
        m.migrate_tlb_shootdowns = self.migrate_shootdowns;
        m.migrate_tlb_shootdown_s =
            self.migrate_shootdowns as f64 * self.machine.spec.costs.tlb_shootdown_ns / NS;
        m
    }

    /// Inter-node thread migrations by cause and by class of cause.
    pub(crate) fn thread_migrations_by(&self) -> (BTreeMap<String, u64>, BTreeMap<String, u64>) {
        let mut by_cause = BTreeMap::new();
        let mut by_class: BTreeMap<String, u64> = BTreeMap::new();
        for c in Cause::ALL {
            let n = self.migrations[c as usize];
            by_cause.insert(c.name().to_string(), n);
            *by_class.entry(c.class().to_string()).or_insert(0) += n;
        }
        (by_cause, by_class)
    }

    /// Each process at the end (or now, if it still runs).
    pub(crate) fn process_results(&self) -> Vec<ProcessResult> {
        self.procs
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let node_mb = p
                    .node_mb_end
                    .clone()
                    .unwrap_or_else(|| self.process_node_mb(i));
                let tot = p.bytes_local + p.bytes_remote;
                let runtime_s = (p.end_ns.unwrap_or(self.now) - p.start_ns) as f64 / NS;
                let mut thread_nodes = vec![0u32; self.machine.nr_nodes()];
                for g in &p.groups {
                    for &t in &g.threads {
                        let task = &self.sched.tasks[t];
                        thread_nodes[self.machine.cpus[task.cpu.unwrap_or(task.prev_cpu)].node] +=
                            1;
                    }
                }
                ProcessResult {
                    thread_nodes,
                    pid: i as u32 + 1,
                    name: p.name.clone(),
                    node_mb,
                    runtime_s,
                    work_units: p.work_units,
                    throughput_per_s: {
                        let from = (p.start_ns as f64 / NS).max(self.sc.sim.warmup_s);
                        let to = p.end_ns.unwrap_or(self.now) as f64 / NS;
                        if to > from {
                            p.work_units_warm / (to - from)
                        } else {
                            0.0
                        }
                    },
                    threads: p.threads,
                    local_access_ratio: if tot > 0.0 { p.bytes_local / tot } else { 1.0 },
                }
            })
            .collect()
    }

    /// Each node's memory in use at the end, MiB.
    pub(crate) fn node_used_mb(&self) -> Vec<f64> {
        self.node_used
            .iter()
            .map(|&p| p as f64 * PAGE_BYTES / (1u64 << 20) as f64)
            .collect()
    }

    /// Ping-pong round trips of threads between nodes.
    pub(crate) fn ping_pong(&self) -> &PingPongHistogram {
        &self.ping_pong
    }

    /// Stall lengths.
    pub(crate) fn stalls(&self) -> &StallHistogram {
        &self.stalls
    }

    /// `numastat -p` samples.
    pub(crate) fn numastat(&self) -> &[NumastatSample] {
        &self.numastat
    }

    /// The run's time series, finished.
    pub(crate) fn series(&self) -> crate::series::Series {
        self.series.finish()
    }
}
