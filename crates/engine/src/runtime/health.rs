//! What the kubelet's probes are told (served by [`crate::runtime::endpoint`]): `/healthz` answers 200 while the engine loop
//! runs (leading or standing by) and 503 once it has ended; `/readyz` answers 200 while the engine runs, the API
//! server answered the last check (every [`API_CHECK_PERIOD`]) and, on the acting engine, every reconciler's cache
//! has listed. A standby is ready: it is healthy, stands by as it should, and its metrics (leader status 0) are
//! worth scraping. A process whose runtime is stuck answers neither, which is what the liveness probe catches.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::runtime::metrics::EngineMetrics;

/// How often the API server is checked for readiness.
pub const API_CHECK_PERIOD: Duration = Duration::from_secs(5);

/// How long one API check may take before it counts as failed.
const API_CHECK_LIMIT: Duration = Duration::from_secs(4);

/// What the probes report; the engine's runner and the API check update it.
#[derive(Debug, Default)]
pub struct Health {
    engine_running: AtomicBool,
    api_reachable: AtomicBool,
}

impl Health {
    /// Record whether the engine loop runs.
    pub fn set_engine_running(&self, running: bool) {
        self.engine_running.store(running, Ordering::SeqCst);
    }

    /// Whether the engine loop runs: the liveness answer.
    pub fn live(&self) -> bool {
        self.engine_running.load(Ordering::SeqCst)
    }

    /// Record whether the API server answered the last check.
    pub fn set_api_reachable(&self, reachable: bool) {
        self.api_reachable.store(reachable, Ordering::SeqCst);
    }

    /// The readiness answer, given what the engine does.
    pub fn readiness(&self, metrics: &EngineMetrics) -> Readiness {
        if !self.live() {
            return Readiness::NotReady("the engine stopped".to_owned());
        }
        if !self.api_reachable.load(Ordering::SeqCst) {
            return Readiness::NotReady("the API server did not answer the last check".to_owned());
        }
        if !metrics.leading() {
            return Readiness::Ready("standing by");
        }
        match metrics.unsynced().as_slice() {
            [] => Readiness::Ready("acting"),
            waiting => Readiness::NotReady(format!(
                "acting, but the caches of {} have not listed yet",
                waiting.join(", ")
            )),
        }
    }
}

/// What `/readyz` answers, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Readiness {
    /// Ready: acting with every cache listed, or standing by.
    Ready(&'static str),
    /// Not ready, and why.
    NotReady(String),
}

/// Run `engine` with `health` saying it runs until it returns.
pub async fn track<F: Future>(health: &Health, engine: F) -> F::Output {
    health.set_engine_running(true);
    let output = engine.await;
    health.set_engine_running(false);
    output
}

/// Check the API server every [`API_CHECK_PERIOD`] until `stop`.
pub async fn check_api(client: kube::Client, health: Arc<Health>, stop: CancellationToken) {
    let mut ticker = tokio::time::interval(API_CHECK_PERIOD);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = ticker.tick() => {}
        }
        let answered = tokio::time::timeout(API_CHECK_LIMIT, client.apiserver_version())
            .await
            .is_ok_and(|r| r.is_ok());
        health.set_api_reachable(answered);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_standby_is_ready_and_an_acting_engine_once_its_caches_listed() {
        let health = Health::default();
        let metrics = EngineMetrics::default();
        assert_eq!(
            health.readiness(&metrics),
            Readiness::NotReady("the engine stopped".to_owned())
        );
        health.set_engine_running(true);
        assert!(matches!(health.readiness(&metrics), Readiness::NotReady(_)));
        health.set_api_reachable(true);
        assert_eq!(health.readiness(&metrics), Readiness::Ready("standing by"));
        metrics.set_leading("kmm-tui-engine", true);
        assert_eq!(health.readiness(&metrics), Readiness::Ready("acting"));
    }
}
