//! A QEMU guest's memory (`core.host_first_use_ns`): a frame's first use since boot costs
//! the host's fault on it, once; a `move_pages` phase moves a region and pays for it.

use crate::util::{Inline, run, scenario_with};
use numabal_sim::RunResult;

/// Two programs that first-touch 256 MiB from node 0's CPUs, the second after the first
/// has exited; `more` goes after the first's access phase (a `move_pages` phase).
fn two_programs(more: &str) -> String {
    let program = |name: &str, start: u32, more: &str| {
        format!(
            "[[process]]\nname = \"{name}\"\nstart_s = {start}\nregion = [{{ name = \"buf\", size = \"256MiB\" }}]\n\
             [[process.group]]\nname = \"main\"\nthreads = 1\n\
             [[process.group.phase]]\nkind = \"access\"\nregion = \"buf\"\npasses = 1\nrun_on_node = 0\n{more}"
        )
    };
    format!(
        "name = \"two\"\n{}\n{}",
        program("first", 0, more),
        program("second", 5, more)
    )
}

fn sim(workload: String, sets: &[&str]) -> RunResult {
    let mut all = vec!["sim.transparent_hugepage=always"];
    all.extend_from_slice(sets);
    run(&scenario_with(
        &Inline(vec![("two", workload)]),
        "qemu-guest-tiered",
        "two",
        "none",
        1,
        &all,
    ))
}

fn runtimes(r: &RunResult) -> (f64, f64) {
    (r.processes[0].runtime_s, r.processes[1].runtime_s)
}

/// The first program takes node 0's frames for the first time and pays the host's fault
/// on each (the preset's 8,982 ns a 4 KiB page); the second takes the frames the first
/// freed and does not. Without the cost the two take the same time.
#[test]
fn a_frames_first_use_is_paid_once() {
    let (first, second) = runtimes(&sim(two_programs(""), &[]));
    let pages = 256.0 * 256.0;
    let want = pages * 8982.0 / 1e9;
    assert!(
        ((first - second) - want).abs() < 0.01 * want,
        "first {first} s, second {second} s: {} s more, want {want} s",
        first - second
    );
    let (first, second) = runtimes(&sim(
        two_programs(""),
        &["machine.core.host_first_use_ns=0"],
    ));
    // (a few microseconds apart: where each program's threads start)
    assert!((first - second).abs() < 1e-3 * want, "{first} vs {second}");
}

/// `move_pages` of the buffer to the slow node: every page moves (a THP whole), counted in
/// pgmigrate_success, and the thread pays each move at the preset's migration cost plus
/// the first use of node 2's frames; the second program's move reuses them.
#[test]
fn a_move_pages_phase_moves_the_region_at_the_kernels_cost() {
    let moved = sim(
        two_programs(
            "[[process.group.phase]]\nkind = \"move_pages\"\nregion = \"buf\"\nnode = 2\n",
        ),
        &[],
    );
    let stayed = sim(two_programs(""), &[]);
    for p in &moved.processes {
        assert_eq!(p.node_mb, vec![0.0, 0.0, 256.0], "{}", p.name);
    }
    assert_eq!(moved.metrics.pgmigrate_success, 2 * 65536);
    assert_eq!(stayed.metrics.pgmigrate_success, 0);
    // 128 THPs: fixed work, the copy at 1.385 GiB/s and a TLB shootdown each.
    let thp_move = 10045.0 + 2.0 * 1024.0 * 1024.0 / (1.385 * 1.073_741_824) + 5506.9;
    let moves = 128.0 * thp_move / 1e9;
    let first_use = 65536.0 * 8982.0 / 1e9;
    let extra = |i: usize| moved.processes[i].runtime_s - stayed.processes[i].runtime_s;
    for (i, want) in [(0, moves + first_use), (1, moves)] {
        assert!(
            (extra(i) - want).abs() < 0.02 * want,
            "program {i}: the move took {} s more, want {want} s",
            extra(i)
        );
    }
}
