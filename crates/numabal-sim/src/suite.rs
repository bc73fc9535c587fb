//! Suites (`numabal suite`): every workload of a suite under every policy over the same
//! seeds on one machine, each workload summarised as by `compare`, and per policy the
//! geometric mean over the workloads of the figures Stable-NUMA's evaluation reports, with
//! each as a ratio to the first policy.
//!
//! All runs of all workloads go to one rayon pool (a long workload does not hold the
//! others back) and are collected in input order, so the result does not depend on the
//! number of threads.
//!
//! **Geometric means and zeros.** The geometric mean of non-negative values is
//! `exp(mean(ln x))` when every value is positive and exactly 0 when any value is 0 (the
//! product is 0: no floor is substituted). Counters that a policy never moves, such as
//! `numa_pages_migrated` under `none`, therefore have a geometric mean of 0, and a run
//! of identical runtimes has a CV of 0. How many workloads had a 0 is reported beside
//! each mean (`zeros`), so a 0 that one workload forced is visible. A ratio to the first
//! policy is that policy's mean divided by the first policy's; it is undefined (`null` in
//! JSON, `-` in the table) when the first policy's mean is 0. An empty list, a negative
//! or a non-finite value, or an undefined one (the CV of single runs) makes the mean
//! undefined (`null` in JSON, `-` in the table).

use crate::compare::{CompareResult, PolicyRuns, run_all, run_one, summarise};
use crate::engine::SimError;
use crate::result::RunResult;
use numabal_model::Scenario;
use numabal_model::scenario::PolicySpec;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A figure of the suite summary: its JSON key, its column label, and how to read it from
/// one workload's runs of one policy.
pub struct GeomeanMetric {
    /// Key in `geomean.<policy>`.
    pub key: &'static str,
    /// Column label.
    pub label: &'static str,
    /// The per-workload value.
    pub of: fn(&PolicyRuns) -> f64,
}

fn metric(p: &PolicyRuns, k: &str) -> f64 {
    p.metrics.get(k).copied().unwrap_or(f64::NAN)
}

/// The figures whose geometric means the suite reports, in column order.
pub const GEOMEAN_METRICS: &[GeomeanMetric] = &[
    GeomeanMetric {
        key: "runtime_s",
        label: "runtime (s)",
        of: |p| p.runtime_s.mean,
    },
    GeomeanMetric {
        key: "runtime_cv",
        label: "runtime CV",
        of: |p| p.runtime_s.cv.unwrap_or(f64::NAN),
    },
    GeomeanMetric {
        key: "runtime_nmmd",
        label: "NMMD",
        of: |p| p.runtime_s.nmmd.unwrap_or(f64::NAN),
    },
    GeomeanMetric {
        key: "local_access_ratio",
        label: "local ratio",
        of: |p| metric(p, "local_access_ratio"),
    },
    GeomeanMetric {
        key: "numa_hint_faults_per_s",
        label: "hint faults/s",
        of: |p| metric(p, "numa_hint_faults_per_s"),
    },
    GeomeanMetric {
        key: "numa_pages_migrated",
        label: "pages migrated",
        of: |p| metric(p, "numa_pages_migrated"),
    },
    GeomeanMetric {
        key: "thread_migrations_internode_per_s",
        label: "inter-node migr./s",
        of: |p| metric(p, "thread_migrations_internode_per_s"),
    },
];

/// Geometric mean with the zero rule of the module documentation: 0 if any value is 0,
/// NaN for an empty list or any negative or non-finite value, else `exp(mean(ln x))`.
pub fn geomean(xs: &[f64]) -> f64 {
    if xs.is_empty() || xs.iter().any(|x| !x.is_finite() || *x < 0.0) {
        return f64::NAN;
    }
    if xs.contains(&0.0) {
        return 0.0;
    }
    (xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp()
}

/// `x / base`, undefined (None) when `base` is 0 or either is not finite.
pub fn ratio(x: f64, base: f64) -> Option<f64> {
    (base > 0.0 && base.is_finite() && x.is_finite()).then(|| x / base)
}

/// One figure's geometric mean over the suite's workloads.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Geomean {
    /// The geometric mean (see the zero rule above).
    /// The geometric mean (see the zero rule above); `None` (`null`) where it is undefined,
    /// e.g. a CV over single runs.
    pub value: Option<f64>,
    /// `value` over the first policy's `value`; null when that is 0 or undefined.
    pub ratio: Option<f64>,
    /// Workloads whose value was 0.
    pub zeros: usize,
}

/// The result of `numabal suite`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SuiteResult {
    /// numabal version.
    pub numabal_version: String,
    /// Suite name.
    pub suite: String,
    /// Suite description.
    pub description: String,
    /// Machine name.
    pub machine: String,
    /// Seeds every policy ran with on every workload.
    pub seeds: Vec<u64>,
    /// `--set` overrides of every run: the suite's `[set]`, then the command line's.
    pub overrides: Vec<String>,
    /// Policies in the order given; the first is the baseline of every `ratio`.
    pub policy_order: Vec<String>,
    /// Workloads in the suite's order (keys of `workloads`).
    pub workload_order: Vec<String>,
    /// Per workload, what `numabal compare` reports for it.
    pub workloads: BTreeMap<String, CompareResult>,
    /// Per policy, per figure of [`GEOMEAN_METRICS`], the geometric mean over workloads.
    pub geomean: BTreeMap<String, BTreeMap<String, Geomean>>,
}

impl SuiteResult {
    /// Summarise per-workload comparisons (all with the same policies, in the same order).
    pub fn from_compares(
        suite: &str,
        description: &str,
        overrides: Vec<String>,
        compares: Vec<CompareResult>,
    ) -> SuiteResult {
        let policy_order = compares
            .first()
            .map(|c| c.policy_order.clone())
            .unwrap_or_default();
        let mut means: BTreeMap<String, BTreeMap<String, Geomean>> = BTreeMap::new();
        for p in &policy_order {
            let mut per = BTreeMap::new();
            for m in GEOMEAN_METRICS {
                let xs: Vec<f64> = compares
                    .iter()
                    .map(|c| c.policies.get(p).map(m.of).unwrap_or(f64::NAN))
                    .collect();
                per.insert(
                    m.key.to_string(),
                    Geomean {
                        value: Some(geomean(&xs)).filter(|v| v.is_finite()),
                        ratio: None,
                        zeros: xs.iter().filter(|x| **x == 0.0).count(),
                    },
                );
            }
            means.insert(p.clone(), per);
        }
        if let Some(first) = policy_order.first().and_then(|p| means.get(p)).cloned() {
            for per in means.values_mut() {
                for (k, g) in per.iter_mut() {
                    g.ratio = first.get(k).and_then(|b| ratio(g.value?, b.value?));
                }
            }
        }
        let mut workloads = BTreeMap::new();
        let mut workload_order = Vec::new();
        let (mut machine, mut seeds) = (String::new(), Vec::new());
        for c in compares {
            if workloads.is_empty() {
                machine = c.machine.clone();
                seeds = c.seeds.clone();
            }
            // The same workload listed twice gets a suffix so neither is lost.
            let mut key = c.workload.clone();
            let mut k = 2;
            while workloads.contains_key(&key) {
                key = format!("{}#{k}", c.workload);
                k += 1;
            }
            workload_order.push(key.clone());
            workloads.insert(key, c);
        }
        SuiteResult {
            numabal_version: env!("CARGO_PKG_VERSION").to_string(),
            suite: suite.to_string(),
            description: description.to_string(),
            machine,
            seeds,
            overrides,
            policy_order,
            workload_order,
            workloads,
            geomean: means,
        }
    }
}

/// Run every workload (`bases`, one scenario each, all on the same machine with the same
/// overrides) under every policy with every seed. `on_done(w, run)` is called as each run
/// of workload `bases[w]` completes, from the worker thread that ran it, in no particular
/// order (for progress reports; the result does not depend on it).
pub fn suite(
    name: &str,
    description: &str,
    bases: &[Scenario],
    policies: &[PolicySpec],
    seeds: &[u64],
    jobs: Option<usize>,
    on_done: &(dyn Fn(usize, &RunResult) + Sync),
) -> Result<SuiteResult, SimError> {
    let per_workload = policies.len() * seeds.len();
    let work: Vec<(usize, usize, u64)> = (0..bases.len())
        .flat_map(|w| (0..policies.len()).flat_map(move |p| seeds.iter().map(move |&s| (w, p, s))))
        .collect();
    let runs = run_all(work.len(), jobs, |i| {
        let (w, p, seed) = work[i];
        let r = run_one(&bases[w], &policies[p], seed)?;
        on_done(w, &r);
        Ok(r)
    })?;
    let mut compares = Vec::with_capacity(bases.len());
    let mut rest = runs.into_iter();
    for base in bases {
        let chunk: Vec<RunResult> = rest.by_ref().take(per_workload).collect();
        compares.push(summarise(base, policies, seeds, chunk));
    }
    let overrides = bases
        .first()
        .map(|b| b.overrides.clone())
        .unwrap_or_default();
    Ok(SuiteResult::from_compares(
        name,
        description,
        overrides,
        compares,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::Stats;

    #[test]
    fn geomean_rule() {
        assert!((geomean(&[1.0, 4.0]) - 2.0).abs() < 1e-12);
        assert!((geomean(&[2.0, 8.0, 4.0]) - 4.0).abs() < 1e-12);
        assert!((geomean(&[3.0]) - 3.0).abs() < 1e-12);
        // Any zero makes it zero: no floor.
        assert_eq!(geomean(&[0.0, 1e6, 5.0]), 0.0);
        assert_eq!(geomean(&[0.0, 0.0]), 0.0);
        for bad in [&[][..], &[-1.0, 2.0], &[f64::NAN, 1.0], &[f64::INFINITY]] {
            assert!(geomean(bad).is_nan(), "{bad:?}");
        }
        assert_eq!(ratio(3.0, 2.0), Some(1.5));
        assert_eq!(ratio(0.0, 2.0), Some(0.0));
        assert_eq!(ratio(3.0, 0.0), None);
        assert_eq!(ratio(0.0, 0.0), None);
        assert_eq!(ratio(f64::NAN, 1.0), None);
    }

    fn runs(mean: f64, cv: f64, migrated: f64) -> PolicyRuns {
        let mut metrics = BTreeMap::new();
        metrics.insert("local_access_ratio".to_string(), 0.5);
        metrics.insert("numa_hint_faults_per_s".to_string(), migrated * 2.0);
        metrics.insert("numa_pages_migrated".to_string(), migrated);
        metrics.insert("thread_migrations_internode_per_s".to_string(), 1.0);
        let mut runtime_s = Stats::of(&[mean]);
        runtime_s.cv = Some(cv);
        PolicyRuns {
            runtime_s,
            metrics,
            runs: Vec::new(),
        }
    }

    fn cmp(workload: &str, policies: &[(&str, PolicyRuns)]) -> CompareResult {
        CompareResult {
            numabal_version: "x".into(),
            machine: "m".into(),
            workload: workload.into(),
            seeds: vec![1, 2],
            policy_order: policies.iter().map(|(n, _)| n.to_string()).collect(),
            policies: policies
                .iter()
                .map(|(n, p)| (n.to_string(), p.clone()))
                .collect(),
        }
    }

    /// Geometric means over workloads and their ratio to the first policy, including the
    /// zero rule: `none` migrates nothing, so its mean is 0 and ratios to it are undefined.
    #[test]
    fn geomean_and_ratio_columns() {
        let r = SuiteResult::from_compares(
            "s",
            "d",
            vec!["sim.tick_ms=1".into()],
            vec![
                cmp(
                    "a",
                    &[
                        ("none", runs(10.0, 0.02, 0.0)),
                        ("auto", runs(5.0, 0.04, 100.0)),
                    ],
                ),
                cmp(
                    "b",
                    &[
                        ("none", runs(40.0, 0.08, 0.0)),
                        ("auto", runs(80.0, 0.01, 400.0)),
                    ],
                ),
                // The same workload twice keeps both.
                cmp(
                    "a",
                    &[
                        ("none", runs(1.0, 0.01, 0.0)),
                        ("auto", runs(1.0, 0.0, 1.0)),
                    ],
                ),
            ],
        );
        assert_eq!(r.workload_order, ["a", "b", "a#2"]);
        assert_eq!(r.policy_order, ["none", "auto"]);
        let g = |p: &str, k: &str| r.geomean[p][k].clone();
        // none: (10 * 40 * 1)^(1/3); auto: (5 * 80 * 1)^(1/3): equal, ratio 1.
        let rt = g("none", "runtime_s");
        assert!((rt.value.unwrap() - 400f64.powf(1.0 / 3.0)).abs() < 1e-9);
        assert_eq!(rt.ratio, Some(1.0));
        assert!((g("auto", "runtime_s").ratio.unwrap() - 1.0).abs() < 1e-12);
        // CV: none (0.02 * 0.08 * 0.01)^(1/3) = 0.02 * 0.4^(1/3); auto has a 0: 0, ratio 0.
        let cv = g("none", "runtime_cv");
        assert!((cv.value.unwrap() - (0.02f64 * 0.08 * 0.01).powf(1.0 / 3.0)).abs() < 1e-12);
        let acv = g("auto", "runtime_cv");
        assert_eq!((acv.value, acv.ratio, acv.zeros), (Some(0.0), Some(0.0), 1));
        // Pages migrated: none is 0 everywhere, so no ratio; auto's is (100*400*1)^(1/3).
        let nm = g("none", "numa_pages_migrated");
        assert_eq!((nm.value, nm.ratio, nm.zeros), (Some(0.0), None, 3));
        let am = g("auto", "numa_pages_migrated");
        assert!((am.value.unwrap() - 40000f64.powf(1.0 / 3.0)).abs() < 1e-9);
        assert_eq!((am.ratio, am.zeros), (None, 0));
        assert_eq!(g("auto", "local_access_ratio").ratio, Some(1.0));
        assert_eq!(r.geomean["auto"].len(), GEOMEAN_METRICS.len());
        // JSON: an undefined ratio is null.
        let v = serde_json::to_value(&r).unwrap();
        assert!(v["geomean"]["auto"]["numa_pages_migrated"]["ratio"].is_null());
        assert_eq!(v["geomean"]["none"]["runtime_s"]["ratio"], 1.0);
    }

    /// One seed is not a distribution: a CV of single runs is undefined, and so is its
    /// geometric mean and ratio (null), where a 0 would claim runs that never vary.
    #[test]
    fn single_runs_have_no_spread() {
        let one = |mean: f64| PolicyRuns {
            runtime_s: Stats::of(&[mean]),
            metrics: BTreeMap::new(),
            runs: Vec::new(),
        };
        let r = SuiteResult::from_compares(
            "s",
            "d",
            Vec::new(),
            vec![cmp("a", &[("none", one(10.0)), ("auto", one(5.0))])],
        );
        for p in ["none", "auto"] {
            for k in ["runtime_cv", "runtime_nmmd"] {
                let g = &r.geomean[p][k];
                assert_eq!((g.value, g.ratio, g.zeros), (None, None, 0), "{p} {k}");
            }
        }
        let rt = r.geomean["auto"]["runtime_s"].ratio.unwrap();
        assert!((rt - 0.5).abs() < 1e-12, "{rt}");
        let v = serde_json::to_value(&r).unwrap();
        assert!(v["geomean"]["auto"]["runtime_cv"]["value"].is_null());
        assert!(v["workloads"]["a"]["policies"]["auto"]["runtime_s"]["cv"].is_null());
    }
}
