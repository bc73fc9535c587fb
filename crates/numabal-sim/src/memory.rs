//! Physical memory: which node holds each base page.
//!
//! A `MemObject` is the backing of a mapping (anonymous memory of a process, a shm
//! segment, a file's page cache). Per-page state is one byte (the node, or `NO_NODE`),
//! so 256 GiB of 4 KiB pages costs 64 MiB. Two summaries keep the hot paths off the
//! per-page array:
//!
//! ```text
//!   pages    | n n n n ... (512) | n n n ... (512) | ...      node per base page (u8)
//!   chunks   | hist[node]        | hist[node]      | ...      pages per node per 2 MiB chunk (u16)
//!   fenwick  | prefix sums of hist over chunks, per node      range counts in O(nodes log chunks)
//! ```
//!
//! A THP is a chunk whose 512 pages were allocated together on one node (`huge` bit).
//!
//! With a NUMA-balancing model, two more per-page arrays are allocated (`enable_hinting`):
//! a PROT_NONE bit per page ("protected": the next access takes a NUMA hinting fault),
//! with a per-chunk count so sweeps skip clean chunks, and `last_cpupid` (u32 per page).
//! A THP keeps both on its first page. They are per mapping object, not per mm: a shm
//! object mapped by several processes has one set of PTE states (see docs/model-notes.md).

use numabal_model::{HPAGE_PMD_NR, PAGE_SIZE};

/// Node value of a page that has not been touched yet.
pub const NO_NODE: u8 = u8::MAX;
/// Base pages per 2 MiB chunk.
pub const CHUNK: u64 = HPAGE_PMD_NR;

/// Where a malloc'd buffer starts in its first 2 MiB, in pages. glibc maps a large
/// request page-aligned, so the mapping's start falls anywhere in a 2 MiB range (512
/// places, as address-space randomisation and the mappings before it leave it); the model
/// takes the middle. Its data's first 256 pages and last 257 are then base pages, and a
/// boundary between two threads' slices of it falls inside a THP as it does in the kernel
/// unless the start happens to be 2 MiB-aligned (docs/model-notes.md, "Memory").
pub const MALLOC_LEAD: u64 = CHUNK / 2;

/// Backing pages of one mapping.
#[derive(Debug, Clone)]
pub struct MemObject {
    /// Size in base pages.
    pub pages: u64,
    /// Allocate 2 MiB THPs where a whole chunk fits.
    pub thp: bool,
    /// The mapping does not start on a 2 MiB boundary (a malloc'd buffer): its first chunk
    /// is never a THP.
    pub misaligned: bool,
    nr_nodes: usize,
    node: Vec<u8>,
    hist: Vec<u16>,
    /// Populated pages per chunk (the sum of its `hist` row, kept so that a step asking
    /// whether a chunk is full reads one number, not one per node).
    chunk_pop: Vec<u16>,
    huge: Vec<bool>,
    fen: Vec<Vec<u64>>,
    node_pages: Vec<u64>,
    populated: u64,
    /// Bumped on every change of a page's node (caches key on it).
    pub generation: u64,
    /// PROT_NONE bit per page (NUMA hinting), empty unless enabled.
    prot: Vec<u64>,
    /// Protected entries (pages, or 1 for a THP) per chunk.
    prot_cnt: Vec<u16>,
    /// `last_cpupid` per page (`u32::MAX` = unset), empty unless enabled.
    cpupid: Vec<u32>,
    /// Fenwick tree over `prot_cnt` summed per superblock of `PROT_SB` chunks (range
    /// counts of protected entries; small enough to stay in cache).
    prot_fen: Vec<u64>,
}

impl MemObject {
    /// An untouched object.
    pub fn new(pages: u64, thp: bool, nr_nodes: usize) -> Self {
        let chunks = pages.div_ceil(CHUNK) as usize;
        MemObject {
            pages,
            thp,
            misaligned: false,
            nr_nodes,
            node: vec![NO_NODE; pages as usize],
            hist: vec![0; chunks * nr_nodes],
            chunk_pop: vec![0; chunks],
            huge: vec![false; chunks],
            fen: vec![vec![0; chunks + 1]; nr_nodes],
            node_pages: vec![0; nr_nodes],
            populated: 0,
            generation: 0,
            prot: Vec::new(),
            prot_cnt: Vec::new(),
            cpupid: Vec::new(),
            prot_fen: Vec::new(),
        }
    }

    /// Allocate the NUMA-hinting state (PROT_NONE bits, `last_cpupid`).
    pub fn enable_hinting(&mut self) {
        if self.cpupid.is_empty() {
            self.prot = vec![0; self.pages.div_ceil(64) as usize];
            self.prot_cnt = vec![0; self.chunks() as usize];
            self.cpupid = vec![u32::MAX; self.pages as usize];
            self.prot_fen = vec![0; (self.chunks() as usize).div_ceil(PROT_SB) + 1];
        }
    }

    /// Whether hinting state exists.
    pub fn hinting(&self) -> bool {
        !self.cpupid.is_empty()
    }

    /// Whether `page` (a THP: its chunk's first page) is PROT_NONE.
    #[inline]
    pub fn is_prot(&self, page: u64) -> bool {
        !self.prot.is_empty() && self.prot[(page / 64) as usize] & (1 << (page % 64)) != 0
    }

    /// Protected entries in chunk `c`.
    #[inline]
    pub fn chunk_prot(&self, c: u64) -> u16 {
        if self.prot_cnt.is_empty() {
            0
        } else {
            self.prot_cnt[c as usize]
        }
    }

    /// First protected entry in `[from, to)`.
    pub fn next_prot(&self, from: u64, to: u64) -> Option<u64> {
        if self.prot.is_empty() {
            return None;
        }
        let mut p = from;
        while p < to {
            let c = p / CHUNK;
            if self.prot_cnt[c as usize] == 0 {
                // Skip to the next chunk holding a protected entry (O(log chunks): the
                // protection is sparse between scans, a linear walk would dominate).
                match self.next_prot_chunk(c as usize + 1) {
                    Some(n) => p = n as u64 * CHUNK,
                    None => return None,
                }
                continue;
            }
            let w = self.prot[(p / 64) as usize] >> (p % 64);
            if w != 0 {
                let q = p + w.trailing_zeros() as u64;
                return (q < to).then_some(q);
            }
            p = (p / 64 + 1) * 64;
        }
        None
    }

    /// Make `page` PROT_NONE; false if it already was.
    pub fn set_prot(&mut self, page: u64) -> bool {
        let marked = self.mark_prot(page);
        self.prot_chunk_done(page / CHUNK, marked as u64);
        marked
    }

    /// `set_prot` for a scan's walk through one chunk: the bit and the chunk's count now,
    /// the superblock tree once for the chunk, by `prot_chunk_done(chunk, marked)` before
    /// anything reads it (one tree update per chunk, not per page: same counts).
    pub fn mark_prot(&mut self, page: u64) -> bool {
        let (w, b) = ((page / 64) as usize, page % 64);
        if self.prot[w] & (1 << b) != 0 {
            return false;
        }
        self.prot[w] |= 1 << b;
        self.prot_cnt[(page / CHUNK) as usize] += 1;
        true
    }

    /// The end of a chunk's `mark_prot` calls: `marked` entries became protected in it.
    pub fn prot_chunk_done(&mut self, chunk: u64, marked: u64) {
        if marked > 0 {
            self.prot_fen_add(chunk as usize / PROT_SB, marked as i64);
        }
    }

    /// Restore `page`'s mapping (the hinting fault's `pte_modify`).
    pub fn clear_prot(&mut self, page: u64) {
        let (w, b) = ((page / 64) as usize, page % 64);
        if self.prot[w] & (1 << b) != 0 {
            self.prot[w] &= !(1 << b);
            self.prot_cnt[(page / CHUNK) as usize] -= 1;
            self.prot_fen_add((page / CHUNK) as usize / PROT_SB, -1);
        }
    }

    fn prot_fen_add(&mut self, sb: usize, delta: i64) {
        let mut i = sb + 1;
        while i < self.prot_fen.len() {
            self.prot_fen[i] = (self.prot_fen[i] as i64 + delta) as u64;
            i += i & i.wrapping_neg();
        }
    }

    /// Protected entries in the first `sbs` superblocks.
    fn prot_prefix_sb(&self, sbs: usize) -> u64 {
        let mut i = sbs;
        let mut s = 0;
        while i > 0 {
            s += self.prot_fen[i];
            i -= i & i.wrapping_neg();
        }
        s
    }

    /// Protected entries in the first `chunks` chunks.
    fn prot_prefix(&self, chunks: usize) -> u64 {
        let sb = chunks / PROT_SB;
        let part: u64 = self.prot_cnt[sb * PROT_SB..chunks]
            .iter()
            .map(|&c| c as u64)
            .sum();
        self.prot_prefix_sb(sb) + part
    }

    /// The first chunk at or after `from` with a protected entry: the rest of `from`'s
    /// superblock, then a Fenwick descent to the next superblock with one.
    fn next_prot_chunk(&self, from: usize) -> Option<usize> {
        let nchunks = self.prot_cnt.len();
        if from >= nchunks {
            return None;
        }
        let sb_end = ((from / PROT_SB + 1) * PROT_SB).min(nchunks);
        if let Some(i) = self.prot_cnt[from..sb_end].iter().position(|&c| c > 0) {
            return Some(from + i);
        }
        let n = self.prot_fen.len() - 1;
        let first_sb = from / PROT_SB + 1;
        if first_sb >= n {
            return None;
        }
        // Smallest i with prefix_sb(i) > prefix_sb(first_sb): superblock i - 1.
        let mut want = self.prot_prefix_sb(first_sb) + 1;
        let mut pos = 0;
        let mut step = n.next_power_of_two();
        while step > 0 {
            let next = pos + step;
            if next <= n && self.prot_fen[next] < want {
                pos = next;
                want -= self.prot_fen[next];
            }
            step /= 2;
        }
        if pos >= n {
            return None;
        }
        let c0 = pos * PROT_SB;
        let c1 = (c0 + PROT_SB).min(nchunks);
        self.prot_cnt[c0..c1]
            .iter()
            .position(|&c| c > 0)
            .map(|i| c0 + i)
    }

    /// Protected entries in the chunks that overlap [a, b) (chunk granularity).
    pub fn prot_in(&self, a: u64, b: u64) -> u64 {
        if self.prot_fen.is_empty() || a >= b {
            return 0;
        }
        let ca = (a / CHUNK) as usize;
        let cb = b.div_ceil(CHUNK) as usize;
        self.prot_prefix(cb) - self.prot_prefix(ca)
    }

    /// `last_cpupid` of `page` (its THP head for a THP).
    #[inline]
    pub fn cpupid(&self, page: u64) -> u32 {
        self.cpupid[page as usize]
    }

    /// `folio_xchg_last_cpupid`.
    pub fn xchg_cpupid(&mut self, page: u64, v: u32) -> u32 {
        std::mem::replace(&mut self.cpupid[page as usize], v)
    }

    /// The entry a fault on `page` concerns: the page, or its THP's first page.
    #[inline]
    pub fn head(&self, page: u64) -> u64 {
        if self.huge[(page / CHUNK) as usize] {
            page / CHUNK * CHUNK
        } else {
            page
        }
    }

    /// Number of 2 MiB chunks.
    pub fn chunks(&self) -> u64 {
        self.pages.div_ceil(CHUNK)
    }

    /// Pages of chunk `c` (the last chunk may be short).
    pub fn chunk_len(&self, c: u64) -> u64 {
        (self.pages - c * CHUNK).min(CHUNK)
    }

    /// Node of a page, or `None` if it was never touched.
    #[inline]
    pub fn node_of(&self, page: u64) -> Option<usize> {
        let n = self.node[page as usize];
        (n != NO_NODE).then_some(n as usize)
    }

    /// Whether chunk `c` is a THP.
    pub fn is_huge(&self, c: u64) -> bool {
        self.huge[c as usize]
    }

    /// Pages per node in chunk `c`.
    #[inline]
    pub fn chunk_hist(&self, c: u64) -> &[u16] {
        let i = c as usize * self.nr_nodes;
        &self.hist[i..i + self.nr_nodes]
    }

    /// Populated pages in chunk `c`.
    pub fn chunk_populated(&self, c: u64) -> u64 {
        self.chunk_pop[c as usize] as u64
    }

    /// Populated pages per node.
    pub fn node_pages(&self) -> &[u64] {
        &self.node_pages
    }

    /// Populated pages in total.
    pub fn populated(&self) -> u64 {
        self.populated
    }

    /// The `k`-th page (from 0, in page order) of those on `node`, if it has that many: the
    /// chunk by a descent of the node's Fenwick tree, the page by a scan of the chunk.
    pub fn select(&self, node: usize, mut k: u64) -> Option<u64> {
        if k >= self.node_pages[node] {
            return None;
        }
        let f = &self.fen[node];
        let n = f.len() - 1;
        let (mut pos, mut step) = (0, n.next_power_of_two());
        while step > 0 {
            let next = pos + step;
            if next <= n && f[next] <= k {
                pos = next;
                k -= f[next];
            }
            step /= 2;
        }
        let c = pos as u64;
        let first = c * CHUNK;
        if self.huge[pos] {
            return Some(first + k);
        }
        let pages = &self.node[first as usize..(first + self.chunk_len(c)) as usize];
        let i = pages
            .iter()
            .enumerate()
            .filter(|&(_, &x)| x as usize == node)
            .nth(k as usize)?;
        Some(first + i.0 as u64)
    }

    fn fen_add(&mut self, node: usize, chunk: usize, delta: i64) {
        let f = &mut self.fen[node];
        let mut i = chunk + 1;
        while i < f.len() {
            f[i] = (f[i] as i64 + delta) as u64;
            i += i & i.wrapping_neg();
        }
    }

    fn fen_prefix(&self, node: usize, chunks: usize) -> u64 {
        let f = &self.fen[node];
        let mut i = chunks;
        let mut s = 0;
        while i > 0 {
            s += f[i];
            i -= i & i.wrapping_neg();
        }
        s
    }

    /// Put the `count` pages starting at `page` (all in one chunk) on `node`.
    fn set_run(&mut self, page: u64, count: u64, node: usize) {
        let c = (page / CHUNK) as usize;
        debug_assert_eq!(c as u64, (page + count - 1) / CHUNK);
        let mut delta_old = [0i64; 64];
        // Nodes pages left (a bit each): only those are visited below, not every node.
        let mut left = 0u64;
        let mut added = 0u64;
        for p in page..page + count {
            let old = self.node[p as usize];
            if old == node as u8 {
                continue;
            }
            if old == NO_NODE {
                added += 1;
            } else {
                delta_old[old as usize] -= 1;
                left |= 1 << old;
            }
            self.node[p as usize] = node as u8;
        }
        let mut moved_in = added as i64;
        while left != 0 {
            let o = left.trailing_zeros() as usize;
            left &= left - 1;
            let d = delta_old[o];
            self.hist[c * self.nr_nodes + o] = (self.hist[c * self.nr_nodes + o] as i64 + d) as u16;
            self.node_pages[o] = (self.node_pages[o] as i64 + d) as u64;
            self.fen_add(o, c, d);
            moved_in -= d;
        }
        if moved_in != 0 {
            self.hist[c * self.nr_nodes + node] =
                (self.hist[c * self.nr_nodes + node] as i64 + moved_in) as u16;
            self.node_pages[node] = (self.node_pages[node] as i64 + moved_in) as u64;
            self.fen_add(node, c, moved_in);
        }
        self.populated += added;
        self.chunk_pop[c] += added as u16;
        self.generation += 1;
    }

    /// First touch of one base page.
    pub fn populate_page(&mut self, page: u64, node: usize) {
        debug_assert_eq!(self.node[page as usize], NO_NODE);
        self.set_run(page, 1, node);
    }

    /// Whether a first touch in `chunk` may allocate a THP: THPs on, the chunk whole and
    /// untouched, and 2 MiB-aligned in the mapping.
    pub fn thp_chunk(&self, chunk: u64) -> bool {
        self.thp
            && !(self.misaligned && chunk == 0)
            && self.chunk_len(chunk) == CHUNK
            && self.chunk_populated(chunk) == 0
    }

    /// First touch of a whole chunk as a THP.
    pub fn populate_huge(&mut self, chunk: u64, node: usize) {
        debug_assert_eq!(self.chunk_populated(chunk), 0);
        let len = self.chunk_len(chunk);
        self.set_run(chunk * CHUNK, len, node);
        self.huge[chunk as usize] = true;
    }

    /// Move a page (or, for a THP, its whole chunk) to `node`; returns base pages moved.
    pub fn migrate(&mut self, page: u64, node: usize) -> u64 {
        let c = page / CHUNK;
        if self.huge[c as usize] {
            let len = self.chunk_len(c);
            self.set_run(c * CHUNK, len, node);
            len
        } else {
            self.set_run(page, 1, node);
            1
        }
    }

    /// Release every page; returns pages freed per node.
    pub fn release(&mut self) -> Vec<u64> {
        let freed = self.node_pages.clone();
        let hinting = self.hinting();
        let misaligned = self.misaligned;
        *self = MemObject::new(self.pages, self.thp, self.nr_nodes);
        self.misaligned = misaligned;
        if hinting {
            self.enable_hinting();
        }
        freed
    }

    /// The node holding every page of the populated range `[a, b)` when that is known
    /// at once: one page, or a range inside a full chunk whose pages are all on one node.
    #[inline]
    pub fn single_node(&self, a: u64, b: u64) -> Option<usize> {
        if b == a + 1 {
            return self.node_of(a);
        }
        let c = a / CHUNK;
        if b > (c + 1) * CHUNK || self.chunk_populated(c) != self.chunk_len(c) {
            return None;
        }
        let n = self.node[a as usize] as usize;
        (self.chunk_hist(c)[n] as u64 == self.chunk_len(c)).then_some(n)
    }

    /// Pages per node in `[a, b)`, added to `out`.
    pub fn range_hist(&self, a: u64, b: u64, out: &mut [u64]) {
        if a >= b {
            return;
        }
        let ca = a.div_ceil(CHUNK);
        let cb = b / CHUNK;
        if ca > cb {
            // Inside one chunk.
            self.partial_hist(a, b, out);
            return;
        }
        self.partial_hist(a, ca * CHUNK, out);
        if cb > ca {
            for (n, o) in out.iter_mut().enumerate() {
                *o += self.fen_prefix(n, cb as usize) - self.fen_prefix(n, ca as usize);
            }
        }
        self.partial_hist(cb * CHUNK, b, out);
    }

    /// Pages per node in `[a, b)` within one chunk. A chunk whose pages are all on one node
    /// (the common case) is answered from its histogram.
    fn partial_hist(&self, a: u64, b: u64, out: &mut [u64]) {
        if a >= b {
            return;
        }
        if self.chunk_populated(a / CHUNK) == 0 {
            return;
        }
        if let Some(n) = self.single_node(a, b) {
            out[n] += b - a;
            return;
        }
        let pages = &self.node[a as usize..b as usize];
        if self.nr_nodes <= 8 {
            // A count per node over the bytes: compares the compiler vectorises, where a
            // byte-by-byte tally cannot be (a chunk split between nodes is counted at
            // every step of a sweep through it).
            for (n, o) in out.iter_mut().enumerate().take(self.nr_nodes) {
                *o += pages.iter().filter(|&&x| x == n as u8).count() as u64;
            }
            return;
        }
        for &n in pages {
            if n != NO_NODE {
                out[n as usize] += 1;
            }
        }
    }

    /// First untouched page at or after `from` and before `to`.
    pub fn next_unpopulated(&self, mut from: u64, to: u64) -> Option<u64> {
        while from < to {
            let c = from / CHUNK;
            let cend = ((c + 1) * CHUNK).min(to);
            if self.chunk_populated(c) == self.chunk_len(c) {
                from = cend;
                continue;
            }
            for p in from..cend {
                if self.node[p as usize] == NO_NODE {
                    return Some(p);
                }
            }
            from = cend;
        }
        None
    }

    /// Recount everything from the per-page array; `Err` names the first inconsistency.
    pub fn check(&self) -> Result<(), String> {
        let mut node_pages = vec![0u64; self.nr_nodes];
        for c in 0..self.chunks() {
            let mut h = vec![0u64; self.nr_nodes];
            for p in c * CHUNK..c * CHUNK + self.chunk_len(c) {
                let n = self.node[p as usize];
                if n != NO_NODE {
                    if n as usize >= self.nr_nodes {
                        return Err(format!("page {p} is on node {n}, which does not exist"));
                    }
                    h[n as usize] += 1;
                }
            }
            for (n, (&counted, &summary)) in h.iter().zip(self.chunk_hist(c)).enumerate() {
                if counted != summary as u64 {
                    return Err(format!(
                        "chunk {c}: histogram says {summary} pages on node {n}, pages say {counted}"
                    ));
                }
                node_pages[n] += counted;
            }
            if h.iter().sum::<u64>() != self.chunk_populated(c) {
                return Err(format!(
                    "chunk {c}: {} pages counted populated, its pages say {}",
                    self.chunk_populated(c),
                    h.iter().sum::<u64>()
                ));
            }
            if self.huge[c as usize] && h.iter().filter(|&&x| x > 0).count() > 1 {
                return Err(format!("THP chunk {c} is split over several nodes"));
            }
            if self.hinting() {
                let end = c * CHUNK + self.chunk_len(c);
                let mut bits = 0u64;
                for p in c * CHUNK..end {
                    if self.is_prot(p) {
                        bits += 1;
                        if self.node[p as usize] == NO_NODE {
                            return Err(format!("page {p} is PROT_NONE but not populated"));
                        }
                        if self.huge[c as usize] && p != c * CHUNK {
                            return Err(format!("THP chunk {c}: PROT_NONE on a tail page {p}"));
                        }
                    }
                }
                if bits != self.prot_cnt[c as usize] as u64 {
                    return Err(format!(
                        "chunk {c}: {bits} PROT_NONE pages, summary says {}",
                        self.prot_cnt[c as usize]
                    ));
                }
            }
        }
        if node_pages != self.node_pages {
            return Err(format!(
                "per-node totals {:?} differ from the pages {:?}",
                self.node_pages, node_pages
            ));
        }
        if node_pages.iter().sum::<u64>() != self.populated {
            return Err("populated count differs from the pages".into());
        }
        for (n, &pages) in node_pages.iter().enumerate() {
            if self.fen_prefix(n, self.chunks() as usize) != pages {
                return Err(format!("range index of node {n} is out of date"));
            }
        }
        Ok(())
    }
}

/// Chunks per superblock of the protected-entry Fenwick tree (128 MiB).
const PROT_SB: usize = 64;

/// Bytes of one page.
pub const PAGE_BYTES: f64 = PAGE_SIZE as f64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn populate_migrate_and_count() {
        let mut o = MemObject::new(1500, false, 2);
        for p in 0..1000 {
            o.populate_page(p, (p % 3 == 0) as usize);
        }
        o.check().unwrap();
        let mut h = vec![0; 2];
        o.range_hist(10, 1490, &mut h);
        let expect1 = (10..1000).filter(|p| p % 3 == 0).count() as u64;
        assert_eq!(h, vec![990 - expect1, expect1]);
        assert_eq!(o.migrate(3, 0), 1);
        o.check().unwrap();
        assert_eq!(o.next_unpopulated(0, 1500), Some(1000));
        assert_eq!(o.populated(), 1000);
        let freed = o.release();
        assert_eq!(freed.iter().sum::<u64>(), 1000);
        assert_eq!(o.populated(), 0);
    }

    #[test]
    fn next_prot_matches_a_linear_search() {
        let pages = 512 * 150 + 100;
        let mut o = MemObject::new(pages, false, 2);
        o.enable_hinting();
        let set: Vec<u64> = [
            3,
            600,
            601,
            5000,
            9000,
            512 * 30,
            512 * 70 + 5,
            512 * 150 + 99,
        ]
        .to_vec();
        for &p in &set {
            assert!(o.set_prot(p));
        }
        o.clear_prot(601);
        let is = |p: u64| set.contains(&p) && p != 601;
        // Range counts at chunk granularity, across superblocks (64 chunks each).
        let chunk_of = |p: u64| p / CHUNK;
        for (a, b) in [
            (0, pages),
            (0, 512),
            (512, 1024),
            (1000, 512 * 31),
            (512 * 31, pages),
        ] {
            let want = set
                .iter()
                .filter(|&&p| is(p) && chunk_of(p) >= a / CHUNK && chunk_of(p) < b.div_ceil(CHUNK))
                .count() as u64;
            assert_eq!(o.prot_in(a, b), want, "[{a}, {b})");
        }
        for from in (0..pages).step_by(97).chain([0, 4, 601, 602, 512 * 30]) {
            for to in [from + 1, from + 700, pages] {
                let want = (from..to.min(pages)).find(|&p| is(p));
                assert_eq!(o.next_prot(from, to), want, "from {from} to {to}");
            }
        }
    }

    /// `select` finds the k-th page of a node as a linear search does, across chunks,
    /// in a THP and past the end.
    #[test]
    fn select_matches_a_linear_search() {
        let mut o = MemObject::new(512 * 40 + 77, true, 3);
        for p in 0..o.pages {
            if p / CHUNK == 7 {
                continue;
            }
            o.populate_page(p, ((p * 7 + p / 300) % 3) as usize);
        }
        o.populate_huge(7, 2);
        for n in 0..3 {
            let want: Vec<u64> = (0..o.pages).filter(|&p| o.node_of(p) == Some(n)).collect();
            for (k, &p) in want.iter().enumerate() {
                assert_eq!(o.select(n, k as u64), Some(p), "node {n}, k {k}");
            }
            assert_eq!(o.select(n, want.len() as u64), None);
        }
    }

    #[test]
    fn thp_chunks_move_whole() {
        let mut o = MemObject::new(1024, true, 2);
        o.populate_huge(1, 1);
        assert_eq!(o.migrate(600, 0), 512);
        assert_eq!(o.node_pages(), &[512, 0]);
        o.check().unwrap();
        let mut h = vec![0; 2];
        o.range_hist(700, 800, &mut h);
        assert_eq!(h, vec![100, 0]);
    }
}
