//! The engine when it cannot act and when no watch tells it to: passes refused for a reason only a person can fix
//! back off per object, are told once as an Event and as the object's `Degraded` condition, and recover when the
//! cause is fixed; a change no watch delivers heals at the next resync.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::HeaderValue;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kmm_api::kmm::labels;
use kmm_api::shim::Shim;
use kmm_cluster::apiserver::Authenticated;
use kmm_engine::runtime::rbac::EngineRbac;
use kmm_engine::{Context, Family, PodImages, Settings};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::time::Instant;
use tower::ServiceExt;

use super::common::{Harness, eventually, wait_for};
use super::kmm::{condition, create_module};
use super::rbac::{install, lease, module_spec};

/// The requests a client sent, each with the tokio time it was sent at.
#[derive(Clone, Default)]
struct Sent(Arc<Mutex<Vec<(Instant, String)>>>);

impl Sent {
    /// When `method path` was sent, in order.
    fn times(&self, method: &str, path: &str) -> Vec<Instant> {
        let wanted = format!("{method} {path}");
        self.0
            .lock()
            .expect("the requests")
            .iter()
            .filter(|(_, request)| *request == wanted)
            .map(|(at, _)| *at)
            .collect()
    }
}

/// An in-process client presenting `token`, recording every request it sends in `sent`.
fn recording_client(harness: &Harness, token: &str, sent: &Sent) -> kube::Client {
    let authorization = HeaderValue::from_str(&format!("Bearer {token}")).expect("a header");
    let sent = sent.clone();
    let service = Authenticated(harness.cluster.server().clone()).map_request(
        move |mut request: http::Request<kube::client::Body>| {
            let line = format!("{} {}", request.method(), request.uri().path());
            sent.0
                .lock()
                .expect("the requests")
                .push((Instant::now(), line));
            request
                .headers_mut()
                .insert(http::header::AUTHORIZATION, authorization.clone());
            request
        },
    );
    kube::Client::new(service, "default")
}

/// An engine context running `family` only, through `client`.
fn context_of(client: kube::Client, family: Family) -> Context {
    Context::new(client, PodImages::default(), Some("test".to_owned())).with_settings(Settings {
        families: [family].into(),
        ..Settings::default()
    })
}

/// The engine's RBAC for `family`, and the same without any grant on `resource`.
fn rbac_without(family: Family, resource: &str) -> (EngineRbac, EngineRbac) {
    let full = EngineRbac::for_families(&lease(), &[family]);
    let mut short = full.clone();
    for rule in short.cluster_role.rules.iter_mut().flatten() {
        if let Some(resources) = rule.resources.as_mut() {
            resources.retain(|r| r != resource);
        }
    }
    // A rule left without resources is refused by kube-apiserver; drop it rather than keep it empty.
    if let Some(rules) = short.cluster_role.rules.as_mut() {
        rules.retain(|rule| rule.resources.as_ref().is_none_or(|r| !r.is_empty()));
    }
    (full, short)
}

/// Replace the engine's ClusterRole with `rbac`'s, as an administrator fixing a grant would.
async fn grant(harness: &Harness, rbac: &EngineRbac) {
    let name = rbac.cluster_role.metadata.name.as_deref().expect("a name");
    let api = Api::<ClusterRole>::all(harness.client());
    let mut role = rbac.cluster_role.clone();
    role.metadata.resource_version = api
        .get(name)
        .await
        .expect("the ClusterRole")
        .metadata
        .resource_version;
    api.replace(name, &PostParams::default(), &role)
        .await
        .expect("the ClusterRole is replaced");
}

/// Events with `reason` about the object `kind`/`name`.
async fn events(harness: &Harness, kind: &str, name: &str, reason: &str) -> Vec<Event> {
    Api::<Event>::all(harness.client())
        .list(&ListParams::default())
        .await
        .expect("listing events")
        .items
        .into_iter()
        .filter(|e| {
            e.reason.as_deref() == Some(reason)
                && e.regarding.as_ref().is_some_and(|r| {
                    r.kind.as_deref() == Some(kind) && r.name.as_deref() == Some(name)
                })
        })
        .collect()
}

/// One Event, published once: no series of repeats.
fn told_once(events: &[Event]) -> &Event {
    assert_eq!(events.len(), 1, "one Event: {events:#?}");
    assert!(
        events[0].series.is_none(),
        "published once, not on every retry: {:?}",
        events[0].series
    );
    &events[0]
}

#[tokio::test(start_paused = true)]
async fn a_module_the_engine_may_not_act_on_backs_off_is_told_once_and_recovers() {
    let mut harness = Harness::start("two-kernels.yaml").await;
    let (full, short) = rbac_without(Family::Kmm, "namespaces");
    let token = install(&harness, &short).await;
    let sent = Sent::default();
    let client = recording_client(&harness, &token, &sent);
    harness.start_context(context_of(client, Family::Kmm));
    create_module(&harness, "acme-kmod", module_spec()).await;

    // Every pass starts by reading the Module's namespace, which the engine may not: count the passes by it.
    let times = wait_for(600, "eight refused passes", || {
        let times = sent.times("GET", "/api/v1/namespaces/acme");
        async move { (times.len() >= 8).then_some(times) }
    })
    .await;
    let gaps: Vec<Duration> = times.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps[0] <= Duration::from_millis(2500), "{gaps:?}");
    assert!(
        gaps.windows(2).all(|pair| pair[1] > pair[0]),
        "each retry waits longer: {gaps:?}"
    );
    assert!(gaps[6] >= Duration::from_secs(50), "{gaps:?}");

    let (status, reason, message) = condition(&harness, "acme-kmod", "Degraded")
        .await
        .expect("a Degraded condition");
    assert_eq!((status.as_str(), reason.as_str()), ("True", "Forbidden"));
    assert!(
        message.contains("cannot get resource \"namespaces\"") && message.contains("--print-rbac"),
        "{message}"
    );
    let event = events(&harness, "Module", "acme-kmod", "Forbidden").await;
    assert_eq!(told_once(&event).note.as_deref(), Some(message.as_str()));

    grant(&harness, &full).await;
    eventually(600, "the Module converges once granted", || async {
        condition(&harness, "acme-kmod", "Available")
            .await
            .is_some_and(|(status, _, _)| status == "True")
    })
    .await;
    let (status, reason, _) = condition(&harness, "acme-kmod", "Degraded")
        .await
        .expect("a Degraded condition");
    assert_eq!(status, "False", "cleared: {reason}");
    told_once(&events(&harness, "Module", "acme-kmod", "Forbidden").await);
    harness.shutdown().await;
}

/// A Shim on the nodes of pool `b`, installed everywhere at once.
fn shim() -> Shim {
    serde_json::from_value(json!({
        "apiVersion": "runtime.spinkube.dev/v1alpha1", "kind": "Shim",
        "metadata": {"name": "spin-b"},
        "spec": {
            "nodeSelector": {"pool": "b"},
            "fetchStrategy": {"anonHttp": {"location": "https://shims.example.com/spin-b-v1.tar.gz"}},
            "runtimeClass": {"name": "wasm-spin-b", "handler": "spin-b"},
            "rolloutStrategy": {"type": "recreate"},
        },
    }))
    .expect("a Shim")
}

/// (status, reason, message) of the Shim's condition `type_`.
async fn shim_condition(harness: &Harness, type_: &str) -> Option<(String, String, String)> {
    Api::<Shim>::all(harness.client())
        .get("spin-b")
        .await
        .expect("the Shim")
        .status?
        .conditions
        .into_iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status, c.reason, c.message))
}

#[tokio::test(start_paused = true)]
async fn a_shim_whose_runtime_classes_the_engine_may_not_read_is_degraded_once_then_recovers() {
    let mut harness = Harness::start("shims.yaml").await;
    let (full, short) = rbac_without(Family::Shims, "runtimeclasses");
    let token = install(&harness, &short).await;
    let client = harness
        .cluster
        .client_with_token(&token)
        .expect("a client presenting the token");
    harness.start_context(context_of(client, Family::Shims));
    Api::<Shim>::all(harness.client())
        .create(&PostParams::default(), &shim())
        .await
        .expect("the Shim is created");

    let message = wait_for(120, "the Shim is Degraded: Forbidden", || async {
        shim_condition(&harness, "Degraded")
            .await
            .filter(|(status, reason, _)| status == "True" && reason == "Forbidden")
            .map(|(_, _, message)| message)
    })
    .await;
    assert!(
        message.contains("cannot list resource \"runtimeclasses\""),
        "{message}"
    );
    // Minutes of retries later, still one Event.
    tokio::time::sleep(Duration::from_secs(300)).await;
    let event = events(&harness, "Shim", "spin-b", "Forbidden").await;
    assert_eq!(told_once(&event).note.as_deref(), Some(message.as_str()));

    grant(&harness, &full).await;
    eventually(600, "the Shim completes once granted", || async {
        shim_condition(&harness, "Ready")
            .await
            .is_some_and(|(status, _, _)| status == "True")
    })
    .await;
    let (status, reason, _) = shim_condition(&harness, "Degraded")
        .await
        .expect("a Degraded condition");
    assert_eq!(status, "False", "cleared: {reason}");
    told_once(&events(&harness, "Shim", "spin-b", "Forbidden").await);
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_namespace_label_removed_behind_the_engines_back_returns_at_the_resync() {
    const PERIOD: Duration = Duration::from_secs(120);
    let mut harness = Harness::start("two-kernels.yaml").await;
    let context = Context::new(
        harness.client(),
        PodImages::default(),
        Some("test".to_owned()),
    )
    .with_settings(Settings {
        families: [Family::Kmm].into(),
        resync: PERIOD,
        ..Settings::default()
    });
    harness.start_context(context);
    create_module(&harness, "acme-kmod", module_spec()).await;
    eventually(300, "the Module converges", || async {
        condition(&harness, "acme-kmod", "Available")
            .await
            .is_some_and(|(status, _, _)| status == "True")
    })
    .await;
    let namespaces = Api::<Namespace>::all(harness.client());
    let labelled = || async {
        namespaces
            .get("acme")
            .await
            .expect("the namespace")
            .metadata
            .labels
            .unwrap_or_default()
            .contains_key(labels::NAMESPACE_CONTAINS_MODULES)
    };
    assert!(labelled().await, "the engine labels the Module's namespace");
    // Let the passes the rollout started die down: the Module's last pass is now at most this long ago.
    tokio::time::sleep(Duration::from_secs(20)).await;

    // Namespaces are not watched: nothing tells the engine the label went.
    let unlabel = json!({"metadata": {"labels": {labels::NAMESPACE_CONTAINS_MODULES: null}}});
    namespaces
        .patch("acme", &PatchParams::default(), &Patch::Merge(&unlabel))
        .await
        .expect("the label is removed");
    // The next resync of the Module is at least four fifths of the period after its last pass.
    tokio::time::sleep(Duration::from_secs(40)).await;
    assert!(!labelled().await, "no watch brought the label back");
    eventually(
        PERIOD.as_secs() + 30,
        "the resync puts the label back",
        labelled,
    )
    .await;
    harness.shutdown().await;
}
