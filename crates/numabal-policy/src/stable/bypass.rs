//! Selective profiling (§IV-A): the per-page unmapping bypass counter.
//!
//! The counter is three bits holding an exponent n ("the number of unmapping bypasses can
//! be up to 2^n times, where n is the value represented by the three bits"), so "doubling"
//! it is n + 1 and the largest interval is 2^7 = 128 times the base. A page with counter n
//! is unmapped in one scan sequence out of `base << n`; a page in transition is unmapped in
//! the next scan sequence whatever its counter.

/// The largest value three bits hold.
pub const BYPASS_MAX: u8 = 7;

/// A page's unmapping bypass counter (the exponent n, 0..=7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Bypass(u8);

impl Bypass {
    /// A clear counter: the page is unmapped every `base` scan sequences.
    pub const CLEAR: Bypass = Bypass(0);

    /// The counter with value `n` (saturating at [`BYPASS_MAX`]).
    pub fn new(n: u8) -> Bypass {
        Bypass(n.min(BYPASS_MAX))
    }

    /// The three-bit value.
    pub fn value(self) -> u8 {
        self.0
    }

    /// A loop edge: the same fault type again doubles the number of bypassed scans;
    /// saturates at three bits.
    pub fn doubled(self) -> Bypass {
        Bypass((self.0 + 1).min(BYPASS_MAX))
    }

    /// Scan sequences from one unmapping of the page to the next: `base << n`.
    pub fn interval(self, base: u32) -> u64 {
        u64::from(base) << self.0
    }

    /// Whether scan sequence `seq` unmaps a settled (not in-transition) page with this
    /// counter. `page_key` staggers pages with the same interval over the sequences (the
    /// backend passes e.g. the page's index in its mapping) so that they do not all fault in
    /// the same sequence; 0 aligns every page on multiples of its interval.
    pub fn eligible(self, base: u32, seq: u64, page_key: u64) -> bool {
        let i = self.interval(base);
        (seq % i + page_key % i).is_multiple_of(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubling_saturates_at_three_bits() {
        let mut b = Bypass::CLEAR;
        let mut seen = vec![];
        for _ in 0..9 {
            seen.push((b.value(), b.interval(1)));
            b = b.doubled();
        }
        assert_eq!(
            seen,
            vec![
                (0, 1),
                (1, 2),
                (2, 4),
                (3, 8),
                (4, 16),
                (5, 32),
                (6, 64),
                (7, 128),
                (7, 128)
            ]
        );
        assert_eq!(Bypass::new(9), Bypass::new(7));
    }

    #[test]
    fn interval_scales_with_the_base() {
        assert_eq!(Bypass::new(0).interval(3), 3);
        assert_eq!(Bypass::new(3).interval(3), 24);
        assert_eq!(Bypass::new(7).interval(1 << 20), 1 << 27);
    }

    #[test]
    fn eligible_sequences() {
        let which = |b: Bypass, base, key| -> Vec<u64> {
            (0..20).filter(|&s| b.eligible(base, s, key)).collect()
        };
        // Clear counter, base 1: every scan sequence unmaps the page.
        assert_eq!(which(Bypass::CLEAR, 1, 0), (0..20).collect::<Vec<_>>());
        // n = 2: one sequence in 4 (three bypassed between two unmappings).
        assert_eq!(which(Bypass::new(2), 1, 0), vec![0, 4, 8, 12, 16]);
        // Page key 1 shifts it by one sequence backwards: (seq + 1) % 4 == 0.
        assert_eq!(which(Bypass::new(2), 1, 1), vec![3, 7, 11, 15, 19]);
        // Base 3, n = 1: every 6th sequence; key 10 = 4 mod 6.
        assert_eq!(which(Bypass::new(1), 3, 10), vec![2, 8, 14]);
        // Large keys and sequences do not overflow.
        assert!(Bypass::new(7).eligible(1, u64::MAX, 1));
    }
}
