//! The kernel models: each is the simulated kernel's NUMA balancing mechanism, in its own
//! module with its own tunables, driven by the engine through [`KernelHooks`] and acting
//! on the world only through the world's methods.
//!
//! ```text
//!   KernelModel (name, metrics, report)
//!     └─ KernelHooks (process/task start and exit, ticks, hinting faults,
//!                     migration permission)            ── world/kernel_model.rs
//!   implementations:
//!     NoBalancing       no kernel balancing (`numa_balancing=0`)
//!     linux6::Linux6    Linux 6.x NUMA balancing (`autonuma`)
//!     aa2012::AutoNuma2012  the original AutoNUMA (`autonuma-2012`)
//!     stable::StableNumaKernel  Stable-NUMA's kernel mechanism (`stable`)
//! ```

pub mod aa2012;
pub mod damos;
#[cfg(test)]
mod fault_counter;
pub mod kthread;
pub mod linux6;
pub mod stable;

use crate::world::records::{Metrics, SchedNuma};
use crate::world::{KernelHooks, World};
use serde::{Deserialize, Serialize};

/// A kernel model as the engine sees it: the hooks of a run, and what it reports.
pub trait KernelModel: KernelHooks {
    /// The name the run's result gives the policy when the model is the run's policy
    /// (`None`: no kernel balancing; the user-space policy's name is used).
    fn name(&self) -> Option<&'static str> {
        None
    }
    /// The model's share of the run-level metrics (scan CPU time).
    fn metrics(&self, _m: &mut Metrics) {}
    /// The model's sections of the result.
    fn report(&self, _w: &World) -> KernelReport {
        KernelReport::default()
    }
    /// Task `t`'s `/proc/PID/sched` NUMA fields (`None`: the model keeps none).
    fn sched_numa(&self, _w: &World, _t: usize) -> Option<SchedNuma> {
        None
    }
}

/// What kernel models add to a run's result.
#[derive(Debug, Default)]
pub struct KernelReport {
    /// `numa_balancing`: the Linux models' counters and trace.
    pub numa_balancing: Option<NumaBalancingReport>,
    /// `stable`: Stable-NUMA's counters.
    pub stable: Option<stable::StableReport>,
}

/// No kernel NUMA balancing (`numa_balancing=0`): first touch and the scheduler alone.
pub struct NoBalancing;

impl KernelHooks for NoBalancing {}
impl KernelModel for NoBalancing {}

/// What the kernel model reports beyond `/proc/vmstat`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NumaBalancingReport {
    /// Counters (scans, skips by reason, groups, stick events).
    pub stats: linux6::NumabStats,
    /// Tracepoint-like events (with `policy.trace = true`), at most 100000.
    pub trace: Vec<kthread::TraceEvent>,
    /// `autonuma-2012`: knuma_scand/knuma_migrated counters, `mm_autonuma` and
    /// `task_autonuma` at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autonuma_2012: Option<aa2012::Aa2012Report>,
}
