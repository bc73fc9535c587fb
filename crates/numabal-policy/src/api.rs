//! The interface between a backend and a policy.

use numabal_model::workload::Placement;
use numabal_model::{Machine, Mask, MemPolicy, Pid, Tid};

/// A thread group of a starting process, as the workload declares it.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupInfo {
    /// Group name.
    pub name: String,
    /// Number of threads.
    pub threads: u32,
    /// Placement hint for static binding.
    pub placement: Placement,
}

/// A mapping of a starting process.
#[derive(Debug, Clone, PartialEq)]
pub struct RegionInfo {
    /// Region name.
    pub name: String,
    /// Size in base pages.
    pub pages: u64,
    /// The group whose threads each access their own slice of the region
    /// (`slice = "thread"`), if any: thread i of n owns pages `thread_slice(pages, i, n)`.
    pub sliced_by: Option<usize>,
    /// Mapped by several processes.
    pub shared: bool,
}

/// A process that is starting.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessInfo {
    /// Its pid.
    pub pid: Pid,
    /// Command name.
    pub name: String,
    /// Which instance of its `[[process]]` entry (0-based).
    pub instance: u32,
    /// Thread groups.
    pub groups: Vec<GroupInfo>,
    /// Mappings, by region index.
    pub regions: Vec<RegionInfo>,
    /// cpuset cpus.
    pub cpuset_cpus: Mask,
    /// cpuset mems.
    pub cpuset_mems: Mask,
}

/// A thread that is starting.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadInfo {
    /// Its tid.
    pub tid: Tid,
    /// Its process.
    pub pid: Pid,
    /// Group index within the process.
    pub group: usize,
    /// Index within the group.
    pub index: u32,
    /// Threads in the group.
    pub group_threads: u32,
}

/// A decision for the backend to carry out.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// `sched_setaffinity` of one thread (intersected with its cpuset by the backend).
    SetThreadAffinity {
        /// Thread.
        tid: Tid,
        /// Allowed CPUs.
        cpus: Mask,
    },
    /// The default memory policy of every thread of a process (numactl before exec).
    SetProcessMempolicy {
        /// Process.
        pid: Pid,
        /// Policy.
        policy: MemPolicy,
    },
    /// `set_mempolicy` of one thread.
    SetThreadMempolicy {
        /// Thread.
        tid: Tid,
        /// Policy.
        policy: MemPolicy,
    },
    /// `mbind` of pages `[first_page, end_page)` of a region.
    SetRangeMempolicy {
        /// Process.
        pid: Pid,
        /// Region index.
        region: usize,
        /// First page (region-relative).
        first_page: u64,
        /// One past the last page.
        end_page: u64,
        /// Policy.
        policy: MemPolicy,
    },
    /// Migrate the populated pages `[first_page, end_page)` of a region to `node`, as
    /// `move_pages(2)` from a user-space daemon would: the caller pays the copies.
    MigratePages {
        /// Process.
        pid: Pid,
        /// Region index.
        region: usize,
        /// First page (region-relative).
        first_page: u64,
        /// One past the last page.
        end_page: u64,
        /// Destination node.
        node: usize,
    },
    /// Move a thread to a CPU of `node` (counted as a policy-caused migration).
    MoveThread {
        /// Thread.
        tid: Tid,
        /// Destination node.
        node: usize,
    },
}

/// One thread as the backend sees it at a periodic callback.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadObs {
    /// Thread.
    pub tid: Tid,
    /// Its process.
    pub pid: Pid,
    /// CPU whose runqueue holds it (None while sleeping or blocked).
    pub cpu: Option<usize>,
    /// Node of that CPU.
    pub node: Option<usize>,
}

/// What the backend observed, passed to [`Policy::on_tick`]. Later policies extend it
/// (fault samples, per-node memory); a backend fills what it can observe.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation<'a> {
    /// Time of the observation, ns since the start (the only clock a policy sees).
    pub now_ns: u64,
    /// Every live thread.
    pub threads: &'a [ThreadObs],
}

/// Answer to "may the load balancer move this thread between these nodes?".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigrateVerdict {
    /// No opinion: the load balancer decides as usual.
    Allow,
    /// Never (the policy owns this thread's inter-node placement).
    Deny,
}

/// A NUMA placement policy. Every method has a do-nothing default, so a policy implements
/// only the events it cares about. Implementations must be deterministic functions of their
/// inputs and their own state.
pub trait Policy: Send {
    /// Name as given on the command line.
    fn name(&self) -> &str;

    /// A process is starting; its threads have not run yet.
    fn on_process_start(
        &mut self,
        _machine: &Machine,
        _process: &ProcessInfo,
        _out: &mut Vec<Action>,
    ) {
    }

    /// A thread is starting (before its first placement).
    fn on_thread_start(
        &mut self,
        _machine: &Machine,
        _thread: &ThreadInfo,
        _out: &mut Vec<Action>,
    ) {
    }

    /// A process has exited.
    fn on_process_exit(&mut self, _pid: Pid) {}

    /// How often [`Policy::on_tick`] should run; `None` (the default) never.
    fn tick_interval_ns(&self) -> Option<u64> {
        None
    }

    /// Periodic callback with the backend's observation; may request actions
    /// (e.g. [`Action::MoveThread`]).
    fn on_tick(&mut self, _machine: &Machine, _obs: &Observation<'_>, _out: &mut Vec<Action>) {}

    /// The CPU load balancer wants to move `tid` from `src_node` to `dst_node`.
    fn can_migrate_task(&self, _tid: Tid, _src_node: usize, _dst_node: usize) -> MigrateVerdict {
        MigrateVerdict::Allow
    }
}
