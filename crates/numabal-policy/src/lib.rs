//! numabal-policy: the policy core.
//!
//! ```text
//!        backend (simulator | live daemon)                policy core (this crate)
//!   ┌──────────────────────────────────────┐        ┌──────────────────────────────┐
//!   │ mechanism: scan, fault, migrate,     │ events │ Policy::on_process_start     │
//!   │ schedule, allocate                   ├───────►│ Policy::on_thread_start      │
//!   │                                      │        │ Policy::on_tick(Observation) │
//!   │                                      │        │ Policy::can_migrate_task     │
//!   │ executes Actions                     │◄───────┤  -> Vec<Action>              │
//!   └──────────────────────────────────────┘        └──────────────────────────────┘
//! ```
//!
//! Like quinn-proto, the core has no I/O, no clock and no threads: callers pass the time
//! and what they observed, and carry out the returned actions. Mechanism (how pages move,
//! how threads are scheduled) lives in the backends; policy (what should move where) here.

pub mod api;
pub mod home;
pub mod numad;
pub mod stable;
pub mod static_policies;
mod util;

pub use api::{
    AccessSample, Action, GroupInfo, MigrateVerdict, NodeObs, Observation, Policy, ProcessInfo,
    ProcessObs, RegionInfo, ThreadInfo, ThreadObs,
};
