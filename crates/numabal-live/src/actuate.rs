//! The daemon's hands: a policy's actions carried out with system calls, within the safety
//! rules, rate-limited, every outcome logged. Every affinity changed is remembered with the
//! thread's own, and given back by [`Actuator::restore`] (on SIGTERM/SIGINT).
//!
//! ```text
//!  SetThreadAffinity / MoveThread  sched_setaffinity(tid, cpus ∩ the thread's own affinity)
//!  MovePages                       move_pages(pid, ...) of the addresses in its private
//!                                  anonymous mappings, in chunks, to a node of its Mems_allowed,
//!                                  within the MB/s budget (the rest is left for a later pass)
//!  MigrateProcessPages             move_pages(pid, ...) of its own pages on `from` (present
//!                                  in its private anonymous mappings and mapped by it alone:
//!                                  maps and pagemap), to `to`; what moved is charged to the
//!                                  budget after (not migrate_pages(2), which takes a file's
//!                                  pages too when only this process maps them)
//!  InterleaveProcessPages          the same pages on `from`, each 2 MiB run of addresses to
//!                                  the node of `nodes` whose turn it is (one move_pages per
//!                                  destination; a run whose turn is `from` stays)
//!  Log                             the decision log
//!
//!  a pass's moves (apply_pass): admitted in order (Mems_allowed, the budget, charged
//!  as admitted, what does not move given back), then made: one process's one after
//!  another, different processes' at the same time (make_moves), the pass's `movers`
//!  threads (begin_pass; pacing::movers) shared out over them (pacing::movers_shares);
//!  each mover a move_pages of a slice of the addresses; a whole process's move up to as
//!  many as the CPUs its threads used, when more (Target::cpus_used;
//!  pacing::process_movers)
//! ```
//!
//! A thread or process that exits mid-operation (`ESRCH`, every page `-EFAULT`) is logged,
//! not an error; `EPERM` and `ENOMEM` are counted and logged; `move_pages`' per-page
//! statuses are sorted by `NotMoved`: addresses without a page, pages other processes map
//! (`-EACCES`, left alone) and busy pages are counted apart from failures.

use crate::state::StateFile;
use crate::{procfs, sys};
use numabal_daemon::budget::within_budget;
use numabal_daemon::log as line;
use numabal_daemon::pacing::{movers_for, movers_shares, process_movers};
use numabal_model::{Mask, Pid, Tid};
use numabal_policy::Action;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// Pages per `move_pages` call, at most: 256 MiB of base pages, so that a whole process's
/// memory moves in one call. Each call that moves pages starts with `lru_cache_disable()`,
/// an expedited RCU grace period and a drain of every CPU's LRU batches, waiting for a
/// kworker on each CPU: beside busy threads (in the TCG guest, 8 vCPUs on 2 host cores)
/// that cost about 0.25 s a call: a 167 MiB process moved in 512-page calls in 40 s, in one
/// call in 18-21 s (docs/home-node.md). Asking where pages are (`do_pages_stat`) drains
/// nothing.
pub const MOVE_BATCH: usize = 65536;
const PAGE: f64 = numabal_daemon::budget::PAGE;

pub use numabal_daemon::RateLimit;
pub use numabal_daemon::log::{Changed, Counts, NOT_OWNED, NotMoved, placement};

/// Carries out actions.
#[derive(Debug)]
pub struct Actuator {
    dry_run: bool,
    rate: RateLimit,
    /// Threads that move pages in this pass (`numabal_daemon::pacing::movers`).
    movers: usize,
    changed: BTreeMap<Tid, Changed>,
    /// Where `changed` is kept for a daemon after this one (`None`: a dry run, or a test).
    state: Option<StateFile>,
    /// Nodes that refused pages for want of memory, and when to ask them again.
    full: BTreeMap<usize, FullNode>,
    /// The pass's time, ns (what `finish` dates a refusal by).
    now_ns: u64,
    /// Counters.
    pub counts: Counts,
}

fn errno_name(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ESRCH) => "ESRCH".into(),
        Some(libc::EFAULT) => "EFAULT".into(),
        Some(libc::ENOENT) => "ENOENT".into(),
        Some(libc::EPERM) => "EPERM".into(),
        Some(libc::ENOMEM) => "ENOMEM".into(),
        Some(libc::EBUSY) => "EBUSY".into(),
        Some(libc::EINVAL) => "EINVAL".into(),
        Some(libc::EACCES) => "EACCES".into(),
        Some(libc::ENODEV) => "ENODEV".into(),
        Some(libc::E2BIG) => "E2BIG".into(),
        _ => e.to_string(),
    }
}

/// `pid`'s private anonymous ranges (`/proc/PID/maps`); a read error as [`read_error`]
/// gives it.
fn private_anonymous_of(pid: Pid) -> std::io::Result<Vec<(u64, u64)>> {
    let text = std::fs::read_to_string(format!("/proc/{}/maps", pid.0));
    Ok(procfs::private_anonymous(
        &text.map_err(|e| read_error(pid, e))?,
    ))
}

/// The task through which `pid`'s memory is reached: `pid` itself, or, when its leader
/// thread has exited while others run (a zombie leader has no mm: `move_pages` of its pid
/// gives `EINVAL` and its maps read empty), the first of its threads still running.
fn mm_task(pid: Pid) -> Pid {
    let zombie = |dir: &str| {
        std::fs::read_to_string(format!("{dir}/stat"))
            .ok()
            .and_then(|s| s.rsplit_once(") ").map(|(_, r)| r.starts_with('Z')))
            .unwrap_or(false)
    };
    let lead = format!("/proc/{}", pid.0);
    if !zombie(&lead) {
        return pid;
    }
    let Ok(tasks) = std::fs::read_dir(format!("{lead}/task")) else {
        return pid;
    };
    let mut tids: Vec<u32> = tasks
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    (tids.into_iter())
        .find(|t| !zombie(&format!("{lead}/task/{t}")))
        .map_or(pid, Pid)
}

/// The leader's state and thread count (`/proc/PID/stat` fields 3 and 20), for an error's
/// log line.
fn leader_state(pid: Pid) -> String {
    std::fs::read_to_string(format!("/proc/{}/stat", pid.0))
        .ok()
        .and_then(|s| {
            let f: Vec<String> = s
                .rsplit_once(") ")?
                .1
                .split(' ')
                .map(String::from)
                .collect();
            Some(format!("state {}, {} threads", f.first()?, f.get(17)?))
        })
        .unwrap_or_else(|| "gone".into())
}

/// An error reading `pid`'s maps or pagemap: `ESRCH` if the process is gone, else the
/// error itself, so that a live process's failure is not taken for an exit.
fn read_error(pid: Pid, e: std::io::Error) -> std::io::Error {
    if std::path::Path::new(&format!("/proc/{}", pid.0)).exists() {
        e
    } else {
        std::io::Error::from_raw_os_error(libc::ESRCH)
    }
}

/// `pid`'s own pages and where each is: present in its private anonymous mappings, mapped
/// by it alone (`/proc/PID/maps`, `pagemap`), as the addresses to move (one per
/// transparent huge page, `procfs::fold_huge_pages`) with the base pages each stands for
/// and the node `move_pages` gives for it (or its negative errno). A process that is gone
/// gives `ESRCH`.
fn own_page_nodes(pid: Pid) -> std::io::Result<Vec<(u64, u32, i32)>> {
    let ranges = private_anonymous_of(pid)?;
    let path = format!("/proc/{}/pagemap", pid.0);
    let mut pagemap = std::fs::File::open(path).map_err(|e| read_error(pid, e))?;
    let (own, _) = procfs::own_pages(&mut pagemap, &ranges).map_err(|e| read_error(pid, e))?;
    // Root only, as the frames in the pagemap are.
    let mut kpageflags = std::fs::File::open("/proc/kpageflags").ok();
    let own = procfs::fold_huge_pages(&own, |pfn| {
        let f = kpageflags.as_mut()?;
        read_frame_flags(f, pfn).ok()
    });
    let mut nodes = Vec::with_capacity(own.len());
    for chunk in own.chunks(MOVE_BATCH) {
        let a: Vec<usize> = chunk.iter().map(|&(x, _)| x as usize).collect();
        let at = sys::query_nodes(pid.0, &a)?;
        nodes.extend(chunk.iter().zip(at).map(|(&(a, n), node)| (a, n, node)));
    }
    Ok(nodes)
}

/// The `/proc/kpageflags` words of the 512 frames from `pfn`.
fn read_frame_flags(f: &mut std::fs::File, pfn: u64) -> std::io::Result<Vec<u64>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut buf = vec![0u8; procfs::THP_PAGES * 8];
    f.seek(SeekFrom::Start(pfn * 8))?;
    f.read_exact(&mut buf)?;
    Ok((buf.chunks_exact(8))
        .map(|b| u64::from_ne_bytes(b.try_into().expect("8 bytes")))
        .collect())
}

/// The addresses a policy asked to move, each with the base pages `move_pages` moves for
/// it: 512 for an address in a PMD-sized transparent huge page (the whole folio moves; a
/// later address in the same one is dropped, as its folio has moved), 1 for any other. The
/// movers, the budget and the counts then go by base pages, as in a whole-process move: a
/// policy's 81 addresses in perf bench's huge pages are 162 MiB, not 81 pages (one mover,
/// 6 s in the 6.1 guest). The frames and `/proc/kpageflags` are root's; without them, or
/// for a page not present, an address stands for 1.
fn weigh_huge_pages(pid: Pid, addrs: &[u64]) -> Vec<(u64, u32)> {
    let pagemap = std::fs::File::open(format!("/proc/{}/pagemap", pid.0)).ok();
    let kpageflags = std::fs::File::open("/proc/kpageflags").ok();
    let (Some(mut pagemap), Some(mut kpageflags)) = (pagemap, kpageflags) else {
        return addrs.iter().map(|&a| (a, 1)).collect();
    };
    // Each 2 MiB block looked at: whether one huge page maps it.
    let mut blocks: BTreeMap<u64, bool> = BTreeMap::new();
    let mut out = Vec::with_capacity(addrs.len());
    for &a in addrs {
        let block = a - a % procfs::THP_BYTES;
        match blocks.get(&block) {
            Some(true) => {}
            Some(false) => out.push((a, 1)),
            None => {
                let thp = huge_page_at(&mut pagemap, &mut kpageflags, a);
                blocks.insert(block, thp);
                out.push((a, if thp { procfs::THP_PAGES as u32 } else { 1 }));
            }
        }
    }
    out
}

/// Whether one PMD-sized transparent huge page maps `addr`: its pagemap entry is present
/// with a frame at the same offset in a 512-aligned run, whose flags are one THP's.
fn huge_page_at(pagemap: &mut std::fs::File, kpageflags: &mut std::fs::File, addr: u64) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let n = procfs::THP_PAGES as u64;
    let mut e = [0u8; 8];
    let read = pagemap
        .seek(SeekFrom::Start(addr / 4096 * 8))
        .and_then(|_| pagemap.read_exact(&mut e));
    let entry = u64::from_ne_bytes(e);
    let pfn = procfs::page_frame(entry);
    read.is_ok()
        && procfs::own_page(entry).is_some()
        && pfn != 0
        && pfn % n == (addr / 4096) % n
        && read_frame_flags(kpageflags, pfn - pfn % n).is_ok_and(|f| procfs::one_pmd_thp(&f))
}

/// A thread's affinity as the kernel keeps it: `Cpus_allowed_list` of `/proc/TID/status`,
/// offline CPUs included. `sched_getaffinity` leaves offline CPUs out (it gives the mask
/// within the active CPUs), so while a CPU is offline its answer differs from the mask the
/// daemon set, and a hotplug would be taken for someone else's change. Falls back to
/// `sched_getaffinity` when the file cannot be parsed; a thread that is gone gives
/// `ESRCH`.
pub fn affinity_now(tid: u32) -> std::io::Result<Mask> {
    match std::fs::read_to_string(format!("/proc/{tid}/status")) {
        Ok(text) => match procfs::cpus_allowed(&text) {
            Some(m) => Ok(m),
            None => sys::get_affinity(tid),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(std::io::Error::from_raw_os_error(libc::ESRCH))
        }
        Err(_) => sys::get_affinity(tid),
    }
}

/// The CPUs online now (`/sys/devices/system/cpu/online`), if the file can be read.
pub fn online_cpus() -> Option<Mask> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").ok()?;
    Mask::parse_list(&text, None).ok()
}

/// A node's CPUs (none for a node the host does not have: the change is then refused).
fn node_cpus_of(node_cpus: &[Mask], node: usize) -> Mask {
    node_cpus.get(node).cloned().unwrap_or_default()
}

/// Of `pages` (`own_page_nodes`), the addresses on `node`, each with its base pages.
fn on_node(pages: &[(u64, u32, i32)], node: usize) -> Vec<(u64, u32)> {
    (pages.iter())
        .filter(|&&(_, _, n)| n == node as i32)
        .map(|&(a, p, _)| (a, p))
        .collect()
}

/// `addrs` (on `from`) by destination: `to`'s nodes take turns by 2 MiB run of
/// addresses; a run whose turn is `from` stays (with one destination, every page goes).
fn turns(addrs: &[(u64, u32)], from: usize, to: &[usize]) -> Vec<(usize, Vec<(u64, u32)>)> {
    let mut by: BTreeMap<usize, Vec<(u64, u32)>> = BTreeMap::new();
    for &(a, p) in addrs {
        let node = to[(a >> 21) as usize % to.len()];
        if node != from || to.len() == 1 {
            by.entry(node).or_default().push((a, p));
        }
    }
    by.into_iter().collect()
}

/// Base pages of `addrs` (`on_node`'s).
fn pages_of(addrs: &[(u64, u32)]) -> usize {
    addrs.iter().map(|&(_, p)| p as usize).sum()
}

/// `move_pages` of `addrs` (each with the base pages it stands for) of `pid` to `node`,
/// `MOVE_BATCH` at a time, by up to `movers` threads at once, each a slice of at least
/// `MIN_SLICE` pages in address order (they take the process's `mmap_lock` for reading,
/// so they do not wait for one another but for the pages' own locks): the pages moved (a
/// page already there counts, as its status is the node); the others into `not_moved`.
/// The first error of any mover is the call's.
fn move_chunks(
    pid: Pid,
    addrs: &[(u64, u32)],
    node: usize,
    movers: usize,
    not_moved: &mut NotMoved,
) -> std::io::Result<u64> {
    let n = movers_for(movers, pages_of(addrs));
    let statuses = if n == 1 {
        vec![move_slice(pid, addrs, node)]
    } else {
        std::thread::scope(|s| {
            let slices: Vec<_> = (slices_of(addrs, n).into_iter())
                .map(|slice| s.spawn(move || move_slice(pid, slice, node)))
                .collect();
            (slices.into_iter())
                .map(|h| {
                    (h.join()).unwrap_or_else(|_| Err(std::io::Error::other("a mover panicked")))
                })
                .collect()
        })
    };
    let mut moved = 0u64;
    let statuses = statuses
        .into_iter()
        .collect::<std::io::Result<Vec<_>>>()?
        .concat();
    for (s, &(_, pages)) in statuses.into_iter().zip(addrs) {
        let pages = pages as u64;
        if s == node as i32 {
            moved += pages;
        } else if s < 0 {
            not_moved.add(&errno_name(&std::io::Error::from_raw_os_error(-s)), pages);
        } else {
            not_moved.add("stayed", pages);
        }
    }
    Ok(moved)
}

/// A page move the pass admitted, and once made, how it went.
#[derive(Debug)]
struct Admitted {
    pid: Pid,
    /// The task its memory is reached through (`mm_task`).
    mm: Pid,
    what: Move,
    /// Its log line so far.
    v: Value,
    /// Bytes charged to the budget when it was admitted.
    charged: f64,
    not_moved: NotMoved,
    /// Destination nodes that refused some of its pages with `ENOMEM`.
    full: BTreeSet<usize>,
    outcome: Option<Outcome>,
}

/// What an admitted move moves.
#[derive(Debug)]
enum Move {
    /// `move_pages` of these addresses (with the base pages each stands for) to `node`.
    Pages { addrs: Vec<(u64, u32)>, node: usize },
    /// The process's own pages on `from`, to `to` (several: by turns of 2 MiB runs); its
    /// threads used `cpus_used` CPUs over the last pass gap.
    Process {
        from: usize,
        to: Vec<usize>,
        cpus_used: usize,
    },
}

/// How a made move went: the pages moved (or the call's error), its time for the log line
/// and the threads that moved it.
#[derive(Debug)]
struct Outcome {
    moved: std::io::Result<u64>,
    took_s: Value,
    movers: usize,
}

/// `call` (a move to `node` recording its pages' statuses in `not_moved`), with `node`
/// put in `full` when it refused pages or the call for want of memory (`ENOMEM`).
fn refused_for_memory(
    node: usize,
    not_moved: &mut NotMoved,
    full: &mut BTreeSet<usize>,
    call: impl FnOnce(&mut NotMoved) -> std::io::Result<u64>,
) -> std::io::Result<u64> {
    let enomem = |nm: &NotMoved| nm.failed.get("ENOMEM").copied().unwrap_or(0);
    let before = enomem(not_moved);
    let r = call(not_moved);
    if enomem(not_moved) > before
        || r.as_ref()
            .is_err_and(|e| e.raw_os_error() == Some(libc::ENOMEM))
    {
        full.insert(node);
    }
    r
}

/// A node that refused pages for want of memory: how many times in a row, and when it is
/// asked again.
#[derive(Debug, Clone, Copy, PartialEq)]
struct FullNode {
    refusals: u32,
    retry_ns: u64,
}

/// The wait after a node's `refusals`-th refusal in a row: 5 s, doubled each time, at most
/// a minute, so a node that stays full costs one failed attempt a minute, not one a pass.
fn full_backoff_ns(refusals: u32) -> u64 {
    let s = 5u64 << refusals.saturating_sub(1).min(4);
    s.min(60) * 1_000_000_000
}

/// What a node can take, bytes: `MemFree` (`/sys/devices/system/node/nodeN/meminfo`) above
/// the high watermarks of its zones (`/proc/zoneinfo`): the allocator refuses a page for
/// this node once it would take the free pages under a watermark, and nothing of another
/// process's anonymous memory is reclaimed without swap.
fn node_room_bytes(node: usize) -> Option<u64> {
    let text =
        std::fs::read_to_string(format!("/sys/devices/system/node/node{node}/meminfo")).ok()?;
    let kb = text.lines().find_map(|l| {
        let (_, rest) = l.split_once("MemFree:")?;
        rest.split_whitespace().next()?.parse::<u64>().ok()
    })?;
    let zoneinfo = std::fs::read_to_string("/proc/zoneinfo").unwrap_or_default();
    Some((kb * 1024).saturating_sub(high_watermarks(&zoneinfo, node) * 4096))
}

/// The `high` watermarks of `node`'s zones in a `/proc/zoneinfo` text, pages.
pub(crate) fn high_watermarks(zoneinfo: &str, node: usize) -> u64 {
    let mut in_node = false;
    let mut pages = 0;
    for l in zoneinfo.lines() {
        if let Some(rest) = l.strip_prefix("Node ") {
            in_node = rest.split(',').next().and_then(|n| n.trim().parse().ok()) == Some(node);
        } else if in_node && let Some(v) = l.trim().strip_prefix("high ") {
            pages += v.trim().parse::<u64>().unwrap_or(0);
        }
    }
    pages
}

/// Make the pass's admitted moves (each with its line's slot): one process's in order,
/// different processes' at the same time, each process with its share of `movers`
/// (`pacing::movers_shares`). Returns them made, in slot order.
fn make_moves(admitted: Vec<(usize, Admitted)>, movers: usize) -> Vec<(usize, Admitted)> {
    let mut by_process: BTreeMap<Pid, Vec<(usize, Admitted)>> = BTreeMap::new();
    for (slot, m) in admitted {
        by_process.entry(m.pid).or_default().push((slot, m));
    }
    let shares = movers_shares(movers, by_process.len());
    let groups: Vec<_> = by_process.into_values().zip(shares).collect();
    let mut made: Vec<(usize, Admitted)> = if groups.len() == 1 {
        groups
            .into_iter()
            .flat_map(|(g, n)| process_moves(g, n))
            .collect()
    } else {
        std::thread::scope(|s| {
            let running: Vec<_> = (groups.into_iter())
                .map(|(g, n)| s.spawn(move || process_moves(g, n)))
                .collect();
            (running.into_iter())
                .flat_map(|h| h.join().expect("a process's moves do not panic"))
                .collect()
        })
    };
    made.sort_by_key(|&(slot, _)| slot);
    made
}

/// One process's admitted moves, one after another, with `movers` threads (a whole
/// process's move with as many as its threads used, when more: `pacing::process_movers`).
/// Its own pages and their nodes are read at its first whole-process move and kept for
/// the others: a process moved from several nodes is walked once (under TCG each walk of
/// 167 MiB took 0.3-0.5 s beside busy threads, for the few pages on the other nodes).
fn process_moves(mut moves: Vec<(usize, Admitted)>, movers: usize) -> Vec<(usize, Admitted)> {
    let mut own: Option<Vec<(u64, u32, i32)>> = None;
    for (_, m) in &mut moves {
        let started = std::time::Instant::now();
        let mm = m.mm;
        let (moved, used) = match &m.what {
            Move::Pages { addrs, node } => (
                refused_for_memory(*node, &mut m.not_moved, &mut m.full, |nm| {
                    move_chunks(mm, addrs, *node, movers, nm)
                }),
                movers_for(movers, pages_of(addrs)),
            ),
            Move::Process {
                from,
                to,
                cpus_used,
            } => {
                let n = process_movers(movers, *cpus_used);
                match own_pages_on(&mut own, mm, *from) {
                    Ok(on) => {
                        let mut moved = Ok(0);
                        for (node, run) in turns(&on, *from, to) {
                            moved = moved.and_then(|done| {
                                let nm = &mut m.not_moved;
                                Ok(done
                                    + refused_for_memory(node, nm, &mut m.full, |nm| {
                                        move_chunks(mm, &run, node, n, nm)
                                    })?)
                            });
                        }
                        // None of them is on `from` now, or it stayed for a reason the
                        // next pass asks again.
                        if let Some(pages) = own.as_mut() {
                            pages.retain(|&(_, _, node)| node != *from as i32);
                        }
                        (moved, movers_for(n, pages_of(&on)))
                    }
                    Err(e) => (Err(e), 1),
                }
            }
        };
        m.outcome = Some(Outcome {
            moved,
            took_s: took_s(started),
            movers: used,
        });
    }
    moves
}

/// The addresses of `mm`'s own pages on `node`, from `own` (read at the first call).
fn own_pages_on(
    own: &mut Option<Vec<(u64, u32, i32)>>,
    mm: Pid,
    node: usize,
) -> std::io::Result<Vec<(u64, u32)>> {
    if own.is_none() {
        *own = Some(own_page_nodes(mm)?);
    }
    Ok(on_node(own.as_deref().unwrap_or_default(), node))
}

/// `addrs` cut into at most `n` slices in address order, of about as many base pages each:
/// an address goes to the slice its pages' middle falls in.
fn slices_of(addrs: &[(u64, u32)], n: usize) -> Vec<&[(u64, u32)]> {
    let total = pages_of(addrs).max(1);
    let mut out: Vec<&[(u64, u32)]> = Vec::with_capacity(n);
    let (mut start, mut before, mut current) = (0, 0, 0);
    for (i, &(_, p)) in addrs.iter().enumerate() {
        let slice = ((2 * before + p as usize) * n / (2 * total)).min(n - 1);
        if slice != current {
            out.push(&addrs[start..i]);
            (start, current) = (i, slice);
        }
        before += p as usize;
    }
    if start < addrs.len() {
        out.push(&addrs[start..]);
    }
    out
}

/// One mover's `move_pages` of `addrs`, `MOVE_BATCH` at a time: each address's status.
fn move_slice(pid: Pid, addrs: &[(u64, u32)], node: usize) -> std::io::Result<Vec<i32>> {
    let mut statuses = Vec::with_capacity(addrs.len());
    for chunk in addrs.chunks(MOVE_BATCH) {
        let a: Vec<usize> = chunk.iter().map(|&(x, _)| x as usize).collect();
        statuses.extend(sys::move_pages_to(pid.0, &a, node)?);
    }
    Ok(statuses)
}

/// Seconds since `started`, to the millisecond, for a call's log line: the pass waits for
/// each move, so an operator sees where a long pass went.
fn took_s(started: std::time::Instant) -> Value {
    json!((started.elapsed().as_secs_f64() * 1e3).round() / 1e3)
}

/// A call's line: how many threads moved its pages, when more than one.
fn took_movers(v: &mut Value, movers: usize) {
    if movers > 1 {
        v["movers"] = json!(movers);
    }
}

/// What the actuator needs to know of a process.
#[derive(Debug, Clone)]
pub struct Target {
    /// `Mems_allowed` (its cpuset's memory nodes).
    pub mems_allowed: Mask,
    /// Resident bytes per node (to charge `migrate_pages` to the budget).
    pub node_bytes: Vec<u64>,
    /// The CPUs its threads used since the last pass (`pacing::ProcessCpus`): its whole
    /// moves may take as many movers (`pacing::process_movers`).
    pub cpus_used: usize,
}

impl Actuator {
    /// An actuator; `dry_run` logs what it would do and does nothing.
    pub fn new(dry_run: bool, migrate_mb_s: f64) -> Actuator {
        Actuator {
            dry_run,
            rate: RateLimit::new(migrate_mb_s),
            movers: 1,
            changed: BTreeMap::new(),
            state: None,
            full: BTreeMap::new(),
            now_ns: 0,
            counts: Counts::default(),
        }
    }

    /// Keep every change in `state` from now on: written ahead of each pass's changes and
    /// after them, removed once a stop has restored them.
    pub fn keep_state(&mut self, state: StateFile) {
        self.state = Some(state);
    }

    /// Take `left` (what an earlier daemon changed, from its state file) as this actuator's
    /// own, for [`Actuator::restore`] to give back.
    pub fn adopt(&mut self, left: BTreeMap<Tid, Changed>) {
        self.changed.extend(left);
    }

    /// The migration budget from now on, MiB/s (a reload).
    pub fn set_migrate_mb_s(&mut self, mb_s: f64) {
        self.rate.set_rate(mb_s);
    }

    /// A pass begins: `movers` threads move pages in it (at least one).
    pub fn begin_pass(&mut self, movers: usize) {
        self.movers = movers.max(1);
    }

    /// Threads whose affinity the daemon changed.
    pub fn changed(&self) -> &BTreeMap<Tid, Changed> {
        &self.changed
    }

    /// Whether `tid`'s current affinity is the one the daemon set (so a narrowed affinity
    /// is the daemon's own doing, not an operator's).
    pub fn is_ours(&self, tid: Tid, current: &Mask) -> bool {
        self.changed.get(&tid).is_some_and(|c| &c.ours == current)
    }

    /// The affinity `tid` had before the daemon changed it.
    pub fn original(&self, tid: Tid) -> Option<&Mask> {
        self.changed.get(&tid).map(|c| &c.original)
    }

    /// Forget the threads `keep` (given each thread and its process) does not keep (and
    /// the state file with them); the line of a state file that could not be written.
    pub fn forget(&mut self, keep: impl Fn(Tid, Pid) -> bool) -> Option<Value> {
        let before = self.changed.len();
        self.changed.retain(|&t, c| keep(t, c.pid));
        (self.changed.len() != before && !self.dry_run)
            .then(|| self.write_state())
            .flatten()
    }

    /// Carry out one action of `pid_of`'s process at `now_ns`; returns the log lines.
    pub fn apply(
        &mut self,
        a: &Action,
        now_ns: u64,
        pid_of: impl Fn(Tid) -> Option<Pid>,
        target: impl Fn(Pid) -> Option<Target>,
        node_cpus: &[Mask],
    ) -> Vec<Value> {
        self.apply_pass(std::slice::from_ref(a), now_ns, pid_of, target, node_cpus)
    }

    /// Carry out a pass's actions at `now_ns`; returns the log lines, in the actions'
    /// order. Affinities change at once, in order; page moves are admitted in order
    /// (`Mems_allowed`, the budget, charged as admitted), then made: one process's one
    /// after another, different processes' at the same time, each process with its share
    /// of the pass's movers (`pacing::movers_shares`).
    pub fn apply_pass(
        &mut self,
        actions: &[Action],
        now_ns: u64,
        pid_of: impl Fn(Tid) -> Option<Pid>,
        target: impl Fn(Pid) -> Option<Target>,
        node_cpus: &[Mask],
    ) -> Vec<Value> {
        let t_s = now_ns as f64 / 1e9;
        self.now_ns = now_ns;
        let mut lines: Vec<Option<Value>> = Vec::with_capacity(actions.len());
        let mut admitted = Vec::new();
        let unkept = self.write_ahead(actions, &pid_of, node_cpus).err();
        let changes = self.counts.affinity_changes;
        for a in actions {
            let slot = lines.len();
            let done = match a {
                Action::Log { pid, message } => Ok(line::decision(t_s, *pid, message)),
                Action::SetThreadAffinity { tid, .. } | Action::MoveThread { tid, .. }
                    if unkept.is_some() =>
                {
                    let e = unkept.as_ref().expect("guarded");
                    Ok(self.unkept(t_s, *tid, pid_of(*tid), e))
                }
                Action::SetThreadAffinity { tid, cpus } => {
                    Ok(self.set_affinity(t_s, *tid, cpus, pid_of(*tid)))
                }
                Action::MoveThread { tid, node } => {
                    Ok(self.set_affinity(t_s, *tid, &node_cpus_of(node_cpus, *node), pid_of(*tid)))
                }
                Action::MovePages { pid, addrs, node } => {
                    self.admit_move_pages(now_ns, *pid, addrs, *node, target(*pid))
                }
                Action::MigrateProcessPages { pid, from, to } => {
                    let v = line::migrate_pages(t_s, *pid, *from, *to);
                    self.admit_process_move(now_ns, *pid, *from, &[*to], v, target(*pid))
                }
                Action::InterleaveProcessPages { pid, from, nodes } => {
                    let v = line::interleave_pages(t_s, *pid, *from, nodes);
                    self.admit_process_move(now_ns, *pid, *from, nodes, v, target(*pid))
                }
                other => Ok(json!({"t_s": t_s, "not_done": format!("{other:?}"),
                    "why": "not a live action (mempolicies are set by the program or numactl)"})),
            };
            match done {
                Ok(v) => lines.push(Some(v)),
                Err(m) => {
                    admitted.push((slot, *m));
                    lines.push(None);
                }
            }
        }
        if self.counts.affinity_changes != changes {
            // As the changes came out (a thread that exited or was refused is not kept).
            if let Some(e) = self.write_state() {
                lines.push(Some(e));
            }
        }
        for (slot, m) in make_moves(admitted, self.movers) {
            lines[slot] = Some(self.finish(m));
        }
        lines.into_iter().flatten().collect()
    }

    /// Write the state file with every affinity `actions` will set (with its thread's own),
    /// before any is set: a daemon killed in the middle of them leaves them all known. An
    /// error means none may be set.
    fn write_ahead(
        &mut self,
        actions: &[Action],
        pid_of: &impl Fn(Tid) -> Option<Pid>,
        node_cpus: &[Mask],
    ) -> std::io::Result<()> {
        if self.state.is_none() || self.dry_run {
            return Ok(());
        }
        let mut ahead = self.changed.clone();
        for a in actions {
            let (tid, cpus) = match a {
                Action::SetThreadAffinity { tid, cpus } => (*tid, cpus.clone()),
                Action::MoveThread { tid, node } => (*tid, node_cpus_of(node_cpus, *node)),
                _ => continue,
            };
            let Some(pid) = pid_of(tid) else { continue };
            let original = match ahead.get(&tid) {
                Some(c) => c.original.clone(),
                None => match affinity_now(tid.0) {
                    Ok(m) => line::own_affinity(&self.changed, pid, m),
                    Err(_) => continue, // exited: set_affinity says so
                },
            };
            let ours = cpus.and(&original);
            if !ours.is_empty() {
                let c = Changed {
                    pid,
                    original,
                    ours,
                };
                ahead.insert(tid, c);
            }
        }
        if ahead == self.changed {
            return Ok(());
        }
        let state = self.state.as_mut().expect("checked above");
        state.write(&ahead)
    }

    /// Write the state file as the changes are now; its log line if that failed.
    fn write_state(&mut self) -> Option<Value> {
        let state = self.state.as_mut()?;
        let e = state.write(&self.changed).err()?;
        self.counts.errors += 1;
        Some(json!({"state_file": state.path().display().to_string(),
            "error": format!("cannot write it: {e}")}))
    }

    /// An affinity not set because the state file could not be written ahead of it.
    fn unkept(&mut self, t_s: f64, tid: Tid, pid: Option<Pid>, e: &std::io::Error) -> Value {
        self.counts.errors += 1;
        let mut v = line::affinity_of(t_s, tid.0, pid.map(|p| p.0));
        v["refused"] = json!(format!(
            "the state file cannot be written ({e}): what is not kept could not be restored"
        ));
        v
    }

    fn set_affinity(&mut self, t_s: f64, tid: Tid, cpus: &Mask, pid: Option<Pid>) -> Value {
        let Some(pid) = pid else {
            return line::thread_gone(&mut self.counts, t_s, tid.0);
        };
        let base = line::affinity_of(t_s, tid.0, Some(pid.0));
        let original = match self.changed.get(&tid) {
            Some(c) => c.original.clone(),
            None if self.dry_run => cpus.clone(),
            None => match affinity_now(tid.0) {
                Ok(m) => line::own_affinity(&self.changed, pid, m),
                Err(e) => return self.failed(base, "sched_getaffinity", &e),
            },
        };
        let want =
            match line::within_own_affinity(&mut self.counts, t_s, tid.0, pid, cpus, &original) {
                Ok(m) => m,
                Err(refused) => return refused,
            };
        // The kernel refuses a mask of offline CPUs only (EINVAL); one with some online
        // keeps the others for when they come back.
        if let Some(online) = online_cpus()
            && !want.intersects(&online)
        {
            let mut v = base;
            v["refused"] = json!(format!("CPUs {want} are offline (online: {online})"));
            return v;
        }
        let mut v = line::affinity(t_s, tid.0, Some(pid.0), &want);
        if self.dry_run {
            v["dry_run"] = json!(true);
            return v;
        }
        match sys::set_affinity(tid.0, &want) {
            Ok(()) => {
                self.counts.affinity_changes += 1;
                // What the kernel keeps: `want` within the task's cpuset, which leaves out
                // a CPU offline at the time. It is what the thread reads as from now on.
                let ours = affinity_now(tid.0).unwrap_or(want);
                self.changed.insert(
                    tid,
                    Changed {
                        pid,
                        original,
                        ours,
                    },
                );
                v
            }
            Err(e) => self.failed(v, "sched_setaffinity", &e),
        }
    }

    fn failed(&mut self, mut v: Value, call: &str, e: &std::io::Error) -> Value {
        let name = errno_name(e);
        if name == "ESRCH" {
            self.counts.gone += 1;
            v["gone"] = json!(format!("{call}: ESRCH (exited mid-operation)"));
        } else {
            self.counts.errors += 1;
            v["error"] = json!(format!("{call}: {name}"));
        }
        v
    }

    /// `move_pages` of `pid`'s `addrs` to `node`: its line when refused, deferred whole
    /// or a dry run, else the move to make (`Err`), charged to the budget.
    fn admit_move_pages(
        &mut self,
        now_ns: u64,
        pid: Pid,
        addrs: &[u64],
        node: usize,
        target: Option<Target>,
    ) -> Result<Value, Box<Admitted>> {
        let t_s = now_ns as f64 / 1e9;
        let mut v = line::move_pages(t_s, pid, addrs.len(), node);
        let mems = target.as_ref().map(|t| &t.mems_allowed);
        if !line::admit(&mut self.counts, &mut v, "move_pages", node, mems) {
            return Ok(v);
        }
        if self.held_back(now_ns, &[node], addrs.len() as u64 * 4096, &mut v) {
            return Ok(v);
        }
        // Only the process's private anonymous memory is asked for: a file's pages and
        // shared memory stay where they are, whoever maps them now.
        let mut not_moved = NotMoved::default();
        let mm = mm_task(pid);
        // Unreadable (the process exited): the call that follows says so.
        let own = private_anonymous_of(mm).ok();
        let owned: Vec<u64>;
        let addrs = match &own {
            Some(r) => {
                owned = addrs
                    .iter()
                    .copied()
                    .filter(|&a| procfs::in_ranges(r, a))
                    .collect();
                not_moved.add(NOT_OWNED, (addrs.len() - owned.len()) as u64);
                &owned[..]
            }
            None => addrs,
        };
        let mut addrs = weigh_huge_pages(mm, addrs);
        let n = within_budget(
            addrs.iter().map(|&(_, p)| p as u64),
            self.rate.pages(now_ns) as u64,
        );
        let deferred = pages_of(&addrs[n..]);
        if deferred > 0 {
            self.counts.pages_deferred += deferred as u64;
            v["deferred"] = json!(deferred);
        }
        if self.dry_run {
            v["dry_run"] = json!(true);
            not_moved.record(&mut self.counts, &mut v);
            return Ok(v);
        }
        addrs.truncate(n);
        let charged = pages_of(&addrs) as f64 * PAGE;
        self.rate.charge(charged);
        Err(Box::new(Admitted {
            pid,
            mm,
            what: Move::Pages { addrs, node },
            v,
            charged,
            not_moved,
            full: BTreeSet::new(),
            outcome: None,
        }))
    }

    /// A whole process's move (`migrate_pages` to one node, `interleave_pages` over
    /// several) of its own pages on `from`: its line when refused, deferred or a dry
    /// run, else the move to make (`Err`), charged to the budget with the process's bytes
    /// on `from` (what does not move is given back when it is made). `v`: its line.
    fn admit_process_move(
        &mut self,
        now_ns: u64,
        pid: Pid,
        from: usize,
        to: &[usize],
        mut v: Value,
        target: Option<Target>,
    ) -> Result<Value, Box<Admitted>> {
        let mems = target.as_ref().map(|t| &t.mems_allowed);
        let counts = &mut self.counts;
        if !(to.iter()).all(|&n| line::admit(counts, &mut v, "migrate_pages", n, mems)) {
            return Ok(v);
        }
        let target = target.expect("admitted");
        let bytes = target.node_bytes.get(from).copied().unwrap_or(0);
        let dest: Vec<usize> = to.iter().copied().filter(|&n| n != from).collect();
        if self.held_back(now_ns, &dest, bytes / dest.len().max(1) as u64, &mut v) {
            return Ok(v);
        }
        if self.rate.pages(now_ns) == 0 {
            let pages = bytes / 4096;
            self.counts.pages_deferred += pages;
            v["deferred"] = json!(pages);
            return Ok(v);
        }
        if self.dry_run {
            v["dry_run"] = json!(true);
            return Ok(v);
        }
        self.rate.charge(bytes as f64);
        Err(Box::new(Admitted {
            pid,
            mm: mm_task(pid),
            what: Move::Process {
                from,
                to: to.to_vec(),
                cpus_used: target.cpus_used,
            },
            v,
            charged: bytes as f64,
            not_moved: NotMoved::default(),
            full: BTreeSet::new(),
            outcome: None,
        }))
    }

    /// Whether a move of `bytes` to each of `nodes` waits because one refused pages for
    /// want of memory: until its back-off has passed (`full_backoff_ns`) and it has that
    /// much free (when its `meminfo` can be read); the line says so.
    fn held_back(&mut self, now_ns: u64, nodes: &[usize], bytes: u64, v: &mut Value) -> bool {
        for &n in nodes {
            let Some(f) = self.full.get(&n) else { continue };
            let free = node_room_bytes(n);
            if now_ns >= f.retry_ns && free.is_none_or(|b| b > bytes) {
                continue;
            }
            v["held_back"] = json!(format!(
                "node {n} refused pages for want of memory {} time(s) in a row; asked again \
                 {} when it has room for {} MiB{}",
                f.refusals,
                if now_ns >= f.retry_ns {
                    "now".to_string()
                } else {
                    format!("in {:.0} s", (f.retry_ns - now_ns) as f64 / 1e9)
                },
                bytes >> 20,
                free.map_or(String::new(), |b| format!(
                    " (room for {} MiB above its watermarks)",
                    b >> 20
                ))
            ));
            return true;
        }
        false
    }

    /// A made move's line, its pages counted and what did not move given back to the
    /// budget.
    fn finish(&mut self, m: Admitted) -> Value {
        let dest: Vec<usize> = match &m.what {
            Move::Pages { node, .. } => vec![*node],
            Move::Process { from, to, .. } => to.iter().copied().filter(|n| n != from).collect(),
        };
        let full = m.full.clone();
        let mut v = self.finish_move(m);
        for n in dest {
            if !full.contains(&n) {
                self.full.remove(&n);
                continue;
            }
            let f = self.full.entry(n).or_insert(FullNode {
                refusals: 0,
                retry_ns: 0,
            });
            f.refusals += 1;
            f.retry_ns = self.now_ns + full_backoff_ns(f.refusals);
            self.counts.node_full += 1;
            v["node_full"] = json!({"node": n, "refusals": f.refusals,
                "retry_after_s": full_backoff_ns(f.refusals) / 1_000_000_000});
        }
        v
    }

    fn finish_move(&mut self, m: Admitted) -> Value {
        let Admitted {
            pid,
            what,
            mut v,
            charged,
            not_moved,
            outcome,
            ..
        } = m;
        let (call, whole) = match what {
            Move::Pages { .. } => ("move_pages", false),
            Move::Process { .. } => ("migrate_pages", true),
        };
        let Some(Outcome {
            moved,
            took_s,
            movers,
        }) = outcome
        else {
            unreachable!("every admitted move is made");
        };
        let moved = match moved {
            Ok(m) => m,
            Err(e) => {
                self.rate.charge(-charged);
                if whole {
                    v["leader"] = json!(leader_state(pid));
                }
                return self.failed(v, call, &e);
            }
        };
        v["took_s"] = took_s;
        took_movers(&mut v, movers);
        self.rate.charge(-(charged - moved as f64 * PAGE).max(0.0));
        self.counts.pages_moved += moved;
        v["moved"] = json!(moved);
        if whole {
            v["not_moved"] = json!(not_moved.failed.values().sum::<u64>());
        }
        not_moved.record(&mut self.counts, &mut v);
        v
    }

    /// Give every changed thread its own affinity back, unless someone else changed it
    /// since (then it is left as they set it); and the threads that inherited a mask the
    /// daemon set (started by a changed thread after the change, never changed
    /// themselves) their creator's own. Returns the log lines.
    pub fn restore(&mut self) -> Vec<Value> {
        let all = std::mem::take(&mut self.changed);
        let mut log = self.give_back(all);
        if let Some(state) = self.state.as_mut()
            && let Err(e) = state.remove()
        {
            self.counts.errors += 1;
            log.push(json!({"state_file": state.path().display().to_string(),
                "error": format!("cannot remove it after the restore: {e}")}));
        }
        log
    }

    /// Let go of processes the daemon no longer manages while they run (someone else
    /// narrowed them, a reload's rules deny them, they fell under `min_rss_mb`): what it
    /// changed and still holds is given back, as a stop would (a thread someone else set
    /// since is left as they set it), and forgotten. Returns the log lines, each marked
    /// `let_go`.
    pub fn let_go(&mut self, pids: &BTreeSet<Pid>) -> Vec<Value> {
        if pids.is_empty() {
            return Vec::new();
        }
        let (gone, kept): (BTreeMap<Tid, Changed>, _) = std::mem::take(&mut self.changed)
            .into_iter()
            .partition(|(_, c)| pids.contains(&c.pid));
        self.changed = kept;
        let mut log = self.give_back(gone);
        for v in &mut log {
            v["let_go"] = json!(true);
        }
        if let Some(e) = self.write_state() {
            log.push(e);
        }
        log
    }

    /// Give each of `changed` its own affinity back, unless someone else changed it since,
    /// and the threads that inherited a mask set on one of them their creator's own.
    fn give_back(&mut self, changed: BTreeMap<Tid, Changed>) -> Vec<Value> {
        let mut log = self.restore_inherited(&changed);
        for (tid, c) in changed {
            let mut v = line::restore(tid.0, c.pid, &c.original);
            match affinity_now(tid.0) {
                // Written ahead, and the daemon stopped before it set it.
                Ok(now) if now == c.original => v["already"] = json!(true),
                Ok(now) if now != c.ours => {
                    v["left"] = json!(format!("changed since by someone else to {now}"));
                }
                Ok(_) => {
                    if let Err(e) = sys::set_affinity(tid.0, &c.original) {
                        v = self.failed(v, "sched_setaffinity", &e);
                    }
                }
                Err(e) => v = self.failed(v, "sched_getaffinity", &e),
            }
            log.push(v);
        }
        log
    }

    /// The threads of `changed`'s processes that the daemon did not change but that have a
    /// mask it set on one of them: `clone()` copied it. Each gets the own affinity of the
    /// thread it inherited from (`numabal_daemon::log::own_affinity`).
    fn restore_inherited(&mut self, changed: &BTreeMap<Tid, Changed>) -> Vec<Value> {
        let pids: BTreeSet<Pid> = changed.values().map(|c| c.pid).collect();
        let mut log = Vec::new();
        for pid in pids {
            let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", pid.0)) else {
                continue;
            };
            let mut tids: Vec<u32> = tasks
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .filter(|t| !changed.contains_key(&Tid(*t)))
                .collect();
            tids.sort_unstable();
            for tid in tids {
                let Ok(now) = affinity_now(tid) else {
                    continue; // exited since the listing
                };
                let own = line::own_affinity(changed, pid, now.clone());
                if own == now {
                    continue;
                }
                let mut v = line::restore(tid, pid, &own);
                v["inherited"] = json!(true);
                if let Err(e) = sys::set_affinity(tid, &own) {
                    v = self.failed(v, "sched_setaffinity", &e);
                }
                log.push(v);
            }
        }
        log
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// For a test that changes this thread's affinity: the lock that keeps such tests one
    /// at a time, this thread, its process, its affinity now and its first CPU alone.
    fn own_thread() -> (std::sync::MutexGuard<'static, ()>, Tid, Pid, Mask, Mask) {
        let guard = sys::AFFINITY_TESTS
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let tid = Tid(sys::gettid());
        let before = sys::get_affinity(tid.0).unwrap();
        let one = Mask::single(before.first().unwrap());
        (guard, tid, Pid(std::process::id()), before, one)
    }

    /// Nodes 0-3 take turns by 2 MiB run of addresses; the runs whose turn is the source
    /// stay; with one destination every page goes, whatever node it names.
    #[test]
    fn spread_pages_take_turns_by_2_mib_run() {
        let run = |i: u64| (i << 21, 512u32);
        let addrs: Vec<(u64, u32)> = (0..8).map(run).chain([((5 << 21) + 4096, 1)]).collect();
        let t = turns(&addrs, 2, &[0, 1, 2, 3]);
        let want = vec![
            (0, vec![run(0), run(4)]),
            (1, vec![run(1), run(5), ((5 << 21) + 4096, 1)]),
            (3, vec![run(3), run(7)]),
        ];
        assert_eq!(t, want);
        assert_eq!(turns(&addrs, 2, &[2]), vec![(2, addrs.clone())]);
    }

    /// A node that refused pages for want of memory is asked again 5 s later, then 10, 20,
    /// 40 and every 60 s: four attempts in its first full minute, one a minute after; before
    /// that a move to it is held back, with the reason on its line.
    #[test]
    fn a_full_node_is_held_back_with_a_growing_wait() {
        let waits: Vec<u64> = (1..=7)
            .map(|k| full_backoff_ns(k) / 1_000_000_000)
            .collect();
        assert_eq!(waits, [5, 10, 20, 40, 60, 60, 60]);
        let mut a = Actuator::new(false, 64.0);
        // A node without a meminfo file (none has this id): held back by time alone.
        let node = 4095;
        a.full.insert(
            node,
            FullNode {
                refusals: 2,
                retry_ns: 10_000_000_000,
            },
        );
        let mut v = json!({});
        assert!(a.held_back(9_000_000_000, &[0, node], 1 << 20, &mut v));
        let why = v["held_back"].as_str().unwrap();
        assert!(
            why.starts_with("node 4095 refused pages for want of memory 2 time(s)"),
            "{why}"
        );
        assert!(why.contains("asked again in 1 s"), "{why}");
        let mut v = json!({});
        assert!(!a.held_back(10_000_000_000, &[0, node], 1 << 20, &mut v));
        assert_eq!(v, json!({}));
    }

    /// A node's room is its free memory above its zones' high watermarks.
    #[test]
    fn a_nodes_high_watermarks_are_summed_over_its_zones() {
        let zi = "Node 0, zone      DMA\n  pages free     3000\n        min      10\n        \
                  low      12\n        high     15\nNode 0, zone   Normal\n  pages free     \
                  9000\n        high     400\n        spanned  100\nNode 2, zone   Normal\n  \
                  pages free     100\n        high     700\n";
        assert_eq!(high_watermarks(zi, 0), 415);
        assert_eq!(high_watermarks(zi, 2), 700);
        assert_eq!(high_watermarks(zi, 1), 0);
    }

    /// On this process's own thread: set, remembered with the original, restored.
    #[test]
    fn affinity_is_changed_within_the_threads_own_and_restored() {
        let (_one_at_a_time, tid, pid, before, one) = own_thread();
        let mut a = Actuator::new(false, 64.0);
        let log = a.apply(
            &Action::SetThreadAffinity {
                tid,
                cpus: one.clone(),
            },
            0,
            |_| Some(pid),
            |_| None,
            &[],
        );
        assert_eq!(sys::get_affinity(tid.0).unwrap(), one, "{log:?}");
        assert!(a.is_ours(tid, &one));
        // CPUs outside the thread's affinity are refused, not forced.
        let outside = Mask::from_ids((0..4096).filter(|c| !before.contains(*c)).take(1));
        if !outside.is_empty() {
            let log = a.apply(
                &Action::SetThreadAffinity { tid, cpus: outside },
                0,
                |_| Some(pid),
                |_| None,
                &[],
            );
            assert!(log[0]["refused"].is_string(), "{log:?}");
        }
        let log = a.restore();
        assert_eq!(sys::get_affinity(tid.0).unwrap(), before, "{log:?}");
        // A thread that is gone is logged, not an error.
        let mut a = Actuator::new(false, 64.0);
        let log = a.apply(
            &Action::SetThreadAffinity {
                tid: Tid(u32::MAX / 2),
                cpus: one,
            },
            0,
            |_| Some(pid),
            |_| None,
            &[],
        );
        assert!(log[0]["gone"].is_string(), "{log:?}");
        assert_eq!(a.counts.gone, 1);
    }

    /// A daemon that stops without its restore (here dropped, as `kill -9` leaves it) has
    /// written every change to its state file first: the next daemon's start gives it back
    /// and removes the file. A change the state file cannot keep is not made.
    #[test]
    fn a_killed_daemons_changes_are_given_back_from_its_state_file() {
        let (_one_at_a_time, tid, pid, before, one) = own_thread();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("numabal/state.json");
        let set = |a: &mut Actuator| {
            let action = Action::SetThreadAffinity {
                tid,
                cpus: one.clone(),
            };
            a.apply(&action, 0, |_| Some(pid), |_| None, &[])
        };
        let mut a = Actuator::new(false, 64.0);
        a.keep_state(crate::state::StateFile::open(&path).unwrap().0);
        let log = set(&mut a);
        assert_eq!(sys::get_affinity(tid.0).unwrap(), one, "{log:?}");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(&format!("\"tid\":{},", tid.0)), "{text}");
        drop(a);
        let mut lines = Vec::new();
        let state = crate::daemon::restore_left(&path, &mut |v| lines.push(v)).unwrap();
        assert_eq!(sys::get_affinity(tid.0).unwrap(), before, "{lines:?}");
        assert_eq!(lines[0]["left_by"], pid.0, "{lines:?}");
        assert_eq!(lines.last().unwrap()["restored_threads"], 1, "{lines:?}");
        assert!(!path.exists());
        // The state file cannot be replaced (a directory is in its place): nothing changes.
        let mut a = Actuator::new(false, 64.0);
        a.keep_state(state);
        std::fs::create_dir_all(path.join("x")).unwrap();
        let log = set(&mut a);
        assert!(
            log[0]["refused"].as_str().unwrap().contains("state file"),
            "{log:?}"
        );
        assert_eq!(sys::get_affinity(tid.0).unwrap(), before);
        assert_eq!(a.counts.affinity_changes, 0);
    }

    /// A process the daemon stops managing while it runs is let go: what the daemon set on
    /// it is given back at once, and forgotten (a stop then has nothing of it to restore).
    #[test]
    fn a_process_let_go_gets_its_affinities_back() {
        let (_one_at_a_time, tid, pid, before, one) = own_thread();
        let mut a = Actuator::new(false, 64.0);
        let set = Action::SetThreadAffinity {
            tid,
            cpus: one.clone(),
        };
        a.apply(&set, 0, |_| Some(pid), |_| None, &[]);
        assert_eq!(sys::get_affinity(tid.0).unwrap(), one);
        assert!(a.let_go(&BTreeSet::from([Pid(pid.0 + 1)])).is_empty());
        let log = a.let_go(&BTreeSet::from([pid]));
        assert_eq!(sys::get_affinity(tid.0).unwrap(), before, "{log:?}");
        assert_eq!(log.last().unwrap()["let_go"], true, "{log:?}");
        assert!(a.changed().is_empty());
        assert!(a.restore().is_empty());
    }

    /// A thread started after the daemon narrowed its creator inherits the narrowed mask;
    /// the restore gives it the creator's own too.
    #[test]
    fn a_thread_that_inherited_the_daemons_mask_is_restored() {
        let _one_at_a_time = sys::AFFINITY_TESTS.lock();
        let tid = Tid(sys::gettid());
        let pid = Pid(std::process::id());
        let before = sys::get_affinity(tid.0).unwrap();
        let Some(last) = before.iter().last().filter(|_| before.count() > 1) else {
            return; // one CPU: nothing to narrow
        };
        let mut a = Actuator::new(false, 64.0);
        let set = Action::SetThreadAffinity {
            tid,
            cpus: Mask::single(last),
        };
        a.apply(&set, 0, |_| Some(pid), |_| None, &[]);
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let child = std::thread::spawn(move || {
            tx.send(sys::gettid()).unwrap();
            done_rx.recv().unwrap();
            sys::get_affinity(sys::gettid()).unwrap()
        });
        let child_tid = rx.recv().unwrap();
        assert_eq!(sys::get_affinity(child_tid).unwrap(), Mask::single(last));
        let log = a.restore();
        done_tx.send(()).unwrap();
        assert_eq!(child.join().unwrap(), before, "{log:?}");
        assert_eq!(sys::get_affinity(tid.0).unwrap(), before, "{log:?}");
        assert!(log.iter().any(|v| v["inherited"] == json!(true)), "{log:?}");
    }

    /// A move of three slices' worth of pages with four movers allowed is made by three
    /// threads, and every page's status comes back (here to the node the pages are on:
    /// all "moved").
    /// A process allowed `node` only, as the actuator's tests see it.
    fn on_node_only(node: usize) -> Option<Target> {
        Some(Target {
            mems_allowed: Mask::single(node),
            node_bytes: vec![],
            cpus_used: 0,
        })
    }

    /// A whole-process move takes as many movers as the CPUs the process's threads used
    /// when the pass allows fewer: one mover allowed, three CPUs used, at least three
    /// slices' worth of pages: three threads move them; with no CPU used, one.
    #[test]
    fn a_whole_process_move_takes_a_mover_per_cpu_its_threads_used() {
        let _one_at_a_time = HUGE_MAP_TESTS.lock();
        let pid = Pid(std::process::id());
        let slice = numabal_daemon::pacing::MIN_SLICE;
        let v = vec![1u8; (3 * slice + 1) * 4096];
        let here = sys::query_nodes(pid.0, &[v.as_ptr() as usize]).unwrap()[0] as usize;
        let whole = Action::MigrateProcessPages {
            pid,
            from: here,
            to: here,
        };
        for (used, movers) in [(3, json!(3)), (0, Value::Null)] {
            let target = || {
                let mut t = on_node_only(here)?;
                t.cpus_used = used;
                Some(t)
            };
            let mut a = Actuator::new(false, 1024.0);
            a.begin_pass(1);
            let log = a.apply(&whole, 0, |_| None, |_| target(), &[]);
            assert!(
                log[0]["moved"].as_u64().unwrap() >= 3 * slice as u64,
                "{log:?}"
            );
            assert_eq!(log[0]["movers"], movers, "{log:?}");
        }
        std::hint::black_box(&v);
    }

    /// A whole-process move hands `move_pages` one address per transparent huge page when
    /// the frames and `/proc/kpageflags` can be read (root) and the kernel gave one; every
    /// page is still counted, and a move of them all moves as many pages.
    #[test]
    fn a_huge_page_is_one_address_of_a_whole_process_move() {
        let _one_at_a_time = HUGE_MAP_TESTS.lock();
        let pid = Pid(std::process::id());
        let (m, huge, lo, hi) = touched_huge_map();
        // khugepaged may collapse a range the faults left in base pages: the same THPs
        // before and after the reading, or the count is not compared.
        let thp_before = thp_kib_in(lo, hi);
        let ours: Vec<(u64, u32, i32)> = (own_page_nodes(pid).unwrap().into_iter())
            .filter(|&(a, _, _)| a >= lo && a < hi)
            .collect();
        let pages: u64 = ours.iter().map(|&(_, p, _)| p as u64).sum();
        assert_eq!(pages, 2048, "8 MiB of own pages");
        let folded = ours.iter().filter(|&&(_, p, _)| p == 512).count();
        let root = std::fs::File::open("/proc/kpageflags").is_ok();
        let thp_kb = thp_kib_in(lo, hi);
        if thp_kb != thp_before {
            eprintln!("khugepaged collapsed a range while it was read; the count not compared");
        } else if root && huge && thp_kb >= 2048 {
            assert_eq!(
                folded as u64,
                thp_kb / 2048,
                "one address per THP: {ours:?}"
            );
        } else {
            assert_eq!(folded, 0);
            eprintln!("not root, or no THP given here: one address per page ({ours:?})");
        }
        let here = ours[0].2 as usize;
        let mut a = Actuator::new(false, 1024.0);
        let whole = Action::MigrateProcessPages {
            pid,
            from: here,
            to: here,
        };
        let log = a.apply(&whole, 0, |_| None, |_| on_node_only(here), &[]);
        assert!(log[0]["moved"].as_u64().unwrap() >= 2048, "{log:?}");
        std::hint::black_box(&m);
    }

    /// A policy's addresses in a transparent huge page stand for its 512 pages: one address
    /// per huge page is kept, and the move counts (and charges) every base page once.
    #[test]
    fn a_policys_address_in_a_huge_page_stands_for_its_pages() {
        let _one_at_a_time = HUGE_MAP_TESTS.lock();
        let pid = Pid(std::process::id());
        let (m, huge, lo, hi) = touched_huge_map();
        let addrs: Vec<u64> = (lo..hi).step_by(4096).collect();
        let thp_before = thp_kib_in(lo, hi);
        let weighed = weigh_huge_pages(pid, &addrs);
        let thp_kb = thp_kib_in(lo, hi);
        assert_eq!(pages_of(&weighed), 2048, "every page once: {weighed:?}");
        let whole = weighed.iter().filter(|&&(_, p)| p == 512).count() as u64;
        let root = std::fs::File::open("/proc/kpageflags").is_ok();
        if thp_kb != thp_before {
            eprintln!("khugepaged collapsed a range while it was read; the count not compared");
        } else if root && huge {
            assert_eq!(whole, thp_kb / 2048, "one address per THP: {weighed:?}");
        } else {
            assert_eq!(whole, 0);
        }
        let here = sys::query_nodes(pid.0, &[lo as usize]).unwrap()[0] as usize;
        let mut a = Actuator::new(false, 1024.0);
        let act = Action::MovePages {
            pid,
            addrs,
            node: here,
        };
        let log = a.apply(&act, 0, |_| None, |_| on_node_only(here), &[]);
        assert_eq!(log[0]["move_pages"], 2048, "{log:?}");
        let moved = log[0]["moved"].as_u64().unwrap();
        assert!(moved <= 2048, "no page counted twice: {log:?}");
        assert_eq!(moved, a.counts.pages_moved);
        // Pages left on another node (a multi-node host) count as not moved, not twice.
        assert!(moved > 0, "{log:?}");
        std::hint::black_box(&m);
    }

    /// 8 MiB of private anonymous memory advised huge and written a word a page: the map,
    /// whether the advice was taken (refused where the kernel has no THP: then no huge page
    /// backs it either), and its address range.
    fn touched_huge_map() -> (sys::AnonMap, bool, u64, u64) {
        let mut m = sys::AnonMap::new(8 << 20).unwrap();
        let huge = m.advise_huge(true).is_ok();
        for i in (0..m.len()).step_by(4096) {
            m[i] = 1;
        }
        let (lo, hi) = (m.as_ptr() as u64, m.as_ptr() as u64 + m.len() as u64);
        (m, huge, lo, hi)
    }

    /// The huge-page tests one at a time: two mappings advised alike merge into one, whose
    /// `AnonHugePages` counts both.
    static HUGE_MAP_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// `AnonHugePages` of the mapping of this process that holds `lo..hi` (smaps), KiB.
    fn thp_kib_in(lo: u64, hi: u64) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ')
                && let Some((a, b)) = range.split_once('-')
                && let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16))
            {
                inside = a <= lo && hi <= b;
            } else if inside && let Some(kb) = line.strip_prefix("AnonHugePages:") {
                return kb.trim().trim_end_matches(" kB").trim().parse().unwrap();
            }
        }
        0
    }

    #[test]
    fn movers_get_slices_of_about_as_many_pages() {
        let addrs: Vec<(u64, u32)> = (0..6)
            .map(|i| (i << 21, 512))
            .chain([(99 << 21, 1)])
            .collect();
        let s = slices_of(&addrs, 3);
        assert_eq!(
            s.iter().map(|x| pages_of(x)).collect::<Vec<_>>(),
            [1024, 1024, 1025]
        );
        assert_eq!(s.concat(), addrs);
        let pages: Vec<(u64, u32)> = (0..10).map(|i| (i << 12, 1)).collect();
        assert_eq!(
            slices_of(&pages, 4)
                .iter()
                .map(|x| x.len())
                .collect::<Vec<_>>(),
            [2, 3, 2, 3]
        );
    }

    #[test]
    fn movers_split_a_large_move() {
        let pid = Pid(std::process::id());
        let slice = numabal_daemon::pacing::MIN_SLICE;
        let v = vec![1u8; (3 * slice + 1) * 4096];
        let first = (v.as_ptr() as u64 + 4095) & !4095;
        let addrs: Vec<u64> = (0..3 * slice as u64).map(|i| first + i * 4096).collect();
        let here = sys::query_nodes(pid.0, &[first as usize]).unwrap()[0] as usize;
        let target = || on_node_only(here);
        let mut a = Actuator::new(false, 1024.0);
        a.begin_pass(4);
        let mv = Action::MovePages {
            pid,
            addrs,
            node: here,
        };
        let log = a.apply(&mv, 0, |_| None, |_| target(), &[]);
        assert_eq!(log[0]["moved"].as_u64(), Some(3 * slice as u64), "{log:?}");
        assert_eq!(log[0]["movers"], 3, "{log:?}");
        std::hint::black_box(&v);
    }

    /// Two processes' moves in one pass share its movers and are made at once; a
    /// process's second move comes after its first, and the lines keep the actions'
    /// order. (A thread of this process stands in for a second process: `move_pages`
    /// takes any task's id, and the moves are grouped by the id they name.)
    #[test]
    fn the_moves_of_a_pass_share_its_movers_by_process() {
        let pid = Pid(std::process::id());
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let other = std::thread::spawn(move || {
            tx.send(own_tid()).unwrap();
            stop_rx.recv().ok();
        });
        let tid = Pid(rx.recv().unwrap());
        let slice = numabal_daemon::pacing::MIN_SLICE;
        let buf = |n: usize| vec![1u8; (n * slice + 1) * 4096];
        let (v1, v2, v3) = (buf(3), buf(3), buf(1));
        let addrs = |v: &Vec<u8>, n: usize| {
            let first = (v.as_ptr() as u64 + 4095) & !4095;
            (0..(n * slice) as u64)
                .map(|i| first + i * 4096)
                .collect::<Vec<u64>>()
        };
        let first = (v1.as_ptr() as u64 + 4095) & !4095;
        let here = sys::query_nodes(pid.0, &[first as usize]).unwrap()[0] as usize;
        let mv = |pid, addrs| Action::MovePages {
            pid,
            addrs,
            node: here,
        };
        let actions = [
            mv(pid, addrs(&v1, 3)),
            mv(tid, addrs(&v2, 3)),
            mv(pid, addrs(&v3, 1)),
        ];
        let mut a = Actuator::new(false, 1024.0);
        a.begin_pass(4);
        let log = a.apply_pass(&actions, 0, |_| None, |_| on_node_only(here), &[]);
        stop_tx.send(()).unwrap();
        other.join().unwrap();
        let got: Vec<(Value, Value, Value)> = (log.iter())
            .map(|l| (l["pid"].clone(), l["moved"].clone(), l["movers"].clone()))
            .collect();
        let n = |k: usize| json!(k * slice);
        assert_eq!(
            got,
            [
                (json!(pid.0), n(3), json!(2)),
                (json!(tid.0), n(3), json!(2)),
                (json!(pid.0), n(1), Value::Null),
            ],
            "four movers, two processes: two each (alone, three slices take three); lines \
             in the actions' order: {log:?}"
        );
        std::hint::black_box((&v1, &v2, &v3));
    }

    /// This thread's id.
    fn own_tid() -> u32 {
        std::fs::read_link("/proc/thread-self")
            .ok()
            .and_then(|p| p.file_name()?.to_str()?.parse().ok())
            .expect("/proc/thread-self names the thread")
    }

    #[test]
    fn pages_move_within_mems_allowed_and_the_budget() {
        let pid = Pid(std::process::id());
        let v = vec![1u8; 8 * 4096];
        let first = (v.as_ptr() as u64 + 4095) & !4095;
        let addrs: Vec<u64> = (0..4).map(|i| first + i * 4096).collect();
        let here = sys::query_nodes(pid.0, &[first as usize]).unwrap()[0] as usize;
        let target = || on_node_only(here);
        let mut a = Actuator::new(false, 64.0);
        let mv = |node| Action::MovePages {
            pid,
            addrs: addrs.clone(),
            node,
        };
        let log = a.apply(&mv(here), 0, |_| None, |_| target(), &[]);
        assert_eq!(log[0]["moved"], 4, "{log:?}");
        let log = a.apply(&mv(here + 1), 0, |_| None, |_| target(), &[]);
        assert!(log[0]["refused"].is_string(), "{log:?}");
        // A budget of 8 KiB/s moves 2 pages now and defers the rest.
        let mut a = Actuator::new(false, 8.0 / 1024.0);
        let log = a.apply(&mv(here), 0, |_| None, |_| target(), &[]);
        assert_eq!(
            (log[0]["moved"].as_u64(), log[0]["deferred"].as_u64()),
            (Some(2), Some(2))
        );
        // The C library's code is not asked for; the process's own pages on the node are
        // what a whole-process move takes (here to the node they are on: all "moved").
        let code = (libc::getpid as *const () as usize as u64) & !4095;
        let mut a = Actuator::new(false, 1024.0);
        let code_move = Action::MovePages {
            pid,
            addrs: vec![code, first],
            node: here,
        };
        let log = a.apply(&code_move, 0, |_| None, |_| target(), &[]);
        assert_eq!(
            (log[0]["moved"].as_u64(), log[0]["not_owned"].as_u64()),
            (Some(1), Some(1))
        );
        let whole = Action::MigrateProcessPages {
            pid,
            from: here,
            to: here,
        };
        let log = a.apply(&whole, 0, |_| None, |_| target(), &[]);
        let own = on_node(&own_page_nodes(pid).unwrap(), here);
        let own: Vec<u64> = own.iter().map(|&(a, _)| a).collect();
        assert!(addrs.iter().all(|x| own.contains(x)), "{log:?}");
        assert!(!own.contains(&code));
        assert!(log[0]["moved"].as_u64().unwrap() >= 4, "{log:?}");
        assert_eq!(log[0]["not_moved"], 0, "{log:?}");
        std::hint::black_box(&v);
    }
}
