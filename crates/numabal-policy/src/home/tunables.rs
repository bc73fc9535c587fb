//! Tunables of `home-node`: one set for every machine and workload (issue 18), each with
//! its range.

use crate::util::check_ranges;
use numabal_model::InputError;
use numabal_model::scenario::PolicySpec;
use serde::{Deserialize, Serialize};

/// Tunables of `home-node`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Tunables {
    /// Time between passes, ms.
    pub interval_ms: u64,
    /// A thread is busy when it ran at least this share of a pass, percent.
    pub busy_pct: u64,
    /// Memory is watched in chunks of this many KiB (a transparent huge page by default):
    /// the unit of sharing and of page moves.
    pub chunk_kib: u64,
    /// A process shares its memory among its threads when at least this share of its
    /// chunks sampled more than once were sampled by two threads, percent. A private
    /// process's threads meet only in the chunks at the edges of their slices (2-11% of
    /// the chunks of numa02 and numa02-like); threads streaming through a buffer they
    /// share meet in 26-86% of its chunks under soft-dirty sampling, which sees a page's
    /// first writer after each clear only (numa01-like, live and simulated).
    pub shared_pct: u64,
    /// Chunks sampled more than once needed before a process is called sharing or private.
    pub classify_chunks: u64,
    /// A multi-threaded process not classified this long after it became busy is placed as
    /// if it shared its memory, s.
    pub classify_wait_s: u64,
    /// Samples older than this no longer speak for a chunk, s.
    pub window_s: u64,
    /// Memory moved by `move_pages` at most this fast, MiB/s (the daemon's `migrate_mb_s`
    /// may slow it further; chunks not moved in a pass wait for the next).
    pub move_mb_s: u64,
    // Mechanism switches, 1 (on) in the one parameter set: 0 turns a mechanism off, for
    // the ablation runs (scripts/home_node_ablation.py), as the kernel's sched_features.
    /// A private multi-threaded process is split over the nodes when the machine has room
    /// (0: placed whole, as every other process).
    pub split_private: u64,
    /// Memory follows the threads: whole processes' memory gathered, split ones' chunks
    /// sent to their threads' nodes (0: threads placed, memory left where it is).
    pub move_memory: u64,
    /// A chunk follows one node only (0: it follows whichever node's threads sampled it).
    pub follow_once: u64,
    /// Processes are sampled only while the policy needs to learn about them (0: every
    /// managed process all the time).
    pub sample_selectively: u64,
    /// A split private process whose followed chunks stray to threads of other nodes is
    /// placed again as a sharer, on the node holding most of its memory (0: it stays
    /// split).
    pub revise_split: u64,
    /// A thread seen for the first time that started since the last pass is judged busy
    /// by its CPU time over its age (0: every thread waits for its second pass).
    pub first_sight: u64,
    /// On a crowded machine (busy threads fill every CPU) a multi-threaded process is
    /// placed at once, its class left to decide only where its memory goes (0: it waits
    /// for its class or `classify_wait_s`, as on a machine with room).
    pub place_crowded: u64,
    /// A split process not known to be private whose memory lies concentrated on one node
    /// has that node's pages spread over its threads' nodes, once (0: left where they are).
    pub spread_concentrated: u64,
    /// Memory is concentrated (`spread_concentrated`) when more than this percentage of it
    /// lies beyond its busy threads' share of their nodes.
    pub concentrated_pct: u64,
    /// Split processes are shared out again when one has fewer threads awake (that ran a
    /// tenth of the pass) than it was shared out with busy, or a node has more busy threads
    /// homed than CPUs while another has CPUs to spare (0: only when a busy thread has no
    /// node).
    pub reshare_split: u64,
    /// A pass that met threads it could not judge (seen for the first time, having run
    /// before the last pass) is followed by the next a quarter of `interval_ms` later
    /// (0: a whole interval later).
    pub second_look: u64,
}

impl Default for Tunables {
    fn default() -> Self {
        Tunables {
            interval_ms: 1000,
            busy_pct: 50,
            chunk_kib: 2048,
            shared_pct: 20,
            classify_chunks: 16,
            classify_wait_s: 5,
            window_s: 10,
            move_mb_s: 256,
            split_private: 1,
            move_memory: 1,
            follow_once: 1,
            sample_selectively: 1,
            revise_split: 1,
            first_sight: 1,
            place_crowded: 1,
            spread_concentrated: 1,
            concentrated_pct: 12,
            reshare_split: 1,
            second_look: 1,
        }
    }
}

/// Tunable names, in declaration order.
pub const TUNABLES: &[&str] = &[
    "interval_ms",
    "busy_pct",
    "chunk_kib",
    "shared_pct",
    "classify_chunks",
    "classify_wait_s",
    "window_s",
    "move_mb_s",
    "split_private",
    "move_memory",
    "follow_once",
    "sample_selectively",
    "revise_split",
    "first_sight",
    "place_crowded",
    "spread_concentrated",
    "concentrated_pct",
    "reshare_split",
    "second_look",
];

impl Tunables {
    /// Parse a policy table's tunables; unknown keys and out-of-range values are input
    /// errors naming the key and what is allowed.
    pub fn from_spec(spec: &PolicySpec) -> Result<Tunables, InputError> {
        let t: Tunables = spec.parse_tunables(TUNABLES)?;
        check_ranges(&[
            ("interval_ms", t.interval_ms, 10, 3_600_000),
            ("busy_pct", t.busy_pct, 1, 100),
            ("chunk_kib", t.chunk_kib, 4, 1 << 20),
            ("shared_pct", t.shared_pct, 1, 100),
            ("classify_chunks", t.classify_chunks, 1, 1 << 20),
            ("classify_wait_s", t.classify_wait_s, 0, 3600),
            ("window_s", t.window_s, 1, 3600),
            ("move_mb_s", t.move_mb_s, 1, 1_000_000),
            ("split_private", t.split_private, 0, 1),
            ("move_memory", t.move_memory, 0, 1),
            ("follow_once", t.follow_once, 0, 1),
            ("sample_selectively", t.sample_selectively, 0, 1),
            ("revise_split", t.revise_split, 0, 1),
            ("first_sight", t.first_sight, 0, 1),
            ("place_crowded", t.place_crowded, 0, 1),
            ("spread_concentrated", t.spread_concentrated, 0, 1),
            ("concentrated_pct", t.concentrated_pct, 1, 100),
            ("reshare_split", t.reshare_split, 0, 1),
            ("second_look", t.second_look, 0, 1),
        ])
        .map_err(|(k, msg)| InputError::new(&spec.label, format!("policy.{k}"), msg))?;
        if !t.chunk_kib.is_power_of_two() {
            return Err(InputError::new(
                &spec.label,
                "policy.chunk_kib",
                format!("is {} (allowed: a power of two, 4 to 1048576)", t.chunk_kib),
            ));
        }
        Ok(t)
    }

    /// `chunk_kib` as a shift of a byte address.
    pub fn chunk_shift(&self) -> u32 {
        (self.chunk_kib * 1024).trailing_zeros()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::test::spec;

    #[test]
    fn defaults_ranges_and_chunk_size() {
        let t = Tunables::from_spec(&spec("home-node", "")).unwrap();
        assert_eq!(t, Tunables::default());
        assert_eq!(t.chunk_shift(), 21);
        let e = Tunables::from_spec(&spec("home-node", "busy_pct = 0")).unwrap_err();
        assert!(e.to_string().contains("policy.busy_pct"), "{e}");
        assert!(e.to_string().contains("allowed: 1 to 100"), "{e}");
        let e = Tunables::from_spec(&spec("home-node", "chunk_kib = 1000")).unwrap_err();
        assert!(e.to_string().contains("a power of two"), "{e}");
        let e = Tunables::from_spec(&spec("home-node", "move_memory = 2")).unwrap_err();
        assert!(e.to_string().contains("allowed: 0 to 1"), "{e}");
        let e = Tunables::from_spec(&spec("home-node", "speed = 1")).unwrap_err();
        assert!(e.to_string().contains("unknown tunable"), "{e}");
    }
}
