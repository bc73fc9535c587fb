//! Time series of a run: per node and per process, sampled at ticks every
//! `sim.series_every_s` (0: automatically, below).
//!
//! Raw cumulative counters are kept while the run goes (`below`'s rule: store samples,
//! derive rates); the result holds those counters at each sample, and the one derived
//! figure whose raw parts would double its size, the local access ratio of each interval.
//! Sampling reads counters the engine keeps anyway and never changes the run
//! (`mechanisms::series_samples_do_not_change_the_run`).
//!
//! Automatic interval: samples every simulated second; when the run reaches
//! `2 * AUTO_SAMPLES` samples, every other one is dropped and the interval doubles, so a
//! run of any length keeps between `AUTO_SAMPLES` and `2 * AUTO_SAMPLES` samples (plus the
//! one at the end). Cumulative counters survive the thinning exactly; the ratios are
//! derived after it.

use serde::{Deserialize, Serialize};

/// Samples kept at least (once the run is long enough) with the automatic interval.
pub const AUTO_SAMPLES: usize = 128;

/// A run's time series (`"series"` in the JSON result).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Series {
    /// Seconds between samples at the end of the run (the last sample is the run's end).
    pub interval_s: f64,
    /// Simulated time of each sample, s.
    pub t_s: Vec<f64>,
    /// Of all bytes accessed since the previous sample, the local share (`null`: none).
    pub local_access_ratio: Vec<Option<f64>>,
    /// One entry per NUMA node.
    pub nodes: Vec<NodeSeries>,
    /// One entry per process that held memory at a sample, by pid.
    pub processes: Vec<ProcessSeries>,
}

/// One node over the run; each vector has one value per sample (`Series::t_s`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct NodeSeries {
    /// Node id.
    pub node: u32,
    /// Pages in use on the node, MiB (every process, shared memory included).
    pub resident_mb: Vec<f64>,
    /// Of the bytes accessed by threads on the node's CPUs since the previous sample, the
    /// share on this node (`null`: none accessed).
    pub local_access_ratio: Vec<Option<f64>>,
    /// NUMA hinting faults taken on the node's CPUs, cumulative.
    pub numa_hint_faults: Vec<u64>,
    /// Base pages migrated to the node (`pgmigrate_success` by destination), cumulative.
    pub pages_migrated: Vec<u64>,
    /// Threads that moved to the node from another one, cumulative.
    pub thread_migrations: Vec<u64>,
    /// NUMA scanning CPU time run on the node's CPUs (the scanning task's CPU, or the
    /// scan thread's), s, cumulative.
    pub scan_cpu_s: Vec<f64>,
    /// Memory tiering: base pages promoted to the node (`pgpromote_success`), cumulative
    /// (absent when none ever was).
    #[serde(default, skip_serializing_if = "all_zero")]
    pub pgpromote_success: Vec<u64>,
    /// Memory tiering: base pages demoted from the node (`pgdemote_kswapd` and
    /// `pgdemote_direct`), cumulative (absent when none ever was).
    #[serde(default, skip_serializing_if = "all_zero")]
    pub pgdemote: Vec<u64>,
    /// DAMOS tiering: base pages `migrate_hot` moved up a tier to the node, cumulative
    /// (absent when none ever was).
    #[serde(default, skip_serializing_if = "all_zero")]
    pub damos_promoted: Vec<u64>,
    /// DAMOS tiering: base pages `migrate_cold` moved down a tier from the node,
    /// cumulative (absent when none ever was).
    #[serde(default, skip_serializing_if = "all_zero")]
    pub damos_demoted: Vec<u64>,
}

fn all_zero(v: &[u64]) -> bool {
    v.iter().all(|&x| x == 0)
}

/// One process over the samples at which it held memory: index `from` of `Series::t_s`
/// onwards, one value per sample.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ProcessSeries {
    /// Pid (1, 2, ... in start order).
    pub pid: u32,
    /// Process name.
    pub name: String,
    /// Index of its first sample in `Series::t_s`.
    pub from: usize,
    /// Resident MiB per node: `node_mb[node][sample]`.
    pub node_mb: Vec<Vec<f64>>,
    /// Of the bytes it accessed since its previous sample, the local share (`null`: none).
    pub local_access_ratio: Vec<Option<f64>>,
    /// NUMA hinting faults of its threads, cumulative.
    pub numa_hint_faults: Vec<u64>,
    /// Base pages of its private memory migrated, cumulative.
    pub pages_migrated: Vec<u64>,
    /// Inter-node moves of its threads, cumulative.
    pub thread_migrations: Vec<u64>,
    /// NUMA scanning CPU time spent on its address space, s, cumulative.
    pub scan_cpu_s: Vec<f64>,
}

/// Cumulative counters of one node or one process.
#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    local_bytes: f64,
    remote_bytes: f64,
    hint_faults: u64,
    pages_migrated: u64,
    thread_migrations: u64,
    scan_ns: f64,
    /// Memory tiering: base pages promoted to the node, demoted from it.
    promoted: u64,
    demoted: u64,
    /// DAMOS tiering: the same, by `migrate_hot` and `migrate_cold`.
    damos_promoted: u64,
    damos_demoted: u64,
}

/// One sample of one node or process.
#[derive(Debug, Clone, Default)]
struct Point {
    mb: Vec<f64>,
    c: Counters,
}

#[derive(Debug, Clone, Default)]
struct ProcTrack {
    name: String,
    /// Index of the first sample.
    from: usize,
    points: Vec<Point>,
    live: Counters,
}

/// Collects a run's series while it goes.
#[derive(Debug, Clone)]
pub struct Recorder {
    /// Fixed interval, ns; `None`: automatic.
    fixed_ns: Option<u64>,
    every_ns: u64,
    next_ns: u64,
    t_ns: Vec<u64>,
    nodes: Vec<Counters>,
    node_points: Vec<Vec<Point>>,
    procs: Vec<ProcTrack>,
}

const NS: f64 = 1e9;

impl Recorder {
    /// A recorder for `nr_nodes` nodes sampling every `every_s` seconds (0: automatically).
    pub fn new(nr_nodes: usize, every_s: f64) -> Self {
        let fixed_ns = (every_s > 0.0).then_some((every_s * NS).round() as u64);
        let every_ns = fixed_ns.unwrap_or(1_000_000_000).max(1);
        Recorder {
            fixed_ns,
            every_ns,
            next_ns: every_ns,
            t_ns: Vec::new(),
            nodes: vec![Counters::default(); nr_nodes],
            node_points: vec![Vec::new(); nr_nodes],
            procs: Vec::new(),
        }
    }

    fn proc(&mut self, pidx: usize) -> &mut Counters {
        if self.procs.len() <= pidx {
            self.procs.resize(pidx + 1, ProcTrack::default());
        }
        &mut self.procs[pidx].live
    }

    /// Bytes accessed by a thread on a CPU of `cpu_node` (the hot path: one add; a
    /// process's bytes come with its sample, from the engine's own per-process counts).
    #[inline]
    pub fn access(&mut self, cpu_node: usize, local: bool, bytes: f64) {
        let c = &mut self.nodes[cpu_node];
        if local {
            c.local_bytes += bytes;
        } else {
            c.remote_bytes += bytes;
        }
    }

    /// A hinting fault of process `pidx` on a CPU of `cpu_node`.
    pub fn hint_fault(&mut self, pidx: usize, cpu_node: usize) {
        self.nodes[cpu_node].hint_faults += 1;
        self.proc(pidx).hint_faults += 1;
    }

    /// `nr` base pages migrated to `dst`, of process `owner`'s private memory if any.
    pub fn migrated(&mut self, owner: Option<usize>, dst: usize, nr: u64) {
        self.nodes[dst].pages_migrated += nr;
        if let Some(p) = owner {
            self.proc(p).pages_migrated += nr;
        }
    }

    /// `nr` base pages promoted to `dst` (memory tiering).
    pub fn promoted(&mut self, dst: usize, nr: u64) {
        self.nodes[dst].promoted += nr;
    }

    /// `nr` base pages demoted from `src` (memory tiering).
    pub fn demoted(&mut self, src: usize, nr: u64) {
        self.nodes[src].demoted += nr;
    }

    /// `nr` base pages DAMOS moved up a tier to `dst` (`up`), or down from `src`.
    pub fn damos_moved(&mut self, src: usize, dst: usize, nr: u64, up: bool) {
        if up {
            self.nodes[dst].damos_promoted += nr;
        } else {
            self.nodes[src].damos_demoted += nr;
        }
    }

    /// A thread of process `pidx` moved to `to` from another node.
    pub fn thread_moved(&mut self, pidx: usize, to: usize) {
        self.nodes[to].thread_migrations += 1;
        self.proc(pidx).thread_migrations += 1;
    }

    /// `ns` of scanning run on a CPU of `cpu_node`, of process `pidx`'s address space
    /// (`None`: of several, as knuma_scand's step).
    pub fn scanned(&mut self, pidx: Option<usize>, cpu_node: usize, ns: f64) {
        self.nodes[cpu_node].scan_ns += ns;
        if let Some(p) = pidx {
            self.proc(p).scan_ns += ns;
        }
    }

    /// When the last sample was taken, ns.
    pub fn last_ns(&self) -> Option<u64> {
        self.t_ns.last().copied()
    }

    /// Drop the last sample (to take it again with more in it).
    pub fn pop_last(&mut self) {
        let k = self.t_ns.len();
        if k == 0 {
            return;
        }
        self.t_ns.pop();
        for pts in &mut self.node_points {
            pts.pop();
        }
        for p in &mut self.procs {
            if !p.points.is_empty() && p.from + p.points.len() == k {
                p.points.pop();
            }
        }
    }

    /// Whether a sample is due at `now`.
    pub fn due(&self, now: u64) -> bool {
        now >= self.next_ns
    }

    /// Take a sample at `now`: `node_mb` per node, and per process that holds memory its
    /// index, name, MiB per node and the (local, remote) bytes it has accessed.
    pub fn sample<'n>(
        &mut self,
        now: u64,
        node_mb: &[f64],
        procs: impl Iterator<Item = (usize, &'n str, &'n [f64], (f64, f64))>,
    ) {
        if self.t_ns.last() == Some(&now) {
            return;
        }
        // The next multiple of the interval (counted from 0, so ticks do not make it drift).
        self.next_ns = (now / self.every_ns + 1) * self.every_ns;
        let k = self.t_ns.len();
        self.t_ns.push(now);
        for (n, pts) in self.node_points.iter_mut().enumerate() {
            pts.push(Point {
                mb: vec![node_mb[n]],
                c: self.nodes[n],
            });
        }
        for (pidx, name, mb, (local, remote)) in procs {
            self.proc(pidx);
            let p = &mut self.procs[pidx];
            p.live.local_bytes = local;
            p.live.remote_bytes = remote;
            if p.points.is_empty() {
                p.from = k;
                p.name = name.to_string();
            } else if p.from + p.points.len() != k {
                // Memory again after a sample without: the gap is not a series; keep the
                // first stretch only.
                continue;
            }
            let c = p.live;
            p.points.push(Point { mb: mb.to_vec(), c });
        }
        if self.fixed_ns.is_none() && self.t_ns.len() >= 2 * AUTO_SAMPLES {
            self.thin();
        }
    }

    /// Double the interval: sample k was taken at (k + 1) intervals, so the ones at odd k
    /// are those at whole multiples of the new one.
    fn thin(&mut self) {
        fn keep_odd<T>(v: &mut Vec<T>, first: usize) {
            let mut g = first;
            v.retain(|_| {
                g += 1;
                (g - 1) % 2 == 1
            });
        }
        keep_odd(&mut self.t_ns, 0);
        for pts in &mut self.node_points {
            keep_odd(pts, 0);
        }
        for p in &mut self.procs {
            keep_odd(&mut p.points, p.from);
            p.from /= 2;
        }
        self.every_ns *= 2;
        self.next_ns = (self.t_ns.last().copied().unwrap_or(0) / self.every_ns + 1) * self.every_ns;
    }

    /// The series, with a last sample at `end` (taken by the caller) already in.
    pub fn finish(&self) -> Series {
        let ratio = |prev: Option<&Counters>, c: &Counters| {
            let (l0, r0) = prev.map_or((0.0, 0.0), |p| (p.local_bytes, p.remote_bytes));
            let (l, r) = (c.local_bytes - l0, c.remote_bytes - r0);
            (l + r > 0.0).then(|| round(l / (l + r), 1e4))
        };
        let ratios = |pts: &[Point], prev_of_first: Option<&Counters>| -> Vec<Option<f64>> {
            pts.iter()
                .enumerate()
                .map(|(i, p)| {
                    let prev = if i == 0 {
                        prev_of_first
                    } else {
                        Some(&pts[i - 1].c)
                    };
                    ratio(prev, &p.c)
                })
                .collect()
        };
        let nodes = self
            .node_points
            .iter()
            .enumerate()
            .map(|(n, pts)| NodeSeries {
                node: n as u32,
                resident_mb: pts.iter().map(|p| round(p.mb[0], 100.0)).collect(),
                local_access_ratio: ratios(pts, None),
                numa_hint_faults: pts.iter().map(|p| p.c.hint_faults).collect(),
                pages_migrated: pts.iter().map(|p| p.c.pages_migrated).collect(),
                thread_migrations: pts.iter().map(|p| p.c.thread_migrations).collect(),
                scan_cpu_s: pts.iter().map(|p| round(p.c.scan_ns / NS, 1e6)).collect(),
                pgpromote_success: pts.iter().map(|p| p.c.promoted).collect(),
                pgdemote: pts.iter().map(|p| p.c.demoted).collect(),
                damos_promoted: pts.iter().map(|p| p.c.damos_promoted).collect(),
                damos_demoted: pts.iter().map(|p| p.c.damos_demoted).collect(),
            })
            .collect();
        let nr_nodes = self.nodes.len();
        let processes = self
            .procs
            .iter()
            .enumerate()
            .filter(|(_, p)| !p.points.is_empty())
            .map(|(i, p)| ProcessSeries {
                pid: i as u32 + 1,
                name: p.name.clone(),
                from: p.from,
                node_mb: (0..nr_nodes)
                    .map(|n| p.points.iter().map(|x| round(x.mb[n], 100.0)).collect())
                    .collect(),
                local_access_ratio: ratios(&p.points, None),
                numa_hint_faults: p.points.iter().map(|x| x.c.hint_faults).collect(),
                pages_migrated: p.points.iter().map(|x| x.c.pages_migrated).collect(),
                thread_migrations: p.points.iter().map(|x| x.c.thread_migrations).collect(),
                scan_cpu_s: p
                    .points
                    .iter()
                    .map(|x| round(x.c.scan_ns / NS, 1e6))
                    .collect(),
            })
            .collect();
        let totals: Vec<Point> = (0..self.t_ns.len())
            .map(|k| {
                let mut c = Counters::default();
                for pts in &self.node_points {
                    c.local_bytes += pts[k].c.local_bytes;
                    c.remote_bytes += pts[k].c.remote_bytes;
                }
                Point { mb: Vec::new(), c }
            })
            .collect();
        Series {
            interval_s: self.every_ns as f64 / NS,
            t_s: self.t_ns.iter().map(|&t| t as f64 / NS).collect(),
            local_access_ratio: ratios(&totals, None),
            nodes,
            processes,
        }
    }
}

fn round(x: f64, per: f64) -> f64 {
    (x * per).round() / per
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_proc(r: &mut Recorder, now: u64, mb: f64) {
        r.sample(
            now,
            &[mb, 0.0],
            std::iter::once((0, "p", &[mb, 0.0][..], (0.0, 0.0))),
        );
    }

    #[test]
    fn automatic_interval_thins_and_keeps_cumulative_counts() {
        let mut r = Recorder::new(2, 0.0);
        let mut now = 0u64;
        let mut faults = 0;
        while now < 1000 * 1_000_000_000 {
            now += 4_000_000;
            r.hint_fault(0, 1);
            faults += 1;
            if r.due(now) {
                one_proc(&mut r, now, 1.0);
            }
        }
        let s = r.finish();
        assert!(
            (AUTO_SAMPLES..2 * AUTO_SAMPLES).contains(&s.t_s.len()),
            "{} samples",
            s.t_s.len()
        );
        assert_eq!(s.interval_s, 4.0, "1000 s in 128..256 samples: every 4 s");
        // Evenly spaced after thinning, and the counters are the counts at their times.
        for w in s.t_s.windows(2) {
            assert_eq!(w[1] - w[0], 4.0);
        }
        let last = *s.nodes[1].numa_hint_faults.last().unwrap();
        assert_eq!(last, (s.t_s.last().unwrap() * 250.0).round() as u64);
        assert!(last <= faults);
        assert_eq!(s.processes[0].numa_hint_faults, s.nodes[1].numa_hint_faults);
        assert_eq!(s.processes[0].from, 0);
        assert_eq!(s.processes[0].node_mb[0].len(), s.t_s.len());
    }

    #[test]
    fn interval_ratios_come_from_the_counters() {
        let mut r = Recorder::new(2, 1.0);
        let at = |r: &mut Recorder, t: u64, bytes: (f64, f64)| {
            r.sample(
                t * 1_000_000_000,
                &[1.0, 0.0],
                std::iter::once((0, "p", &[1.0, 0.0][..], bytes)),
            )
        };
        r.access(0, true, 300.0);
        r.access(0, false, 100.0);
        at(&mut r, 1, (300.0, 100.0));
        at(&mut r, 2, (300.0, 100.0));
        r.access(1, false, 50.0);
        at(&mut r, 3, (300.0, 150.0));
        let s = r.finish();
        assert_eq!(s.nodes[0].local_access_ratio, vec![Some(0.75), None, None]);
        assert_eq!(s.nodes[1].local_access_ratio, vec![None, None, Some(0.0)]);
        assert_eq!(s.local_access_ratio, vec![Some(0.75), None, Some(0.0)]);
        assert_eq!(
            s.processes[0].local_access_ratio,
            vec![Some(0.75), None, Some(0.0)]
        );
    }

    #[test]
    fn a_process_starting_late_begins_at_its_first_sample() {
        let mut r = Recorder::new(1, 1.0);
        r.sample(1_000_000_000, &[0.0], std::iter::empty());
        r.sample(
            2_000_000_000,
            &[5.0],
            std::iter::once((1, "late", &[5.0][..], (0.0, 0.0))),
        );
        let s = r.finish();
        assert_eq!(s.processes.len(), 1);
        assert_eq!(s.processes[0].pid, 2);
        assert_eq!(s.processes[0].from, 1);
        assert_eq!(s.processes[0].node_mb, vec![vec![5.0]]);
    }
}
