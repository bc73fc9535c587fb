//! Property tests: random small workloads, policies and settings on tiny-2n4 with every
//! invariant checked at every tick (each page on exactly one node, no node over its
//! capacity, threads only on CPUs their affinity and cpuset allow, runqueues consistent).

use crate::util::{Inline, scenario_with};
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct GenPhase {
    kind: u8,
    pattern: u8,
    slice_thread: bool,
    amount: u8,
    mempolicy: u8,
}

#[derive(Debug, Clone)]
struct GenProc {
    instances: u32,
    mib: u32,
    thp: bool,
    threads: u32,
    main_spawns: bool,
    phases: Vec<GenPhase>,
    cpuset_mems: u8,
    cpuset_cpus: u8,
    mempolicy: u8,
    iterations: u8,
}

fn phase() -> impl Strategy<Value = GenPhase> {
    (0u8..6, 0u8..4, any::<bool>(), 0u8..4, 0u8..5).prop_map(
        |(kind, pattern, slice_thread, amount, mempolicy)| GenPhase {
            kind,
            pattern,
            slice_thread,
            amount,
            mempolicy,
        },
    )
}

fn process() -> impl Strategy<Value = GenProc> {
    (
        1u32..3,
        1u32..48,
        any::<bool>(),
        1u32..6,
        any::<bool>(),
        proptest::collection::vec(phase(), 1..4),
        0u8..4,
        0u8..4,
        0u8..5,
        1u8..3,
    )
        .prop_map(
            |(
                instances,
                mib,
                thp,
                threads,
                main_spawns,
                phases,
                cpuset_mems,
                cpuset_cpus,
                mempolicy,
                iterations,
            )| GenProc {
                instances,
                mib,
                thp,
                threads,
                main_spawns,
                phases,
                cpuset_mems,
                cpuset_cpus,
                mempolicy,
                iterations,
            },
        )
}

fn mempolicy(k: u8) -> Option<&'static str> {
    match k {
        0 => None,
        1 => Some("bind:1"),
        2 => Some("interleave:all"),
        3 => Some("preferred:0"),
        _ => Some("bind:random"),
    }
}

fn workload_toml(procs: &[GenProc]) -> String {
    let mut s = String::from("name = \"prop\"\n\n[[shared]]\nname = \"shm\"\nsize = \"8MiB\"\n");
    for (i, p) in procs.iter().enumerate() {
        s += &format!(
            "\n[[process]]\nname = \"p{i}\"\ninstances = {}\n",
            p.instances
        );
        match p.cpuset_mems {
            1 => s += "cpuset_mems = \"0\"\n",
            2 => s += "cpuset_mems = \"1\"\n",
            _ => {}
        }
        match p.cpuset_cpus {
            1 => s += "cpuset_cpus = \"0-1\"\n",
            2 => s += "cpuset_cpus = \"1-3\"\n",
            _ => {}
        }
        if let Some(m) = mempolicy(p.mempolicy) {
            s += &format!("mempolicy = \"{m}\"\n");
        }
        s += &format!(
            "\n[[process.region]]\nname = \"buf\"\nsize = \"{}MiB\"\nthp = {}\n",
            p.mib, p.thp
        );
        s += "\n[[process.region]]\nname = \"shm\"\nshared = \"shm\"\n";
        if p.main_spawns {
            s += "\n[[process.group]]\nname = \"main\"\nthreads = 1\n";
            s += "[[process.group.phase]]\nkind = \"access\"\nregion = \"buf\"\npasses = 1\n";
            s += "[[process.group.phase]]\nkind = \"spawn\"\ngroup = \"worker\"\n";
            s += "[[process.group.phase]]\nkind = \"join\"\ngroup = \"worker\"\n";
        }
        s += &format!(
            "\n[[process.group]]\nname = \"worker\"\nthreads = {}\niterations = {}\nplacement = \"{}\"\n",
            p.threads,
            p.iterations,
            if p.threads % 2 == 0 {
                "spread"
            } else {
                "together"
            }
        );
        for ph in &p.phases {
            s += "[[process.group.phase]]\n";
            match ph.kind {
                0..=2 => {
                    let region = if ph.kind == 2 { "shm" } else { "buf" };
                    let pattern = ["sweep", "uniform", "hot", "zipf"][ph.pattern as usize];
                    s += &format!(
                        "kind = \"access\"\nregion = \"{region}\"\npattern = \"{pattern}\"\n"
                    );
                    if ph.slice_thread {
                        s += "slice = \"thread\"\n";
                    }
                    s += match ph.amount {
                        0 => "passes = 0.5\n",
                        1 => "passes = 2\n",
                        2 => "bytes = \"20MiB\"\n",
                        _ => "seconds = 0.05\n",
                    };
                    if let Some(m) = mempolicy(ph.mempolicy) {
                        s += &format!("mempolicy = \"{m}\"\n");
                    }
                }
                3 => s += "kind = \"compute\"\nseconds = 0.02\n",
                4 => s += "kind = \"sleep\"\nseconds = 0.01\n",
                _ => s += "kind = \"barrier\"\n",
            }
        }
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, .. ProptestConfig::default() })]

    #[test]
    fn invariants_hold(
        procs in proptest::collection::vec(process(), 1..3),
        policy in 0usize..8,
        seed in 0u64..1000,
        tick in 0usize..3,
        thp in 0usize..3,
    ) {
        let text = workload_toml(&procs);
        let r = Inline(vec![("prop", text.clone())]);
        // 5 and 6: autonuma with the asynchronous scan worker, without and with backcharge;
        // 7: the original AutoNUMA.
        let variant = policy;
        let policy = ["none", "bind", "reverse-bind", "interleave", "autonuma", "autonuma", "autonuma", "autonuma-2012"][policy];
        let tick = ["sim.tick_ms=1", "sim.tick_ms=4", "sim.tick_ms=10"][tick];
        let thp = ["sim.transparent_hugepage=\"never\"", "sim.transparent_hugepage=\"madvise\"", "sim.transparent_hugepage=\"always\""][thp];
        let mut sets = vec!["sim.check_invariants=true", tick, thp, "sim.max_time_s=600"];
        if policy == "autonuma" {
            // Scan early and in small windows so short runs exercise scanning and faults.
            sets.extend(["policy.scan_delay_ms=20", "policy.scan_size_mb=8", "policy.scan_period_min_ms=40"]);
        }
        if policy == "autonuma-2012" {
            // knuma_scand passes every 0.2 s in 8 MB steps, knuma_migrated 4 MB per 10 ms.
            sets.extend([
                "policy.scan_sleep_pass_millisecs=200",
                "policy.scan_sleep_millisecs=10",
                "policy.pages_to_scan_mb=8",
                "policy.pages_to_migrate_mb=4",
                "policy.migrate_sleep_millisecs=10",
            ]);
        }
        if variant == 5 || variant == 6 {
            sets.push("policy.scan_async=true");
        }
        if variant == 6 {
            sets.push("policy.scan_async_backcharge=true");
        }
        let sc = scenario_with(&r, "tiny-2n4", "prop", policy, seed, &sets);
        let res = numabal_sim::run(&sc);
        let res = match res {
            Ok(res) => res,
            Err(e) => { prop_assert!(false, "{e}\n{text}"); unreachable!() }
        };
        prop_assert!(res.finished, "did not finish:\n{text}");
        // Everything exited, so every page was given back: conservation of pages.
        prop_assert!(res.node_used_mb.iter().all(|&mb| mb == 0.0), "{:?}", res.node_used_mb);
        for p in &res.processes {
            // Processes start in seeded order: find each one's spec by name.
            let spec = sc.workload.spec.processes.iter().find(|s| s.name == p.name).expect("spec");
            let total: f64 = p.node_mb.iter().sum();
            // Never more resident than mapped (private region + the shared one).
            let mapped = spec.regions.iter().map(|r| r.size.map(|s| s.mib()).unwrap_or(8.0)).sum::<f64>();
            prop_assert!(total <= mapped + 1e-9, "{} MiB resident of {} mapped", total, mapped);
            // cpuset mems confine where a process's private memory goes.
            if let Some(m) = &spec.cpuset_mems {
                let allowed = numabal_model::Mask::parse_list(m, None).unwrap();
                let outside: f64 = (0..2).filter(|n| !allowed.contains(*n)).map(|n| p.node_mb[n]).sum();
                // Only the shared 8 MiB may be elsewhere: another process may have touched it first.
                prop_assert!(outside <= 8.0 + 1e-9, "{} MiB outside cpuset mems {m}", outside);
            }
        }
        prop_assert!(res.metrics.local_access_ratio >= 0.0 && res.metrics.local_access_ratio <= 1.0);
        // Every inter-node migration has one cause and one class.
        let m = &res.metrics;
        prop_assert_eq!(res.thread_migrations_by_cause.values().sum::<u64>(), m.thread_migrations_internode);
        prop_assert_eq!(res.thread_migrations_by_class.values().sum::<u64>(), m.thread_migrations_internode);
        // A round trip is closed by a migration back to a node the thread left, so a
        // thread's first migration never closes one; each is in one interval bucket.
        prop_assert!(m.thread_ping_pong_round_trips == 0 || m.thread_ping_pong_round_trips < m.thread_migrations_internode);
        prop_assert_eq!(res.ping_pong.count.iter().sum::<u64>(), m.thread_ping_pong_round_trips);
        // One TLB shootdown per migrated folio, at most one per migrated base page.
        prop_assert!(m.migrate_tlb_shootdowns <= m.pgmigrate_success);
        prop_assert!(m.pgmigrate_success == 0 || m.migrate_tlb_shootdowns > 0);
    }
}
