//! The thread-node and thread-thread tables of one root group (§IV-B).
//!
//! - thread-node: pages a thread faulted on, per node of the page ("when the NUMA-hinting
//!   fault occurs owing to Thread T1 on a page in Node 0, the entry value is incremented");
//! - thread-thread: shared faults, row = the faulting thread, column = the page's last
//!   accessor ("if T2 generates a NUMA-hinting fault on the page last faulted by T1, the
//!   entry (T2, T1) is increased").
//!
//! Faults increment a raw count for the current scan sequence; at the end of each scan
//! sequence the raw counts enter an exponential moving average with factor 0.5 and restart
//! from zero. Decisions read the averages. Rows are indexed by dense slots (the order in
//! which threads joined the root group), so iteration order is fixed.
//!
//! The averages are `f64`: halving and adding integers is exact in binary floating point
//! (until the values are many orders of magnitude apart), and IEEE arithmetic without
//! fused operations gives the same bits on every platform.

use super::tunables::EmaStart;

/// The EMA's smoothing factor (§IV-B): `ema = 0.5 * sample + 0.5 * ema`.
pub const EMA_FACTOR: f64 = 0.5;

#[derive(Debug, Clone)]
struct Row {
    node_raw: Vec<u64>,
    node_ema: Vec<f64>,
    peer_raw: Vec<u64>,
    peer_ema: Vec<f64>,
    /// Has been through a scan-sequence end.
    started: bool,
}

/// Both tables of a root group.
#[derive(Debug, Clone)]
pub struct ThreadTables {
    nodes: usize,
    rows: Vec<Row>,
}

impl ThreadTables {
    /// Empty tables for `nodes` nodes.
    pub fn new(nodes: usize) -> ThreadTables {
        ThreadTables {
            nodes,
            rows: Vec::new(),
        }
    }

    /// Number of thread slots.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// No thread yet.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Number of nodes (columns of the thread-node table).
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// A thread joins: a new row and column, zero. Returns its slot.
    pub fn add_thread(&mut self) -> usize {
        let n = self.rows.len();
        for r in &mut self.rows {
            r.peer_raw.push(0);
            r.peer_ema.push(0.0);
        }
        self.rows.push(Row {
            node_raw: vec![0; self.nodes],
            node_ema: vec![0.0; self.nodes],
            peer_raw: vec![0; n + 1],
            peer_ema: vec![0.0; n + 1],
            started: false,
        });
        n
    }

    /// A hinting fault by `slot` on a page on `page_node`.
    pub fn record_access(&mut self, slot: usize, page_node: usize) {
        self.rows[slot].node_raw[page_node] += 1;
    }

    /// A shared fault by `slot` on a page last faulted by `last`.
    pub fn record_shared(&mut self, slot: usize, last: usize) {
        self.rows[slot].peer_raw[last] += 1;
    }

    /// End of a scan sequence: every entry becomes `0.5 * raw + 0.5 * ema` and its raw count
    /// restarts. With [`EmaStart::FirstSample`], an entry whose thread (or either thread, for
    /// the thread-thread table) sees its first sequence end takes the raw count as it is.
    pub fn end_sequence(&mut self, start: EmaStart) {
        let fresh: Vec<bool> = self
            .rows
            .iter()
            .map(|r| start == EmaStart::FirstSample && !r.started)
            .collect();
        let ema = |old: f64, raw: u64, first: bool| {
            if first {
                raw as f64
            } else {
                EMA_FACTOR * raw as f64 + (1.0 - EMA_FACTOR) * old
            }
        };
        for (i, r) in self.rows.iter_mut().enumerate() {
            for (e, raw) in r.node_ema.iter_mut().zip(&mut r.node_raw) {
                *e = ema(*e, *raw, fresh[i]);
                *raw = 0;
            }
            for (j, (e, raw)) in r.peer_ema.iter_mut().zip(&mut r.peer_raw).enumerate() {
                *e = ema(*e, *raw, fresh[i] || fresh[j]);
                *raw = 0;
            }
            r.started = true;
        }
    }

    /// Thread-node average: pages `slot` touches on `node`.
    pub fn node_pages(&self, slot: usize, node: usize) -> f64 {
        self.rows[slot].node_ema[node]
    }

    /// Thread-thread average: entry (`slot`, `last`).
    pub fn pair(&self, slot: usize, last: usize) -> f64 {
        self.rows[slot].peer_ema[last]
    }

    /// Pages shared by two threads: both entries, (a, b) and (b, a), since a shared fault
    /// is counted under whichever of the two faulted second.
    pub fn shared_pages(&self, a: usize, b: usize) -> f64 {
        self.pair(a, b) + self.pair(b, a)
    }

    /// This sequence's raw thread-node count.
    pub fn node_raw(&self, slot: usize, node: usize) -> u64 {
        self.rows[slot].node_raw[node]
    }

    /// This sequence's raw thread-thread count.
    pub fn pair_raw(&self, slot: usize, last: usize) -> u64 {
        self.rows[slot].peer_raw[last]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(t: &mut ThreadTables, slot: usize, node: usize, n: u64) {
        for _ in 0..n {
            t.record_access(slot, node);
        }
    }

    fn share(t: &mut ThreadTables, slot: usize, last: usize, n: u64) {
        for _ in 0..n {
            t.record_shared(slot, last);
        }
    }

    fn node_row(t: &ThreadTables, slot: usize) -> Vec<f64> {
        (0..t.nodes()).map(|n| t.node_pages(slot, n)).collect()
    }

    #[test]
    fn ema_first_sample_start() {
        let mut t = ThreadTables::new(2);
        assert_eq!(t.add_thread(), 0);
        // Sequence 1: raw [44, 12]; the first sample starts the average.
        add(&mut t, 0, 0, 44);
        add(&mut t, 0, 1, 12);
        assert_eq!((t.node_raw(0, 0), t.node_raw(0, 1)), (44, 12));
        t.end_sequence(EmaStart::FirstSample);
        assert_eq!(node_row(&t, 0), vec![44.0, 12.0]);
        assert_eq!((t.node_raw(0, 0), t.node_raw(0, 1)), (0, 0));
        // Sequence 2: raw [20, 40] -> (20 + 44) / 2 = 32, (40 + 12) / 2 = 26.
        add(&mut t, 0, 0, 20);
        add(&mut t, 0, 1, 40);
        t.end_sequence(EmaStart::FirstSample);
        assert_eq!(node_row(&t, 0), vec![32.0, 26.0]);
        // Sequence 3: no faults -> halved.
        t.end_sequence(EmaStart::FirstSample);
        assert_eq!(node_row(&t, 0), vec![16.0, 13.0]);
        // Sequence 4: raw [1, 0] -> 8.5, 6.5 (no rounding).
        add(&mut t, 0, 0, 1);
        t.end_sequence(EmaStart::FirstSample);
        assert_eq!(node_row(&t, 0), vec![8.5, 6.5]);
    }

    #[test]
    fn ema_zero_start() {
        let mut t = ThreadTables::new(2);
        t.add_thread();
        add(&mut t, 0, 0, 44);
        add(&mut t, 0, 1, 12);
        t.end_sequence(EmaStart::Zero);
        assert_eq!(node_row(&t, 0), vec![22.0, 6.0]);
        add(&mut t, 0, 0, 20);
        add(&mut t, 0, 1, 40);
        t.end_sequence(EmaStart::Zero);
        assert_eq!(node_row(&t, 0), vec![21.0, 23.0]);
    }

    #[test]
    fn thread_thread_entries_and_late_joiners() {
        let mut t = ThreadTables::new(2);
        t.add_thread();
        t.add_thread();
        // T1 faults on pages last faulted by T0: entry (1, 0).
        share(&mut t, 1, 0, 5);
        share(&mut t, 0, 1, 3);
        assert_eq!((t.pair_raw(1, 0), t.pair_raw(0, 1)), (5, 3));
        t.end_sequence(EmaStart::FirstSample);
        assert_eq!((t.pair(1, 0), t.pair(0, 1)), (5.0, 3.0));
        assert_eq!(t.shared_pages(0, 1), 8.0);
        assert_eq!(t.shared_pages(1, 0), 8.0);
        // A third thread joins; its entries start from its first sample, even against
        // threads whose rows have started already.
        assert_eq!(t.add_thread(), 2);
        share(&mut t, 0, 2, 6);
        share(&mut t, 2, 1, 4);
        share(&mut t, 1, 0, 1);
        t.end_sequence(EmaStart::FirstSample);
        assert_eq!(t.pair(0, 2), 6.0);
        assert_eq!(t.pair(2, 1), 4.0);
        // Old pair: (1 + 5) / 2 and (0 + 3) / 2.
        assert_eq!((t.pair(1, 0), t.pair(0, 1)), (3.0, 1.5));
        // Next sequence: the new entries are averages now.
        share(&mut t, 0, 2, 2);
        t.end_sequence(EmaStart::FirstSample);
        assert_eq!((t.pair(0, 2), t.pair(2, 1)), (4.0, 2.0));
        // Zero start: a late joiner's entries start from 0 too.
        let mut z = ThreadTables::new(1);
        z.add_thread();
        z.end_sequence(EmaStart::Zero);
        z.add_thread();
        share(&mut z, 1, 0, 6);
        z.end_sequence(EmaStart::Zero);
        assert_eq!(z.pair(1, 0), 3.0);
    }
}
