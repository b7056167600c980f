//! Virtual time for the node simulation.
//!
//! Every duration in the simulation (pull times, build times, container run times, backoffs, reboots, faults) is
//! simulated time. One clock maps it onto tokio time with a scale factor, so a demo can run ten times faster than
//! life and tests, which run on a paused tokio clock, advance through minutes of simulated time instantly.

use std::time::Duration;

use tokio::time::Instant;

/// The simulation's clock: simulated seconds pass `scale` times faster than tokio's clock.
#[derive(Debug, Clone, Copy)]
pub struct SimClock {
    origin: Instant,
    scale: f64,
}

impl SimClock {
    /// A clock starting now, running `scale` simulated seconds per real second (at least 0.001).
    pub fn new(scale: f64) -> Self {
        Self {
            origin: Instant::now(),
            scale: scale.max(0.001),
        }
    }

    /// Simulated time elapsed since the simulation started.
    pub fn now(&self) -> Duration {
        self.origin.elapsed().mul_f64(self.scale)
    }

    /// Wait for `simulated` time to pass.
    pub async fn sleep(&self, simulated: Duration) {
        tokio::time::sleep(self.to_real(simulated)).await;
    }

    /// Wait until the simulated instant `at`.
    pub async fn sleep_until(&self, at: Duration) {
        tokio::time::sleep_until(self.origin + self.to_real(at)).await;
    }

    /// The real (tokio) duration that `simulated` takes.
    pub fn to_real(self, simulated: Duration) -> Duration {
        simulated.div_f64(self.scale)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn simulated_time_runs_at_the_scale() {
        let clock = SimClock::new(10.0);
        clock.sleep(Duration::from_secs(60)).await;
        let now = clock.now();
        assert!(
            now >= Duration::from_secs(60) && now < Duration::from_secs(61),
            "{now:?}"
        );
        assert_eq!(
            clock.to_real(Duration::from_secs(10)),
            Duration::from_secs(1)
        );
    }
}
