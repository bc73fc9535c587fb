//! Same inputs and seed: byte-identical output. Parallel compare equals sequential.

use crate::util::{run, scenario};
use numabal_model::scenario::PolicySpec;

#[test]
fn same_seed_same_bytes() {
    for (w, p) in [
        ("numa02", "none"),
        ("numa02_smt", "interleave"),
        ("numa01_numa02", "bind"),
        ("numa02", "autonuma"),
        ("numa02", "autonuma-2012"),
        ("numa01_numa02", "autonuma-2012"),
    ] {
        let sc = scenario("autonuma-2n24", w, p, 7);
        let a = serde_json::to_string(&run(&sc)).unwrap();
        let b = serde_json::to_string(&run(&sc)).unwrap();
        assert_eq!(a, b, "{w}/{p}");
    }
}

#[test]
fn seeds_perturb_what_varies_in_reality() {
    // numa01's first-touch node is drawn from the seed, like `time(NULL) & 1`.
    let mut nodes = std::collections::BTreeSet::new();
    for seed in 1..=8 {
        let r = run(&scenario("autonuma-2n24", "numa01", "none", seed));
        let p = &r.processes[0];
        nodes.insert(if p.node_mb[0] > p.node_mb[1] { 0 } else { 1 });
    }
    assert_eq!(nodes.len(), 2, "both nodes are chosen by some seed");
}

#[test]
fn parallel_compare_equals_sequential() {
    let sc = scenario("autonuma-2n24", "numa02", "none", 1);
    let policies: Vec<PolicySpec> = ["none", "bind", "interleave"]
        .iter()
        .map(|p| PolicySpec {
            kind: p.to_string(),
            tunables: Default::default(),
            label: "test".into(),
        })
        .collect();
    let seeds = [1, 2, 3];
    let seq = numabal_sim::compare(&sc, &policies, &seeds, Some(1)).unwrap();
    let par = numabal_sim::compare(&sc, &policies, &seeds, Some(2)).unwrap();
    assert_eq!(
        serde_json::to_string(&seq).unwrap(),
        serde_json::to_string(&par).unwrap()
    );
    assert_eq!(seq.policy_order, vec!["none", "bind", "interleave"]);
    // Each run in the comparison is the run `sim` would give for that seed.
    let mut one = sc.clone();
    one.sim.seed = 2;
    one.policy = policies[1].clone();
    assert_eq!(seq.policies["bind"].runs[1], run(&one));
}
