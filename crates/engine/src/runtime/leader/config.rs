//! Which Lease elects the engine and how fast a silent leader is replaced.

use std::time::Duration;

use kmm_api::lease::{DEFAULT_LEASE_DURATION, DEFAULT_LEASE_NAME, DEFAULT_LEASE_NAMESPACE};

/// Which Lease elects the acting engine, and how fast a dead leader is replaced.
#[derive(Clone, Debug)]
pub struct LeaseConfig {
    /// Namespace of the Lease.
    pub namespace: String,
    /// Name of the Lease.
    pub name: String,
    /// This engine's identity in `holderIdentity`.
    pub identity: String,
    /// How long a lease holds without renewal.
    pub lease_duration: Duration,
    /// How often the leader renews and a candidate retries.
    pub retry_period: Duration,
}

impl LeaseConfig {
    /// A Lease config that renews five times per lease duration, so a leader survives a few failed renewals before
    /// it has to step down.
    pub fn new(
        namespace: impl Into<String>,
        name: impl Into<String>,
        identity: impl Into<String>,
        lease_duration: Duration,
    ) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
            identity: identity.into(),
            lease_duration,
            retry_period: lease_duration / 5,
        }
    }

    /// The default Lease ([`DEFAULT_LEASE_NAMESPACE`]/[`DEFAULT_LEASE_NAME`], [`DEFAULT_LEASE_DURATION`]) for the
    /// engine `identity`: the one every engine competes on unless told otherwise, so an engine in the console and
    /// the controller pods take turns instead of acting side by side.
    pub fn with_defaults(identity: impl Into<String>) -> Self {
        Self::new(
            DEFAULT_LEASE_NAMESPACE,
            DEFAULT_LEASE_NAME,
            identity,
            DEFAULT_LEASE_DURATION,
        )
    }

    /// `namespace/name`, for messages.
    pub(super) fn lease_key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// Refuse settings under which the leader could not step down before a standby takes over.
    pub(super) fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            !self.identity.is_empty(),
            "the leader election identity is empty"
        );
        anyhow::ensure!(
            !self.namespace.is_empty() && !self.name.is_empty(),
            "the Lease needs a namespace and a name"
        );
        anyhow::ensure!(
            !self.retry_period.is_zero() && self.retry_period < self.lease_duration,
            "the retry period ({:?}) must be positive and shorter than the lease duration ({:?})",
            self.retry_period,
            self.lease_duration
        );
        Ok(())
    }

    /// How long the leader keeps acting without a successful renewal: one retry period short of the lease duration,
    /// so it has stopped before any standby sees the lease expire.
    pub(super) fn renew_deadline(&self) -> Duration {
        self.lease_duration.saturating_sub(self.retry_period)
    }

    /// How long the engine may take to stop once told to shut down: the renew deadline. Its work winds down and
    /// its Lease is released within it, or it leaves both behind and exits; either way the engine is gone a retry
    /// period before any standby could see its Lease expire, even when the API server is gone and nothing can be
    /// released. Also the bound a supervisor's grace period can be sized from.
    pub fn shutdown_limit(&self) -> Duration {
        self.renew_deadline()
    }

    /// Of the shutdown limit, how long releasing the Lease may take: a retry period, at most half the limit. An API
    /// server that has not answered the release by then is not waited for; the Lease expires on its own.
    pub(super) fn release_limit(&self) -> Duration {
        self.retry_period.min(self.shutdown_limit() / 2)
    }

    /// `leaseDurationSeconds` to write: whole seconds, rounded up so others never wait less than we assume.
    pub(super) fn lease_duration_seconds(&self) -> i32 {
        let seconds =
            self.lease_duration.as_secs() + u64::from(self.lease_duration.subsec_nanos() > 0);
        i32::try_from(seconds.max(1)).unwrap_or(i32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> LeaseConfig {
        LeaseConfig::new("kube-system", "engine", "me", Duration::from_secs(10))
    }

    #[test]
    fn the_retry_period_is_a_fifth_of_the_lease_and_the_deadline_one_period_short() {
        let config = config();
        assert_eq!(config.retry_period, Duration::from_secs(2));
        assert_eq!(config.renew_deadline(), Duration::from_secs(8));
        assert!(config.validate().is_ok());
    }

    #[test]
    fn a_shutdown_takes_at_most_the_renew_deadline_of_which_the_release_a_retry_period() {
        let mut config = config();
        assert_eq!(config.shutdown_limit(), config.renew_deadline());
        assert_eq!(config.release_limit(), Duration::from_secs(2));
        // A retry period longer than half the deadline leaves the work half of it to stop.
        config.retry_period = Duration::from_secs(6);
        assert_eq!(config.shutdown_limit(), Duration::from_secs(4));
        assert_eq!(config.release_limit(), Duration::from_secs(2));
    }

    #[test]
    fn configs_that_cannot_step_down_in_time_are_refused() {
        let mut config = config();
        config.retry_period = config.lease_duration;
        assert!(config.validate().is_err());
        config.retry_period = Duration::ZERO;
        assert!(config.validate().is_err());
        let mut nameless = self::config();
        nameless.identity.clear();
        assert!(nameless.validate().is_err());
    }

    #[test]
    fn lease_duration_seconds_round_up() {
        let mut config = config();
        config.lease_duration = Duration::from_millis(4_200);
        assert_eq!(config.lease_duration_seconds(), 5);
        config.lease_duration = Duration::from_millis(300);
        assert_eq!(config.lease_duration_seconds(), 1);
    }
}
