//! Wall-clock deadlines that hold at every queue length.
//!
//! Reading the clock costs about 25 ns; one unit of search work (a branch-and-bound node, a
//! local-search evaluation) costs from a microsecond on a 10-job queue to milliseconds on a
//! 5,000-job one, because it touches every job. A search therefore looks at the clock every
//! `4096 / n` units of work (at most every `max_every`): under 1 % of the work on short
//! queues, and a few milliseconds between looks on long ones, so a time limit is overrun by
//! milliseconds, not by the seconds a fixed interval would allow at 1,000 jobs.

use std::time::{Duration, Instant};

/// A deadline and how often a search looks at the clock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline {
    at: Option<Instant>,
    every: u64,
}

impl Deadline {
    /// `limit` after `started` (none: never), for a search over `n` jobs that looks at most
    /// every `max_every` units of work.
    pub(crate) fn new(started: Instant, limit: Option<Duration>, n: usize, max_every: u64) -> Self {
        let every = (4096 / n.max(1) as u64).clamp(1, max_every.max(1));
        Deadline {
            at: limit.map(|t| started + t),
            every,
        }
    }

    /// Whether there is a deadline at all.
    pub(crate) fn is_set(&self) -> bool {
        self.at.is_some()
    }

    /// Whether at least `time` is left before the deadline (always without one).
    pub(crate) fn leaves(&self, time: Duration) -> bool {
        self.at.is_none_or(|d| Instant::now() + time < d)
    }

    /// Whether the deadline has passed, looking at the clock now.
    pub(crate) fn passed_now(&self) -> bool {
        self.at.is_some_and(|d| Instant::now() >= d)
    }

    /// Whether the deadline has passed, looking at the clock only when `work` (a running count
    /// of units of work) is a multiple of the interval.
    pub(crate) fn passed(&self, work: u64) -> bool {
        self.at
            .is_some_and(|d| work.is_multiple_of(self.every) && Instant::now() >= d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_how_much_time_is_left() {
        let now = Instant::now();
        let passed = Deadline::new(now, Some(Duration::ZERO), 16, 256);
        assert!(!passed.leaves(Duration::ZERO));
        let later = Deadline::new(now, Some(Duration::from_secs(3600)), 16, 256);
        assert!(later.leaves(Duration::from_secs(1)));
        assert!(!later.leaves(Duration::from_secs(7200)));
        assert!(Deadline::new(now, None, 16, 256).leaves(Duration::MAX / 2));
    }

    #[test]
    fn looks_more_often_on_long_queues() {
        let now = Instant::now();
        assert_eq!(Deadline::new(now, None, 16, 256).every, 256);
        assert_eq!(Deadline::new(now, None, 1000, 256).every, 4);
        assert_eq!(Deadline::new(now, None, 5000, 256).every, 1);
        assert_eq!(Deadline::new(now, None, 16, 32).every, 32);
        // A deadline already passed is seen at the first look; no deadline never passes.
        let gone = Deadline::new(now, Some(Duration::ZERO), 5000, 256);
        assert!(gone.passed(1));
        assert!(!Deadline::new(now, None, 5000, 256).passed(1));
        let short = Deadline::new(now, Some(Duration::ZERO), 16, 256);
        assert!(!short.passed(1) && short.passed(256));
    }
}
