//! numabal-sim: the simulator backend.
//!
//! ```text
//!   Scenario ──► engine::Sim ──┬─ event::EventQueue   (time, kind, seq) total order
//!                              ├─ sched::Sched        CFS-like runqueues, domains, balancing
//!                              ├─ memory::MemObject   node of every page, chunk summaries
//!                              ├─ cost::CostModel     latency/bandwidth fixed point
//!                              └─ Box<dyn Policy>     the shared policy core
//!            ──► result::RunResult (JSON contract)
//! ```
//!
//! Mechanism lives here; policy decisions come from `numabal-policy`. A run is a pure
//! function of the scenario (including its seed): no clock, no threads, no hash-map
//! iteration on any path that reaches the output.

pub mod autonuma;
pub mod compare;
pub mod cost;
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
pub use engine::{RunProgress, SimError, run, run_in, run_observed, run_with};
pub use result::RunResult;
pub use suite::{SuiteResult, suite};
