//! The kernel's automatic NUMA balancing: the pure parts (arithmetic and decision rules
//! with the kernel's names and integer rounding), tested against values worked out by hand
//! from the research notes. The kernel model drives them (`kernel/linux6/`).
//!
//! ```text
//!  task_tick_numa ─► task_numa_work ─► change_prot_numa (PROT_NONE)      kernel/linux6/
//!        │ (own CPU time, numa_next_scan)    │ vma.rs: skip rules, PID filter
//!        ▼                                    ▼
//!  hinting fault ─► filter.rs: should_numa_migrate_memory ─► migrate the page
//!        │
//!        ▼
//!  task_numa_fault ─► task.rs: buffers, groups ─► task_numa_placement (once per pass)
//!        │                                   └─► period.rs: update_task_scan_period
//!        ▼
//!  numa_migrate_preferred ─► task_numa_migrate (move / swap)            kernel/linux6/
//!
//!  tiering mode (numa_balancing bit 2): a fault on a slow-tier page ─► promote.rs
//! ```

pub mod aa2012;
pub mod filter;
pub mod period;
pub mod promote;
pub mod task;
pub mod tunables;
pub mod version;
pub mod vma;
