//! Events as the kubelet records them (core v1, source `kubelet` on the node): the container lifecycle of a pod,
//! with repeats counted on one Event as the kubelet's event correlator does, and the node's readiness and reboots.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::sync::Mutex;

use super::NodeLife;
use crate::World;

/// The component that reports every event here.
const COMPONENT: &str = "kubelet";

/// Normal or Warning.
#[derive(Debug, Clone, Copy)]
pub(super) enum Kind {
    /// Something expected happened.
    Normal,
    /// Something went wrong.
    Warning,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Normal => "Normal",
            Kind::Warning => "Warning",
        }
    }
}

/// The field path that names a container in events (`spec.containers{name}`).
pub(super) fn container_field(init: bool, name: &str) -> String {
    if init {
        format!("spec.initContainers{{{name}}}")
    } else {
        format!("spec.containers{{{name}}}")
    }
}

/// A unique suffix for event names, like the nanosecond timestamp the kubelet uses.
fn unique_suffix() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = jiff::Timestamp::now().as_nanosecond() as u64;
    format!(
        "{:x}",
        nanos.wrapping_add(COUNTER.fetch_add(1, Ordering::Relaxed))
    )
}

fn new_event(
    namespace: &str,
    involved: ObjectReference,
    node: &str,
    kind: Kind,
    reason: &str,
    message: &str,
) -> Event {
    let now = Time(jiff::Timestamp::now());
    let name = format!(
        "{}.{}",
        involved.name.as_deref().unwrap_or("event"),
        unique_suffix()
    );
    Event {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(namespace.into()),
            ..Default::default()
        },
        involved_object: involved,
        reason: Some(reason.into()),
        message: Some(message.into()),
        type_: Some(kind.as_str().into()),
        source: Some(EventSource {
            component: Some(COMPONENT.into()),
            host: Some(node.into()),
        }),
        reporting_component: Some(COMPONENT.into()),
        reporting_instance: Some(node.into()),
        first_timestamp: Some(now.clone()),
        last_timestamp: Some(now),
        count: Some(1),
        ..Default::default()
    }
}

/// What an event says: reason, message and the field path of the container it is about.
type EventKey = (String, String, String);

/// The events of one pod.
pub(super) struct PodEvents {
    client: kube::Client,
    node: String,
    pod: ObjectReference,
    /// Events already recorded, by what they say: their name and count.
    recorded: Mutex<HashMap<EventKey, (String, i32)>>,
}

impl PodEvents {
    /// Events about `pod` on `node`.
    pub(super) fn new(client: kube::Client, node: &str, pod: &Pod) -> Self {
        Self {
            client,
            node: node.into(),
            pod: ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Pod".into()),
                name: pod.metadata.name.clone(),
                namespace: pod.metadata.namespace.clone(),
                uid: pod.metadata.uid.clone(),
                resource_version: pod.metadata.resource_version.clone(),
                field_path: None,
            },
            recorded: Mutex::default(),
        }
    }

    /// Record an event about a container of the pod (or the pod itself when `field` is None).
    pub(super) async fn record(
        &self,
        kind: Kind,
        reason: &str,
        message: &str,
        field: Option<&str>,
    ) {
        let namespace = self.pod.namespace.as_deref().unwrap_or("default");
        let api: Api<Event> = Api::namespaced(self.client.clone(), namespace);
        let key = (
            reason.to_string(),
            message.to_string(),
            field.unwrap_or_default().to_string(),
        );
        let mut recorded = self.recorded.lock().await;
        if let Some((name, count)) = recorded.get_mut(&key) {
            *count += 1;
            let patch = json!({"count": *count, "lastTimestamp": Time(jiff::Timestamp::now())});
            match api
                .patch(name, &PatchParams::default(), &Patch::Merge(patch))
                .await
            {
                Ok(_) => return,
                Err(e) => tracing::debug!(error = %e, "counting a repeated event"),
            }
        }
        let mut involved = self.pod.clone();
        involved.field_path = field.map(str::to_string);
        let event = new_event(namespace, involved, &self.node, kind, reason, message);
        let name = event.metadata.name.clone().unwrap_or_default();
        match api.create(&PostParams::default(), &event).await {
            Ok(_) => {
                recorded.insert(key, (name, 1));
            }
            Err(e) => tracing::debug!(error = %e, reason, "recording an event"),
        }
    }
}

/// Record what a change of a node's readiness or boot means, as the kubelet does when it (re)starts.
pub(super) fn node_changed(world: &World, node: &str, before: &NodeLife, after: &NodeLife) {
    let mut events = Vec::new();
    if before.boot_id != after.boot_id {
        events.push((
            Kind::Warning,
            "Rebooted",
            format!("Node {node} has been rebooted, boot id: {}", after.boot_id),
        ));
    }
    if before.ready != after.ready {
        let (reason, status) = if after.ready {
            ("NodeReady", "NodeReady")
        } else {
            ("NodeNotReady", "NodeNotReady")
        };
        events.push((
            Kind::Normal,
            reason,
            format!("Node {node} status is now: {status}"),
        ));
    }
    if events.is_empty() {
        return;
    }
    let client = world.client.clone();
    let involved = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Node".into()),
        name: Some(node.into()),
        uid: Some(node.into()),
        ..Default::default()
    };
    let node = node.to_string();
    tokio::spawn(async move {
        let api: Api<Event> = Api::namespaced(client, "default");
        for (kind, reason, message) in events {
            let event = new_event("default", involved.clone(), &node, kind, reason, &message);
            if let Err(e) = api.create(&PostParams::default(), &event).await {
                tracing::debug!(error = %e, reason, "recording a node event");
            }
        }
    });
}
