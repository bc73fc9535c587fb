//! Memory tiering: a CPU-less slow node in its own tier, NUMA balancing's tiering mode
//! promoting a hot set started there, kswapd demoting a cold process to make room.

use crate::util::{Inline, run, scenario_with};

/// One socket with 2 CPUs and 1 GiB of DRAM, and a CPU-less CXL node of 2 GiB.
const MACHINE: &str = include_str!("../fixtures/tier-machine.toml");

/// A cold process fills most of the DRAM and sleeps; a hot one first-touches its 256 MiB on
/// the slow node (a phase bound there) and then reads it at random under the default
/// policy.
const WORKLOAD: &str = include_str!("../fixtures/tier-workload.toml");

/// The test machine and workload as inline presets `tier-m` and `tier-w`.
fn files() -> Inline {
    Inline(vec![
        ("tier-m", MACHINE.to_string()),
        ("tier-w", WORKLOAD.to_string()),
    ])
}

fn tiered(policy: &str, sets: &[&str]) -> numabal_sim::RunResult {
    let r = files();
    let mut all = vec!["sim.check_invariants=true"];
    all.extend_from_slice(sets);
    run(&scenario_with(&r, "tier-m", "tier-w", policy, 1, &all))
}

const MODE2: &[&str] = &["policy.numa_balancing=2", "sim.demotion_enabled=true"];

#[test]
fn mode_2_promotes_the_hot_set_and_kswapd_demotes_the_cold_one() {
    let r = tiered("autonuma", MODE2);
    let t = r.metrics.tiering.as_ref().expect("tiering on");
    let mb = |name: &str| {
        let p = r.processes.iter().find(|p| p.name == name).unwrap();
        p.node_mb.clone()
    };
    // Most of the hot set came up from the slow node; cold pages went down to make room.
    assert!(mb("hot")[0] > 128.0, "hot: {:?}", mb("hot"));
    assert!(mb("cold")[1] > 16.0, "cold: {:?}", mb("cold"));
    assert!(t.pgpromote_success >= (mb("hot")[0] * 256.0) as u64);
    assert!(t.pgdemote_kswapd > 0 && t.kswapd_wakeups > 0);
    // Every promotion was a hot candidate (latency under 1 s) or free-space one; the
    // DRAM was full, so each waited for room (some found none: kswapd was woken).
    assert!(t.pgpromote_candidate >= t.pgpromote_success);
    assert!(t.pgpromote_no_room > 0);
    // Mode 2 alone scans no top-tier page: every hinting fault was on the slow node.
    assert_eq!(t.numa_hint_faults_slow_tier, r.metrics.numa_hint_faults);
    assert_eq!(r.metrics.numa_hint_faults_local, 0);
    assert_eq!(t.tiers.len(), 2);
    assert_eq!((t.tiers[0].tier, t.tiers[0].nodes.as_str()), (4, "0"));
}

#[test]
fn mglru_demotes_the_cold_process_and_keeps_every_page_on_its_lists() {
    // sim.check_invariants: every node's generations hold exactly its pages, at each check.
    let r = tiered("autonuma", &[MODE2, &["sim.lru_gen=true"]].concat());
    let t = r.metrics.tiering.as_ref().expect("tiering on");
    let mb = |name: &str| {
        let p = r.processes.iter().find(|p| p.name == name).unwrap();
        p.node_mb.clone()
    };
    assert!(t.lru_gen_walks > 0, "no aging walk: {t:?}");
    assert!(mb("hot")[0] > 128.0, "hot: {:?}", mb("hot"));
    assert!(mb("cold")[1] > 16.0, "cold: {:?}", mb("cold"));
    assert!(t.pgdemote_kswapd > 0);
    // Without it, the CLOCK demotes and no walk is counted.
    let clock = tiered("autonuma", MODE2);
    assert_eq!(clock.metrics.tiering.unwrap().lru_gen_walks, 0);
    let again = tiered("autonuma", &[MODE2, &["sim.lru_gen=true"]].concat());
    assert_eq!(
        serde_json::to_string(&r).unwrap(),
        serde_json::to_string(&again).unwrap()
    );
}

#[test]
fn without_tiering_settings_nothing_demotes_and_no_tiering_counters_appear() {
    let r = tiered("autonuma", &[]);
    assert!(r.metrics.tiering.is_none());
    let cold = r.processes.iter().find(|p| p.name == "cold").unwrap();
    assert_eq!(cold.node_mb[1], 0.0, "nothing demoted: {:?}", cold.node_mb);
    // Normal balancing migrates slow-tier pages only after a CPU was recorded on them,
    // and only while the DRAM has room above its high watermark.
    assert!(r.metrics.numa_hint_faults > 0);
}

#[test]
fn demotion_alone_promotes_nothing() {
    let r = tiered("none", &["sim.demotion_enabled=true"]);
    let t = r.metrics.tiering.as_ref().expect("tiering on");
    assert_eq!(t.pgpromote_success, 0);
    assert_eq!(r.metrics.numa_hint_faults, 0);
    let hot = r.processes.iter().find(|p| p.name == "hot").unwrap();
    assert_eq!(hot.node_mb, vec![0.0, 256.0]);
}

#[test]
fn tiering_runs_are_deterministic() {
    let a = serde_json::to_string(&tiered("autonuma", MODE2)).unwrap();
    let b = serde_json::to_string(&tiered("autonuma", MODE2)).unwrap();
    assert_eq!(a, b);
}

#[test]
fn the_numa_balancing_mode_is_checked() {
    let r = files();
    let input = numabal_model::ScenarioInput {
        machine: Some("tier-m".into()),
        workload: Some("tier-w".into()),
        policy: Some("autonuma".into()),
        sets: vec!["policy.numa_balancing=4".into()],
        ..Default::default()
    };
    let sc = numabal_model::Scenario::build(&input, &r).unwrap();
    let e = numabal_sim::run(&sc).unwrap_err().to_string();
    assert!(
        e.contains("policy.numa_balancing") && e.contains("allowed: 1 normal balancing"),
        "{e}"
    );
}

#[test]
fn tpp_promotes_on_a_second_fault_and_keeps_headroom_on_the_fast_node() {
    let tpp = tiered("tpp", &[]);
    let t = tpp.metrics.tiering.as_ref().expect("tiering on");
    let hot = tpp.processes.iter().find(|p| p.name == "hot").unwrap();
    assert!(hot.node_mb[0] > 128.0, "hot: {:?}", hot.node_mb);
    assert!(t.pgpromote_success > 0 && t.pgdemote_kswapd > 0);
    // Only pages found accessed before count as candidates: fewer than the faults.
    assert!(t.pgpromote_candidate < t.numa_hint_faults_slow_tier);
    // kswapd keeps 2 % of the DRAM free (TPP's demote_scale_factor = 200): less DRAM in
    // use on average than upstream's tiering mode keeps.
    let up = tiered("autonuma-tiering", &[]);
    let mean = |r: &numabal_sim::RunResult| r.metrics.tiering.as_ref().unwrap().tiers[0].mean_mb;
    assert!(mean(&tpp) < mean(&up), "{} vs {}", mean(&tpp), mean(&up));
    assert_eq!(
        tpp.scenario.tunables["demote_scale_factor"],
        serde_json::json!(200),
        "the tunables as used"
    );
}

/// The tiered guest's workload (presets/workloads/tiering_guest.toml) on its machine under
/// Linux 7.2's NUMA balancing in tiering mode with demotion and THP, plus `sets`, as
/// scripts/vm/tiering-twin.sh runs it.
fn tiering_guest(sets: &[&str]) -> numabal_sim::RunResult {
    let r = Inline(vec![(
        "tiering-guest",
        include_str!("../../../../presets/workloads/tiering_guest.toml").to_string(),
    )]);
    let mut all = vec![
        "policy.numa_balancing=2",
        "sim.demotion_enabled=true",
        "policy.kernel=7.2",
        "sim.transparent_hugepage=always",
    ];
    all.extend_from_slice(sets);
    run(&scenario_with(
        &r,
        "qemu-guest-tiered",
        "tiering-guest",
        "autonuma",
        1,
        &all,
    ))
}

/// DAMON_STAT's kdamond (Debian's 7.2 runs it from boot) clears the accessed bits of the
/// pages it samples, which MGLRU's walks read: with it the same run ages and demotes
/// differently, every generation still holds exactly its node's pages, and the run is
/// deterministic.
#[test]
fn damon_stat_samples_beside_mglru_and_changes_what_its_walks_find() {
    // The filler starts at 31 s and node 0's reclaim follows within seconds.
    let sets = [
        "sim.lru_gen=true",
        "sim.check_invariants=true",
        "sim.max_time_s=40",
    ];
    let with = |damon_stat: bool| {
        let ds = format!("sim.damon_stat={damon_stat}");
        tiering_guest(&[&sets[..], &[ds.as_str()]].concat())
    };
    let r = with(true);
    let t = r.metrics.tiering.as_ref().expect("tiering on");
    assert!(
        t.damon_stat_checks > 1000,
        "DAMON_STAT checked {}",
        t.damon_stat_checks
    );
    let off = with(false);
    assert_eq!(off.metrics.tiering.as_ref().unwrap().damon_stat_checks, 0);
    let json = |r: &numabal_sim::RunResult| serde_json::to_string(&r.metrics).unwrap();
    assert_ne!(json(&r), json(&off), "DAMON_STAT changed nothing");
    assert_eq!(json(&r), json(&with(true)));
}

/// With MGLRU each `/proc` sample lists every node's generations as the kernel's
/// `/sys/kernel/debug/lru_gen` does: 2 to 4 of them, oldest first in sequence and in age,
/// holding the node's pages; the filler's reclaim makes new ones on node 0; and taking the
/// samples changes nothing of the run.
#[test]
fn proc_samples_show_each_nodes_mglru_generations_without_changing_the_run() {
    let sets = ["sim.lru_gen=true", "sim.max_time_s=40"];
    let sampled = tiering_guest(&[&sets[..], &["sim.proc_every_s=0.25"]].concat());
    let plain = tiering_guest(&sets);
    let json = |r: &numabal_sim::RunResult| serde_json::to_string(&r.metrics).unwrap();
    assert_eq!(json(&sampled), json(&plain), "sampling changed the run");
    let samples = &sampled.proc_samples;
    assert!(samples.len() > 100, "{} samples", samples.len());
    for s in samples {
        assert_eq!(s.lru_gen.len(), 3, "at {} s", s.t_s);
        for n in &s.lru_gen {
            assert!((2..=4).contains(&n.gens.len()), "{n:?}");
            for w in n.gens.windows(2) {
                assert_eq!(w[1].seq, w[0].seq + 1, "{n:?}");
                assert!(w[0].age_ms >= w[1].age_ms, "{n:?}");
            }
        }
        // Node 0's generations hold what the programs have there (MiB, from numastat).
        let lru_mib = s.lru_gen[0].gens.iter().map(|g| g.pages).sum::<u64>() as f64 / 256.0;
        let mapped: f64 = s.processes.iter().map(|p| p.node_mb[0]).sum();
        assert!(
            (lru_mib - mapped).abs() <= 1.0 + 0.01 * mapped,
            "at {} s: {lru_mib} MiB on the lists, {mapped} mapped",
            s.t_s
        );
    }
    let max_seq = |i: usize| samples[i].lru_gen[0].gens.last().unwrap().seq;
    assert!(
        max_seq(samples.len() - 1) > max_seq(0) + 1,
        "node 0 never aged"
    );
}

/// The tiered guest's twin (scripts/vm/tiering-twin.sh): Linux 7.2's cache-aware
/// balancing pulls the hot program's second writer to the node where the program ran
/// (its first touch, on node 0), so the whole hot set is promoted there and the filler
/// finds that much less room on node 0; without it each node gets a writer and a part of
/// the set, as on 6.12 (175 MiB on node 0 and 83 on node 1 in its guest run; in the model, the writer
/// that promotes onto frames node 1 never used pays their first use and falls behind).
#[test]
fn cache_aware_balancing_promotes_the_hot_set_to_one_node() {
    let sim = |llc: &str| tiering_guest(&[llc]);
    let hot_and_demoted = |r: &numabal_sim::RunResult| {
        let t = r.metrics.tiering.as_ref().expect("tiering on");
        let hot = r
            .processes
            .iter()
            .find(|p| p.name == "numa01-like")
            .unwrap();
        (hot.node_mb.clone(), t.pgdemote_kswapd + t.pgdemote_direct)
    };
    let (gathered, demoted_gathered) = hot_and_demoted(&sim("sim.llc_balancing=true"));
    let (split, demoted_split) = hot_and_demoted(&sim("sim.llc_balancing=false"));
    assert!(gathered[0] > 250.0 && gathered[1] < 1.0, "{gathered:?}");
    assert!(split[0] > 25.0 && split[1] > 25.0, "{split:?}");
    // Node 0 had node 1's part of the hot set to give up as well.
    let node1_pages = (split[1] * 256.0) as u64;
    assert!(
        demoted_gathered > demoted_split + node1_pages * 8 / 10,
        "{demoted_gathered} vs {demoted_split}"
    );
}

/// A guest run of 2026-11-30 (run 5 in docs/vm-tests.md, "MGLRU in the guest"): the
/// filler asks for 860 MiB of node 0 at 32.6 s. Every page on node 0 was in use when its
/// direct reclaim came, so the CLOCK's first pass found all of them referenced and demoted
/// nothing, and the allocation failed as out of memory; the second pass its second chance
/// allows now demotes. MGLRU reclaims the same node without that.
///
/// With the guest's own watermarks (khugepaged's floor under min_free_kbytes: 7 MiB
/// between node 0's low and min marks) the model's kswapd keeps ahead of the filler and
/// no direct reclaim comes, where the kernel's did (docs/vm-tests.md, "The guest's
/// watermarks"). So this test sets `vm.min_free_kbytes` to the kernel's square-root rule
/// for the guest's memory without that floor, 6,985 KiB, whose 1 MiB steps the filler
/// crosses before kswapd has made room.
#[test]
fn direct_reclaim_demotes_when_the_clock_finds_every_page_referenced_once() {
    for lru_gen in ["sim.lru_gen=false", "sim.lru_gen=true"] {
        let res = tiering_guest(&[
            "sim.min_free_kbytes=6985",
            "sim.llc_balancing=true",
            "machine.topology.memory_per_node=[\"964MiB\",\"1007MiB\",\"1007MiB\"]",
            "machine.memory.reserved_per_node=[\"36MiB\",\"75MiB\",\"15MiB\"]",
            "workload.process.1.start_s=32.6",
            "workload.process.1.region.5.size=\"860MiB\"",
            lru_gen,
        ]);
        let t = res.metrics.tiering.as_ref().expect("tiering on");
        let filler = res
            .processes
            .iter()
            .find(|p| p.name == "numa02-like")
            .unwrap();
        assert!(
            filler.node_mb[2] > 100.0,
            "{lru_gen}: filler {:?}",
            filler.node_mb
        );
        assert!(t.pgdemote_direct > 0, "{lru_gen}: {t:?}");
    }
}

/// A tmpfs on node 0 (`[[tmpfs]]`: the guest's root file system, which the kernel unpacks
/// at boot): shmem on node 0's LRU that nothing reads, so eviction never finds it young
/// and demotes all of it under the filler's pressure; every generation still holds
/// exactly its node's pages, the tmpfs's among them.
#[test]
fn mglru_demotes_a_tmpfs_that_nothing_reads() {
    let with = |mb: u32| {
        let size = format!("workload.tmpfs.0.size=\"{mb}MiB\"");
        tiering_guest(&[
            "sim.lru_gen=true",
            "sim.check_invariants=true",
            "sim.max_time_s=40",
            size.as_str(),
        ])
    };
    // What is on the slow node 2 beside the programs' pages: the demoted tmpfs.
    let beside_programs = |r: &numabal_sim::RunResult| {
        let programs: f64 = r.processes.iter().map(|p| p.node_mb[2]).sum();
        r.node_used_mb[2] - programs
    };
    let (r, none) = (with(48), with(0));
    let tmpfs_demoted = beside_programs(&r) - beside_programs(&none);
    assert!(
        (tmpfs_demoted - 48.0).abs() < 0.01,
        "demoted {tmpfs_demoted} MiB of the tmpfs's 48"
    );
}

/// A reclaim check that finds a THP young flushes its TLB entries (x86's
/// `pmdp_clear_flush_young`) and, on a shared host, waits `core.host_shootdown_ns` of work
/// for each CPU running the hot program's writers: kswapd takes that much more CPU time,
/// on MGLRU's path and the CLOCK's alike.
#[test]
fn a_young_thp_check_waits_for_the_cpus_running_its_process_on_a_shared_host() {
    for lru_gen in [true, false] {
        let lg = format!("sim.lru_gen={lru_gen}");
        let with = |wait: u32| {
            let w = format!("machine.core.host_shootdown_ns={wait}");
            let sets = [
                lg.as_str(),
                "sim.max_time_s=40",
                "machine.core.host_cpus=2",
                &w,
            ];
            tiering_guest(&sets)
        };
        let (r, none) = (with(637_601), with(0));
        let (t, t0) = (r.metrics.tiering.unwrap(), none.metrics.tiering.unwrap());
        assert!(
            t.young_thp_flushes > 0 && t0.young_thp_flushes > 0,
            "lru_gen {lru_gen}: flushes {} and {}",
            t.young_thp_flushes,
            t0.young_thp_flushes
        );
        let per_flush = (t.kswapd_cpu_s - t0.kswapd_cpu_s) / t.young_thp_flushes as f64;
        assert!(
            per_flush > 0.3e-3,
            "lru_gen {lru_gen}: kswapd {:.4} s against {:.4} s without the wait, over {} flushes",
            t.kswapd_cpu_s,
            t0.kswapd_cpu_s,
            t.young_thp_flushes
        );
    }
}

/// MGLRU's aging walks only the mms that ran since their last walk (`should_skip_mm`:
/// `lru_gen_use_mm` at a context switch sets the bit). The cold process sleeps once it has
/// filled the DRAM, and the hot one's thread runs alone on its CPU (kswapd takes the idle
/// one), so after the first walk that finds them, the agings walk neither: fewer mms are
/// walked than there are walks, where walking both every time would make twice as many.
#[test]
fn an_aging_walks_only_the_mms_switched_in_since_their_last_walk() {
    let r = tiered("autonuma", &[MODE2, &["sim.lru_gen=true"]].concat());
    let t = r.metrics.tiering.as_ref().expect("tiering on");
    assert!(t.lru_gen_walks >= 3, "{t:?}");
    assert!(
        t.lru_gen_mm_walks < t.lru_gen_walks,
        "{} mms walked in {} walks",
        t.lru_gen_mm_walks,
        t.lru_gen_walks
    );
}

/// kswapd and a direct reclaimer age one node together (`iterate_mm_list`), on the inputs
/// of the tiered guest's run 83 (the tmpfs on node 1). At the walk's measured cost
/// kswapd walks the hot program's mm and the filler's before the filler reclaims, so the
/// hot set goes to the generation eviction reaches next, where the buffer's first partial
/// chunk is found old, demoted and promoted again. With the walk slowed to 0.3 ms a young
/// entry, kswapd is still inside the hot mm when the filler's direct reclaim joins the
/// aging, walks the filler's mm and makes the new generation; kswapd goes on with the hot
/// mm, its moves into that generation, out of eviction's reach: fewer hinting faults, as
/// in the kernel (docs/vm-tests.md, run 83).
#[test]
fn a_direct_reclaimer_joins_kswapds_aging_and_ends_it() {
    let run = |more: &[&str]| {
        let mut sets = vec![
            "sim.lru_gen=true",
            "sim.max_time_s=45",
            "sim.llc_balancing=true",
            "sim.damon_stat=true",
            "machine.core.host_cpus=2",
            "machine.topology.memory_per_node=[\"964MiB\",\"1007MiB\",\"1007MiB\"]",
            "machine.memory.reserved_per_node=[\"34MiB\",\"32MiB\",\"9MiB\"]",
            "workload.process.1.start_s=32.9",
            "workload.process.1.region.5.size=\"849MiB\"",
            "workload.tmpfs.0.size=\"0MiB\"",
            "workload.tmpfs.1.size=\"49MiB\"",
        ];
        sets.extend_from_slice(more);
        tiering_guest(&sets).metrics.tiering.expect("tiering on")
    };
    let measured = run(&[]);
    let slow = run(&["machine.costs.lru_walk_young_ns=300000"]);
    assert_eq!(measured.lru_gen_mm_walks_overtaken, 0, "{measured:?}");
    assert!(slow.lru_gen_mm_walks_overtaken >= 1, "{slow:?}");
    assert!(
        slow.numa_hint_faults_slow_tier + 150 < measured.numa_hint_faults_slow_tier,
        "hinting faults {} with kswapd overtaken, {} without",
        slow.numa_hint_faults_slow_tier,
        measured.numa_hint_faults_slow_tier
    );
}

/// kswapd is a task of nice 0 on its node's CPUs: while node 0's two CPUs run the hot
/// program's two writers and the filler, it gets half a CPU. With the copy slowed so that
/// demotion is bound by kswapd's CPU (a THP about 49 ms), its CPU time is about half the
/// seconds in which node 0 demoted, not all of them.
#[test]
fn kswapd_gets_its_fair_share_of_a_busy_nodes_cpus() {
    let r = tiering_guest(&[
        "sim.lru_gen=true",
        "sim.max_time_s=45",
        "machine.costs.migrate_copy_gib_s=0.04",
    ]);
    let t = r.metrics.tiering.as_ref().expect("tiering on");
    let demoted = &r.series.nodes[0].pgdemote;
    let demoting = demoted.windows(2).filter(|w| w[1] > w[0]).count() as f64
        + f64::from(u8::from(demoted[0] > 0));
    assert!(demoting >= 3.0, "{demoted:?}");
    assert!(
        t.kswapd_cpu_s <= 0.5 * demoting + 0.1 && t.kswapd_cpu_s >= 0.3 * demoting,
        "kswapd {:.3} s of CPU over {demoting} s of demotion",
        t.kswapd_cpu_s
    );
}

/// MGLRU's aging walk costs `lru_walk_line_ns` a line of entries and `lru_walk_young_ns`
/// more for each young one: a walk finds the hot program's 128 THPs young (its writers
/// pass them every 49 ms), so a millisecond more per young entry adds at least 128 ms of
/// CPU, kswapd's or the kernel time of the thread reclaiming directly.
#[test]
fn the_aging_walk_charges_each_young_entry_it_finds() {
    let reclaim_cpu = |young: &str| {
        let r = tiering_guest(&["sim.lru_gen=true", "sim.max_time_s=40", young]);
        let t = r.metrics.tiering.expect("tiering on");
        assert!(t.lru_gen_walks > 0, "{young}: no walk");
        t.kswapd_cpu_s + r.metrics.sys_cpu_s
    };
    let (cheap, dear) = (
        reclaim_cpu("machine.costs.lru_walk_young_ns=0"),
        reclaim_cpu("machine.costs.lru_walk_young_ns=1000000"),
    );
    assert!(
        dear - cheap >= 0.128,
        "kswapd and kernel time {cheap:.3} s, with 1 ms a young entry {dear:.3} s"
    );
}

/// A THP fault's allocation neither wakes kswapd nor reclaims; it goes down to the min
/// mark (`gfp_to_alloc_flags`). So the filler, bound to node 0, takes THPs until node 0 is
/// at its min mark, and its first base-page fault after that finds node 0 below it and
/// reclaims directly, as the guest's filler did before kswapd ran (run 75's trace).
#[test]
fn thp_faults_take_a_node_to_its_min_mark_and_the_next_fault_reclaims_directly() {
    let r = tiering_guest(&["sim.lru_gen=true", "sim.max_time_s=40"]);
    let t = r.metrics.tiering.as_ref().expect("tiering on");
    assert!(t.pgdemote_direct > 0, "{t:?}");
}
