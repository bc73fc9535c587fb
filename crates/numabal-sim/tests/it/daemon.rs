//! numabal's placement daemon on the simulated host (issue 16): the policy object the live
//! daemon runs, built by the same registry call, fed by simulated sensors and obeyed the
//! way the live daemon obeys it; the live scenarios' twins on the guest preset.

use crate::util::{Inline, run, scenario_with};
use numabal_model::scenario::PolicySpec;
use numabal_sim::RunResult;
use numabal_sim::result::NumastatSample;
use serde_json::Value;

fn guest(workload: &str, policy: &str, sets: &[&str]) -> RunResult {
    run(&scenario_with(
        &Inline(Vec::new()),
        "qemu-guest-4n8",
        workload,
        policy,
        1,
        sets,
    ))
}

/// The live scenario's check (`scripts/vm/scenarios/lib.sh`, `placed` and
/// `watch_placement`) on one `numastat` sample: every process has its workers on one node
/// holding at least 90 % of its memory, and the processes are on different nodes. Returns
/// each process's node.
fn placed(s: &NumastatSample) -> Option<Vec<usize>> {
    let mut homes = Vec::new();
    for p in &s.processes {
        let total: f64 = p.node_mb.iter().sum();
        let (home, mb) = p
            .node_mb
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))?;
        let on_home = !p.worker_nodes.is_empty() && p.worker_nodes.iter().all(|&n| n == home);
        if !(on_home && total > 0.0 && mb / total >= 0.9) {
            return None;
        }
        homes.push(home);
    }
    let mut distinct = homes.clone();
    distinct.sort_unstable();
    distinct.dedup();
    (distinct.len() == homes.len() && homes.len() >= 2).then_some(homes)
}

/// The first sample at which the run is placed, and where.
fn placed_at(r: &RunResult) -> Option<(f64, Vec<usize>)> {
    r.numastat
        .iter()
        .find_map(|s| placed(s).map(|h| (s.t_s, h)))
}

fn daemon_log(r: &RunResult) -> &[Value] {
    &r.daemon.as_ref().expect("a daemon run").log
}

/// When the daemon first managed every process it placed (its `managed` lines).
fn managed_at(r: &RunResult) -> f64 {
    daemon_log(r)
        .iter()
        .filter(|l| l["managed"] == true)
        .filter_map(|l| l["t_s"].as_f64())
        .fold(0.0, f64::max)
}

fn stop(r: &RunResult) -> &Value {
    r.daemon
        .as_ref()
        .and_then(|d| d.stop())
        .expect("a stop line")
}

/// The guest's twin: numastat every second, THP `always` as the guest's Debian kernel.
const TWIN: [&str; 2] = ["sim.numastat_every_s=1", "sim.transparent_hugepage=always"];

/// docs/live-evaluation.md: numa01-like under the daemon (`stable-daemon`, `softdirty`,
/// `numa_balancing=0`) is placed within 60 s, the kernel's NUMA counters stay 0, and
/// every changed affinity is given back at the stop.
#[test]
fn softdirty_places_numa01_like_as_on_the_guest() {
    let r = guest(
        "numa01-like",
        "stable-daemon",
        &[TWIN[0], TWIN[1], "daemon.sensor=softdirty"],
    );
    let (t, homes) = placed_at(&r).expect("placed");
    let after = t - managed_at(&r);
    assert!(
        after <= 60.0,
        "placed {after} s after the daemon managed both"
    );
    let end = r.numastat.last().unwrap();
    assert_eq!(placed(end), Some(homes.clone()), "still placed at the end");
    assert_eq!(r.metrics.numa_hint_faults, 0);
    assert_eq!(r.metrics.numa_pages_migrated, 0);
    assert!(
        r.metrics.pgmigrate_success > 0,
        "the daemon moved the pages"
    );
    let d = r.daemon.as_ref().unwrap();
    assert!(d.soft_dirty_faults > 0);
    let log = daemon_log(&r);
    assert_eq!(log[0]["sensor"], "softdirty");
    assert_eq!(
        log[0]["policy_type"],
        "numabal_policy::stable::sampled::StableSampled"
    );
    let s = stop(&r);
    assert!(s["pages_moved"].as_u64().unwrap() > 0);
    assert!(s["cpu_s"].as_f64().unwrap() > 0.0);
    let placement: Vec<u64> = s["placement"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(
        placement,
        homes.iter().map(|&h| h as u64).collect::<Vec<_>>(),
        "the daemon's placement is where the memory is"
    );
    let restored = log.iter().filter(|l| l["restore"] == "0-7").count();
    assert_eq!(
        restored as u64,
        s["affinity_changes"].as_u64().unwrap().min(4),
        "each changed thread"
    );
}

/// home-node with softdirty on numa01-like (docs/home-node.md): soft-dirty sampling sees
/// each page's first writer after a clear only, so the two threads streaming through
/// their shared buffer meet in a third of its chunks. At `shared_pct` 20 both processes
/// are placed whole at once. At 50 one is classified private and split; the chunks that
/// followed each thread are then sampled from the other node, and the strays rule places
/// it again whole (without the rule, `revise_split=0`, it stays split). Each way both end
/// whole on nodes of their own, having moved less than their resident memory.
#[test]
fn home_node_places_numa01_like_whose_sharing_softdirty_hides() {
    let run = |sets: &[&str]| {
        let mut all = vec![TWIN[0], TWIN[1], "daemon.sensor=softdirty"];
        all.extend_from_slice(sets);
        guest("numa01-like", "home-node", &all)
    };
    let decisions = |r: &RunResult| -> Vec<String> {
        (daemon_log(r).iter())
            .filter_map(|l| Some(l["decision"].as_str()?.to_string()))
            .collect()
    };
    let resident = 2 * 128 * 256;
    let placed_whole = |r: &RunResult| {
        let (t, homes) = placed_at(r).expect("placed");
        assert!(t - managed_at(r) <= 60.0, "placed at {t} s");
        assert_eq!(placed(r.numastat.last().unwrap()), Some(homes));
        assert!(stop(r)["pages_moved"].as_u64().unwrap() < resident);
    };
    let r = run(&[]);
    let d = decisions(&r);
    assert!(d.iter().all(|d| d.contains(": whole (")), "{d:?}");
    placed_whole(&r);
    let r = run(&["policy.shared_pct=50"]);
    let d = decisions(&r);
    assert!(d.iter().any(|d| d.starts_with("split over nodes")), "{d:?}");
    assert!(
        d.iter()
            .any(|d| d.contains("followed a thread sampled from another node")),
        "{d:?}"
    );
    placed_whole(&r);
    let kept_split = run(&["policy.shared_pct=50", "policy.revise_split=0"]);
    assert_eq!(placed_at(&kept_split), None);
}

/// docs/live-evaluation.md: with `numa_balancing=1` and the `hint` sensor the daemon
/// places the threads and the kernel's NUMA balancing migrates pages on its hinting faults
/// (the model of Linux 6.1, the kernel the guest scenario runs by default).
#[test]
fn hint_places_numa01_like_with_the_kernels_balancing() {
    let r = guest(
        "numa01-like",
        "stable-daemon",
        &[TWIN[0], TWIN[1], "daemon.sensor=hint", "daemon.kernel=6.1"],
    );
    let (t, _) = placed_at(&r).expect("placed");
    assert!(t - managed_at(&r) <= 60.0, "placed at {t} s");
    assert!(r.metrics.numa_hint_faults > 0);
    assert!(r.metrics.numa_pages_migrated > 0, "the kernel migrated");
    let d = r.daemon.as_ref().unwrap();
    assert_eq!(d.soft_dirty_faults, 0);
    assert_eq!(d.settings.numa_balancing, Some(1));
    assert_eq!(r.scenario.policy, "stable-daemon");
    let samples = stop(&r)["samples"].as_u64().unwrap();
    assert!(
        samples >= r.metrics.numa_hint_faults / 2,
        "hinting faults are the samples: {samples} of {}",
        r.metrics.numa_hint_faults
    );
}

/// The same object in both backends: the registry's live build and a simulated run give
/// the same type with the same tunables; no other Stable-NUMA-on-samples object runs.
#[test]
fn the_simulated_daemon_runs_the_object_the_live_daemon_runs() {
    let spec = PolicySpec {
        kind: "stable-daemon".into(),
        tunables: toml::Table::new(),
        label: "--policy".into(),
    };
    let live = numabal_sim::registry::standard()
        .build_live(&spec)
        .expect("live");
    let r = guest(
        "numa01-like",
        "stable-daemon",
        &["sim.max_time_s=3", "daemon.sensor=maps"],
    );
    let start = &daemon_log(&r)[0];
    assert_eq!(start["policy_type"], live.policy.type_name());
    assert_eq!(start["tunables"], live.tunables);
    assert_eq!(r.scenario.tunables, live.tunables);
    assert_eq!(
        r.daemon.as_ref().unwrap().policy_type,
        live.policy.type_name()
    );
}

/// `migrate_mb_s` bounds the daemon's page moves: what the bucket does not allow is
/// deferred, and over the run no more moves than the rate plus one second banked.
#[test]
fn the_migration_budget_bounds_the_daemons_moves() {
    let r = guest(
        "numa01-like",
        "stable-daemon",
        &[
            "daemon.sensor=softdirty",
            "daemon.migrate_mb_s=1",
            "sim.max_time_s=40",
        ],
    );
    let s = stop(&r);
    assert!(s["pages_deferred"].as_u64().unwrap() > 0, "{s}");
    // 1 MiB/s is 256 pages/s: 40 s and a second banked.
    let moved = s["pages_moved"].as_u64().unwrap();
    assert!(moved <= 256 * 41, "{moved} pages in 40 s at 1 MiB/s");
    let unbounded = guest(
        "numa01-like",
        "stable-daemon",
        &["daemon.sensor=softdirty", "sim.max_time_s=40"],
    );
    assert!(stop(&unbounded)["pages_moved"].as_u64().unwrap() > moved);
}

/// A whole-process move is copied by as many threads as CPUs were idle over the last pass, as live
/// (`numabal_daemon::pacing::movers`): perf bench's four workers leave four of the
/// guest's eight CPUs idle, so each of its two moves has four movers at least, and five
/// when the idle time and the daemon's own CPU time over the gap, both of which `movers`
/// counts, round to five (decided at 2 s since `first_sight`: five; at 3 s before: four). At 100 µs a page
/// (`migrate_page_ns`), a mover alone would take 4.1 s for a process's 40,960 pages; the
/// pages arrive in about a quarter of that, and the daemon's CPU time is still every page's
/// cost (the movers' time summed).
#[test]
fn movers_share_a_whole_process_move() {
    let r = guest(
        "perf-bench-numa-mem",
        "home-node",
        &[
            // Base pages only (a THP would be one migration of 512).
            TWIN[0],
            "daemon.sensor=softdirty",
            "machine.costs.migrate_page_ns=1e5",
            "sim.max_time_s=20",
        ],
    );
    let (moves, decided, at) = whole_moves(&r);
    // As many as CPUs were idle over the last pass, shared out over the two processes
    // moved: at least the four no worker runs on, at most the six the fill left idle (the
    // pass may come as the workers start).
    let movers: u64 = moves
        .iter()
        .map(|l| l["movers"].as_u64().unwrap_or(1))
        .sum();
    assert!((4..=6).contains(&movers), "{moves:?}");
    let alone = 2.0 * 40_960.0 * 1e-4;
    assert!(
        at - decided < 0.4 * alone,
        "placed {at} s, decided {decided} s"
    );
    let cpu = stop(&r)["cpu_s"].as_f64().unwrap();
    assert!(
        cpu > alone,
        "the movers' CPU {cpu} s, the pages' cost {alone} s"
    );
}

/// The pass's whole moves of perf bench's two processes are made at once, as the live
/// actuator makes them: the CPUs idle over the last pass are shared out over the two
/// (`pacing::movers_shares`), and both processes are at home in about the time one of
/// their moves takes, not the two one after the other.
#[test]
fn the_moves_of_two_processes_are_made_at_once() {
    let r = guest(
        "perf-bench-numa-mem",
        "home-node",
        &[
            "sim.numastat_every_s=0.1",
            "daemon.sensor=softdirty",
            "machine.costs.migrate_page_ns=1e5",
            "sim.max_time_s=20",
        ],
    );
    let (moves, decided, at) = whole_moves(&r);
    assert_eq!(moves[0]["t_s"], moves[1]["t_s"], "one pass: {moves:?}");
    let movers: Vec<f64> = (moves.iter())
        .map(|l| l["movers"].as_f64().unwrap_or(1.0))
        .collect();
    let total: f64 = movers.iter().sum();
    assert!((4.0..=6.0).contains(&total), "{moves:?}");
    assert!(movers.iter().all(|&m| m < 4.0), "shared out: {moves:?}");
    let one_after_the_other: f64 = movers.iter().map(|m| 40_960.0 * 1e-4 / m).sum();
    assert!(
        at - decided < 0.7 * one_after_the_other,
        "placed {at} s, decided {decided} s; the two moves one after the other \
         {one_after_the_other} s"
    );
}

/// A policy's addresses stand for the pages `move_pages` moves for them, as live: in perf
/// bench's twin with huge pages, `stable-daemon` names about one address per huge page, and
/// each counts its 512 pages, so a process's 160 MiB is a move of 40,960 pages, made by as
/// many movers as CPUs were idle (four, shared out over the processes the pass moves),
/// not by one as 80 pages would be.
#[test]
fn an_address_in_a_huge_page_moves_and_counts_its_pages() {
    let r = guest(
        "perf-bench-numa-mem",
        "stable-daemon",
        &[
            TWIN[0],
            TWIN[1],
            "daemon.sensor=softdirty",
            "sim.max_time_s=20",
        ],
    );
    let moves: Vec<&Value> = (daemon_log(&r).iter())
        .filter(|l| l.get("move_pages").is_some() && l["moved"].as_u64() > Some(0))
        .collect();
    let big: Vec<&&Value> = (moves.iter())
        .filter(|l| l["moved"].as_u64() >= Some(40_000))
        .collect();
    assert!(big.len() >= 3, "{moves:?}");
    for l in &big {
        // Less the global buffer's 4 KiB pages, which the process does not own alone.
        let not_owned = l["not_owned"].as_u64().unwrap_or(0);
        let addrs = l["move_pages"].as_u64().unwrap() - not_owned;
        assert!(addrs < 100, "one address per huge page: {l}");
        assert!(l["moved"].as_u64().unwrap() <= 512 * addrs, "{l}");
    }
    // The pass's movers (its four idle CPUs) shared out over the processes it moves.
    let mut by_pass: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    for l in &moves {
        let p = by_pass.entry(l["t_s"].to_string()).or_default();
        p.0 += l["movers"].as_u64().unwrap_or(1);
        p.1 += 1;
    }
    for l in &big {
        let (movers, calls) = by_pass[&l["t_s"].to_string()];
        assert_eq!(movers, 4.max(calls), "{l}: {moves:?}");
    }
    let moved: u64 = moves.iter().map(|l| l["moved"].as_u64().unwrap()).sum();
    assert_eq!(moved, stop(&r)["pages_moved"].as_u64().unwrap());
}

/// perf bench's twin: its two whole-process moves (asserted two), when the first was
/// decided, and the first second at which every process's memory is at home (>= 90% on its
/// workers' node).
fn whole_moves(r: &RunResult) -> (Vec<&Value>, f64, f64) {
    let moves: Vec<&Value> = (daemon_log(r).iter())
        .filter(|l| l.get("migrate_pages").is_some() && l["moved"].as_u64() > Some(40_000))
        .collect();
    assert_eq!(moves.len(), 2, "{moves:?}");
    let decided = moves[0]["t_s"].as_f64().unwrap();
    let home = |s: &NumastatSample| {
        s.processes.iter().all(|p| {
            let total: f64 = p.node_mb.iter().sum();
            (p.worker_nodes.first()).is_some_and(|&n| p.node_mb[n] >= 0.9 * total)
        })
    };
    let at = r.numastat.iter().find(|s| home(s)).expect("placed").t_s;
    (moves, decided, at)
}

/// The same moves when the guest's eight CPUs run on two host cores (`core.host_cpus`, the
/// TCG guest on the CI machine): four workers and four movers share them, each at a quarter
/// of its speed, so the pages arrive in about the time one mover alone would take, and the
/// movers' CPU time (wall time held, as /proc shows it under TCG) is four times the pages'
/// cost.
#[test]
fn movers_on_a_shared_host_copy_at_its_speed() {
    let r = guest(
        "perf-bench-numa-mem",
        "home-node",
        &[
            TWIN[0],
            "daemon.sensor=softdirty",
            "machine.costs.migrate_page_ns=1e5",
            "machine.core.host_cpus=2",
            "sim.max_time_s=30",
        ],
    );
    let (_, decided, at) = whole_moves(&r);
    let alone = 2.0 * 40_960.0 * 1e-4;
    assert!(
        at - decided > 0.7 * alone && at - decided < 1.5 * alone,
        "placed {at} s, decided {decided} s, one mover alone {alone} s"
    );
    let cpu = stop(&r)["cpu_s"].as_f64().unwrap();
    assert!(
        cpu > 3.0 * alone,
        "the movers' CPU {cpu} s, the pages' cost {alone} s"
    );
}

/// numa02-like's twin as the guest runs it: the daemon started once the buffer is written
/// (`daemon.start_s`), the guest's eight CPUs on two host cores, and the move costs the
/// daemon's path measured in the 6.1 guest (a huge page takes 12.5 ms to copy, three ticks
/// of a whole CPU). Every CPU runs a worker, so the daemon's one mover shares a worker's CPU.
const SHARED_GUEST: [&str; 5] = [
    "daemon.start_s=1",
    "daemon.sensor=softdirty",
    "machine.core.host_cpus=2",
    "machine.costs.migrate_page_ns=14700",
    "machine.costs.migrate_copy_gib_s=0.156",
];

/// A page that costs more than a tick is paid from the ticks after it, so the moves take
/// their pages' cost at the mover's speed (before, each tick moved a whole huge page,
/// about twelve ticks' worth of the mover's time). And the worker beside the mover shares
/// its CPU with it, as CFS shares threads of equal weight: it never stops counting as
/// awake, no worker changes node after the split, and the process is placed and stays so
/// (before, the mover took the worker's CPU whole for a pass, the plan gave the worker's
/// place to another, the two swapped nodes, their chunks strayed, and the process was
/// taken for a sharer and interleaved: local 0.35).
#[test]
fn a_mover_beside_a_worker_shares_its_cpu_and_pays_each_page() {
    let mut sets = vec![TWIN[0], TWIN[1], "sim.max_time_s=30"];
    sets.extend(SHARED_GUEST);
    let r = guest("numa02-like", "home-node", &sets);
    let log = daemon_log(&r);
    assert_eq!(managed_at(&r), 1.0, "managed at the daemon's first pass");
    let splits = (log.iter()).filter(|l| l.get("decision").is_some()).count();
    assert_eq!(splits, 1, "split once: {log:?}");
    let set_at: Vec<f64> = (log.iter())
        .filter(|l| l.get("sched_setaffinity").is_some())
        .map(|l| l["t_s"].as_f64().unwrap())
        .collect();
    assert_eq!(set_at.len(), 8, "each worker set once: {set_at:?}");
    let s = &r.series;
    let placed = (s.t_s.iter().zip(&s.local_access_ratio))
        .find(|&(_, l)| l.is_some_and(|l| l >= 0.9))
        .map(|(&t, _)| t);
    assert!(placed.is_some_and(|t| t <= 15.0), "placed at {placed:?}");
    let last = s.local_access_ratio.last().copied().flatten();
    assert!(last.is_some_and(|l| l >= 0.9), "local {last:?} at the end");
    // The moves take at least the pages' cost (huge pages copied at the measured speed,
    // and their per-page work) at the mover's share: half a CPU beside a worker, each CPU
    // a quarter of a host core (eight running on two).
    let moved = stop(&r)["pages_moved"].as_u64().unwrap() as f64;
    let cost = moved * (4096.0 / (0.156 * 1_073_741_824.0) + 14_700e-9 / 512.0);
    let began = (log.iter())
        .find(|l| l.get("move_pages").is_some())
        .map(|l| l["t_s"].as_f64().unwrap())
        .expect("moves");
    let took = placed.unwrap() - began;
    assert!(
        took >= 0.8 * cost / (0.25 * 0.5),
        "placed {took} s after the moves began; the pages' cost {cost} s"
    );
}

/// On a shared host a TLB shootdown waits for each CPU that runs the process
/// (`core.host_shootdown_ns`, solved from the guest's `migrate-speed` eight-thread cases:
/// a running eight-thread process's 160 MiB moved in 23 s, stopped in 1 s): numa02-like's
/// moves, each flush waiting for its eight CPUs, end seconds later; the same setting on a
/// host that is not shared changes nothing.
#[test]
fn a_shootdown_on_a_shared_host_waits_for_the_processs_cpus() {
    let placed = |extra: &[&str], host: bool| {
        let mut sets = vec![TWIN[0], TWIN[1], "sim.max_time_s=40"];
        sets.extend(
            SHARED_GUEST
                .iter()
                .filter(|s| host || !s.contains("host_cpus")),
        );
        sets.extend(extra);
        let r = guest("numa02-like", "home-node", &sets);
        let s = &r.series;
        let at = (s.t_s.iter().zip(&s.local_access_ratio))
            .find(|&(_, l)| l.is_some_and(|l| l >= 0.9))
            .map(|(&t, _)| t);
        (at, serde_json::to_string(&r.metrics).unwrap())
    };
    let wait = ["machine.core.host_shootdown_ns=5e5"];
    let (before, _) = placed(&[], true);
    let (after, _) = placed(&wait, true);
    let (before, after) = (before.expect("placed"), after.expect("placed"));
    assert!(
        after >= before + 5.0,
        "placed at {after} s with the wait, {before} s without"
    );
    assert_eq!(
        placed(&[], false).1,
        placed(&wait, false).1,
        "no shared host, no wait"
    );
}

/// A process whose cpuset someone narrowed is left alone (logged once, never acted on),
/// and a process below `min_rss_mb` is not even judged.
#[test]
fn the_daemon_leaves_narrowed_and_small_processes_alone() {
    let r = guest(
        "numa01-like",
        "stable-daemon",
        &[
            "workload.process.0.cpuset_cpus=\"2-3\"",
            "daemon.sensor=softdirty",
            "sim.max_time_s=20",
        ],
    );
    let log = daemon_log(&r);
    let skips: Vec<&Value> = log.iter().filter(|l| l.get("skip").is_some()).collect();
    assert!(!skips.is_empty(), "{log:?}");
    for s in &skips {
        assert_eq!(
            s["skip"], "CPUs narrowed to 2-3 (cpuset or affinity)",
            "{s}"
        );
    }
    let narrowed = skips[0]["pid"].clone();
    let acted = log.iter().filter(|l| {
        l["pid"] == narrowed
            && (l.get("sched_setaffinity").is_some()
                || l.get("move_pages").is_some()
                || l.get("migrate_pages").is_some())
    });
    assert_eq!(acted.count(), 0, "{log:?}");
    let big = guest(
        "numa01-like",
        "stable-daemon",
        &["daemon.min_rss_mb=1000", "sim.max_time_s=10"],
    );
    let log = daemon_log(&big);
    assert!(
        log.iter().all(|l| l.get("managed").is_none()),
        "nothing is big enough: {log:?}"
    );
    assert_eq!(stop(&big)["managed_last_pass"], 0);
}

/// NPB IS on stable-a (33 GiB of base pages, 32 threads on 32 CPUs): placed at once,
/// unclassified, its memory where its threads first touched it, so the policy wants no
/// samples after its first pass; the daemon clears soft-dirty bits only after the pass's
/// decisions, and never clears it. (Cleared at first sight, it took 8.6 million write
/// faults a run, 1.6 times the kernel's hinting faults, and ran 2.1 times longer.)
#[test]
fn a_process_placed_at_once_is_never_cleared_for_nothing() {
    let r = run(&scenario_with(
        &Inline(Vec::new()),
        "stable-a",
        "npb_is",
        "home-node",
        1,
        &["sim.max_time_s=4", "sim.transparent_hugepage=never"],
    ));
    let log = daemon_log(&r);
    assert!(
        (log.iter()).any(|l| l["decision"]
            .as_str()
            .is_some_and(|d| d.starts_with("split over nodes (32 busy threads"))),
        "{log:?}"
    );
    let d = r.daemon.as_ref().expect("numabal's daemon ran");
    assert_eq!(d.soft_dirty_faults, 0);
}

/// XSBench on stable-a: its master thread alone runs first and is placed whole on a node;
/// it exits as its team of 32 starts with the mask it inherited from it. The leader's
/// mask is still the daemon's doing, not an operator's: the process stays managed (it
/// was skipped as "CPUs narrowed" and ran 32 threads on 8 CPUs, 2.2x the best policy) and
/// is placed again over the nodes; the tables its master thread built on one node are
/// spread over them.
#[test]
fn a_process_whose_placed_main_thread_exits_stays_managed() {
    let r = run(&scenario_with(
        &Inline(Vec::new()),
        "stable-a",
        "xsbench",
        "home-node",
        1,
        &["sim.max_time_s=12"],
    ));
    let log = daemon_log(&r);
    assert!(log.iter().all(|l| l.get("skip").is_none()), "{log:?}");
    let decisions: Vec<&str> = (log.iter())
        .filter_map(|l| l.get("decision")?.as_str())
        .collect();
    assert_eq!(decisions.len(), 3, "{decisions:?}");
    assert!(decisions[0].starts_with("home node "), "{decisions:?}");
    assert!(
        decisions[1].starts_with("split over nodes (32 busy threads"),
        "{decisions:?}"
    );
    assert!(
        decisions[2].ends_with("spread to its busy threads' shares over nodes [0, 1, 2, 3]"),
        "{decisions:?}"
    );
    let spread = log.iter().find(|l| l.get("interleave_pages").is_some());
    let moved = spread.and_then(|l| l["moved"].as_u64()).unwrap_or(0);
    // Three quarters of its 5.7 GiB leave the master's node, in 4 KiB pages (THP off).
    assert!(moved > 1_000_000, "{spread:?}");
}

/// The daemon's pass CPU is taken from the machine: on a machine whose every CPU runs a
/// worker, an expensive pass (reading `/proc` at 5 ms a file) takes CPU time from them.
#[test]
fn the_daemons_cpu_is_taken_from_the_workload() {
    let user = |sets: &[&str]| {
        let r = guest("numa02-like", "stable-daemon", sets);
        (r.metrics.user_cpu_s, stop(&r)["cpu_s"].as_f64().unwrap())
    };
    let base = ["daemon.sensor=maps", "sim.max_time_s=20"];
    let (cheap, cheap_cpu) = user(&base);
    let (dear, dear_cpu) = user(&[base[0], base[1], "machine.costs.proc_read_ns=5e6"]);
    assert!(dear_cpu > 10.0 * cheap_cpu, "{dear_cpu} vs {cheap_cpu}");
    let lost = cheap - dear;
    assert!(
        (lost - (dear_cpu - cheap_cpu)).abs() < 0.1 * dear_cpu,
        "the workload lost {lost} s of CPU, the daemon used {dear_cpu} s"
    );
}

/// numad with a `[daemon]` table runs under numabal's daemon (its budget, its log); without
/// one, as numad's own program (no daemon report).
#[test]
fn numad_runs_as_its_own_program_or_under_numabals_daemon() {
    let own = guest("numa01-like", "numad", &["sim.max_time_s=30"]);
    assert!(own.daemon.is_none());
    let under = guest(
        "numa01-like",
        "numad",
        &["daemon.migrate_mb_s=64", "sim.max_time_s=30"],
    );
    let log = daemon_log(&under);
    assert_eq!(log[0]["policy"], "numad");
    assert_eq!(log[0]["sensor"], "softdirty");
    assert!(stop(&under)["passes"].as_u64().unwrap() > 1);
}

/// Same inputs, same seed: the same decision log, line for line.
#[test]
fn the_daemon_run_is_deterministic() {
    let sets = [
        "daemon.sensor=pmu",
        "sim.max_time_s=20",
        "sim.check_invariants=true",
    ];
    let a = guest("numa01-like", "stable-daemon", &sets);
    let b = guest("numa01-like", "stable-daemon", &sets);
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
    assert!(stop(&a)["samples"].as_u64().unwrap() > 0);
}

/// A policy that asks, every second, for two `move_pages` calls per process: 256 pages
/// of its buffer to node 1, the next 256 to node 2.
struct TwoMoves;

/// numa01-like's buffer: its mapping's index in the preset's address-ordered list.
fn numa01_like_buf() -> usize {
    let text = numabal_model::presets::workload("numa01-like").unwrap();
    let t: toml::Table = toml::from_str(text).unwrap();
    t["process"][0]["region"]
        .as_array()
        .unwrap()
        .iter()
        .position(|r| r["name"].as_str() == Some("buf"))
        .unwrap()
}

impl numabal_policy::Policy for TwoMoves {
    fn name(&self) -> &str {
        "two-moves"
    }
    fn tick_interval_ns(&self) -> Option<u64> {
        Some(1_000_000_000)
    }
    fn on_tick(
        &mut self,
        _m: &numabal_model::Machine,
        obs: &numabal_policy::Observation<'_>,
        out: &mut Vec<numabal_policy::Action>,
    ) {
        let buf = numa01_like_buf();
        // The malloc'd buffer's data starts MALLOC_LEAD pages into its mapping's model.
        let data = numabal_sim::memory::MALLOC_LEAD;
        for p in obs.processes {
            for (node, first) in [(1, data), (2, data + 256)] {
                let addrs = (first..first + 256)
                    .map(|i| numabal_sim::world::page_addr(buf, i))
                    .collect();
                out.push(numabal_policy::Action::MovePages {
                    pid: p.pid,
                    addrs,
                    node,
                });
            }
        }
    }
}

/// The budget is spent call by call within a pass, as the live daemon's synchronous calls
/// spend it: at 1 MiB/s (256 pages, one second banked) a pass's first `move_pages` of 256
/// pages moves them and every later call of that pass is deferred whole.
#[test]
fn a_pass_spends_the_budget_call_by_call() {
    use numabal_sim::registry::{Built, DaemonUse, Entry, Registry};
    let registry = Registry::standard_copy().with(Entry {
        name: "two-moves",
        summary: "two move_pages calls per process per pass",
        sim: true,
        live: false,
        daemon: DaemonUse::Always,
        build: |_| {
            Ok(Built {
                kernel: None,
                policy: Box::new(TwoMoves),
                tunables: serde_json::json!({}),
                daemon: None,
            })
        },
    });
    let sc = scenario_with(
        &Inline(Vec::new()),
        "qemu-guest-4n8",
        "numa01-like",
        "two-moves",
        1,
        &[
            "daemon.migrate_mb_s=1",
            "daemon.sensor=maps",
            "sim.max_time_s=6",
            "sim.transparent_hugepage=never",
        ],
    );
    let r = numabal_sim::run_in(&registry, &sc, None).unwrap_or_else(|e| panic!("{e}"));
    let calls: Vec<&Value> = daemon_log(&r)
        .iter()
        .filter(|l| l.get("move_pages").is_some())
        .collect();
    let first_t = calls[0]["t_s"].clone();
    let pass: Vec<&&Value> = calls.iter().filter(|l| l["t_s"] == first_t).collect();
    assert_eq!(
        pass.len(),
        4,
        "two calls for each of the two processes: {pass:?}"
    );
    assert_eq!(pass[0]["moved"], 256, "{:?}", pass[0]);
    assert!(pass[0].get("deferred").is_none());
    for l in &pass[1..] {
        assert_eq!(l["deferred"], 256, "{l}");
        assert_eq!(l["moved"], 0, "{l}");
    }
}

/// The `damon` sensor (issue 18): a kdamond per managed process, its hot regions credited
/// to the threads that ran. numa01-like's two processes are placed within 60 s of being
/// managed, on the kdamonds' page checks alone: no fault of any kind is caused, and the
/// checks stay within DAMON's bound (regions x sample rate). On a 6.1 host (no `tried_regions`) the sensor is refused with the reason.
#[test]
fn damon_places_numa01_like_without_a_fault() {
    let r = guest(
        "numa01-like",
        "home-node",
        &[TWIN[0], TWIN[1], "daemon.sensor=damon"],
    );
    let (t, homes) = placed_at(&r).expect("placed");
    assert!(t - managed_at(&r) <= 60.0, "placed at {t} s");
    assert_eq!(placed(r.numastat.last().unwrap()), Some(homes));
    let d = r.daemon.as_ref().unwrap();
    assert_eq!((d.soft_dirty_faults, r.metrics.numa_hint_faults), (0, 0));
    assert!(d.damon_checks > 0);
    assert!(
        stop(&r)["samples"].as_u64().unwrap() > 0,
        "hot regions read"
    );
    assert_eq!(daemon_log(&r)[0]["sensor"], "damon");
    // DAMON's bound on its own cost: at most max_nr_regions checks per sample interval
    // per kdamond, whatever the process's size.
    let a = numabal_daemon::damon::ATTRS;
    let per_s = a.max_nr_regions * 1_000_000 / a.sample_us;
    let bound = 2 * per_s * r.metrics.runtime_s.ceil() as u64;
    assert!(
        d.damon_checks <= bound,
        "{} checks, bound {bound}",
        d.damon_checks
    );
    let spec = PolicySpec {
        kind: "home-node".into(),
        tunables: toml::Table::new(),
        label: "--policy".into(),
    };
    let on_6_1 = numabal_model::DaemonSettings {
        sensor: Some(numabal_model::SensorKind::Damon),
        kernel: numabal_model::KernelVersion::parse("6.1"),
        ..Default::default()
    };
    let built = numabal_sim::registry::standard().build_run(&spec, Some(&on_6_1));
    let e = built.err().expect("refused").to_string();
    assert!(
        e.contains("no tried_regions before Linux 6.2; this kernel is 6.1"),
        "{e}"
    );
}

/// numa01 on autonuma-2n24 keeps every CPU busy, so the pass's idle CPU time allows one
/// mover; a whole process's move takes as many as the CPUs its twelve threads use, up to
/// eight (`pacing::process_movers`), as the kernel migrates in each of its threads'
/// faults. The second process's 3 GiB is at home (90% on its workers' node) within 8 s.
#[test]
fn a_whole_process_move_takes_a_mover_per_cpu_its_threads_use() {
    let r = run(&scenario_with(
        &Inline(Vec::new()),
        "autonuma-2n24",
        "numa01",
        "home-node",
        1,
        &["sim.max_time_s=20", "sim.numastat_every_s=1"],
    ));
    let moves: Vec<&Value> = (daemon_log(&r).iter())
        .filter(|l| l.get("migrate_pages").is_some())
        .collect();
    assert!(!moves.is_empty());
    for m in &moves {
        assert_eq!(m["movers"], 8, "{m}");
    }
    let home = |s: &&NumastatSample| {
        s.processes.iter().all(|p| {
            let total: f64 = p.node_mb.iter().sum();
            (p.worker_nodes.first()).is_some_and(|&n| p.node_mb[n] >= 0.9 * total)
        })
    };
    let at = r.numastat.iter().find(home).map(|s| s.t_s);
    assert!(at.is_some_and(|t| t <= 8.0), "at home at {at:?} s");
}

/// Where the kernel keeps a CPU in a process's `mm_cpumask` after it switches away
/// (`core.mm_cpumask_kept`, 7.2), a migration's flush waits for every busy CPU that ran
/// the process: numa01-like's second process ran on node 0's CPUs beside the first, so
/// its move to another node waits for them too, now that they run the first process,
/// and it is placed later than where only the CPUs that run it count (6.1). The whole
/// move's time grows by at least the wait of one more CPU per page. With no shared host
/// the setting changes nothing. Without home-node's second look: the daemon starts 1 s
/// into the run, and a pass a quarter interval after its first classified the second
/// process from fewer samples (private, split, then a sharer after all), so that its
/// memory moved in two steps and no single whole-process move shows the wait.
#[test]
fn a_flush_waits_for_the_cpus_that_ran_the_process_where_the_kernel_keeps_them() {
    let run = |kept: bool, host: bool| {
        let mut sets = vec![
            "sim.numastat_every_s=0.1",
            TWIN[1],
            "sim.max_time_s=30",
            "policy.second_look=0",
        ];
        sets.extend(
            SHARED_GUEST
                .iter()
                .filter(|s| host || !s.contains("host_cpus")),
        );
        sets.push("machine.core.host_shootdown_ns=5e5");
        if kept {
            sets.push("machine.core.mm_cpumask_kept=true");
        }
        guest("numa01-like", "home-node", &sets)
    };
    let took = |r: &RunResult| {
        let moves: Vec<&Value> = (daemon_log(r).iter())
            .filter(|l| l.get("migrate_pages").is_some() && l["moved"].as_u64() > Some(10_000))
            .collect();
        assert_eq!(moves.len(), 1, "{moves:?}");
        let decided = moves[0]["t_s"].as_f64().unwrap();
        let (at, _) = placed_at(r).expect("placed");
        (moves[0]["moved"].as_u64().unwrap(), at - decided)
    };
    let (moved, before) = took(&run(false, true));
    let (_, after) = took(&run(true, true));
    // Each huge page waits for node 0's two CPUs more, 0.5 ms of work each, at the
    // mover's speed: at most a quarter of a host core (eight vCPUs on two cores, four
    // workers and four movers running): 0.26 s in all, less a sample's 0.1 s.
    let pages = moved as f64 / 512.0;
    assert!(
        after >= before + pages * 2.0 * 5e-4 * 4.0 - 0.1,
        "placed {after} s after the decision with the kept mask, {before} s without ({pages} huge pages)"
    );
    let metrics = |r: RunResult| serde_json::to_string(&r.metrics).unwrap();
    assert_eq!(metrics(run(false, false)), metrics(run(true, false)));
}
