//! What a user-space placement daemon (`numad`) works through, in the simulator: the
//! observation it reads from `/proc` and `/sys` at each of its passes, and its actions run
//! the way the kernel runs them for it.
//!
//! ```text
//!  PolicyTick (the policy's own interval)
//!    Observation: threads and their CPUs; per process: comm, threads, utime+stime, vsize,
//!                 RSS and RSS per node (numa_maps), Mems_allowed; per node: MemTotal,
//!                 MemFree; per CPU: idle time (/proc/stat)
//!    policy.on_tick -> actions
//!      SetThreadAffinity        at once (sched_setaffinity); threads the process creates
//!                               later inherit the mask, as clone() does
//!      MigrateProcessPages      queued: migrate_pages(2) runs in the daemon's context, one
//!                               call after another (numabal's daemon: one process's calls
//!                               so, different processes' at the same time, each with its
//!                               share of the pass's movers), at the cost of a kernel migration per
//!                               page (migrate_page_ns + the copy + a TLB shootdown), a tick's
//!                               worth of copying per tick; numad (root: MPOL_MF_MOVE_ALL)
//!                               moves pages other processes map too, numabal's daemon
//!                               leaves them (live it moves the process's own pages, found
//!                               in its pagemap, with move_pages: the same per-page cost)
//!      InterleaveProcessPages   queued like migrate_pages: the pages on `from`, each 2 MiB
//!                               run of a region to the node whose turn it is
//!      MovePages                queued like migrate_pages: move_pages(2) of the sampled
//!                               addresses (world/procfs.rs maps them to pages)
//!      Log                      the run's policy_log
//!    next PolicyTick: the policy's interval after the last queued call returns (numad's
//!    loop is synchronous: it sleeps after bind_process_and_migrate_memory returns)
//! ```
//!
//! Simplifications (docs/model-notes.md, "numad in the simulator"): numad's own program's
//! CPU time (reading `/proc`, copying pages) is not taken from any simulated CPU (numabal's
//! daemon's is: numabal_daemon.rs); a page being migrated stays accessible until it has
//! moved (the kernel blocks a thread that touches it for the copy's duration).

use super::UserSpace;
use crate::error::SimError;
use crate::event::EventKind;
use crate::memory::CHUNK;
use crate::world::{NS, World, page_addr};
use numabal_daemon::pacing::{movers_for, movers_shares, process_movers};
use numabal_model::{Mask, Pid};
use numabal_policy::Action;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// One `migrate_pages(pid, {from}, {to})` call in progress, or the spread of the pages on
/// `from` over several nodes (`InterleaveProcessPages`).
#[derive(Debug, Clone)]
struct MigJob {
    pidx: usize,
    from: usize,
    /// The destination, or the nodes taking turns by 2 MiB run of the region's pages.
    to: Vec<usize>,
    /// Where the walk over the process's pages is: (region, page).
    at: (usize, u64),
    /// numabal's daemon: its log line.
    line: Option<usize>,
    /// Base pages moved, and left where they were (the destination full).
    moved: u64,
    failed: u64,
    /// Threads moving its pages at once (`numabal_daemon::pacing::movers_for`; numad: 1).
    movers: usize,
}

/// Where a call's movers copy: each one's CPU and its share of it.
type MoverPlaces = Vec<(usize, f64)>;

/// One `move_pages(pid, pages, node)` call in progress.
#[derive(Debug, Clone)]
struct MoveJob {
    pidx: usize,
    /// (region, page) of each address given, in the order given (`None`: an address
    /// outside every mapping, `-EFAULT`), with the base pages it stands for
    /// ([`folios_at`]).
    pages: Vec<(Option<(usize, u64)>, u64)>,
    to: usize,
    /// The next of `pages` to move.
    next: usize,
    /// numabal's daemon: its log line.
    line: Option<usize>,
    /// Base pages on the node when the call returns (the kernel's status is the node, also
    /// for a page that was there already), and the others by the kernel's error.
    moved: u64,
    errors: PageErrors,
    /// Threads moving its pages at once.
    movers: usize,
}

/// `move_pages`' per-page errors, by the name of the status the kernel gives.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct PageErrors {
    /// `-EFAULT`: the address is in no mapping.
    pub efault: u64,
    /// `-ENOENT`: the page is not present.
    pub enoent: u64,
    /// `-EACCES`: other processes map the page (no `MPOL_MF_MOVE_ALL`).
    pub eacces: u64,
    /// `-ENOMEM`: the node has no room above its high watermark.
    pub enomem: u64,
}

impl PageErrors {
    /// Every page that did not move.
    pub fn total(&self) -> u64 {
        self.efault + self.enoent + self.eacces + self.enomem
    }
}

/// A call of numabal's daemon that returned: its log line, what moved and what did not
/// (`move_pages`' per-page errors; `migrate_pages` counts the pages it left).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CallDone {
    pub line: usize,
    pub moved: u64,
    pub failed: u64,
    pub page_errors: Option<PageErrors>,
    /// The threads that moved its pages.
    pub movers: usize,
}

/// A system call of the daemon's, run in its context one after another.
#[derive(Debug, Clone)]
enum Call {
    MigratePages(MigJob),
    MovePages(MoveJob),
}

impl Call {
    fn pidx(&self) -> usize {
        match self {
            Call::MigratePages(j) => j.pidx,
            Call::MovePages(j) => j.pidx,
        }
    }

    fn movers(&self) -> usize {
        match self {
            Call::MigratePages(j) => j.movers,
            Call::MovePages(j) => j.movers,
        }
    }
}

/// The calls of one policy callback, for the "moved" log line.
#[derive(Debug, Clone)]
struct Batch {
    pid: u32,
    start_ns: u64,
    to: Mask,
    pages: u64,
}

/// A line of the decision log.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PolicyLogEntry {
    /// Simulated time, s.
    pub t_s: f64,
    /// The process it is about.
    pub pid: u32,
    /// The policy's words (numad's log lines).
    pub message: String,
}

/// The daemon mechanism's state.
#[derive(Debug, Clone, Default)]
pub(crate) struct DaemonRt {
    jobs: VecDeque<Call>,
    batch: Option<Batch>,
    /// The policy's next interval, waiting for the queued calls to return.
    deferred_tick: Option<u64>,
    /// numabal's daemon: its next pass is due then, or when the queued calls return.
    deferred_until: Option<u64>,
    /// The last page of a tick ran past it by this much of a mover's time (ns at the
    /// host's speed): the next tick has that much less.
    overrun_ns: f64,
    /// The same per process, while numabal's daemon moves several processes' pages at
    /// once (`run_moves_at_once`).
    lane_overrun_ns: BTreeMap<usize, f64>,
    pub(crate) log: Vec<PolicyLogEntry>,
}

impl DaemonRt {
    /// `migrate_pages` calls are queued.
    pub(crate) fn has_jobs(&self) -> bool {
        !self.jobs.is_empty()
    }

    /// The processes whose pages the queued calls move.
    fn processes_moving(&self) -> usize {
        let pidxs: BTreeSet<usize> = self.jobs.iter().map(Call::pidx).collect();
        pidxs.len()
    }

    /// The log lines of numabal's daemon's calls that have not returned yet.
    pub(crate) fn pending_lines(&self) -> Vec<usize> {
        self.jobs
            .iter()
            .filter_map(|c| match c {
                Call::MigratePages(j) => j.line,
                Call::MovePages(j) => j.line,
            })
            .collect()
    }

    /// numabal's daemon: its next pass at `at`, or when the queued calls return if later.
    pub(crate) fn defer_pass_until(&mut self, at: u64) {
        self.deferred_until = Some(at);
    }
}

impl UserSpace {
    /// A pass of a policy with its own interval (`Policy::tick_interval_ns`), or of
    /// numabal's daemon.
    pub(crate) fn policy_tick(&mut self, w: &mut World) -> Result<(), SimError> {
        if self.numabal.is_some() {
            return self.numabal_pass(w);
        }
        let threads = w.thread_obs();
        let processes = w.process_obs();
        let mut out = std::mem::take(&mut self.actions);
        out.clear();
        self.observe_and_tick(w, &threads, &processes, &[], &mut out);
        for a in &out {
            if let Action::SetThreadAffinity { tid, cpus } = a {
                // clone() copies the creator's mask: threads started later get it too.
                let pidx = w.thread(tid.idx() - 1).proc;
                w.set_inherited_affinity(pidx, cpus.clone());
            }
        }
        self.apply_actions(w, &out)?;
        self.actions = out;
        if let Some(i) = self.policy.tick_interval_ns() {
            if self.daemon.jobs.is_empty() {
                w.push_event(w.now() + i.max(1), EventKind::PolicyTick);
            } else {
                self.daemon.deferred_tick = Some(i.max(1));
            }
        }
        Ok(())
    }

    /// Queue a `migrate_pages` call; `line`: numabal's daemon's log line for its outcome,
    /// else numad's own program's "moved" line counts it; `movers`: the threads that may
    /// move its pages (numabal's daemon moves the process's own pages on `from`, in as many
    /// slices as `movers_for` gives; numad's call is one thread).
    pub(crate) fn queue_migrate_pages(
        &mut self,
        w: &World,
        pid: Pid,
        from: usize,
        to: &[usize],
        line: Option<usize>,
        movers: usize,
    ) {
        if line.is_none() {
            let b = self.daemon.batch.get_or_insert(Batch {
                pid: pid.0,
                start_ns: w.now(),
                to: Mask::new(),
                pages: 0,
            });
            for &n in to {
                b.to.insert(n);
            }
        }
        let pidx = pid.idx() - 1;
        let movers = match movers {
            1 => 1,
            m => movers_for(m, own_pages_on(w, pidx, from) as usize),
        };
        self.daemon.jobs.push_back(Call::MigratePages(MigJob {
            pidx,
            from,
            to: to.to_vec(),
            at: (0, 0),
            line,
            moved: 0,
            failed: 0,
            movers,
        }));
    }

    /// Queue a `move_pages` call: the pages at `addrs` of process `pid` to `node`
    /// (`line`: numabal's daemon's log line for its outcome), by up to `movers` threads.
    /// An address outside the process's mappings is that page's `-EFAULT`; the whole call
    /// is refused when `node` is outside its cpuset's memory nodes (`-EACCES`).
    pub(crate) fn queue_move_pages(
        &mut self,
        w: &World,
        pid: Pid,
        pages: Vec<(Option<(usize, u64)>, u64)>,
        node: usize,
        line: Option<usize>,
        movers: usize,
    ) {
        let pidx = pid.idx() - 1;
        if !w.proc(pidx).cpuset_mems.contains(node) {
            return;
        }
        let movers = movers_for(movers, base_pages(&pages) as usize);
        self.daemon.jobs.push_back(Call::MovePages(MoveJob {
            pidx,
            pages,
            to: node,
            next: 0,
            line,
            moved: 0,
            errors: PageErrors::default(),
            movers,
        }));
    }

    /// `migrate_pages` of `job` within `budget` ns of the daemon's time; true when done.
    /// A call whose process has exited ends where it is (as [`move_pages_step`]'s).
    fn migrate_pages_step(&mut self, w: &mut World, job: &mut MigJob, budget: &mut f64) -> bool {
        if w.proc(job.pidx).end_ns.is_some() {
            return true;
        }
        let (mut r, mut p) = job.at;
        while r < w.proc(job.pidx).regions.len() {
            let (obj, pages) = {
                let reg = &w.proc(job.pidx).regions[r];
                (reg.obj, reg.pages)
            };
            // numabal's daemon calls without CAP_SYS_NICE (MPOL_MF_MOVE): what other
            // processes map stays; numad, as root, moves it too (MPOL_MF_MOVE_ALL).
            if job.line.is_some() && w.obj_refs(obj) > 1 {
                r += 1;
                p = 0;
                continue;
            }
            while p < pages {
                if *budget <= 0.0 {
                    job.at = (r, p);
                    return false;
                }
                let o = w.object(obj);
                let (step, nr) = if o.is_huge(p / CHUNK) {
                    (CHUNK - p % CHUNK, o.chunk_len(p / CHUNK))
                } else {
                    (1, 1)
                };
                // The 2 MiB run of addresses takes its turn, as the live daemon's does.
                let to = job.to[(page_addr(r, p) >> 21) as usize % job.to.len()];
                if o.node_of(p) == Some(job.from) && (to != job.from || job.to.len() == 1) {
                    match w.migrate_page(obj, p, to) {
                        Some(cost) => {
                            *budget -= cost;
                            job.moved += nr;
                            if let Some(b) = self.daemon.batch.as_mut() {
                                b.pages += nr;
                            }
                        }
                        // The destination is full: the kernel still tried.
                        None => {
                            *budget -= w.machine().spec.costs.migrate_page_ns;
                            job.failed += nr;
                        }
                    }
                }
                p += step;
            }
            r += 1;
            p = 0;
        }
        true
    }

    /// A decision log line.
    pub(crate) fn policy_log(&mut self, w: &World, pid: Pid, message: &str) {
        self.daemon.log.push(PolicyLogEntry {
            t_s: w.now() as f64 / NS,
            pid: pid.0,
            message: message.to_string(),
        });
    }

    /// Run queued `migrate_pages` and `move_pages` calls for one tick of the daemon's time;
    /// numabal's daemon is charged the CPU time and told what returned. A call that
    /// `movers` threads run has their shares of their CPUs times the tick's time to copy
    /// in (numabal's daemon: [`NumabalDaemon::mover_shares`], a mover beside runnable
    /// threads shares their CPU; numad's copying is not placed on a CPU, each of its
    /// movers has a whole one). Its slices run at once; the simulated call ends when the
    /// pages' total cost is spent, not when its slowest slice is done. On a shared host
    /// each mover copies at the host's speed.
    ///
    /// [`NumabalDaemon::mover_shares`]: super::numabal_daemon::NumabalDaemon::mover_shares
    pub(crate) fn run_migrate_pages(&mut self, w: &mut World) {
        if self.numabal.is_some() && self.daemon.processes_moving() > 1 {
            return self.run_moves_at_once(w);
        }
        // The one process left of several moved at once: what its last page overran.
        if let Some(o) = std::mem::take(&mut self.daemon.lane_overrun_ns)
            .into_values()
            .next()
        {
            self.daemon.overrun_ns = o;
        }
        let movers = self.daemon.jobs.front().map_or(1, |j| j.movers());
        let mut left = w.tick_ns() as f64 * movers_speed(w, movers) - self.daemon.overrun_ns;
        self.daemon.overrun_ns = 0.0;
        let mut done = Vec::new();
        let mut spent = Vec::new();
        while left > 0.0 {
            let Some(mut job) = self.daemon.jobs.pop_front() else {
                break;
            };
            let shares = match &self.numabal {
                Some(d) => d.mover_shares(w, job.movers()),
                None => vec![1.0; job.movers()],
            };
            // Summed in order: exactly the movers' count when each has a whole CPU.
            let m: f64 = shares.iter().sum();
            let mut budget = left * m;
            let finished = match &mut job {
                Call::MigratePages(j) => self.migrate_pages_step(w, j, &mut budget),
                Call::MovePages(j) => move_pages_step(w, j, &mut budget),
            };
            // The last page of a tick may run past it: its whole cost is the daemon's.
            spent.push((left - budget / m, shares));
            left = budget / m;
            if !finished {
                self.daemon.jobs.push_front(job);
            } else if let Some(d) = call_done(&job) {
                done.push(d);
            }
        }
        if self.numabal.is_some() {
            for (ns, shares) in spent {
                self.numabal_charge(w, ns, &shares);
            }
            for d in done {
                self.numabal_call_done(d);
            }
        }
        // A page whose cost ran past the tick (a huge page at a guest's copy speed takes
        // several ticks) is paid from the ticks after it, not given again in each.
        if left < 0.0 && !self.daemon.jobs.is_empty() {
            self.daemon.overrun_ns = -left;
        }
        if self.daemon.jobs.is_empty() {
            self.log_batch(w);
            if let Some(i) = self.daemon.deferred_tick.take() {
                w.push_event(w.now() + i, EventKind::PolicyTick);
            }
            if let Some(at) = self.daemon.deferred_until.take() {
                w.push_event(at.max(w.now()), EventKind::PolicyTick);
            }
        }
    }

    /// numabal's daemon: the calls of its pass get their process's share of the pass's
    /// `movers` (`pacing::movers_shares` over the processes they move; a whole process's
    /// move at least as many as `cpus_used` gives for it, `pacing::process_movers`), as
    /// the live actuator shares them out before it makes them. With one process moved,
    /// each call has what it was queued with.
    pub(crate) fn share_out_movers(
        &mut self,
        w: &World,
        movers: usize,
        cpus_used: impl Fn(usize) -> usize,
    ) {
        let pidxs: BTreeSet<usize> = self.daemon.jobs.iter().map(Call::pidx).collect();
        let shares: BTreeMap<usize, usize> = (pidxs.iter().copied())
            .zip(movers_shares(movers, pidxs.len()))
            .collect();
        for call in &mut self.daemon.jobs {
            let share = shares[&call.pidx()];
            match call {
                Call::MigratePages(j) if j.line.is_some() => {
                    let m = process_movers(share, cpus_used(j.pidx));
                    j.movers = movers_for(m, own_pages_on(w, j.pidx, j.from) as usize);
                }
                Call::MovePages(j) if j.line.is_some() => {
                    j.movers = movers_for(share, base_pages(&j.pages) as usize);
                }
                _ => {}
            }
        }
    }

    /// numabal's daemon's calls when they move more than one process's pages: each
    /// process's in order, different processes' at the same time, as the live actuator
    /// makes them (numabal-live's `make_moves`). Each process's first call runs with its
    /// movers placed beside all the others' ([`NumabalDaemon::mover_placement`]), at the
    /// host's speed for them all, from the tick's time less what its last page overran;
    /// a call that ends mid-tick hands the rest of the tick to the process's next call,
    /// with the same movers' places (the first call's, one per mover of the next, the
    /// last repeated if it has more).
    ///
    /// [`NumabalDaemon::mover_placement`]: super::numabal_daemon::NumabalDaemon::mover_placement
    fn run_moves_at_once(&mut self, w: &mut World) {
        // Each process's first call, in the queue's order.
        let mut firsts: Vec<(usize, usize)> = Vec::new();
        for c in &self.daemon.jobs {
            if !firsts.iter().any(|&(p, _)| p == c.pidx()) {
                firsts.push((c.pidx(), c.movers()));
            }
        }
        let total: usize = firsts.iter().map(|&(_, n)| n).sum();
        let placed = (self.numabal.as_ref().expect("numabal's daemon")).mover_placement(w, total);
        let speed = movers_speed(w, total);
        let mut lanes = Vec::with_capacity(firsts.len());
        let mut at = 0;
        for &(p, n) in &firsts {
            lanes.push((p, placed[at..at + n].to_vec(), at == 0));
            at += n;
        }
        let mut done = Vec::new();
        // Each call's time this tick, its movers' places, whether the first is the daemon's.
        let mut spent: Vec<(f64, MoverPlaces, bool)> = Vec::new();
        for (p, places, own) in lanes {
            let overrun = self.daemon.lane_overrun_ns.remove(&p).unwrap_or(0.0);
            let mut left = w.tick_ns() as f64 * speed - overrun;
            while left > 0.0 {
                let Some(i) = self.daemon.jobs.iter().position(|c| c.pidx() == p) else {
                    break;
                };
                let mut job = self.daemon.jobs.remove(i).expect("found");
                let on: MoverPlaces = (0..job.movers())
                    .map(|k| places[k.min(places.len() - 1)])
                    .collect();
                let m: f64 = on.iter().map(|&(_, share)| share).sum();
                let mut budget = left * m;
                let finished = match &mut job {
                    Call::MigratePages(j) => self.migrate_pages_step(w, j, &mut budget),
                    Call::MovePages(j) => move_pages_step(w, j, &mut budget),
                };
                spent.push((left - budget / m, on, own));
                left = budget / m;
                if !finished {
                    self.daemon.jobs.insert(i, job);
                } else if let Some(c) = call_done(&job) {
                    done.push(c);
                }
            }
            if left < 0.0 && self.daemon.jobs.iter().any(|c| c.pidx() == p) {
                self.daemon.lane_overrun_ns.insert(p, -left);
            }
        }
        if let Some(d) = self.numabal.as_mut() {
            for (ns, on, own) in spent {
                d.charge_movers_at(w, ns, &on, own);
            }
        }
        for c in done {
            self.numabal_call_done(c);
        }
        if self.daemon.jobs.is_empty() {
            self.daemon.lane_overrun_ns.clear();
            if let Some(at) = self.daemon.deferred_until.take() {
                w.push_event(at.max(w.now()), EventKind::PolicyTick);
            }
        }
    }

    /// numad's "moved" line once its calls of a pass have returned.
    fn log_batch(&mut self, w: &World) {
        if let Some(b) = self.daemon.batch.take() {
            let secs = (w.now() - b.start_ns) as f64 / NS;
            let msg = format!(
                "PID {} moved to node(s) {} in {:.2} seconds ({} pages)",
                b.pid,
                b.to.to_list_string(),
                secs,
                b.pages
            );
            self.policy_log(w, Pid(b.pid), &msg);
        }
    }
}

/// The pages of process `pidx` on `from` that it alone maps (what numabal's daemon's
/// `migrate_pages` moves).
fn own_pages_on(w: &World, pidx: usize, from: usize) -> u64 {
    (w.proc(pidx).regions.iter())
        .filter(|r| w.obj_refs(r.obj) == 1)
        .map(|r| w.object(r.obj).node_pages().get(from).copied().unwrap_or(0))
        .sum()
}

/// The pages `move_pages` moves for `addrs` of process `pidx`: each address's (region,
/// page), or `None` outside every mapping, with the base pages it stands for: a whole
/// transparent huge page's for an address in one (a later address in the same one is
/// dropped: its folio has moved), else 1. As the live daemon weighs them (numabal-live's
/// `weigh_huge_pages`): its movers, budget and counts go by base pages.
pub(crate) fn folios_at(w: &World, pidx: usize, addrs: &[u64]) -> Vec<(Option<(usize, u64)>, u64)> {
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::with_capacity(addrs.len());
    for &a in addrs {
        let at = w.page_at(pidx, a);
        let huge = at.and_then(|(ri, page)| {
            let o = w.object(w.proc(pidx).regions[ri].obj);
            let c = page / CHUNK;
            o.is_huge(c).then(|| ((ri, c), o.chunk_len(c)))
        });
        match huge {
            Some((chunk, nr)) => {
                if seen.insert(chunk) {
                    out.push((at, nr));
                }
            }
            None => out.push((at, 1)),
        }
    }
    out
}

/// Base pages of `pages` ([`folios_at`]).
pub(crate) fn base_pages(pages: &[(Option<(usize, u64)>, u64)]) -> u64 {
    pages.iter().map(|&(_, n)| n).sum()
}

/// A finished call of numabal's daemon, as it returns.
fn call_done(call: &Call) -> Option<CallDone> {
    match call {
        Call::MigratePages(j) => j.line.map(|line| CallDone {
            line,
            moved: j.moved,
            failed: j.failed,
            page_errors: None,
            movers: j.movers,
        }),
        Call::MovePages(j) => j.line.map(|line| CallDone {
            line,
            moved: j.moved,
            failed: j.errors.total(),
            page_errors: Some(j.errors.clone()),
            movers: j.movers,
        }),
    }
}

/// `move_pages` of `job` within `budget` ns of the daemon's time; true when done. A page
/// already on the node, or not present, costs nothing; a THP moves whole. A call whose
/// process has exited ends where it is: the rest of its pages are neither moved nor
/// failed. (In the kernel a call in flight holds the dying process's mm until it returns
/// and the pages it moved are freed right after; here they are freed at the exit, so the
/// call has nothing left to walk. Before this, such a call indexed freed page arrays.)
fn move_pages_step(w: &mut World, job: &mut MoveJob, budget: &mut f64) -> bool {
    if w.proc(job.pidx).end_ns.is_some() {
        return true;
    }
    while job.next < job.pages.len() {
        if *budget <= 0.0 {
            return false;
        }
        let (at, nr) = job.pages[job.next];
        job.next += 1;
        let Some((ri, page)) = at else {
            job.errors.efault += nr;
            continue;
        };
        let obj = w.proc(job.pidx).regions[ri].obj;
        match w.object(obj).node_of(page) {
            Some(n) if n == job.to => job.moved += nr,
            // Without MPOL_MF_MOVE_ALL the kernel moves only pages this process alone maps.
            Some(_) if w.obj_refs(obj) > 1 => job.errors.eacces += nr,
            Some(_) => match w.migrate_page(obj, page, job.to) {
                Some(cost) => {
                    *budget -= cost;
                    job.moved += nr;
                }
                None => {
                    *budget -= w.machine().spec.costs.migrate_page_ns;
                    job.errors.enomem += nr;
                }
            },
            None => job.errors.enoent += nr,
        }
    }
    true
}

/// The speed `movers` threads copy at on a shared host (`core.host_cpus`): the CPUs that
/// run now, and as many more as the movers find idle.
fn movers_speed(w: &World, movers: usize) -> f64 {
    if w.machine().spec.core.host_cpus.is_none() {
        return 1.0;
    }
    let now = w.now();
    let idle = (0..w.machine().nr_cpus())
        .filter(|&c| w.sched().is_idle(c) && !w.held(c, now))
        .count();
    w.host_speed_at(now, movers.min(idle))
}
