//! How long a failed pass waits before its retry: exponential per object, with jitter, so an object that keeps
//! failing (a missing grant, a refused write) costs a request every few minutes instead of one every couple of
//! seconds forever, while a first failure is retried within about a second. A conflict (409) is a lost race that
//! the next pass usually wins, so conflicts keep retrying fast, under a lower cap.
//!
//! Jitter spreads the retries of objects that failed together (every NodeModulesConfig of a cluster whose API
//! server went away for a moment) so they do not come back in lockstep.

use std::time::Duration;

/// The delay before the first retry of a failure a conflict did not cause.
pub(crate) const FIRST: Duration = Duration::from_secs(1);

/// The longest delay between retries of an object that keeps failing: long enough that a failure only a person
/// can fix costs nothing worth mentioning, short enough that the fix is picked up within minutes.
pub(crate) const CAP: Duration = Duration::from_secs(300);

/// The delay before the first retry of a conflict.
pub(crate) const CONFLICT_FIRST: Duration = Duration::from_millis(500);

/// The longest delay between retries of an object whose writes keep losing races.
pub(crate) const CONFLICT_CAP: Duration = Duration::from_secs(8);

/// How far jitter moves a delay either way, as a fraction of it.
pub(crate) const JITTER: f64 = 0.2;

/// What a failure was, as far as its retry delay goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// A write lost a race with another writer (409).
    Conflict,
    /// Anything else.
    Other,
}

/// The delay before retry number `attempt` (1 for the first retry) after a failure of kind `failure`: the first
/// delay doubled per attempt, capped, then moved by up to [`JITTER`] either way.
pub(crate) fn delay(attempt: u32, failure: Failure) -> Duration {
    jittered(nominal(attempt, failure))
}

/// The delay before retry number `attempt` without jitter.
pub(crate) fn nominal(attempt: u32, failure: Failure) -> Duration {
    let (first, cap) = match failure {
        Failure::Conflict => (CONFLICT_FIRST, CONFLICT_CAP),
        Failure::Other => (FIRST, CAP),
    };
    // 2^20 seconds is far beyond any cap: stop doubling there instead of overflowing.
    let doublings = attempt.saturating_sub(1).min(20);
    first.saturating_mul(1 << doublings).min(cap)
}

/// `period` moved by a uniformly random fraction of up to [`JITTER`] either way.
pub(crate) fn jittered(period: Duration) -> Duration {
    period.mul_f64(rand::random_range(1.0 - JITTER..=1.0 + JITTER))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn within_jitter(delay: Duration, nominal: Duration) -> bool {
        delay >= nominal.mul_f64(1.0 - JITTER) && delay <= nominal.mul_f64(1.0 + JITTER)
    }

    #[test]
    fn failures_double_from_a_second_up_to_five_minutes() {
        let delays: Vec<u64> = (1..=12)
            .map(|attempt| nominal(attempt, Failure::Other).as_secs())
            .collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300]);
        assert_eq!(nominal(u32::MAX, Failure::Other), CAP);
    }

    #[test]
    fn conflicts_retry_fast_under_a_lower_cap() {
        let delays: Vec<u128> = (1..=7)
            .map(|attempt| nominal(attempt, Failure::Conflict).as_millis())
            .collect();
        assert_eq!(delays, [500, 1000, 2000, 4000, 8000, 8000, 8000]);
    }

    #[test]
    fn jitter_stays_within_a_fifth_either_way_and_varies() {
        let period = Duration::from_secs(600);
        let draws: Vec<Duration> = (0..200).map(|_| jittered(period)).collect();
        assert!(draws.iter().all(|d| within_jitter(*d, period)), "{draws:?}");
        let distinct: std::collections::BTreeSet<Duration> = draws.iter().copied().collect();
        assert!(
            distinct.len() > 100,
            "jitter must spread: {} distinct draws",
            distinct.len()
        );
    }

    #[test]
    fn jittered_delays_still_grow_from_one_attempt_to_the_next() {
        // With at most a fifth either way, the smallest delay of one attempt (1.6 × the nominal before it) is above
        // the largest of the attempt before (1.2 ×), until the cap.
        for attempt in 1..9 {
            for _ in 0..50 {
                let now = delay(attempt, Failure::Other);
                let next = delay(attempt + 1, Failure::Other);
                assert!(within_jitter(now, nominal(attempt, Failure::Other)));
                assert!(next > now, "attempt {attempt}: {now:?} then {next:?}");
            }
        }
    }
}
