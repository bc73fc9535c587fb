//! One observation of the host in the policy core's terms (`numabal_policy::Observation`):
//! every thread and its CPU, every process with memory (`/proc/PID`), every node's memory
//! (`nodeN/meminfo`) and every CPU's idle time (`/proc/stat`). A daemon takes one per pass.
//!
//! Units: `/proc/stat` and `utime`/`stime` count clock ticks of `USER_HZ`, which is 100 on
//! every Linux architecture numabal targets (the kernel's ABI constant, not `CONFIG_HZ`);
//! RSS is in pages of 4 KiB (x86-64, arm64 with 4K pages).

use crate::procfs::{Process, Stat, pids, read_process_with};
use crate::topology::{LiveError, LiveTopology, err, read};
use numabal_model::{Mask, Pid, Tid};
use numabal_policy::{NodeObs, ProcessObs, ThreadObs};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Clock ticks per second of `/proc` times (`USER_HZ`).
pub const USER_HZ: u64 = 100;
/// Base page size.
pub const PAGE_BYTES: u64 = 4096;
const NS_PER_TICK: u64 = 1_000_000_000 / USER_HZ;

/// The owned data behind an `Observation`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Snapshot {
    /// Every thread of the processes below.
    pub threads: Vec<ThreadObs>,
    /// Every process with memory (kernel threads have none and are left out).
    pub processes: Vec<ProcessObs>,
    /// Every node, by node id (ids are dense in numabal's policies; a sparse host's
    /// missing ids get empty nodes).
    pub nodes: Vec<NodeObs>,
    /// Idle time per CPU id, ns.
    pub cpu_idle_ns: Vec<u64>,
    /// Memory accesses the daemon's sensor sampled since the last pass (empty without a
    /// page sensor; recordings without it read as empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<numabal_policy::AccessSample>,
}

impl Snapshot {
    /// The observation a policy is given.
    pub fn observation(&self, now_ns: u64) -> numabal_policy::Observation<'_> {
        numabal_policy::Observation {
            now_ns,
            threads: &self.threads,
            processes: &self.processes,
            nodes: &self.nodes,
            cpu_idle_ns: &self.cpu_idle_ns,
            samples: &self.samples,
        }
    }
}

/// Idle time per CPU id from `/proc/stat` (`cpuN user nice system idle ...`), ns.
/// `/proc/uptime`'s first field, ns; `None` when it cannot be read (a test's tree).
pub fn read_uptime_ns(root: &Path) -> Option<u64> {
    let text = read(&root.join("proc/uptime")).ok()?;
    let s: f64 = text.split_whitespace().next()?.parse().ok()?;
    Some((s * 1e9) as u64)
}

pub fn read_cpu_idle(root: &Path, nr_cpus: usize) -> Result<Vec<u64>, LiveError> {
    let path = root.join("proc/stat");
    let text = read(&path)?;
    let mut idle = vec![0u64; nr_cpus];
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let Some(cpu) = f.next().and_then(|c| c.strip_prefix("cpu")) else {
            continue;
        };
        let Ok(id) = cpu.parse::<usize>() else {
            continue; // the "cpu" total line
        };
        let ticks: u64 = f
            .nth(3)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| err(&path, format!("cpu{id}: no idle field")))?;
        if id < nr_cpus {
            idle[id] = ticks.saturating_mul(NS_PER_TICK);
        }
    }
    Ok(idle)
}

/// `Mems_allowed_list:` of a `/proc/PID/status` text (all nodes if absent).
fn mems_allowed(status: &str, nr_nodes: usize) -> Mask {
    status
        .lines()
        .find_map(|l| {
            let v = l.strip_prefix("Mems_allowed_list:")?;
            Mask::parse_list(v.trim(), None).ok()
        })
        .unwrap_or_else(|| Mask::full(nr_nodes))
}

/// `-smp N` (or `-smp cpus=N,...`) on a qemu command line.
pub fn kvm_vcpus(cmdline: &str) -> Option<u32> {
    let mut args = cmdline.split_whitespace();
    while let Some(a) = args.next() {
        if a == "-smp" {
            let v = args.next()?;
            let first = v.split(',').next()?;
            let n = first.strip_prefix("cpus=").unwrap_or(first);
            return n.parse().ok();
        }
    }
    None
}

fn process_obs(p: &Process, nr_nodes: usize) -> ProcessObs {
    let mut node_bytes = vec![0u64; nr_nodes];
    for (&n, &b) in &p.maps.node_bytes {
        if n < nr_nodes {
            node_bytes[n] += b;
        }
    }
    ProcessObs {
        pid: Pid(p.stat.pid),
        comm: p.name.clone(),
        num_threads: p.threads.len() as u32,
        cpu_time_ns: p.stat.utime_stime_ticks.saturating_mul(NS_PER_TICK),
        vsize_bytes: p.stat.vsize_bytes,
        rss_bytes: p.stat.rss_pages.saturating_mul(PAGE_BYTES),
        node_bytes,
        interleaved: p.maps.interleaved,
        mems_allowed: mems_allowed(&p.status, nr_nodes),
        kvm_vcpus: if p.name.starts_with("qemu") {
            kvm_vcpus(&p.cmdline)
        } else {
            None
        },
    }
}

/// Observe the host under `root`.
pub fn observe(root: &Path, topo: &LiveTopology) -> Result<Snapshot, LiveError> {
    Ok(observe_processes(root, topo, 0, &mut PassMemory::default())?.0)
}

/// What a pass over `/proc` remembers for the next ones, so that a host with many
/// processes costs little when few of them run:
///
/// - kernel threads (`PF_KTHREAD`): their `stat` is not read again while their pid stays
///   listed, as a kernel thread never becomes a process. An idle host has far more of them
///   than processes (a hundred in the 8-CPU guest), and under TCG each `/proc` read is
///   what the daemon's idle passes spend their time on;
/// - processes that have not run since they were read in full (the same start time, CPU
///   ticks and resident pages in `stat`): their `numa_maps` (the kernel walks the page
///   tables for it), `cmdline` and threads are taken from that read, for up to
///   `QUIET_REUSES` passes, then read again. A process's memory does not move while it
///   does not run, but by another program's `move_pages`, the daemon's own (it calls
///   [`PassMemory::moved`]) or reclaim and demotion, which the refresh catches.
///
/// Both are forgotten when the pid is no longer listed, and every `REFRESH` passes, in case
/// a pid was freed and taken again between two listings.
#[derive(Debug, Default)]
pub struct PassMemory {
    kthreads: BTreeSet<u32>,
    passes: u64,
    quiet: BTreeMap<u32, Quiet>,
}

/// A process as read in full, and how many passes have taken it since.
#[derive(Debug)]
struct Quiet {
    process: Process,
    reuses: u32,
}

impl PassMemory {
    const REFRESH: u64 = 64;
    const QUIET_REUSES: u32 = 9;

    /// A new pass listed `pids`: forget the pids no longer listed (all of them every
    /// `REFRESH` passes).
    fn begin(&mut self, pids: &[u32]) {
        self.passes += 1;
        if self.passes.is_multiple_of(Self::REFRESH) {
            self.kthreads.clear();
            self.quiet.clear();
        } else {
            self.kthreads.retain(|p| pids.binary_search(p).is_ok());
            self.quiet.retain(|p, _| pids.binary_search(p).is_ok());
        }
    }

    /// The daemon moved some of `pid`'s pages: read its `numa_maps` again at the next pass.
    pub fn moved(&mut self, pid: u32) {
        self.quiet.remove(&pid);
    }

    /// `pid` as read at an earlier pass (in `quiet`), if it has not run since (`stat` now).
    fn earlier_in(quiet: &mut BTreeMap<u32, Quiet>, pid: u32, stat: &Stat) -> Option<Process> {
        let q = quiet.get_mut(&pid)?;
        let was = &q.process.stat;
        let same = (was.start_ticks, was.utime_stime_ticks, was.rss_pages)
            == (stat.start_ticks, stat.utime_stime_ticks, stat.rss_pages);
        if !same || q.reuses >= Self::QUIET_REUSES {
            return None;
        }
        q.reuses += 1;
        Some(q.process.clone())
    }
}

/// [`observe`], leaving out processes with less than `min_rss_bytes` resident (and kernel
/// threads, which have none) after reading only their `stat`; also returns what was read
/// of each process kept, by pid (the daemon's safety checks read it).
pub fn observe_processes(
    root: &Path,
    topo: &LiveTopology,
    min_rss_bytes: u64,
    memory: &mut PassMemory,
) -> Result<(Snapshot, std::collections::BTreeMap<u32, Process>), LiveError> {
    let nr_nodes = topo.nr_node_ids();
    let cpu_nodes = topo.cpu_nodes();
    let node_of = |cpu: usize| cpu_nodes.get(cpu).copied().flatten();
    let mut nodes = vec![
        NodeObs {
            mem_total_bytes: 0,
            mem_free_bytes: 0
        };
        nr_nodes
    ];
    for n in &topo.nodes {
        nodes[n.id] = NodeObs {
            mem_total_bytes: n.mem_total_bytes,
            mem_free_bytes: n.free_bytes(),
        };
    }
    let mut threads = Vec::new();
    let mut processes = Vec::new();
    let mut read = std::collections::BTreeMap::new();
    // Read before the threads' start times, so that none is later than it.
    let uptime_ns = read_uptime_ns(root);
    let listed = pids(root)?;
    memory.begin(&listed);
    for pid in listed {
        if memory.kthreads.contains(&pid) {
            continue;
        }
        let kthreads = &mut memory.kthreads;
        let keep = |s: &crate::procfs::Stat| {
            if s.is_kernel_thread() {
                kthreads.insert(pid);
            }
            s.rss_pages > 0 && s.rss_pages.saturating_mul(PAGE_BYTES) >= min_rss_bytes
        };
        let reused = std::cell::Cell::new(false);
        let quiet = &mut memory.quiet;
        let earlier = |s: &crate::procfs::Stat| {
            let was = PassMemory::earlier_in(quiet, pid, s);
            reused.set(was.is_some());
            was
        };
        let Some(p) = read_process_with(root, pid, keep, earlier)? else {
            continue;
        };
        if !reused.get() {
            let q = Quiet {
                process: p.clone(),
                reuses: 0,
            };
            memory.quiet.insert(pid, q);
        }
        if p.maps.node_bytes.values().all(|&b| b == 0) {
            continue; // kernel threads and processes without memory
        }
        for &(tid, cpu, ticks, start) in &p.threads {
            threads.push(ThreadObs {
                tid: Tid(tid),
                pid: Pid(pid),
                cpu: Some(cpu),
                node: node_of(cpu),
                cpu_time_ns: ticks.saturating_mul(NS_PER_TICK),
                age_ns: uptime_ns.map(|u| u.saturating_sub(start.saturating_mul(NS_PER_TICK))),
            });
        }
        processes.push(process_obs(&p, nr_nodes));
        read.insert(pid, p);
    }
    let snap = Snapshot {
        threads,
        processes,
        nodes,
        cpu_idle_ns: read_cpu_idle(root, cpu_nodes.len())?,
        samples: Vec::new(),
    };
    Ok((snap, read))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procfs::fixture as pf;
    use crate::topology::{fixture as tf, read_topology};

    #[test]
    fn kernel_threads_are_read_once_while_listed() {
        let dir = tempfile::tempdir().unwrap();
        tf::guest_2n(dir.path());
        // A kernel thread's stat: field 9 (the 7th after the comm) PF_KTHREAD, no memory.
        let kthread = |pid: u32| {
            let line = pf::stat_line(pid, "kworker/0:1", 1, 0, 0);
            let (head, rest) = line.rsplit_once(") ").unwrap();
            let mut f: Vec<&str> = rest.split(' ').collect();
            f[6] = "2097152";
            format!("{head}) {}", f.join(" "))
        };
        pf::process(dir.path(), 30, "kworker/0:1", "", &[(30, 0)]);
        std::fs::write(dir.path().join("proc/30/stat"), kthread(30)).unwrap();
        std::fs::write(
            dir.path().join("proc/stat"),
            "cpu  4 0 4 400 0 0 0 0 0 0\ncpu0 1 0 1 100 0 0 0 0 0 0\ncpu1 1 0 1 100 0 0 0 0 0 0\n\
             cpu2 1 0 1 100 0 0 0 0 0 0\ncpu3 1 0 1 100 0 0 0 0 0 0\n",
        )
        .unwrap();
        let topo = read_topology(dir.path()).unwrap();
        let mut k = PassMemory::default();
        let pass = |k: &mut PassMemory| {
            let (snap, _) = observe_processes(dir.path(), &topo, 0, k).unwrap();
            snap.processes.iter().map(|p| p.pid.0).collect::<Vec<u32>>()
        };
        assert!(pass(&mut k).is_empty());
        assert!(k.kthreads.contains(&30));
        // Its stat is not read while pid 30 stays listed: a process given pid 30 between
        // two listings is seen only at the next refresh.
        pf::process(
            dir.path(),
            30,
            "numa-mem",
            "7f00 default anon=10 N0=10 kernelpagesize_kB=4\n",
            &[(30, 1)],
        );
        assert!(pass(&mut k).is_empty());
        while k.passes % PassMemory::REFRESH != PassMemory::REFRESH - 1 {
            assert!(pass(&mut k).is_empty());
        }
        assert_eq!(pass(&mut k), vec![30], "seen at the refresh");
        // A pid no longer listed is forgotten.
        std::fs::write(dir.path().join("proc/30/stat"), kthread(30)).unwrap();
        pass(&mut k);
        assert!(k.kthreads.contains(&30));
        std::fs::remove_dir_all(dir.path().join("proc/30")).unwrap();
        pass(&mut k);
        assert!(k.kthreads.is_empty());
    }

    /// A process that has not run since its last full read keeps that read's memory per
    /// node for up to `QUIET_REUSES` passes; it runs, or the daemon moved its pages, and
    /// it is read again. Its `status` is read every pass.
    #[test]
    fn a_quiet_process_is_not_read_in_full_again() {
        let dir = tempfile::tempdir().unwrap();
        tf::guest_2n(dir.path());
        let maps = |n0: u32| format!("7f00 default anon={n0} N0={n0} kernelpagesize_kB=4\n");
        pf::process(dir.path(), 40, "app", &maps(100), &[(40, 0)]);
        std::fs::write(dir.path().join("proc/stat"), "cpu  1 0 1 100 0 0 0 0 0 0\ncpu0 1 0 1 50 0 0 0 0 0 0\ncpu1 0 0 0 50 0 0 0 0 0 0\ncpu2 0 0 0 50 0 0 0 0 0 0\ncpu3 0 0 0 50 0 0 0 0 0 0\n").unwrap();
        let topo = read_topology(dir.path()).unwrap();
        let mut m = PassMemory::default();
        let pass = |m: &mut PassMemory| {
            let (_, read) = observe_processes(dir.path(), &topo, 0, m).unwrap();
            let p = &read[&40];
            (
                p.maps.node_bytes.get(&0).copied().unwrap_or(0) / 4096,
                p.name.clone(),
            )
        };
        assert_eq!(pass(&mut m).0, 100);
        // Moved by someone while it did not run: not seen until the refresh.
        std::fs::write(dir.path().join("proc/40/numa_maps"), maps(7)).unwrap();
        std::fs::write(dir.path().join("proc/40/status"), "Name:\trenamed\n").unwrap();
        assert_eq!(pass(&mut m), (100, "renamed".to_string()));
        for _ in 1..PassMemory::QUIET_REUSES {
            assert_eq!(pass(&mut m).0, 100);
        }
        assert_eq!(pass(&mut m).0, 7, "read again after QUIET_REUSES passes");
        // Moved by the daemon: read at the next pass.
        std::fs::write(dir.path().join("proc/40/numa_maps"), maps(8)).unwrap();
        assert_eq!(pass(&mut m).0, 7);
        m.moved(40);
        assert_eq!(pass(&mut m).0, 8);
        // It ran (its CPU ticks changed): read again.
        std::fs::write(dir.path().join("proc/40/numa_maps"), maps(9)).unwrap();
        let stat = pf::stat_line(40, "app", 1, 1000, 0).replace(" 100 20 ", " 101 20 ");
        std::fs::write(dir.path().join("proc/40/stat"), stat).unwrap();
        assert_eq!(pass(&mut m).0, 9);
    }

    #[test]
    fn a_fixture_host_as_the_policy_core_sees_it() {
        let dir = tempfile::tempdir().unwrap();
        tf::guest_2n(dir.path());
        pf::process(
            dir.path(),
            200,
            "qemu-kvm",
            "7f00 default anon=10 N0=100 N1=300 kernelpagesize_kB=4\n",
            &[(200, 0), (201, 3)],
        );
        std::fs::write(
            dir.path().join("proc/200/cmdline"),
            ["/usr/bin/qemu-kvm", "-m", "4096", "-smp", "4,sockets=1", ""].join("\0"),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("proc/200/status"),
            "Name:\tqemu-kvm\nMems_allowed_list:\t1\n",
        )
        .unwrap();
        // A kernel thread: no memory.
        pf::process(dir.path(), 2, "kthreadd", "", &[(2, 1)]);
        std::fs::write(
            dir.path().join("proc/stat"),
            "cpu  10 0 5 4000 0 0 0 0 0 0\ncpu0 1 0 1 1000 0 0 0 0 0 0\ncpu1 1 0 1 1100 0 0 0 0 0 0\n\
             cpu2 1 0 1 900 0 0 0 0 0 0\ncpu3 1 0 1 1000 0 0 0 0 0 0\nintr 1\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("proc/uptime"), "12.50 40.00\n").unwrap();
        let topo = read_topology(dir.path()).unwrap();
        let s = observe(dir.path(), &topo).unwrap();
        assert_eq!(s.processes.len(), 1);
        let p = &s.processes[0];
        assert_eq!(
            (p.pid, p.comm.as_str(), p.num_threads),
            (Pid(200), "qemu-kvm", 2)
        );
        assert_eq!(p.node_bytes, vec![100 * 4096, 300 * 4096]);
        assert_eq!(p.cpu_time_ns, 120 * 10_000_000);
        assert_eq!(p.rss_bytes, 1000 * 4096);
        assert_eq!(p.mems_allowed, Mask::single(1));
        assert_eq!(p.kvm_vcpus, Some(4));
        assert_eq!(s.threads.len(), 2);
        assert_eq!(s.threads[1].node, Some(1));
        // Started 2.5 s after boot (stat field 22), 12.5 s up: 10 s old.
        assert_eq!(s.threads[1].age_ns, Some(10_000_000_000));
        assert_eq!(
            s.cpu_idle_ns,
            vec![
                10_000_000_000,
                11_000_000_000,
                9_000_000_000,
                10_000_000_000
            ]
        );
        assert_eq!(s.nodes[1].mem_free_bytes >> 20, 1414);
        let o = s.observation(5);
        assert_eq!((o.now_ns, o.processes.len()), (5, 1));
    }

    #[test]
    fn smp_forms() {
        assert_eq!(kvm_vcpus("qemu -smp 10"), Some(10));
        assert_eq!(kvm_vcpus("qemu -smp cpus=6,sockets=1"), Some(6));
        assert_eq!(kvm_vcpus("qemu -m 1G"), None);
    }
}

/// The shared policy core runs on live observations: numad, fed two passes of a fixture
/// host 5 s apart, binds a busy 400 MB process spread over both nodes to the node holding
/// most of it (what the daemon will do on a host).
#[cfg(test)]
mod numad_on_a_fixture_host {
    use super::*;
    use crate::procfs::fixture as pf;
    use crate::topology::{fixture as tf, read_topology};
    use numabal_policy::{Action, Policy};

    fn put_pass(root: &Path, utime_ticks: u64, idle_ticks: u64) {
        // 400 MB resident, 2 threads on CPUs 0 and 2.
        let stat = pf::stat_line(300, "app", 2, 102_400, 0)
            .replace(" 100 20 ", &format!(" {utime_ticks} 0 "));
        std::fs::write(root.join("proc/300/stat"), stat).unwrap();
        let mut s = String::from("cpu  0 0 0 0 0 0 0 0 0 0\n");
        for c in 0..4 {
            let idle = if c == 0 || c == 2 { 0 } else { idle_ticks };
            s.push_str(&format!("cpu{c} 0 0 0 {idle} 0 0 0 0 0 0\n"));
        }
        std::fs::write(root.join("proc/stat"), s).unwrap();
    }

    #[test]
    fn numad_binds_a_busy_process_seen_through_proc() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        tf::guest_2n(root);
        // 300 MB on node 0, 100 MB on node 1.
        pf::process(
            root,
            300,
            "app",
            "7f00 default anon=102400 N0=76800 N1=25600 kernelpagesize_kB=4\n",
            &[(300, 0), (301, 2)],
        );
        let topo = read_topology(root).unwrap();
        let machine = crate::machine::machine_of(root, &topo).unwrap();
        let mut numad = numabal_policy::numad::Numad::new(Default::default());
        let mut out = Vec::new();
        put_pass(root, 0, 0);
        let s = observe(root, &topo).unwrap();
        numad.on_tick(&machine, &s.observation(1_000_000_000), &mut out);
        assert!(out.is_empty());
        // 5 s later: 10 CPU-seconds used (two busy threads), the other CPUs idle.
        put_pass(root, 1000, 500);
        let s = observe(root, &topo).unwrap();
        numad.on_tick(&machine, &s.observation(6_000_000_000), &mut out);
        assert!(
            out.contains(&Action::Log {
                pid: Pid(300),
                message: "Advising pid 300 (app) move from nodes (0-1) to nodes (0)".into()
            }),
            "{out:?}"
        );
        assert!(out.contains(&Action::MigrateProcessPages {
            pid: Pid(300),
            from: 1,
            to: 0
        }));
    }
}
