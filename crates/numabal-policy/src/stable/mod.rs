//! `stable`: Stable-NUMA (seed 002, §IV), the policy core. Pure: no clock, no I/O, no
//! threads; the backend that runs it (simulator or daemon) owns the mechanism.

pub mod bypass;
pub mod cluster;
pub mod page_state;
pub mod shared;
pub mod tables;
pub mod tunables;

pub use bypass::{BYPASS_MAX, Bypass};
pub use cluster::{
    Candidate, ClusterDecision, ClusterOutcome, ClusterParams, SlotView, VictimCheck, Why,
};
pub use page_state::{
    Class, Edge, FaultType, PageRecord, PageState, Placement, Transition, on_fault,
};
pub use shared::{SharedCounts, SharedMove, shared_balance};
pub use tables::{EMA_FACTOR, ThreadTables};
pub use tunables::{EmaStart, Tunables};
