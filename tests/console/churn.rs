//! The console and the engine on a cluster whose other workloads churn: the pods, Deployment and Events of a busy
//! namespace, and the nodes' heartbeat Leases, cost neither of them anything, counted from the API server's
//! metrics of what each client was sent, while a watcher of the whole cluster is sent every one of them. The Events
//! about pods where a Module makes its pods do reach the console.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kmm_api::kmm::Module;
use kmm_cluster::apiserver::ApiServer;
use kmm_cluster::sim::scenario::Scenario;
use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};
use kmm_engine::{Context, PodImages};
use kmm_testing::eventually;
use kmm_testing::metrics::samples;
use kmm_tui::tui::action::Action;
use kmm_tui::tui::data::KindSnapshot;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// The console's client, as the metrics name it.
const CONSOLE: &str = "console-under-test";
/// The engine's client.
const ENGINE: &str = "engine-under-test";
/// A client that watches every pod and Event, as a console that takes in everything would.
const EVERYTHING: &str = "whole-cluster-watcher";
/// How many pods the busy namespace creates and deletes, and how many Events it records about them.
const PODS: usize = 60;
const EVENTS: usize = 300;
/// How often the busy Deployment changes.
const CHANGES: usize = 30;
/// How many heartbeat Leases, and how often each is renewed.
const NODES: usize = 20;
const RENEWALS: usize = 3;
/// The resources that churn.
const CHURNED: [&str; 4] = ["pods", "events", "deployments", "leases"];
/// The pods and Events the console and the engine may be sent meanwhile: their own work's, far fewer than the
/// churn's.
const OWN_WORK: u64 = 40;
/// The Leases they may be sent meanwhile: renewals of the engine's own.
const OWN_LEASES: u64 = 3;

const SCENARIO: &str = r#"
seed: 5
timeScale: 10
nodes:
  - namePrefix: worker-
    count: 2
    labels: {node-role.kubernetes.io/worker: ""}
    kernelVersion: 5.14.0-284.30.1.el9_2.x86_64
    osImage: Red Hat Enterprise Linux CoreOS 414.92.202312311229-0 (Plow)
objects:
  - {apiVersion: v1, kind: Namespace, metadata: {name: drivers}}
  - {apiVersion: v1, kind: Namespace, metadata: {name: busy}}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_namespace_and_node_heartbeats_cost_the_console_and_the_engine_nothing() {
    let scenario = Scenario::parse(SCENARIO, "tui_churn", None).expect("the scenario parses");
    let cluster = EmbeddedCluster::start(EmbeddedOptions {
        scenario: Some(scenario),
        ..Default::default()
    })
    .await
    .expect("the embedded cluster starts");
    let admin = cluster.client();
    let stop = CancellationToken::new();
    watch_everything(cluster.client_named(EVERYTHING), &stop);
    let events = console_events(cluster.client_named(CONSOLE), &stop);
    let context = Arc::new(Context::new(
        cluster.client_named(ENGINE),
        PodImages::default(),
        Some("tui-churn".to_owned()),
    ));
    let engine = tokio::spawn(kmm_engine::run_reconcilers(context, stop.clone()));

    // A Module in `drivers`: the console now follows the Events about pods there.
    Api::<Module>::namespaced(admin.clone(), "drivers")
        .create(&PostParams::default(), &module())
        .await
        .expect("the Module is created");
    let drivers_events: Api<Event> = Api::namespaced(admin.clone(), "drivers");
    mark(&drivers_events, &events, "mark-1").await;
    let server = cluster.server();
    let before = Sent::of(server);

    // The busy namespace: pods come and go, the kubelet and the scheduler record Events about them.
    let pods: Api<Pod> = Api::namespaced(admin.clone(), "busy");
    let busy_events: Api<Event> = Api::namespaced(admin.clone(), "busy");
    for index in 0..PODS {
        pods.create(&PostParams::default(), &busy_pod(index))
            .await
            .expect("a busy pod is created");
    }
    for index in 0..EVENTS {
        let pod = format!("busy-{}", index % PODS);
        let reporter = if index % 2 == 0 {
            "kubelet"
        } else {
            "default-scheduler"
        };
        busy_events
            .create(&PostParams::default(), &pod_event("busy", &pod, reporter))
            .await
            .expect("a busy Event is recorded");
    }
    for index in 0..PODS {
        pods.delete(&format!("busy-{index}"), &DeleteParams::default())
            .await
            .expect("a busy pod is deleted");
    }
    // A Deployment of the busy namespace changes as often as its pods do.
    let workloads: Api<Deployment> = Api::namespaced(admin.clone(), "busy");
    workloads
        .create(&PostParams::default(), &busy_deployment())
        .await
        .expect("the busy Deployment is created");
    for change in 0..CHANGES {
        let patch = json!({"metadata": {"annotations": {"busy/change": change.to_string()}}});
        workloads
            .patch("busy", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("the busy Deployment changes");
    }
    // And every node renews its heartbeat Lease.
    let heartbeats: Api<Lease> = Api::namespaced(admin.clone(), "kube-node-lease");
    for renewal in 0..RENEWALS {
        for node in 0..NODES {
            let lease = heartbeat(node, renewal);
            heartbeats
                .patch(
                    &lease_name(node),
                    &PatchParams::apply("kubelet").force(),
                    &Patch::Apply(&lease),
                )
                .await
                .expect("a heartbeat is renewed");
        }
    }
    let churn = (PODS * 2 + EVENTS + 1 + CHANGES + NODES * RENEWALS) as u64;
    eventually(
        60,
        "the whole-cluster watcher is sent the churn",
        || async { Sent::of(server).minus(&before).churned_to(EVERYTHING) >= churn },
    )
    .await;
    // Once the console shows an Event recorded after the churn, it has been sent whatever of the churn it would be.
    mark(&drivers_events, &events, "mark-2").await;
    let sent = Sent::of(server).minus(&before);
    for client in [CONSOLE, ENGINE] {
        let got = |resource| sent.to(client, resource);
        println!(
            "{client} was sent during the churn: {} pods, {} Events, {} Deployments, {} Leases",
            got("pods"),
            got("events"),
            got("deployments"),
            got("leases")
        );
        assert!(
            got("pods") + got("events") < OWN_WORK
                && got("deployments") == 0
                && got("leases") <= OWN_LEASES,
            "{client} took in the churn ({sent:?})"
        );
    }

    stop.cancel();
    let _ = engine.await;
    cluster.shutdown().await;
}

/// Record an Event named `name` about a pod of `api`'s namespace, and wait until the console shows it.
async fn mark(api: &Api<Event>, shown: &Mutex<Vec<Arc<Event>>>, name: &str) {
    let mut event = pod_event("drivers", "accel-pull", "kubelet");
    event.metadata.name = Some(name.to_owned());
    event.metadata.generate_name = None;
    api.create(&PostParams::default(), &event)
        .await
        .expect("the mark is recorded");
    eventually(
        30,
        "the console shows an Event about a pod where the Module makes pods",
        || {
            let found = shown
                .lock()
                .expect("not poisoned")
                .iter()
                .any(|event| event.metadata.name.as_deref() == Some(name));
            async move { found }
        },
    )
    .await;
}

/// Objects sent to each client so far, on watches and in lists, by client and resource.
#[derive(Debug, Default)]
struct Sent(BTreeMap<(String, String), u64>);

impl Sent {
    fn of(server: &ApiServer) -> Sent {
        let text = server.metrics().encode(server.store());
        let mut sent = Sent::default();
        let metrics = [
            "apiserver_watch_events_total",
            "apiserver_storage_list_returned_objects_total",
        ];
        for sample in metrics.iter().flat_map(|metric| samples(&text, metric)) {
            let label = |name| sample.label(name).expect("the label is there").to_owned();
            *sent
                .0
                .entry((label("client"), label("resource")))
                .or_default() += sample.value as u64;
        }
        sent
    }

    /// What `client` was sent of `resource`.
    fn to(&self, client: &str, resource: &str) -> u64 {
        self.0
            .get(&(client.to_owned(), resource.to_owned()))
            .copied()
            .unwrap_or(0)
    }

    /// What `client` was sent of every churning resource.
    fn churned_to(&self, client: &str) -> u64 {
        CHURNED
            .iter()
            .map(|resource| self.to(client, resource))
            .sum()
    }

    fn minus(&self, before: &Sent) -> Sent {
        Sent(
            self.0
                .iter()
                .map(|(key, count)| (key.clone(), count - before.0.get(key).copied().unwrap_or(0)))
                .collect(),
        )
    }
}

/// Watch every pod, Deployment, Lease and Event of the cluster until `stop`, taking in whatever comes.
fn watch_everything(client: Client, stop: &CancellationToken) {
    let pods = watcher(Api::<Pod>::all(client.clone()), watcher::Config::default());
    let deployments = watcher(
        Api::<Deployment>::all(client.clone()),
        watcher::Config::default(),
    );
    let leases = watcher(
        Api::<Lease>::all(client.clone()),
        watcher::Config::default(),
    );
    let events = watcher(Api::<Event>::all(client), watcher::Config::default());
    let stop = stop.clone();
    tokio::spawn(async move {
        let mut both = futures::stream::select_all([
            pods.default_backoff().map(drop).boxed(),
            leases.default_backoff().map(drop).boxed(),
            deployments.default_backoff().map(drop).boxed(),
            events.default_backoff().map(drop).boxed(),
        ]);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                next = both.next() => if next.is_none() { return },
            }
        }
    });
}

/// Start the console's watches on `client`, keeping the Events it would show.
fn console_events(client: Client, stop: &CancellationToken) -> Arc<Mutex<Vec<Arc<Event>>>> {
    let (sender, mut actions) = tokio::sync::mpsc::unbounded_channel();
    kmm_tui::tui::feed::start(&client, None, None, &sender, stop);
    let shown = Arc::new(Mutex::new(Vec::new()));
    let kept = shown.clone();
    tokio::spawn(async move {
        while let Some(action) = actions.recv().await {
            if let Action::Data(KindSnapshot::Events(events))
            | Action::Listing(KindSnapshot::Events(events)) = action
            {
                *kept.lock().expect("not poisoned") = events;
            }
        }
    });
    shown
}

fn module() -> Module {
    serde_json::from_value(json!({
        "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "Module",
        "metadata": {"name": "accel", "namespace": "drivers"},
        "spec": {
            "selector": {"node-role.kubernetes.io/worker": ""},
            "moduleLoader": {"container": {
                "modprobe": {"moduleName": "accel"},
                "kernelMappings": [{"regexp": "^.+$", "containerImage": "quay.io/acme/accel:${KERNEL_FULL_VERSION}"}]
            }}
        }
    }))
    .expect("a Module")
}

/// The busy namespace's Deployment, scaled to nothing so that only its own changes count.
fn busy_deployment() -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "busy", "namespace": "busy"},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "busy"}},
            "template": {
                "metadata": {"labels": {"app": "busy"}},
                "spec": {"containers": [{"name": "app", "image": "registry.example/busy:1"}]}
            }
        }
    }))
    .expect("a Deployment")
}

fn lease_name(node: usize) -> String {
    format!("node-{node}")
}

/// Node `node`'s heartbeat Lease as its kubelet renews it the `renewal`th time.
fn heartbeat(node: usize, renewal: usize) -> Lease {
    serde_json::from_value(json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": lease_name(node), "namespace": "kube-node-lease"},
        "spec": {"holderIdentity": lease_name(node), "leaseDurationSeconds": 40, "leaseTransitions": renewal}
    }))
    .expect("a Lease")
}

/// A pod of the busy namespace, bound to a node that does not exist, so nothing runs it.
fn busy_pod(index: usize) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("busy-{index}"), "namespace": "busy", "labels": {"app": "busy"}},
        "spec": {"nodeName": "elsewhere", "containers": [{"name": "app", "image": "registry.example/busy:1"}]}
    }))
    .expect("a Pod")
}

/// An Event about pod `namespace/pod`, as `reporter` records one.
fn pod_event(namespace: &str, pod: &str, reporter: &str) -> Event {
    Event {
        metadata: kube::api::ObjectMeta {
            generate_name: Some(format!("{pod}.")),
            namespace: Some(namespace.to_owned()),
            ..Default::default()
        },
        event_time: Some(MicroTime(jiff::Timestamp::now())),
        reporting_controller: Some(reporter.to_owned()),
        reporting_instance: Some(format!("{reporter}-worker-0")),
        action: Some("Started".to_owned()),
        reason: Some("Started".to_owned()),
        note: Some(format!("Started container of {pod}")),
        type_: Some("Normal".to_owned()),
        regarding: Some(ObjectReference {
            api_version: Some("v1".to_owned()),
            kind: Some("Pod".to_owned()),
            name: Some(pod.to_owned()),
            namespace: Some(namespace.to_owned()),
            ..Default::default()
        }),
        ..Default::default()
    }
}
