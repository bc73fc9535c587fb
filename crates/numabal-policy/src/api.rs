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
    /// `migrate_pages(pid, {from}, {to})`: move every page of the process on node `from`
    /// to node `to` (pages that do not fit stay). The call is synchronous in the caller:
    /// a backend runs the actions of one callback in order and the caller's next callback
    /// comes after the last page has moved.
    MigrateProcessPages {
        /// Process.
        pid: Pid,
        /// Source node.
        from: usize,
        /// Destination node.
        to: usize,
    },
    /// The process's pages on node `from` spread over `nodes`, 2 MiB of addresses at a
    /// time in turn (run `i` of the address space to `nodes[i % nodes.len()]`; a run whose
    /// turn is `from` stays): what `numactl --interleave` would have placed, done after
    /// the fact. Live, `move_pages` of its own pages found in its pagemap, as for
    /// `MigrateProcessPages`; synchronous in the caller the same way.
    InterleaveProcessPages {
        /// Process.
        pid: Pid,
        /// Source node.
        from: usize,
        /// The nodes taking turns, in order; a node listed k times takes k turns (a
        /// weighted spread: `home-node` sends part of a node's pages and keeps the rest).
        nodes: Vec<usize>,
    },
    /// `move_pages(2)` of the pages at these addresses (page-aligned virtual addresses of
    /// `pid`) to `node`: the live form of a page migration, for pages a sensor sampled.
    /// The simulator does not carry it out (its policies name pages by region and index).
    MovePages {
        /// Process.
        pid: Pid,
        /// Page addresses.
        addrs: Vec<u64>,
        /// Destination node.
        node: usize,
    },
    /// A line for the decision log (a daemon's log, the run's JSON `policy_log`).
    Log {
        /// The process the decision is about.
        pid: Pid,
        /// What was decided, in the policy's own words.
        message: String,
    },
}

/// One thread as the backend sees it at a periodic callback.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ThreadObs {
    /// Thread.
    pub tid: Tid,
    /// Its process.
    pub pid: Pid,
    /// CPU whose runqueue holds it (None while sleeping or blocked).
    pub cpu: Option<usize>,
    /// Node of that CPU.
    pub node: Option<usize>,
    /// `utime + stime` of the thread, ns (cumulative; `/proc/PID/task/TID/stat`). Absent
    /// (0) in recordings made before it was kept.
    #[serde(default)]
    pub cpu_time_ns: u64,
    /// Time since the thread started, ns (`/proc/PID/task/TID/stat` field 22 against
    /// `/proc/uptime`, to the clock tick). Absent in recordings made before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub age_ns: Option<u64>,
}

/// One process as `/proc/PID/{stat,status,numa_maps,cmdline}` show it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProcessObs {
    /// Its pid.
    pub pid: Pid,
    /// `comm`.
    pub comm: String,
    /// Live threads.
    pub num_threads: u32,
    /// `utime + stime` of every thread, ns (cumulative).
    pub cpu_time_ns: u64,
    /// Virtual size (`vsize`), bytes.
    pub vsize_bytes: u64,
    /// Resident memory, bytes.
    pub rss_bytes: u64,
    /// Resident memory per node (`numa_maps` `N<n>=` summed), bytes.
    pub node_bytes: Vec<u64>,
    /// Some mapping has an interleave policy (`numa_maps` shows `interleave`).
    pub interleaved: bool,
    /// `Mems_allowed` (the cpuset's mems).
    pub mems_allowed: Mask,
    /// For a `qemu-kvm` process, the guest's vCPU count (`-smp` on its command line).
    pub kvm_vcpus: Option<u32>,
}

/// One node as `/sys/devices/system/node/nodeN/meminfo` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NodeObs {
    /// `MemTotal`, bytes.
    pub mem_total_bytes: u64,
    /// `MemFree` (plus `Inactive(file)`, which a backend without a page cache leaves out),
    /// bytes.
    pub mem_free_bytes: u64,
}

/// What the backend observed, passed to [`Policy::on_tick`]. A backend fills what it can
/// observe; a policy reads what it needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation<'a> {
    /// Time of the observation, ns since the start (the only clock a policy sees).
    pub now_ns: u64,
    /// Every live thread.
    pub threads: &'a [ThreadObs],
    /// Every live user process with memory (`/proc/PID`).
    pub processes: &'a [ProcessObs],
    /// Every node, by node id.
    pub nodes: &'a [NodeObs],
    /// Idle time of every CPU since the start, ns (`/proc/stat` `idle`), by CPU id.
    pub cpu_idle_ns: &'a [u64],
    /// Memory accesses a sensor sampled since the last observation, in time order (empty
    /// where no sensor runs, e.g. in the simulator, whose policies see faults directly).
    pub samples: &'a [AccessSample],
}

/// One sampled memory access (a live sensor's page-fault sample, with the page's node
/// found by a `move_pages` query).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AccessSample {
    /// The accessing thread.
    pub tid: Tid,
    /// Its process.
    pub pid: Pid,
    /// Node of the CPU it ran on.
    pub node: usize,
    /// Page-aligned virtual address.
    pub addr: u64,
    /// Node the page was on (after the access).
    pub page_node: usize,
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

    /// The Rust type of the policy object, to show that two backends run the same one.
    fn type_name(&self) -> &'static str {
        std::any::type_name::<Self>()
    }

    /// Whether the policy, as its spec set it up, can run on `machine` (e.g. a node it
    /// names exists and has memory): `Err((field, what is allowed))` when it cannot. A
    /// backend asks before any work.
    fn check_machine(&self, _machine: &Machine) -> Result<(), (&'static str, String)> {
        Ok(())
    }

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

    /// How often [`Policy::on_tick`] should run; `None` (the default) never. A backend asks
    /// again after every tick: a policy may change it (numad's `-i min:max`).
    fn tick_interval_ns(&self) -> Option<u64> {
        None
    }

    /// The shortest and the longest interval [`Policy::tick_interval_ns`] returns in
    /// ordinary passes, for a backend to tell its operator; the default: the current one.
    fn tick_interval_range_ns(&self) -> Option<(u64, u64)> {
        self.tick_interval_ns().map(|i| (i, i))
    }

    /// Periodic callback with the backend's observation; may request actions
    /// (e.g. [`Action::MoveThread`]).
    fn on_tick(&mut self, _machine: &Machine, _obs: &Observation<'_>, _out: &mut Vec<Action>) {}

    /// Whether the daemon's sensor should keep sampling `pid`'s accesses (watch its threads,
    /// clear its soft-dirty bits): a policy that has learned what it needs of a process
    /// says no, and the process runs without the sampling's faults. The default: always.
    fn wants_samples(&self, _pid: Pid) -> bool {
        true
    }

    /// The CPU load balancer wants to move `tid` from `src_node` to `dst_node`.
    fn can_migrate_task(&self, _tid: Tid, _src_node: usize, _dst_node: usize) -> MigrateVerdict {
        MigrateVerdict::Allow
    }
}
