//! How soon the console may read its kubeconfig again after the server refused its credentials: at once the first
//! time (a restarted server wrote new tokens), then after 1 s, 2 s, 4 s … up to [`MAX`] while they stay refused,
//! so a kubeconfig that no longer works is never read in a loop. A quiet spell of [`RESET_AFTER`] starts over.

use std::time::Duration;

use tokio::time::Instant;

/// The wait after the first attempt.
pub(super) const FIRST: Duration = Duration::from_secs(1);

/// The longest wait between two attempts.
pub(super) const MAX: Duration = Duration::from_secs(60);

/// After this long without an attempt due, the waits start again from [`FIRST`].
pub(super) const RESET_AFTER: Duration = Duration::from_secs(120);

/// The attempts' schedule.
#[derive(Clone, Debug)]
pub(super) struct Backoff {
    /// When the next attempt may be made; any time before the first.
    next: Option<Instant>,
    /// The wait the next attempt starts.
    delay: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            next: None,
            delay: FIRST,
        }
    }
}

impl Backoff {
    /// How long to wait before attempting; `None` means attempt now, which is recorded (the next wait doubles).
    pub(super) fn wait(&mut self) -> Option<Duration> {
        let now = Instant::now();
        if let Some(next) = self.next {
            if next > now {
                return Some(next - now);
            }
            if now - next > RESET_AFTER {
                self.delay = FIRST;
            }
        }
        self.next = Some(now + self.delay);
        self.delay = (self.delay * 2).min(MAX);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn attempts_wait_longer_each_time_then_start_over_after_a_quiet_spell() {
        let mut backoff = Backoff::default();
        assert_eq!(backoff.wait(), None, "the first attempt is at once");
        assert_eq!(backoff.wait(), Some(FIRST));
        tokio::time::advance(FIRST).await;
        assert_eq!(backoff.wait(), None);
        assert_eq!(backoff.wait(), Some(FIRST * 2));
        for _ in 0..10 {
            while let Some(wait) = backoff.wait() {
                tokio::time::advance(wait).await;
            }
        }
        assert_eq!(backoff.wait(), Some(MAX), "the waits stop growing");
        tokio::time::advance(MAX + RESET_AFTER + FIRST).await;
        assert_eq!(backoff.wait(), None);
        assert_eq!(backoff.wait(), Some(FIRST), "a quiet spell starts over");
    }
}
