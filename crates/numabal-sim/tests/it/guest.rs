//! The QEMU test guest's twins (issue 16): the machine `qemu-guest-4n8` is the guest that
//! `scripts/vm/run.sh --nodes 4` boots, and the guest's test programs run on it as
//! workloads `numa01-like`, `numa02-like` and `perf-bench-numa-mem`.

use crate::util::{Inline, run, scenario_with};

const WORKLOADS: [&str; 3] = ["numa01-like", "numa02-like", "perf-bench-numa-mem"];

/// A few simulated seconds with every invariant checked at every tick.
const SHORT: [&str; 2] = ["sim.max_time_s=4", "sim.check_invariants=true"];

#[test]
fn the_guest_machine_is_run_sh_with_four_nodes() {
    let sc = scenario_with(
        &Inline(Vec::new()),
        "qemu-guest-4n8",
        "numa02-like",
        "none",
        1,
        &[],
    );
    let m = &sc.machine;
    assert_eq!((m.nr_nodes(), m.nr_cpus()), (4, 8));
    // -numa node,nodeid=N,cpus=2N-2N+1; -smp 8,sockets=4,cores=2,threads=1. Each node's
    // MemTotal in the 6.1 guest, and its MemFree idle after boot as what workloads get.
    let mib = |v: [u64; 4]| v.map(|x| x << 20);
    let total = mib([962, 1007, 943, 1006]);
    let free = mib([880, 994, 911, 993]);
    for (n, node) in m.nodes.iter().enumerate() {
        assert_eq!(node.cpus.iter().collect::<Vec<_>>(), vec![2 * n, 2 * n + 1]);
        assert_eq!(node.memory_bytes, total[n]);
        assert_eq!(node.memory_bytes - node.reserved_bytes, free[n]);
    }
    assert_eq!(m.spec.topology.threads_per_core, 1);
    // --dist flat: every remote distance 20.
    for (a, row) in m.distance.iter().enumerate() {
        for (b, &d) in row.iter().enumerate() {
            assert_eq!(d, if a == b { 10 } else { 20 }, "{a}-{b}");
        }
    }
}

/// The programs' sizes on the guest: numa01-like's threads are node 0's CPUs, numa02-like
/// has one per CPU, perf bench one per process; every main thread is one thread.
#[test]
fn the_guest_workloads_are_sized_for_the_guest() {
    let threads = |w: &str| {
        scenario_with(&Inline(Vec::new()), "qemu-guest-4n8", w, "none", 1, &[])
            .workload
            .threads
    };
    assert_eq!(threads("numa01-like"), vec![vec![1, 2]]);
    assert_eq!(threads("numa02-like"), vec![vec![1, 8]]);
    assert_eq!(threads("perf-bench-numa-mem"), vec![vec![1, 1]]);
}

/// Each workload runs under `none` and `autonuma` for a few simulated seconds without an
/// error or a broken invariant; without balancing every process's memory stays on node 0,
/// where the program first-touches it; the kernel model scans and migrates.
#[test]
fn the_guest_workloads_run_under_none_and_autonuma() {
    for w in WORKLOADS {
        // perf bench's processes fill their buffers for 3 s before their workers start.
        let secs = if w == "perf-bench-numa-mem" { 7.0 } else { 4.0 };
        let end = format!("sim.max_time_s={secs}");
        for p in ["none", "autonuma"] {
            let sets = [end.as_str(), SHORT[1]];
            let sc = scenario_with(&Inline(Vec::new()), "qemu-guest-4n8", w, p, 1, &sets);
            let r = run(&sc);
            // Every one runs for a fixed time, longer than the run.
            assert!(!r.finished, "{w}/{p}");
            assert!(
                r.metrics.runtime_s >= secs - 0.01,
                "{w}/{p}: {}",
                r.metrics.runtime_s
            );
            let mib: f64 = r.processes.iter().flat_map(|x| x.node_mb.iter()).sum();
            let want = match w {
                "numa01-like" => 2.0 * 128.0,
                "numa02-like" => 128.0,
                // The shared 1 MiB counts in each of the four processes.
                _ => 4.0 * 161.0,
            };
            assert!((mib - want).abs() < 1e-9, "{w}/{p}: {mib} MiB");
            match p {
                "none" => {
                    for x in &r.processes {
                        assert_eq!(x.node_mb[1..], [0.0, 0.0, 0.0], "{w}: {:?}", x.node_mb);
                    }
                    assert_eq!(r.metrics.numa_hint_faults, 0, "{w}");
                }
                _ => {
                    assert!(r.metrics.numa_hint_faults > 0, "{w}");
                    assert!(r.metrics.numa_pages_migrated > 0, "{w}");
                }
            }
        }
    }
}

/// `run_on_node`: the main thread first-touches on node 1's CPUs (so the default local
/// policy puts its memory there), then has every CPU back: with node 1's two CPUs taken
/// by two pinned threads, it runs on node 0.
#[test]
fn run_on_node_pins_the_first_phases_only() {
    let w = "name = \"pin\"\n\
        [[process]]\nname = \"p\"\n\
        [[process.region]]\nname = \"buf\"\nsize = \"64MiB\"\n\
        [[process.group]]\nname = \"main\"\nthreads = 1\n\
        [[process.group.phase]]\nkind = \"access\"\nregion = \"buf\"\npasses = 1\nrun_on_node = 1\n\
        [[process.group.phase]]\nkind = \"spawn\"\ngroup = \"pinned\"\n\
        [[process.group.phase]]\nkind = \"compute\"\nseconds = 3.0\n\
        [[process.group]]\nname = \"pinned\"\nthreads = 2\naffinity = \"2-3\"\n\
        [[process.group.phase]]\nkind = \"compute\"\nseconds = 3.0\n";
    let sc = scenario_with(
        &Inline(vec![("pin", w.to_string())]),
        "tiny-2n4",
        "pin",
        "none",
        1,
        &["sim.proc_every_s=1"],
    );
    let r = run(&sc);
    assert_eq!(
        r.processes[0].node_mb,
        vec![0.0, 64.0],
        "first touch on node 1"
    );
    let main_node = |s: &numabal_sim::world::records::ProcSample| {
        s.processes[0]
            .tasks
            .iter()
            .find(|t| t.tid == 0)
            .map(|t| t.node)
    };
    let late: Vec<Option<usize>> = r.proc_samples.iter().map(main_node).collect();
    assert!(
        late.iter().all(|&n| n == Some(0)),
        "the main thread after its first phase: {late:?}"
    );
}
