//! `[[damos]]` in a workload: DAMOS schemes the experiment itself runs beside the policy
//! under test, each on one node's physical addresses (as SeongJae Park's evaluation of
//! self-tuned DAMON tiering injects churn: hot pages pushed down a tier, cold ones pulled
//! up, once a minute). The simulator runs them whatever the policy.

use crate::InputError;
use crate::units::Bytes;
use serde::{Deserialize, Serialize};

/// A scheme's action.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DamosAction {
    /// `migrate_hot`: regions with any access, hottest first.
    MigrateHot,
    /// `migrate_cold`: regions with no access, coldest first.
    MigrateCold,
}

/// One `[[damos]]` scheme.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DamosSpec {
    /// `migrate_hot` or `migrate_cold`.
    pub action: DamosAction,
    /// The node whose physical addresses the context monitors.
    pub node: usize,
    /// `target_nid`: where its pages go.
    pub target: usize,
    /// The quota: at most this much per `reset_s`.
    pub quota: Bytes,
    /// The quota's `reset_interval`, seconds.
    #[serde(default = "one")]
    pub reset_s: f64,
    /// Sampling interval, ms.
    #[serde(default = "five")]
    pub sample_ms: f64,
    /// Aggregation interval, ms.
    #[serde(default = "hundred")]
    pub aggr_ms: f64,
    /// Apply interval, s (0: every aggregation).
    #[serde(default)]
    pub apply_s: f64,
}

fn one() -> f64 {
    1.0
}
fn five() -> f64 {
    5.0
}
fn hundred() -> f64 {
    100.0
}

impl DamosSpec {
    /// Checked against a machine of `nr_nodes` nodes; `i` is its place in the list.
    pub fn check(&self, i: usize, nr_nodes: usize, src: &str) -> Result<(), InputError> {
        let field = |k: &str| format!("damos[{i}].{k}");
        for (k, n) in [("node", self.node), ("target", self.target)] {
            if n >= nr_nodes {
                return Err(InputError::new(
                    src,
                    field(k),
                    format!(
                        "node {n} does not exist (the machine has nodes 0-{})",
                        nr_nodes - 1
                    ),
                ));
            }
        }
        if self.node == self.target {
            return Err(InputError::new(
                src,
                field("target"),
                "is the monitored node itself (allowed: any other node)",
            ));
        }
        let positive = [
            ("quota", self.quota.0 as f64),
            ("reset_s", self.reset_s),
            ("sample_ms", self.sample_ms),
            ("aggr_ms", self.aggr_ms),
        ];
        for (k, v) in positive {
            if !(v > 0.0 && v.is_finite()) {
                return Err(InputError::new(src, field(k), "must be more than 0"));
            }
        }
        if self.aggr_ms < self.sample_ms {
            return Err(InputError::new(
                src,
                field("aggr_ms"),
                "must be at least sample_ms",
            ));
        }
        if !(self.apply_s >= 0.0 && self.apply_s.is_finite()) {
            return Err(InputError::new(
                src,
                field("apply_s"),
                "must be 0 (every aggregation) or more",
            ));
        }
        Ok(())
    }
}
