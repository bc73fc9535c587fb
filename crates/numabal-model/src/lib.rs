//! numabal-model: the vocabulary every other crate speaks.
//!
//! ```text
//!   presets/*.toml ──► spec (serde, deny_unknown_fields) ──► validate() ──► resolved model
//!                        MachineSpec                                         Machine
//!                        WorkloadSpec                                        Workload
//!                        PolicySpec (kind + tunables table)                  PolicySpec
//! ```
//!
//! Nothing here reads a clock, starts a thread or touches the file system: loading takes
//! strings plus a label naming where they came from, so errors can say "file, field,
//! allowed values" without this crate knowing about files.

pub mod daemon;
pub mod damos;
pub mod error;
pub mod ids;
pub mod kernel_version;
pub mod machine;
pub mod mask;
pub mod mempolicy;
pub mod presets;
pub mod scenario;
pub mod suite;
pub mod tiers;
pub mod units;
pub mod workload;

pub use daemon::{DaemonSettings, SensorKind};
pub use error::InputError;
pub use ids::{CpuId, NodeId, Pid, Tid};
pub use kernel_version::KernelVersion;
pub use machine::{Machine, MachineSpec};
pub use mask::Mask;
pub use mempolicy::MemPolicy;
pub use scenario::{Scenario, ScenarioInput, SimSettings};
pub use suite::SuiteSpec;
pub use workload::{Workload, WorkloadSpec};

/// Size of a base page (x86-64).
pub const PAGE_SIZE: u64 = 4096;
/// Base pages in a PMD-mapped transparent huge page.
pub const HPAGE_PMD_NR: u64 = 512;
/// The kernel's `LOCAL_DISTANCE` in the SLIT.
pub const LOCAL_DISTANCE: u32 = 10;
