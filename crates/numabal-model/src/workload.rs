//! Workloads as data: processes with regions (mappings) and thread groups; each group runs
//! a list of phases (access a region with a pattern, compute, sleep, spawn/join another
//! group, barrier). Presets such as `numa01` are TOML files built from these parts.
//!
//! ```text
//!   workload
//!   ├── [[shared]]            regions shared between processes (shm, page cache)
//!   └── [[process]] × instances
//!       ├── [[process.region]]          anon (shared by the process's threads) | file (read-only) | shared
//!       └── [[process.group]] × threads
//!           └── [[process.group.phase]] access | compute | sleep | spawn | join | barrier
//!                                       | move_pages
//! ```

use crate::error::InputError;
use crate::machine::Machine;
use crate::mask::Mask;
use crate::mempolicy::MemPolicySpec;
use crate::units::{Bytes, Count, CountContext};
use serde::{Deserialize, Serialize};

fn one_u32() -> u32 {
    1
}
fn one_u64() -> u64 {
    1
}
fn one_f() -> f64 {
    1.0
}
fn is_false(b: &bool) -> bool {
    !*b
}
fn is_zero(f: &f64) -> bool {
    *f == 0.0
}

/// A workload file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// Preset name or a short label.
    pub name: String,
    /// One line for `numabal list`.
    #[serde(default)]
    pub description: String,
    /// Other workloads (preset names or files) whose processes run alongside these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<String>,
    /// Regions shared between processes.
    #[serde(default, rename = "shared", skip_serializing_if = "Vec::is_empty")]
    pub shared: Vec<SharedRegionSpec>,
    /// Processes.
    #[serde(default, rename = "process")]
    pub processes: Vec<ProcessSpec>,
    /// DAMOS schemes the experiment runs beside the policy (`[[damos]]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub damos: Vec<crate::damos::DamosSpec>,
    /// Files in a tmpfs, on a node from the start (`[[tmpfs]]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tmpfs: Vec<TmpfsSpec>,
}

/// `[[tmpfs]]`: files in a tmpfs that are on `node` before the run starts and are not read
/// during it, as a guest's root file system is (the kernel unpacks the initramfs into a
/// tmpfs at boot). Their pages are shmem: on the node's anonymous LRU, so reclaim demotes
/// them like a program's pages, but no page table maps them, so neither MGLRU's walks nor
/// NUMA balancing's scan sees them. Base pages (`shmem_enabled` is `never` by default).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TmpfsSpec {
    /// A label.
    pub name: String,
    /// Size of the files (0: none).
    pub size: Bytes,
    /// The node their pages are on.
    pub node: usize,
}

/// Kind of a region shared between processes.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum SharedKind {
    /// Shared anonymous memory (`MAP_SHARED|MAP_ANONYMOUS`, SysV shm): writable.
    #[default]
    Shm,
    /// A file mapped read-only (shared libraries, read-only data): page cache.
    File,
}

/// `[[shared]]`: a region several processes map.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SharedRegionSpec {
    /// Name processes use in `shared = "..."`.
    pub name: String,
    /// Size.
    pub size: Bytes,
    /// shm (writable) or file (read-only).
    #[serde(default)]
    pub kind: SharedKind,
    /// Use 2 MiB transparent huge pages (`MADV_HUGEPAGE`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub thp: bool,
    /// `mbind` policy of the region.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mempolicy: Option<MemPolicySpec>,
}

/// Kind of a process region.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum RegionKind {
    /// Private anonymous memory (heap, `malloc`): shared by the threads of the process.
    #[default]
    Anon,
    /// A private read-only file mapping (a library's text, read-only data).
    File,
}

/// `[[process.region]]`: a mapping in the process's address space.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RegionSpec {
    /// Name phases refer to.
    pub name: String,
    /// Size (not with `shared`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<Bytes>,
    /// anon or file.
    #[serde(default)]
    pub kind: RegionKind,
    /// Map the workload-level shared region of this name instead of a private one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<String>,
    /// Use 2 MiB transparent huge pages (`MADV_HUGEPAGE`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub thp: bool,
    /// The program mallocs it (not with `size` a multiple of 2 MiB at a 2 MiB boundary):
    /// glibc maps a large request with a 16-byte header, so the mapping is a page longer
    /// than asked and the kernel places it on a page, not a 2 MiB, boundary. A THP can
    /// only back a 2 MiB-aligned range wholly inside the mapping, so 513 of its pages
    /// are base pages (the partial 2 MiB at each end), the rest THPs. Modelled as its
    /// first 2 MiB mapped by base pages (docs/model-notes.md, "Memory").
    #[serde(default, skip_serializing_if = "is_false")]
    pub malloc: bool,
    /// Guest memory of a KVM virtual machine: a KVM memslot maps it into the VM's EPT (a
    /// secondary MMU), so a NUMA scan of it invalidates EPT entries and the vCPUs take EPT
    /// violations to rebuild them (docs/model-notes.md, "KVM guests").
    #[serde(default, skip_serializing_if = "is_false")]
    pub kvm_memslot: bool,
    /// `mbind` policy of the region.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mempolicy: Option<MemPolicySpec>,
}

/// How a static binding policy places a thread group (autonuma-benchmark HARD_BIND).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// The group stays together with the rest of its process on as few nodes as fit it.
    #[default]
    Together,
    /// The group's threads are split in contiguous blocks, one block per node
    /// (numa02 HARD_BIND: thread i on node i / (threads / nodes)).
    Spread,
}

/// `[[process.group]]`: threads running the same program.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GroupSpec {
    /// Name used by `spawn`/`join` phases.
    pub name: String,
    /// Number of threads (`12`, `"cpus/2"`).
    pub threads: Count,
    /// Placement under static binding policies.
    #[serde(default)]
    pub placement: Placement,
    /// Delay after process start before the group starts (unless another group spawns it).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub start_s: f64,
    /// Start the group's threads one after another, this many seconds apart (thread i at
    /// `start_s + i * stagger_s`), as a benchmark adds workers over its run (SPECjbb's
    /// warehouse sequence); 0 starts them together.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stagger_s: f64,
    /// How many times the phase list runs.
    #[serde(default = "one_u64")]
    pub iterations: u64,
    /// Work units each thread completes with each pass over the phase list (a benchmark's
    /// transactions or operations): the run reports work done and throughput. 0: none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub work_per_iteration: f64,
    /// CPU affinity (`sched_setaffinity`) of the group's threads, cpulist syntax.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<String>,
    /// The threads are a KVM virtual machine's vCPUs: they reach the process's
    /// `kvm_memslot` regions through the EPT, and KVM's remote TLB flushes kick them out
    /// of the guest.
    #[serde(default, skip_serializing_if = "is_false")]
    pub vcpu: bool,
    /// The program.
    #[serde(rename = "phase")]
    pub phases: Vec<PhaseSpec>,
}

/// Which part of a region a thread accesses.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Slice {
    /// The whole region.
    #[default]
    All,
    /// The thread's own part: thread i of n gets pages [i*P/n, (i+1)*P/n).
    Thread,
}

/// Access pattern over the slice.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    /// Sequential sweep from start to end (bzero, memcpy, streaming kernels).
    #[default]
    Sweep,
    /// Uniformly random cache lines.
    Uniform,
    /// Zipf over pages in address order (page k has weight 1/(k+1)^s).
    Zipf,
    /// `hot_fraction` of the slice (its start) receives `hot_weight` of the accesses.
    Hot,
    /// Normally distributed pages around the middle of the slice, standard deviation
    /// `gauss_sigma` of the slice (pmbench's `normal` pattern), cut at its ends.
    Gauss,
}

/// An access phase.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AccessPhase {
    /// Region name.
    pub region: String,
    /// Whole region or the thread's part.
    #[serde(default)]
    pub slice: Slice,
    /// Access pattern.
    #[serde(default)]
    pub pattern: Pattern,
    /// Amount: full passes over the slice...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passes: Option<f64>,
    /// ...or bytes accessed...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<Bytes>,
    /// ...or wall-clock seconds (open-ended workloads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// Fraction of accesses that write.
    #[serde(default = "one_f")]
    pub write: f64,
    /// CPU work per byte accessed beyond issuing the access, ns (0 = pure streaming).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ns_per_byte: f64,
    /// Cache-line misses in flight per thread (default: the machine's streaming maximum;
    /// 1 for a dependent pointer chase).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mlp: Option<f64>,
    /// Fraction of accesses served by the last-level cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_hit: f64,
    /// Zipf exponent (pattern = zipf).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zipf_s: Option<f64>,
    /// Hot part of the slice (pattern = hot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot_fraction: Option<f64>,
    /// Share of accesses going to the hot part (pattern = hot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot_weight: Option<f64>,
    /// Standard deviation as a fraction of the slice (pattern = gauss; default 0.125).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gauss_sigma: Option<f64>,
    /// The thread's memory policy during this phase (`set_mempolicy`), e.g. `bind:random`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mempolicy: Option<MemPolicySpec>,
    /// The thread runs on this node's CPUs during this phase and on its usual ones after
    /// (libnuma's `numa_run_on_node`, as a program pins its first-touch thread): only on
    /// the group's first phases (each with the same node) of a group that runs its phases
    /// once, so the thread starts there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_on_node: Option<usize>,
}

/// A phase of a thread's program. In files, `kind` selects the variant and the other keys
/// are the variant's fields.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
// An access phase is most phases, and a workload has a handful: boxing it would buy
// nothing but an indirection at every match.
#[allow(clippy::large_enum_variant)]
pub enum PhaseSpec {
    /// Access memory.
    Access(AccessPhase),
    /// Pure CPU work.
    Compute(ComputePhase),
    /// Off CPU.
    Sleep(SleepPhase),
    /// Start the threads of another group of the same process.
    Spawn(GroupRef),
    /// Wait until every thread of another group has finished.
    Join(GroupRef),
    /// Wait until every thread of this group reaches the barrier.
    Barrier(BarrierPhase),
    /// Move a region's pages to a node with `move_pages(2)`.
    MovePages(MovePagesPhase),
}

const PHASE_KINDS: &str = "access, compute, sleep, spawn, join, barrier, move_pages";

impl<'de> Deserialize<'de> for PhaseSpec {
    /// By hand rather than `#[serde(tag)]`: serde buffers internally tagged enums and loses
    /// the path of a bad field, and errors must name it (`pattern: unknown variant ...`).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut t = toml::Table::deserialize(d)?;
        let kind = match t.remove("kind") {
            Some(toml::Value::String(k)) => k,
            Some(_) => {
                return Err(D::Error::custom(crate::error::nested(
                    "kind",
                    &format!("must be a name in quotes (allowed: {PHASE_KINDS})"),
                )));
            }
            None => {
                return Err(D::Error::custom(format!(
                    "missing `kind` (allowed: {PHASE_KINDS})"
                )));
            }
        };
        fn inner<T: serde::de::DeserializeOwned, E: serde::de::Error>(
            t: toml::Table,
        ) -> Result<T, E> {
            crate::scenario::deserialize_value(toml::Value::Table(t))
                .map_err(|(path, msg)| E::custom(crate::error::nested(&path, &msg)))
        }
        Ok(match kind.as_str() {
            "access" => PhaseSpec::Access(inner(t)?),
            "compute" => PhaseSpec::Compute(inner(t)?),
            "sleep" => PhaseSpec::Sleep(inner(t)?),
            "spawn" => PhaseSpec::Spawn(inner(t)?),
            "join" => PhaseSpec::Join(inner(t)?),
            "barrier" => PhaseSpec::Barrier(inner(t)?),
            "move_pages" => PhaseSpec::MovePages(inner(t)?),
            other => {
                return Err(D::Error::custom(crate::error::nested(
                    "kind",
                    &format!("unknown phase kind \"{other}\" (allowed: {PHASE_KINDS})"),
                )));
            }
        })
    }
}

/// `kind = "compute"`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ComputePhase {
    /// CPU seconds on an otherwise idle core.
    pub seconds: f64,
    /// Each run of the phase lasts `seconds x (1 + jitter x u)`, u uniform in [-1, 1)
    /// drawn from the run's seed (0..=1; 0: exact).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub jitter: f64,
}

/// `kind = "sleep"`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SleepPhase {
    /// Wall-clock seconds.
    pub seconds: f64,
    /// As for `compute`: each sleep lasts `seconds x (1 + jitter x u)`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub jitter: f64,
}

/// `kind = "spawn"` / `kind = "join"`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GroupRef {
    /// Group name in the same process.
    pub group: String,
}

/// `kind = "move_pages"`: the thread moves every present page of `region` to `node` with
/// `move_pages(2)` (MPOL_MF_MOVE), as a program places its memory once it has touched it
/// (numa01-like's `--mem-node`); a transparent huge page moves whole. The thread pays each
/// move at the machine's migration cost.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MovePagesPhase {
    /// Region name in the same process.
    pub region: String,
    /// The node the pages go to (one with memory).
    pub node: usize,
}

/// `kind = "barrier"`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct BarrierPhase {}

/// `[[process]]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProcessSpec {
    /// Command name (`comm`).
    pub name: String,
    /// How many copies of the process run (numa01 forks one: 2).
    #[serde(default = "one_u32")]
    pub instances: u32,
    /// Start time of the first instance, seconds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub start_s: f64,
    /// At most this many instances alive at once; the next one starts when one exits
    /// (`make -jN`). Unset: all instances start together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jobs: Option<u32>,
    /// cpuset `cpus` (cgroup constraint), cpulist syntax.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpuset_cpus: Option<String>,
    /// cpuset `mems`, node list syntax.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpuset_mems: Option<String>,
    /// CPU affinity of all threads (`taskset`), cpulist syntax.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<String>,
    /// Process-wide memory policy (`numactl --membind` etc.).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mempolicy: Option<MemPolicySpec>,
    /// Which instances are forked by a parent that does not exec them (numa01's main forks
    /// its second process, perf bench numa forks its workers): a fork's address space
    /// schedules its first NUMA scan `scan_delay` after the fork (`init_numa_balancing`),
    /// an exec's new one at its first scan trigger (`task_numa_work` finds
    /// `numa_next_scan` 0), about a second later. Unset: every instance is a program of
    /// its own, exec'd.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked: Option<Forked>,
    /// A background process (system daemons, kernel worker threads: OS noise). The run
    /// ends when every non-daemon thread is done, whatever daemons are doing; daemon
    /// threads are left out of the runtime and of thread-migration counts.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub daemon: bool,
    /// Mappings.
    #[serde(default, rename = "region")]
    pub regions: Vec<RegionSpec>,
    /// Thread groups.
    #[serde(rename = "group")]
    pub groups: Vec<GroupSpec>,
}

/// `[[process]] forked`: which instances a parent forks without exec.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Forked {
    /// Every instance (perf bench numa's workers, forked by perf).
    All,
    /// Every instance but the first, which is exec'd and forks the others (numa01).
    Others,
}

impl ProcessSpec {
    /// Whether instance `instance` is a fork's copy of its parent (`forked`).
    pub fn is_forked(&self, instance: u32) -> bool {
        match self.forked {
            None => false,
            Some(Forked::All) => true,
            Some(Forked::Others) => instance > 0,
        }
    }
}

/// A workload checked against a machine: counts evaluated, names resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// The spec with includes flattened (processes of included workloads appended).
    pub spec: WorkloadSpec,
    /// Per process, per group: thread count.
    pub threads: Vec<Vec<u32>>,
    /// Per process: cpuset cpus (full machine if unset).
    pub cpuset_cpus: Vec<Mask>,
    /// Per process: cpuset mems (all nodes if unset).
    pub cpuset_mems: Vec<Mask>,
    /// Per process: affinity (None = all CPUs of the cpuset).
    pub affinity: Vec<Option<Mask>>,
    /// Per process, per group: group affinity.
    pub group_affinity: Vec<Vec<Option<Mask>>>,
    /// Total memory the workload maps, bytes.
    pub mapped_bytes: u64,
}

impl Workload {
    /// Check a flattened spec against a machine. `src` names where it came from.
    ///
    /// Section by section, in this order (the first refusal is the one reported): the
    /// process list, `[[shared]]`, then each `[[process]]` (its own keys, its regions, its
    /// groups, their phases, which groups can start), then whether it all fits the machine.
    pub fn resolve(
        spec: WorkloadSpec,
        machine: &Machine,
        src: &str,
    ) -> Result<Workload, InputError> {
        let r = Resolving {
            spec: &spec,
            src,
            counts: machine.count_context(),
            nr_cpus: machine.nr_cpus(),
            nr_nodes: machine.nr_nodes(),
            nodes_with_cpus: machine.nodes_with_cpus(),
            nodes_with_memory: (0..machine.nr_nodes())
                .filter(|&n| machine.node_usable_bytes(n) > 0)
                .collect(),
        };
        r.process_list()?;
        for (i, d) in spec.damos.iter().enumerate() {
            d.check(i, machine.nr_nodes(), src)?;
        }
        let shared_bytes = r.shared_regions()?;
        let tmpfs_bytes = r.tmpfs(machine)?;
        let mut threads = Vec::new();
        let mut cpuset_cpus = Vec::new();
        let mut cpuset_mems = Vec::new();
        let mut affinity = Vec::new();
        let mut group_affinity = Vec::new();
        let mut private_bytes = 0u64;
        for (pi, p) in spec.processes.iter().enumerate() {
            let rp = r.process(pi, p)?;
            threads.push(rp.threads);
            cpuset_cpus.push(rp.cpuset_cpus);
            cpuset_mems.push(rp.cpuset_mems);
            affinity.push(rp.affinity);
            group_affinity.push(rp.group_affinity);
            private_bytes += rp.private_bytes;
        }
        let mapped_bytes = private_bytes + shared_bytes;
        r.fits(machine, mapped_bytes + tmpfs_bytes)?;
        Ok(Workload {
            spec,
            threads,
            cpuset_cpus,
            cpuset_mems,
            affinity,
            group_affinity,
            mapped_bytes,
        })
    }

    /// Name of the workload.
    pub fn name(&self) -> &str {
        &self.spec.name
    }
}

/// What [`Workload::resolve`] checks a spec with.
struct Resolving<'a> {
    spec: &'a WorkloadSpec,
    /// Where the spec came from (errors name it).
    src: &'a str,
    counts: CountContext,
    nr_cpus: usize,
    nr_nodes: usize,
    nodes_with_cpus: Mask,
    /// The nodes with usable memory.
    nodes_with_memory: Vec<usize>,
}

/// One `[[process]]` checked: its entries in [`Workload`] and the private memory its
/// instances alive at once map.
struct ResolvedProcess {
    threads: Vec<u32>,
    cpuset_cpus: Mask,
    cpuset_mems: Mask,
    affinity: Option<Mask>,
    group_affinity: Vec<Option<Mask>>,
    private_bytes: u64,
}

/// `process[pi].field`, as errors name a key of a process.
fn process_field(pi: usize, field: &str) -> String {
    format!("process[{pi}].{field}")
}

impl Resolving<'_> {
    fn err(&self, field: String, msg: impl Into<String>) -> InputError {
        InputError::new(self.src, field, msg.into())
    }

    /// At least one process, and one that is not a daemon.
    fn process_list(&self) -> Result<(), InputError> {
        if self.spec.processes.is_empty() {
            return Err(self.err("process".into(), "the workload has no processes"));
        }
        if self.spec.processes.iter().all(|p| p.daemon) {
            return Err(self.err(
                "process.daemon".into(),
                "every process is a daemon (allowed: at least one process with daemon = false)",
            ));
        }
        Ok(())
    }

    /// `[[shared]]`: sizes and names; the bytes they map.
    fn shared_regions(&self) -> Result<u64, InputError> {
        let shared = &self.spec.shared;
        let mut bytes = 0u64;
        for (si, s) in shared.iter().enumerate() {
            if s.size.0 == 0 {
                return Err(self.err(format!("shared[{si}].size"), "must be > 0"));
            }
            if shared[..si].iter().any(|o| o.name == s.name) {
                return Err(self.err(
                    format!("shared[{si}].name"),
                    format!("`{}` is defined twice", s.name),
                ));
            }
            bytes += s.size.0;
        }
        Ok(bytes)
    }

    /// `[[tmpfs]]`: each on a node with memory, fitting its usable memory; their bytes.
    fn tmpfs(&self, machine: &Machine) -> Result<u64, InputError> {
        let with_memory = &self.nodes_with_memory;
        let mut on_node = vec![0u64; self.nr_nodes];
        for (i, f) in self.spec.tmpfs.iter().enumerate() {
            if !with_memory.contains(&f.node) {
                let names: Vec<String> = with_memory.iter().map(|n| n.to_string()).collect();
                return Err(self.err(
                    format!("tmpfs[{i}].node"),
                    format!(
                        "is {} (allowed: a node of machine `{}` with usable memory: {})",
                        f.node,
                        machine.name(),
                        names.join(", ")
                    ),
                ));
            }
            let usable = machine.node_usable_bytes(f.node);
            on_node[f.node] += f.size.0;
            if on_node[f.node] > usable {
                return Err(self.err(
                    format!("tmpfs[{i}].size"),
                    format!(
                        "{} does not fit on node {}: its usable memory is {}",
                        f.size,
                        f.node,
                        Bytes(usable)
                    ),
                ));
            }
        }
        Ok(on_node.iter().sum())
    }

    /// One `[[process]]`, section by section.
    fn process(&self, pi: usize, p: &ProcessSpec) -> Result<ResolvedProcess, InputError> {
        let alive = self.instances(pi, p)?;
        let (cpuset_cpus, cpuset_mems, affinity) = self.placement(pi, p)?;
        let (region_pages, private_bytes) = self.regions(pi, p, alive)?;
        let (threads, group_affinity) = self.groups(pi, p, &cpuset_cpus)?;
        let spawned = self.phases(pi, p, &region_pages, &threads)?;
        self.every_group_starts(pi, p, &spawned)?;
        Ok(ResolvedProcess {
            threads,
            cpuset_cpus,
            cpuset_mems,
            affinity,
            group_affinity,
            private_bytes,
        })
    }

    /// `instances`, `jobs`, `start_s`; the instances alive at once.
    fn instances(&self, pi: usize, p: &ProcessSpec) -> Result<u64, InputError> {
        if p.instances == 0 || p.instances > 4096 {
            return Err(self.err(
                process_field(pi, "instances"),
                format!("is {} (allowed: 1-4096)", p.instances),
            ));
        }
        if let Some(j) = p.jobs
            && !(1..=p.instances).contains(&j)
        {
            return Err(self.err(
                process_field(pi, "jobs"),
                format!("is {j} (allowed: 1-{}, the instances)", p.instances),
            ));
        }
        if !(p.start_s >= 0.0 && p.start_s.is_finite()) {
            return Err(self.err(process_field(pi, "start_s"), "must be a finite number >= 0"));
        }
        Ok(p.jobs.unwrap_or(p.instances) as u64)
    }

    /// A cpulist of the process (`field` under `process[pi]`) naming CPUs of the machine.
    fn cpus(&self, pi: usize, field: &str, s: &Option<String>) -> Result<Option<Mask>, InputError> {
        let Some(s) = s else {
            return Ok(None);
        };
        let m = Mask::parse_list(s, Some(self.nr_cpus))
            .map_err(|e| self.err(process_field(pi, field), e))?;
        if m.is_empty() || !m.is_subset(&Mask::full(self.nr_cpus)) {
            return Err(self.err(
                process_field(pi, field),
                format!(
                    "`{s}` must name CPUs of the machine (0-{})",
                    self.nr_cpus - 1
                ),
            ));
        }
        Ok(Some(m))
    }

    /// `cpuset_cpus`, `cpuset_mems`, `affinity` (within the cpuset) and `mempolicy`.
    fn placement(
        &self,
        pi: usize,
        p: &ProcessSpec,
    ) -> Result<(Mask, Mask, Option<Mask>), InputError> {
        let nr_nodes = self.nr_nodes;
        let cs_cpus = self
            .cpus(pi, "cpuset_cpus", &p.cpuset_cpus)?
            .unwrap_or_else(|| Mask::full(self.nr_cpus));
        let cs_mems = match &p.cpuset_mems {
            None => Mask::full(nr_nodes),
            Some(s) => {
                let m = Mask::parse_list(s, Some(nr_nodes))
                    .map_err(|e| self.err(process_field(pi, "cpuset_mems"), e))?;
                if m.is_empty() || !m.is_subset(&Mask::full(nr_nodes)) {
                    return Err(self.err(
                        process_field(pi, "cpuset_mems"),
                        format!("`{s}` must name nodes of the machine (0-{})", nr_nodes - 1),
                    ));
                }
                m
            }
        };
        let aff = self.cpus(pi, "affinity", &p.affinity)?;
        if let Some(a) = &aff
            && !a.intersects(&cs_cpus)
        {
            return Err(self.err(
                process_field(pi, "affinity"),
                "shares no CPU with the process's cpuset",
            ));
        }
        if let Some(mp) = &p.mempolicy {
            mp.resolve(nr_nodes, 0)
                .map_err(|e| self.err(process_field(pi, "mempolicy"), e))?;
        }
        Ok((cs_cpus, cs_mems, aff))
    }

    /// `[[process.region]]`: names, sizes or shared regions, memory policies. Pages per
    /// region, and the private bytes of the instances alive at once.
    fn regions(
        &self,
        pi: usize,
        p: &ProcessSpec,
        alive: u64,
    ) -> Result<(Vec<u64>, u64), InputError> {
        let mut pages = Vec::new();
        let mut private_bytes = 0u64;
        for (ri, r) in p.regions.iter().enumerate() {
            let rf = |f: &str| process_field(pi, &format!("region[{ri}].{f}"));
            if p.regions[..ri].iter().any(|o| o.name == r.name) {
                return Err(self.err(
                    rf("name"),
                    format!("`{}` is defined twice in this process", r.name),
                ));
            }
            let bytes = self.region_bytes(r, &rf)?;
            if r.shared.is_none() {
                private_bytes += bytes * alive;
            }
            if let Some(mp) = &r.mempolicy {
                mp.resolve(self.nr_nodes, 0)
                    .map_err(|e| self.err(rf("mempolicy"), e))?;
            }
            pages.push(bytes.div_ceil(crate::PAGE_SIZE));
        }
        Ok((pages, private_bytes))
    }

    /// A region's size: its own (`size`) or its `[[shared]]` region's.
    fn region_bytes(&self, r: &RegionSpec, rf: &dyn Fn(&str) -> String) -> Result<u64, InputError> {
        match (&r.size, &r.shared) {
            (Some(sz), None) if sz.0 == 0 => Err(self.err(rf("size"), "must be > 0")),
            (Some(sz), None) => Ok(sz.0),
            (None, Some(name)) => match self.spec.shared.iter().find(|s| &s.name == name) {
                Some(s) => Ok(s.size.0),
                None => {
                    let names: Vec<&str> =
                        self.spec.shared.iter().map(|s| s.name.as_str()).collect();
                    Err(self.err(
                        rf("shared"),
                        format!(
                            "no [[shared]] region `{name}` (defined: {})",
                            list_or_none(&names)
                        ),
                    ))
                }
            },
            _ => Err(self.err(
                rf("size"),
                "give exactly one of `size` (a private region) or `shared` (a [[shared]] region)",
            )),
        }
    }

    /// `[[process.group]]`: at least one; per group its thread count and affinity.
    fn groups(
        &self,
        pi: usize,
        p: &ProcessSpec,
        cs_cpus: &Mask,
    ) -> Result<(Vec<u32>, Vec<Option<Mask>>), InputError> {
        if p.groups.is_empty() {
            return Err(self.err(
                process_field(pi, "group"),
                "a process needs at least one [[process.group]]",
            ));
        }
        let mut counts = Vec::new();
        let mut affinity = Vec::new();
        for (gi, g) in p.groups.iter().enumerate() {
            if p.groups[..gi].iter().any(|o| o.name == g.name) {
                return Err(self.err(
                    process_field(pi, &format!("group[{gi}].name")),
                    format!("`{}` is defined twice in this process", g.name),
                ));
            }
            let (n, a) = self.group(pi, gi, g, cs_cpus)?;
            counts.push(n);
            affinity.push(a);
        }
        Ok((counts, affinity))
    }

    /// One group's keys: `threads`, `work_per_iteration`, `iterations`, `stagger_s`,
    /// `start_s`, `affinity` (within the cpuset), and a phase list.
    fn group(
        &self,
        pi: usize,
        gi: usize,
        g: &GroupSpec,
        cs_cpus: &Mask,
    ) -> Result<(u32, Option<Mask>), InputError> {
        let gf = |f: &str| process_field(pi, &format!("group[{gi}].{f}"));
        let n = g
            .threads
            .eval(&self.counts)
            .map_err(|e| self.err(gf("threads"), e))?;
        if n == 0 || n > 65536 {
            return Err(self.err(
                gf("threads"),
                format!("evaluates to {n} (allowed: 1-65536)"),
            ));
        }
        if !(g.work_per_iteration >= 0.0 && g.work_per_iteration.is_finite()) {
            return Err(self.err(
                gf("work_per_iteration"),
                format!(
                    "is {} (allowed: a finite number >= 0)",
                    g.work_per_iteration
                ),
            ));
        }
        if g.iterations == 0 {
            return Err(self.err(gf("iterations"), "must be >= 1"));
        }
        for (key, v) in [("stagger_s", g.stagger_s), ("start_s", g.start_s)] {
            if !(v >= 0.0 && v.is_finite()) {
                return Err(self.err(gf(key), "must be a finite number >= 0"));
            }
        }
        let ga = self.cpus(pi, &format!("group[{gi}].affinity"), &g.affinity)?;
        if let Some(a) = &ga
            && !a.intersects(cs_cpus)
        {
            return Err(self.err(
                gf("affinity"),
                format!("shares no CPU with the process's cpuset ({cs_cpus})"),
            ));
        }
        if g.phases.is_empty() {
            return Err(self.err(
                gf("phase"),
                "a group needs at least one [[process.group.phase]]",
            ));
        }
        if g.vcpu
            && !self.spec.processes[pi]
                .regions
                .iter()
                .any(|r| r.kvm_memslot)
        {
            return Err(self.err(
                gf("vcpu"),
                "needs a region of its process with kvm_memslot = true (the guest memory)",
            ));
        }
        Ok((n as u32, ga))
    }

    /// `[[process.group.phase]]` of every group; which groups another one spawns.
    fn phases(
        &self,
        pi: usize,
        p: &ProcessSpec,
        region_pages: &[u64],
        threads: &[u32],
    ) -> Result<Vec<bool>, InputError> {
        let mut spawned = vec![false; p.groups.len()];
        for (gi, g) in p.groups.iter().enumerate() {
            for (phi, ph) in g.phases.iter().enumerate() {
                let at = process_field(pi, &format!("group[{gi}].phase[{phi}]"));
                let f = |x: &str| format!("{at}.{x}");
                match ph {
                    PhaseSpec::Access(a) => {
                        self.access_phase(&f, p, a, region_pages, threads[gi])?;
                        self.run_on_node(&f, a, &g.phases[..phi], g.iterations)?;
                    }
                    PhaseSpec::Compute(ComputePhase { seconds, jitter })
                    | PhaseSpec::Sleep(SleepPhase { seconds, jitter }) => {
                        self.timed_phase(&f, *seconds, *jitter)?;
                    }
                    PhaseSpec::Spawn(r) => {
                        let t = self.other_group(&f, p, gi, &r.group, "spawn")?;
                        if spawned[t] {
                            return Err(self
                                .err(f("group"), format!("group `{}` is spawned twice", r.group)));
                        }
                        spawned[t] = true;
                    }
                    PhaseSpec::Join(r) => {
                        self.other_group(&f, p, gi, &r.group, "join")?;
                    }
                    PhaseSpec::Barrier(_) => {}
                    PhaseSpec::MovePages(m) => self.move_pages_phase(&f, p, m)?,
                }
            }
        }
        Ok(spawned)
    }

    /// The index of the region a phase names (its `region` key): one of its process's.
    fn region_of(
        &self,
        f: &dyn Fn(&str) -> String,
        p: &ProcessSpec,
        name: &str,
    ) -> Result<usize, InputError> {
        p.regions
            .iter()
            .position(|r| r.name == name)
            .ok_or_else(|| {
                let names: Vec<&str> = p.regions.iter().map(|r| r.name.as_str()).collect();
                self.err(
                    f("region"),
                    format!(
                        "no region `{name}` in this process (defined: {})",
                        list_or_none(&names)
                    ),
                )
            })
    }

    /// A `move_pages` phase: a region of its process, a node of the machine with memory.
    fn move_pages_phase(
        &self,
        f: &dyn Fn(&str) -> String,
        p: &ProcessSpec,
        m: &MovePagesPhase,
    ) -> Result<(), InputError> {
        self.region_of(f, p, &m.region)?;
        if !self.nodes_with_memory.contains(&m.node) {
            let with: Vec<String> = self
                .nodes_with_memory
                .iter()
                .map(|n| n.to_string())
                .collect();
            return Err(self.err(
                f("node"),
                format!(
                    "is {} (allowed: a node with usable memory, {})",
                    m.node,
                    with.join(", ")
                ),
            ));
        }
        Ok(())
    }

    /// The group a `spawn` or `join` (`verb`) of group `gi` names: another of its process.
    fn other_group(
        &self,
        f: &dyn Fn(&str) -> String,
        p: &ProcessSpec,
        gi: usize,
        name: &str,
        verb: &str,
    ) -> Result<usize, InputError> {
        let Some(t) = p.groups.iter().position(|o| o.name == name) else {
            let names: Vec<&str> = p.groups.iter().map(|o| o.name.as_str()).collect();
            return Err(self.err(
                f("group"),
                format!(
                    "no group `{name}` in this process (defined: {})",
                    names.join(", ")
                ),
            ));
        };
        if t == gi {
            return Err(self.err(f("group"), format!("a group cannot {verb} itself")));
        }
        Ok(t)
    }

    /// A `compute` or `sleep` phase.
    fn timed_phase(
        &self,
        f: &dyn Fn(&str) -> String,
        seconds: f64,
        jitter: f64,
    ) -> Result<(), InputError> {
        if !(seconds >= 0.0 && seconds.is_finite()) {
            return Err(self.err(f("seconds"), "must be a finite number >= 0"));
        }
        if !(0.0..=1.0).contains(&jitter) {
            return Err(self.err(f("jitter"), format!("is {jitter} (allowed: 0 to 1)")));
        }
        Ok(())
    }

    /// An `access` phase of a group of `threads` threads: its region, amount, numbers,
    /// pattern, slice, memory policy, and no writes to a read-only mapping.
    fn access_phase(
        &self,
        f: &dyn Fn(&str) -> String,
        p: &ProcessSpec,
        a: &AccessPhase,
        region_pages: &[u64],
        threads: u32,
    ) -> Result<(), InputError> {
        let ri = self.region_of(f, p, &a.region)?;
        self.access_amount(f, a)?;
        self.access_numbers(f, a)?;
        self.access_pattern(f, a)?;
        if a.slice == Slice::Thread && region_pages[ri] < threads as u64 {
            return Err(self.err(
                f("slice"),
                format!(
                    "region `{}` has {} pages, fewer than the group's {threads} threads",
                    a.region, region_pages[ri]
                ),
            ));
        }
        if let Some(mp) = &a.mempolicy {
            mp.resolve(self.nr_nodes, 0)
                .map_err(|e| self.err(f("mempolicy"), e))?;
        }
        let r = &p.regions[ri];
        let read_only = r.kind == RegionKind::File
            || r.shared.as_ref().is_some_and(|n| {
                self.spec
                    .shared
                    .iter()
                    .any(|s| &s.name == n && s.kind == SharedKind::File)
            });
        if read_only && a.write > 0.0 {
            return Err(self.err(
                f("write"),
                format!(
                    "region `{}` is a read-only file mapping: write must be 0",
                    a.region
                ),
            ));
        }
        Ok(())
    }

    /// `run_on_node`: a node with CPUs, on a group's first phases (`before` are those
    /// before this one, all with the same node), which run once.
    fn run_on_node(
        &self,
        f: &dyn Fn(&str) -> String,
        a: &AccessPhase,
        before: &[PhaseSpec],
        iterations: u64,
    ) -> Result<(), InputError> {
        let Some(n) = a.run_on_node else {
            return Ok(());
        };
        if !self.nodes_with_cpus.contains(n) {
            let with: Vec<String> = self.nodes_with_cpus.iter().map(|n| n.to_string()).collect();
            return Err(self.err(
                f("run_on_node"),
                format!("is {n} (allowed: a node with CPUs, {})", with.join(", ")),
            ));
        }
        let leading = before
            .iter()
            .all(|p| matches!(p, PhaseSpec::Access(b) if b.run_on_node == Some(n)));
        if !leading || iterations != 1 {
            return Err(self.err(
                f("run_on_node"),
                "allowed only on a group's first phases, each on the same node, in a group \
                 whose phases run once (iterations = 1): the thread starts on the node",
            ));
        }
        Ok(())
    }

    /// Exactly one of `passes`, `bytes`, `seconds`, within bounds.
    fn access_amount(&self, f: &dyn Fn(&str) -> String, a: &AccessPhase) -> Result<(), InputError> {
        let amounts = [a.passes.is_some(), a.bytes.is_some(), a.seconds.is_some()];
        if amounts.iter().filter(|&&x| x).count() != 1 {
            return Err(self.err(
                f("passes"),
                "give exactly one of `passes`, `bytes` or `seconds`",
            ));
        }
        for (name, v, max) in [("passes", a.passes, 1e9), ("seconds", a.seconds, 1e7)] {
            if let Some(v) = v
                && !(v > 0.0 && v <= max)
            {
                return Err(self.err(f(name), format!("is {v:e} (allowed: > 0 and <= {max:e})")));
            }
        }
        Ok(())
    }

    /// `write`, `cache_hit`, `ns_per_byte`, `mlp`.
    fn access_numbers(
        &self,
        f: &dyn Fn(&str) -> String,
        a: &AccessPhase,
    ) -> Result<(), InputError> {
        if !(0.0..=1.0).contains(&a.write) {
            return Err(self.err(f("write"), format!("is {} (allowed: 0 to 1)", a.write)));
        }
        if !(0.0..1.0).contains(&a.cache_hit) {
            return Err(self.err(
                f("cache_hit"),
                format!("is {} (allowed: 0 to <1)", a.cache_hit),
            ));
        }
        if !(a.ns_per_byte >= 0.0 && a.ns_per_byte.is_finite()) {
            return Err(self.err(f("ns_per_byte"), "must be a finite number >= 0"));
        }
        if let Some(m) = a.mlp
            && !(0.5..=1000.0).contains(&m)
        {
            return Err(self.err(f("mlp"), format!("is {m} (allowed: 0.5 to 1000)")));
        }
        Ok(())
    }

    /// The pattern's own keys: `zipf_s`; `hot_fraction`, `hot_weight`; `gauss_sigma`.
    fn access_pattern(
        &self,
        f: &dyn Fn(&str) -> String,
        a: &AccessPhase,
    ) -> Result<(), InputError> {
        match a.pattern {
            Pattern::Zipf => {
                let s = a.zipf_s.unwrap_or(1.0);
                if !(0.0..=5.0).contains(&s) {
                    return Err(self.err(f("zipf_s"), format!("is {s} (allowed: 0 to 5)")));
                }
            }
            Pattern::Hot => {
                let hf = a.hot_fraction.unwrap_or(0.1);
                let hw = a.hot_weight.unwrap_or(0.9);
                if !(hf > 0.0 && hf < 1.0) {
                    return Err(self.err(
                        f("hot_fraction"),
                        format!("is {hf} (allowed: between 0 and 1)"),
                    ));
                }
                if !(0.0..=1.0).contains(&hw) {
                    return Err(self.err(f("hot_weight"), format!("is {hw} (allowed: 0 to 1)")));
                }
            }
            Pattern::Gauss => {
                let g = a.gauss_sigma.unwrap_or(0.125);
                if !(0.001..=10.0).contains(&g) {
                    return Err(self.err(
                        f("gauss_sigma"),
                        format!("is {g} (allowed: 0.001 to 10, a fraction of the slice)"),
                    ));
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Some group starts by itself, and every spawned group is reachable from one: a spawn
    /// cycle would never start and the run would end without it.
    fn every_group_starts(
        &self,
        pi: usize,
        p: &ProcessSpec,
        spawned: &[bool],
    ) -> Result<(), InputError> {
        if spawned.iter().all(|&s| s) {
            return Err(self.err(
                process_field(pi, "group"),
                "every group is spawned by another: none can start",
            ));
        }
        let mut started: Vec<bool> = spawned.iter().map(|&s| !s).collect();
        loop {
            let mut grew = false;
            for (gi, g) in p.groups.iter().enumerate() {
                if !started[gi] {
                    continue;
                }
                for ph in &g.phases {
                    if let PhaseSpec::Spawn(r) = ph
                        && let Some(t) = p.groups.iter().position(|o| o.name == r.group)
                        && !started[t]
                    {
                        started[t] = true;
                        grew = true;
                    }
                }
            }
            if !grew {
                break;
            }
        }
        if let Some(gi) = started.iter().position(|&s| !s) {
            return Err(self.err(
                process_field(pi, &format!("group[{gi}]")),
                format!(
                    "group `{}` is spawned only by groups that never start (a spawn cycle)",
                    p.groups[gi].name
                ),
            ));
        }
        Ok(())
    }

    /// The memory the workload maps fits the machine's usable memory.
    fn fits(&self, machine: &Machine, mapped_bytes: u64) -> Result<(), InputError> {
        let usable = machine.usable_bytes();
        if mapped_bytes > usable {
            return Err(self.err(
                "process".into(),
                format!(
                    "the workload maps {} but machine `{}` has {} of usable memory",
                    Bytes(mapped_bytes),
                    machine.name(),
                    Bytes(usable)
                ),
            ));
        }
        Ok(())
    }
}

fn list_or_none(names: &[&str]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// Thread `i` of `n`'s part of a region of `pages` pages: `[i*pages/n, (i+1)*pages/n)`.
/// The engine and the binding policies use the same partition.
pub fn thread_slice(pages: u64, i: u64, n: u64) -> (u64, u64) {
    let n = n.max(1);
    let start = (pages as u128 * i as u128 / n as u128) as u64;
    let end = (pages as u128 * (i + 1) as u128 / n as u128) as u64;
    (start, end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::MachineSpec;

    /// tiny-2n4: 4 CPUs (node 0: 0-1, node 1: 2-3), 2 nodes, 4 GiB usable.
    fn tiny() -> Machine {
        let text = crate::presets::machine("tiny-2n4").unwrap();
        let spec: MachineSpec = toml::from_str(text).unwrap();
        Machine::from_spec(spec, "tiny-2n4").unwrap()
    }

    /// One process `p` with region `buf` (1 MiB) and group `w` of 2 threads sweeping it
    /// once; `process`, `region`, `group` and `phase` add keys to those tables, `more`
    /// appends tables.
    fn text(process: &str, region: &str, group: &str, phase: &str, more: &str) -> String {
        format!(
            "name = \"t\"\n[[process]]\nname = \"p\"\n{process}\n\
             [[process.region]]\nname = \"buf\"\n{region}\n\
             [[process.group]]\nname = \"w\"\n{group}\n\
             [[process.group.phase]]\nkind = \"access\"\nregion = \"buf\"\n{phase}\n{more}"
        )
    }

    fn resolve(text: &str) -> Result<Workload, InputError> {
        let spec: WorkloadSpec = toml::from_str(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        Workload::resolve(spec, &tiny(), "w.toml")
    }

    fn error(text: &str) -> String {
        match resolve(text) {
            Ok(_) => panic!("resolved:\n{text}"),
            Err(e) => {
                assert_eq!(e.source, "w.toml");
                format!("{}: {}", e.field, e.message)
            }
        }
    }

    const SIZE: &str = "size = \"1MiB\"";
    const T2: &str = "threads = 2";
    const ONCE: &str = "passes = 1";

    #[test]
    fn a_good_workload_resolves() {
        let w = resolve(&text(
            "instances = 2\naffinity = \"1-3\"\ncpuset_cpus = \"1-3\"\ncpuset_mems = \"1\"",
            SIZE,
            "threads = \"cpus/2\"\naffinity = \"2\"",
            ONCE,
            "",
        ))
        .unwrap();
        assert_eq!(w.threads, vec![vec![2]]);
        assert_eq!(w.cpuset_cpus, vec![Mask::from_ids([1, 2, 3])]);
        assert_eq!(w.cpuset_mems, vec![Mask::single(1)]);
        assert_eq!(w.affinity, vec![Some(Mask::from_ids([1, 2, 3]))]);
        assert_eq!(w.group_affinity, vec![vec![Some(Mask::single(2))]]);
        assert_eq!(w.mapped_bytes, 2 << 20);
        assert_eq!(w.name(), "t");
    }

    /// Every refusal of `resolve`, field and message, in the order they are checked.
    #[test]
    fn every_refusal_names_its_field() {
        let spawn =
            |g: &str| format!("[[process.group.phase]]\nkind = \"spawn\"\ngroup = \"{g}\"\n");
        let join = |g: &str| format!("[[process.group.phase]]\nkind = \"join\"\ngroup = \"{g}\"\n");
        let group = |name: &str, phases: &str| {
            format!("[[process.group]]\nname = \"{name}\"\nthreads = 1\n{phases}")
        };
        let sweep = "[[process.group.phase]]\nkind = \"access\"\nregion = \"buf\"\npasses = 1\n";
        let cases: Vec<(String, &str)> = vec![
            (
                "name = \"t\"\n".into(),
                "process: the workload has no processes",
            ),
            (
                text("daemon = true", SIZE, T2, ONCE, ""),
                "process.daemon: every process is a daemon (allowed: at least one process with daemon = false)",
            ),
            (
                format!(
                    "{}\n[[shared]]\nname = \"s\"\nsize = 0\n",
                    text("", SIZE, T2, ONCE, "")
                ),
                "shared[0].size: must be > 0",
            ),
            (
                format!(
                    "{}\n[[shared]]\nname = \"s\"\nsize = 1\n[[shared]]\nname = \"s\"\nsize = 1\n",
                    text("", SIZE, T2, ONCE, "")
                ),
                "shared[1].name: `s` is defined twice",
            ),
            (
                format!(
                    "{}\n[[tmpfs]]\nname = \"r\"\nsize = \"1MiB\"\nnode = 2\n",
                    text("", SIZE, T2, ONCE, "")
                ),
                "tmpfs[0].node: is 2 (allowed: a node of machine `tiny-2n4` with usable memory: 0, 1)",
            ),
            (
                format!(
                    "{}\n[[tmpfs]]\nname = \"r\"\nsize = \"1GiB\"\nnode = 1\n[[tmpfs]]\nname = \"s\"\nsize = \"2GiB\"\nnode = 1\n",
                    text("", SIZE, T2, ONCE, "")
                ),
                "tmpfs[1].size: 2GiB does not fit on node 1: its usable memory is 2GiB",
            ),
            (
                text("instances = 0", SIZE, T2, ONCE, ""),
                "process[0].instances: is 0 (allowed: 1-4096)",
            ),
            (
                text("instances = 2\njobs = 3", SIZE, T2, ONCE, ""),
                "process[0].jobs: is 3 (allowed: 1-2, the instances)",
            ),
            (
                text("start_s = -1.0", SIZE, T2, ONCE, ""),
                "process[0].start_s: must be a finite number >= 0",
            ),
            (
                text("cpuset_cpus = \"x\"", SIZE, T2, ONCE, ""),
                "process[0].cpuset_cpus: `x` is not a list item (expected N or N-M, e.g. 0-3,8)",
            ),
            (
                text("cpuset_cpus = \"7\"", SIZE, T2, ONCE, ""),
                "process[0].cpuset_cpus: `7` must name CPUs of the machine (0-3)",
            ),
            (
                text("cpuset_mems = \"2\"", SIZE, T2, ONCE, ""),
                "process[0].cpuset_mems: `2` must name nodes of the machine (0-1)",
            ),
            (
                text("cpuset_mems = \"a\"", SIZE, T2, ONCE, ""),
                "process[0].cpuset_mems: `a` is not a list item (expected N or N-M, e.g. 0-3,8)",
            ),
            (
                text("affinity = \"4\"", SIZE, T2, ONCE, ""),
                "process[0].affinity: `4` must name CPUs of the machine (0-3)",
            ),
            (
                text(
                    "cpuset_cpus = \"2-3\"\naffinity = \"0\"",
                    SIZE,
                    T2,
                    ONCE,
                    "",
                ),
                "process[0].affinity: shares no CPU with the process's cpuset",
            ),
            (
                text("mempolicy = \"bind:5\"", SIZE, T2, ONCE, ""),
                "process[0].mempolicy: node 5 does not exist (the machine has nodes 0-1)",
            ),
            (
                text("", SIZE, "threads = 2\nvcpu = true", ONCE, ""),
                "process[0].group[0].vcpu: needs a region of its process with kvm_memslot = \
                 true (the guest memory)",
            ),
            (
                text("", SIZE, T2, "passes = 1\nrun_on_node = 5", ""),
                "process[0].group[0].phase[0].run_on_node: is 5 (allowed: a node with CPUs, 0, 1)",
            ),
            (
                text(
                    "",
                    SIZE,
                    T2,
                    ONCE,
                    "[[process.group.phase]]\nkind = \"move_pages\"\nregion = \"nope\"\nnode = 1\n",
                ),
                "process[0].group[0].phase[1].region: no region `nope` in this process (defined: buf)",
            ),
            (
                text(
                    "",
                    SIZE,
                    T2,
                    ONCE,
                    "[[process.group.phase]]\nkind = \"move_pages\"\nregion = \"buf\"\nnode = 2\n",
                ),
                "process[0].group[0].phase[1].node: is 2 (allowed: a node with usable memory, 0, 1)",
            ),
            (
                text(
                    "",
                    SIZE,
                    T2,
                    ONCE,
                    "[[process.group.phase]]\nkind = \"access\"\nregion = \"buf\"\n\
                     passes = 1\nrun_on_node = 0",
                ),
                "process[0].group[0].phase[1].run_on_node: allowed only on a group's first \
                 phases, each on the same node, in a group whose phases run once (iterations \
                 = 1): the thread starts on the node",
            ),
            (
                text(
                    "",
                    SIZE,
                    "threads = 2\niterations = 2",
                    "passes = 1\nrun_on_node = 0",
                    "",
                ),
                "process[0].group[0].phase[0].run_on_node: allowed only on a group's first \
                 phases, each on the same node, in a group whose phases run once (iterations \
                 = 1): the thread starts on the node",
            ),
            (
                text("", SIZE, T2, ONCE, "").replace(
                    "[[process.group]]",
                    "[[process.region]]\nname = \"buf\"\nsize = 1\n[[process.group]]",
                ),
                "process[0].region[1].name: `buf` is defined twice in this process",
            ),
            (
                text("", "size = 0", T2, ONCE, ""),
                "process[0].region[0].size: must be > 0",
            ),
            (
                text("", "shared = \"s\"", T2, ONCE, ""),
                "process[0].region[0].shared: no [[shared]] region `s` (defined: none)",
            ),
            (
                format!(
                    "{}\n[[shared]]\nname = \"a\"\nsize = 1\n[[shared]]\nname = \"b\"\nsize = 1\n",
                    text("", "shared = \"c\"", T2, ONCE, "")
                ),
                "process[0].region[0].shared: no [[shared]] region `c` (defined: a, b)",
            ),
            (
                format!(
                    "{}\n[[shared]]\nname = \"s\"\nsize = 1\n",
                    text("", "size = 1\nshared = \"s\"", T2, ONCE, "")
                ),
                "process[0].region[0].size: give exactly one of `size` (a private region) or `shared` (a [[shared]] region)",
            ),
            (
                text("", "", T2, ONCE, ""),
                "process[0].region[0].size: give exactly one of `size` (a private region) or `shared` (a [[shared]] region)",
            ),
            (
                text("", "size = 1\nmempolicy = \"interleave:3\"", T2, ONCE, ""),
                "process[0].region[0].mempolicy: node 3 does not exist (the machine has nodes 0-1)",
            ),
            (
                "name = \"t\"\n[[process]]\nname = \"p\"\ngroup = []\n".into(),
                "process[0].group: a process needs at least one [[process.group]]",
            ),
            (
                text("", SIZE, T2, ONCE, &group("w", sweep)),
                "process[0].group[1].name: `w` is defined twice in this process",
            ),
            (
                text("", SIZE, "threads = \"cpus*9223372036854775807\"", ONCE, ""),
                "process[0].group[0].threads: `cpus*9223372036854775807` is too large",
            ),
            (
                text("", SIZE, "threads = 0", ONCE, ""),
                "process[0].group[0].threads: evaluates to 0 (allowed: 1-65536)",
            ),
            (
                text("", SIZE, "threads = 70000", ONCE, ""),
                "process[0].group[0].threads: evaluates to 70000 (allowed: 1-65536)",
            ),
            (
                text("", SIZE, "threads = 1\nwork_per_iteration = -1.0", ONCE, ""),
                "process[0].group[0].work_per_iteration: is -1 (allowed: a finite number >= 0)",
            ),
            (
                text("", SIZE, "threads = 1\niterations = 0", ONCE, ""),
                "process[0].group[0].iterations: must be >= 1",
            ),
            (
                text("", SIZE, "threads = 1\nstagger_s = -1.0", ONCE, ""),
                "process[0].group[0].stagger_s: must be a finite number >= 0",
            ),
            (
                text("", SIZE, "threads = 1\nstart_s = nan", ONCE, ""),
                "process[0].group[0].start_s: must be a finite number >= 0",
            ),
            (
                text("", SIZE, "threads = 1\naffinity = \"9\"", ONCE, ""),
                "process[0].group[0].affinity: `9` must name CPUs of the machine (0-3)",
            ),
            (
                text(
                    "cpuset_cpus = \"0-1\"",
                    SIZE,
                    "threads = 1\naffinity = \"3\"",
                    ONCE,
                    "",
                ),
                "process[0].group[0].affinity: shares no CPU with the process's cpuset (0-1)",
            ),
            (
                text("", SIZE, T2, ONCE, "").replace(
                    "[[process.group.phase]]\nkind = \"access\"\nregion = \"buf\"\npasses = 1\n",
                    "phase = []\n",
                ),
                "process[0].group[0].phase: a group needs at least one [[process.group.phase]]",
            ),
            (
                text("", SIZE, T2, ONCE, "")
                    .replace("region = \"buf\"\npasses", "region = \"nope\"\npasses"),
                "process[0].group[0].phase[0].region: no region `nope` in this process (defined: buf)",
            ),
            (
                text("", SIZE, T2, "", ""),
                "process[0].group[0].phase[0].passes: give exactly one of `passes`, `bytes` or `seconds`",
            ),
            (
                text("", SIZE, T2, "passes = 1\nseconds = 1", ""),
                "process[0].group[0].phase[0].passes: give exactly one of `passes`, `bytes` or `seconds`",
            ),
            (
                text("", SIZE, T2, "passes = 0", ""),
                "process[0].group[0].phase[0].passes: is 0e0 (allowed: > 0 and <= 1e9)",
            ),
            (
                text("", SIZE, T2, "seconds = 2e7", ""),
                "process[0].group[0].phase[0].seconds: is 2e7 (allowed: > 0 and <= 1e7)",
            ),
            (
                text("", SIZE, T2, "passes = 1\nwrite = 1.5", ""),
                "process[0].group[0].phase[0].write: is 1.5 (allowed: 0 to 1)",
            ),
            (
                text("", SIZE, T2, "passes = 1\ncache_hit = 1.0", ""),
                "process[0].group[0].phase[0].cache_hit: is 1 (allowed: 0 to <1)",
            ),
            (
                text("", SIZE, T2, "passes = 1\nns_per_byte = inf", ""),
                "process[0].group[0].phase[0].ns_per_byte: must be a finite number >= 0",
            ),
            (
                text("", SIZE, T2, "passes = 1\nmlp = 0.25", ""),
                "process[0].group[0].phase[0].mlp: is 0.25 (allowed: 0.5 to 1000)",
            ),
            (
                text(
                    "",
                    SIZE,
                    T2,
                    "passes = 1\npattern = \"zipf\"\nzipf_s = 6.0",
                    "",
                ),
                "process[0].group[0].phase[0].zipf_s: is 6 (allowed: 0 to 5)",
            ),
            (
                text(
                    "",
                    SIZE,
                    T2,
                    "passes = 1\npattern = \"hot\"\nhot_fraction = 1.0",
                    "",
                ),
                "process[0].group[0].phase[0].hot_fraction: is 1 (allowed: between 0 and 1)",
            ),
            (
                text(
                    "",
                    SIZE,
                    T2,
                    "passes = 1\npattern = \"hot\"\nhot_weight = 1.5",
                    "",
                ),
                "process[0].group[0].phase[0].hot_weight: is 1.5 (allowed: 0 to 1)",
            ),
            (
                text("", "size = 4096", T2, "passes = 1\nslice = \"thread\"", ""),
                "process[0].group[0].phase[0].slice: region `buf` has 1 pages, fewer than the group's 2 threads",
            ),
            (
                text("", SIZE, T2, "passes = 1\nmempolicy = \"preferred:2\"", ""),
                "process[0].group[0].phase[0].mempolicy: node 2 does not exist (the machine has nodes 0-1)",
            ),
            (
                text("", "size = 1\nkind = \"file\"", T2, ONCE, ""),
                "process[0].group[0].phase[0].write: region `buf` is a read-only file mapping: write must be 0",
            ),
            (
                format!(
                    "{}\n[[shared]]\nname = \"lib\"\nsize = 1\nkind = \"file\"\n",
                    text("", "shared = \"lib\"", T2, "passes = 1\nwrite = 0.5", "")
                ),
                "process[0].group[0].phase[0].write: region `buf` is a read-only file mapping: write must be 0",
            ),
            (
                text(
                    "",
                    SIZE,
                    T2,
                    ONCE,
                    "[[process.group.phase]]\nkind = \"compute\"\nseconds = -1.0\n",
                ),
                "process[0].group[0].phase[1].seconds: must be a finite number >= 0",
            ),
            (
                text(
                    "",
                    SIZE,
                    T2,
                    ONCE,
                    "[[process.group.phase]]\nkind = \"sleep\"\nseconds = 1.0\njitter = 2.0\n",
                ),
                "process[0].group[0].phase[1].jitter: is 2 (allowed: 0 to 1)",
            ),
            (
                text("", SIZE, T2, ONCE, &spawn("x")),
                "process[0].group[0].phase[1].group: no group `x` in this process (defined: w)",
            ),
            (
                text("", SIZE, T2, ONCE, &spawn("w")),
                "process[0].group[0].phase[1].group: a group cannot spawn itself",
            ),
            (
                text(
                    "",
                    SIZE,
                    T2,
                    ONCE,
                    &format!("{}{}{}", spawn("v"), spawn("v"), group("v", sweep)),
                ),
                "process[0].group[0].phase[2].group: group `v` is spawned twice",
            ),
            (
                text("", SIZE, T2, ONCE, &join("x")),
                "process[0].group[0].phase[1].group: no group `x` in this process (defined: w)",
            ),
            (
                text("", SIZE, T2, ONCE, &join("w")),
                "process[0].group[0].phase[1].group: a group cannot join itself",
            ),
            (
                text(
                    "",
                    SIZE,
                    T2,
                    ONCE,
                    &format!(
                        "{}{}",
                        spawn("v"),
                        group("v", &format!("{sweep}{}", spawn("w")))
                    ),
                ),
                "process[0].group: every group is spawned by another: none can start",
            ),
            (
                text(
                    "",
                    SIZE,
                    T2,
                    ONCE,
                    &format!(
                        "{}{}",
                        group("a", &format!("{sweep}{}", spawn("b"))),
                        group("b", &format!("{sweep}{}", spawn("a")))
                    ),
                ),
                "process[0].group[1]: group `a` is spawned only by groups that never start (a spawn cycle)",
            ),
            (
                text("instances = 2", "size = \"3GiB\"", T2, ONCE, ""),
                "process: the workload maps 6GiB but machine `tiny-2n4` has 4GiB of usable memory",
            ),
        ];
        let mut wrong = Vec::new();
        for (t, want) in &cases {
            let got = error(t);
            if got != *want {
                wrong.push(format!("want {want}\n got {got}"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }
}
