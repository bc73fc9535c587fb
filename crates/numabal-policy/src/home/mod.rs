//! `home-node`: numabal's own placement policy (issue 18). Every busy process gets a home:
//! a whole process one node, where its threads and memory go together (numad's
//! process-level fitting, without its hold-off); a process that shares no memory among its
//! threads, or fits no node, has its busy threads shared out over the nodes, and each
//! chunk of memory only one node's threads touch follows them there (Stable-NUMA's private
//! pages, found by sampling). Placed processes stay placed: nothing moves again unless a
//! thread appears or memory strays.
//!
//! ```text
//!  pass (interval_ms)
//!    threads' CPU time ─► busy threads (ran ≥ busy_pct of the busiest, or of their
//!                         node's fair share when more threads than CPUs filled it)
//!    samples ─► chunks (chunk_kib): one thread or two running ones in the window ─►
//!      shares (shared_pct of the chunks) / private
//!    split private processes whose chunks stray to other nodes' threads ─► sharers
//!      after all, placed again where most of their memory is (soft-dirty sampling can
//!      hide streaming sharers)
//!    processes busy and classified (or waited classify_wait_s, or the machine crowded),
//!    first pass for each ─► plan
//!      shares its memory, or one busy thread: whole, on the node with room for all of it
//!      private, or no node has room: split, busy threads water-filled over the room left
//!    act: sched_setaffinity to the home node's CPUs
//!         whole: migrate_pages of what lies elsewhere (more than 1/16 of its memory)
//!         split: move_pages of each chunk whose threads are all on another node; not
//!         known private and its memory concentrated (concentrated_pct beyond its busy
//!         threads' shares): each node's excess sent to the nodes below their share,
//!         once (InterleaveProcessPages, turns weighted)
//! ```
//!
//! What it cannot see: which thread touches memory it did not sample (the sensor's
//! period), memory shared between processes (left where it is), and load of processes it
//! does not manage (the kernel's balancer places those around the pinned threads).

pub mod chunks;
pub mod plan;
pub mod tunables;

pub use tunables::Tunables;

use crate::api::{Action, Observation, Policy, ProcessObs, ThreadObs};
use chunks::Chunks;
use numabal_model::{Machine, Pid, Tid};
use std::collections::{BTreeMap, BTreeSet};

const PAGE: u64 = 4096;
const MIB: u64 = 1 << 20;
const NS_PER_S: u64 = 1_000_000_000;
/// Turns in a balancing spread's list: each node's part of another's pages to 1/32.
const BALANCE_TURNS: usize = 32;

/// How a process uses its memory, as its samples show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Unknown,
    /// Its threads share chunks: it goes whole to one node if it can.
    Shares,
    /// Each chunk is one thread's: its threads may be split over nodes.
    Private,
}

/// The last `migrate_pages` of a whole process (see [`gather`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Gathered {
    away: u64,
    next_ns: u64,
    wait_ns: u64,
}

/// The longest wait between `migrate_pages` calls that move nothing, ns.
const GATHER_WAIT_MAX_NS: u64 = 64 * NS_PER_S;

/// Where a placed process lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Home {
    Whole(usize),
    /// Busy threads each on their own node (`Thread::home`).
    Split,
}

#[derive(Debug, Clone)]
struct Unit {
    /// When a thread of it was first busy, ns.
    busy_since: Option<u64>,
    chunks: Chunks,
    class: Class,
    home: Option<Home>,
    /// Its busy threads at this pass.
    busy: u32,
    /// Its threads that ran at all at this pass (at least a tenth of it, or of their
    /// node's fair share): a thread slowed by another on its CPU is awake, one waiting in
    /// a join or a barrier of its own is not.
    awake: u32,
    /// Busy threads it was placed with (raised when more become busy).
    size: u32,
    /// A split process sharing its memory: the nodes it is kept on (as few as hold its
    /// threads), its memory interleaved over them by chunk.
    nodes: Vec<usize>,
    /// When it was last placed or last had memory moved by samples, ns: a split process is
    /// sampled until a window passes without a move.
    last_change_ns: u64,
    /// A whole process: `migrate_pages` was last called when this much of its memory was
    /// away from home; the next call without progress waits until then, ns, and the wait
    /// after that.
    gathered: Option<Gathered>,
    /// A whole process: its memory away from home at the last pass.
    away_last: Option<u64>,
    /// Split as private, then found sharing, for its next decision's line.
    strayed: Option<Strayed>,
    /// A split process: its busy threads when it was last shared out over the nodes.
    split_busy: u32,
    /// A split process: at this pass, more than a quarter of its memory lies beyond its
    /// busy threads' share of each node ([`concentrated`]).
    concentrated: bool,
    /// A split process not known to be private whose memory was concentrated: the heavy
    /// node's pages were spread over its threads' nodes, once.
    spread: bool,
}

/// What showed a split private process to share its memory (see [`HomeNode::strayed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strayed {
    /// (chunks followed and still sampled, of them sampled from another node).
    Followed(u64, u64),
    /// (chunks sampled more than once, of them by threads of two nodes).
    Across(u64, u64),
}

#[derive(Debug, Clone, Copy)]
struct Thread {
    pid: Pid,
    cpu_ns: u64,
    busy: bool,
    /// Ran at least a tenth of the busiest thread's time in the pass.
    awake: bool,
    /// First read at this pass: whether it is busy is not known yet.
    fresh: bool,
    /// Its node, by the plan.
    home: Option<usize>,
    /// The node its affinity was set to.
    set: Option<usize>,
}

impl Thread {
    /// Ran less than busy at this pass, and was read at the one before.
    fn idle(&self) -> bool {
        !self.busy && !self.fresh
    }
}

/// The `home-node` policy.
#[derive(Debug, Clone)]
pub struct HomeNode {
    t: Tunables,
    units: BTreeMap<Pid, Unit>,
    threads: BTreeMap<Tid, Thread>,
    last_ns: Option<u64>,
    /// A process exited since the last plan: its room is free for the split ones.
    exited: bool,
    /// At this pass, busy threads fill every CPU (counting a placed process's threads as
    /// it was placed with, if more): a class is moot.
    crowded: bool,
    /// This pass met threads it could not judge: the next comes sooner (`second_look`).
    look_again: bool,
}

impl HomeNode {
    /// The policy with tunables `t`.
    pub fn new(t: Tunables) -> HomeNode {
        HomeNode {
            t,
            units: BTreeMap::new(),
            threads: BTreeMap::new(),
            last_ns: None,
            exited: false,
            crowded: false,
            look_again: false,
        }
    }

    /// Threads' CPU time since the last pass ─► busy; exited threads and processes forgotten.
    fn measure(&mut self, m: &Machine, obs: &Observation<'_>, dt: u64) {
        let live: BTreeSet<Tid> = obs.threads.iter().map(|t| t.tid).collect();
        self.threads.retain(|tid, _| live.contains(tid));
        let pids: BTreeSet<Pid> = obs.processes.iter().map(|p| p.pid).collect();
        let before = self.units.len();
        self.units.retain(|pid, _| pids.contains(pid));
        self.exited |= self.units.len() < before;
        // Busy against the busiest thread of the pass, so that threads sharing CPUs on an
        // overcommitted machine stay busy; none while the busiest ran under 1/10 of it.
        // On a node whose CPUs were all used by more threads than it has CPUs, against
        // their fair share if that is less: the threads there queue for the node's CPUs
        // (new threads inherit their creator's affinity, so a process's workers can start
        // three to a CPU) and run a third of the pass while the busiest thread elsewhere
        // runs all of it. Measured against that alone, they would never count as busy and
        // never be given room.
        // Each thread's CPU time since the last pass (at its first reading, `first_sight`).
        let ran: Vec<u64> = (obs.threads.iter())
            .map(|o| match self.threads.get(&o.tid) {
                Some(th) => o.cpu_time_ns.saturating_sub(th.cpu_ns),
                None => self.first_sight(o, dt),
            })
            .collect();
        self.look_again =
            self.t.second_look == 1 && (obs.threads.iter()).any(|o| self.unjudged(o, dt));
        let most = ran.iter().copied().max().unwrap_or(0);
        let share = Self::fair_shares(m, obs, &ran, dt);
        let mut busy: BTreeMap<Pid, u32> = BTreeMap::new();
        let mut awake: BTreeMap<Pid, u32> = BTreeMap::new();
        for (o, &r) in obs.threads.iter().zip(&ran) {
            let most = o
                .node
                .and_then(|n| share.get(n))
                .map_or(most, |&s| most.min(s));
            let fresh = !self.threads.contains_key(&o.tid);
            let th = self.threads.entry(o.tid).or_insert(Thread {
                pid: o.pid,
                cpu_ns: o.cpu_time_ns,
                busy: false,
                awake: false,
                fresh,
                home: None,
                set: None,
            });
            th.fresh = fresh;
            let judged = most * 10 >= dt && dt > 0;
            th.busy = judged && r * 100 >= self.t.busy_pct * most;
            th.awake = judged && r * 10 >= most;
            th.cpu_ns = o.cpu_time_ns;
            *busy.entry(o.pid).or_default() += u32::from(th.busy);
            *awake.entry(o.pid).or_default() += u32::from(th.awake);
        }
        for p in obs.processes {
            let busy = busy.get(&p.pid).copied().unwrap_or(0);
            let u = self.units.entry(p.pid).or_insert(Unit {
                busy_since: None,
                chunks: Chunks::default(),
                class: Class::Unknown,
                home: None,
                busy: 0,
                awake: 0,
                size: 0,
                nodes: Vec::new(),
                last_change_ns: 0,
                gathered: None,
                away_last: None,
                strayed: None,
                split_busy: 0,
                concentrated: false,
                spread: false,
            });
            u.busy = busy;
            u.awake = awake.get(&p.pid).copied().unwrap_or(0);
            if u.busy_since.is_none() && busy > 0 {
                u.busy_since = Some(obs.now_ns);
            }
        }
    }

    /// A thread's CPU time over a pass of `dt` when it is seen for the first time: one that
    /// started since the last pass has lived all its life in this one, and its CPU time
    /// over its age is its rate over the pass. perf bench's workers start when their
    /// process's main thread has filled its memory (held on one node by perf, so the
    /// process is managed only then) and were placed a pass after they started. A thread
    /// that started before the last pass (the daemon just started, or its process was left
    /// alone until now) waits for its second pass: its rate over its life says nothing of
    /// now (perf's main threads ran all their lives, and now wait in `pthread_join`).
    fn first_sight(&self, o: &ThreadObs, dt: u64) -> u64 {
        match o.age_ns {
            Some(age) if self.t.first_sight == 1 && age > 0 && age <= dt => {
                (o.cpu_time_ns as u128 * dt as u128 / age as u128).min(dt as u128) as u64
            }
            _ => 0,
        }
    }

    /// Whether a thread is seen for the first time having run before the last pass (the
    /// daemon just started, or its process was left alone until now): its CPU time says
    /// nothing of now, and it waits for the next pass to be judged. perf bench's workers
    /// started as their processes' memory was released from node 0 and were met first a
    /// pass later in 2 of 4 runs in the 7.2 guest: a whole interval lost before their
    /// processes were placed. A thread that never ran is idle and can wait.
    fn unjudged(&self, o: &ThreadObs, dt: u64) -> bool {
        !self.threads.contains_key(&o.tid)
            && o.cpu_time_ns > 0
            && o.age_ns.is_none_or(|age| age > dt || dt == 0)
    }

    /// Each node's fair share of the pass per thread: `dt` unless more threads ran on the
    /// node than it has CPUs and they used 90% of its CPU time, then `dt` x CPUs / threads.
    /// `ran[i]` is `obs.threads[i]`'s CPU time in the pass.
    fn fair_shares(m: &Machine, obs: &Observation<'_>, ran: &[u64], dt: u64) -> Vec<u64> {
        let mut used = vec![(0u64, 0u64); m.nodes.len()];
        for (o, &r) in obs.threads.iter().zip(ran) {
            if let Some(u) = o.node.and_then(|n| used.get_mut(n)).filter(|_| r > 0) {
                *u = (u.0 + r, u.1 + 1);
            }
        }
        (m.nodes.iter().zip(used))
            .map(|(node, (time, threads))| {
                let cpus = node.cpus.count() as u64;
                let full = time * 10 >= dt * cpus * 9;
                if full && threads > cpus {
                    dt * cpus / threads
                } else {
                    dt
                }
            })
            .collect()
    }

    /// Samples into chunks; each process classified once enough chunks speak.
    fn classify(&mut self, obs: &Observation<'_>) {
        let shift = self.t.chunk_shift();
        for s in obs.samples {
            if let Some(u) = self.units.get_mut(&s.pid) {
                u.chunks.record(s, shift, obs.now_ns);
            }
        }
        let window = self.t.window_s * NS_PER_S;
        let threads = &self.threads;
        for u in self.units.values_mut() {
            u.chunks.expire(obs.now_ns, window);
            let s = u.chunks.sharing(|tid| idle(threads, tid));
            if u.class == Class::Unknown && s.multi >= self.t.classify_chunks && s.threads >= 2 {
                u.class = if s.shared * 100 >= self.t.shared_pct * s.multi {
                    Class::Shares
                } else {
                    Class::Private
                };
            }
        }
    }

    /// Split processes classified private that share their memory after all (threads
    /// streaming through it, seen one first writer at a time by soft-dirty sampling): at
    /// least `classify_chunks` followed chunks still sampled and `shared_pct` of them
    /// sampled by a thread homed on another node, or `classify_chunks` chunks sampled more
    /// than once and `shared_pct` of them by threads homed on two nodes (this one speaks
    /// before the chunks have moved). Such a process loses its home, to be placed again as
    /// a sharer. Returns whether one did.
    fn strayed(&mut self) -> bool {
        if self.t.revise_split == 0 {
            return false;
        }
        let threads = &self.threads;
        let mut lost = Vec::new();
        for (&pid, u) in self.units.iter_mut() {
            if u.home != Some(Home::Split) || u.class != Class::Private {
                continue;
            }
            // An idle thread's samples say nothing of who uses the memory now.
            let node_of = |tid| threads.get(&tid).filter(|t| !t.idle())?.home;
            let enough = |(of, some): (u64, u64)| {
                of >= self.t.classify_chunks && some * 100 >= self.t.shared_pct * of
            };
            let followed = u.chunks.strays(node_of);
            let across = u.chunks.across(node_of);
            u.strayed = if enough(followed) {
                Some(Strayed::Followed(followed.0, followed.1))
            } else if enough(across) {
                Some(Strayed::Across(across.0, across.1))
            } else {
                continue;
            };
            u.class = Class::Shares;
            u.home = None;
            lost.push(pid);
        }
        for t in self.threads.values_mut().filter(|t| lost.contains(&t.pid)) {
            t.home = None;
        }
        !lost.is_empty()
    }

    /// Busy, and one busy thread (it goes whole whatever it shares), or classified (its
    /// samples came from two threads at least), or waited `classify_wait_s`, or the
    /// machine is crowded: the class decides only whether a process that fits a node is
    /// split, and that only while the machine has room to spread its threads. On a
    /// crowded machine a process is placed at once, and its memory waits for its class
    /// (`follow`). (Not so for a process that fits no node: its main thread, busy as its
    /// workers start, can make it look one too wide for a pass.) A big process may never
    /// be classified: the sensor's budget may not allow a soft-dirty clear of it
    /// (`ClearPacer`).
    fn ready(&self, u: &Unit, now: u64) -> bool {
        let waited = u
            .busy_since
            .is_some_and(|t| now >= t + self.t.classify_wait_s * NS_PER_S);
        let crowded = self.crowded && self.t.place_crowded == 1;
        u.busy == 1 || (u.busy > 1 && (u.class != Class::Unknown || waited || crowded))
    }

    /// [`HomeNode::crowded`] for this pass.
    fn crowding(&mut self, m: &Machine) {
        let cpus: u32 = m.nodes.iter().map(|n| n.cpus.count() as u32).sum();
        let busy: u32 = (self.units.values())
            .map(|u| match u.home {
                Some(_) => u.busy.max(u.size),
                None => u.busy,
            })
            .sum();
        self.crowded = busy >= cpus;
    }

    /// Homes for the processes that are ready and have none; split processes shared out
    /// again over the room the whole ones leave.
    fn plan(&mut self, m: &Machine, obs: &Observation<'_>, out: &mut Vec<Action>) {
        let cap: Vec<u32> = m.nodes.iter().map(|n| n.cpus.count() as u32).collect();
        let mut load = vec![0u32; cap.len()];
        for u in self.units.values() {
            if let Some(Home::Whole(n)) = u.home {
                load[n] += u.size;
            }
        }
        let busy_all: u32 = (self.units.values())
            .filter(|u| u.home.is_some() || self.ready(u, obs.now_ns))
            .map(|u| u.busy.max(u.size))
            .sum();
        let mut new: Vec<(u32, Pid)> = (self.units.iter())
            .filter(|(_, u)| u.home.is_none() && self.ready(u, obs.now_ns))
            .map(|(&pid, u)| (u.busy, pid))
            .collect();
        new.sort_by_key(|&(b, pid)| (std::cmp::Reverse(b), pid));
        for (busy, pid) in new {
            let Some(p) = obs.processes.iter().find(|p| p.pid == pid) else {
                continue;
            };
            let room = busy_all < cap.iter().sum::<u32>();
            let home = self.home_of(p, busy, room, &cap, &load, obs);
            if let Home::Whole(n) = home {
                load[n] += busy;
            }
            let threads = &self.threads;
            let u = self.units.get_mut(&pid).expect("listed");
            u.home = Some(home);
            u.size = busy;
            u.last_change_ns = obs.now_ns;
            let sharing = u.chunks.sharing(|tid| idle(threads, tid));
            out.push(Action::Log {
                pid,
                message: placed_line(home, busy, p, u, sharing),
            });
        }
        self.split(&cap, &load, obs);
    }

    /// Whole where it fits, unless it keeps its memory private and the machine has room
    /// to spread its threads (`room`: fewer busy threads than CPUs, all told).
    fn home_of(
        &self,
        p: &ProcessObs,
        busy: u32,
        room: bool,
        cap: &[u32],
        load: &[u32],
        obs: &Observation<'_>,
    ) -> Home {
        let private = self.units[&p.pid].class == Class::Private;
        if self.t.split_private == 1 && private && busy > 1 && room {
            return Home::Split;
        }
        let free: Vec<u64> = obs.nodes.iter().map(|n| n.mem_free_bytes).collect();
        let mut own = p.node_bytes.clone();
        own.resize(cap.len(), 0);
        let again = self.units[&p.pid].strayed.is_some();
        plan::whole_node(cap, load, busy, p.rss_bytes, &free, &own, again)
            .map_or(Home::Split, Home::Whole)
    }

    /// Busy threads of split processes, process by process, water-filled over the room
    /// left; a thread keeps its node while its quota lasts.
    fn split(&mut self, cap: &[u32], load: &[u32], obs: &Observation<'_>) {
        let mut room: Vec<i64> = (0..cap.len())
            .map(|n| i64::from(cap[n]) - i64::from(load[n]))
            .collect();
        let node_now: BTreeMap<Tid, usize> = (obs.threads.iter())
            .filter_map(|t| Some((t.tid, t.node?)))
            .collect();
        let split: Vec<Pid> = (self.units.iter())
            .filter(|(_, u)| u.home == Some(Home::Split))
            .map(|(&pid, _)| pid)
            .collect();
        for pid in split {
            // Busy threads, and awake ones that have a node: an idle one keeps its node and
            // takes none of the quota (a main thread busy as its workers started must not
            // keep a CPU from them); a worker slowed for a pass beside the daemon's mover
            // keeps its place, where counting only busy ones gave it to another worker and
            // moved it across when it was busy again (numa02-like's twin on a shared host).
            let tids: Vec<Tid> = (self.threads.iter())
                .filter(|(_, t)| t.pid == pid && (t.busy || (t.awake && t.home.is_some())))
                .map(|(&tid, _)| tid)
                .collect();
            let shares = self.units[&pid].class != Class::Private;
            let within = if shares {
                let keep = self.units[&pid].nodes.clone();
                let nodes = plan::fewest_nodes(cap, &room, tids.len() as u32, &keep);
                self.units.get_mut(&pid).expect("listed").nodes = nodes.clone();
                (0..cap.len())
                    .map(|n| if nodes.contains(&n) { cap[n] } else { 0 })
                    .collect()
            } else {
                cap.to_vec()
            };
            self.units.get_mut(&pid).expect("listed").split_busy = tids.len() as u32;
            let quota = plan::water_fill(&within, &room, tids.len() as u32);
            for (n, q) in quota.iter().enumerate() {
                room[n] -= i64::from(*q);
            }
            let on: Vec<Option<usize>> = tids
                .iter()
                .map(|tid| {
                    self.threads[tid]
                        .home
                        .or_else(|| node_now.get(tid).copied())
                })
                .collect();
            for (tid, n) in tids.iter().zip(plan::assign(&quota, &on)) {
                self.threads.get_mut(tid).expect("listed").home = Some(n);
            }
        }
    }

    /// Affinities to the homes; memory after them.
    fn act(&mut self, m: &Machine, obs: &Observation<'_>, out: &mut Vec<Action>) {
        for (&tid, t) in self.threads.iter_mut() {
            if let Some(Some(Home::Whole(n))) = self.units.get(&t.pid).map(|u| u.home) {
                t.home = Some(n);
            }
            if let Some(n) = t.home.filter(|&n| t.set != Some(n)) {
                t.set = Some(n);
                out.push(Action::SetThreadAffinity {
                    tid,
                    cpus: m.nodes[n].cpus.clone(),
                });
            }
        }
        self.concentration(obs);
        if self.t.move_memory == 0 {
            return;
        }
        if self.t.spread_concentrated == 1 {
            self.spread(obs, out);
        }
        let mut pages = self.t.move_mb_s * MIB / PAGE * self.t.interval_ms / 1000;
        let mut free: Vec<u64> = obs.nodes.iter().map(|n| n.mem_free_bytes).collect();
        // Whole processes whose home node has the most room gather first: their moves free
        // room on the nodes the others wait for.
        let mut whole: Vec<(u64, &ProcessObs, usize)> = Vec::new();
        for p in obs.processes {
            match self.units.get(&p.pid).and_then(|u| u.home) {
                Some(Home::Whole(n)) => whole.push((free[n], p, n)),
                Some(Home::Split) => self.follow(p.pid, &mut pages, out),
                None => {}
            }
        }
        whole.sort_by_key(|&(room, p, _)| (std::cmp::Reverse(room), p.pid));
        // While any whole process's memory came home since the last pass, the budget is
        // moving pages and a call that moved nothing may have been deferred by it: no
        // process waits.
        let moving = (whole.iter()).any(|&(_, p, n)| {
            self.units[&p.pid]
                .away_last
                .is_some_and(|a| away_from(p, n) < a)
        });
        for (_, p, n) in whole {
            let u = self.units.get_mut(&p.pid).expect("listed");
            u.away_last = Some(away_from(p, n));
            gather(p, n, obs.now_ns, moving, &mut u.gathered, &mut free, out);
        }
    }

    /// Each split process's [`Unit::concentrated`], from its busy threads' homes and its
    /// memory per node.
    fn concentration(&mut self, obs: &Observation<'_>) {
        for p in obs.processes {
            let Some(u) = self.units.get_mut(&p.pid) else {
                continue;
            };
            let on = busy_on(&self.threads, p);
            u.concentrated =
                u.home == Some(Home::Split) && concentrated(p, &on, self.t.concentrated_pct);
        }
    }

    /// A split process not known to be private (not classified after `classify_wait_s`,
    /// or sharing) whose memory is concentrated: each node holding more than its busy
    /// threads' share has its excess sent to the nodes holding less, once (memory a main
    /// thread first touched on one node, read by workers on every node: XSBench's tables,
    /// HPL's matrix; a graph built by whichever thread wrote first, read uniformly by all).
    /// Every node's memory controller then serves its share of the accesses. Chunks it
    /// samples later are interleaved over the nodes (`to_interleave`).
    fn spread(&mut self, obs: &Observation<'_>, out: &mut Vec<Action>) {
        for p in obs.processes {
            let Some(u) = self.units.get(&p.pid) else {
                continue;
            };
            let waited = u
                .busy_since
                .is_some_and(|t| obs.now_ns >= t + self.t.classify_wait_s * NS_PER_S);
            let known_private = u.class == Class::Private;
            if !u.concentrated
                || u.spread
                || known_private
                || (u.class == Class::Unknown && !waited)
            {
                continue;
            }
            let on = busy_on(&self.threads, p);
            let nodes: Vec<usize> = (0..on.len()).filter(|&n| on[n] > 0).collect();
            let moves = balance_turns(&p.node_bytes, &excess(p, &on));
            if moves.is_empty() {
                continue;
            }
            let u = self.units.get_mut(&p.pid).expect("listed");
            u.spread = true;
            u.nodes = nodes.clone();
            u.last_change_ns = obs.now_ns;
            let from: Vec<usize> = moves.iter().map(|(n, _)| *n).collect();
            out.push(Action::Log {
                pid: p.pid,
                message: format!(
                    "memory concentrated on nodes {from:?}: spread to its busy threads' shares over nodes {nodes:?}"
                ),
            });
            for (from, nodes) in moves {
                out.push(Action::InterleaveProcessPages {
                    pid: p.pid,
                    from,
                    nodes,
                });
            }
        }
    }

    /// Whole processes whose busy threads outgrew their node (more than its CPUs, counting
    /// every busy thread homed there) lose their home, to be placed again, while another
    /// node has CPUs to spare, or while their node holds more than its share of all the
    /// busy threads (its CPUs' part of the machine's): a process placed whole while it had
    /// one busy thread (numa02's main thread, first touching its memory before its 24
    /// workers start) must not keep 35 threads on a node of 12 beside one with 13. When
    /// every node is overcommitted alike, the process stays with its memory. The others'
    /// sizes are raised to their busy threads. Returns whether one lost its home.
    fn outgrown(&mut self, m: &Machine) -> bool {
        let cap: Vec<u32> = m.nodes.iter().map(|n| n.cpus.count() as u32).collect();
        let mut load = vec![0u32; cap.len()];
        for u in self.units.values() {
            if let Some(Home::Whole(n)) = u.home {
                load[n] += u.busy.max(u.size);
            }
        }
        for t in self.threads.values().filter(|t| t.busy) {
            if let (Some(n), Some(Some(Home::Split))) =
                (t.home, self.units.get(&t.pid).map(|u| u.home))
            {
                load[n] += 1;
            }
        }
        let spare = (0..cap.len()).any(|n| load[n] < cap[n]);
        let (all_cap, all_load) = (cap.iter().sum::<u32>(), load.iter().sum::<u32>());
        let mut lost = Vec::new();
        for (&pid, u) in self.units.iter_mut() {
            let Some(Home::Whole(n)) = u.home else {
                continue;
            };
            if u.busy <= u.size {
                continue;
            }
            let more_than_share =
                u64::from(load[n]) * u64::from(all_cap) > u64::from(all_load) * u64::from(cap[n]);
            if load[n] > cap[n] && (spare || more_than_share) {
                u.home = None;
                load[n] -= u.busy;
                lost.push(pid);
            } else {
                u.size = u.busy;
            }
        }
        for t in self.threads.values_mut().filter(|t| lost.contains(&t.pid)) {
            t.home = None;
        }
        !lost.is_empty()
    }

    /// A node with more busy threads homed on it than it has CPUs while another has CPUs
    /// to spare: a split process's thread went idle and another became busy, or a main
    /// thread took a CPU as its workers started. The split processes are shared out again.
    fn overloaded(&self, m: &Machine) -> bool {
        let mut load = vec![0u32; m.nodes.len()];
        for u in self.units.values() {
            if let Some(Home::Whole(n)) = u.home {
                load[n] += u.busy;
            }
        }
        for t in self.threads.values().filter(|t| t.busy) {
            if let (Some(n), Some(Some(Home::Split))) =
                (t.home, self.units.get(&t.pid).map(|u| u.home))
            {
                load[n] += 1;
            }
        }
        let cap = |n: usize| m.nodes[n].cpus.count() as u32;
        (0..load.len()).any(|n| load[n] > cap(n)) && (0..load.len()).any(|n| load[n] < cap(n))
    }

    /// Chunks of a split process to move while the pass's move budget (`pages`) lasts: a
    /// private one's whose sampling threads are all on one other node; a sharing one's
    /// that lie off their node of its interleave.
    fn follow(&mut self, pid: Pid, pages: &mut u64, out: &mut Vec<Action>) {
        let threads = &self.threads;
        let u = self.units.get_mut(&pid).expect("listed");
        let private = u.class == Class::Private;
        // Placed before its class was known: its memory stays until it is.
        if u.class == Class::Unknown {
            return;
        }
        let moves = if private {
            u.chunks.to_follow(1, |tid| threads.get(&tid)?.home)
        } else {
            u.chunks.to_interleave(&u.nodes)
        };
        let shift = self.t.chunk_shift();
        let per_chunk = (1u64 << shift) / PAGE;
        let mut by_node: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
        for (key, node) in moves {
            if *pages < per_chunk {
                break;
            }
            *pages -= per_chunk;
            if private && self.t.follow_once == 1 {
                u.chunks.followed(key, node);
            } else {
                u.chunks.sent(key, node);
            }
            let base = key << shift;
            let v = by_node.entry(node).or_default();
            v.extend((0..per_chunk).map(|i| base + i * PAGE));
        }
        if !by_node.is_empty() {
            u.last_change_ns = self.last_ns.unwrap_or(0);
        }
        for (node, addrs) in by_node {
            out.push(Action::MovePages { pid, addrs, node });
        }
    }
}

/// `migrate_pages` of a whole process's memory on other nodes, when more than 1/16 of it
/// lies there: the largest part first, then the others while the home node's free memory
/// (`free`, this pass's, less what earlier calls take) holds them all. A part that does not
/// fit moves as far as it fits; what is left waits for a later pass, when the other
/// processes have taken their memory away from the home node. After a call that moved
/// nothing (`gathered`: as much away as at the last call), while no whole process's memory
/// is coming home (`moving`: else the daemon's budget, which the policy cannot see, may
/// have deferred the call), the next waits, twice as long each time up to 64 s: what stays
/// is memory no call can move (mapped by other processes too), and each call walks the
/// whole process.
fn gather(
    p: &ProcessObs,
    home: usize,
    now: u64,
    moving: bool,
    gathered: &mut Option<Gathered>,
    free: &mut [u64],
    out: &mut Vec<Action>,
) {
    let away = away_from(p, home);
    let wait_ns = match *gathered {
        Some(g) if away >= g.away && !moving => {
            if now < g.next_ns {
                return;
            }
            (g.wait_ns * 2).min(GATHER_WAIT_MAX_NS)
        }
        _ => NS_PER_S,
    };
    if away * 16 <= p.rss_bytes {
        return;
    }
    let mut parts: Vec<(u64, usize)> = (p.node_bytes.iter().enumerate())
        .filter(|&(n, &b)| n != home && b > 0)
        .map(|(n, &b)| (b, n))
        .collect();
    parts.sort_by_key(|&(b, n)| (std::cmp::Reverse(b), n));
    for (i, (b, from)) in parts.into_iter().enumerate() {
        // Nothing while the home node has no room for a 16th of the part: the processes
        // whose memory fills it take theirs home first.
        if (i > 0 && b > free[home]) || free[home] * 16 < b {
            break;
        }
        let moved = b.min(free[home]);
        free[home] -= moved;
        free[from] += moved;
        *gathered = Some(Gathered {
            away,
            next_ns: now + wait_ns,
            wait_ns,
        });
        out.push(Action::MigrateProcessPages {
            pid: p.pid,
            from,
            to: home,
        });
    }
}

/// Process `p`'s busy threads homed on each node.
fn busy_on(threads: &BTreeMap<Tid, Thread>, p: &ProcessObs) -> Vec<u64> {
    let mut on = vec![0u64; p.node_bytes.len()];
    for t in threads.values().filter(|t| t.pid == p.pid && t.busy) {
        if let Some(n) = t.home.filter(|&n| n < on.len()) {
            on[n] += 1;
        }
    }
    on
}

/// Process `p`'s memory on each node less its busy threads' share of it (`on[n]`: its busy
/// threads homed on node `n`), bytes: positive where a node holds more than its share.
/// Empty when no busy thread has a home.
fn excess(p: &ProcessObs, on: &[u64]) -> Vec<i128> {
    let threads: u64 = on.iter().sum();
    if threads == 0 {
        return Vec::new();
    }
    (p.node_bytes.iter().zip(on))
        .map(|(&b, &k)| b as i128 - p.rss_bytes as i128 * k as i128 / threads as i128)
        .collect()
}

/// More than `pct` percent of process `p`'s memory lies beyond its busy threads' share of
/// the nodes (`on[n]`: its busy threads homed on node `n`): a main thread first touched it
/// on one node, or the workers that first touched it ran unevenly, and the workers read it
/// from every node. The node holding the excess serves that much more than its part of the
/// accesses, and a memory-bound run takes about that much longer (graph500 on stable-b: 20
/// s with its memory at its shares, 33 s with 15% of it beyond them, all but 2% on one
/// node), while sending the excess away costs one copy of it. The default, 12 (about an
/// eighth), leaves milder imbalances alone: a private process's threads' memory lies where
/// they first touched it, unevenly (NPB UA's main thread's share is 25% over the others'),
/// and sampling it to tell it from a sharer costs more than the imbalance.
fn concentrated(p: &ProcessObs, on: &[u64], pct: u64) -> bool {
    let beyond: i128 = excess(p, on).iter().filter(|&&e| e > 0).sum();
    beyond * 100 > p.rss_bytes as i128 * pct as i128
}

/// Turns of 2 MiB address runs that bring each node's memory to its share (`bytes[n]` on
/// node `n`, `excess[n]` above its share, negative below): for each node above its share,
/// the nodes taking turns over its pages ([`Action::InterleaveProcessPages`]), itself for
/// the share it keeps and each node below its share for its part of the excess, in
/// [`BALANCE_TURNS`] turns (largest remainders). A node whose excess takes no turn keeps
/// it.
fn balance_turns(bytes: &[u64], excess: &[i128]) -> Vec<(usize, Vec<usize>)> {
    let deficit: i128 = excess.iter().filter(|&&e| e < 0).map(|e| -e).sum();
    let mut out = Vec::new();
    for (from, &e) in excess.iter().enumerate().filter(|&(_, &e)| e > 0) {
        let held = bytes[from] as i128;
        let sent = e.min(deficit);
        // In node order: an even split is the interleave over the nodes in order, as
        // `to_interleave` places the chunks it samples later.
        let weights: Vec<(usize, i128)> = (excess.iter().enumerate())
            .filter(|&(n, &d)| n == from || d < 0)
            .map(|(n, &d)| {
                let part = if n == from {
                    held - sent
                } else {
                    sent * -d / deficit
                };
                (n, part)
            })
            .collect();
        let turns = weighted_turns(&weights, BALANCE_TURNS);
        if turns.iter().all(|&n| n == from) {
            continue;
        }
        out.push((from, turns));
    }
    out
}

/// `turns` nodes in proportion to their weights, each node's turns spaced evenly (smooth
/// weighted round robin, ties to the first listed): runs of one node's turns together
/// would leave some threads' slices of an array all local and others' all remote.
fn weighted_turns(weights: &[(usize, i128)], turns: usize) -> Vec<usize> {
    let counts = apportion(weights, turns);
    let total: i64 = counts.iter().sum();
    let mut current = vec![0i64; counts.len()];
    (0..total)
        .map(|_| {
            for (c, &k) in current.iter_mut().zip(&counts) {
                *c += k;
            }
            let i = (0..counts.len()).fold(0, |b, i| if current[i] > current[b] { i } else { b });
            current[i] -= total;
            weights[i].0
        })
        .collect()
}

/// `turns` shared out in proportion to the weights (largest remainders, ties to the first
/// listed), divided by their greatest common divisor (half a node's pages to another is
/// the interleave `[a, b]`). All zero when the weights are.
fn apportion(weights: &[(usize, i128)], turns: usize) -> Vec<i64> {
    let total: i128 = weights.iter().map(|w| w.1.max(0)).sum();
    if total == 0 {
        return vec![0; weights.len()];
    }
    let exact: Vec<i128> = weights.iter().map(|w| w.1.max(0) * turns as i128).collect();
    let mut counts: Vec<usize> = exact.iter().map(|x| (x / total) as usize).collect();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(exact[i] % total));
    let left = turns - counts.iter().sum::<usize>();
    for &i in order.iter().take(left) {
        counts[i] += 1;
    }
    let gcd = counts.iter().fold(0, |a, &c| gcd(a, c)).max(1);
    counts.iter().map(|&c| (c / gcd) as i64).collect()
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The thread is known and idle ([`Thread::idle`]).
fn idle(threads: &BTreeMap<Tid, Thread>, tid: Tid) -> bool {
    threads.get(&tid).is_some_and(Thread::idle)
}

/// A process's memory away from `home`, bytes.
fn away_from(p: &ProcessObs, home: usize) -> u64 {
    let at_home = p.node_bytes.get(home).copied().unwrap_or(0);
    p.rss_bytes - at_home.min(p.rss_bytes)
}

fn placed_line(home: Home, busy: u32, p: &ProcessObs, u: &Unit, s: chunks::Sharing) -> String {
    let class = match (u.class, u.strayed) {
        (Class::Shares, Some(Strayed::Followed(followed, strayed))) => format!(
            "shares its memory: {strayed} of {followed} chunks that followed a thread sampled from another node"
        ),
        (Class::Shares, Some(Strayed::Across(multi, across))) => {
            format!("shares its memory: {across} of {multi} chunks sampled by threads of two nodes")
        }
        (Class::Unknown, _) => "not classified".to_string(),
        (Class::Shares, _) => format!("shares its memory: {} of {} chunks", s.shared, s.multi),
        (Class::Private, _) => {
            format!("private memory: {} of {} chunks shared", s.shared, s.multi)
        }
    };
    let mib = p.rss_bytes / MIB;
    match home {
        Home::Whole(n) => format!("home node {n}: whole ({busy} busy threads, {mib} MiB, {class})"),
        Home::Split => format!("split over nodes ({busy} busy threads, {mib} MiB, {class})"),
    }
}

impl Policy for HomeNode {
    fn name(&self) -> &str {
        "home-node"
    }

    fn tick_interval_ns(&self) -> Option<u64> {
        let i = self.t.interval_ms * 1_000_000;
        Some(if self.look_again { i / 4 } else { i })
    }

    fn tick_interval_range_ns(&self) -> Option<(u64, u64)> {
        let i = self.t.interval_ms * 1_000_000;
        Some((if self.t.second_look == 1 { i / 4 } else { i }, i))
    }

    fn on_tick(&mut self, m: &Machine, obs: &Observation<'_>, out: &mut Vec<Action>) {
        let dt = self.last_ns.map_or(0, |l| obs.now_ns.saturating_sub(l));
        self.last_ns = Some(obs.now_ns);
        self.measure(m, obs, dt);
        self.crowding(m);
        self.classify(obs);
        let strayed = self.strayed();
        let outgrown = self.outgrown(m);
        // A split process with a busy thread that has no node, or fewer threads awake than
        // it was last shared out with busy (a main thread busy as its workers started,
        // idle now, must not leave its node one worker short). Awake, not busy: a worker
        // that ran less than half the pass beside the daemon's mover on its CPU has not
        // gone anywhere, and sharing the process out again for it moved a worker to
        // another node and back (numa02-like's twin with the guest's measured move
        // costs), until its chunks strayed and it was taken for a sharer.
        let reshare = self.t.reshare_split == 1;
        let busy_changed = self.units.iter().any(|(&pid, u)| {
            u.home == Some(Home::Split)
                && ((reshare && u.awake < u.split_busy)
                    || (self.threads.values()).any(|t| t.pid == pid && t.busy && t.home.is_none()))
        });
        let ready_new =
            (self.units.values()).any(|u| u.home.is_none() && self.ready(u, obs.now_ns));
        let overloaded = reshare && self.overloaded(m);
        if ready_new || busy_changed || self.exited || outgrown || strayed || overloaded {
            self.exited = false;
            self.plan(m, obs, out);
        }
        self.act(m, obs, out);
    }

    /// Samples until a process is placed; a whole one needs none after that (its memory
    /// is followed by `numa_maps`), a split one until a window passes without a move.
    fn wants_samples(&self, pid: Pid) -> bool {
        if self.t.sample_selectively == 0 {
            return true;
        }
        let Some(u) = self.units.get(&pid) else {
            return true;
        };
        match u.home {
            None => true,
            Some(Home::Whole(_)) => false,
            // Not classified, its memory where its threads are: its class would change
            // nothing (a process placed at once on a crowded machine, its memory first
            // touched by its own threads; sampling an HPC code's 30 GiB costs millions of
            // faults).
            Some(Home::Split) if u.class == Class::Unknown && !u.concentrated => false,
            // Not classified, its memory spread in bulk: nothing sampled would move it
            // again (a sharer's chunks are still interleaved as they are sampled: memory
            // it touches for the first time after the spread lands where its toucher runs).
            Some(Home::Split) if u.spread && u.class == Class::Unknown => false,
            Some(Home::Split) => {
                let now = self.last_ns.unwrap_or(0);
                now < u.last_change_ns + self.t.window_s * NS_PER_S
            }
        }
    }

    fn on_process_exit(&mut self, pid: Pid) {
        self.exited |= self.units.remove(&pid).is_some();
        self.threads.retain(|_, t| t.pid != pid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{AccessSample, NodeObs, ThreadObs};
    use crate::util::test::machine;
    use numabal_model::Mask;

    const GIB: u64 = 1 << 30;

    /// The balancing spread's turns: all of the memory on one of two nodes is the plain
    /// interleave; graph500's 4352 MiB as its first touch left them on stable-b (1654,
    /// 1173, 825, 700 MiB; 1088 each its share) sends node 0's excess, and node 1's, to
    /// nodes 2 and 3 in proportion to what they lack; a node at its share sends nothing.
    #[test]
    fn a_concentrated_process_is_brought_to_its_busy_threads_shares() {
        assert_eq!(balance_turns(&[4, 0], &[2, -2]), vec![(0, vec![0, 1])]);
        let mib = |v: [i128; 4]| v.map(|x| x << 20);
        let bytes = mib([1654, 1173, 825, 700]).map(|x| x as u64);
        let turns = balance_turns(&bytes, &mib([566, 85, -263, -388]));
        let count = |v: &[usize], n: usize| v.iter().filter(|&&x| x == n).count();
        assert_eq!(turns.len(), 2, "{turns:?}");
        let (from, t0) = &turns[0];
        assert_eq!((*from, t0.len()), (0, 32));
        // Node 0 keeps 1088 of 1654 (21.05 of 32 turns), sends 566: 229 to node 2 (4.42
        // turns), 337 to node 3 (6.53 turns, the largest remainder: 7).
        assert_eq!([0, 1, 2, 3].map(|n| count(t0, n)), [21, 0, 4, 7]);
        // Spaced: 21 kept runs between 11 sent ones, never more than three in a row, never
        // two sent in a row.
        assert!(t0.windows(4).all(|w| w.iter().any(|&n| n != 0)), "{t0:?}");
        assert!(t0.windows(2).all(|w| w[0] == 0 || w[1] == 0), "{t0:?}");
        let (from, t1) = &turns[1];
        assert_eq!(*from, 1);
        // Node 1 keeps 1088 of 1173 (29.68 turns), sends 34 MiB to node 2 (0.94) and 51 to
        // node 3 (1.38): 30, 1, 1.
        assert_eq!([0, 1, 2, 3].map(|n| count(t1, n)), [0, 30, 1, 1]);
        assert!(balance_turns(&[2, 2], &[0, 0]).is_empty());
        // 651 MiB beyond the shares: 15% of 4352.
        let p = process(1, 56, bytes.to_vec());
        assert!(concentrated(&p, &[14, 14, 14, 14], 12));
        assert!(!concentrated(&p, &[14, 14, 14, 14], 15));
        // NPB UA's main thread's node 25% over its share, 6% of its memory beyond them.
        let p = process(1, 32, mib([772, 580, 573, 548]).map(|x| x as u64).to_vec());
        assert!(!concentrated(&p, &[8, 8, 8, 8], 12));
        assert!(concentrated(&p, &[8, 8, 8, 8], 5));
        // No busy thread homed: nothing to balance against.
        assert!(!concentrated(&p, &[0, 0, 0, 0], 12));
    }

    /// A host as the policy sees it: processes of busy threads, memory per node, samples.
    struct Host {
        m: Machine,
        /// (pid, busy threads, idle threads, GiB per node)
        procs: Vec<(u32, u32, u32, Vec<u64>)>,
        /// Each thread's CPU time so far.
        cpu_ns: BTreeMap<Tid, u64>,
        /// Busy threads that run only this long in the next passes, ns.
        slowed: BTreeMap<Tid, u64>,
    }

    impl Host {
        /// A host of `m` running `procs`, no CPU time run yet.
        fn new(m: &Machine, procs: Vec<(u32, u32, u32, Vec<u64>)>) -> Host {
            Host {
                m: m.clone(),
                procs,
                cpu_ns: BTreeMap::new(),
                slowed: BTreeMap::new(),
            }
        }

        fn tid(pid: u32, i: u32) -> Tid {
            Tid(pid * 1000 + i)
        }

        /// One pass at `t_s`, a second after the last, every busy thread having run all of it.
        fn pass(&mut self, p: &mut HomeNode, t_s: u64, samples: &[AccessSample]) -> Vec<Action> {
            let mut threads = Vec::new();
            let mut procs = Vec::new();
            for (pid, busy, idle, gib) in &self.procs {
                for i in 0..busy + idle {
                    let tid = Host::tid(*pid, i);
                    let ran = self.cpu_ns.entry(tid).or_default();
                    *ran += match self.slowed.get(&tid) {
                        _ if i >= *busy => 0,
                        Some(&ns) => ns,
                        None => NS_PER_S,
                    };
                    threads.push(ThreadObs {
                        tid,
                        pid: Pid(*pid),
                        cpu: Some(0),
                        node: Some(0),
                        cpu_time_ns: *ran,
                        age_ns: None,
                    });
                }
                let node_bytes = gib.iter().map(|g| g * GIB).collect();
                procs.push(process(*pid, busy + idle, node_bytes));
            }
            tick(p, &self.m, t_s, &threads, &procs, samples)
        }
    }

    /// Process `pid` of `threads` threads with `node_bytes` per node, allowed every node.
    fn process(pid: u32, threads: u32, node_bytes: Vec<u64>) -> ProcessObs {
        ProcessObs {
            pid: Pid(pid),
            comm: "app".into(),
            num_threads: threads,
            cpu_time_ns: 0,
            vsize_bytes: 0,
            rss_bytes: node_bytes.iter().sum(),
            mems_allowed: Mask::from_ids(0..node_bytes.len()),
            node_bytes,
            interleaved: false,
            kvm_vcpus: None,
        }
    }

    /// One pass of `p` at `t_s` on `m` (4 of 8 GiB free a node, no CPU idle time).
    fn tick(
        p: &mut HomeNode,
        m: &Machine,
        t_s: u64,
        threads: &[ThreadObs],
        procs: &[ProcessObs],
        samples: &[AccessSample],
    ) -> Vec<Action> {
        tick_at(p, m, t_s * NS_PER_S, threads, procs, samples)
    }

    /// [`tick`] at `now_ns`.
    fn tick_at(
        p: &mut HomeNode,
        m: &Machine,
        now_ns: u64,
        threads: &[ThreadObs],
        procs: &[ProcessObs],
        samples: &[AccessSample],
    ) -> Vec<Action> {
        let nodes = vec![
            NodeObs {
                mem_total_bytes: 8 * GIB,
                mem_free_bytes: 4 * GIB,
            };
            m.nr_nodes()
        ];
        let idle = vec![0; m.nr_cpus()];
        let obs = Observation {
            now_ns,
            threads,
            processes: procs,
            nodes: &nodes,
            cpu_idle_ns: &idle,
            samples,
        };
        let mut out = Vec::new();
        p.on_tick(m, &obs, &mut out);
        out
    }

    /// Samples of `pid`'s busy threads: thread i touches chunks `chunks(i)`, pages on `node`.
    fn samples(
        pid: u32,
        threads: u32,
        node: usize,
        chunks: impl Fn(u32) -> Vec<u64>,
    ) -> Vec<AccessSample> {
        let mut v = Vec::new();
        for i in 0..threads {
            for c in chunks(i) {
                v.push(AccessSample {
                    tid: Host::tid(pid, i),
                    pid: Pid(pid),
                    node: 0,
                    addr: c << 21,
                    page_node: node,
                });
            }
        }
        v
    }

    fn homes(out: &[Action], m: &Machine) -> BTreeMap<Tid, usize> {
        let mut h = BTreeMap::new();
        for a in out {
            if let Action::SetThreadAffinity { tid, cpus } = a {
                let n = (0..m.nr_nodes()).find(|&n| m.nodes[n].cpus == *cpus);
                h.insert(*tid, n.expect("a node's CPUs"));
            }
        }
        h
    }

    #[test]
    fn processes_sharing_their_memory_go_whole_to_a_node_each_and_take_it_along() {
        let m = machine("autonuma-2n24");
        let mut host = Host::new(&m, vec![(1, 12, 1, vec![0, 3]), (2, 12, 1, vec![0, 3])]);
        let mut p = HomeNode::new(Tunables::default());
        assert!(host.pass(&mut p, 1, &[]).is_empty());
        // Every thread touches the same 32 chunks: shared.
        let mut s = samples(1, 12, 1, |_| (0..32).collect());
        s.extend(samples(2, 12, 1, |_| (0..32).collect()));
        let out = host.pass(&mut p, 2, &s);
        let h = homes(&out, &m);
        // Process 1 stays with its memory on node 1; process 2 goes to node 0, all 13 of
        // its threads, and its memory follows with migrate_pages.
        assert!((0..13).all(|i| h[&Host::tid(1, i)] == 1), "{h:?}");
        assert!((0..13).all(|i| h[&Host::tid(2, i)] == 0), "{h:?}");
        let mig: Vec<&Action> = (out.iter())
            .filter(|a| matches!(a, Action::MigrateProcessPages { .. }))
            .collect();
        assert_eq!(
            mig,
            vec![&Action::MigrateProcessPages {
                pid: Pid(2),
                from: 1,
                to: 0
            }]
        );
        // Placed: the next pass changes no affinity.
        host.procs[1].3 = vec![3, 0];
        let out = host.pass(&mut p, 3, &[]);
        assert!(out.is_empty(), "{out:?}");
        // Memory that stays where it is after a call (mapped by other processes too) is not
        // asked for again, until more strays.
        host.procs[0].3 = vec![2, 2];
        let mig = |out: &[Action]| {
            (out.iter())
                .filter(|a| matches!(a, Action::MigrateProcessPages { .. }))
                .count()
        };
        // Waits of 1, 2, 4 s between calls that move nothing; a call that moves some (the
        // home node gains a GiB) makes the next come at once.
        let calls: Vec<usize> = (4..13).map(|t| mig(&host.pass(&mut p, t, &[]))).collect();
        assert_eq!(calls, vec![1, 1, 0, 1, 0, 0, 0, 1, 0], "2 GiB of 4 strayed");
        host.procs[0].3 = vec![1, 3];
        assert_eq!(mig(&host.pass(&mut p, 13, &[])), 1, "the home node gained");
        // Placed whole: no more samples needed.
        assert!(!p.wants_samples(Pid(1)) && !p.wants_samples(Pid(2)));
        assert!(p.wants_samples(Pid(3)), "a process not seen yet");
    }

    #[test]
    fn a_private_process_is_split_and_its_chunks_follow_their_threads() {
        let m = machine("autonuma-2n24");
        let mut host = Host::new(&m, vec![(1, 8, 1, vec![1, 0])]);
        let mut p = HomeNode::new(Tunables::default());
        host.pass(&mut p, 1, &[]);
        // Thread i alone touches chunks 4i..4i+4, all on node 0, each sampled once a pass:
        // classified at the second pass, when each chunk has two samples.
        let s = samples(1, 8, 0, |i| (0..4).map(|k| 4 * u64::from(i) + k).collect());
        assert_eq!(host.pass(&mut p, 2, &s).len(), 0, "not classified yet");
        let out = host.pass(&mut p, 3, &s);
        let h = homes(&out, &m);
        assert_eq!(h.len(), 8, "only the busy threads: {h:?}");
        assert_eq!(h.values().filter(|&&n| n == 0).count(), 4, "{h:?}");
        // The chunks of the threads on node 1 move there, 4 chunks of 512 pages each.
        let moved: Vec<(usize, usize)> = (out.iter())
            .filter_map(|a| match a {
                Action::MovePages { addrs, node, .. } => Some((*node, addrs.len())),
                _ => None,
            })
            .collect();
        assert_eq!(moved, vec![(1, 4 * 4 * 512)]);
        // Sent once: a pass without samples moves nothing, nor do samples that find the
        // pages where they were sent; samples that find them still on node 0 send them again.
        assert_eq!(host.pass(&mut p, 4, &[]).len(), 0);
        let there: Vec<AccessSample> = (s.iter())
            .map(|x| AccessSample {
                page_node: h[&x.tid],
                ..*x
            })
            .collect();
        assert_eq!(host.pass(&mut p, 5, &there).len(), 0);
        assert_eq!(host.pass(&mut p, 6, &s).len(), 1);
        // A window later (the earlier samples expired), a thread of another node sampled
        // in half the chunks that followed one thread of node 1 (2 of the 16 followed,
        // fewer than shared_pct): they stay.
        let on_node_0 = *h.iter().find(|&(_, &n)| n == 0).unwrap().0;
        let on_node_1 = *h.iter().find(|&(_, &n)| n == 1).unwrap().0;
        let other: Vec<AccessSample> = (s.iter())
            .filter(|x| h[&x.tid] == 1)
            .map(|x| AccessSample {
                tid: if x.tid == on_node_1 && (x.addr >> 21) % 4 < 2 {
                    on_node_0
                } else {
                    x.tid
                },
                page_node: 1,
                ..*x
            })
            .collect();
        assert!(!other.is_empty());
        // Sampled until a window (10 s) passes without a move.
        assert!(p.wants_samples(Pid(1)));
        let moved_back = host.pass(&mut p, 17, &other);
        assert!(moved_back.is_empty(), "{moved_back:?}");
        assert!(!p.wants_samples(Pid(1)));
    }

    /// Threads that stream through the memory they share look private to soft-dirty
    /// sampling (each chunk's first writer after a clear): split, then its followed chunks
    /// sampled by the thread of the other node. When half of them are, it is placed again,
    /// whole, and its memory gathered.
    #[test]
    fn a_split_process_whose_followed_chunks_stray_is_placed_whole() {
        let m = machine("autonuma-2n24");
        let mut host = Host::new(&m, vec![(1, 2, 0, vec![1, 0])]);
        let mut p = HomeNode::new(Tunables::default());
        host.pass(&mut p, 1, &[]);
        // Thread 0 first writes chunks 0..16, thread 1 chunks 16..32, then the other way
        // round: the clears fell at other points of their streams.
        let s = samples(1, 2, 0, |i| {
            (16 * u64::from(i)..16 * u64::from(i) + 16).collect()
        });
        host.pass(&mut p, 2, &s);
        let out = host.pass(&mut p, 3, &s);
        let h = homes(&out, &m);
        assert_eq!(
            h.values().copied().collect::<BTreeSet<_>>().len(),
            2,
            "split: {h:?}"
        );
        let swapped = samples(1, 2, 0, |i| {
            (16 * u64::from(1 - i)..16 * u64::from(1 - i) + 16).collect()
        });
        let out = host.pass(&mut p, 4, &swapped);
        let lines: Vec<&str> = (out.iter())
            .filter_map(|a| match a {
                Action::Log { message, .. } => Some(message.as_str()),
                _ => None,
            })
            .collect();
        assert!(
            lines.iter().any(|l| l.starts_with("home node 0: whole")
                && l.contains("16 of 16 chunks that followed a thread")),
            "{out:?}"
        );
        let h = homes(&out, &m);
        assert_eq!(h.values().copied().collect::<Vec<_>>(), vec![0], "{h:?}");
    }

    #[test]
    fn single_threaded_processes_are_spread_over_the_cpus() {
        let m = machine("tiny-2n4");
        let mut host = Host::new(&m, (1..=4).map(|pid| (pid, 1, 0, vec![1, 0])).collect());
        let mut p = HomeNode::new(Tunables::default());
        host.pass(&mut p, 1, &[]);
        let h = homes(&host.pass(&mut p, 2, &[]), &m);
        // Two CPUs a node: two processes each, their memory on node 0 or not.
        assert_eq!(h.values().filter(|&&n| n == 0).count(), 2, "{h:?}");
        assert_eq!(h.values().filter(|&&n| n == 1).count(), 2, "{h:?}");
    }

    /// A single-threaded process first seen after a pass with none: placed in that very
    /// pass when its thread started since the last pass (1 s) and ran a tenth of its life
    /// at least (its CPU time over its age; the busiest thread's bar), not when it is
    /// older, ran less, or `first_sight` is off.
    #[test]
    fn a_young_busy_thread_is_placed_at_first_sight() {
        let m = machine("tiny-2n4");
        let first = |age_ms: u64, ran_ms: u64, t: Tunables| {
            let mut p = HomeNode::new(t);
            tick(&mut p, &m, 1, &[], &[], &[]);
            let th = ThreadObs {
                tid: Tid(7),
                pid: Pid(1),
                cpu: Some(0),
                node: Some(0),
                cpu_time_ns: ran_ms * 1_000_000,
                age_ns: Some(age_ms * 1_000_000),
            };
            let procs = [process(1, 1, vec![GIB, 0])];
            let out = tick(&mut p, &m, 2, &[th], &procs, &[]);
            !homes(&out, &m).is_empty()
        };
        assert!(
            first(600, 500, Tunables::default()),
            "busy 0.5 s of its 0.6"
        );
        assert!(
            !first(600, 30, Tunables::default()),
            "busy 0.03 s of its 0.6"
        );
        assert!(
            !first(1500, 1500, Tunables::default()),
            "older than the pass"
        );
        let off = Tunables {
            first_sight: 0,
            ..Tunables::default()
        };
        assert!(!first(600, 500, off), "first_sight=0");
    }

    /// A busy thread met first having run before the last pass is judged at a second look
    /// a quarter interval later, and placed there; one that never ran waits a whole one.
    #[test]
    fn a_thread_that_cannot_be_judged_gets_a_second_look() {
        let m = machine("tiny-2n4");
        let ms = 1_000_000;
        let th = |ran_ms: u64, age_ms: u64| ThreadObs {
            tid: Tid(7),
            pid: Pid(1),
            cpu: Some(0),
            node: Some(0),
            cpu_time_ns: ran_ms * ms,
            age_ns: Some(age_ms * ms),
        };
        let procs = [process(1, 1, vec![GIB, 0])];
        let met = |ran_ms: u64, t: Tunables| {
            let mut p = HomeNode::new(t);
            tick(&mut p, &m, 1, &[], &[], &[]);
            let out = tick(&mut p, &m, 2, &[th(ran_ms, 1500)], &procs, &[]);
            assert!(homes(&out, &m).is_empty(), "not judged at first sight");
            p
        };
        let mut p = met(1500, Tunables::default());
        assert_eq!(p.tick_interval_ns(), Some(250 * ms));
        assert_eq!(p.tick_interval_range_ns(), Some((250 * ms, 1000 * ms)));
        let out = tick_at(&mut p, &m, 2250 * ms, &[th(1750, 1750)], &procs, &[]);
        assert!(!homes(&out, &m).is_empty(), "placed at the second look");
        assert_eq!(
            p.tick_interval_ns(),
            Some(1000 * ms),
            "then whole intervals"
        );
        let idle = met(0, Tunables::default());
        assert_eq!(idle.tick_interval_ns(), Some(1000 * ms), "never ran");
        let off = Tunables {
            second_look: 0,
            ..Tunables::default()
        };
        let off = met(1500, off);
        assert_eq!(off.tick_interval_ns(), Some(1000 * ms), "second_look=0");
        assert_eq!(off.tick_interval_range_ns(), Some((1000 * ms, 1000 * ms)));
    }

    /// Processes on tiny-2n4 (2 CPUs a node) under a policy that places them unclassified
    /// after 1 s: the machine, the host, the policy and the homes of the third pass.
    fn placed_on_tiny(
        procs: Vec<(u32, u32, u32, Vec<u64>)>,
    ) -> (Machine, Host, HomeNode, BTreeMap<Tid, usize>) {
        let m = machine("tiny-2n4");
        let mut host = Host::new(&m, procs);
        let mut p = HomeNode::new(Tunables {
            classify_wait_s: 1,
            ..Tunables::default()
        });
        // Placed at the first pass that sees them busy (at once on a crowded machine),
        // else when classify_wait_s has passed.
        let mut h = BTreeMap::new();
        for t_s in 1..=3 {
            h.extend(homes(&host.pass(&mut p, t_s, &[]), &m));
        }
        (m, host, p, h)
    }

    #[test]
    fn a_whole_process_that_outgrows_its_node_is_placed_again() {
        let (m, mut host, mut p, h) = placed_on_tiny(vec![(1, 1, 3, vec![1, 0])]);
        assert!(h.values().all(|&n| n == 0), "whole on node 0: {h:?}");
        // Four busy threads on 2 CPUs: it no longer fits node 0 and, unclassified, is split.
        host.procs[0].1 = 4;
        host.procs[0].2 = 0;
        let out = host.pass(&mut p, 4, &[]);
        let h = homes(&out, &m);
        assert_eq!(h.values().filter(|&&n| n == 1).count(), 2, "{h:?}");
    }

    #[test]
    fn on_a_full_machine_whole_processes_that_grow_stay_with_their_memory() {
        let (m, mut host, mut p, h) =
            placed_on_tiny(vec![(1, 2, 1, vec![1, 0]), (2, 2, 1, vec![0, 1])]);
        assert_eq!(h[&Host::tid(1, 0)], 0, "{h:?}");
        assert_eq!(h[&Host::tid(2, 0)], 1, "{h:?}");
        // Three busy threads each on 2 CPUs a node: no node has a CPU to spare, nothing moves.
        for pr in host.procs.iter_mut() {
            pr.1 = 3;
            pr.2 = 0;
        }
        let out = host.pass(&mut p, 4, &[]);
        assert!(homes(&out, &m).is_empty(), "{out:?}");
    }

    /// HPL on a crowded machine: its main thread first touched the whole matrix on node 0
    /// and is busy as its four workers start. Placed at once, unclassified (a class would
    /// change nothing), over both nodes; when the main thread goes idle the workers are
    /// shared out again, two a node; its memory, all on node 0, is wanted sampled until
    /// `classify_wait_s` passes unclassified, then spread over both nodes in bulk and no
    /// longer sampled.
    #[test]
    fn a_crowded_process_is_placed_at_once_and_its_concentrated_memory_spread() {
        let m = machine("tiny-2n4");
        let mut host = Host::new(&m, vec![(1, 5, 0, vec![4, 0])]);
        let mut p = HomeNode::new(Tunables::default());
        host.pass(&mut p, 1, &[]);
        let out = host.pass(&mut p, 2, &[]);
        let placed = out.iter().any(|a| {
            matches!(a, Action::Log { message, .. }
            if message.starts_with("split over nodes (5 busy threads, 4096 MiB, not classified"))
        });
        assert!(placed, "{out:?}");
        let h = homes(&out, &m);
        assert_eq!(h.values().filter(|&&n| n == 1).count(), 2, "{h:?}");
        assert!(p.wants_samples(Pid(1)), "its memory is all on node 0");
        // The fifth thread goes idle: its node keeps one worker too few until shared out.
        host.procs[0].1 = 4;
        host.procs[0].2 = 1;
        host.pass(&mut p, 3, &[]);
        let busy_on = |p: &HomeNode, n: usize| {
            (0..4)
                .filter(|&i| p.threads[&Host::tid(1, i)].home == Some(n))
                .count()
        };
        assert_eq!((busy_on(&p, 0), busy_on(&p, 1)), (2, 2));
        let spread = |out: &[Action]| {
            out.iter().any(|a| {
                *a == Action::InterleaveProcessPages {
                    pid: Pid(1),
                    from: 0,
                    nodes: vec![0, 1],
                }
            })
        };
        for t_s in 4..=6 {
            assert!(
                !spread(&host.pass(&mut p, t_s, &[])),
                "not before 5 s unclassified"
            );
        }
        assert!(spread(&host.pass(&mut p, 7, &[])));
        assert!(
            !p.wants_samples(Pid(1)),
            "spread: nothing sampled would move it"
        );
        assert!(!spread(&host.pass(&mut p, 8, &[])), "once");
    }

    /// The same HPL with each of the three mechanisms off (the ablation's switches): not
    /// placed until `classify_wait_s` passes; never spread; the idle main thread's node
    /// left one worker short.
    #[test]
    fn crowded_placement_the_bulk_spread_and_the_reshare_each_switch_off() {
        let m = machine("tiny-2n4");
        let hpl = || Host::new(&m, vec![(1, 5, 0, vec![4, 0])]);
        let placed_at = |p: &mut HomeNode| {
            let mut host = hpl();
            (1..=10).find(|&t_s| {
                (host.pass(p, t_s, &[]).iter()).any(|a| {
                    matches!(a, Action::Log { message, .. }
                    if message.starts_with("split over nodes"))
                })
            })
        };
        let off = |f: fn(&mut Tunables)| {
            let mut t = Tunables::default();
            f(&mut t);
            HomeNode::new(t)
        };
        assert_eq!(placed_at(&mut HomeNode::new(Tunables::default())), Some(2));
        // Busy from the second pass: placed 5 s later, as on a machine with room.
        assert_eq!(placed_at(&mut off(|t| t.place_crowded = 0)), Some(7));
        let mut p = off(|t| t.spread_concentrated = 0);
        let mut host = hpl();
        for t_s in 1..=10 {
            let out = host.pass(&mut p, t_s, &[]);
            let spread = (out.iter()).any(|a| matches!(a, Action::InterleaveProcessPages { .. }));
            assert!(!spread, "spread at {t_s} s: {out:?}");
        }
        let mut p = off(|t| t.reshare_split = 0);
        let mut host = hpl();
        host.pass(&mut p, 1, &[]);
        host.pass(&mut p, 2, &[]);
        host.procs[0].1 = 4;
        host.procs[0].2 = 1;
        host.pass(&mut p, 3, &[]);
        let busy_on = |n: usize| {
            (0..4)
                .filter(|&i| p.threads[&Host::tid(1, i)].home == Some(n))
                .count()
        };
        assert_ne!((busy_on(0), busy_on(1)), (2, 2), "not shared out again");
    }

    /// A worker that runs a fifth of a pass (its CPU shared with the daemon's mover) is
    /// awake: its process is not shared out again (which would have left that worker out
    /// of the quotas), and no thread moves. A thread that does not run at all is not
    /// awake, and the workers are shared out again, as for a main thread gone idle.
    #[test]
    fn a_worker_slowed_for_a_pass_is_not_shared_out_again() {
        let m = machine("tiny-2n4");
        let (mut host, mut p) = split_four(&m, vec![(1, 4, 0, vec![2, 2])]);
        host.slowed.insert(Host::tid(1, 3), NS_PER_S / 5);
        for t_s in 3..=5 {
            let out = host.pass(&mut p, t_s, &[]);
            assert!(!sets_affinity(&out), "{t_s} s: {out:?}");
            assert_eq!(
                p.units[&Pid(1)].split_busy,
                4,
                "{t_s} s: not shared out again"
            );
        }
        // Not awake at all: shared out again, as a main thread gone idle.
        host.slowed.insert(Host::tid(1, 3), 0);
        host.pass(&mut p, 6, &[]);
        assert_eq!(p.units[&Pid(1)].split_busy, 3);
    }

    /// A worker slowed for a pass (awake, not busy) keeps its node when the plan is made
    /// again for another reason (here another process exits): before, only busy threads
    /// took the quotas, and a worker of the other node took the slowed one's place, the
    /// two swapping nodes when it was busy again (numa02-like's twin on a shared host,
    /// beside the daemon's mover). Whichever worker is slowed, no thread moves.
    #[test]
    fn a_worker_slowed_when_the_plan_is_made_again_keeps_its_node() {
        let m = machine("tiny-2n4");
        for slowed in 0..4 {
            let procs = vec![(1, 4, 0, vec![2, 2]), (2, 0, 1, vec![1, 0])];
            let (mut host, mut p) = split_four(&m, procs);
            host.slowed.insert(Host::tid(1, slowed), NS_PER_S / 5);
            host.procs.pop();
            let out = host.pass(&mut p, 3, &[]);
            assert!(!sets_affinity(&out), "worker {slowed} slowed: {out:?}");
        }
    }

    /// `procs` on `m` for two passes, process 1's four workers split over both nodes.
    fn split_four(m: &Machine, procs: Vec<(u32, u32, u32, Vec<u64>)>) -> (Host, HomeNode) {
        let mut host = Host::new(m, procs);
        let mut p = HomeNode::new(Tunables::default());
        host.pass(&mut p, 1, &[]);
        let out = host.pass(&mut p, 2, &[]);
        assert_eq!(homes(&out, m).len(), 4, "split over both nodes: {out:?}");
        (host, p)
    }

    fn sets_affinity(out: &[Action]) -> bool {
        (out.iter()).any(|a| matches!(a, Action::SetThreadAffinity { .. }))
    }

    /// numa02_smt: a main thread still busy as its twelve workers start is shared out with
    /// them, 7 and 6 over two nodes of 12 CPUs (the process private: each thread writes
    /// chunks of its own); when it goes idle, the workers are shared out again, 6 and 6,
    /// though no node is over its CPUs.
    #[test]
    fn a_split_process_whose_thread_goes_idle_is_shared_out_again() {
        let m = machine("autonuma-2n24");
        let mut host = Host::new(&m, vec![(1, 13, 0, vec![1, 0])]);
        let mut p = HomeNode::new(Tunables::default());
        let own = samples(1, 13, 0, |i| vec![u64::from(i) * 4, u64::from(i) * 4 + 1]);
        for t_s in 1..=3 {
            host.pass(&mut p, t_s, &own);
        }
        let on = |p: &HomeNode, n: usize, threads: u32| {
            (0..threads)
                .filter(|&i| p.threads[&Host::tid(1, i)].home == Some(n))
                .count()
        };
        assert_eq!((on(&p, 0, 13), on(&p, 1, 13)), (7, 6));
        // The thread that goes idle is one of node 1's six.
        assert_eq!(p.threads[&Host::tid(1, 12)].home, Some(1));
        host.procs[0].1 = 12;
        host.procs[0].2 = 1;
        host.pass(&mut p, 4, &[]);
        assert_eq!((on(&p, 0, 12), on(&p, 1, 12)), (6, 6));
    }

    #[test]
    fn on_a_full_machine_a_process_that_grows_past_its_share_is_placed_again() {
        // numa01_numa02's numa02: placed whole while its main thread alone ran.
        let m = machine("tiny-2n4");
        let mut host = Host::new(&m, vec![(1, 1, 5, vec![1, 0]), (2, 2, 0, vec![0, 1])]);
        let mut p = HomeNode::new(Tunables {
            classify_wait_s: 1,
            ..Tunables::default()
        });
        let mut h = BTreeMap::new();
        for t_s in 1..=3 {
            h.extend(homes(&host.pass(&mut p, t_s, &[]), &m));
        }
        assert_eq!(h[&Host::tid(1, 0)], 0, "{h:?}");
        assert_eq!(h[&Host::tid(2, 0)], 1, "{h:?}");
        // Six busy threads on node 0 beside two on node 1, 2 CPUs each: every node is
        // full, but node 0 holds 6 of the 8, more than its half. Split over both: 4 and 4.
        host.procs[0].1 = 6;
        host.procs[0].2 = 0;
        let h = homes(&host.pass(&mut p, 4, &[]), &m);
        let to_1 = (0..6)
            .filter(|&i| h.get(&Host::tid(1, i)) == Some(&1))
            .count();
        assert_eq!(to_1, 2, "{h:?}");
    }

    /// Threads' busy flags after two passes on autonuma-2n24 (12 CPUs a node): `runs`
    /// gives each thread's node and its CPU time in the second pass, in ms.
    fn busy_after(runs: &[(usize, u64)]) -> Vec<bool> {
        let m = machine("autonuma-2n24");
        let mut p = HomeNode::new(Tunables::default());
        let procs = [process(1, runs.len() as u32, vec![GIB, 0])];
        for (t_s, scale) in [(1, 0), (2, 1_000_000)] {
            let threads: Vec<ThreadObs> = (runs.iter().enumerate())
                .map(|(i, &(node, ms))| ThreadObs {
                    tid: Tid(i as u32 + 1),
                    pid: Pid(1),
                    cpu: None,
                    node: Some(node),
                    cpu_time_ns: ms * scale,
                    age_ns: None,
                })
                .collect();
            tick(&mut p, &m, t_s, &threads, &procs, &[]);
        }
        (1..=runs.len() as u32)
            .map(|t| p.threads[&Tid(t)].busy)
            .collect()
    }

    #[test]
    fn threads_queued_three_to_a_cpu_are_busy_and_idle_ones_are_not() {
        // 12 threads running all the pass on node 1; on node 0, 36 running a third of it
        // each (its 12 CPUs full): every one busy.
        let mut runs = vec![(1, 1000); 12];
        runs.extend(vec![(0, 333); 36]);
        assert!(busy_after(&runs).iter().all(|&b| b), "{runs:?}");
        // Node 0's CPUs not full: 200 threads that ran 5 ms each are not busy.
        let mut runs = vec![(1, 1000); 12];
        runs.extend(vec![(0, 5); 200]);
        let busy = busy_after(&runs);
        assert!(busy[..12].iter().all(|&b| b) && !busy[12..].iter().any(|&b| b));
    }
}
