//! The kubelet's back-off: 10 s after a failure, doubling up to 5 minutes, used both for image pulls
//! (`ImagePullBackOff`) and for restarting containers that exit (`CrashLoopBackOff`).

use std::time::Duration;

/// First delay after a failure.
pub(super) const INITIAL: Duration = Duration::from_secs(10);
/// Longest delay.
pub(super) const MAX: Duration = Duration::from_secs(300);

/// Delays before successive attempts of one thing (one image of one pod, one container).
#[derive(Debug, Default)]
pub(super) struct Backoff {
    failures: u32,
}

impl Backoff {
    /// The delay before retrying after one more failure: 10 s, 20 s, 40 s … 300 s.
    pub(super) fn after_failure(&mut self) -> Duration {
        let delay = INITIAL
            .checked_mul(1 << self.failures.min(16))
            .map_or(MAX, |d| d.min(MAX));
        self.failures += 1;
        delay
    }

    /// The delay before restarting a container that exited: none the first time, then the back-off sequence.
    /// A container that ran for twice the longest delay without trouble starts over without delay, as the kubelet
    /// forgets back-offs that old.
    pub(super) fn before_restart(&mut self, ran_for: Duration) -> Duration {
        if ran_for >= MAX * 2 {
            self.failures = 0;
        }
        if self.failures == 0 {
            self.failures = 1;
            return Duration::ZERO;
        }
        self.failures -= 1;
        let delay = self.after_failure();
        self.failures += 1;
        delay
    }
}

/// A duration written the way Go prints one (`10s`, `1m20s`, `5m0s`, `1.5s`, `300ms`), as kubelet messages do.
pub(super) fn go_duration(d: Duration) -> String {
    let millis = d.as_millis();
    if millis == 0 {
        return "0s".into();
    }
    if millis < 1000 {
        return format!("{millis}ms");
    }
    let hours = millis / 3_600_000;
    let minutes = millis / 60_000 % 60;
    let seconds = millis % 60_000;
    let mut seconds_text = format!("{}.{:03}", seconds / 1000, seconds % 1000);
    while seconds_text.ends_with('0') {
        seconds_text.pop();
    }
    if seconds_text.ends_with('.') {
        seconds_text.pop();
    }
    match (hours, minutes) {
        (0, 0) => format!("{seconds_text}s"),
        (0, m) => format!("{m}m{seconds_text}s"),
        (h, m) => format!("{h}h{m}m{seconds_text}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(list: &[u64]) -> Vec<Duration> {
        list.iter().map(|s| Duration::from_secs(*s)).collect()
    }

    #[test]
    fn pulls_back_off_from_ten_seconds_doubling_to_five_minutes() {
        let mut backoff = Backoff::default();
        let delays: Vec<Duration> = (0..8).map(|_| backoff.after_failure()).collect();
        assert_eq!(delays, secs(&[10, 20, 40, 80, 160, 300, 300, 300]));
    }

    #[test]
    fn restarts_are_immediate_first_then_back_off() {
        let mut backoff = Backoff::default();
        let quick = Duration::from_secs(1);
        let delays: Vec<Duration> = (0..8).map(|_| backoff.before_restart(quick)).collect();
        assert_eq!(delays, secs(&[0, 10, 20, 40, 80, 160, 300, 300]));
        assert_eq!(
            backoff.before_restart(Duration::from_secs(600)),
            Duration::ZERO
        );
        assert_eq!(backoff.before_restart(quick), Duration::from_secs(10));
    }

    #[test]
    fn durations_read_like_go() {
        let cases = [
            (Duration::from_secs(10), "10s"),
            (Duration::from_secs(80), "1m20s"),
            (Duration::from_secs(300), "5m0s"),
            (Duration::from_millis(1500), "1.5s"),
            (Duration::from_millis(300), "300ms"),
            (Duration::from_secs(3661), "1h1m1s"),
        ];
        for (d, text) in cases {
            assert_eq!(go_duration(d), text);
        }
    }
}
