//! The migrate-on-fault filter: `last_cpupid` packing and `should_numa_migrate_memory`
//! (kernel/sched/fair.c), the "two-stage filter".

/// `last_cpupid` of a page: low 8 bits the PID's low bits (`LAST__PID_SHIFT` 8), then the
/// CPU. A freshly allocated page holds all ones: "unset".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuPid(pub u32);

impl CpuPid {
    /// All ones: no access recorded since the page was allocated.
    pub const UNSET: CpuPid = CpuPid(u32::MAX);

    /// `cpu_pid_to_cpupid`.
    pub fn new(cpu: usize, pid: u32) -> CpuPid {
        CpuPid(((cpu as u32) << 8) | (pid & 0xff))
    }
    /// `cpupid_pid_unset`.
    pub fn pid_unset(self) -> bool {
        self == CpuPid::UNSET
    }
    /// `cpupid_to_pid`: the low 8 bits of the PID.
    pub fn pid(self) -> u32 {
        self.0 & 0xff
    }
    /// `cpupid_to_cpu`.
    pub fn cpu(self) -> usize {
        (self.0 >> 8) as usize
    }
    /// `cpupid_match_pid`.
    pub fn matches(self, pid: u32) -> bool {
        !self.pid_unset() && self.pid() == (pid & 0xff)
    }
}

/// A numa_group's per-node fault totals the filter compares (`NUMA_CPU` and `NUMA_MEM`,
/// private + shared).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupFaults {
    /// `group_faults_cpu(ng, src_nid)`.
    pub cpu_src: u64,
    /// `group_faults_cpu(ng, dst_nid)`.
    pub cpu_dst: u64,
    /// `group_faults(ng, src_nid)` (memory side).
    pub mem_src: u64,
    /// `group_faults(ng, dst_nid)`.
    pub mem_dst: u64,
}

/// `ACTIVE_NODE_FRACTION`.
pub const ACTIVE_NODE_FRACTION: u64 = 3;

/// Inputs of `should_numa_migrate_memory(p, folio, src_nid, dst_cpu)` once `last_cpupid`
/// has been exchanged for the faulting CPU/PID.
#[derive(Debug, Clone, Copy)]
pub struct FilterInput {
    /// The faulting task's PID (full; the filter compares its low 8 bits).
    pub pid: u32,
    /// `p->numa_preferred_nid`.
    pub preferred_nid: Option<usize>,
    /// `p->numa_scan_seq`.
    pub scan_seq: u64,
    /// The value `last_cpupid` held before this fault.
    pub last: CpuPid,
    /// Node of `last.cpu()` (`cpu_to_node`), when set.
    pub last_node: Option<usize>,
    /// `dst_nid` = node of the faulting CPU.
    pub dst_nid: usize,
    /// The destination node has memory.
    pub dst_has_memory: bool,
    /// The task's group, if any.
    pub group: Option<GroupFaults>,
}

/// The filter's verdict, with the rule that decided it (for tests and traces).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterRule {
    /// The destination node has no memory.
    NoMemory,
    /// Early in the task's life (no preferred node, or `numa_scan_seq <= 4`) and the page
    /// was unset or last touched by this task: migrate at once.
    EarlyLife,
    /// The previous accessor ran on another node than the faulting CPU: wait for a second
    /// fault from this node.
    LastNodeDiffers,
    /// The previous accessor was this task (a private fault).
    Private,
    /// A shared fault of a task with no group.
    SharedNoGroup,
    /// The group's CPU faults on the destination exceed 3x those on the source.
    GroupCpuDominant,
    /// The group's balance of CPU and memory faults (the 3/4 rule).
    GroupBalance,
}

/// `should_numa_migrate_memory` without the tiering branch. Returns (migrate, rule).
pub fn should_migrate(i: &FilterInput) -> (bool, FilterRule) {
    if !i.dst_has_memory {
        return (false, FilterRule::NoMemory);
    }
    let early = i.preferred_nid.is_none() || i.scan_seq <= 4;
    if early && (i.last.pid_unset() || i.last.matches(i.pid)) {
        return (true, FilterRule::EarlyLife);
    }
    if !i.last.pid_unset() && i.last_node != Some(i.dst_nid) {
        return (false, FilterRule::LastNodeDiffers);
    }
    if i.last.matches(i.pid) {
        return (true, FilterRule::Private);
    }
    let Some(g) = i.group else {
        return (true, FilterRule::SharedNoGroup);
    };
    if g.cpu_dst > ACTIVE_NODE_FRACTION * g.cpu_src {
        return (true, FilterRule::GroupCpuDominant);
    }
    let migrate = g.cpu_dst * g.mem_src * 3 > g.cpu_src * g.mem_dst * 4;
    (migrate, FilterRule::GroupBalance)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> FilterInput {
        FilterInput {
            pid: 300,
            preferred_nid: Some(1),
            scan_seq: 10,
            last: CpuPid::UNSET,
            last_node: None,
            dst_nid: 1,
            dst_has_memory: true,
            group: None,
        }
    }

    #[test]
    fn cpupid_packing() {
        let c = CpuPid::new(23, 300);
        assert_eq!(c.cpu(), 23);
        assert_eq!(c.pid(), 300 & 0xff);
        assert!(c.matches(300));
        assert!(c.matches(44)); // 300 & 0xff == 44: the kernel's 8-bit PID collisions
        assert!(!c.matches(301));
        assert!(CpuPid::UNSET.pid_unset());
        assert!(!CpuPid::UNSET.matches(255));
    }

    /// (preferred, seq, last, last_node, group, migrate, rule).
    type Row = (
        Option<usize>,
        u64,
        CpuPid,
        Option<usize>,
        Option<GroupFaults>,
        bool,
        FilterRule,
    );

    /// The filter's truth table, worked out from §3.3 of the research notes.
    #[test]
    fn truth_table() {
        let me = CpuPid::new(5, 300);
        let other = CpuPid::new(7, 301);
        let g = |cpu_src, cpu_dst, mem_src, mem_dst| {
            Some(GroupFaults {
                cpu_src,
                cpu_dst,
                mem_src,
                mem_dst,
            })
        };
        // (preferred, seq, last, last_node, group) -> (migrate, rule)
        let rows: Vec<Row> = vec![
            // Early life: no preferred node, unset page.
            (
                None,
                10,
                CpuPid::UNSET,
                None,
                None,
                true,
                FilterRule::EarlyLife,
            ),
            // Early life: seq <= 4, page last touched by me from the other node.
            (Some(0), 4, me, Some(0), None, true, FilterRule::EarlyLife),
            // seq 4 but another task touched it last from the other node: stage 2 says no.
            (
                Some(0),
                4,
                other,
                Some(0),
                None,
                false,
                FilterRule::LastNodeDiffers,
            ),
            // Settled task, unset page: passes stage 2 (unset), not private, no group.
            (
                Some(1),
                10,
                CpuPid::UNSET,
                None,
                None,
                true,
                FilterRule::SharedNoGroup,
            ),
            // Settled, my page, last from another node: wait.
            (
                Some(1),
                10,
                me,
                Some(0),
                None,
                false,
                FilterRule::LastNodeDiffers,
            ),
            // Settled, my page, last from this node: private, migrate.
            (Some(1), 10, me, Some(1), None, true, FilterRule::Private),
            // Shared, same node, no group: migrate.
            (
                Some(1),
                10,
                other,
                Some(1),
                None,
                true,
                FilterRule::SharedNoGroup,
            ),
            // Shared, group CPU faults on dst > 3x src.
            (
                Some(1),
                10,
                other,
                Some(1),
                g(10, 31, 100, 100),
                true,
                FilterRule::GroupCpuDominant,
            ),
            // Exactly 3x is not enough; then 30*100*3 = 9000 > 10*100*4 = 4000: migrate.
            (
                Some(1),
                10,
                other,
                Some(1),
                g(10, 30, 100, 100),
                true,
                FilterRule::GroupBalance,
            ),
            // Balanced CPU, memory mostly on dst already: 10*10*3 = 300 > 10*100*4: no.
            (
                Some(1),
                10,
                other,
                Some(1),
                g(10, 10, 10, 100),
                false,
                FilterRule::GroupBalance,
            ),
            // cpu_dst*mem_src*3 == cpu_src*mem_dst*4 is not enough: 4*4*3 = 48 vs 3*4*4 = 48.
            (
                Some(1),
                10,
                other,
                Some(1),
                g(3, 4, 4, 4),
                false,
                FilterRule::GroupBalance,
            ),
        ];
        for (i, (pref, seq, last, last_node, group, want, rule)) in rows.into_iter().enumerate() {
            let inp = FilterInput {
                preferred_nid: pref,
                scan_seq: seq,
                last,
                last_node,
                group,
                ..input()
            };
            assert_eq!(should_migrate(&inp), (want, rule), "row {i}");
        }
        let no_mem = FilterInput {
            dst_has_memory: false,
            ..input()
        };
        assert_eq!(should_migrate(&no_mem), (false, FilterRule::NoMemory));
    }
}
