//! Many runs: every policy over several seeds, in parallel. The result does not depend on
//! how many threads ran it: runs are independent and collected in input order.

use crate::engine::{SimError, run};
use crate::result::RunResult;
use numabal_model::Scenario;
use numabal_model::scenario::PolicySpec;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Summary statistics of one quantity over runs. A spread needs at least two runs: with
/// one, CV, NMMD and the quartiles are undefined (`None`, `null` in JSON, `-` in tables),
/// and so are CV and NMMD when the mean is 0.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Stats {
    /// Mean.
    pub mean: f64,
    /// Coefficient of variation: sample standard deviation over the mean.
    pub cv: Option<f64>,
    /// Minimum.
    pub min: f64,
    /// Maximum.
    pub max: f64,
    /// Normalised max-min difference, (max - min) / mean (Stable-NUMA's NMMD).
    pub nmmd: Option<f64>,
    /// First quartile (linear interpolation between order statistics, as numpy's default
    /// and the paper's box plots).
    pub q1: Option<f64>,
    /// Median.
    pub median: f64,
    /// Third quartile.
    pub q3: Option<f64>,
}

impl Stats {
    /// Statistics of `xs` (empty input gives zeros and no spread).
    pub fn of(xs: &[f64]) -> Stats {
        if xs.is_empty() {
            return Stats {
                mean: 0.0,
                cv: None,
                min: 0.0,
                max: 0.0,
                nmmd: None,
                q1: None,
                median: 0.0,
                q3: None,
            };
        }
        let mut sorted = xs.to_vec();
        sorted.sort_by(f64::total_cmp);
        let quantile = |q: f64| {
            let h = q * (sorted.len() - 1) as f64;
            let lo = h.floor() as usize;
            let hi = (lo + 1).min(sorted.len() - 1);
            sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
        };
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let spread = xs.len() > 1;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let rel = |x: f64| (spread && mean != 0.0).then(|| x / mean);
        Stats {
            mean,
            cv: rel(var.sqrt()),
            min,
            max,
            nmmd: rel(max - min),
            q1: spread.then(|| quantile(0.25)),
            median: quantile(0.5),
            q3: spread.then(|| quantile(0.75)),
        }
    }
}

/// One policy's runs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PolicyRuns {
    /// Runtime statistics.
    pub runtime_s: Stats,
    /// Mean of every run metric.
    pub metrics: BTreeMap<String, f64>,
    /// The runs, in seed order.
    pub runs: Vec<RunResult>,
}

/// The result of `numabal compare`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CompareResult {
    /// numabal version.
    pub numabal_version: String,
    /// Machine name.
    pub machine: String,
    /// Workload name.
    pub workload: String,
    /// Seeds used.
    pub seeds: Vec<u64>,
    /// Policies in the order given.
    pub policy_order: Vec<String>,
    /// Per policy.
    pub policies: BTreeMap<String, PolicyRuns>,
}

/// Run every policy with every seed. `jobs` limits parallelism (None: all cores).
pub fn compare(
    base: &Scenario,
    policies: &[PolicySpec],
    seeds: &[u64],
    jobs: Option<usize>,
) -> Result<CompareResult, SimError> {
    compare_observed(base, policies, seeds, jobs, &|_| {})
}

/// `compare`, calling `on_done(run)` as each run completes, from the worker thread that
/// ran it, in no particular order (for progress reports; the result does not depend on it).
pub fn compare_observed(
    base: &Scenario,
    policies: &[PolicySpec],
    seeds: &[u64],
    jobs: Option<usize>,
    on_done: &(dyn Fn(&RunResult) + Sync),
) -> Result<CompareResult, SimError> {
    let work: Vec<(usize, u64)> = (0..policies.len())
        .flat_map(|p| seeds.iter().map(move |&s| (p, s)))
        .collect();
    let runs = run_all(work.len(), jobs, |i| {
        let (p, seed) = work[i];
        let r = run_one(base, &policies[p], seed)?;
        on_done(&r);
        Ok(r)
    })?;
    Ok(summarise(base, policies, seeds, runs))
}

/// One run of `base` under `policy` with `seed`.
pub(crate) fn run_one(
    base: &Scenario,
    policy: &PolicySpec,
    seed: u64,
) -> Result<RunResult, SimError> {
    let mut sc = base.clone();
    sc.policy = policy.clone();
    sc.sim.seed = seed;
    run(&sc)
}

/// Runs `one(0)`, ..., `one(n - 1)`, in parallel unless `jobs` is 1, and returns their
/// results in index order (so the output does not depend on the number of threads). All
/// runs are made; the first error in index order is returned.
pub(crate) fn run_all<F>(n: usize, jobs: Option<usize>, one: F) -> Result<Vec<RunResult>, SimError>
where
    F: Fn(usize) -> Result<RunResult, SimError> + Sync + Send,
{
    let idx: Vec<usize> = (0..n).collect();
    let results: Vec<Result<RunResult, SimError>> = match jobs {
        Some(1) => idx.iter().map(|&i| one(i)).collect(),
        Some(t) => rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build()
            .map_err(|e| SimError::Invariant(format!("cannot start {t} worker threads: {e}")))?
            .install(|| idx.par_iter().map(|&i| one(i)).collect()),
        None => idx.par_iter().map(|&i| one(i)).collect(),
    };
    results.into_iter().collect()
}

/// The comparison of `runs`: policy-major, `seeds.len()` runs per policy in seed order.
pub(crate) fn summarise(
    base: &Scenario,
    policies: &[PolicySpec],
    seeds: &[u64],
    runs: Vec<RunResult>,
) -> CompareResult {
    let mut out = BTreeMap::new();
    let mut order = Vec::new();
    for (pi, chunk) in runs.chunks(seeds.len().max(1)).enumerate() {
        let name = chunk
            .first()
            .map(|r| r.scenario.policy.clone())
            .unwrap_or_else(|| policies[pi].kind.clone());
        let runtimes: Vec<f64> = chunk.iter().map(|r| r.metrics.runtime_s).collect();
        let mut sums: BTreeMap<String, f64> = BTreeMap::new();
        for r in chunk {
            if let Ok(serde_json::Value::Object(map)) = serde_json::to_value(&r.metrics) {
                for (k, v) in map {
                    if let Some(x) = v.as_f64() {
                        *sums.entry(k).or_insert(0.0) += x;
                    }
                }
            }
        }
        let n = chunk.len().max(1) as f64;
        let metrics = sums.into_iter().map(|(k, v)| (k, v / n)).collect();
        // The same policy given twice gets a suffix so neither is lost.
        let mut key = name.clone();
        let mut k = 2;
        while out.contains_key(&key) {
            key = format!("{name}#{k}");
            k += 1;
        }
        order.push(key.clone());
        out.insert(
            key,
            PolicyRuns {
                runtime_s: Stats::of(&runtimes),
                metrics,
                runs: chunk.to_vec(),
            },
        );
    }
    CompareResult {
        numabal_version: env!("CARGO_PKG_VERSION").to_string(),
        machine: base.machine.name().to_string(),
        workload: base.workload.name().to_string(),
        seeds: seeds.to_vec(),
        policy_order: order,
        policies: out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats() {
        let s = Stats::of(&[1.0, 2.0, 3.0]);
        assert_eq!(s.mean, 2.0);
        assert!((s.cv.unwrap() - 0.5).abs() < 1e-12);
        assert_eq!((s.min, s.max), (1.0, 3.0));
        assert!((s.nmmd.unwrap() - 1.0).abs() < 1e-12);
        let one = Stats::of(&[5.0]);
        assert_eq!((one.cv, one.nmmd, one.q1, one.q3), (None, None, None, None));
        assert_eq!(
            (one.mean, one.median, one.min, one.max),
            (5.0, 5.0, 5.0, 5.0)
        );
        assert_eq!(Stats::of(&[0.0, 0.0]).cv, None, "CV of a mean of 0");
        // Quartiles by linear interpolation: positions 0.75, 1.5, 2.25 of 0..3.
        let s = Stats::of(&[4.0, 1.0, 3.0, 2.0]);
        assert_eq!((s.q1, s.median, s.q3), (Some(1.75), 2.5, Some(3.25)));
    }
}
