//! Every policy a run can name: the kernel models the simulator runs itself (`autonuma`,
//! `autonuma-2012`) and the policies of the shared core (`numabal-policy`).

use crate::autonuma::tunables::{Flavour, Tunables};
use numabal_model::InputError;
use numabal_model::scenario::PolicySpec;
use numabal_policy::{POLICIES as CORE, Policy, PolicyInfo};

/// The kernel models.
pub const KERNEL: &[PolicyInfo] = &[
    PolicyInfo {
        name: "autonuma",
        summary: "Linux 6.x automatic NUMA balancing (task_numa_work, hinting faults, sched/numa); options cpuset_skip, vma_pid_filter, scan_window",
    },
    PolicyInfo {
        name: "stable",
        summary: "Stable-NUMA (IEEE Access 2021): page states, bypass-counter profiling, two-level thread clustering with node-local load balancing",
    },
    PolicyInfo {
        name: "autonuma-2012",
        summary: "the original AutoNUMA (Arcangeli 2012): knuma_scand, last_nid filter, knuma_migratedN, CPU follows memory (sched_autonuma_balance)",
    },
];

/// Every policy, kernel models first.
pub fn all() -> Vec<PolicyInfo> {
    KERNEL.iter().chain(CORE.iter()).copied().collect()
}

/// A policy ready to run.
pub enum Built {
    /// A policy of the shared core.
    Core(Box<dyn Policy>),
    /// A kernel model with its tunables.
    Kernel(Flavour, Tunables),
    /// Stable-NUMA: the shared core's `StableNuma` with the simulator's mechanism.
    Stable(numabal_policy::stable::Tunables),
}

/// A policy's tunables as the run used them, defaults included where the policy has a
/// tunables type (the kernel models, stable, numad); the given keys otherwise.
pub fn tunables_json(spec: &PolicySpec) -> Result<serde_json::Value, InputError> {
    let v = match spec.kind.as_str() {
        "autonuma" => serde_json::to_value(Tunables::from_spec(spec, Flavour::Linux6)?),
        "autonuma-2012" => serde_json::to_value(Tunables::from_spec(spec, Flavour::AutoNuma2012)?),
        "stable" => serde_json::to_value(numabal_policy::stable::Tunables::from_spec(spec)?),
        "numad" => serde_json::to_value(numabal_policy::numad::Tunables::from_spec(spec)?),
        _ => serde_json::to_value(&spec.tunables),
    };
    v.map_err(|e| InputError::new(&spec.label, "policy", e.to_string()))
}

/// Build (and so validate) a policy spec.
pub fn build(spec: &PolicySpec) -> Result<Built, InputError> {
    let flavour = match spec.kind.as_str() {
        "autonuma" => Some(Flavour::Linux6),
        "autonuma-2012" => Some(Flavour::AutoNuma2012),
        _ => None,
    };
    if let Some(f) = flavour {
        return Ok(Built::Kernel(f, Tunables::from_spec(spec, f)?));
    }
    if spec.kind == "stable" {
        return Ok(Built::Stable(numabal_policy::stable::Tunables::from_spec(
            spec,
        )?));
    }
    if !CORE.iter().any(|p| p.name == spec.kind) {
        let names: Vec<&str> = all().iter().map(|p| p.name).collect();
        return Err(InputError::new(
            &spec.label,
            "policy",
            format!(
                "unknown policy `{}` (allowed: {}, or a path to a TOML file)",
                spec.kind,
                names.join(", ")
            ),
        ));
    }
    numabal_policy::build(spec).map(Built::Core)
}
