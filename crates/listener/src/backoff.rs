//! The accept loop's answer to failures: wait, longer each time, and say so at most every few seconds. Retrying at
//! once when descriptors run out (EMFILE) spins a core and writes millions of log lines while no client is served;
//! waiting lets connections close and descriptors free up.

use std::time::{Duration, Instant};

/// The first wait after a failure.
const FIRST: Duration = Duration::from_millis(10);

/// The longest wait.
const LONGEST: Duration = Duration::from_secs(1);

/// How often a failure is logged at most.
const LOG_EVERY: Duration = Duration::from_secs(5);

/// The state of the back-off between accepts.
#[derive(Debug, Default)]
pub(crate) struct AcceptBackoff {
    next_wait: Option<Duration>,
    last_logged: Option<Instant>,
    unlogged: u64,
}

impl AcceptBackoff {
    /// A connection was accepted: the next failure waits briefly again.
    pub(crate) fn succeeded(&mut self) {
        self.next_wait = None;
    }

    /// Accepting failed with `error`: log it unless one was logged lately, and say how long to wait.
    pub(crate) fn failed(&mut self, error: &std::io::Error) -> Duration {
        let wait = self.next_wait.unwrap_or(FIRST);
        self.next_wait = Some((wait * 2).min(LONGEST));
        self.unlogged += 1;
        let now = Instant::now();
        if self.last_logged.is_none_or(|at| now - at >= LOG_EVERY) {
            let hint = if is_out_of_descriptors(error) {
                "; out of file descriptors: raise the limit (ulimit -n) or close clients"
            } else {
                ""
            };
            tracing::warn!(
                failures = self.unlogged,
                "accepting connections failed: {error}{hint}; waiting {wait:?} before accepting again"
            );
            self.last_logged = Some(now);
            self.unlogged = 0;
        }
        wait
    }
}

/// EMFILE or ENFILE: the process or the system has no descriptor left.
fn is_out_of_descriptors(error: &std::io::Error) -> bool {
    matches!(error.raw_os_error(), Some(23 | 24))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_grow_to_a_bound_and_reset_on_success() {
        let mut backoff = AcceptBackoff::default();
        let error = std::io::Error::from_raw_os_error(24);
        let waits: Vec<Duration> = (0..10).map(|_| backoff.failed(&error)).collect();
        assert_eq!(waits[0], FIRST);
        assert!(waits.windows(2).all(|w| w[1] >= w[0]));
        assert_eq!(*waits.last().unwrap(), LONGEST);
        backoff.succeeded();
        assert_eq!(backoff.failed(&error), FIRST);
    }
}
