//! Static placement on a tiered machine: `numactl --preferred` and weighted interleave
//! (MPOL_WEIGHTED_INTERLEAVE with Linux 6.16's automatic weights) on DRAM + a slow node.

use crate::util::{Inline, run, scenario_with};
use numabal_model::mempolicy::auto_interleave_weights;

/// One socket with 2 CPUs and 1 GiB of DRAM (20 GiB/s), a CPU-less CXL node of 2 GiB
/// (5 GiB/s): the tiering tests' machine.
const MACHINE: &str = include_str!("../fixtures/tier-machine.toml");

/// One process first-touching a region of `size` with `threads` threads, each its own
/// slice, in one pass; `mempolicy` is the region's own (mbind) policy, if any.
fn workload(size: &str, threads: u32, mempolicy: Option<&str>) -> String {
    let mp = mempolicy.map_or(String::new(), |m| format!("mempolicy = \"{m}\"\n"));
    format!(
        r#"name = "fill"
[[process]]
name = "p"
[[process.region]]
name = "buf"
size = "{size}"
{mp}[[process.group]]
name = "w"
threads = {threads}
[[process.group.phase]]
kind = "access"
region = "buf"
slice = "thread"
passes = 1
"#
    )
}

/// Pages per node of the one process after a run of `policy` with `sets`.
fn placed(wl: String, policy: &str, sets: &[&str]) -> (numabal_sim::RunResult, Vec<u64>) {
    let files = Inline(vec![("tier-m", MACHINE.to_string()), ("fill", wl)]);
    let mut all = vec![
        "sim.check_invariants=true",
        "sim.transparent_hugepage=never",
    ];
    all.extend_from_slice(sets);
    let sc = scenario_with(&files, "tier-m", "fill", policy, 1, &all);
    let r = run(&sc);
    let pages = r.processes[0]
        .node_mb
        .iter()
        .map(|mb| (mb * 256.0).round() as u64)
        .collect();
    (r, pages)
}

/// 256 MiB: 65,536 base pages.
const PAGES: u64 = 65_536;

/// The auto weights of the test machine: DRAM 20 GiB/s = 21,475 MB/s and CXL 5 GiB/s =
/// 5,369 MB/s; 32 × 21,475 / 26,844 = 25, 32 × 5,369 / 26,844 = 6 (GCD 1).
#[test]
fn the_test_machine_gets_25_to_6() {
    let files = Inline(vec![
        ("tier-m", MACHINE.to_string()),
        ("fill", workload("1MiB", 1, None)),
    ]);
    let sc = scenario_with(&files, "tier-m", "fill", "none", 1, &[]);
    assert_eq!(auto_interleave_weights(&sc.machine), vec![25, 6]);
}

/// Pages land on the nodes in the ratio of the weights, 25:6, within one cycle of the
/// weights (31 pages) per allocating thread: the task policy (each thread's own count of
/// allocations, `il_weight`) and an mbind range (the page's offset) alike.
#[test]
fn weighted_interleave_places_pages_in_the_ratio_of_the_weights() {
    let expect_dram = PAGES * 25 / 31;
    for (threads, wl_policy, policy) in [
        (1, None, "weighted-interleave"),
        (2, None, "weighted-interleave"),
        (2, Some("weighted-interleave:0-1"), "none"),
    ] {
        let (r, pages) = placed(workload("256MiB", threads, wl_policy), policy, &[]);
        assert_eq!(pages.iter().sum::<u64>(), PAGES);
        let tolerance = 31 * threads as u64;
        assert!(
            pages[0].abs_diff(expect_dram) <= tolerance,
            "{policy} {wl_policy:?}, {threads} thread(s): {pages:?}, DRAM expected {expect_dram} ± {tolerance}"
        );
        // Plain interleave would put half on each node; this is 80.6 % on DRAM.
        assert!(pages[0] > PAGES * 3 / 4, "{pages:?}");
        if wl_policy.is_none() {
            assert_eq!(r.scenario.policy, "weighted-interleave");
        }
    }
    // One thread's task policy is exact: 2,114 cycles of 31 and 2 pages more on DRAM.
    let (_, pages) = placed(workload("256MiB", 1, None), "weighted-interleave", &[]);
    assert_eq!(pages, vec![2114 * 25 + 2, 2114 * 6]);
}

/// Memory under weighted interleave is not scanned by NUMA balancing (no MPOL_F_MOF), so
/// tiering mode promotes none of its slow-tier pages.
#[test]
fn weighted_interleave_memory_is_not_scanned_or_promoted() {
    let wl = workload("256MiB", 1, Some("weighted-interleave:all")).replace(
        "passes = 1\n",
        "passes = 1\n[[process.group.phase]]\nkind = \"access\"\nregion = \"buf\"\npattern = \"uniform\"\nseconds = 5\n",
    );
    let (r, pages) = placed(
        wl,
        "autonuma",
        &["policy.numa_balancing=2", "sim.demotion_enabled=true"],
    );
    let t = r.metrics.tiering.as_ref().expect("tiering on");
    assert_eq!(r.metrics.numa_hint_faults, 0);
    assert_eq!(t.pgpromote_success, 0);
    assert_eq!(pages, vec![2114 * 25 + 2, 2114 * 6]);
}

/// `preferred` with `node = 1` puts the memory on the slow node while it has room, then
/// on the nearest node with room; without a node, on the top-tier node nearest the
/// process (the DRAM node).
#[test]
fn preferred_fills_the_given_node_first() {
    let (r, pages) = placed(workload("256MiB", 1, None), "preferred", &["policy.node=1"]);
    assert_eq!(pages, vec![0, PAGES]);
    assert_eq!(r.scenario.tunables["node"], serde_json::json!(1));
    // 2.5 GiB: the 2 GiB node fills, the rest goes to the DRAM node.
    let (_, pages) = placed(
        workload("2560MiB", 1, None),
        "preferred",
        &["policy.node=1"],
    );
    assert_eq!(pages.iter().sum::<u64>(), 10 * PAGES);
    assert!(pages[1] >= 8 * PAGES - 256, "the slow node full: {pages:?}");
    assert!(pages[0] >= 2 * PAGES, "the rest on DRAM: {pages:?}");
    let (_, pages) = placed(workload("256MiB", 1, None), "preferred", &[]);
    assert_eq!(pages, vec![PAGES, 0]);
}

/// A node the machine does not have, or a node without memory, is refused before the run.
#[test]
fn preferred_checks_its_node() {
    let files = Inline(vec![
        ("tier-m", MACHINE.to_string()),
        ("fill", workload("1MiB", 1, None)),
    ]);
    let sc = scenario_with(&files, "tier-m", "fill", "preferred", 1, &["policy.node=2"]);
    let e = numabal_sim::run(&sc).unwrap_err().to_string();
    assert!(
        e.contains("policy.node: is 2 (allowed: a node of the machine with memory: 0-1)"),
        "{e}"
    );
}
