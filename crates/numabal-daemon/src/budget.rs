//! The migration budget (`migrate_mb_s`): a token bucket of bytes.

/// Bytes of a base page.
pub const PAGE: f64 = 4096.0;

/// A token bucket of bytes: `rate` bytes/s, at most one second's worth banked; a
/// synchronous call that overdraws it leaves a debt the next calls wait out.
#[derive(Debug, Clone)]
pub struct RateLimit {
    rate: f64,
    tokens: f64,
    last_ns: u64,
}

impl RateLimit {
    /// `mb_s` MiB/s (0: no migrations at all).
    pub fn new(mb_s: f64) -> RateLimit {
        let rate = mb_s * 1024.0 * 1024.0;
        RateLimit {
            rate,
            tokens: rate,
            last_ns: 0,
        }
    }

    /// `mb_s` MiB/s from now on; what is banked is kept, up to a second's worth of the new
    /// rate (a debt stays a debt).
    pub fn set_rate(&mut self, mb_s: f64) {
        self.rate = mb_s * 1024.0 * 1024.0;
        self.tokens = self.tokens.min(self.rate);
    }

    fn refill(&mut self, now_ns: u64) {
        let dt = now_ns.saturating_sub(self.last_ns) as f64 / 1e9;
        self.last_ns = self.last_ns.max(now_ns);
        self.tokens = (self.tokens + dt * self.rate).min(self.rate);
    }

    /// Whole pages that may move now.
    pub fn pages(&mut self, now_ns: u64) -> usize {
        self.refill(now_ns);
        (self.tokens.max(0.0) / PAGE) as usize
    }

    /// Charge `bytes` moved.
    pub fn charge(&mut self, bytes: f64) {
        self.tokens -= bytes;
    }
}

/// How many of a call's addresses, each standing for the base pages `pages` gives, fit in
/// a budget of `budget` pages, from the first: the rest is left for a later pass.
pub fn within_budget(pages: impl IntoIterator<Item = u64>, budget: u64) -> usize {
    let mut left = budget;
    (pages.into_iter())
        .take_while(|&p| match left.checked_sub(p) {
            Some(l) => {
                left = l;
                true
            }
            None => false,
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_page_fits_the_budget_whole_or_waits() {
        assert_eq!(within_budget([512, 1, 512], 1024), 2);
        assert_eq!(within_budget([512, 1, 511], 1024), 3);
        assert_eq!(within_budget([512], 511), 0);
        assert_eq!(within_budget([], 0), 0);
    }

    #[test]
    fn the_rate_limit_refills_at_its_rate_and_caps_at_a_second() {
        let mut r = RateLimit::new(4.0); // 1024 pages/s
        assert_eq!(r.pages(0), 1024);
        r.charge(1024.0 * 4096.0);
        assert_eq!(r.pages(0), 0);
        assert_eq!(r.pages(500_000_000), 512);
        assert_eq!(r.pages(10_000_000_000), 1024);
        // A synchronous call overdraws: the debt is waited out.
        r.charge(2048.0 * 4096.0);
        assert_eq!(r.pages(10_500_000_000), 0);
        assert_eq!(r.pages(11_500_000_000), 512);
        // Asked again at an earlier time (a caller's clock is never behind itself, but a
        // simulated call may be charged late): no refill, no underflow.
        assert_eq!(r.pages(11_000_000_000), 512);
        assert_eq!(RateLimit::new(0.0).pages(5_000_000_000), 0);
    }
}
