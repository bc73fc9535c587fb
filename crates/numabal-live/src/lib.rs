//! numabal-live: the live backend, the second face of numabal beside the simulator.
//!
//! ```text
//!   root (/ on a host, a fixture tree in tests)
//!     sys/devices/system/node/nodeN/{cpulist,meminfo,distance}   ─┐
//!     sys/devices/system/cpu/cpuN/topology/*, cache/index*/*      ─┴─► topology::read
//!     proc/PID/{stat,status,cmdline,numa_maps}, task/TID/stat     ───► procfs::read_process
//!     all of it + proc/stat (idle per CPU)                         ───► observe: the policy
//!                                                                        core's Observation
//!     observations over time                                       ───► record: JSON lines
//!     sys/kernel/mm/damon/admin (written and read)                 ───► damon: hot regions
//! ```
//!
//! Every reader takes the root path, so tests parse fixture trees (as Meta's `below`
//! does). Errors name the file and what was wrong with it.

pub mod actuate;
pub mod daemon;
pub mod damon;
#[cfg(test)]
mod fuzz;
pub mod machine;
pub mod observe;
pub mod procfs;
pub mod record;
pub mod safety;
pub mod sensor;
pub mod state;
pub mod sys;
pub mod topology;

pub use machine::machine_of;
pub use observe::{Snapshot, observe};
pub use procfs::{NumaMaps, Process, Stat, parse_numa_maps, parse_stat, pids, read_process};
pub use topology::{LiveCpu, LiveError, LiveNode, LiveTopology, read_topology};
