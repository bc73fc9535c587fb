//! numabal-daemon: the placement daemon's own rules, one copy for the two hosts it runs
//! on — a real Linux host (`numabal-live`) and a simulated one (`numabal-sim`'s
//! `userspace/`). The policy core decides *what* to do; these rules say *how the daemon
//! goes about it*: when passes come, which processes it may touch, which sensor it uses
//! and how often softdirty clears, how fast pages may move, how samples become the
//! policy's `AccessSample`s, and the decision log's lines.
//!
//! ```text
//!   backend (live: /proc, perf, syscalls; sim: the world's methods)
//!     │ facts: processes, limits, raw samples, page nodes, the clock
//!     ▼
//!   judge ─► managed set      sensor ─► chosen sensor    resolve ─► AccessSample
//!   pacing ─► next pass, next softdirty clear          budget ─► pages that may move
//!     │                                                        │
//!     ▼                                                        ▼
//!   policy.on_tick (numabal-policy) ─► actions ─► backend executes ─► log lines (log.rs)
//! ```
//!
//! Pure like the policy core: no clock (times come from the caller), no I/O, no threads.

pub mod budget;
pub mod damon;
pub mod judge;
pub mod log;
pub mod pacing;
pub mod roster;
pub mod samples;
pub mod sensor;

pub use budget::RateLimit;
pub use judge::{Candidate, Rules, Skip, check};
pub use log::Counts;
pub use numabal_model::daemon::{DaemonSettings, MIN_INTERVAL_MS, SensorKind};
pub use roster::Roster;
pub use samples::{RawSample, resolve};

/// Nanoseconds in a millisecond.
pub const MS: u64 = 1_000_000;
