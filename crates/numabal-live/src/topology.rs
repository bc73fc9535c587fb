//! The host's NUMA topology from sysfs: nodes (CPUs, MemTotal, MemFree, SLIT row) and
//! CPUs (socket, core, SMT siblings, last-level cache).
//!
//! ```text
//!  node ─► socket ─► LLC ─► core ─► CPU (SMT siblings)
//!  nodeN/cpulist            cpuN/topology/physical_package_id, core_id,
//!  nodeN/meminfo              thread_siblings_list
//!  nodeN/distance           cpuN/cache/indexK/{level,type,shared_cpu_list}
//! ```

use numabal_model::Mask;
use std::fmt;
use std::path::{Path, PathBuf};

/// A file that could not be read or parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveError {
    /// The file.
    pub path: PathBuf,
    /// What was wrong.
    pub message: String,
}

impl fmt::Display for LiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

impl std::error::Error for LiveError {}

pub(crate) fn err(path: &Path, message: impl Into<String>) -> LiveError {
    LiveError {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

pub(crate) fn read(path: &Path) -> Result<String, LiveError> {
    std::fs::read_to_string(path).map_err(|e| err(path, format!("cannot read: {e}")))
}

fn read_list(path: &Path) -> Result<Mask, LiveError> {
    let text = read(path)?;
    Mask::parse_list(text.trim(), None)
        .map_err(|e| err(path, format!("not a CPU list ({e}): {:?}", text.trim())))
}

fn read_u64(path: &Path) -> Result<u64, LiveError> {
    let text = read(path)?;
    text.trim()
        .parse()
        .map_err(|_| err(path, format!("not a number: {:?}", text.trim())))
}

/// A NUMA node.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LiveNode {
    /// Node id (ids may be sparse).
    pub id: usize,
    /// Its CPUs (empty for a memory-only node).
    pub cpus: Mask,
    /// `MemTotal`, bytes.
    pub mem_total_bytes: u64,
    /// `MemFree`, bytes.
    pub mem_free_bytes: u64,
    /// `Inactive(file)`, bytes: page cache numad counts as free (its `-C 1`, the default).
    #[serde(default)]
    pub inactive_file_bytes: u64,
    /// SLIT row: distance to each node, in node order.
    pub distance: Vec<u32>,
}

impl LiveNode {
    /// Free memory as numad counts it, and as the policy core's `NodeObs` takes it: MemFree
    /// plus `Inactive(file)`, bytes.
    pub fn free_bytes(&self) -> u64 {
        self.mem_free_bytes + self.inactive_file_bytes
    }
}

/// A CPU.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LiveCpu {
    /// CPU id.
    pub id: usize,
    /// Its node.
    pub node: usize,
    /// `physical_package_id`.
    pub socket: u64,
    /// `core_id` (unique within a socket).
    pub core: u64,
    /// SMT siblings, itself included (`thread_siblings_list`).
    pub siblings: Mask,
    /// CPUs sharing its last-level cache (`shared_cpu_list` of its highest-level data or
    /// unified cache), if sysfs shows caches.
    pub llc: Option<Mask>,
}

/// The host's topology.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LiveTopology {
    /// Nodes in id order.
    pub nodes: Vec<LiveNode>,
    /// Online CPUs with a node, in id order.
    pub cpus: Vec<LiveCpu>,
    /// Memory tiers (`/sys/devices/virtual/memory_tiering/memory_tierN/nodelist`), by N;
    /// empty on kernels without them (before 6.1).
    pub tiers: Vec<(u32, Mask)>,
}

/// Numbered entries `prefixN` of a directory, sorted by N.
fn numbered(dir: &Path, prefix: &str) -> Result<Vec<(usize, PathBuf)>, LiveError> {
    let rd = std::fs::read_dir(dir).map_err(|e| err(dir, format!("cannot list: {e}")))?;
    let mut v: Vec<(usize, PathBuf)> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let n = name.strip_prefix(prefix)?.parse().ok()?;
            Some((n, e.path()))
        })
        .collect();
    v.sort();
    Ok(v)
}

/// `Node N MemTotal:  123 kB` -> bytes.
fn meminfo_field(path: &Path, text: &str, field: &str) -> Result<u64, LiveError> {
    for line in text.lines() {
        let mut parts = line.split_whitespace();
        // "Node", id, "Field:", value, "kB"
        let (Some("Node"), Some(_), Some(f), Some(v)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if f.trim_end_matches(':') == field {
            let kb: u64 = v
                .parse()
                .map_err(|_| err(path, format!("{field}: not a number: {v:?}")))?;
            return Ok(kb.saturating_mul(1024));
        }
    }
    Err(err(path, format!("no {field} line")))
}

/// The last-level cache of a CPU: the highest-level cache that holds data.
fn read_llc(cpu_dir: &Path) -> Result<Option<Mask>, LiveError> {
    let cache = cpu_dir.join("cache");
    if !cache.is_dir() {
        return Ok(None);
    }
    let mut best: Option<(u64, Mask)> = None;
    for (_, idx) in numbered(&cache, "index")? {
        let ty = read(&idx.join("type"))?;
        if ty.trim() == "Instruction" {
            continue;
        }
        let level = read_u64(&idx.join("level"))?;
        if best.as_ref().is_none_or(|(l, _)| level > *l) {
            best = Some((level, read_list(&idx.join("shared_cpu_list"))?));
        }
    }
    Ok(best.map(|(_, m)| m))
}

/// Read the topology under `root` (`/` on a host).
pub fn read_topology(root: &Path) -> Result<LiveTopology, LiveError> {
    let node_dir = root.join("sys/devices/system/node");
    let mut nodes = Vec::new();
    for (id, dir) in numbered(&node_dir, "node")? {
        let cpus = read_list(&dir.join("cpulist"))?;
        let mpath = dir.join("meminfo");
        let mtext = read(&mpath)?;
        let dpath = dir.join("distance");
        let distance = read(&dpath)?
            .split_whitespace()
            .map(|d| {
                d.parse()
                    .map_err(|_| err(&dpath, format!("not a distance: {d:?}")))
            })
            .collect::<Result<Vec<u32>, _>>()?;
        nodes.push(LiveNode {
            id,
            cpus,
            mem_total_bytes: meminfo_field(&mpath, &mtext, "MemTotal")?,
            mem_free_bytes: meminfo_field(&mpath, &mtext, "MemFree")?,
            // Absent on kernels without the split LRU (before 2.6.28): none.
            inactive_file_bytes: meminfo_field(&mpath, &mtext, "Inactive(file)").unwrap_or(0),
            distance,
        });
    }
    if nodes.is_empty() {
        return Err(err(&node_dir, "no node<N> directories (no NUMA support?)"));
    }
    for n in &nodes {
        if n.distance.len() != nodes.len() {
            return Err(err(
                &node_dir.join(format!("node{}/distance", n.id)),
                format!(
                    "has {} distances (allowed: {}, one per node)",
                    n.distance.len(),
                    nodes.len()
                ),
            ));
        }
    }
    let cpu_dir = root.join("sys/devices/system/cpu");
    let mut cpus = Vec::new();
    for n in &nodes {
        for c in n.cpus.iter() {
            let dir = cpu_dir.join(format!("cpu{c}"));
            let topo = dir.join("topology");
            cpus.push(LiveCpu {
                id: c,
                node: n.id,
                socket: read_u64(&topo.join("physical_package_id"))?,
                core: read_u64(&topo.join("core_id"))?,
                siblings: read_list(&topo.join("thread_siblings_list"))?,
                llc: read_llc(&dir)?,
            });
        }
    }
    cpus.sort_by_key(|c| c.id);
    let tiers = read_tiers(root)?;
    Ok(LiveTopology { nodes, cpus, tiers })
}

/// The memory tiers under `root`, if the kernel has them.
fn read_tiers(root: &Path) -> Result<Vec<(u32, Mask)>, LiveError> {
    let dir = root.join("sys/devices/virtual/memory_tiering");
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    numbered(&dir, "memory_tier")?
        .into_iter()
        .map(|(id, d)| Ok((id as u32, read_list(&d.join("nodelist"))?)))
        .collect()
}

impl LiveTopology {
    /// Sockets, each with its CPUs, in socket-id order.
    pub fn sockets(&self) -> Vec<(u64, Mask)> {
        let mut v: Vec<(u64, Mask)> = Vec::new();
        for c in &self.cpus {
            match v.iter_mut().find(|(s, _)| *s == c.socket) {
                Some((_, m)) => m.insert(c.id),
                None => v.push((c.socket, Mask::single(c.id))),
            }
        }
        v.sort_by_key(|(s, _)| *s);
        v
    }

    /// Distinct last-level caches (their CPU sets), in order of their first CPU.
    pub fn llcs(&self) -> Vec<Mask> {
        let mut v: Vec<Mask> = Vec::new();
        for c in &self.cpus {
            if let Some(l) = &c.llc
                && !v.contains(l)
            {
                v.push(l.clone());
            }
        }
        v
    }

    /// One more than the largest node id (ids may be sparse).
    pub fn nr_node_ids(&self) -> usize {
        self.nodes.iter().map(|n| n.id + 1).max().unwrap_or(1)
    }

    /// One more than the largest CPU id.
    pub fn nr_cpu_ids(&self) -> usize {
        self.cpus.iter().map(|c| c.id + 1).max().unwrap_or(1)
    }

    /// The node of each CPU id (`None` for ids with no CPU).
    pub fn cpu_nodes(&self) -> Vec<Option<usize>> {
        let mut v = vec![None; self.nr_cpu_ids()];
        for c in &self.cpus {
            v[c.id] = Some(c.node);
        }
        v
    }

    /// Hardware threads per core (the largest sibling set).
    pub fn threads_per_core(&self) -> usize {
        self.cpus
            .iter()
            .map(|c| c.siblings.count())
            .max()
            .unwrap_or(1)
    }
}

/// Fixture trees of `/sys` for tests (here and in the CLI's tests).
#[doc(hidden)]
pub mod fixture {
    use std::path::Path;

    /// A node: CPU list, MemTotal and MemFree in kB, SLIT row.
    pub struct Node<'a> {
        /// cpulist text.
        pub cpulist: &'a str,
        /// MemTotal, kB.
        pub total_kb: u64,
        /// MemFree, kB.
        pub free_kb: u64,
        /// distance text.
        pub distance: &'a str,
    }

    /// A CPU: id, socket, core, SMT siblings list, L3 shared list.
    pub struct Cpu<'a> {
        /// CPU id.
        pub id: usize,
        /// physical_package_id.
        pub socket: u64,
        /// core_id.
        pub core: u64,
        /// thread_siblings_list.
        pub siblings: &'a str,
        /// L3 shared_cpu_list (also writes an L1 instruction and an L2 cache of its own).
        pub l3: &'a str,
    }

    fn put(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    /// Write nodes `node0..` and the CPUs under `root/sys/devices/system`.
    pub fn write(root: &Path, nodes: &[Node<'_>], cpus: &[Cpu<'_>]) {
        let sys = root.join("sys/devices/system");
        for (i, n) in nodes.iter().enumerate() {
            let d = sys.join(format!("node/node{i}"));
            put(&d.join("cpulist"), &format!("{}\n", n.cpulist));
            put(&d.join("distance"), &format!("{}\n", n.distance));
            put(
                &d.join("meminfo"),
                &format!(
                    "Node {i} MemTotal:       {} kB\nNode {i} MemFree:        {} kB\nNode {i} MemUsed:        {} kB\n",
                    n.total_kb,
                    n.free_kb,
                    n.total_kb - n.free_kb
                ),
            );
        }
        for c in cpus {
            let d = sys.join(format!("cpu/cpu{}", c.id));
            put(
                &d.join("topology/physical_package_id"),
                &format!("{}\n", c.socket),
            );
            put(&d.join("topology/core_id"), &format!("{}\n", c.core));
            put(
                &d.join("topology/thread_siblings_list"),
                &format!("{}\n", c.siblings),
            );
            for (k, (level, ty, shared)) in [
                (1, "Instruction", c.id.to_string()),
                (2, "Unified", c.id.to_string()),
                (3, "Unified", c.l3.to_string()),
            ]
            .iter()
            .enumerate()
            {
                let idx = d.join(format!("cache/index{k}"));
                put(&idx.join("level"), &format!("{level}\n"));
                put(&idx.join("type"), &format!("{ty}\n"));
                put(&idx.join("shared_cpu_list"), &format!("{shared}\n"));
            }
        }
    }

    /// The 2-node QEMU guest the research notes captured `numactl --hardware` in (§2.1):
    /// 2 CPUs per node, 1510 / 1464 MB, free 1455 / 1414 MB, SLIT 10/20.
    pub fn guest_2n(root: &Path) {
        write(
            root,
            &[
                Node {
                    cpulist: "0-1",
                    total_kb: 1510 * 1024 + 300,
                    free_kb: 1455 * 1024 + 17,
                    distance: "10 20",
                },
                Node {
                    cpulist: "2-3",
                    total_kb: 1464 * 1024 + 1000,
                    free_kb: 1414 * 1024,
                    distance: "20 10",
                },
            ],
            &[
                Cpu {
                    id: 0,
                    socket: 0,
                    core: 0,
                    siblings: "0",
                    l3: "0-1",
                },
                Cpu {
                    id: 1,
                    socket: 0,
                    core: 1,
                    siblings: "1",
                    l3: "0-1",
                },
                Cpu {
                    id: 2,
                    socket: 1,
                    core: 0,
                    siblings: "2",
                    l3: "2-3",
                },
                Cpu {
                    id: 3,
                    socket: 1,
                    core: 1,
                    siblings: "3",
                    l3: "2-3",
                },
            ],
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_fixture_tree() {
        let dir = tempfile::tempdir().unwrap();
        fixture::guest_2n(dir.path());
        let t = read_topology(dir.path()).unwrap();
        assert_eq!(t.nodes.len(), 2);
        assert_eq!(t.nodes[1].cpus, Mask::from_ids([2, 3]));
        assert_eq!(t.nodes[0].mem_total_bytes >> 20, 1510);
        assert_eq!(t.nodes[1].mem_free_bytes >> 20, 1414);
        assert_eq!(t.nodes[0].distance, vec![10, 20]);
        assert_eq!(t.cpus.len(), 4);
        assert_eq!(t.cpus[3].node, 1);
        assert_eq!(
            t.sockets(),
            vec![(0, Mask::from_ids([0, 1])), (1, Mask::from_ids([2, 3]))]
        );
        assert_eq!(
            t.llcs(),
            vec![Mask::from_ids([0, 1]), Mask::from_ids([2, 3])]
        );
        assert_eq!(t.threads_per_core(), 1);
    }

    #[test]
    fn reads_memory_tiers_when_the_kernel_has_them() {
        let dir = tempfile::tempdir().unwrap();
        fixture::guest_2n(dir.path());
        assert!(read_topology(dir.path()).unwrap().tiers.is_empty());
        let mt = dir.path().join("sys/devices/virtual/memory_tiering");
        for (id, list) in [(4, "0-1\n"), (28, "2\n")] {
            let d = mt.join(format!("memory_tier{id}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("nodelist"), list).unwrap();
        }
        let t = read_topology(dir.path()).unwrap();
        assert_eq!(
            t.tiers,
            vec![(4, Mask::from_ids([0, 1])), (28, Mask::single(2))]
        );
        std::fs::write(mt.join("memory_tier28/nodelist"), "x\n").unwrap();
        let e = read_topology(dir.path()).unwrap_err().to_string();
        assert!(e.contains("memory_tier28/nodelist"), "{e}");
    }

    #[test]
    fn errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let e = read_topology(dir.path()).unwrap_err().to_string();
        assert!(e.contains("sys/devices/system/node: cannot list"), "{e}");
        fixture::guest_2n(dir.path());
        let d = dir.path().join("sys/devices/system/node/node1/distance");
        std::fs::write(&d, "20 10 30\n").unwrap();
        let e = read_topology(dir.path()).unwrap_err().to_string();
        assert!(
            e.ends_with("node1/distance: has 3 distances (allowed: 2, one per node)"),
            "{e}"
        );
        std::fs::write(&d, "20 x\n").unwrap();
        let e = read_topology(dir.path()).unwrap_err().to_string();
        assert!(e.ends_with("node1/distance: not a distance: \"x\""), "{e}");
        std::fs::write(&d, "20 10\n").unwrap();
        let m = dir.path().join("sys/devices/system/node/node0/meminfo");
        std::fs::write(&m, "Node 0 MemTotal: 12 kB\n").unwrap();
        let e = read_topology(dir.path()).unwrap_err().to_string();
        assert!(e.ends_with("node0/meminfo: no MemFree line"), "{e}");
    }
}
