//! What a process's sampled accesses say, chunk by chunk: which threads touch a chunk (one:
//! private to it; two or more: shared) and where its pages were seen.
//!
//! A chunk keeps its last sampling thread and the last other thread before it, with their
//! times; a sample older than the window no longer speaks for the chunk. Two threads in the
//! window that both still run make the chunk shared, whatever their nodes.

use crate::api::AccessSample;
use numabal_model::Tid;
use std::collections::BTreeMap;

/// One chunk's samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Chunk {
    /// The last sampling thread, and when (ns).
    last: (Tid, u64),
    /// The last other thread before it, and when.
    other: Option<(Tid, u64)>,
    /// Samples since the chunk was first sampled in the window.
    count: u32,
    /// Node of the last sampled page, or the node the chunk was sent to since.
    page_node: usize,
}

/// The chunks of one process.
#[derive(Debug, Clone, Default)]
pub struct Chunks {
    map: BTreeMap<u64, Chunk>,
    /// The node each chunk was sent to follow its threads, kept past the window: a chunk
    /// follows one node only (sent again there if its pages are still seen elsewhere).
    /// Its threads seen on another node later say it is used from two nodes over time
    /// (threads streaming through memory they share): it stays where it is, as
    /// Stable-NUMA's pages that would move a second time become shared and stay.
    followed: BTreeMap<u64, usize>,
}

/// How a process's chunks are shared, over the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sharing {
    /// Chunks sampled more than once.
    pub multi: u64,
    /// Of those, chunks sampled by two threads.
    pub shared: u64,
    /// Threads the chunks name (at most two per chunk: the last and the other).
    pub threads: u64,
}

impl Chunks {
    /// Add a sample taken at `now` (ns); `shift` is the chunk size's.
    pub fn record(&mut self, s: &AccessSample, shift: u32, now: u64) {
        let key = s.addr >> shift;
        let c = self.map.entry(key).or_insert(Chunk {
            last: (s.tid, now),
            other: None,
            count: 0,
            page_node: s.page_node,
        });
        if c.last.0 != s.tid {
            c.other = Some(c.last);
        }
        c.last = (s.tid, now);
        c.count += 1;
        c.page_node = s.page_node;
    }

    /// Forget chunks whose last sample is older than `window` ns; a chunk's other thread
    /// older than that stops counting.
    pub fn expire(&mut self, now: u64, window: u64) {
        let old = |t: u64| t + window < now;
        self.map.retain(|_, c| !old(c.last.1));
        for c in self.map.values_mut() {
            if c.other.is_some_and(|o| old(o.1)) {
                c.other = None;
                c.count = 1;
            }
        }
    }

    /// The sharing of the chunks now held. A chunk is shared when its two threads both
    /// still run: one that has gone idle (`idle`), such as a main thread that first
    /// touched every buffer and now waits for its workers, no longer uses it.
    pub fn sharing(&self, idle: impl Fn(Tid) -> bool) -> Sharing {
        let mut s = Sharing::default();
        let mut tids = std::collections::BTreeSet::new();
        for c in self.map.values() {
            tids.insert(c.last.0);
            tids.extend(c.other.map(|o| o.0));
            if c.count >= 2 {
                s.multi += 1;
                let both = c.other.is_some_and(|o| !idle(o.0)) && !idle(c.last.0);
                s.shared += u64::from(both);
            }
        }
        s.threads = tids.len() as u64;
        s
    }

    /// Chunks to send to their threads' node: every thread sampling the chunk in the
    /// window has the same node (`node_of`, `None`: not placed), the chunk's pages were
    /// last seen elsewhere, and it never followed threads of another node. `min_samples`
    /// passes at least. Returns (chunk key, node).
    pub fn to_follow(
        &self,
        min_samples: u32,
        node_of: impl Fn(Tid) -> Option<usize>,
    ) -> Vec<(u64, usize)> {
        let mut out = Vec::new();
        for (&key, c) in &self.map {
            if c.count < min_samples {
                continue;
            }
            let Some(node) = node_of(c.last.0) else {
                continue;
            };
            if c.other.is_some_and(|o| node_of(o.0) != Some(node)) {
                continue;
            }
            if self.followed.get(&key).is_some_and(|&n| n != node) {
                continue;
            }
            if c.page_node != node {
                out.push((key, node));
            }
        }
        out
    }

    /// Of the chunks sent to follow their threads and still sampled in the window: how
    /// many, and how many of those a thread of another node (`node_of`) sampled. Threads
    /// that stream through memory they share look private to soft-dirty sampling (a
    /// page's first writer after a clear takes its sample) until their positions shift
    /// between clears; once each has its node, their chunks stray from it.
    pub fn strays(&self, node_of: impl Fn(Tid) -> Option<usize>) -> (u64, u64) {
        let (mut followed, mut strayed) = (0, 0);
        for (key, c) in &self.map {
            let Some(&n) = self.followed.get(key) else {
                continue;
            };
            let elsewhere = |t: Tid| node_of(t).is_some_and(|m| m != n);
            followed += 1;
            strayed += u64::from(elsewhere(c.last.0) || c.other.is_some_and(|o| elsewhere(o.0)));
        }
        (followed, strayed)
    }

    /// Of the chunks sampled more than once in the window: how many, and how many two
    /// threads homed on different nodes (`node_of`) sampled. A process split as private
    /// whose threads still meet in its chunks after they went to their nodes shares its
    /// memory after all; to soft-dirty sampling, threads streaming through a buffer they
    /// share meet in a chunk only when a clear falls where the other passes next.
    pub fn across(&self, node_of: impl Fn(Tid) -> Option<usize>) -> (u64, u64) {
        let (mut multi, mut across) = (0, 0);
        for c in self.map.values().filter(|c| c.count >= 2) {
            multi += 1;
            let (Some(a), Some(b)) = (node_of(c.last.0), c.other.and_then(|o| node_of(o.0))) else {
                continue;
            };
            across += u64::from(a != b);
        }
        (multi, across)
    }

    /// Chunks off their node of an interleave over `nodes` (chunk key modulo their count):
    /// (chunk key, node).
    pub fn to_interleave(&self, nodes: &[usize]) -> Vec<(u64, usize)> {
        if nodes.is_empty() {
            return Vec::new();
        }
        (self.map.iter())
            .map(|(&key, c)| (key, c.page_node, nodes[(key % nodes.len() as u64) as usize]))
            .filter(|&(_, at, node)| at != node)
            .map(|(key, _, node)| (key, node))
            .collect()
    }

    /// The chunk's pages were sent to `node` to follow its threads.
    pub fn followed(&mut self, key: u64, node: usize) {
        self.followed.insert(key, node);
        self.sent(key, node);
    }

    /// The chunk's pages were sent to `node`.
    pub fn sent(&mut self, key: u64, node: usize) {
        if let Some(c) = self.map.get_mut(&key) {
            c.page_node = node;
        }
    }

    /// Chunks held.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// No chunk held.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numabal_model::Pid;

    fn s(tid: u32, addr: u64, page_node: usize) -> AccessSample {
        AccessSample {
            tid: Tid(tid),
            pid: Pid(1),
            node: 0,
            addr,
            page_node,
        }
    }

    const MB2: u64 = 1 << 21;

    #[test]
    fn one_thread_is_private_two_are_shared_until_the_window_passes() {
        let mut c = Chunks::default();
        c.record(&s(1, 0, 0), 21, 0);
        c.record(&s(1, 4096, 0), 21, 1);
        c.record(&s(2, MB2, 0), 21, 1);
        c.record(&s(3, MB2 + 8192, 0), 21, 2);
        assert_eq!(
            c.sharing(|_| false),
            Sharing {
                multi: 2,
                shared: 1,
                threads: 3
            }
        );
        // Thread 2 went idle: the second chunk is thread 3's alone.
        assert_eq!(c.sharing(|t| t == Tid(2)).shared, 0);
        // Thread 3's sample is 10 ns old, thread 2's 11: with a window of 10 only thread 3
        // speaks for the second chunk; the first chunk's last sample (1) is gone.
        c.expire(12, 10);
        assert_eq!(c.len(), 1);
        assert_eq!(
            c.sharing(|_| false),
            Sharing {
                threads: 1,
                ..Sharing::default()
            }
        );
    }

    #[test]
    fn chunks_follow_their_threads_node_unless_threads_of_two_nodes_touch_them() {
        let mut c = Chunks::default();
        c.record(&s(1, 0, 0), 21, 0); // thread 1 (node 1), page on node 0: follows
        c.record(&s(2, MB2, 1), 21, 0); // thread 2 (node 1), page already there
        c.record(&s(1, 2 * MB2, 0), 21, 0); // threads 1 and 3: nodes 1 and 0, stays
        c.record(&s(3, 2 * MB2, 0), 21, 0);
        c.record(&s(4, 3 * MB2, 0), 21, 0); // thread 4 not placed: stays
        let node_of = |t: Tid| match t.0 {
            1 | 2 => Some(1),
            3 => Some(0),
            _ => None,
        };
        assert_eq!(c.to_follow(1, node_of), vec![(0, 1)]);
        // Interleaved over nodes 1 and 0: even chunks to node 1, odd ones to node 0; only
        // chunk 3 is where it belongs.
        assert_eq!(c.to_interleave(&[1, 0]), vec![(0, 1), (1, 0), (2, 1)]);
        assert_eq!(c.to_interleave(&[]), vec![]);
        assert_eq!(c.to_follow(2, node_of), vec![]);
        c.sent(0, 1);
        assert_eq!(c.to_follow(1, node_of), vec![]);
    }

    #[test]
    fn chunks_sampled_by_threads_of_two_nodes_are_across() {
        let mut c = Chunks::default();
        c.record(&s(1, 0, 0), 21, 0); // threads 1 and 3: nodes 1 and 0
        c.record(&s(3, 4096, 0), 21, 1);
        c.record(&s(1, MB2, 0), 21, 0); // threads 1 and 2, both node 1
        c.record(&s(2, MB2, 0), 21, 1);
        c.record(&s(1, 2 * MB2, 0), 21, 0); // thread 1 twice
        c.record(&s(1, 2 * MB2, 0), 21, 1);
        c.record(&s(4, 3 * MB2, 0), 21, 0); // threads 4 (not placed) and 3
        c.record(&s(3, 3 * MB2, 0), 21, 1);
        c.record(&s(3, 4 * MB2, 0), 21, 1); // sampled once: says nothing
        let node_of = |t: Tid| match t.0 {
            1 | 2 => Some(1),
            3 => Some(0),
            _ => None,
        };
        assert_eq!(c.across(node_of), (4, 1));
        assert_eq!(c.across(|_| Some(0)), (4, 0));
    }
}
