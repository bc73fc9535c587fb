//! Per-VMA scan state (`struct vma_numab_state`, v6.4-v6.10 shape) and the PID-activity
//! filter `vma_is_accessed` (kernel/sched/fair.c, include/linux/mm.h).

use super::version::KernelVersion;

/// `GOLDEN_RATIO_32` of `hash_32`.
const GOLDEN_RATIO_32: u32 = 0x61C8_8647;

/// `hash_32(pid, ilog2(BITS_PER_LONG))`: the PID's bit in a 64-bit `pids_active` word.
pub fn pid_bit(pid: u32) -> u64 {
    1u64 << (pid.wrapping_mul(GOLDEN_RATIO_32) >> (32 - 6))
}

/// `vma->numab_state`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmaNumab {
    /// Jiffies (here ns) before which a new VMA is not scanned (`scan_delay`).
    pub next_scan: u64,
    /// When the PID windows rotate next.
    pub pids_active_reset: u64,
    /// [previous window, current window] PID-hash bitmaps.
    pub pids_active: [u64; 2],
    /// `mm->numa_scan_seq` when the VMA was first seen.
    pub start_scan_seq: u64,
    /// `mm->numa_scan_seq` of the pass that last completed this VMA (`i64` for the
    /// kernel's `seq - 1` initialisation at sequence 0).
    pub prev_scan_seq: i64,
}

/// Why the scanner skipped a VMA (`enum numa_vmaskip_reason`, tracepoint names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SkipReason {
    /// Not migratable, or its policy lacks `MPOL_F_MOF`.
    Unsuitable,
    /// A read-only file mapping.
    SharedRo,
    /// No access rights.
    Inaccessible,
    /// Still within the new VMA's scan delay.
    ScanDelay,
    /// Not accessed by the scanning task recently.
    PidInactive,
    /// Partially scanned: finished regardless of the PID filter.
    IgnorePidInactive,
    /// Already completed in this pass.
    SeqCompleted,
}

impl SkipReason {
    /// Tracepoint reason string.
    pub fn name(self) -> &'static str {
        match self {
            SkipReason::Unsuitable => "unsuitable",
            SkipReason::SharedRo => "shared_ro",
            SkipReason::Inaccessible => "inaccessible",
            SkipReason::ScanDelay => "scan_delay",
            SkipReason::PidInactive => "pid_inactive",
            SkipReason::IgnorePidInactive => "ignore_pid_inactive",
            SkipReason::SeqCompleted => "seq_completed",
        }
    }
}

impl VmaNumab {
    /// First sight by the scanner at `now` (ns) with the mm at `seq`.
    pub fn new(now: u64, seq: u64, scan_delay_ns: u64) -> VmaNumab {
        let next_scan = now + scan_delay_ns;
        VmaNumab {
            next_scan,
            pids_active_reset: next_scan + 4 * scan_delay_ns,
            pids_active: [0, 0],
            start_scan_seq: seq,
            prev_scan_seq: seq as i64 - 1,
        }
    }

    /// The PID windows rotate every `VMA_PID_RESET_PERIOD` = 4 x scan_delay (checked on
    /// every visit once the mm completed a pass).
    pub fn maybe_rotate(&mut self, now: u64, mm_seq: u64, scan_delay_ns: u64) {
        if mm_seq != 0 && now > self.pids_active_reset {
            self.pids_active_reset += 4 * scan_delay_ns;
            self.pids_active[0] = self.pids_active[1];
            self.pids_active[1] = 0;
        }
    }

    /// `vma_set_access_pid_bit`, from the hinting-fault handler.
    pub fn record_pid(&mut self, pid: u32) {
        self.pids_active[1] |= pid_bit(pid);
    }

    /// `vma_is_accessed(mm, vma)` for the scanning task `pid` of a process with
    /// `nr_threads` threads; `offset_inside` is `mm->numa_scan_offset > vma->vm_start`.
    /// Returns whether to scan and, when it is because a partial scan is finished, the
    /// informational reason.
    /// `kernel` gates the rules by the release that brought them (`super::version`).
    pub fn is_accessed(
        &self,
        mm_seq: u64,
        pid: u32,
        offset_inside: bool,
        nr_threads: u64,
        kernel: KernelVersion,
    ) -> (bool, Option<SkipReason>) {
        // The first two passes scan it unconditionally: the mm's before 6.8, the VMA's since.
        let first = if kernel.vma_start_scan_seq() {
            self.start_scan_seq
        } else {
            0
        };
        if mm_seq.saturating_sub(first) < 2 {
            return (true, None);
        }
        let pids = self.pids_active[0] | self.pids_active[1];
        if pids & pid_bit(pid) != 0 {
            return (true, None);
        }
        // A scan of this VMA is in progress: finish it (6.7).
        if offset_inside && kernel.scan_complete_vmas() {
            return (true, Some(SkipReason::IgnorePidInactive));
        }
        // Anti-starvation: not scanned for more passes than there are threads to help (6.12).
        if kernel.vma_starvation_fix() && mm_seq as i64 > self.prev_scan_seq + nr_threads as i64 {
            return (true, None);
        }
        (false, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: u64 = 1_000_000_000; // scan_delay 1 s
    const K: KernelVersion = KernelVersion::NEWEST;

    #[test]
    fn pid_hash_is_hash_32() {
        // hash_32(1, 6) = 0x61C88647 >> 26 = 24; hash_32(2, 6) = 0xC3910C8E >> 26 = 48.
        assert_eq!(pid_bit(1), 1 << 24);
        assert_eq!(pid_bit(2), 1 << 48);
        assert_eq!(pid_bit(0), 1);
    }

    #[test]
    fn pid_filter_windows_forced_and_starvation() {
        let mut v = VmaNumab::new(0, 0, D);
        assert_eq!(v.next_scan, D);
        assert_eq!(v.pids_active_reset, 5 * D);
        assert_eq!(v.prev_scan_seq, -1);
        // Passes 0 and 1 after creation: always scanned, whoever asks.
        assert!(v.is_accessed(0, 7, false, 4, K).0);
        assert!(v.is_accessed(1, 7, false, 4, K).0);
        // Pass 2: pid 7 never faulted here, no scan in progress, prev_scan_seq 1 (completed
        // in pass 1): 2 > 1 + 4 is false -> skip.
        v.prev_scan_seq = 1;
        assert_eq!(v.is_accessed(2, 7, false, 4, K), (false, None));
        // A hinting fault by pid 7 makes it active in the current window.
        v.record_pid(7);
        assert!(v.is_accessed(2, 7, false, 4, K).0);
        // Rotation at t > 5 s moves it to the previous window: still active...
        v.maybe_rotate(5 * D + 1, 2, D);
        assert_eq!(v.pids_active[1], 0);
        assert!(v.is_accessed(2, 7, false, 4, K).0);
        assert_eq!(v.pids_active_reset, 9 * D);
        // ...and after the next rotation it is forgotten.
        v.maybe_rotate(9 * D + 1, 2, D);
        assert_eq!(v.is_accessed(2, 7, false, 4, K), (false, None));
        // No rotation before the mm completed a pass.
        let mut w = VmaNumab::new(0, 0, D);
        w.record_pid(3);
        w.maybe_rotate(100 * D, 0, D);
        assert_ne!(w.pids_active[1], 0);
        // A partial scan is finished regardless.
        assert_eq!(
            v.is_accessed(2, 7, true, 4, K),
            (true, Some(SkipReason::IgnorePidInactive))
        );
        // Anti-starvation: seq 6 > prev 1 + 4 threads.
        assert!(v.is_accessed(6, 7, false, 4, K).0);
        assert!(!v.is_accessed(5, 7, false, 4, K).0);
        // A VMA that appeared at pass 10 is scanned unconditionally in passes 10 and 11.
        let n = VmaNumab::new(0, 10, D);
        assert!(n.is_accessed(11, 99, false, 1, K).0);
    }
}
