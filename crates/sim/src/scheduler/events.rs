//! Events the simulated control plane records about pods and nodes, as core v1 Events — what
//! `kubectl describe` and `kubectl get events` show, and what the console lists under an object.

use std::sync::atomic::{AtomicU64, Ordering};

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{Api, PostParams};

/// Namespace of the events of cluster-scoped objects (nodes), as on a real cluster.
const CLUSTER_SCOPED_NAMESPACE: &str = "default";

/// Makes event names unique even when two are recorded in the same nanosecond.
static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// Whether an event reports normal progress or a problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// Normal progress.
    Normal,
    /// Something the user should look at.
    Warning,
}

/// Records events in the name of one control-plane component.
#[derive(Clone)]
pub struct Recorder {
    client: kube::Client,
    component: &'static str,
}

impl Recorder {
    /// A recorder for `component` (e.g. `default-scheduler`, `machineconfigdaemon`).
    pub fn new(client: kube::Client, component: &'static str) -> Self {
        Self { client, component }
    }

    /// Record one event about `regarding`.
    pub async fn record(
        &self,
        regarding: ObjectReference,
        severity: Severity,
        reason: &str,
        message: &str,
    ) -> kube::Result<()> {
        let namespace = regarding
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| CLUSTER_SCOPED_NAMESPACE.to_string());
        let now = jiff::Timestamp::now();
        let sequence = SEQUENCE.fetch_add(1, Ordering::Relaxed);
        let name = format!(
            "{}.{:x}",
            regarding.name.as_deref().unwrap_or(self.component),
            now.as_nanosecond().unsigned_abs() + u128::from(sequence)
        );
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name),
                namespace: Some(namespace.clone()),
                ..ObjectMeta::default()
            },
            involved_object: regarding,
            reason: Some(reason.to_string()),
            message: Some(message.to_string()),
            type_: Some(
                match severity {
                    Severity::Normal => "Normal",
                    Severity::Warning => "Warning",
                }
                .to_string(),
            ),
            count: Some(1),
            first_timestamp: Some(Time(now)),
            last_timestamp: Some(Time(now)),
            source: Some(EventSource {
                component: Some(self.component.to_string()),
                host: None,
            }),
            reporting_component: Some(self.component.to_string()),
            reporting_instance: Some(self.component.to_string()),
            ..Event::default()
        };
        Api::<Event>::namespaced(self.client.clone(), &namespace)
            .create(&PostParams::default(), &event)
            .await
            .map(drop)
    }
}
