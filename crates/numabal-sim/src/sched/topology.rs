//! The sched-domain hierarchy of a machine, built as `build_sched_domains`
//! (kernel/sched/topology.c) builds it: one candidate level per topology level, bottom-up;
//! a level whose spans equal its child's is degenerate and dropped; the climb stops at the
//! first level that spans the whole machine. The groups of a level's span are its child
//! level's spans.
//!
//! ```text
//!   level  span of a CPU                     groups            imbalance_pct  cache_nice_tries
//!   NUMA   nodes within SLIT distance d      child spans       117            2
//!          (one level per distance > 10)     (nodes, ...)      fork balancing only if d <= 30
//!   NODE   the node, if it has several LLCs  LLCs              117            1
//!   MC     the LLC                           cores             117            1
//!   SMT    the core, if it has siblings      CPUs              110            0
//!
//!   autonuma-2n24 (2 nodes x 6 cores x 2 threads, one LLC per node; core k = CPUs k, k+12),
//!   the spans and groups CPU 0 sees:
//!
//!   NUMA(24)  0-23       ┌──────── node 0: 0-5,12-17 ────────┐┌─ node 1: 6-11,18-23 ─┐
//!   MC(12)    0-5,12-17  ┌ 0,12 ┐┌ 1,13 ┐┌ 2,14 ┐ ... ┌ 5,17 ┐   (NODE = MC: dropped)
//!   SMT(2)    0,12       ┌ 0 ┐┌ 12 ┐
//! ```

use numabal_model::Machine;

use super::{Cpu, Sched};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LevelKind {
    Smt,
    Llc,
    Node,
    Numa,
}

#[derive(Debug, Clone)]
pub(super) struct Group {
    pub(super) cpus: Vec<usize>,
    pub(super) cores: usize,
    /// The group is one SMT core (its child domain shares CPU capacity).
    pub(super) smt: bool,
}

#[derive(Debug, Clone)]
pub(super) struct Span {
    pub(super) cpus: Vec<usize>,
    pub(super) groups: Vec<Group>,
    pub(super) imb_numa_nr: u64,
    /// Groups carry SD_PREFER_SIBLING (their child level is not a NUMA level).
    pub(super) prefer_sibling: bool,
}

#[derive(Debug, Clone)]
pub(super) struct Level {
    pub(super) kind: LevelKind,
    pub(super) imbalance_pct: u64,
    pub(super) cache_nice_tries: u32,
    pub(super) balance_fork: bool,
    /// Shared: a balancing pass holds its span while it moves tasks (no copy per pass).
    pub(super) spans: Vec<std::rc::Rc<Span>>,
    pub(super) span_of_cpu: Vec<usize>,
}

impl Level {
    pub(super) fn span(&self, cpu: usize) -> &std::rc::Rc<Span> {
        &self.spans[self.span_of_cpu[cpu]]
    }
    pub(super) fn share_llc(&self) -> bool {
        matches!(self.kind, LevelKind::Smt | LevelKind::Llc)
    }
    pub(super) fn numa(&self) -> bool {
        self.kind == LevelKind::Numa
    }
}

impl Span {
    /// Groups in ring order starting at the group holding `cpu` (the kernel's circular
    /// `sd->groups` list seen from that CPU).
    pub(super) fn ring(&self, cpu: usize) -> Vec<&Group> {
        let local = self
            .groups
            .iter()
            .position(|g| g.cpus.contains(&cpu))
            .unwrap_or(0);
        let n = self.groups.len();
        (0..n).map(|i| &self.groups[(local + i) % n]).collect()
    }
}

/// The distinct spans among the CPUs' spans (in order of first appearance) and the index
/// of each CPU's span among them.
fn dedup_spans(cpus_of: &[Vec<usize>]) -> (Vec<Vec<usize>>, Vec<usize>) {
    let mut spans: Vec<Vec<usize>> = Vec::new();
    let mut of = Vec::with_capacity(cpus_of.len());
    for s in cpus_of {
        match spans.iter().position(|x| x == s) {
            Some(i) => of.push(i),
            None => {
                spans.push(s.clone());
                of.push(spans.len() - 1);
            }
        }
    }
    (spans, of)
}

/// The machine as per-CPU tables, which is what building the levels reads.
struct Topo<'m> {
    m: &'m Machine,
    ncpu: usize,
    cpu_node: Vec<usize>,
    core_of: Vec<usize>,
    llc_of: Vec<usize>,
    core_cpus: Vec<Vec<usize>>,
    llc_cpus: Vec<Vec<usize>>,
    node_cpus: Vec<Vec<usize>>,
    /// Threads per core (of the largest core).
    tpc: usize,
    /// The distinct SLIT distances between different nodes, ascending (`sched_init_numa`'s
    /// distance table without the local distance).
    dists: Vec<u32>,
}

impl<'m> Topo<'m> {
    fn new(m: &'m Machine) -> Self {
        let ncpu = m.nr_cpus();
        let core_cpus: Vec<Vec<usize>> = m.cores.iter().map(|c| c.cpus.clone()).collect();
        let tpc = core_cpus.iter().map(|c| c.len()).max().unwrap_or(1);
        let mut dists: Vec<u32> = m
            .distance
            .iter()
            .flatten()
            .copied()
            .filter(|&d| d > 10)
            .collect();
        dists.sort_unstable();
        dists.dedup();
        Topo {
            m,
            ncpu,
            cpu_node: (0..ncpu).map(|c| m.cpus[c].node).collect(),
            core_of: (0..ncpu).map(|c| m.cpus[c].core).collect(),
            llc_of: (0..ncpu).map(|c| m.cpus[c].llc).collect(),
            core_cpus,
            llc_cpus: m.llcs.iter().map(|l| l.cpus.iter().collect()).collect(),
            node_cpus: m.nodes.iter().map(|n| n.cpus.iter().collect()).collect(),
            tpc,
            dists,
        }
    }

    /// Nodes within SLIT distance `d` of `node`, in node order.
    fn nodes_within(&self, node: usize, d: u32) -> impl Iterator<Item = usize> + '_ {
        (0..self.m.nr_nodes()).filter(move |&j| self.m.distance[node][j] <= d)
    }

    /// Candidate levels, bottom-up, each with every CPU's span.
    fn candidates(&self) -> Vec<(LevelKind, Vec<Vec<usize>>)> {
        let ncpu = self.ncpu;
        let mut candidates: Vec<(LevelKind, Vec<Vec<usize>>)> = Vec::new();
        if self.tpc > 1 {
            candidates.push((
                LevelKind::Smt,
                (0..ncpu)
                    .map(|c| self.core_cpus[self.core_of[c]].clone())
                    .collect(),
            ));
        }
        candidates.push((
            LevelKind::Llc,
            (0..ncpu)
                .map(|c| self.llc_cpus[self.llc_of[c]].clone())
                .collect(),
        ));
        candidates.push((
            LevelKind::Node,
            (0..ncpu)
                .map(|c| self.node_cpus[self.cpu_node[c]].clone())
                .collect(),
        ));
        for &d in &self.dists {
            let spans = (0..ncpu)
                .map(|c| {
                    let mut v: Vec<usize> = self
                        .nodes_within(self.cpu_node[c], d)
                        .flat_map(|j| self.node_cpus[j].iter().copied())
                        .collect();
                    v.sort_unstable();
                    v
                })
                .collect();
            candidates.push((LevelKind::Numa, spans));
        }
        candidates
    }

    /// `imb_numa_nr` as build_sched_domains computes it before degeneration: the level
    /// above the LLC is the node; with one LLC per node it tolerates node_weight/8.
    fn base_imb_numa_nr(&self, c: usize) -> u64 {
        let node_w = self.node_cpus[self.cpu_node[c]].len() as u64;
        let llc_w = self.llc_cpus[self.llc_of[c]].len() as u64;
        let nr_llcs = node_w / llc_w.max(1);
        (if nr_llcs == 1 { node_w >> 3 } else { nr_llcs }).max(1)
    }

    /// The levels that survive degeneration, bottom-up.
    fn build_levels(&self) -> Vec<Level> {
        let mut levels: Vec<Level> = Vec::new();
        let mut prev: Vec<Vec<usize>> = (0..self.ncpu).map(|c| vec![c]).collect();
        let mut first_numa_weight: Option<u64> = None;
        for (kind, spans_of_cpu) in self.candidates() {
            if spans_of_cpu == prev {
                continue; // degenerate: same span as the child
            }
            if levels
                .last()
                .is_some_and(|l: &Level| l.spans.len() == 1 && l.spans[0].cpus.len() == self.ncpu)
            {
                break; // the top already spans the machine
            }
            let child_numa = levels.last().is_some_and(|l| l.numa());
            let level = self.build_level(
                kind,
                &spans_of_cpu,
                &prev,
                child_numa,
                &mut first_numa_weight,
            );
            levels.push(level);
            prev = spans_of_cpu;
        }
        levels
    }

    /// One level from every CPU's span; `prev` holds every CPU's span at the child level.
    fn build_level(
        &self,
        kind: LevelKind,
        spans_of_cpu: &[Vec<usize>],
        prev: &[Vec<usize>],
        child_numa: bool,
        first_numa_weight: &mut Option<u64>,
    ) -> Level {
        let (spans, of) = dedup_spans(spans_of_cpu);
        let spans: Vec<Span> = spans
            .into_iter()
            .map(|cpus| self.build_span(kind, cpus, prev, child_numa, first_numa_weight))
            .collect();
        let (imbalance_pct, cache_nice_tries) = match kind {
            LevelKind::Smt => (110, 0),
            LevelKind::Llc | LevelKind::Node => (117, 1),
            LevelKind::Numa => (117, 2),
        };
        let balance_fork = self.balance_fork(kind, &spans);
        Level {
            kind,
            imbalance_pct,
            cache_nice_tries,
            balance_fork,
            spans: spans.into_iter().map(std::rc::Rc::new).collect(),
            span_of_cpu: of,
        }
    }

    /// A span with its groups (the child spans it covers, in the order of their first CPU)
    /// and its `imb_numa_nr`, which scales with the span's weight over the first NUMA
    /// span's.
    fn build_span(
        &self,
        kind: LevelKind,
        cpus: Vec<usize>,
        prev: &[Vec<usize>],
        child_numa: bool,
        first_numa_weight: &mut Option<u64>,
    ) -> Span {
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for &c in &cpus {
            if !groups.iter().any(|g| g.contains(&c)) {
                groups.push(prev[c].clone());
            }
        }
        let w = cpus.len() as u64;
        let c0 = cpus[0];
        let imb = match kind {
            LevelKind::Smt | LevelKind::Llc => 0,
            LevelKind::Node => self.base_imb_numa_nr(c0),
            LevelKind::Numa => {
                let span0 = *first_numa_weight.get_or_insert(w);
                self.base_imb_numa_nr(c0) * (w / span0).max(1)
            }
        };
        Span {
            groups: groups
                .into_iter()
                .map(|g| self.build_group(kind, g))
                .collect(),
            cpus,
            imb_numa_nr: imb,
            prefer_sibling: !child_numa,
        }
    }

    fn build_group(&self, kind: LevelKind, cpus: Vec<usize>) -> Group {
        let mut cores: Vec<usize> = cpus.iter().map(|&c| self.core_of[c]).collect();
        cores.sort_unstable();
        cores.dedup();
        let smt = kind == LevelKind::Llc && self.tpc > 1 && cpus.len() > 1 && cores.len() == 1;
        Group {
            cores: cores.len(),
            cpus,
            smt,
        }
    }

    /// Fork/exec balancing stops at NUMA distances beyond node_reclaim_distance (30).
    fn balance_fork(&self, kind: LevelKind, spans: &[Span]) -> bool {
        match kind {
            LevelKind::Numa => {
                let span0 = &spans[0].cpus;
                let d = self.dists.iter().copied().find(|&d| {
                    span0.len()
                        == self
                            .nodes_within(self.cpu_node[span0[0]], d)
                            .map(|j| self.node_cpus[j].len())
                            .sum::<usize>()
                });
                d.unwrap_or(0) <= 30
            }
            _ => true,
        }
    }
}

impl Sched {
    /// Build the domain hierarchy of a machine.
    pub fn new(m: &Machine) -> Self {
        let t = Topo::new(m);
        let levels = t.build_levels();
        let cpus = (0..t.ncpu).map(|c| Cpu::new(&levels, c)).collect();
        Sched {
            levels,
            cpus,
            tasks: Vec::new(),
            cpu_node: t.cpu_node,
            core_of: t.core_of,
            core_cpus: t.core_cpus,
            llc_cpus: t.llc_cpus,
            llc_of: t.llc_of,
            moves: Vec::new(),
            balanced_busy: Vec::new(),
            cache: Default::default(),
        }
    }

    /// Names of the levels, bottom-up (for `numabal topology` and tests).
    pub fn level_names(&self) -> Vec<String> {
        self.levels
            .iter()
            .map(|l| {
                let k = match l.kind {
                    LevelKind::Smt => "SMT",
                    LevelKind::Llc => "MC",
                    LevelKind::Node => "NODE",
                    LevelKind::Numa => "NUMA",
                };
                format!("{k}({})", l.spans[0].cpus.len())
            })
            .collect()
    }

    /// `imb_numa_nr` of the first NUMA level, if any.
    pub fn imb_numa_nr(&self) -> Option<u64> {
        self.levels
            .iter()
            .find(|l| l.numa())
            .map(|l| l.spans[0].imb_numa_nr)
    }

    /// Kernels before 5.7: no NUMA imbalance allowance (`sim.allow_numa_imbalance =
    /// false`): fork balancing sends a new task to the idlest node and load balancing
    /// evens nodes out without letting a node keep a few extra tasks.
    pub fn disallow_numa_imbalance(&mut self) {
        for l in &mut self.levels {
            for s in &mut l.spans {
                std::rc::Rc::make_mut(s).imb_numa_nr = 0;
            }
        }
    }
}
