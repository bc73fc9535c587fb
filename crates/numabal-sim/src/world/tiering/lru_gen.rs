//! MGLRU, the multi-gen LRU (`CONFIG_LRU_GEN`, mm/vmscan.c): the order in which kswapd
//! and direct reclaim pick the pages they demote on kernels that have it on (Debian's
//! 6.12 and 7.2: `CONFIG_LRU_GEN_ENABLED=y`). `sim.lru_gen` turns it on; without it,
//! reclaim is the CLOCK of `tiering.rs`.
//!
//! ```text
//!   node n:   min_seq ... max_seq-2 | max_seq-1  max_seq     2 to 4 generations
//!             evictable ────────────┘ └─ the two youngest, never evicted
//!   first touch, migration arrival ──► max_seq-1
//!   aging (try_to_inc_max_seq; kswapd and direct reclaim with 2 generations left, with
//!   3 after a first round at DEF_PRIORITY): every page of the node that a process
//!   switched in since its last walk maps is looked at (should_skip_mm); a
//!   young one (a sweep passed it, or by its random accesses' rate) that was young before
//!   (PG_referenced) ──► max_seq, a young one seen for the first time ──► PG_referenced,
//!   it stays; then max_seq + 1 (with 4 generations, min_seq folds into min_seq + 1)
//!   eviction (evict_folios) from min_seq, chunk by chunk in the order they arrived,
//!   each page checked by look-around:
//!       young, PG_referenced ──► max_seq (activated)   young ──► PG_referenced, max_seq-1
//!       not young ──► demoted (demote_folio_list)
//!   min_seq's generation empty ──► min_seq + 1, while 2 generations remain
//! ```
//!
//! The model keeps, per chunk and node, how many of its pages are in each generation with
//! and without PG_referenced, not which ones: a chunk's pages share one access rate in the
//! model, so they are alike to reclaim. A page leaving a node by a migration other than
//! demotion is taken from the youngest generation (it is being used). Left out, as
//! docs/model-notes.md ("MGLRU") says: the tiers and their PID controller (no refaults
//! without swap), the Bloom filter, `min_ttl_ms`, memcgs, the file LRU, and look-around's
//! exact window (the chunk stands for it). The walkers share the aging (`walk.rs`).

use super::super::*;
use super::ReclaimCpu;
use crate::memory::CHUNK;
use std::collections::VecDeque;

mod walk;

/// `MAX_NR_GENS`.
const MAX_NR_GENS: u64 = 4;
/// `MIN_NR_GENS`: the youngest two are never evicted.
const MIN_NR_GENS: u64 = 2;
/// `DEF_PRIORITY`: reclaim's first round; it scans a node's pages >> 12.
const DEF_PRIORITY: u32 = 12;
/// Walks one reclaim call may start: one per priority round (`DEF_PRIORITY` rounds, each
/// of which ages at most once, `get_nr_to_scan`).
const MAX_WALKS_PER_CALL: u32 = DEF_PRIORITY;
/// `MIN_LRU_BATCH`: eviction isolates folios until it holds this many pages (`scan_folios`),
/// so a batch is 64 base pages or one THP.
const MIN_LRU_BATCH: u64 = 64;
/// PTEs per cache line: the walk reads a page table a line at a time.
const PTES_PER_LINE: u64 = 8;
/// Sweep passes kept per chunk (`swept`): two for each of two threads sweeping it.
const SWEPT: usize = 4;

/// One node's generations (`struct lru_gen_folio`).
#[derive(Debug, Clone)]
struct Lrugen {
    max_seq: u64,
    min_seq: u64,
    /// Per generation (`seq % MAX_NR_GENS`): the chunks on its list, evicted first at the
    /// front (the kernel's tail). A chunk is on the list of the generation its pages were
    /// in when they last moved there by list; the aging walk changes a page's generation
    /// without moving it (`folio_update_gen`), and eviction or `inc_min_seq` moves it
    /// later, as `sort_folio` and `inc_min_seq` do.
    lists: [VecDeque<Entry>; MAX_NR_GENS as usize],
    /// Per generation: its pages (`nr_pages`).
    nr_pages: [u64; MAX_NR_GENS as usize],
    /// Per generation: when it was made (`timestamps`, ns).
    born: [u64; MAX_NR_GENS as usize],
    /// The aging's iteration of the mm list (`lru_gen_mm_state`), shared by the walkers:
    /// `max_seq` of the last aging whose iteration ended (`seq`), and the next process
    /// on the list (`head`; 0: the next iteration starts).
    mm_seq: u64,
    next_mm: usize,
    /// kswapd's walk of an mm, when its CPU of a tick ran out in the middle of it.
    kswapd_walk: Option<walk::WalkPos>,
}

impl Lrugen {
    /// `lru_gen_init_lruvec`: `max_seq = MIN_NR_GENS + 1`, `min_seq = 0`, and the mm
    /// list's iteration ended for `max_seq - 1`.
    fn new() -> Lrugen {
        Lrugen {
            max_seq: MIN_NR_GENS + 1,
            min_seq: 0,
            lists: Default::default(),
            nr_pages: [0; MAX_NR_GENS as usize],
            born: [0; MAX_NR_GENS as usize],
            mm_seq: MIN_NR_GENS,
            next_mm: 0,
            kswapd_walk: None,
        }
    }

    fn nr_gens(&self) -> u64 {
        self.max_seq - self.min_seq + 1
    }
}

/// A chunk on a list: object, chunk, and the chunk's epoch for that list when linked (an
/// entry whose epoch is no longer the chunk's is stale: the chunk was moved or freed).
type Entry = (usize, u64, u32);

fn slot(seq: u64) -> usize {
    (seq % MAX_NR_GENS) as usize
}

/// A chunk's pages on one node: per generation slot, without and with PG_referenced.
#[derive(Debug, Clone, Copy, Default)]
struct ChunkGens {
    pages: [[u16; 2]; MAX_NR_GENS as usize],
    /// Slots whose list holds this chunk (one bit each). Pages in a slot without its bit
    /// moved there by the walk and still sit on one of the chunk's lists.
    listed: u8,
    /// Per slot: the epoch of the chunk's live entry on that list.
    epoch: [u32; MAX_NR_GENS as usize],
    /// When the walk, look-around or DAMON last cleared the young bits of its pages on
    /// this node (ns; each walk visits only its own node's pages, `get_pte_pfn`).
    seen: u64,
    /// PG_young of its THP on this node: DAMON found its young bit set when it cleared it
    /// (`damon_pmdp_mkold`); reclaim's reference check counts and clears it
    /// (`folio_referenced`), the aging walk does not look at it.
    pg_young: bool,
}

/// The multi-gen LRU of every node.
#[derive(Debug, Clone)]
pub(crate) struct LruGen {
    nodes: Vec<Lrugen>,
    /// Per object: per chunk and node (`c * nr_nodes + n`).
    chunks: Vec<Vec<ChunkGens>>,
    /// Per object, per chunk: the last `SWEPT` times a sweep passed it (ns), the latest
    /// last. A sweep touches each page once a pass, so its young bits are set by the pass,
    /// not at a rate. More than one, because the threads of one step run ahead of a
    /// reclaim that one of them makes in its middle: the later passes may lie after the
    /// reclaim's time, and two writers of one buffer pass each chunk together.
    swept: Vec<Vec<[u64; SWEPT]>>,
    nr_nodes: usize,
    /// The time the reclaim call under way has reached (ns): it starts at the caller's
    /// time and advances by the CPU time of each walk and chunk, so a walk right after
    /// another sees the accesses made while the first ran, not none.
    clock: u64,
}

impl LruGen {
    pub(crate) fn new(nr_nodes: usize) -> LruGen {
        LruGen {
            nodes: vec![Lrugen::new(); nr_nodes],
            chunks: Vec::new(),
            swept: Vec::new(),
            nr_nodes,
            clock: 0,
        }
    }

    fn gens(&mut self, obj: usize, c: u64, n: usize) -> &mut ChunkGens {
        if self.chunks.len() <= obj {
            self.chunks.resize(obj + 1, Vec::new());
        }
        let i = c as usize * self.nr_nodes + n;
        let v = &mut self.chunks[obj];
        if v.len() <= i {
            v.resize((c as usize + 1) * self.nr_nodes, ChunkGens::default());
        }
        &mut v[i]
    }

    /// Add `nr` pages of chunk `c` on node `n` to generation `seq`, the chunk last on that
    /// generation's list (last to be evicted: `list_add`), moved there if it was on it
    /// (simplified: its pages already there move with it).
    fn put(&mut self, obj: usize, c: u64, n: usize, seq: u64, referenced: bool, nr: u64) {
        self.put_lazy(obj, c, n, seq, referenced, nr);
        self.relink(obj, c, n, slot(seq), false);
    }

    /// Add `nr` pages of chunk `c` on node `n` to generation `seq` without moving the
    /// chunk between lists (the aging walk's `folio_update_gen`).
    fn put_lazy(&mut self, obj: usize, c: u64, n: usize, seq: u64, referenced: bool, nr: u64) {
        let s = slot(seq);
        self.gens(obj, c, n).pages[s][referenced as usize] += nr as u16;
        self.nodes[n].nr_pages[s] += nr;
    }

    /// Take `nr` pages of chunk `c` on node `n` out of generation slot `s`.
    fn take(&mut self, obj: usize, c: u64, n: usize, s: usize, referenced: bool, nr: u64) {
        self.gens(obj, c, n).pages[s][referenced as usize] -= nr as u16;
        self.nodes[n].nr_pages[s] -= nr;
    }

    /// Put chunk `c` on node `n`'s list of slot `s` unless it is on it: at the front (the
    /// kernel's tail, evicted first: `list_move_tail`) or at the back (`list_move`).
    fn link(&mut self, obj: usize, c: u64, n: usize, s: usize, front: bool) {
        if self.gens(obj, c, n).listed & (1 << s) == 0 {
            self.relink(obj, c, n, s, front);
        }
    }

    /// Put chunk `c` at the front or the back of node `n`'s list of slot `s`, moving it
    /// there if it is elsewhere on the list (its old entry goes stale).
    fn relink(&mut self, obj: usize, c: u64, n: usize, s: usize, front: bool) {
        let g = *self.gens(obj, c, n);
        let list = &self.nodes[n].lists[s];
        let at = if front { list.front() } else { list.back() };
        if g.listed & (1 << s) != 0 && at == Some(&(obj, c, g.epoch[s])) {
            return;
        }
        let g = self.gens(obj, c, n);
        if g.listed & (1 << s) != 0 {
            g.epoch[s] = g.epoch[s].wrapping_add(1);
        }
        g.listed |= 1 << s;
        let e = (obj, c, g.epoch[s]);
        let list = &mut self.nodes[n].lists[s];
        if front {
            list.push_front(e);
        } else {
            list.push_back(e);
        }
    }

    /// Whether `e` is chunk's live entry on node `n`'s list of slot `s`.
    fn live(&mut self, e: Entry, n: usize, s: usize) -> bool {
        let g = self.gens(e.0, e.1, n);
        g.listed & (1 << s) != 0 && g.epoch[s] == e.2
    }

    /// Chunk `c` was taken off the list of slot `off`: its pages whose generation the
    /// walk changed go onto their generation's list (`sort_folio`'s `list_move`;
    /// `inc_min_seq`'s `list_move_tail` with `front`).
    /// Returns the pages moved.
    fn sort(&mut self, obj: usize, c: u64, n: usize, off: usize, front: bool) -> u64 {
        let g = *self.gens(obj, c, n);
        let mut moved = 0;
        for s in (0..MAX_NR_GENS as usize).filter(|&s| s != off) {
            if g.pages[s] != [0, 0] && g.listed & (1 << s) == 0 {
                self.link(obj, c, n, s, front);
                moved += (g.pages[s][0] + g.pages[s][1]) as u64;
            }
        }
        moved
    }

    /// Whether the entry of chunk `c` on node `n`'s list of slot `s` holds pages: its own
    /// generation's, or those the walk moved from it. An entry that holds none is dropped
    /// (its bit cleared).
    fn holds(&mut self, e: Entry, n: usize, s: usize) -> bool {
        if !self.live(e, n, s) {
            return false;
        }
        let g = self.gens(e.0, e.1, n);
        let unlisted = (0..MAX_NR_GENS as usize)
            .any(|t| t != s && g.listed & (1 << t) == 0 && g.pages[t] != [0, 0]);
        if g.pages[s] == [0, 0] && !unlisted {
            g.listed &= !(1 << s);
            return false;
        }
        true
    }

    /// `lru_gen_add_folio` for a page just faulted in or migrated here: `max_seq - 1`.
    fn add(&mut self, obj: usize, c: u64, n: usize, referenced: bool, nr: u64) {
        let seq = self.nodes[n].max_seq - 1;
        self.put(obj, c, n, seq, referenced, nr);
    }

    /// Take `nr` pages of chunk `c` off node `n`'s lists, youngest first; whether they had
    /// PG_referenced.
    fn del(&mut self, obj: usize, c: u64, n: usize, mut nr: u64) -> bool {
        let (min, max) = (self.nodes[n].min_seq, self.nodes[n].max_seq);
        let mut referenced = false;
        for seq in (min..=max).rev() {
            for r in [true, false] {
                let have = self.gens(obj, c, n).pages[slot(seq)][r as usize] as u64;
                let take = have.min(nr);
                if take > 0 {
                    self.take(obj, c, n, slot(seq), r, take);
                    nr -= take;
                    referenced |= r;
                }
            }
        }
        debug_assert_eq!(nr, 0, "pages missing from the LRU of node {n}");
        referenced
    }

    /// A sweep passed chunk `c` at time `t`.
    fn note_swept(&mut self, obj: usize, c: u64, t: u64) {
        if self.swept.len() <= obj {
            self.swept.resize(obj + 1, Vec::new());
        }
        let v = &mut self.swept[obj];
        if v.len() <= c as usize {
            v.resize(c as usize + 1, [0; SWEPT]);
        }
        let p = &mut v[c as usize];
        if t > p[SWEPT - 1] {
            p.rotate_left(1);
            p[SWEPT - 1] = t;
        }
    }

    /// Whether a sweep passed chunk `c` in `(since, now]`.
    fn swept_in(&self, obj: usize, c: u64, since: u64, now: u64) -> bool {
        let at = self.swept.get(obj).and_then(|v| v.get(c as usize));
        at.is_some_and(|p| p.iter().any(|&t| since < t && t <= now))
    }

    /// Pages of chunk `c` on node `n` the lists hold.
    fn pages_of(&self, obj: usize, c: u64, n: usize) -> u64 {
        let i = c as usize * self.nr_nodes + n;
        self.chunks.get(obj).and_then(|v| v.get(i)).map_or(0, |g| {
            g.pages.iter().flatten().map(|&p| p as u64).sum::<u64>()
        })
    }
}

impl World<'_> {
    /// A page (or THP) of `nr` base pages was faulted in or migrated to node `n`.
    pub(crate) fn lru_gen_add(&mut self, obj: usize, page: u64, n: usize, nr: u64, r: bool) {
        if let Some(l) = &mut self.tiering.lru_gen {
            l.add(obj, page / CHUNK, n, r, nr);
        }
    }

    /// A page (or THP) of `nr` base pages leaves node `n` (not by eviction): whether it
    /// had PG_referenced, which migration keeps (`folio_migrate_flags`).
    pub(crate) fn lru_gen_del(&mut self, obj: usize, page: u64, n: usize, nr: u64) -> bool {
        match &mut self.tiering.lru_gen {
            Some(l) => l.del(obj, page / CHUNK, n, nr),
            None => false,
        }
    }

    /// A sweep passed chunk `c` of object `obj` at time `t`.
    pub(crate) fn lru_gen_swept(&mut self, obj: usize, c: u64, t: u64) {
        let Some(l) = self.tiering.lru_gen.as_mut() else {
            return;
        };
        l.note_swept(obj, c, t);
    }

    /// DAMON cleared the young bit of the entry of `page` on node `n` at time `t`
    /// (`damon_pmdp_mkold`), setting PG_young if it was young. Nothing for a base page:
    /// the model keeps one young-bit time per chunk, and one page is a 512th of it.
    pub(crate) fn lru_gen_mkold(&mut self, obj: usize, page: u64, n: usize, t: u64) {
        let c = page / CHUNK;
        if self.tiering.lru_gen.is_none() || !self.objects[obj].is_huge(c) {
            return;
        }
        let p = self.young_chance(obj, c, n, t);
        let young = self.happens(p);
        let g = self.lru_mut().gens(obj, c, n);
        g.seen = g.seen.max(t);
        g.pg_young |= young;
    }

    /// Whether an event of chance `p` happened: certain ones draw no number.
    fn happens(&mut self, p: f64) -> bool {
        use rand::RngExt;
        p >= 1.0 || (p > 0.0 && self.rng.random::<f64>() < p)
    }

    /// The chance that an entry of chunk `c` on node `n` is young at time `now`.
    fn young_chance(&mut self, obj: usize, c: u64, n: usize, now: u64) -> f64 {
        let seen = self.lru_mut().gens(obj, c, n).seen;
        self.chance_since(obj, c, n, seen, now)
    }

    /// The chance that an entry of chunk `c` on node `n` was accessed in `(since, now]`.
    /// Without MGLRU no sweep is followed: every access at its rate.
    fn chance_since(&self, obj: usize, c: u64, n: usize, since: u64, now: u64) -> f64 {
        let rate = match &self.tiering.lru_gen {
            Some(l) if l.swept_in(obj, c, since, now) => return 1.0,
            Some(_) => self.chunk_random_rate(obj, c, n),
            None => self.chunk_access_rate(obj, c, n),
        };
        let o = &self.objects[obj];
        let nr = if o.is_huge(c) { o.chunk_len(c) } else { 1 };
        1.0 - (-rate * nr as f64 * now.saturating_sub(since) as f64).exp()
    }

    /// DAMON's check (`damon_pa_young`) at time `now` of `page` of object `obj`, which
    /// its last preparation made old at time `since` on node `n`: accessed since (the
    /// THP's young bit cleared by a walk in between is cleared all the same).
    pub(crate) fn damon_young(
        &mut self,
        obj: usize,
        page: u64,
        n: usize,
        since: u64,
        now: u64,
    ) -> bool {
        let o = &self.objects[obj];
        // Freed since (an object keeps no page table until its first touch).
        if o.populated() == 0 || o.node_of(page) != Some(n) {
            return false;
        }
        let c = page / CHUNK;
        let mut since = since;
        if self.tiering.lru_gen.is_some() && self.objects[obj].is_huge(c) {
            since = since.max(self.lru_mut().gens(obj, c, n).seen);
        }
        let p = self.chance_since(obj, c, n, since, now);
        self.happens(p)
    }

    /// Object `obj`'s pages were freed.
    pub(crate) fn lru_gen_release(&mut self, obj: usize) {
        let Some(l) = self.tiering.lru_gen.as_mut() else {
            return;
        };
        if let Some(v) = l.swept.get_mut(obj) {
            v.clear();
        }
        let Some(v) = l.chunks.get_mut(obj) else {
            return;
        };
        for (i, g) in v.iter_mut().enumerate() {
            for (s, p) in g.pages.iter().enumerate() {
                l.nodes[i % l.nr_nodes].nr_pages[s] -= (p[0] + p[1]) as u64;
            }
            // Its entries go stale; the epochs stay, so none of them matches again.
            *g = ChunkGens {
                epoch: g.epoch.map(|e| e.wrapping_add(1)),
                ..ChunkGens::default()
            };
        }
    }

    /// Invariant: the lists hold exactly the pages of every node, and each generation's
    /// total is its pages'.
    pub(crate) fn check_lru_gen(&self) -> Result<(), String> {
        let Some(l) = &self.tiering.lru_gen else {
            return Ok(());
        };
        let mut totals = vec![[0u64; MAX_NR_GENS as usize]; l.nr_nodes];
        for (i, g) in l.chunks.iter().flatten().enumerate() {
            for (s, p) in g.pages.iter().enumerate() {
                totals[i % l.nr_nodes][s] += (p[0] + p[1]) as u64;
            }
        }
        for (n, t) in totals.iter().enumerate() {
            let lg = &l.nodes[n];
            if *t != lg.nr_pages {
                return Err(format!(
                    "node {n}: generations hold {t:?} pages, their totals say {:?}",
                    lg.nr_pages
                ));
            }
            let in_use = |s: usize| (lg.min_seq..=lg.max_seq).any(|q| slot(q) == s);
            if let Some(s) = (0..MAX_NR_GENS as usize).find(|&s| !in_use(s) && t[s] > 0) {
                return Err(format!(
                    "node {n}: retired generation slot {s} holds {} pages",
                    t[s]
                ));
            }
        }
        for (obj, o) in self.objects.iter().enumerate() {
            for c in 0..o.chunks() {
                for (n, &p) in o.chunk_hist(c).iter().enumerate() {
                    let listed = l.pages_of(obj, c, n);
                    if listed != p as u64 {
                        return Err(format!(
                            "object {obj} chunk {c}: node {n} holds {p} pages, its LRU {listed}"
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// `evict_folios` with aging as `should_run_aging` asks (with 2 generations, and with
    /// 3 after the first round): demote up to `want` pages of node `n` on `cpu`, kswapd
    /// first finishing an aging walk it is in. `scanned` counts the pages the
    /// reclaimer's rounds scanned so far (the first round ends at the node's pages >>
    /// `DEF_PRIORITY`): a direct reclaim's from 0, kswapd's since it woke. Returns (pages
    /// demoted, ns, hopeless: no target had room, or aging found nothing).
    pub(super) fn evict_folios(
        &mut self,
        n: usize,
        want: u64,
        cpu: ReclaimCpu,
        scanned: &mut u64,
    ) -> (u64, f64, bool) {
        let (start, share, budget) = (cpu.start, cpu.share, cpu.budget);
        if self.tiering.tiers.demotion[n].is_empty() {
            return (0, 0.0, true);
        }
        let (mut done, mut ns, mut walks) = (0u64, 0.0, 0u32);
        // kswapd's and direct reclaim's first round runs at DEF_PRIORITY, which does not
        // age while it can evict and scans at most the node's pages >> DEF_PRIORITY
        // (`get_nr_to_scan`); later rounds age with 3 generations left. kswapd's
        // `balance_pgdat` keeps its lowered priority until the node is balanced.
        let first_round: u64 = self.lru().nodes[n].nr_pages.iter().sum::<u64>() >> DEF_PRIORITY;
        while done < want && ns < budget {
            self.lru_mut().clock = start + self.wall_on_share(ns, share);
            if cpu.kswapd && self.kswapd_walking(n) {
                if self.try_to_inc_max_seq(n, cpu, &mut ns) == walk::Aging::Paused {
                    return (done, ns, false);
                }
                continue;
            }
            self.try_to_inc_min_seq(n);
            let lg = &self.lru().nodes[n];
            let aging_at = if *scanned >= first_round {
                MIN_NR_GENS + 1
            } else {
                MIN_NR_GENS
            };
            if lg.nr_gens() <= aging_at {
                if walks == MAX_WALKS_PER_CALL {
                    return (done, ns, true);
                }
                walks += 1;
                if self.try_to_inc_max_seq(n, cpu, &mut ns) == walk::Aging::Paused {
                    return (done, ns, false);
                }
                continue;
            }
            let s = slot(lg.min_seq);
            let Some(e) = self.lru_mut().nodes[n].lists[s].pop_front() else {
                continue; // emptied: try_to_inc_min_seq drops the generation
            };
            let (obj, c, _) = e;
            let l = self.lru_mut();
            if !l.live(e, n, s) {
                continue; // stale: the chunk moved on this list, or was freed
            }
            let g = l.gens(obj, c, n);
            g.listed &= !(1 << s);
            let in_min = g.pages[s] != [0, 0];
            *scanned += (g.pages[s][0] + g.pages[s][1]) as u64;
            // sort_folio: pages the walk moved to a younger generation go to its list,
            // at a list operation's cost per folio.
            let moved = l.sort(obj, c, n, s, false);
            ns += self.folios(obj, c, moved) as f64 * self.machine.spec.costs.pte_update_ns;
            if !in_min {
                continue;
            }
            let (d, spent, stop) = self.evict_chunk(n, obj, c, want - done);
            done += d;
            ns += spent;
            if stop {
                return (done, ns, true);
            }
        }
        (done, ns, false)
    }

    /// `try_to_inc_min_seq`: the oldest generation is dropped when its list is empty,
    /// while more than `MIN_NR_GENS` remain. The list, not the count: pages the walk moved
    /// to a younger generation still sit on it until eviction sorts them.
    fn try_to_inc_min_seq(&mut self, n: usize) {
        let l = self.lru_mut();
        while l.nodes[n].nr_gens() > MIN_NR_GENS {
            let s = slot(l.nodes[n].min_seq);
            while let Some(&e) = l.nodes[n].lists[s].front() {
                if l.holds(e, n, s) {
                    return;
                }
                l.nodes[n].lists[s].pop_front();
            }
            l.nodes[n].min_seq += 1;
        }
    }

    /// The pages of chunk `c` in node `n`'s oldest generation, each checked as
    /// `folio_check_references` does: young since its young bit was last cleared → kept
    /// (`max_seq` with PG_referenced, else PG_referenced and `max_seq - 1`), and the first
    /// young one runs look-around over the chunk's other pages (`lru_gen_look_around`:
    /// their young bits cleared, young ones moved as the walk moves them); not young →
    /// demoted, or, with no target room, activated (`activate_locked`: `max_seq - 1`, or
    /// `max_seq` with PG_referenced) and the pass ends. Returns (pages demoted, ns, no
    /// target had room). Pages left when `want` is met stay, first in line.
    fn evict_chunk(&mut self, n: usize, obj: usize, c: u64, want: u64) -> (u64, f64, bool) {
        use rand::RngExt;
        let now = self.lru().clock;
        let p_young = self.young_chance(obj, c, n, now);
        // PG_young (DAMON's): `folio_referenced` counts it and clears it.
        let mut pg_young = std::mem::take(&mut self.lru_mut().gens(obj, c, n).pg_young);
        let visit_ns = self.machine.spec.costs.pte_update_ns;
        let o = &self.objects[obj];
        let (first, len) = (c * CHUNK, o.chunk_len(c));
        let huge = o.is_huge(c);
        let nr = if huge { len } else { 1 };
        // The chunk's entries on the node, in page order, searched as demotions need them
        // (most chunks evicted keep every page young).
        let mut next_head = first;
        let (min, max) = (self.lru().nodes[n].min_seq, self.lru().nodes[n].max_seq);
        let (mut done, mut ns, mut stop) = (0u64, visit_ns, false);
        // Pages to put back, by PG_referenced before and whether they stay referenced.
        let mut back = [[0u64; 2]; 2];
        'refs: for r in [false, true] {
            loop {
                if (self.lru_mut().gens(obj, c, n).pages[slot(min)][r as usize] as u64) < nr {
                    break;
                }
                if done >= want {
                    break 'refs;
                }
                self.lru_mut().take(obj, c, n, slot(min), r, nr);
                ns += visit_ns;
                let flagged = std::mem::take(&mut pg_young);
                let young = self.rng.random::<f64>() < p_young;
                if young || flagged {
                    if young && huge {
                        ns += self.young_thp_flush(obj);
                    }
                    back[r as usize][1] += nr;
                    continue;
                }
                let Some(dst) = self.demotion_target(n, nr) else {
                    self.metrics.pgmigrate_fail += nr;
                    back[r as usize][r as usize] += nr;
                    stop = true;
                    break 'refs;
                };
                let o = &self.objects[obj];
                let head = (next_head..first + len)
                    .step_by(nr as usize)
                    .find(|&p| o.node_of(p) == Some(n));
                let Some(head) = head else {
                    debug_assert!(
                        false,
                        "chunk {c} of object {obj}: its LRU counts more pages on node {n} than it has"
                    );
                    back[r as usize][r as usize] += nr;
                    stop = true;
                    break 'refs;
                };
                next_head = head + nr;
                // scan_folios isolates a batch of MIN_LRU_BATCH pages (a THP alone).
                let flush = done % MIN_LRU_BATCH == 0;
                ns += self.relocate_isolated(obj, head, n, dst, nr, r, flush);
                self.series.demoted(n, nr);
                done += nr;
            }
        }
        if back[0][1] + back[1][1] > 0 && !stop {
            // lru_gen_look_around from the first young page: the other generations'.
            // Its cost is the checks' (`visit_ns` a page, above).
            self.walk_chunk(n, obj, c, Some(slot(min)));
        }
        let l = self.lru_mut();
        // Not reached: it keeps its PG_young.
        l.gens(obj, c, n).pg_young |= pg_young;
        for (was, to) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
            if back[was][to] > 0 {
                let seq = if was == 1 { max } else { max - 1 };
                l.put(obj, c, n, seq, to == 1, back[was][to]);
            }
        }
        if l.gens(obj, c, n).pages[slot(min)] != [0, 0] {
            l.link(obj, c, n, slot(min), true);
        }
        (done, ns, stop)
    }

    /// Folios in `pages` base pages of chunk `c` of object `obj`: one THP, or a page each.
    fn folios(&self, obj: usize, c: u64, pages: u64) -> u64 {
        let o = &self.objects[obj];
        if o.is_huge(c) {
            pages.div_ceil(o.chunk_len(c))
        } else {
            pages
        }
    }

    /// Each node's generations now, for a `/proc` sample (none without MGLRU).
    pub(crate) fn lru_gen_sample(&self) -> Vec<records::LruGenNode> {
        let Some(l) = &self.tiering.lru_gen else {
            return Vec::new();
        };
        let now = self.now;
        let gens = |g: &Lrugen| {
            (g.min_seq..=g.max_seq)
                .map(|seq| records::LruGenGen {
                    seq,
                    age_ms: now.saturating_sub(g.born[slot(seq)]) / 1_000_000,
                    pages: g.nr_pages[slot(seq)],
                })
                .collect()
        };
        (l.nodes.iter().enumerate())
            .map(|(node, g)| records::LruGenNode {
                node,
                gens: gens(g),
            })
            .collect()
    }

    fn lru(&self) -> &LruGen {
        self.tiering.lru_gen.as_ref().expect("MGLRU on")
    }

    fn lru_mut(&mut self) -> &mut LruGen {
        self.tiering.lru_gen.as_mut().expect("MGLRU on")
    }
}

impl LruGen {
    /// `inc_min_seq`: the oldest generation's pages join the next one, ahead of its own
    /// (evicted first, "prevent cold/hot inversion"); the kernel moves them from the old
    /// list's tail to the new one's, which reverses their order.
    /// Returns each chunk moved with its pages (the folios cost a list move each).
    fn inc_min_seq(&mut self, n: usize) -> Vec<(usize, u64, u64)> {
        let mut out = Vec::new();
        let min = self.nodes[n].min_seq;
        let (from, to) = (slot(min), slot(min + 1));
        let list = std::mem::take(&mut self.nodes[n].lists[from]);
        for e in list {
            let (obj, c, _) = e;
            if !self.live(e, n, from) {
                continue;
            }
            let g = self.gens(obj, c, n);
            g.listed &= !(1 << from);
            // folio_inc_gen clears PG_referenced and PG_workingset.
            let moved = std::mem::take(&mut g.pages[from]);
            let nr = (moved[0] + moved[1]) as u64;
            g.pages[to][0] += moved[0] + moved[1];
            self.nodes[n].nr_pages[from] -= nr;
            self.nodes[n].nr_pages[to] += nr;
            // Its pages of every generation, the folded ones and those the walk moved,
            // go to the tail of their lists (evicted first), in reverse order.
            if nr > 0 {
                self.relink(obj, c, n, to, true);
            }
            let lazy = self.sort(obj, c, n, from, true);
            out.push((obj, c, nr + lazy));
        }
        self.nodes[n].min_seq += 1;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Chunks of object 0 on node 0's list of generation `seq`, in eviction order.
    fn order(l: &LruGen, seq: u64) -> Vec<u64> {
        let s = slot(seq);
        l.nodes[0].lists[s]
            .iter()
            .filter(|&&(o, c, e)| {
                let g = &l.chunks[o][c as usize];
                g.listed & (1 << s) != 0 && g.epoch[s] == e
            })
            .map(|&(_, c, _)| c)
            .collect()
    }

    #[test]
    fn pages_enter_max_seq_minus_one_and_leave_youngest_first() {
        let mut l = LruGen::new(1);
        l.add(0, 0, 0, false, 10);
        assert_eq!(l.nodes[0].max_seq, 3);
        assert_eq!(l.chunks[0][0].pages[slot(2)], [10, 0]);
        l.put(0, 0, 0, 3, true, 4);
        // A migration takes from max_seq first (PG_referenced there), then max_seq - 1.
        assert!(l.del(0, 0, 0, 6));
        assert_eq!(l.chunks[0][0].pages[slot(3)], [0, 0]);
        assert_eq!(l.chunks[0][0].pages[slot(2)], [8, 0]);
        assert!(!l.del(0, 0, 0, 8));
        assert_eq!(l.pages_of(0, 0, 0), 0);
    }

    #[test]
    fn inc_min_seq_puts_the_oldest_generation_first_in_reverse_order() {
        let mut l = LruGen::new(1);
        // Generation 0 holds chunks 1, 2, 3 (oldest first); generation 1 holds chunk 9.
        for c in [1, 2, 3] {
            l.put(0, c, 0, 0, false, 1);
        }
        l.put(0, 9, 0, 1, true, 1);
        assert_eq!(l.inc_min_seq(0).len(), 3);
        assert_eq!(l.nodes[0].min_seq, 1);
        // As list_move_tail from the old list's tail leaves them: the newest of the folded
        // chunks is evicted first, and all of them before generation 1's own.
        assert_eq!(order(&l, 1), vec![3, 2, 1, 9]);
        assert_eq!(l.chunks[0][3].pages[slot(1)], [1, 0]);
        assert_eq!(l.chunks[0][9].pages[slot(1)], [0, 1]);
        assert!(order(&l, 0).is_empty());
    }

    #[test]
    fn folding_clears_pg_referenced_and_moves_a_listed_chunk_first() {
        let mut l = LruGen::new(1);
        l.put(0, 9, 0, 1, false, 1);
        l.put(0, 4, 0, 1, false, 1);
        l.put(0, 4, 0, 0, true, 2);
        l.inc_min_seq(0);
        // Chunk 4 was on generation 1's list behind chunk 9; its folded pages put it first.
        assert_eq!(order(&l, 1), vec![4, 9]);
        assert_eq!(l.chunks[0][4].pages[slot(1)], [3, 0]);
        assert_eq!(l.nodes[0].nr_pages[slot(1)], 4);
    }

    #[test]
    fn a_sweep_pass_makes_a_chunk_young_only_between_its_clear_and_the_check() {
        let mut l = LruGen::new(1);
        assert!(!l.swept_in(0, 3, 0, 100), "never passed");
        l.note_swept(0, 3, 50);
        assert!(l.swept_in(0, 3, 10, 100));
        assert!(!l.swept_in(0, 3, 50, 100), "cleared at the pass");
        assert!(!l.swept_in(0, 3, 10, 40), "a pass after the check");
        // A thread that ran ahead of the check passed again: the earlier pass still counts.
        l.note_swept(0, 3, 120);
        assert!(l.swept_in(0, 3, 10, 100));
        assert!(l.swept_in(0, 3, 100, 130));
        assert!(!l.swept_in(0, 3, 60, 100));
        assert!(!l.swept_in(0, 2, 0, 200), "another chunk");
        // Two writers passed together, then both ran ahead of the check.
        l.note_swept(0, 5, 50);
        l.note_swept(0, 5, 52);
        l.note_swept(0, 5, 120);
        l.note_swept(0, 5, 121);
        assert!(l.swept_in(0, 5, 10, 100));
        assert!(!l.swept_in(0, 5, 60, 100));
    }

    #[test]
    fn pages_added_to_a_listed_chunk_move_it_last_and_leave_a_stale_entry() {
        let mut l = LruGen::new(1);
        for c in [1, 2] {
            l.add(0, c, 0, true, 1);
        }
        l.add(0, 1, 0, true, 1);
        assert_eq!(order(&l, 2), vec![2, 1]);
        assert_eq!(
            l.nodes[0].lists[slot(2)].len(),
            3,
            "the old entry stays, stale"
        );
        // Adding to the chunk already last moves nothing.
        l.add(0, 1, 0, true, 1);
        assert_eq!(l.nodes[0].lists[slot(2)].len(), 3);
    }
}
