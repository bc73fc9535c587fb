//! The sampled driver's page records ([`super::sampled`]), kept compact: a host watched over
//! a terabyte of memory has hundreds of millions of sampled pages, where one record in an
//! ordered map of `(pid, address)` cost some 60 bytes a page. Here a process's pages are
//! grouped by 2 MiB of address space: a group of few pages is a sorted vector of
//! (index, record, node), 12 bytes a page; one that fills up becomes an array of its 512
//! pages, 10 bytes a page. Iteration is in (pid, address) order, as the ordered map's was.
//!
//! ```text
//!  pid ─► group (address >> 21) ─► Sparse: [(page index, PageRecord, node)] sorted, < DENSE_AT
//!                                  Dense:  present bits, PageRecord[512], node[512]
//! ```
//!
//! Addresses are page-aligned ([`crate::api::AccessSample::addr`]): the page index in its
//! group is `address >> 12 & 511`.

use super::PageRecord;
use numabal_model::Pid;
use std::collections::BTreeMap;

const PAGE_SHIFT: u32 = 12;
const GROUP_SHIFT: u32 = 21;
const GROUP_PAGES: usize = 1 << (GROUP_SHIFT - PAGE_SHIFT);
/// Pages at which a group turns dense: 256 x 12 bytes is about the dense array's 5 KiB.
const DENSE_AT: usize = 256;

/// A page's record and the node it was last seen on (or sent to).
type Node = u16;

#[derive(Debug, Clone)]
enum Group {
    Sparse(Vec<(u16, PageRecord, Node)>),
    Dense(Box<Dense>),
}

#[derive(Debug, Clone)]
struct Dense {
    present: [u64; GROUP_PAGES / 64],
    recs: [PageRecord; GROUP_PAGES],
    nodes: [Node; GROUP_PAGES],
}

impl Dense {
    fn from_sparse(v: &[(u16, PageRecord, Node)]) -> Box<Dense> {
        let mut d = Box::new(Dense {
            present: [0; GROUP_PAGES / 64],
            recs: [PageRecord::NEW; GROUP_PAGES],
            nodes: [0; GROUP_PAGES],
        });
        for &(i, r, n) in v {
            let i = i as usize;
            d.present[i / 64] |= 1 << (i % 64);
            d.recs[i] = r;
            d.nodes[i] = n;
        }
        d
    }

    fn has(&self, i: usize) -> bool {
        self.present[i / 64] & (1 << (i % 64)) != 0
    }
}

impl Group {
    /// The record of page `i`, a new one if it has none.
    fn get_or_insert(&mut self, i: usize) -> (&mut PageRecord, &mut Node) {
        if let Group::Sparse(v) = self
            && v.len() >= DENSE_AT
            && v.binary_search_by_key(&(i as u16), |e| e.0).is_err()
        {
            *self = Group::Dense(Dense::from_sparse(v));
        }
        match self {
            Group::Sparse(v) => {
                let at = match v.binary_search_by_key(&(i as u16), |e| e.0) {
                    Ok(at) => at,
                    Err(at) => {
                        v.insert(at, (i as u16, PageRecord::NEW, 0));
                        at
                    }
                };
                let e = &mut v[at];
                (&mut e.1, &mut e.2)
            }
            Group::Dense(d) => {
                if !d.has(i) {
                    d.present[i / 64] |= 1 << (i % 64);
                    d.recs[i] = PageRecord::NEW;
                    d.nodes[i] = 0;
                }
                (&mut d.recs[i], &mut d.nodes[i])
            }
        }
    }

    /// Each page in index order; `f` returns false to stop (and then so does this).
    fn each(&mut self, f: &mut impl FnMut(usize, &mut PageRecord, &mut Node) -> bool) -> bool {
        match self {
            Group::Sparse(v) => v.iter_mut().all(|e| f(e.0 as usize, &mut e.1, &mut e.2)),
            Group::Dense(d) => {
                for i in 0..GROUP_PAGES {
                    if d.has(i) && !f(i, &mut d.recs[i], &mut d.nodes[i]) {
                        return false;
                    }
                }
                true
            }
        }
    }
}

/// Every sampled page's record, by process and address.
#[derive(Debug, Clone, Default)]
pub(super) struct PageBook {
    procs: BTreeMap<Pid, BTreeMap<u64, Group>>,
}

fn split(addr: u64) -> (u64, usize) {
    (
        addr >> GROUP_SHIFT,
        (addr >> PAGE_SHIFT) as usize & (GROUP_PAGES - 1),
    )
}

fn join(group: u64, i: usize) -> u64 {
    group << GROUP_SHIFT | (i as u64) << PAGE_SHIFT
}

impl PageBook {
    /// The record of `pid`'s page at `addr` and its node, a new record (node 0) if none.
    pub(super) fn get_or_insert(&mut self, pid: Pid, addr: u64) -> (&mut PageRecord, &mut Node) {
        let (g, i) = split(addr);
        self.procs
            .entry(pid)
            .or_default()
            .entry(g)
            .or_insert_with(|| Group::Sparse(Vec::new()))
            .get_or_insert(i)
    }

    /// `f(address, record, node)` for each page of `pid` in address order, until it
    /// returns false.
    pub(super) fn each_of(
        &mut self,
        pid: Pid,
        mut f: impl FnMut(u64, &mut PageRecord, &mut Node) -> bool,
    ) -> bool {
        let Some(groups) = self.procs.get_mut(&pid) else {
            return true;
        };
        groups
            .iter_mut()
            .all(|(&g, group)| group.each(&mut |i, r, n| f(join(g, i), r, n)))
    }

    /// `f(pid, address, record, node)` for every page in (pid, address) order, until it
    /// returns false.
    pub(super) fn each(&mut self, mut f: impl FnMut(Pid, u64, &mut PageRecord, &mut Node) -> bool) {
        let pids: Vec<Pid> = self.procs.keys().copied().collect();
        for pid in pids {
            if !self.each_of(pid, |a, r, n| f(pid, a, r, n)) {
                return;
            }
        }
    }

    /// Forget `pid`'s pages, each given to `f` first, in address order.
    pub(super) fn remove_process(&mut self, pid: Pid, mut f: impl FnMut(&PageRecord, usize)) {
        self.each_of(pid, |_, r, n| {
            f(r, *n as usize);
            true
        });
        self.procs.remove(&pid);
    }

    /// Processes with pages.
    #[cfg(test)]
    pub(super) fn pids(&self) -> impl Iterator<Item = Pid> + '_ {
        self.procs.keys().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stable::{Bypass, PageState};
    use numabal_model::Tid;

    fn rec(t: u32) -> PageRecord {
        PageRecord::with(PageState::THREAD_PRIVATE, Some((Tid(t), 1)), Bypass::new(1))
    }

    /// The book against an ordered map of (pid, address): same records, same order,
    /// across the sparse-to-dense change and several groups and processes.
    #[test]
    fn matches_an_ordered_map() {
        let mut book = PageBook::default();
        let mut map: BTreeMap<(Pid, u64), (PageRecord, Node)> = BTreeMap::new();
        let mut x = 12345u64;
        for k in 0..20_000u32 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let pid = Pid(1 + (x >> 60) as u32 % 3);
            let addr = ((x >> 20) % 3000) << PAGE_SHIFT;
            let (r, n) = book.get_or_insert(pid, addr);
            let e = map.entry((pid, addr)).or_insert((PageRecord::NEW, 0));
            assert_eq!((*r, *n), *e);
            *r = rec(k);
            *n = (k % 4) as Node;
            *e = (*r, *n);
        }
        let mut seen = Vec::new();
        book.each(|p, a, r, n| {
            seen.push(((p, a), (*r, *n)));
            true
        });
        assert_eq!(seen, map.into_iter().collect::<Vec<_>>());
        // Early stop, and removal in address order.
        let mut first = Vec::new();
        book.each(|p, a, _, _| {
            first.push((p, a));
            first.len() < 5
        });
        assert_eq!(first, seen[..5].iter().map(|s| s.0).collect::<Vec<_>>());
        let mut freed = Vec::new();
        book.remove_process(Pid(2), |r, n| freed.push((*r, n as Node)));
        let of2: Vec<_> = seen
            .iter()
            .filter(|s| s.0.0 == Pid(2))
            .map(|s| s.1)
            .collect();
        assert_eq!(freed, of2);
        assert!(book.pids().all(|p| p != Pid(2)));
    }
}
