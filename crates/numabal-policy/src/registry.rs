//! Policies by name, with their tunables.

use crate::api::Policy;
use crate::numad::{Numad, Tunables as NumadTunables};
use crate::static_policies::{Bind, Interleave, NoPolicy};
use numabal_model::InputError;
use numabal_model::scenario::PolicySpec;

/// A policy `numabal list` shows.
#[derive(Debug, Clone, Copy)]
pub struct PolicyInfo {
    /// Name.
    pub name: &'static str,
    /// One line.
    pub summary: &'static str,
}

/// Every policy.
pub const POLICIES: &[PolicyInfo] = &[
    PolicyInfo {
        name: "none",
        summary: "Linux without NUMA balancing: first touch plus the CFS scheduler",
    },
    PolicyInfo {
        name: "bind",
        summary: "HARD_BIND: each process (or per-node block of a spread group) bound to its own nodes, CPUs and memory",
    },
    PolicyInfo {
        name: "reverse-bind",
        summary: "INVERSE_BIND: CPUs as in bind, memory on the mirror nodes (worst case)",
    },
    PolicyInfo {
        name: "interleave",
        summary: "numactl --interleave=all: memory round robin over the allowed nodes",
    },
    PolicyInfo {
        name: "numad",
        summary: "numad 20150602 (RHEL 6/7): whole processes bound to the nodes with the most free CPU and memory, sched_setaffinity + migrate_pages; options u, m, i, t, K",
    },
];

/// Build a policy from its spec; unknown names or tunables are input errors.
pub fn build(spec: &PolicySpec) -> Result<Box<dyn Policy>, InputError> {
    let no_tunables = |name: &str| -> Result<(), InputError> {
        match spec.tunables.keys().next() {
            None => Ok(()),
            Some(k) => Err(InputError::new(
                &spec.label,
                format!("policy.{k}"),
                format!("unknown tunable: policy `{name}` has no tunables"),
            )),
        }
    };
    match spec.kind.as_str() {
        "none" => {
            no_tunables("none")?;
            Ok(Box::new(NoPolicy))
        }
        "bind" => {
            no_tunables("bind")?;
            Ok(Box::new(Bind::new(false)))
        }
        "reverse-bind" => {
            no_tunables("reverse-bind")?;
            Ok(Box::new(Bind::new(true)))
        }
        "interleave" => {
            no_tunables("interleave")?;
            Ok(Box::new(Interleave))
        }
        "numad" => Ok(Box::new(Numad::new(NumadTunables::from_spec(spec)?))),
        other => {
            let names: Vec<&str> = POLICIES.iter().map(|p| p.name).collect();
            Err(InputError::new(
                &spec.label,
                "policy",
                format!(
                    "unknown policy `{other}` (allowed: {}, or a path to a TOML file)",
                    names.join(", ")
                ),
            ))
        }
    }
}

/// Policies the live daemon runs (and `numabal sim --trace` replays), by name.
pub const LIVE_POLICIES: &[&str] = &["stable", "numad"];

/// Build a policy for the live daemon: `stable` on a sensor's samples
/// ([`crate::stable::StableSampled`]) or `numad`; other names are input errors.
pub fn build_live(spec: &PolicySpec) -> Result<Box<dyn Policy>, InputError> {
    match spec.kind.as_str() {
        "stable" => {
            let mut t = crate::stable::Tunables::from_spec(spec)?;
            // Live, the daemon keeps each node within its CPUs itself (StableSampled's
            // capacity rule and gather step); the core's rebalance, which stands in for the
            // kernel's load balancer in the simulator, would spread the threads it gathers.
            if !spec.tunables.contains_key("rebalance") {
                t.rebalance = false;
            }
            Ok(Box::new(crate::stable::StableSampled::new(t)))
        }
        "numad" => build(spec),
        other => Err(InputError::new(
            &spec.label,
            "policy",
            format!(
                "`{other}` does not run live (allowed: {})",
                LIVE_POLICIES.join(", ")
            ),
        )),
    }
}
