//! Which Linux release the `autonuma` model follows (`policy.kernel`) and the scan rules
//! each release has: `numabal_model::kernel_version`, where a daemon's simulated host
//! (`[daemon] kernel`) names its release too.

pub use numabal_model::kernel_version::{ALLOWED, KernelVersion};
