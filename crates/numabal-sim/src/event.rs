//! The event queue: a total order on (time, kind, source, sequence), as shadow and
//! nexosim do, so equal-time events always pop in the same order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What happens. The variant order is part of the total order: at equal times, process
/// starts come first, then wakeups, then the scheduler tick, then the policy's callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum EventKind {
    /// Start instance `instance` of `[[process]]` number `spec`.
    ProcessStart {
        /// Index in the workload's process list.
        spec: u32,
        /// Instance number.
        instance: u32,
    },
    /// Start a group that has a `start_s` delay.
    GroupStart {
        /// Process index in the simulation.
        proc_idx: u32,
        /// Group index in the process.
        group: u32,
    },
    /// A sleeping thread wakes up.
    Wake {
        /// Thread index.
        tid: u32,
    },
    /// Scheduler tick on every CPU.
    Tick,
    /// The policy's periodic callback.
    PolicyTick,
    /// Record `numastat -p` (per-process memory per node).
    NumastatSample {
        /// The `numastat_every_s` series (it schedules its next sample), not one of
        /// `numastat_at_s`.
        periodic: bool,
    },
    /// Record what `/proc` shows of NUMA balancing (`sim.proc_every_s`).
    ProcSample,
}

/// An event with its ordering key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Event {
    /// Simulated time, ns.
    pub time: u64,
    /// Kind (ordered).
    pub kind: EventKind,
    /// Insertion sequence: FIFO among otherwise equal events.
    pub seq: u64,
}

/// Min-queue of events.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<Event>>,
    seq: u64,
    last_popped: u64,
}

impl EventQueue {
    /// Schedule an event. Time never goes backwards.
    pub fn push(&mut self, time: u64, kind: EventKind) {
        debug_assert!(time >= self.last_popped, "event scheduled in the past");
        let time = time.max(self.last_popped);
        self.seq += 1;
        self.heap.push(Reverse(Event {
            time,
            kind,
            seq: self.seq,
        }));
    }

    /// Earliest event time.
    pub fn peek_time(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse(e)| e.time)
    }

    /// Remove the earliest event.
    pub fn pop(&mut self) -> Option<Event> {
        let e = self.heap.pop().map(|Reverse(e)| e)?;
        self.last_popped = e.time;
        Some(e)
    }

    /// Events pending.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// No events pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn total_order() {
        let mut q = EventQueue::default();
        q.push(10, EventKind::Tick);
        q.push(10, EventKind::Wake { tid: 3 });
        q.push(5, EventKind::Tick);
        q.push(10, EventKind::Wake { tid: 1 });
        q.push(
            10,
            EventKind::ProcessStart {
                spec: 0,
                instance: 0,
            },
        );
        let order: Vec<EventKind> = std::iter::from_fn(|| q.pop().map(|e| e.kind)).collect();
        assert_eq!(
            order,
            vec![
                EventKind::Tick,
                EventKind::ProcessStart {
                    spec: 0,
                    instance: 0
                },
                EventKind::Wake { tid: 1 },
                EventKind::Wake { tid: 3 },
                EventKind::Tick
            ]
        );
    }
}
