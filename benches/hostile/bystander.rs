//! The bystander: an administrator reading and writing while an attack runs, as a person at the console and their
//! `kubectl` do: GETs on the connection it keeps, GETs on a new connection (every `kubectl` invocation opens one)
//! and writes. Every answer is timed; one that fails or takes longer than [`GIVE_UP`] counts as failed.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::json;

/// How long the bystander waits for one answer before counting it failed.
pub(crate) const GIVE_UP: Duration = Duration::from_secs(5);

/// What the bystander saw during one phase.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    /// GETs on the kept connection.
    pub gets: Vec<Duration>,
    /// GETs on a connection opened for them.
    pub fresh: Vec<Duration>,
    /// Creates.
    pub writes: Vec<Duration>,
    /// Answers that failed or did not come within [`GIVE_UP`].
    pub failed: usize,
    /// The names of the objects the server acknowledged creating.
    pub acknowledged: Vec<String>,
}

impl Seen {
    /// Every timed answer, reads and writes together.
    pub(crate) fn all(&self) -> Vec<Duration> {
        let mut all: Vec<Duration> = self
            .gets
            .iter()
            .chain(&self.fresh)
            .chain(&self.writes)
            .copied()
            .collect();
        all.sort();
        all
    }
}

/// The quantile `q` of sorted `latencies` (zero when there are none).
pub(crate) fn quantile(latencies: &[Duration], q: f64) -> Duration {
    if latencies.is_empty() {
        return Duration::ZERO;
    }
    latencies[((latencies.len() - 1) as f64 * q).round() as usize]
}

/// Read and write as the administrator of `config` until `running` turns false; objects are named after
/// `phase`.
pub(crate) async fn work(config: kube::Config, phase: String, running: Arc<AtomicBool>) -> Seen {
    let mut seen = Seen::default();
    let Ok(client) = kube::Client::try_from(config.clone()) else {
        seen.failed += 1;
        return seen;
    };
    let configmaps: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut i = 0u64;
    while running.load(Ordering::SeqCst) {
        let started = Instant::now();
        match tokio::time::timeout(GIVE_UP, configmaps.get("target")).await {
            Ok(Ok(_)) => seen.gets.push(started.elapsed()),
            _ => seen.failed += 1,
        }
        if i.is_multiple_of(5) {
            let started = Instant::now();
            let fresh = async {
                let client = kube::Client::try_from(config.clone())?;
                Api::<ConfigMap>::namespaced(client, "default")
                    .get("target")
                    .await
            };
            match tokio::time::timeout(GIVE_UP, fresh).await {
                Ok(Ok(_)) => seen.fresh.push(started.elapsed()),
                _ => seen.failed += 1,
            }
        }
        if i.is_multiple_of(2) {
            let name = format!("bystander-{phase}-{i}");
            let object: ConfigMap =
                match serde_json::from_value(json!({"metadata": {"name": name}})) {
                    Ok(object) => object,
                    Err(_) => continue,
                };
            let started = Instant::now();
            match tokio::time::timeout(GIVE_UP, configmaps.create(&PostParams::default(), &object))
                .await
            {
                Ok(Ok(_)) => {
                    seen.writes.push(started.elapsed());
                    seen.acknowledged.push(name);
                }
                _ => seen.failed += 1,
            }
        }
        i += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    seen.gets.sort();
    seen.fresh.sort();
    seen.writes.sort();
    seen
}
