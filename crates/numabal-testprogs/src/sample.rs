//! `twin-sample`: what the twin harness reads in the guest every second, as raw text
//! (`numabal twin --guest` parses it): `/proc/vmstat`'s NUMA counters, each workload
//! task's CPU (`/proc/PID/task/TID/stat`) and NUMA fields (`.../sched`), and each workload
//! process's pages per node (`/proc/PID/numa_maps`, what `numastat -p` adds up). One
//! process that sleeps between samples, so the observer costs the guest a few
//! milliseconds a second, not the shell loop's process spawns (which kept a vCPU busy
//! and made the load balancer move the workload's threads).
//!
//! ```text
//!  @sample T                        seconds since the workload started
//!  vmstat NAME VALUE                numa_pte_updates ... pgmigrate_success
//!  @task PID TID CPU COMM           COMM with spaces as _
//!  @sched PID TID
//!  sched LINE                       the task's sched lines with numa or current_node
//!  numa_maps PID NODE KB
//! ```

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

/// The `/proc/vmstat` counters a sample keeps.
const VMSTAT: [&str; 6] = [
    "numa_pte_updates",
    "numa_huge_pte_updates",
    "numa_hint_faults",
    "numa_hint_faults_local",
    "numa_pages_migrated",
    "pgmigrate_success",
];

/// Which processes are the workload's: the name starts with `comm` and at least
/// `min_rss_kb` is resident (not numa01-like's waiting parent, not perf's).
pub struct Select<'a> {
    pub comm: &'a str,
    pub min_rss_kb: u64,
}

/// `comm` of `/proc/PID/stat` and the fields after it.
fn stat_fields(text: &str) -> Option<(&str, Vec<&str>)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = &text[open + 1..close];
    Some((comm, text[close + 1..].split_whitespace().collect()))
}

fn rss_kb(root: &Path, pid: u32) -> u64 {
    fs::read_to_string(root.join(format!("proc/{pid}/status")))
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// The workload's processes under `root` (normally `/`), by pid.
pub fn workload_pids(root: &Path, sel: &Select<'_>) -> Vec<u32> {
    let Ok(dir) = fs::read_dir(root.join("proc")) else {
        return Vec::new();
    };
    let mut pids: Vec<u32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&pid: &u32| {
            let stat = fs::read_to_string(root.join(format!("proc/{pid}/stat")));
            stat.ok()
                .and_then(|s| stat_fields(&s).map(|(c, _)| c.starts_with(sel.comm)))
                .unwrap_or(false)
                && rss_kb(root, pid) >= sel.min_rss_kb
        })
        .collect();
    pids.sort_unstable();
    pids
}

/// One sample at `t_s` of the processes `pids` under `root`, as raw lines.
pub fn sample(root: &Path, t_s: f64, pids: &[u32]) -> String {
    let mut out = format!("@sample {t_s:.1}\n");
    let vmstat = fs::read_to_string(root.join("proc/vmstat")).unwrap_or_default();
    for l in vmstat.lines() {
        if let Some((k, v)) = l.split_once(' ')
            && VMSTAT.contains(&k)
        {
            let _ = writeln!(out, "vmstat {k} {}", v.trim());
        }
    }
    for &pid in pids {
        out.push_str(&process(root, pid));
    }
    out
}

/// A process's task and numa_maps lines (none if it has gone).
fn process(root: &Path, pid: u32) -> String {
    let mut out = String::new();
    let Ok(dir) = fs::read_dir(root.join(format!("proc/{pid}/task"))) else {
        return out;
    };
    let mut tids: Vec<u32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    let mut sched = String::new();
    for tid in tids {
        let task = root.join(format!("proc/{pid}/task/{tid}"));
        let Some((comm, cpu)) = fs::read_to_string(task.join("stat")).ok().and_then(|s| {
            let (c, f) = stat_fields(&s)?;
            // Field 39, `processor`: the 37th after the comm.
            Some((c.replace(' ', "_"), f.get(36)?.to_string()))
        }) else {
            continue;
        };
        let _ = writeln!(out, "@task {pid} {tid} {cpu} {comm}");
        let _ = writeln!(sched, "@sched {pid} {tid}");
        for l in fs::read_to_string(task.join("sched"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("numa") || l.contains("current_node"))
        {
            let _ = writeln!(sched, "sched {l}");
        }
    }
    out.push_str(&sched);
    let kb_per_node = kb_per_node(root, pid);
    for (n, kb) in kb_per_node {
        let _ = writeln!(out, "numa_maps {pid} {n} {kb}");
    }
    out
}

/// A process's memory per node, KiB (`/proc/PID/numa_maps`, as `numastat -p` sums it):
/// each mapping's `N<node>=<pages>` times its `kernelpagesize_kB`.
pub fn kb_per_node(root: &Path, pid: u32) -> std::collections::BTreeMap<usize, u64> {
    let maps = fs::read_to_string(root.join(format!("proc/{pid}/numa_maps"))).unwrap_or_default();
    let mut kb_per_node = std::collections::BTreeMap::new();
    for l in maps.lines() {
        let kb = l
            .split_whitespace()
            .find_map(|f| f.strip_prefix("kernelpagesize_kB="))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(4);
        for f in l.split_whitespace() {
            if let Some((n, pages)) = f.strip_prefix('N').and_then(|r| r.split_once('='))
                && let (Ok(n), Ok(pages)) = (n.parse::<usize>(), pages.parse::<u64>())
            {
                *kb_per_node.entry(n).or_insert(0) += pages * kb;
            }
        }
    }
    kb_per_node
}

/// The CPU each task of `pid` last ran on (`stat` field 39), by tid; none if it has gone.
pub fn task_cpus(root: &Path, pid: u32) -> Vec<(u32, usize)> {
    let Ok(dir) = fs::read_dir(root.join(format!("proc/{pid}/task"))) else {
        return Vec::new();
    };
    let mut out: Vec<(u32, usize)> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter_map(|tid: u32| {
            let s = fs::read_to_string(root.join(format!("proc/{pid}/task/{tid}/stat"))).ok()?;
            let (_, f) = stat_fields(&s)?;
            Some((tid, f.get(36)?.parse().ok()?))
        })
        .collect();
    out.sort_unstable();
    out
}

/// Each CPU's node (`/sys/devices/system/node/nodeN/cpulist`), by CPU.
pub fn cpu_nodes(root: &Path) -> std::collections::BTreeMap<usize, usize> {
    let mut out = std::collections::BTreeMap::new();
    let Ok(dir) = fs::read_dir(root.join("sys/devices/system/node")) else {
        return out;
    };
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(node) = name
            .to_str()
            .and_then(|n| n.strip_prefix("node")?.parse().ok())
        else {
            continue;
        };
        let list = fs::read_to_string(e.path().join("cpulist")).unwrap_or_default();
        for part in list.trim().split(',').filter(|p| !p.is_empty()) {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            if let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) {
                out.extend((a..=b).map(|c| (c, node)));
            }
        }
    }
    out
}

/// Where a process is, as the daemon scenarios judge it (scripts/vm/scenarios/lib.sh,
/// `placed`): its workers' nodes (every task but the main thread, which only waits) and
/// the node holding most of its memory. `None` if it has gone.
#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    pub pid: u32,
    pub worker_nodes: Vec<usize>,
    pub mem_node: usize,
    pub mem_frac: f64,
    pub mem_mb: f64,
}

impl Placement {
    pub fn of(
        root: &Path,
        pid: u32,
        nodes: &std::collections::BTreeMap<usize, usize>,
    ) -> Option<Placement> {
        let tasks = task_cpus(root, pid);
        if tasks.is_empty() {
            return None;
        }
        let mut worker_nodes: Vec<usize> = (tasks.iter())
            .filter(|&&(tid, _)| tid != pid)
            .filter_map(|(_, cpu)| nodes.get(cpu).copied())
            .collect();
        worker_nodes.sort_unstable();
        worker_nodes.dedup();
        let kb = kb_per_node(root, pid);
        let total: u64 = kb.values().sum();
        // The lowest node of the most memory, as numastat's columns are read.
        let (mem_node, most) =
            (kb.iter()).fold((0, 0), |b, (&n, &k)| if k > b.1 { (n, k) } else { b });
        Some(Placement {
            pid,
            worker_nodes,
            mem_node,
            mem_frac: if total > 0 {
                most as f64 / total as f64
            } else {
                0.0
            },
            mem_mb: total as f64 / 1024.0,
        })
    }

    /// Its workers all on one node holding >= 90% of its memory.
    pub fn placed(&self) -> bool {
        self.worker_nodes == [self.mem_node] && self.mem_frac >= 0.9
    }

    /// `pid=P thread_nodes=[N ...] mem_node=M mem_frac=F mem_mb=MB`, as `placed` prints it.
    pub fn line(&self) -> String {
        let nodes: Vec<String> = self.worker_nodes.iter().map(|n| n.to_string()).collect();
        format!(
            "pid={} thread_nodes=[{}] mem_node={} mem_frac={:.3} mem_mb={:.1}",
            self.pid,
            nodes.join(" "),
            self.mem_node,
            self.mem_frac,
            self.mem_mb
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    /// `/proc/PID/stat` with `comm` and `cpu` in field 39.
    fn stat(pid: u32, comm: &str, cpu: u32) -> String {
        let mut f: Vec<String> = (3..=52).map(|i| i.to_string()).collect();
        f[0] = "R".into();
        f[36] = cpu.to_string();
        format!("{pid} ({comm}) {}\n", f.join(" "))
    }

    /// A process's placement as the scenarios' `placed` judges it: the main thread's CPU
    /// does not count, the node of the most memory and its share do.
    #[test]
    fn a_placement_as_the_scenarios_judge_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        put(root, "sys/devices/system/node/node0/cpulist", "0-1\n");
        put(root, "sys/devices/system/node/node1/cpulist", "2-3,6\n");
        for (tid, cpu) in [(20, 0), (21, 2), (22, 6)] {
            put(
                root,
                &format!("proc/20/task/{tid}/stat"),
                &stat(tid, "process 0", cpu),
            );
        }
        put(
            root,
            "proc/20/numa_maps",
            "7f00 default anon=100 N0=10 N1=90 kernelpagesize_kB=4\n7e00 default N1=1 kernelpagesize_kB=2048\n",
        );
        let nodes = cpu_nodes(root);
        let p = Placement::of(root, 20, &nodes).unwrap();
        assert_eq!(p.worker_nodes, vec![1]);
        assert_eq!(p.mem_node, 1);
        assert!(p.placed(), "{p:?}");
        assert_eq!(
            p.line(),
            "pid=20 thread_nodes=[1] mem_node=1 mem_frac=0.984 mem_mb=2.4"
        );
        put(root, "proc/20/task/22/stat", &stat(22, "process 0", 1));
        let p = Placement::of(root, 20, &nodes).unwrap();
        assert_eq!(p.worker_nodes, vec![0, 1]);
        assert!(!p.placed());
        assert!(p.line().contains("thread_nodes=[0 1]"), "{}", p.line());
        assert_eq!(Placement::of(root, 99, &nodes), None, "gone");
    }

    #[test]
    fn a_sample_as_the_twin_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        put(
            root,
            "proc/vmstat",
            "nr_free_pages 5\nnuma_pte_updates 10\nnuma_hint_faults 3\npgmigrate_success 7\n",
        );
        // The workload: pid 20 "process 0" with tasks 20 and 21; pid 30 too small.
        for (pid, comm, rss) in [(20, "process 0", 20000), (30, "process 1", 100)] {
            put(root, &format!("proc/{pid}/stat"), &stat(pid, comm, 0));
            put(
                root,
                &format!("proc/{pid}/status"),
                &format!("Name:\tx\nVmRSS:\t  {rss} kB\n"),
            );
        }
        put(root, "proc/40/stat", &stat(40, "sh", 1));
        put(root, "proc/40/status", "VmRSS:\t 99999 kB\n");
        for (tid, cpu) in [(20, 3), (21, 6)] {
            put(
                root,
                &format!("proc/20/task/{tid}/stat"),
                &stat(tid, "process 0", cpu),
            );
            put(
                root,
                &format!("proc/20/task/{tid}/sched"),
                "se.sum_exec_runtime : 1.0\nmm->numa_scan_seq : 4\ncurrent_node=1, numa_group_id=0\nnuma_faults node=0 task_private=2 task_shared=0 group_private=0 group_shared=0\n",
            );
        }
        put(
            root,
            "proc/20/numa_maps",
            "7f00 default anon=1024 N0=512 N2=512 kernelpagesize_kB=4\n7e00 default anon=1 N2=1 kernelpagesize_kB=2048\n",
        );
        let sel = Select {
            comm: "process",
            min_rss_kb: 16384,
        };
        let pids = workload_pids(root, &sel);
        assert_eq!(pids, vec![20]);
        let s = sample(root, 2.04, &pids);
        let want = "@sample 2.0\n\
            vmstat numa_pte_updates 10\n\
            vmstat numa_hint_faults 3\n\
            vmstat pgmigrate_success 7\n\
            @task 20 20 3 process_0\n\
            @task 20 21 6 process_0\n\
            @sched 20 20\n\
            sched mm->numa_scan_seq : 4\n\
            sched current_node=1, numa_group_id=0\n\
            sched numa_faults node=0 task_private=2 task_shared=0 group_private=0 group_shared=0\n\
            @sched 20 21\n\
            sched mm->numa_scan_seq : 4\n\
            sched current_node=1, numa_group_id=0\n\
            sched numa_faults node=0 task_private=2 task_shared=0 group_private=0 group_shared=0\n\
            numa_maps 20 0 2048\n\
            numa_maps 20 2 4096\n";
        assert_eq!(s, want);
        // A process that has gone between listing and reading: only the sample line.
        assert_eq!(sample(root, 3.0, &[99]).lines().count(), 4);
    }
}
