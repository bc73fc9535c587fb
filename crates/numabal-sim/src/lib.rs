//! numabal-sim: the simulator backend.
//!
//! ```text
//!   Scenario ──► registry ──► engine::Sim ──┬─ world::World   processes, threads, pages
//!                                          │    (event::EventQueue, sched::Sched,
//!                                          │     memory::MemObject, cost::CostModel)
//!                                          ├─ kernel::KernelModel   Linux 6.x, AutoNUMA
//!                                          │                        2012, Stable-NUMA, none
//!                                          └─ userspace::UserSpace  the shared policy core
//!            ──► result::RunResult (JSON contract)
//! ```
//!
//! Mechanism lives here; policy decisions come from `numabal-policy`. A run is a pure
//! function of the scenario (including its seed): no clock, no threads, no hash-map
//! iteration on any path that reaches the output.

pub mod autonuma;
pub mod compare;
pub mod cost;
mod damon_core;
pub mod engine;
pub mod error;
pub mod event;
pub mod kernel;
pub mod memory;
pub mod registry;
pub mod result;
pub mod sched;
pub mod series;
pub mod suite;
pub mod userspace;
pub mod world;

pub use compare::{CompareResult, compare, compare_observed};
pub use engine::{
    EngineCounts, RunProgress, SimError, run, run_counted, run_in, run_observed, run_with,
};
pub use result::RunResult;
pub use suite::{SuiteResult, suite};
