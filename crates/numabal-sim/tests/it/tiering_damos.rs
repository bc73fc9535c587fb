//! DAMOS memory tiering (`damon-tiering`, samples/damon/mtier.c's schemes) and a workload's
//! own DAMOS schemes (`[[damos]]`), on the tiering tests' machine: 1 GiB of DRAM beside a
//! CPU-less 2 GiB CXL node.

use crate::util::{Inline, run, scenario_with};

const MACHINE: &str = include_str!("../fixtures/tier-machine.toml");

/// A cold process writes 1.2 GiB over about 70 s (the DRAM fills, the rest spills to
/// CXL) and sleeps; a hot one first-touches 256 MiB on CXL (bound there) at 1 s and then
/// reads it at random for 80 s. While the DRAM fills, its use is far below the promotion
/// goal (99.7 %), so the promotion quota's feedback loop grows it to its 200 MiB limit.
const WORKLOAD: &str = r#"
name = "damos-test"
[[process]]
name = "cold"
[[process.region]]
name = "buf"
size = "1200MiB"
[[process.group]]
name = "w"
threads = 1
[[process.group.phase]]
kind = "access"
region = "buf"
passes = 1
ns_per_byte = 60
[[process.group.phase]]
kind = "sleep"
seconds = 90
[[process]]
name = "hot"
start_s = 1
[[process.region]]
name = "buf"
size = "256MiB"
[[process.group]]
name = "w"
threads = 1
[[process.group.phase]]
kind = "access"
region = "buf"
passes = 1
mempolicy = "bind:1"
[[process.group.phase]]
kind = "access"
region = "buf"
pattern = "uniform"
seconds = 80
"#;

/// A run on the test machine; `sim.check_invariants` only where `checked` (it is the
/// slow part of these runs).
fn damos_run(policy: &str, workload: &str, checked: bool) -> numabal_sim::RunResult {
    let r = Inline(vec![
        ("tier-m", MACHINE.to_string()),
        ("damos-w", workload.to_string()),
    ]);
    run(&scenario_with(
        &r,
        "tier-m",
        "damos-w",
        policy,
        1,
        if checked {
            &["sim.check_invariants=true"]
        } else {
            &[]
        },
    ))
}

fn node_mb(r: &numabal_sim::RunResult, name: &str) -> Vec<f64> {
    let p = r.processes.iter().find(|p| p.name == name).unwrap();
    p.node_mb.clone()
}

#[test]
fn damon_tiering_promotes_the_hot_set_and_demotes_cold_pages_to_make_room() {
    let r = damos_run("damon-tiering", WORKLOAD, false);
    let t = r.metrics.tiering.as_ref().expect("tiering on");
    // Most of the hot set came up; cold pages went down once the DRAM was full.
    assert!(
        node_mb(&r, "hot")[0] > 128.0,
        "hot: {:?}",
        node_mb(&r, "hot")
    );
    assert!(t.damos_promoted > 0 && t.damos_demoted > 0, "{t:?}");
    assert!(
        node_mb(&r, "cold")[1] > 200.0,
        "cold: {:?}",
        node_mb(&r, "cold")
    );
    // DAMOS, not NUMA balancing: no hinting fault, no kernel promotion or kswapd demotion.
    assert_eq!(r.metrics.numa_hint_faults, 0);
    assert_eq!(
        t.pgpromote_success + t.pgdemote_kswapd + t.pgdemote_direct,
        0
    );
    assert!(t.promote_mb_s > 0.0 && t.demote_mb_s > 0.0);
    // The kdamonds' work is charged (checks and migrations).
    assert!(r.metrics.scan_cpu_s > 0.0);
    // Without it, the hot set stays where it was first touched.
    let none = damos_run("none", WORKLOAD, false);
    assert_eq!(node_mb(&none, "hot"), vec![0.0, 256.0]);
}

#[test]
fn damon_tiering_runs_are_deterministic() {
    let a = serde_json::to_string(&damos_run("damon-tiering", WORKLOAD, false)).unwrap();
    let b = serde_json::to_string(&damos_run("damon-tiering", WORKLOAD, false)).unwrap();
    assert_eq!(a, b);
}

/// The same workload with a scheme of its own: every 5 s, up to 64 MiB of cold DRAM pages
/// pushed to CXL.
fn with_churn() -> String {
    format!(
        "{WORKLOAD}
[[damos]]
action = \"migrate_cold\"
node = 0
target = 1
quota = \"64MiB\"
reset_s = 5
apply_s = 5
"
    )
}

#[test]
fn a_workloads_own_schemes_run_under_any_policy_and_are_not_the_policys() {
    let r = damos_run("none", &with_churn(), true);
    // Cold DRAM pages went down; counted as migrations, not as a policy's demotions.
    let t = r
        .metrics
        .tiering
        .as_ref()
        .expect("the schemes keep the watermarks");
    assert_eq!(t.damos_promoted + t.damos_demoted, 0);
    let moved_mb = r.metrics.pgmigrate_success as f64 / 256.0;
    let before = node_mb(&damos_run("none", WORKLOAD, false), "cold")[1];
    assert!(moved_mb > 256.0, "{moved_mb} MiB");
    assert!(
        node_mb(&r, "cold")[1] > before + 256.0,
        "{:?}",
        node_mb(&r, "cold")
    );
    assert_eq!(node_mb(&r, "hot"), vec![0.0, 256.0]);
}

#[test]
fn bad_schemes_and_tunables_are_refused_with_the_field() {
    let bad = with_churn().replace("node = 0\ntarget = 1", "node = 1\ntarget = 1");
    let r = Inline(vec![("tier-m", MACHINE.to_string()), ("damos-w", bad)]);
    let input = numabal_model::ScenarioInput {
        machine: Some("tier-m".into()),
        workload: Some("damos-w".into()),
        policy: Some("none".into()),
        ..Default::default()
    };
    let e = numabal_model::Scenario::build(&input, &r)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("damos[0].target") && e.contains("monitored node itself"),
        "{e}"
    );
    let r = Inline(vec![
        ("tier-m", MACHINE.to_string()),
        ("damos-w", WORKLOAD.to_string()),
    ]);
    let input = numabal_model::ScenarioInput {
        machine: Some("tier-m".into()),
        workload: Some("damos-w".into()),
        policy: Some("damon-tiering".into()),
        sets: vec!["policy.aggr_us=1000".into()],
        ..Default::default()
    };
    let sc = numabal_model::Scenario::build(&input, &r);
    let e = match sc {
        Ok(sc) => numabal_sim::run(&sc).unwrap_err().to_string(),
        Err(e) => e.to_string(),
    };
    assert!(
        e.contains("policy.aggr_us") && e.contains("at least sample_us"),
        "{e}"
    );
}
