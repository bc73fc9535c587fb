//! Per-task NUMA statistics and numa_groups (kernel/sched/fair.c: `task_numa_fault`,
//! `task_numa_placement`, `numa_group_count_active_nodes`, `task_numa_group`,
//! `task_weight`, `group_weight`). Integer arithmetic as in the kernel.

use super::filter::ACTIVE_NODE_FRACTION;

/// `enum numa_faults_stats`.
pub const NUMA_MEM: usize = 0;
/// CPU-side decayed faults.
pub const NUMA_CPU: usize = 1;
/// Memory-side faults since the last placement.
pub const NUMA_MEMBUF: usize = 2;
/// CPU-side faults since the last placement.
pub const NUMA_CPUBUF: usize = 3;

/// `LOAD_AVG_MAX`: the first placement's period when no runtime history exists.
pub const LOAD_AVG_MAX: u64 = 47742;

/// `p->numa_faults[]`: 4 kinds x nodes x {shared, private}.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Faults {
    nr_nodes: usize,
    v: Vec<u64>,
}

impl Faults {
    /// All zero.
    pub fn new(nr_nodes: usize, kinds: usize) -> Faults {
        Faults {
            nr_nodes,
            v: vec![0; kinds * nr_nodes * 2],
        }
    }
    /// `task_faults_idx(s, nid, priv)`.
    pub fn idx(&self, s: usize, nid: usize, private: bool) -> usize {
        2 * (s * self.nr_nodes + nid) + private as usize
    }
    /// One bucket.
    pub fn get(&self, s: usize, nid: usize, private: bool) -> u64 {
        self.v[self.idx(s, nid, private)]
    }
    /// Mutable bucket.
    pub fn at(&mut self, s: usize, nid: usize, private: bool) -> &mut u64 {
        let i = self.idx(s, nid, private);
        &mut self.v[i]
    }
    /// Shared + private of kind `s` on `nid`.
    pub fn both(&self, s: usize, nid: usize) -> u64 {
        self.get(s, nid, false) + self.get(s, nid, true)
    }
}

/// `struct numa_group`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumaGroup {
    /// Tasks in the group (= `refcount` here: no other references are modelled).
    pub nr_tasks: u64,
    /// The creator's PID.
    pub gid: u32,
    /// Nodes with more than 1/3 of the busiest node's CPU faults.
    pub active_nodes: u64,
    /// The busiest node's CPU faults.
    pub max_faults_cpu: u64,
    /// Sum of the members' `NUMA_MEM` faults.
    pub total_faults: u64,
    /// `NUMA_MEM` and `NUMA_CPU` per node and priv.
    pub faults: Faults,
}

impl NumaGroup {
    /// A singleton group seeded with `p`'s decayed statistics.
    pub fn new(gid: u32, f: &Faults, total: u64, nr_nodes: usize) -> NumaGroup {
        let mut g = Faults::new(nr_nodes, 2);
        for n in 0..nr_nodes {
            for private in [false, true] {
                *g.at(NUMA_MEM, n, private) = f.get(NUMA_MEM, n, private);
                *g.at(NUMA_CPU, n, private) = f.get(NUMA_CPU, n, private);
            }
        }
        NumaGroup {
            nr_tasks: 1,
            gid,
            active_nodes: 1,
            max_faults_cpu: 0,
            total_faults: total,
            faults: g,
        }
    }

    /// `group_faults_cpu(ng, nid)`.
    pub fn faults_cpu(&self, nid: usize) -> u64 {
        self.faults.both(NUMA_CPU, nid)
    }
    /// `group_faults(ng, nid)`-style memory total.
    pub fn faults_mem(&self, nid: usize) -> u64 {
        self.faults.both(NUMA_MEM, nid)
    }
    /// `group_faults_shared` / `group_faults_priv` summed over nodes (NUMA_MEM).
    pub fn shared_private(&self, nr_nodes: usize) -> (u64, u64) {
        let mut s = 0;
        let mut p = 0;
        for n in 0..nr_nodes {
            s += self.faults.get(NUMA_MEM, n, false);
            p += self.faults.get(NUMA_MEM, n, true);
        }
        (s, p)
    }
    /// `numa_group_count_active_nodes` over the nodes with CPUs.
    pub fn count_active_nodes(&mut self, cpu_nodes: &[usize]) {
        let max = cpu_nodes
            .iter()
            .map(|&n| self.faults_cpu(n))
            .max()
            .unwrap_or(0);
        self.max_faults_cpu = max;
        self.active_nodes = cpu_nodes
            .iter()
            .filter(|&&n| self.faults_cpu(n) * ACTIVE_NODE_FRACTION > max)
            .count() as u64;
    }
    /// Whether `nid` is one of the group's active nodes.
    pub fn active(&self, nid: usize) -> bool {
        self.faults_cpu(nid) * ACTIVE_NODE_FRACTION > self.max_faults_cpu
    }
    /// Add (`sign` = 1) or remove (`-1`) a member's decayed statistics.
    pub fn transfer(&mut self, f: &Faults, total: u64, nr_nodes: usize, add: bool) {
        for n in 0..nr_nodes {
            for private in [false, true] {
                for s in [NUMA_MEM, NUMA_CPU] {
                    let v = f.get(s, n, private);
                    let b = self.faults.at(s, n, private);
                    *b = if add { *b + v } else { b.saturating_sub(v) };
                }
            }
        }
        self.total_faults = if add {
            self.total_faults + total
        } else {
            self.total_faults.saturating_sub(total)
        };
    }
}

/// The numbers `task_numa_placement` produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// The node with the most faults (task's, or group's when grouped); ties to the lower
    /// node.
    pub max_nid: Option<usize>,
    /// Its faults.
    pub max_faults: u64,
    /// Shared faults since the last placement (`fault_types[0]`).
    pub shared: u64,
    /// Private faults since the last placement (`fault_types[1]`).
    pub private: u64,
}

/// Fold the fault buffers into the decayed statistics (`task_numa_placement`'s loop):
/// `MEM = MEM - MEM/2 + MEMBUF`, `CPU = CPU - CPU/2 + f_weight`, where `f_weight` weights
/// the CPU-side buffer by the task's CPU share since the last placement
/// (`runtime/period`, 16-bit fixed point). `total` is `numa_faults_locality[0] + [1]`.
/// Group statistics change by the same differences.
pub fn fold_faults(
    f: &mut Faults,
    total_numa_faults: &mut u64,
    mut group: Option<&mut NumaGroup>,
    runtime: u64,
    period: u64,
    total: u64,
    cpu_nodes: &[usize],
) -> Placement {
    let nn = f.nr_nodes;
    let mut out = Placement {
        max_nid: None,
        max_faults: 0,
        shared: 0,
        private: 0,
    };
    let weight = (runtime << 16) / (period + 1);
    for n in 0..nn {
        for private in [false, true] {
            let mem = f.get(NUMA_MEM, n, private) as i64;
            let membuf = f.get(NUMA_MEMBUF, n, private) as i64;
            let cpu = f.get(NUMA_CPU, n, private) as i64;
            let cpubuf = f.get(NUMA_CPUBUF, n, private);
            let diff = membuf - mem / 2;
            if private {
                out.private += membuf as u64;
            } else {
                out.shared += membuf as u64;
            }
            *f.at(NUMA_MEMBUF, n, private) = 0;
            let f_weight = (weight * cpubuf / (total + 1)) as i64;
            let f_diff = f_weight - cpu / 2;
            *f.at(NUMA_CPUBUF, n, private) = 0;
            *f.at(NUMA_MEM, n, private) = (mem + diff) as u64;
            *f.at(NUMA_CPU, n, private) = (cpu + f_diff) as u64;
            *total_numa_faults = (*total_numa_faults as i64 + diff).max(0) as u64;
            if let Some(g) = group.as_deref_mut() {
                let gm = g.faults.at(NUMA_MEM, n, private);
                *gm = (*gm as i64 + diff).max(0) as u64;
                let gc = g.faults.at(NUMA_CPU, n, private);
                *gc = (*gc as i64 + f_diff).max(0) as u64;
                g.total_faults = (g.total_faults as i64 + diff).max(0) as u64;
            }
        }
    }
    // Argmax over nodes with CPUs (numa_nearest_node(.., N_CPU) folded in).
    for &n in cpu_nodes {
        let faults = match group.as_deref() {
            Some(g) => g.faults_mem(n),
            None => f.both(NUMA_MEM, n),
        };
        if faults > out.max_faults {
            out.max_faults = faults;
            out.max_nid = Some(n);
        }
    }
    if let Some(g) = group {
        g.count_active_nodes(cpu_nodes);
    }
    out
}

/// `task_weight(p, nid)` on a `NUMA_DIRECT` topology: per-mille of the task's faults.
pub fn task_weight(f: &Faults, total_numa_faults: u64, nid: usize) -> i64 {
    if total_numa_faults == 0 {
        return 0;
    }
    (1000 * f.both(NUMA_MEM, nid) / total_numa_faults) as i64
}

/// `group_weight(p, nid)` on a `NUMA_DIRECT` topology.
pub fn group_weight(g: &NumaGroup, nid: usize) -> i64 {
    if g.total_faults == 0 {
        return 0;
    }
    (1000 * g.faults_mem(nid) / g.total_faults) as i64
}

/// `task_numa_group`'s decision once the partner task is known: whether `p` joins the
/// partner's group, and whether the fault counts as private.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupDecision {
    /// No partner running on the recorded CPU with a matching PID, or partner without a
    /// group, or the same group: shared, no change.
    NoPartner,
    /// The partner's group is not bigger: shared, stay.
    Smaller,
    /// Another process and the page is not shared: counted private, no join.
    FalsePositive,
    /// Join the partner's group (shared).
    Join,
}

/// The join rule (§4.4): only join a bigger group (ties broken by the group's identity:
/// the kernel compares addresses, we compare indices); join within the same mm or for a
/// page mapped shared.
pub fn group_decision(
    my: (usize, u64),
    theirs: Option<(usize, u64)>,
    same_mm: bool,
    tnf_shared: bool,
) -> GroupDecision {
    let Some((their_id, their_tasks)) = theirs else {
        return GroupDecision::NoPartner;
    };
    let (my_id, my_tasks) = my;
    if my_id == their_id {
        return GroupDecision::NoPartner;
    }
    if my_tasks > their_tasks || (my_tasks == their_tasks && my_id > their_id) {
        return GroupDecision::Smaller;
    }
    if same_mm || tnf_shared {
        GroupDecision::Join
    } else {
        GroupDecision::FalsePositive
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halving_decay_and_cpu_weight() {
        let mut f = Faults::new(2, 4);
        *f.at(NUMA_MEM, 0, true) = 100;
        *f.at(NUMA_MEMBUF, 0, true) = 40;
        *f.at(NUMA_MEMBUF, 1, false) = 7;
        *f.at(NUMA_CPUBUF, 1, true) = 47;
        let mut total = 100;
        // runtime = period: weight = (1 << 16) * p / (p + 1) = 65535 for p = 65535.
        let p = fold_faults(&mut f, &mut total, None, 65535, 65535, 46, &[0, 1]);
        assert_eq!(f.get(NUMA_MEM, 0, true), 100 - 50 + 40);
        assert_eq!(f.get(NUMA_MEM, 1, false), 7);
        // f_weight = 65535 * 47 / 47 = 65535.
        assert_eq!(f.get(NUMA_CPU, 1, true), 65535);
        assert_eq!(f.get(NUMA_MEMBUF, 0, true), 0);
        assert_eq!(total, 100 - 50 + 40 + 7);
        assert_eq!(
            (p.max_nid, p.max_faults, p.shared, p.private),
            (Some(0), 90, 7, 40)
        );
        // Ties go to the lower node.
        let mut g = Faults::new(2, 4);
        *g.at(NUMA_MEMBUF, 0, true) = 5;
        *g.at(NUMA_MEMBUF, 1, true) = 5;
        let mut t = 0;
        assert_eq!(
            fold_faults(&mut g, &mut t, None, 1, 1, 10, &[0, 1]).max_nid,
            Some(0)
        );
    }

    #[test]
    fn group_formation_and_join_rule() {
        // Singleton from a task's stats.
        let mut f = Faults::new(2, 4);
        *f.at(NUMA_MEM, 1, false) = 30;
        *f.at(NUMA_CPU, 1, false) = 12;
        let mut g = NumaGroup::new(42, &f, 30, 2);
        assert_eq!(
            (g.nr_tasks, g.gid, g.total_faults, g.faults_mem(1)),
            (1, 42, 30, 30)
        );
        // Transfer in and out.
        g.transfer(&f, 30, 2, true);
        assert_eq!(
            (g.faults_mem(1), g.faults_cpu(1), g.total_faults),
            (60, 24, 60)
        );
        g.transfer(&f, 30, 2, false);
        assert_eq!(g.total_faults, 30);
        // Active nodes: > 1/3 of the busiest.
        *g.faults.at(NUMA_CPU, 0, true) = 4; // 4*3 = 12 > 12? no
        g.count_active_nodes(&[0, 1]);
        assert_eq!((g.max_faults_cpu, g.active_nodes), (12, 1));
        *g.faults.at(NUMA_CPU, 0, true) = 5; // 15 > 12
        g.count_active_nodes(&[0, 1]);
        assert_eq!(g.active_nodes, 2);
        // Join rule: join the bigger group; equal sizes tie-break on identity.
        use GroupDecision::*;
        assert_eq!(group_decision((0, 1), None, true, false), NoPartner);
        assert_eq!(group_decision((3, 2), Some((3, 2)), true, false), NoPartner);
        assert_eq!(group_decision((0, 3), Some((1, 2)), true, false), Smaller);
        assert_eq!(group_decision((0, 1), Some((1, 2)), true, false), Join);
        assert_eq!(group_decision((1, 2), Some((0, 2)), true, false), Smaller);
        assert_eq!(group_decision((0, 2), Some((1, 2)), true, false), Join);
        // Another process, private mapping: a false positive, counted private.
        assert_eq!(
            group_decision((0, 1), Some((1, 2)), false, false),
            FalsePositive
        );
        assert_eq!(group_decision((0, 1), Some((1, 2)), false, true), Join);
    }

    #[test]
    fn weights_per_mille() {
        let mut f = Faults::new(2, 4);
        *f.at(NUMA_MEM, 0, true) = 300;
        *f.at(NUMA_MEM, 1, false) = 700;
        assert_eq!(task_weight(&f, 1000, 0), 300);
        assert_eq!(task_weight(&f, 1000, 1), 700);
        assert_eq!(task_weight(&f, 0, 1), 0);
    }
}
