//! Machines: topology (node → socket → LLC → core → CPU), memory per node, the SLIT
//! distance matrix, latencies and bandwidths, and the per-event costs the simulator charges.
//!
//! ```text
//!   machine
//!   ├── node 0 ── memory controller (controller_gib_s), memory_per_node
//!   │   └── LLC 0
//!   │       ├── core 0 ── CPU 0, CPU 12   (SMT siblings share the core)
//!   │       └── core 1 ── CPU 1, CPU 13
//!   └── node 1 ...
//!   node i ⇄ node j : SLIT distance, latency_ns[i][j], link_gib_s[i][j] (per direction)
//! ```
//!
//! `MachineSpec` is what a TOML file says; `Machine::from_spec` validates it and derives
//! the CPU layout. CPU numbering follows Linux on x86 unless the file lists each node's
//! CPUs: first thread of every core socket by socket, then the second threads
//! (`node0 = 0-5,12-17` on a 2 × 6 × 2 machine).

use crate::error::InputError;
use crate::mask::Mask;
use crate::units::{Bytes, Described};
use serde::de::{self, IntoDeserializer, Visitor};
use serde::{Deserialize, Serialize};

/// A value given once for all nodes, or once per node.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(untagged)]
pub enum PerNode<T> {
    /// Same for every node.
    All(T),
    /// One per node, in node order.
    Each(Vec<T>),
}

impl<T: Clone> PerNode<T> {
    fn expand(&self, n: usize, src: &str, field: &str) -> Result<Vec<T>, InputError> {
        match self {
            PerNode::All(v) => Ok(vec![v.clone(); n]),
            PerNode::Each(v) if v.len() == n => Ok(v.clone()),
            PerNode::Each(v) => Err(InputError::new(
                src,
                field,
                format!(
                    "has {} entries but the machine has {n} nodes (give one value, or one per node)",
                    v.len()
                ),
            )),
        }
    }
}

/// A value given once for all node pairs, or as an N×N matrix.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(untagged)]
pub enum PerPair {
    /// Same for every pair.
    All(f64),
    /// `m[i][j]` for the direction i → j.
    Matrix(Vec<Vec<f64>>),
}

/// By hand rather than `#[serde(untagged)]`: an untagged enum's error names the Rust type
/// and loses the path; here a bad entry of a list is `memory_per_node[1]` and a bad value
/// says what is allowed in the user's words.
impl<'de, T: Deserialize<'de> + Described> Deserialize<'de> for PerNode<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de> + Described> Visitor<'de> for V<T> {
            type Value = PerNode<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                write!(f, "{}, or a list of one {} per node", T::ONE, T::NOUN)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                T::deserialize(v.into_deserializer()).map(PerNode::All)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                T::deserialize(v.into_deserializer()).map(PerNode::All)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                T::deserialize(v.into_deserializer()).map(PerNode::All)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                T::deserialize(v.into_deserializer()).map(PerNode::All)
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = seq.next_element()? {
                    v.push(x);
                }
                Ok(PerNode::Each(v))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// By hand for the same reasons as [`PerNode`].
impl<'de> Deserialize<'de> for PerPair {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = PerPair;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number, or a matrix with one list of numbers per node")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<PerPair, E> {
                Ok(PerPair::All(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<PerPair, E> {
                Ok(PerPair::All(v as f64))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<PerPair, E> {
                Ok(PerPair::All(v))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<PerPair, A::Error> {
                let mut m = Vec::new();
                while let Some(row) = seq.next_element()? {
                    m.push(row);
                }
                Ok(PerPair::Matrix(m))
            }
        }
        d.deserialize_any(V)
    }
}

/// `[topology]` of a machine file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TopologySpec {
    /// Sockets (packages).
    pub sockets: u32,
    /// Physical cores per socket.
    pub cores_per_socket: u32,
    /// Hardware threads per core (2 with SMT/Hyper-Threading).
    #[serde(default = "one")]
    pub threads_per_core: u32,
    /// NUMA nodes per socket (>1 with sub-NUMA clustering).
    #[serde(default = "one")]
    pub nodes_per_socket: u32,
    /// Last-level caches per node (1 on Intel; several CCXs on AMD).
    #[serde(default = "one")]
    pub llcs_per_node: u32,
    /// Each node's CPUs in cpulist syntax, overriding the default numbering. An empty
    /// string makes a CPU-less (memory-only) node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_cpus: Option<Vec<String>>,
    /// Installed memory per node.
    pub memory_per_node: PerNode<Bytes>,
    /// SLIT distances: 10 on the diagonal, more than 10 elsewhere.
    pub distance: Vec<Vec<u32>>,
}

/// `[memory]`: the latency/bandwidth model of the memory system (see docs/model-notes.md).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MemorySpec {
    /// Unloaded latency of a local DRAM access. Remote latencies default to
    /// `local_latency_ns * distance / 10`.
    pub local_latency_ns: f64,
    /// Explicit unloaded latency matrix, overriding the SLIT-derived one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ns: Option<Vec<Vec<f64>>>,
    /// Bandwidth of each node's memory controller(s), GiB/s.
    pub controller_gib_s: PerNode<f64>,
    /// Interconnect bandwidth per direction between two nodes, GiB/s.
    pub link_gib_s: PerPair,
    /// Scale of the queueing delay a resource adds at utilisation u: `q * u / (1 - u)`.
    pub queue_scale_ns: f64,
    /// Latency of an access served by the last-level cache.
    #[serde(default = "default_llc_latency")]
    pub llc_latency_ns: f64,
    /// Memory per node the kernel and the rest of the system keep (not available to
    /// workloads): one value for every node, or one per node.
    #[serde(default = "no_reserve")]
    pub reserved_per_node: PerNode<Bytes>,
    /// What each node's memory is (memory tiers, `tiers.rs`): `dram` (the default), or
    /// `pmem` and `cxl`, memory the kernel onlines through the device-DAX `kmem` driver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_type: Option<PerNode<NodeType>>,
}

/// A node's kind of memory.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum NodeType {
    /// DRAM (a CPU-less DRAM node is plain memory the firmware describes).
    #[default]
    Dram,
    /// Persistent memory (Optane) as a NUMA node through device DAX and `kmem`.
    Pmem,
    /// A CXL memory expander, onlined through device DAX and `kmem`.
    Cxl,
}

impl Described for NodeType {
    const ONE: &'static str = "dram, pmem or cxl";
    const NOUN: &'static str = "memory type (dram, pmem or cxl)";
}

impl std::fmt::Display for NodeType {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(match self {
            NodeType::Dram => "dram",
            NodeType::Pmem => "pmem",
            NodeType::Cxl => "cxl",
        })
    }
}

/// `[core]`: what one core can do.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CoreSpec {
    /// Cache-line misses one hardware thread keeps in flight when streaming.
    #[serde(default = "default_mlp_thread")]
    pub outstanding_lines_per_thread: f64,
    /// Misses a whole core keeps in flight (shared by its SMT siblings).
    #[serde(default = "default_mlp_core")]
    pub outstanding_lines_per_core: f64,
    /// Core-side cost of streaming one byte (issuing the stores/loads), ns.
    #[serde(default = "default_stream_cost")]
    pub stream_ns_per_byte: f64,
    /// Throughput of a core's memory-instruction issue when both SMT siblings stream,
    /// relative to one thread alone (1.0 = shared evenly, no gain or loss).
    #[serde(default = "one_f")]
    pub smt_memory_throughput: f64,
    /// Throughput of a core on compute when both SMT siblings run, relative to one.
    #[serde(default = "default_smt_compute")]
    pub smt_compute_throughput: f64,
    /// Physical cores the machine's CPUs run on, when fewer than its CPUs (a guest's vCPUs
    /// on a host's cores): while more CPUs run, each runs at `host_cpus / running` of its
    /// speed. Unset: every CPU is a core of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_cpus: Option<f64>,
    /// On a shared host (`host_cpus`), what a TLB shootdown waits, ns of CPU work, for each
    /// CPU that runs the migrated page's process: a vCPU answers the flush's IPI only when
    /// the host runs it, so the wait grows with the CPUs to flush and the host's sharing.
    /// Unset or 0: the flat `costs.tlb_shootdown_ns` alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_shootdown_ns: Option<f64>,
    /// On a guest whose RAM is a host's anonymous memory (QEMU), what a frame's first use
    /// since boot costs the CPU that touches it, ns per 4 KiB page: the host faults the
    /// frame in and zeroes it. Counted for the pages a node holds beyond the most it has
    /// held so far (freed frames are taken again before fresh ones), whether a first touch
    /// or a migration puts them there. Unset or 0: none (a machine's own RAM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_first_use_ns: Option<f64>,
    /// Whether a CPU stays in a process's `mm_cpumask` after it switches to another
    /// process (x86 since "only trim the mm_cpumask once a second", mainline 2025: in
    /// 7.2, not in 6.1), so that a migration's batched TLB flush, which names no mm, sends
    /// its IPI to every CPU that ran the process and now runs anything. With
    /// `host_shootdown_ns`, the wait then counts those CPUs; else (false, 6.1: the bit is
    /// cleared at the switch) the CPUs that run the process.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mm_cpumask_kept: bool,
}

impl Default for CoreSpec {
    fn default() -> Self {
        CoreSpec {
            outstanding_lines_per_thread: default_mlp_thread(),
            outstanding_lines_per_core: default_mlp_core(),
            stream_ns_per_byte: default_stream_cost(),
            smt_memory_throughput: 1.0,
            smt_compute_throughput: default_smt_compute(),
            host_cpus: None,
            host_shootdown_ns: None,
            host_first_use_ns: None,
            mm_cpumask_kept: false,
        }
    }
}

/// `[costs]`: per-event costs charged to whoever pays them in Linux.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CostSpec {
    /// First-touch fault of a 4 KiB anonymous page, including clearing it (faulting task).
    #[serde(default = "d_page_fault")]
    pub page_fault_ns: f64,
    /// First-touch fault of a 2 MiB THP, including clearing it (faulting task).
    #[serde(default = "d_thp_fault")]
    pub thp_fault_ns: f64,
    /// A NUMA hinting fault without migration: trap, `do_numa_page`, restoring the PTE.
    #[serde(default = "d_hint_fault")]
    pub hint_fault_ns: f64,
    /// One PTE changed to PROT_NONE by `change_prot_numa` (scanning task).
    #[serde(default = "d_pte_update")]
    pub pte_update_ns: f64,
    /// Fixed cost of migrating one folio: isolation, unmap, remap (migrating task).
    #[serde(default = "d_migrate_page")]
    pub migrate_page_ns: f64,
    /// Copy bandwidth of one migrating task, GiB/s.
    #[serde(default = "d_migrate_copy")]
    pub migrate_copy_gib_s: f64,
    /// A TLB shootdown (IPIs to the CPUs running the mm) after unmapping.
    #[serde(default = "d_tlb")]
    pub tlb_shootdown_ns: f64,
    /// Creating a thread (`clone`), paid by the creator.
    #[serde(default = "d_spawn")]
    pub thread_spawn_ns: f64,
    /// A user-space daemon reading one small `/proc` file (open, read, close of a
    /// process's `stat`, `status`, `cmdline`, `cgroup`; `numa_maps`' page-table walk is
    /// `pte_update_ns` per present entry on top).
    #[serde(default = "d_proc_read")]
    pub proc_read_ns: f64,
    /// A daemon taking one access sample: reading it from perf's ring, the `move_pages`
    /// query of its page's node, its policy's work on it.
    #[serde(default = "d_perf_sample")]
    pub perf_sample_ns: f64,
    /// An EPT violation a vCPU takes on guest memory whose EPT entry KVM zapped: the VM
    /// exit, `kvm_faultin_pfn` (GUP; a NUMA hinting fault is charged on top), the new
    /// EPT entry under `mmu_lock`, the re-entry (the vCPU's thread).
    #[serde(default = "d_kvm_ept_fault")]
    pub kvm_ept_fault_ns: f64,
    /// One running vCPU kicked out of the guest by KVM's remote TLB flush after an EPT
    /// zap (`kvm_flush_remote_tlbs`): the IPI's VM exit, the flush, the re-entry (the
    /// vCPU's thread).
    #[serde(default = "d_kvm_tlb_flush")]
    pub kvm_tlb_flush_ns: f64,
    /// MGLRU's aging walk (`walk_mm`): its cost per line of page-table entries read (a
    /// THP's PMD, or 8 PTEs), the entries old. Unset: `pte_update_ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lru_walk_line_ns: Option<f64>,
    /// MGLRU's aging walk: its cost on top for each young entry, whose young bit it clears
    /// and whose folio it moves to the youngest generation. Unset: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lru_walk_young_ns: Option<f64>,
}

impl Default for CostSpec {
    fn default() -> Self {
        CostSpec {
            page_fault_ns: d_page_fault(),
            thp_fault_ns: d_thp_fault(),
            hint_fault_ns: d_hint_fault(),
            pte_update_ns: d_pte_update(),
            migrate_page_ns: d_migrate_page(),
            migrate_copy_gib_s: d_migrate_copy(),
            tlb_shootdown_ns: d_tlb(),
            thread_spawn_ns: d_spawn(),
            proc_read_ns: d_proc_read(),
            perf_sample_ns: d_perf_sample(),
            kvm_ept_fault_ns: d_kvm_ept_fault(),
            kvm_tlb_flush_ns: d_kvm_tlb_flush(),
            lru_walk_line_ns: None,
            lru_walk_young_ns: None,
        }
    }
}

fn one() -> u32 {
    1
}
fn one_f() -> f64 {
    1.0
}
fn no_reserve() -> PerNode<Bytes> {
    PerNode::All(Bytes(0))
}
fn default_llc_latency() -> f64 {
    20.0
}
fn default_mlp_thread() -> f64 {
    10.0
}
fn default_mlp_core() -> f64 {
    12.0
}
fn default_stream_cost() -> f64 {
    0.1
}
fn default_smt_compute() -> f64 {
    1.25
}
fn d_page_fault() -> f64 {
    1500.0
}
fn d_thp_fault() -> f64 {
    60000.0
}
fn d_hint_fault() -> f64 {
    1000.0
}
fn d_pte_update() -> f64 {
    5.0
}
fn d_proc_read() -> f64 {
    5000.0
}
fn d_perf_sample() -> f64 {
    1000.0
}
fn d_migrate_page() -> f64 {
    2000.0
}
fn d_migrate_copy() -> f64 {
    4.0
}
fn d_tlb() -> f64 {
    1500.0
}
/// David Matlack's eager page splitting commit (a3fe5dbda0a4, Linux 5.19): vCPUs that
/// re-fault 96 GiB at 4 KiB under `mmu_lock` spend about 270 CPU-seconds, 96 vCPUs each
/// faulting 1 GiB: 270 s / 25.2 M faults = 10.7 us per EPT violation.
fn d_kvm_ept_fault() -> f64 {
    10_700.0
}
/// A KVM_RUN round trip through one VM exit measured at about 2,500 cycles (SVM, the
/// KVM list, December 2020): 1.2 us at 2.1 GHz, plus the flush itself.
fn d_kvm_tlb_flush() -> f64 {
    1_500.0
}
fn d_spawn() -> f64 {
    30000.0
}

/// A machine file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MachineSpec {
    /// Preset name or a short label.
    pub name: String,
    /// One line for `numabal list`.
    #[serde(default)]
    pub description: String,
    /// CPUs, nodes, memory, distances.
    pub topology: TopologySpec,
    /// Latency/bandwidth model.
    pub memory: MemorySpec,
    /// Core capabilities.
    #[serde(default)]
    pub core: CoreSpec,
    /// Per-event costs.
    #[serde(default)]
    pub costs: CostSpec,
}

/// One logical CPU.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuInfo {
    /// Node the CPU belongs to.
    pub node: usize,
    /// Global core index.
    pub core: usize,
    /// Global LLC index.
    pub llc: usize,
    /// Socket (package).
    pub socket: usize,
    /// 0 for the first hardware thread of its core, 1 for the sibling, ...
    pub smt_index: usize,
}

/// One physical core.
#[derive(Debug, Clone, PartialEq)]
pub struct CoreInfo {
    /// Its hardware threads, first thread first.
    pub cpus: Vec<usize>,
    /// Node.
    pub node: usize,
    /// Global LLC index.
    pub llc: usize,
}

/// One last-level cache domain.
#[derive(Debug, Clone, PartialEq)]
pub struct LlcInfo {
    /// CPUs sharing it.
    pub cpus: Mask,
    /// Node.
    pub node: usize,
}

/// One NUMA node.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeInfo {
    /// CPUs of the node (may be empty for a memory-only node).
    pub cpus: Mask,
    /// Installed memory.
    pub memory_bytes: u64,
    /// Memory not available to workloads.
    pub reserved_bytes: u64,
    /// Memory-controller bandwidth, bytes per ns.
    pub controller_bytes_per_ns: f64,
    /// What its memory is.
    pub node_type: NodeType,
    /// Socket.
    pub socket: usize,
}

/// A validated machine with its derived layout.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    /// The file as given (after overrides), for reports.
    pub spec: MachineSpec,
    /// Nodes, by node id.
    pub nodes: Vec<NodeInfo>,
    /// CPUs, by CPU id.
    pub cpus: Vec<CpuInfo>,
    /// Cores, by global core index.
    pub cores: Vec<CoreInfo>,
    /// LLCs, by global index.
    pub llcs: Vec<LlcInfo>,
    /// SLIT.
    pub distance: Vec<Vec<u32>>,
    /// Unloaded latency, ns, `[cpu node][memory node]`.
    pub latency_ns: Vec<Vec<f64>>,
    /// Interconnect bandwidth per direction, bytes per ns, `[from][to]` (diagonal unused).
    pub link_bytes_per_ns: Vec<Vec<f64>>,
}

/// A finite number greater than zero (NaN and infinities fail).
fn positive(x: f64) -> bool {
    x > 0.0 && x.is_finite()
}

/// GiB/s to bytes per nanosecond.
pub fn gib_s_to_bytes_per_ns(g: f64) -> f64 {
    g * (1u64 << 30) as f64 / 1e9
}

impl Machine {
    /// Validate a spec and derive the layout. `src` names the file for errors.
    pub fn from_spec(spec: MachineSpec, src: &str) -> Result<Machine, InputError> {
        // Section by section in a fixed order: the first error found is the one reported.
        let t = &spec.topology;
        check_topology_counts(t, src)?;
        let node_cpu_lists = node_cpu_lists(t, src)?;
        let n = node_cpu_lists.len();
        check_slit(&t.distance, n, src)?;
        let mem = t
            .memory_per_node
            .expand(n, src, "topology.memory_per_node")?;
        let ctrl = spec
            .memory
            .controller_gib_s
            .expand(n, src, "memory.controller_gib_s")?;
        let reserved = spec
            .memory
            .reserved_per_node
            .expand(n, src, "memory.reserved_per_node")?;
        let types = match &spec.memory.node_type {
            Some(v) => v.expand(n, src, "memory.node_type")?,
            None => vec![NodeType::Dram; n],
        };
        let total_cpus = check_cpu_ids(&node_cpu_lists, t, &mem, &reserved, src)?;
        let CpuLayout { cpus, cores, llcs } = cpu_layout(t, &node_cpu_lists, total_cpus);
        let mut nodes = node_infos(t, &node_cpu_lists, &mem, &ctrl, &reserved, src)?;
        for (node, ty) in nodes.iter_mut().zip(types) {
            node.node_type = ty;
        }
        let latency_ns = latencies(&spec.memory, &t.distance, src)?;
        let link_bytes_per_ns = link_bandwidths(&spec.memory, n, src)?;
        check_queueing(&spec.memory, src)?;
        check_core(&spec.core, total_cpus, src)?;
        check_costs(&spec.costs, src)?;
        Ok(Machine {
            nodes,
            cpus,
            cores,
            llcs,
            distance: t.distance.clone(),
            latency_ns,
            link_bytes_per_ns,
            spec,
        })
    }

    /// Machine name.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// Number of nodes.
    pub fn nr_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Number of logical CPUs.
    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }

    /// Node of a CPU.
    #[inline]
    pub fn cpu_node(&self, cpu: usize) -> usize {
        self.cpus[cpu].node
    }

    /// What node `n`'s memory is.
    pub fn node_type(&self, n: usize) -> NodeType {
        self.nodes[n].node_type
    }

    /// The memory tiers the kernel `k` forms on this machine.
    pub fn memory_tiers(&self, k: crate::KernelVersion) -> crate::tiers::MemoryTiers {
        crate::tiers::MemoryTiers::new(self, k)
    }

    /// Nodes that have CPUs.
    pub fn nodes_with_cpus(&self) -> Mask {
        Mask::from_ids((0..self.nr_nodes()).filter(|&n| !self.nodes[n].cpus.is_empty()))
    }

    /// CPUs of a set of nodes.
    pub fn cpus_of_nodes(&self, nodes: &Mask) -> Mask {
        nodes
            .iter()
            .filter(|&n| n < self.nr_nodes())
            .fold(Mask::new(), |acc, n| acc.or(&self.nodes[n].cpus))
    }

    /// Nodes sorted by distance from `from` (ties by node id): the kernel's zonelist order.
    pub fn nodes_by_distance(&self, from: usize) -> Vec<usize> {
        let mut v: Vec<usize> = (0..self.nr_nodes()).collect();
        v.sort_by_key(|&j| (self.distance[from][j], j));
        v
    }

    /// Memory of a node usable by workloads, bytes.
    pub fn node_usable_bytes(&self, node: usize) -> u64 {
        let n = &self.nodes[node];
        n.memory_bytes - n.reserved_bytes
    }

    /// Pages of a node usable by workloads.
    pub fn node_usable_pages(&self, node: usize) -> u64 {
        self.node_usable_bytes(node) / crate::PAGE_SIZE
    }

    /// Total memory usable by workloads, bytes.
    pub fn usable_bytes(&self) -> u64 {
        (0..self.nr_nodes())
            .map(|n| self.node_usable_bytes(n))
            .sum()
    }

    /// Cores per node of node 0 (used for "cores_per_node" counts).
    pub fn nr_cores(&self) -> usize {
        self.cores.len()
    }

    /// Quantities workload counts may refer to.
    pub fn count_context(&self) -> crate::units::CountContext {
        crate::units::CountContext {
            cpus: self.nr_cpus() as u64,
            cores: self.nr_cores() as u64,
            nodes: self.nodes_with_cpus().count() as u64,
        }
    }
}

// `Machine::from_spec`'s steps, one per section of the machine file.

/// `[topology]`'s counts: sockets, cores, threads, nodes per socket.
fn check_topology_counts(t: &TopologySpec, src: &str) -> Result<(), InputError> {
    let err = |field: &str, msg: String| InputError::new(src, field, msg);
    if t.sockets == 0 || t.sockets > 64 {
        return Err(err(
            "topology.sockets",
            format!("is {} (allowed: 1-64)", t.sockets),
        ));
    }
    if t.cores_per_socket == 0 || t.cores_per_socket > 1024 {
        return Err(err(
            "topology.cores_per_socket",
            format!("is {} (allowed: 1-1024)", t.cores_per_socket),
        ));
    }
    if t.threads_per_core == 0 || t.threads_per_core > 8 {
        return Err(err(
            "topology.threads_per_core",
            format!("is {} (allowed: 1-8)", t.threads_per_core),
        ));
    }
    if t.nodes_per_socket == 0 || !t.cores_per_socket.is_multiple_of(t.nodes_per_socket) {
        return Err(err(
            "topology.nodes_per_socket",
            format!(
                "is {} (allowed: a divisor of cores_per_socket = {})",
                t.nodes_per_socket, t.cores_per_socket
            ),
        ));
    }
    Ok(())
}

/// Node CPU lists: given (`topology.node_cpus`), or Linux x86 numbering; 1-64 nodes.
fn node_cpu_lists(t: &TopologySpec, src: &str) -> Result<Vec<Mask>, InputError> {
    let err = |field: &str, msg: String| InputError::new(src, field, msg);
    let node_cpu_lists: Vec<Mask> = match &t.node_cpus {
        Some(lists) => {
            let mut v = Vec::new();
            for (i, l) in lists.iter().enumerate() {
                v.push(
                    Mask::parse_list(l, None)
                        .map_err(|e| err(&format!("topology.node_cpus[{i}]"), e))?,
                );
            }
            v
        }
        None => linux_x86_numbering(t),
    };
    let n = node_cpu_lists.len();
    if n == 0 || n > 64 {
        return Err(err(
            "topology.node_cpus",
            format!("gives {n} nodes (allowed: 1-64)"),
        ));
    }
    Ok(node_cpu_lists)
}

/// Each node's CPUs as Linux numbers them on x86: the first thread of every core, socket
/// by socket, then the second threads, and so on.
fn linux_x86_numbering(t: &TopologySpec) -> Vec<Mask> {
    let tpc = t.threads_per_core as usize;
    let per_node = (t.cores_per_socket / t.nodes_per_socket) as usize;
    let total_cores = (t.sockets * t.cores_per_socket) as usize;
    let nodes = (t.sockets * t.nodes_per_socket) as usize;
    let mut v = vec![Mask::new(); nodes];
    for th in 0..tpc {
        for core in 0..total_cores {
            let socket = core / t.cores_per_socket as usize;
            let in_socket = core % t.cores_per_socket as usize;
            let node = socket * t.nodes_per_socket as usize + in_socket / per_node;
            v[node].insert(th * total_cores + core);
        }
    }
    v
}

/// `topology.distance`, the SLIT: an n×n matrix, `LOCAL_DISTANCE` on the diagonal,
/// 11-254 elsewhere.
fn check_slit(distance: &[Vec<u32>], n: usize, src: &str) -> Result<(), InputError> {
    let err = |field: &str, msg: String| InputError::new(src, field, msg);
    if distance.len() != n || distance.iter().any(|r| r.len() != n) {
        let shape: Vec<String> = distance.iter().map(|r| r.len().to_string()).collect();
        return Err(err(
            "topology.distance",
            format!(
                "must be a {n}x{n} matrix (one row and one column per node) but has {} rows of lengths [{}]",
                distance.len(),
                shape.join(", ")
            ),
        ));
    }
    for (i, row) in distance.iter().enumerate() {
        for (j, &d) in row.iter().enumerate() {
            if i == j && d != crate::LOCAL_DISTANCE {
                return Err(err(
                    &format!("topology.distance[{i}][{j}]"),
                    format!("is {d}; the diagonal must be 10 (LOCAL_DISTANCE)"),
                ));
            }
            if i != j && !(crate::LOCAL_DISTANCE + 1..=254).contains(&d) {
                return Err(err(
                    &format!("topology.distance[{i}][{j}]"),
                    format!("is {d} (allowed: 11-254 between different nodes)"),
                ));
            }
        }
    }
    Ok(())
}

/// CPUs: every id 0..total exactly once, whole cores per node, no node without both CPUs
/// and memory, some memory beyond `reserved_per_node`. Returns the number of CPUs.
fn check_cpu_ids(
    node_cpu_lists: &[Mask],
    t: &TopologySpec,
    mem: &[Bytes],
    reserved: &[Bytes],
    src: &str,
) -> Result<usize, InputError> {
    let err = |field: &str, msg: String| InputError::new(src, field, msg);
    let tpc = t.threads_per_core as usize;
    let total_cpus: usize = node_cpu_lists.iter().map(|m| m.count()).sum();
    let mut seen = Mask::new();
    for (i, m) in node_cpu_lists.iter().enumerate() {
        if m.intersects(&seen) {
            return Err(err(
                &format!("topology.node_cpus[{i}]"),
                format!("lists CPUs {} that another node already has", m.and(&seen)),
            ));
        }
        seen = seen.or(m);
        if m.count() % tpc != 0 {
            return Err(err(
                &format!("topology.node_cpus[{i}]"),
                format!(
                    "has {} CPUs, not a multiple of threads_per_core = {tpc}",
                    m.count()
                ),
            ));
        }
        if m.is_empty() && mem[i].0 <= reserved[i].0 {
            return Err(err(
                "topology",
                format!(
                    "node {i} has neither CPUs nor memory (every node needs CPUs, memory or both)"
                ),
            ));
        }
    }
    if mem.iter().zip(reserved).all(|(m, r)| m.0 <= r.0) {
        return Err(err(
            "topology.memory_per_node",
            "no node has memory beyond reserved_per_node (the machine needs usable memory)".into(),
        ));
    }
    if total_cpus == 0 {
        return Err(err("topology", "the machine has no CPUs".into()));
    }
    if seen != Mask::full(total_cpus) {
        return Err(err(
            "topology.node_cpus",
            format!(
                "CPU ids must be 0-{} with none missing, got {}",
                total_cpus - 1,
                seen
            ),
        ));
    }
    Ok(total_cpus)
}

/// The socket of a node (the last socket for nodes past `sockets x nodes_per_socket`).
fn socket_of(t: &TopologySpec, node: usize) -> usize {
    (node / t.nodes_per_socket as usize).min(t.sockets as usize - 1)
}

/// The CPUs, cores and LLCs derived from the node CPU lists.
struct CpuLayout {
    cpus: Vec<CpuInfo>,
    cores: Vec<CoreInfo>,
    llcs: Vec<LlcInfo>,
}

/// Split each node's CPUs into cores (a core's threads are `threads_per_core` apart in
/// the node's list) and its cores evenly over `llcs_per_node` LLCs.
fn cpu_layout(t: &TopologySpec, node_cpu_lists: &[Mask], total_cpus: usize) -> CpuLayout {
    let tpc = t.threads_per_core as usize;
    let mut cpus = vec![
        CpuInfo {
            node: 0,
            core: 0,
            llc: 0,
            socket: 0,
            smt_index: 0
        };
        total_cpus
    ];
    let mut cores = Vec::new();
    let mut llcs = Vec::new();
    let llcs_per_node = t.llcs_per_node.max(1) as usize;
    for (node, list) in node_cpu_lists.iter().enumerate() {
        let ids: Vec<usize> = list.iter().collect();
        let ncores = ids.len() / tpc;
        let socket = socket_of(t, node);
        let nllc = if ncores == 0 {
            0
        } else {
            llcs_per_node.min(ncores)
        };
        let llc_base = llcs.len();
        for l in 0..nllc {
            let _ = l;
            llcs.push(LlcInfo {
                cpus: Mask::new(),
                node,
            });
        }
        for k in 0..ncores {
            let llc = llc_base + k * nllc / ncores;
            let core_id = cores.len();
            let mut core_cpus = Vec::new();
            for th in 0..tpc {
                let cpu = ids[th * ncores + k];
                cpus[cpu] = CpuInfo {
                    node,
                    core: core_id,
                    llc,
                    socket,
                    smt_index: th,
                };
                llcs[llc].cpus.insert(cpu);
                core_cpus.push(cpu);
            }
            cores.push(CoreInfo {
                cpus: core_cpus,
                node,
                llc,
            });
        }
    }
    CpuLayout { cpus, cores, llcs }
}

/// The nodes: their CPUs, memory (`topology.memory_per_node`, `memory.reserved_per_node`)
/// and memory controller (`memory.controller_gib_s`, checked node by node).
fn node_infos(
    t: &TopologySpec,
    node_cpu_lists: &[Mask],
    mem: &[Bytes],
    ctrl: &[f64],
    reserved: &[Bytes],
    src: &str,
) -> Result<Vec<NodeInfo>, InputError> {
    let err = |field: &str, msg: String| InputError::new(src, field, msg);
    let mut nodes = Vec::new();
    for (node, list) in node_cpu_lists.iter().enumerate() {
        if !positive(ctrl[node]) {
            return Err(err(
                "memory.controller_gib_s",
                format!(
                    "node {node}: is {} (allowed: a finite number > 0)",
                    ctrl[node]
                ),
            ));
        }
        nodes.push(NodeInfo {
            cpus: list.clone(),
            memory_bytes: mem[node].0,
            reserved_bytes: reserved[node].0.min(mem[node].0),
            controller_bytes_per_ns: gib_s_to_bytes_per_ns(ctrl[node]),
            node_type: NodeType::Dram,
            socket: socket_of(t, node),
        });
    }
    Ok(nodes)
}

/// `[memory]`'s latencies: local, LLC, and the unloaded matrix (given, or
/// `local_latency_ns * distance / 10`).
fn latencies(
    m: &MemorySpec,
    distance: &[Vec<u32>],
    src: &str,
) -> Result<Vec<Vec<f64>>, InputError> {
    let err = |field: &str, msg: String| InputError::new(src, field, msg);
    let n = distance.len();
    if !positive(m.local_latency_ns) {
        return Err(err(
            "memory.local_latency_ns",
            format!("is {} (allowed: a finite number > 0)", m.local_latency_ns),
        ));
    }
    if !(m.llc_latency_ns >= 0.0 && m.llc_latency_ns.is_finite()) {
        return Err(err(
            "memory.llc_latency_ns",
            format!("is {} (allowed: a finite number >= 0)", m.llc_latency_ns),
        ));
    }
    let latency_ns = match &m.latency_ns {
        Some(l) => {
            if l.len() != n || l.iter().any(|r| r.len() != n) {
                return Err(err(
                    "memory.latency_ns",
                    format!("must be a {n}x{n} matrix"),
                ));
            }
            if l.iter().flatten().any(|&x| !positive(x)) {
                return Err(err(
                    "memory.latency_ns",
                    "entries must be finite numbers > 0".into(),
                ));
            }
            l.clone()
        }
        None => (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| m.local_latency_ns * distance[i][j] as f64 / 10.0)
                    .collect()
            })
            .collect(),
    };
    Ok(latency_ns)
}

/// `memory.link_gib_s`, the interconnect: one number or an n×n matrix, every link between
/// two nodes positive; in bytes per ns.
fn link_bandwidths(m: &MemorySpec, n: usize, src: &str) -> Result<Vec<Vec<f64>>, InputError> {
    let err = |field: &str, msg: String| InputError::new(src, field, msg);
    let link = match &m.link_gib_s {
        PerPair::All(v) => vec![vec![*v; n]; n],
        PerPair::Matrix(mm) => {
            if mm.len() != n || mm.iter().any(|r| r.len() != n) {
                return Err(err(
                    "memory.link_gib_s",
                    format!("must be a number or a {n}x{n} matrix"),
                ));
            }
            mm.clone()
        }
    };
    for (i, row) in link.iter().enumerate() {
        for (j, &v) in row.iter().enumerate() {
            if i != j && !positive(v) {
                return Err(err(
                    "memory.link_gib_s",
                    format!("link {i}->{j} is {v} (allowed: a finite number > 0 GiB/s)"),
                ));
            }
        }
    }
    Ok(link
        .iter()
        .map(|r| r.iter().map(|&g| gib_s_to_bytes_per_ns(g)).collect())
        .collect())
}

/// `memory.queue_scale_ns`.
fn check_queueing(m: &MemorySpec, src: &str) -> Result<(), InputError> {
    if !positive(m.queue_scale_ns) {
        return Err(InputError::new(
            src,
            "memory.queue_scale_ns",
            format!("is {} (allowed: a finite number > 0)", m.queue_scale_ns),
        ));
    }
    Ok(())
}

/// `[core]`: each value within its range.
fn check_core(c: &CoreSpec, nr_cpus: usize, src: &str) -> Result<(), InputError> {
    for (name, v, lo, hi) in [
        (
            "core.outstanding_lines_per_thread",
            c.outstanding_lines_per_thread,
            0.5,
            1000.0,
        ),
        (
            "core.outstanding_lines_per_core",
            c.outstanding_lines_per_core,
            0.5,
            1000.0,
        ),
        ("core.stream_ns_per_byte", c.stream_ns_per_byte, 0.0, 100.0),
        (
            "core.smt_memory_throughput",
            c.smt_memory_throughput,
            0.1,
            4.0,
        ),
        (
            "core.smt_compute_throughput",
            c.smt_compute_throughput,
            0.1,
            4.0,
        ),
    ] {
        if !(v >= lo && v <= hi) {
            return Err(InputError::new(
                src,
                name,
                format!("is {v} (allowed: {lo} to {hi})"),
            ));
        }
    }
    if let Some(h) = c.host_cpus
        && !(h >= 0.1 && h <= nr_cpus as f64)
    {
        return Err(InputError::new(
            src,
            "core.host_cpus",
            format!("is {h} (allowed: 0.1 to the machine's {nr_cpus} CPUs, or unset)"),
        ));
    }
    for (name, v) in [
        ("core.host_shootdown_ns", c.host_shootdown_ns),
        ("core.host_first_use_ns", c.host_first_use_ns),
    ] {
        if let Some(w) = v
            && !(0.0..=1e9).contains(&w)
        {
            return Err(InputError::new(
                src,
                name,
                format!("is {w} (allowed: 0 to 1000000000 ns, or unset)"),
            ));
        }
    }
    Ok(())
}

/// `[costs]`: every cost a finite number >= 0, the copy bandwidth > 0.
fn check_costs(k: &CostSpec, src: &str) -> Result<(), InputError> {
    let required = [
        ("costs.page_fault_ns", k.page_fault_ns),
        ("costs.thp_fault_ns", k.thp_fault_ns),
        ("costs.hint_fault_ns", k.hint_fault_ns),
        ("costs.pte_update_ns", k.pte_update_ns),
        ("costs.migrate_page_ns", k.migrate_page_ns),
        ("costs.tlb_shootdown_ns", k.tlb_shootdown_ns),
        ("costs.thread_spawn_ns", k.thread_spawn_ns),
        ("costs.proc_read_ns", k.proc_read_ns),
        ("costs.perf_sample_ns", k.perf_sample_ns),
        ("costs.kvm_ept_fault_ns", k.kvm_ept_fault_ns),
        ("costs.kvm_tlb_flush_ns", k.kvm_tlb_flush_ns),
    ]
    .map(|(name, v)| (name, Some(v), ""));
    let optional = [
        ("costs.lru_walk_line_ns", k.lru_walk_line_ns, ", or unset"),
        ("costs.lru_walk_young_ns", k.lru_walk_young_ns, ", or unset"),
    ];
    for (name, v, or_unset) in required.into_iter().chain(optional) {
        if let Some(v) = v.filter(|v| !(*v >= 0.0 && v.is_finite())) {
            return Err(InputError::new(
                src,
                name,
                format!("is {v} (allowed: a finite number >= 0{or_unset})"),
            ));
        }
    }
    if !positive(k.migrate_copy_gib_s) {
        return Err(InputError::new(
            src,
            "costs.migrate_copy_gib_s",
            format!("is {} (allowed: a finite number > 0)", k.migrate_copy_gib_s),
        ));
    }
    Ok(())
}
