//! Physical memory as DAMON's `paddr` operations see it, for DAMOS memory tiering
//! (`kernel/damos/`): a node's pages at addresses, the chance a page was accessed, and a
//! page moved to another node by a kernel thread.
//!
//! ```text
//!   node n's addresses:  | object 0's pages on n | object 1's pages on n | ...
//!                          0 1 2 ...  (each page of n numbered in page order, no gaps)
//! ```
//!
//! Simplification (docs/model-notes.md, "DAMOS"): the model keeps no page frames, so a
//! node's physical addresses are its pages numbered in a fixed order (object, then page),
//! without the free frames between them; a page that leaves the node or arrives on it
//! moves the numbers after it by its size. A region is a range of those numbers; like the
//! kernel's, it holds whatever pages fall in it.

use super::tiering::Mark;
use super::*;
use crate::memory::{CHUNK, PAGE_BYTES};

/// An object's access rates: disjoint page ranges with accesses per page per ns.
pub(crate) type AccessProfile = Vec<(u64, u64, f64)>;

/// Node `node`'s addresses: where each object's pages on it start (`bases[i]`), and the
/// node's pages in all.
#[derive(Debug, Clone, Default)]
pub(crate) struct PaddrLayout {
    pub(crate) node: usize,
    pub(crate) bases: Vec<u64>,
    pub(crate) span: u64,
}

impl PaddrLayout {
    /// The object holding address `a`, and `a`'s number among that object's pages on the
    /// node.
    fn object_of(&self, a: u64) -> Option<(usize, u64)> {
        if a >= self.span {
            return None;
        }
        let i = self.bases.partition_point(|&b| b <= a) - 1;
        Some((i, a - self.bases[i]))
    }
}

impl World<'_> {
    /// Node `n`'s addresses as today's objects hold its pages.
    pub(crate) fn paddr_layout(&self, n: usize) -> PaddrLayout {
        let mut bases = Vec::with_capacity(self.objects.len());
        let mut span = 0;
        for o in &self.objects {
            bases.push(span);
            span += o.node_pages()[n];
        }
        PaddrLayout {
            node: n,
            bases,
            span,
        }
    }

    /// The page at address `a` of the layout's node: (object, page).
    pub(crate) fn paddr_page(&self, l: &PaddrLayout, a: u64) -> Option<(usize, u64)> {
        let (obj, k) = l.object_of(a)?;
        Some((obj, self.objects[obj].select(l.node, k)?))
    }

    /// The head of the entry holding `page` (a THP's first page) and its base pages.
    pub(crate) fn page_entry(&self, obj: usize, page: u64) -> (u64, u64) {
        let head = if self.objects[obj].is_huge(page / CHUNK) {
            page / CHUNK * CHUNK
        } else {
            page
        };
        (head, self.entry_pages(obj, head))
    }

    /// The page ranges of object `obj` the threads now in an access phase on it touch,
    /// each with its accesses per page per ns, in thread order: a sweep's one reference
    /// per page per pass over its slice, a random pattern's lines spread over its ranges by
    /// weight, at each thread's latest rate.
    pub(crate) fn access_ranges(&self, obj: usize, f: impl FnMut(u64, u64, f64)) {
        self.access_ranges_of(obj, true, f);
    }

    /// `access_ranges`, the sweeps' left out unless `sweeps`.
    pub(crate) fn access_ranges_of(
        &self,
        obj: usize,
        sweeps: bool,
        mut f: impl FnMut(u64, u64, f64),
    ) {
        for (t, th) in self.threads.iter().enumerate() {
            if th.prog.access_rate <= 0.0 || !matches!(th.state, TState::Runnable) {
                continue;
            }
            let p = &self.procs[th.proc];
            let Some(PhaseRt::Access(a)) = p.groups[th.group].phases.get(th.phase) else {
                continue;
            };
            if p.regions[a.region].obj != obj {
                continue;
            }
            let slice = self.slice_of(t, a);
            if slice.1 <= slice.0 {
                continue;
            }
            if a.pattern == Pattern::Sweep {
                if !sweeps {
                    continue;
                }
                f(
                    slice.0,
                    slice.1,
                    th.prog.access_rate / ((slice.1 - slice.0) as f64 * PAGE_BYTES),
                );
                continue;
            }
            let lines = th.prog.access_rate / 64.0;
            for (a0, b0, w) in access::pattern_ranges(a, slice) {
                if b0 > a0 && w > 0.0 {
                    f(a0, b0, lines * w / (b0 - a0) as f64);
                }
            }
        }
    }

    /// Accesses per page per ns over object `obj`, for every page at once: the
    /// `access_ranges` added up into disjoint ranges.
    pub(crate) fn access_profile(&self, obj: usize) -> AccessProfile {
        let mut edges: Vec<(u64, f64)> = Vec::new();
        self.access_ranges(obj, |a, b, r| {
            edges.push((a, r));
            edges.push((b, -r));
        });
        edges.sort_by(|x, y| x.0.cmp(&y.0).then(x.1.total_cmp(&y.1)));
        let mut out = Vec::new();
        let (mut rate, mut from) = (0.0f64, 0u64);
        for (at, d) in edges {
            if at > from && rate > 1e-30 {
                out.push((from, at, rate));
            }
            rate += d;
            from = at;
        }
        out
    }

    /// A kernel thread moves the entry at (`obj`, `head`, `nr` pages) from `src` to `dst`
    /// without reclaim (DAMOS's `GFP_NOWAIT`): only if `dst` stays above its min mark.
    /// Returns the ns it took, `None` when there was no room.
    pub(crate) fn kthread_move(
        &mut self,
        obj: usize,
        head: u64,
        src: usize,
        dst: usize,
        nr: u64,
    ) -> Option<f64> {
        let free = self.node_cap[dst].saturating_sub(self.node_used[dst]);
        if free < self.tiering.mark(Mark::Min, dst) + nr {
            self.metrics.pgmigrate_fail += nr;
            return None;
        }
        Some(self.relocate(obj, head, src, dst, nr, true))
    }

    /// Memory in use on node `n`, in 1/10000 of its usable memory
    /// (`DAMOS_QUOTA_NODE_MEM_USED_BP`).
    pub(crate) fn node_mem_used_bp(&self, n: usize) -> u64 {
        let cap = self.node_cap[n].max(1);
        self.node_used[n].min(cap) * 10_000 / cap
    }
}

/// The rate at `page` in a profile.
pub(crate) fn profile_rate(p: &AccessProfile, page: u64) -> f64 {
    let i = p.partition_point(|&(_, b, _)| b <= page);
    match p.get(i) {
        Some(&(a, _, r)) if a <= page => r,
        _ => 0.0,
    }
}
