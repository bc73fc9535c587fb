//! Progress reports (`run_observed`): the share of the work done rises from 0 to 1, they do
//! not change the run, and the end they predict at half-way is near the real one.

use crate::util::scenario;
use numabal_sim::RunProgress;
use std::sync::Mutex;

/// The reports of a run and its result.
fn observed(machine: &str, workload: &str, policy: &str) -> (Vec<RunProgress>, f64, String) {
    let sc = scenario(machine, workload, policy, 1);
    let seen = Mutex::new(Vec::new());
    let r = numabal_sim::run_observed(&sc, Some(&|p| seen.lock().unwrap().push(p))).unwrap();
    let json = serde_json::to_string(&r).unwrap();
    let end = r.metrics.runtime_s;
    (seen.into_inner().unwrap(), end, json)
}

/// Workloads whose parallelism and speed are the same over the run predict their end
/// within 15% at half-way. hpl, whose first 9.5 s are one thread generating the matrix
/// before 104 threads start, is weighted by work, not time (the module notes of
/// engine/progress.rs), and only has to rise to its end; so does numa01 under autonuma,
/// which runs about 1.4 times as fast once the balancing has put each process on a node
/// of its own, at a moment that moves with the seed and often falls after half-way (its
/// local access ratio goes from about 0.5 to 1.0 at 127 s of 230 s with seed 1): no
/// estimate from the past foresees that (seeds 1-8 of 2026-11-30: 3.5 % to 16.5 % off at
/// half-way).
/// numa01_thread_alloc, whose threads each own a slice from the start, keeps its speed.
#[test]
fn share_done_rises_to_the_end_and_predicts_it() {
    for (m, w, p, within) in [
        ("autonuma-2n24", "numa01", "none", Some(0.15)),
        ("autonuma-2n24", "numa01", "autonuma", None),
        (
            "autonuma-2n24",
            "numa01_thread_alloc",
            "autonuma",
            Some(0.15),
        ),
        ("autonuma-2n24", "numa02", "stable", Some(0.15)),
        ("xeon-2n104", "hpl", "autonuma", None),
        ("xeon-2n104", "kbuild", "none", Some(0.15)),
        ("rhel-4n40", "kvm_guests", "numad", Some(0.15)),
    ] {
        let (seen, end, json) = observed(m, w, p);
        let plain = serde_json::to_string(&crate::util::run(&scenario(m, w, p, 1))).unwrap();
        assert_eq!(json, plain, "{w} {p}: reports changed the run");
        assert!(
            seen.len() as f64 >= end.floor() - 1.0,
            "{w} {p}: one a second"
        );
        assert!(
            seen.windows(2).all(|x| x[1].done >= x[0].done - 1e-9),
            "{w} {p}: the share done falls"
        );
        let last = seen.last().unwrap();
        // At half the run, the end the reports imply (time over share).
        let half = seen.iter().find(|s| s.t_s >= end / 2.0).unwrap();
        let predicted = half.t_s / half.done;
        eprintln!(
            "{m} {w} {p}: end {end:.1} s, at {:.0} s done {:.3} -> predicted {predicted:.1} s; last done {:.3}",
            half.t_s, half.done, last.done
        );
        assert!(last.done > 0.9, "{w} {p}: ends at {}", last.done);
        if let Some(within) = within {
            let err = (predicted - end).abs() / end;
            assert!(
                err < within,
                "{w} {p}: predicted {predicted:.1} s, ran {end:.1} s"
            );
        }
    }
}
