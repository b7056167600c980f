//! The console's watches against the embedded cluster: a first list of many objects reaches the UI task as its
//! pages arrive, what is kept is what the panes read, and the YAML view and the editor read the whole object.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Pod};
use kmm_api::kmm::labels;
use kmm_cluster::sim::scenario::Scenario;
use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};
use kmm_tui::tui::action::Action;
use kmm_tui::tui::data::{Kind, KindSnapshot};
use kmm_tui::tui::target::Target;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// More nodes than one page of a list (500) holds.
const NODES: usize = 1200;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_list_of_many_nodes_is_on_screen_with_its_first_page() {
    let scenario = Scenario::parse(
        &format!(
            "seed: 3\ntimeScale: 10\nnodes:\n  - namePrefix: worker-\n    count: {NODES}\n    \
             kernelVersion: 5.14.0-284.el9.x86_64\n    osImage: Red Hat Enterprise Linux CoreOS\n"
        ),
        "tui_feed_pages",
        None,
    )
    .expect("the scenario parses");
    let cluster = EmbeddedCluster::start(EmbeddedOptions {
        scenario: Some(scenario),
        ..Default::default()
    })
    .await
    .expect("the embedded cluster starts");
    let (sender, mut actions) = tokio::sync::mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    kmm_tui::tui::feed::start(&cluster.client(), None, None, &sender, &cancel);

    // Every list of nodes the UI task receives, and whether it was a first list still arriving.
    let mut received: Vec<(bool, usize)> = Vec::new();
    let whole = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            match actions.recv().await.expect("the feed runs") {
                Action::Listing(KindSnapshot::Nodes(nodes)) => received.push((false, nodes.len())),
                Action::Data(KindSnapshot::Nodes(nodes)) => {
                    received.push((true, nodes.len()));
                    return nodes;
                }
                Action::Feed(Kind::Node, kmm_tui::tui::data::FeedState::Failing(why)) => {
                    panic!("the node watch fails: {why}")
                }
                _ => {}
            }
        }
    })
    .await
    .expect("the whole list of nodes arrives");

    let (first_whole, first_count) = received[0];
    assert!(
        !first_whole && first_count > 0 && first_count < NODES,
        "the first page goes out before the rest is read: {received:?}"
    );
    assert!(
        received.windows(2).all(|pair| pair[0].1 <= pair[1].1),
        "the pages only add nodes: {received:?}"
    );
    assert_eq!(whole.len(), NODES, "{received:?}");
    assert!(
        whole
            .iter()
            .all(|node| node.metadata.managed_fields.is_none()),
        "no pane reads managedFields, so none is kept"
    );
    cancel.cancel();
    cluster.shutdown().await;
}

/// Wait for the first action `pick` takes.
async fn next_matching<T>(
    actions: &mut tokio::sync::mpsc::UnboundedReceiver<Action>,
    mut pick: impl FnMut(Action) -> Option<T>,
) -> T {
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let Some(found) = pick(actions.recv().await.expect("the watches run")) {
                return found;
            }
        }
    })
    .await
    .expect("the awaited change arrives")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_keep_what_panes_draw_and_the_yaml_view_follows_the_whole_object() {
    let cluster = EmbeddedCluster::start(EmbeddedOptions::default())
        .await
        .expect("the embedded cluster starts");
    let client = cluster.client();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "acme"}})).expect("namespace"),
        )
        .await
        .expect("the namespace is created");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "acme");
    let worker: Pod = serde_json::from_value(json!({
        "metadata": {
            "name": "kmod-worker",
            "labels": {labels::WORKER_ACTION: "Load"},
            "annotations": {labels::WORKER_CONFIG: "containerImage: quay.io/x/kmod:6.1\n", "note": "kept"}
        },
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": "worker-1"},
            "containers": [{"name": "worker", "image": "quay.io/x/worker:1", "args": ["kmod", "load"],
                            "env": [{"name": "DEBUG", "value": "1"}]}],
            "volumes": [{"name": "config", "emptyDir": {}}]
        }
    }))
    .expect("pod");
    pods.create(&PostParams::default(), &worker)
        .await
        .expect("the pod is created");

    let (sender, mut actions) = tokio::sync::mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    kmm_tui::tui::feed::start(&client, None, None, &sender, &cancel);
    let listed = next_matching(&mut actions, |action| match action {
        Action::Data(KindSnapshot::Pods(pods)) if !pods.is_empty() => Some(pods),
        _ => None,
    })
    .await;
    let kept = &listed[0];
    let annotations = kept.metadata.annotations.clone().unwrap_or_default();
    assert!(
        !annotations.contains_key(labels::WORKER_CONFIG),
        "{annotations:?}"
    );
    assert_eq!(annotations.get("note").map(String::as_str), Some("kept"));
    let spec = kept.spec.clone().expect("the spec's drawn part is kept");
    assert!(spec.volumes.is_none(), "{spec:?}");
    assert_eq!(
        spec.containers[0].image.as_deref(),
        Some("quay.io/x/worker:1")
    );
    assert!(spec.containers[0].args.is_none() && spec.containers[0].env.is_none());
    assert_eq!(
        spec.node_selector
            .unwrap_or_default()
            .get("kubernetes.io/hostname")
            .map(String::as_str),
        Some("worker-1"),
        "the node a pod is pinned to is drawn"
    );

    let target = Target::namespaced(Kind::Pod, "acme", "kmod-worker");
    kmm_tui::tui::live::follow(&client, target.clone(), &sender, cancel.child_token());
    let whole = next_matching(&mut actions, |action| match action {
        Action::Object(shown, object) if shown == target => Some(object),
        _ => None,
    })
    .await
    .expect("the pod can be read")
    .expect("the pod exists");
    assert_eq!(whole["spec"]["volumes"][0]["name"], "config");
    assert_eq!(
        whole["spec"]["containers"][0]["args"],
        json!(["kmod", "load"])
    );
    assert!(whole["metadata"]["annotations"][labels::WORKER_CONFIG].is_string());
    let read = kmm_tui::tui::live::read(&client, &target)
        .await
        .expect("the editor's read");
    assert_eq!(read["spec"]["volumes"], whole["spec"]["volumes"]);

    pods.patch(
        "kmod-worker",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}})),
    )
    .await
    .expect("the pod is changed");
    let changed = next_matching(&mut actions, |action| match action {
        Action::Object(shown, Ok(Some(object))) if shown == target => {
            (object["metadata"]["labels"]["touched"] == "yes").then_some(object)
        }
        _ => None,
    })
    .await;
    assert_eq!(changed["spec"]["volumes"][0]["name"], "config");

    pods.delete("kmod-worker", &DeleteParams::default().grace_period(0))
        .await
        .expect("the pod is deleted");
    next_matching(&mut actions, |action| match action {
        Action::Object(shown, Ok(None)) if shown == target => Some(()),
        _ => None,
    })
    .await;

    let missing = Target::namespaced(Kind::Pod, "acme", "never-there");
    let refused = kmm_tui::tui::live::read(&client, &missing)
        .await
        .expect_err("nothing to read");
    assert!(
        refused.starts_with("cannot read Pod acme/never-there: "),
        "{refused}"
    );
    cancel.cancel();
    cluster.shutdown().await;
}
