//! The kernel NUMA-balancing model end to end: migrate-on-fault, the cpuset skip,
//! tunable validation. (The arithmetic is unit-tested in `numabal_sim::autonuma`.)

use crate::util::{Inline, run, scenario, scenario_with};
use numabal_model::scenario::PolicySpec;

/// One process pinned by its cpuset to node 1 of tiny-2n4 (CPUs 2-3), two threads
/// sweeping 256 MiB for 12 s.
fn pinned() -> String {
    "name = \"pinned\"\n[[process]]\nname = \"vm\"\ncpuset_cpus = \"2-3\"\ncpuset_mems = \"1\"\n\
     [[process.region]]\nname = \"mem\"\nsize = \"256MiB\"\n\
     [[process.group]]\nname = \"vcpu\"\nthreads = 2\n\
     [[process.group.phase]]\nkind = \"access\"\nregion = \"mem\"\nseconds = 12\n"
        .to_string()
}

/// A built-in machine and workload under `autonuma`, seed 1, with `sets`.
fn autonuma(machine_workload: &[&str; 2], sets: &[&str]) -> numabal_sim::RunResult {
    let [m, w] = *machine_workload;
    run(&scenario_with(
        &Inline(Vec::new()),
        m,
        w,
        "autonuma",
        1,
        sets,
    ))
}

#[test]
fn numa02_memory_follows_the_threads() {
    let none = run(&scenario("autonuma-2n24", "numa02", "none", 1));
    let auto = run(&scenario("autonuma-2n24", "numa02", "autonuma", 1));
    let m = &auto.metrics;
    assert_eq!(auto.scenario.policy, "autonuma");
    // numa02's main thread first-touches 1 GiB on one node; 24 threads then zero their
    // slices from both nodes: the remote half is migrated on hinting faults.
    assert!(m.numa_pte_updates > 0 && m.numa_hint_faults > 0);
    assert!(m.numa_hint_faults_local < m.numa_hint_faults);
    assert!(
        m.numa_pages_migrated >= 100_000,
        "{}",
        m.numa_pages_migrated
    );
    assert!(m.local_access_ratio > none.metrics.local_access_ratio + 0.2);
    assert!(m.runtime_s < none.metrics.runtime_s * 0.8);
    assert!(m.scan_cpu_s > 0.0);
    let report = auto.numa_balancing.as_ref().expect("kernel report");
    assert!(report.stats.scans > 0);
    assert!(none.numa_balancing.is_none());
}

#[test]
fn cpuset_skip_stops_scanning_a_single_node_cpuset() {
    let r = Inline(vec![("pinned", pinned())]);
    let on = run(&scenario_with(&r, "tiny-2n4", "pinned", "autonuma", 1, &[]));
    let off = run(&scenario_with(
        &r,
        "tiny-2n4",
        "pinned",
        "autonuma",
        1,
        &["policy.cpuset_skip=false"],
    ));
    let stats = |x: &numabal_sim::RunResult| x.numa_balancing.clone().expect("report").stats;
    // On: task_numa_work returns before touching a PTE, every time.
    assert_eq!(on.metrics.numa_pte_updates, 0);
    assert_eq!(on.metrics.numa_hint_faults, 0);
    assert!(stats(&on).cpuset_skips > 0);
    assert_eq!(stats(&on).scans, 0);
    // Off: the scanner protects pages and the threads take hinting faults, all local
    // (nothing can move), and nothing migrates.
    assert!(off.metrics.numa_pte_updates > 0);
    assert!(off.metrics.numa_hint_faults > 0);
    assert_eq!(
        off.metrics.numa_hint_faults_local,
        off.metrics.numa_hint_faults
    );
    assert_eq!(off.metrics.numa_pages_migrated, 0);
    assert_eq!(stats(&off).cpuset_skips, 0);
    assert!(off.metrics.sys_cpu_s > on.metrics.sys_cpu_s);
}

#[test]
fn policy_kernel_gates_the_scan_rules_by_release() {
    let r = Inline(vec![("pinned", pinned())]);
    let at = |k: &str| {
        let set = format!("policy.kernel={k}");
        run(&scenario_with(
            &r,
            "tiny-2n4",
            "pinned",
            "autonuma",
            1,
            &[set.as_str()],
        ))
    };
    let stats = |x: &numabal_sim::RunResult| x.numa_balancing.clone().expect("report").stats;
    // The cpuset skip came with 6.16: 6.12 scans the pinned process, 6.16 and 7.2 do not.
    let (k612, k616) = (at("6.12"), at("6.16"));
    assert!(k612.metrics.numa_pte_updates > 0 && stats(&k612).cpuset_skips == 0);
    assert_eq!(k616.metrics.numa_pte_updates, 0);
    assert_eq!(at("7.2").metrics, k616.metrics);
    assert_eq!(k616.scenario.tunables["kernel"], "6.16");
    // 6.1 keeps no per-VMA state: no VMA is ever skipped for its scan delay, its PIDs or a
    // completed pass (unsuitable ones are, in every release); 6.4 skips new VMAs during
    // their scan delay.
    let k61 = autonuma(
        &["autonuma-2n24", "numa01"],
        &["policy.kernel=6.1", "sim.max_time_s=20"],
    );
    let k64 = autonuma(
        &["autonuma-2n24", "numa01"],
        &["policy.kernel=6.4", "sim.max_time_s=20"],
    );
    assert!(
        ["scan_delay", "pid_inactive", "seq_completed"]
            .iter()
            .all(|r| !stats(&k61).vma_skips.contains_key(*r)),
        "{:?}",
        stats(&k61).vma_skips
    );
    assert!(
        stats(&k64)
            .vma_skips
            .get("scan_delay")
            .is_some_and(|&n| n > 0),
        "{:?}",
        stats(&k64).vma_skips
    );
    assert!(k61.metrics.numa_pte_updates > 0);
}

#[test]
fn the_6_4_scan_regression_and_its_6_7_recovery_on_numa01() {
    let at = |k: &str| {
        let set = format!("policy.kernel={k}");
        autonuma(&["autonuma-2n24", "numa01"], &[set.as_str()]).metrics
    };
    let (k63, k64, k67) = (at("6.3"), at("6.4"), at("6.7"));
    // numa01's threads first-touch under MPOL_BIND: the first passes find its VMA
    // unsuitable and numa_scan_seq passes 2, after which 6.4's PID filter never scans it
    // again (no fault, no PID bit); 6.7's forced retry does.
    assert!(k63.numa_pte_updates > 0 && k67.numa_pte_updates > 0);
    assert_eq!(k64.numa_pte_updates, 0);
    assert!(
        k64.runtime_s > k63.runtime_s * 1.15,
        "{} vs {}",
        k64.runtime_s,
        k63.runtime_s
    );
    assert!(
        k67.runtime_s < k64.runtime_s * 0.9,
        "{} vs {}",
        k67.runtime_s,
        k64.runtime_s
    );
}

#[test]
fn a_shared_anonymous_mapping_is_scanned_only_with_the_shmem_fix() {
    // perf bench's global buffer is MAP_SHARED anonymous memory (shmem). Before "mm:
    // mempolicy: fix automatic numa balancing for shmem" vma_policy_mof asks shmem's
    // get_policy, which has no policy to give, and task_numa_work skips it; with the fix
    // (7.2, and the 6.12 stable series) no policy means the task's and the buffer is
    // scanned. With THP `always` the private buffers are all THPs, so every PTE update of a
    // base page is the shared buffer's.
    let base_ptes = |k: &str| {
        let set = format!("policy.kernel={k}");
        let sets = [
            "sim.transparent_hugepage=always",
            "sim.max_time_s=10",
            set.as_str(),
        ];
        let m = autonuma(&["qemu-guest-4n8", "perf-bench-numa-mem"], &sets).metrics;
        assert!(m.numa_huge_pte_updates > 0, "{k}");
        m.numa_pte_updates - 512 * m.numa_huge_pte_updates
    };
    assert_eq!(base_ptes("6.1"), 0);
    assert_eq!(base_ptes("6.13"), 0);
    // The 1 MiB buffer, 256 pages, protected in each process's address space.
    for k in ["6.12", "7.2"] {
        let n = base_ptes(k);
        assert!(n > 0 && n % 256 == 0, "{k}: {n}");
    }
}

#[test]
fn proc_samples_show_what_the_guest_reads() {
    let sets = ["sim.proc_every_s=1", "sim.max_time_s=12"];
    let r = autonuma(&["qemu-guest-4n8", "numa01-like"], &sets);
    let s = &r.proc_samples;
    assert_eq!(
        s.iter().map(|x| x.t_s).collect::<Vec<_>>(),
        (1..=11).map(f64::from).collect::<Vec<_>>()
    );
    // Counters only grow, and the last sample is no later than the run's totals.
    for w in s.windows(2) {
        assert!(w[1].vmstat.numa_hint_faults >= w[0].vmstat.numa_hint_faults);
    }
    let last = s.last().unwrap();
    assert!(
        last.vmstat.numa_pte_updates > 0
            && last.vmstat.numa_pte_updates <= r.metrics.numa_pte_updates
    );
    // Two processes of a main thread and 2 workers; the workers' /proc/PID/sched fields
    // come from the kernel model: faults recorded, per node, summing to total_numa_faults.
    assert_eq!(last.processes.len(), 2);
    for p in &last.processes {
        assert_eq!(p.tasks.len(), 3);
        assert!(
            (p.node_mb.iter().sum::<f64>() - 128.0).abs() < 1.0,
            "{:?}",
            p.node_mb
        );
        for t in &p.tasks[1..] {
            let sn = t.sched.as_ref().expect("sched fields");
            assert!(sn.numa_scan_seq > 0 && sn.total_numa_faults > 0);
            let sum: u64 = sn.faults.iter().map(|f| f[0] + f[1]).sum();
            assert_eq!(sum, sn.total_numa_faults);
        }
    }
    // Without the setting, no samples (and no key in the result).
    let plain = run(&scenario("qemu-guest-4n8", "numa01-like", "none", 1));
    assert!(plain.proc_samples.is_empty());
}

#[test]
fn tunables_are_validated_by_name() {
    let spec = |kind: &str, k: &str, v: toml::Value| {
        let mut t = toml::Table::new();
        t.insert(k.to_string(), v);
        PolicySpec {
            kind: kind.to_string(),
            tunables: t,
            label: "--policy".into(),
        }
    };
    let err = |s: &PolicySpec| match numabal_sim::registry::standard().build(s) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("accepted {s:?}"),
    };
    let e = err(&spec("autonuma", "scan_size", toml::Value::Integer(1)));
    assert!(
        e.contains("policy.scan_size") && e.contains("scan_size_mb"),
        "{e}"
    );
    let e = err(&spec("autonuma", "scan_size_mb", toml::Value::Integer(0)));
    assert!(e.contains("at least 1"), "{e}");
    let e = err(&spec(
        "autonuma",
        "scan_delay_ms",
        toml::Value::String("x".into()),
    ));
    assert!(e.contains("policy.scan_delay_ms"), "{e}");
    let e = err(&spec(
        "autonuma",
        "scan_sleep_millisecs",
        toml::Value::Integer(64),
    ));
    // A release outside the modelled range is refused, naming the key and the range.
    for bad in [toml::Value::Float(5.15), toml::Value::String("7.3".into())] {
        let e = err(&spec("autonuma", "kernel", bad));
        assert!(
            e.contains("policy.kernel") && e.contains("from 6.1 to 7.2"),
            "{e}"
        );
    }
    // The original AutoNUMA's tunables are not the 6.x model's: refused with the 6.x list.
    assert!(
        e.contains("policy.scan_sleep_millisecs: unknown tunable")
            && e.contains("scan_size_mb")
            && !e.contains("pages_to_scan_mb"),
        "{e}"
    );
    let e = err(&spec(
        "autonuma",
        "scan_async_backcharge",
        toml::Value::Boolean(true),
    ));
    assert!(
        e.contains("policy.scan_async_backcharge") && e.contains("needs scan_async"),
        "{e}"
    );
    let e = err(&spec("autonuma", "knuma", toml::Value::Integer(1)));
    assert!(e.contains("allowed:"), "{e}");
    assert!(
        numabal_sim::registry::standard()
            .build(&spec("autonuma", "scan_size_mb", toml::Value::Integer(64)))
            .is_ok()
    );
}

/// Stall accounting with `scan_async`: on a machine with idle CPUs the scan leaves the
/// task (no stall in its context, time hidden from it); synchronous scans of 256 MB on
/// xeon-2n104 (20 ns per PTE) are stalls of more than 1 ms each.
#[test]
fn scan_async_moves_scan_stalls_off_the_task() {
    let sets = ["sim.max_time_s=40"];
    let r = Inline(vec![]);
    let sync = run(&scenario_with(
        &r,
        "xeon-2n104",
        "pmbench",
        "autonuma",
        1,
        &sets,
    ));
    let mut a = sets.to_vec();
    a.push("policy.scan_async=true");
    let asy = run(&scenario_with(
        &r,
        "xeon-2n104",
        "pmbench",
        "autonuma",
        1,
        &a,
    ));
    let (s, y) = (&sync.metrics, &asy.metrics);
    let scans = sync.numa_balancing.as_ref().expect("report").stats.scans;
    assert!(scans > 10, "{scans}");
    // Every full 256 MB window costs 65536 x 20 ns = 1.31 ms in the task.
    assert!(
        s.stall_events_over_1ms >= scans - 2,
        "{} of {scans}",
        s.stall_events_over_1ms
    );
    assert_eq!(sync.stalls.at_least(1.0), s.stall_events_over_1ms);
    assert!(
        s.stall_max_ms > 1.0 && s.stall_max_ms < 2.0,
        "{}",
        s.stall_max_ms
    );
    assert_eq!(s.scan_cpu_hidden_s, 0.0);
    // Async: 64 threads on 104 CPUs leave idle CPUs on both nodes for the worker.
    let st = asy.numa_balancing.as_ref().expect("report").stats.clone();
    assert!(st.async_scans > 10 && st.async_scans_idle_cpu == st.async_scans);
    assert_eq!(st.async_scans_outside_cpuset, 0);
    assert_eq!(y.stall_events_over_1ms, 0);
    assert!(y.scan_cpu_hidden_s > 0.0 && (y.scan_cpu_hidden_s - y.scan_cpu_s).abs() < 1e-9);
}

/// `jobs`: at most N instances alive, the next forked when one exits (`make -jN`).
#[test]
fn jobs_keep_n_instances_alive() {
    let w = "name = \"make\"\n[[process]]\nname = \"cc1\"\ninstances = 6\njobs = 2\n\
             [[process.region]]\nname = \"heap\"\nsize = \"8MiB\"\n\
             [[process.group]]\nname = \"main\"\nthreads = 1\n\
             [[process.group.phase]]\nkind = \"compute\"\nseconds = 0.5\n";
    let r = Inline(vec![("make", w.to_string())]);
    let res = run(&scenario_with(&r, "tiny-2n4", "make", "none", 1, &[]));
    assert!(res.finished);
    assert_eq!(res.processes.len(), 6);
    // Two slots on four CPUs: three rounds of 0.5 s.
    assert!(
        res.metrics.runtime_s > 1.5 && res.metrics.runtime_s < 1.6,
        "{}",
        res.metrics.runtime_s
    );
    let bad = w.replace("jobs = 2", "jobs = 7");
    let r = Inline(vec![("make", bad)]);
    let e = numabal_model::scenario::Scenario::build(
        &numabal_model::scenario::ScenarioInput {
            machine: Some("tiny-2n4".into()),
            workload: Some("make".into()),
            policy: Some("none".into()),
            ..Default::default()
        },
        &r,
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("jobs") && e.to_string().contains("allowed: 1-6"),
        "{e}"
    );
}

/// The AutoNUMA benchmark table (2012)'s worst case for balancing overhead: a build of short-lived processes.
#[test]
fn kbuild_overhead_within_two_percent() {
    let none = run(&scenario("autonuma-2n24", "kbuild", "none", 1));
    let auto = run(&scenario("autonuma-2n24", "kbuild", "autonuma", 1));
    let r = auto.metrics.runtime_s / none.metrics.runtime_s;
    assert!((r - 1.0).abs() <= 0.02, "autonuma/none = {r}");
    assert_eq!(auto.processes.len(), 1720);
}

/// The AutoNUMA benchmark table (2012): two guests, each fitting a node; balancing gathers each on its own node.
#[test]
fn kvm_guests_build_faster_under_autonuma() {
    let none = run(&scenario("autonuma-2n24", "kvm_guests_build", "none", 1));
    let auto = run(&scenario(
        "autonuma-2n24",
        "kvm_guests_build",
        "autonuma",
        1,
    ));
    assert!(
        auto.metrics.runtime_s < none.metrics.runtime_s,
        "{} vs {}",
        auto.metrics.runtime_s,
        none.metrics.runtime_s
    );
    assert!(auto.metrics.local_access_ratio > none.metrics.local_access_ratio + 0.2);
}

/// The cpuset scan-skip patch: with the skip (default) the pinned guest is never scanned after start-up.
/// Without it, each scan window of the guest's memory zaps its EPT entries (one
/// invalidation per scan here, every runnable vCPU kicked) and each vCPU hinting fault on
/// it is an EPT fault too, whose cost lengthens the run.
#[test]
fn kvm_pinned_is_not_scanned_with_the_skip() {
    let kvm = ["xeon-2n104", "kvm_pinned"];
    let on = autonuma(&kvm, &[]);
    assert_eq!(on.metrics.numa_pte_updates, 0);
    assert_eq!(on.metrics.numa_hint_faults, 0);
    let s = &on.numa_balancing.as_ref().expect("report").stats;
    assert!(s.cpuset_skips > 100);
    assert_eq!((s.kvm_mmu_invalidations, s.kvm_ept_faults), (0, 0));
    let off = autonuma(&kvm, &["policy.cpuset_skip=false"]);
    let s = &off.numa_balancing.as_ref().expect("report").stats;
    assert!(s.scans > 10);
    assert_eq!(s.kvm_mmu_invalidations, s.scans);
    assert!(s.kvm_vcpu_kicks > s.scans && s.kvm_vcpu_kicks <= 30 * s.scans);
    assert_eq!(s.kvm_ept_faults, off.metrics.numa_hint_faults);
    let dear = autonuma(
        &kvm,
        &[
            "policy.cpuset_skip=false",
            "machine.costs.kvm_ept_fault_ns=1e7",
        ],
    );
    assert!(
        dear.metrics.runtime_s > off.metrics.runtime_s + 1.0,
        "{} vs {}",
        dear.metrics.runtime_s,
        off.metrics.runtime_s
    );
}

/// An exec'd program's new mm has `numa_next_scan` 0: its first scan trigger only sets it
/// `scan_delay` ahead, so it scans a second later than a process forked without exec,
/// whose `init_numa_balancing` set it at the fork.
#[test]
fn an_execd_program_scans_a_scan_delay_after_a_forked_one() {
    let first_scan = |sets: &[&str]| {
        let mut all = vec!["sim.proc_every_s=0.05", "sim.max_time_s=4"];
        all.extend_from_slice(sets);
        let r = autonuma(&["autonuma-2n24", "numa02"], &all);
        r.proc_samples
            .iter()
            .find(|s| s.vmstat.numa_pte_updates > 0)
            .map(|s| s.t_s)
            .expect("a scan in 4 s")
    };
    let execd = first_scan(&[]);
    let forked = first_scan(&["workload.process.0.forked=\"all\""]);
    assert!(
        (execd - forked - 1.0).abs() < 0.1,
        "exec'd {execd} s, forked {forked} s"
    );
}
