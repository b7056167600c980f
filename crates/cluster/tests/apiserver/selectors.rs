//! Label and field selectors, and consistent pagination with `limit`/`continue`.

use k8s_openapi::api::core::v1::{ConfigMap, Event, ObjectReference, Pod};
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use serde_json::json;

use super::common::{cluster, list_evaluated};

async fn labelled(api: &Api<ConfigMap>, name: &str, labels: &[(&str, &str)]) {
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Default::default()
        },
        ..Default::default()
    };
    api.create(&PostParams::default(), &cm).await.unwrap();
}

async fn names(api: &Api<ConfigMap>, selector: &str) -> Vec<String> {
    let list = api
        .list(&ListParams::default().labels(selector))
        .await
        .unwrap();
    let mut names: Vec<String> = list
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn label_selector_operators() {
    let cluster = cluster().await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    labelled(&api, "a", &[("app", "web"), ("tier", "front")]).await;
    labelled(&api, "b", &[("app", "web"), ("tier", "back")]).await;
    labelled(&api, "c", &[("app", "db")]).await;
    labelled(&api, "d", &[]).await;
    assert_eq!(names(&api, "app=web").await, ["a", "b"]);
    assert_eq!(names(&api, "app==web").await, ["a", "b"]);
    // The namespace's root CA has no labels, so the selectors that match what lacks a label select it too.
    assert_eq!(
        names(&api, "app!=web").await,
        ["c", "d", "kube-root-ca.crt"]
    );
    assert_eq!(names(&api, "tier in (front,middle)").await, ["a"]);
    assert_eq!(
        names(&api, "tier notin (front)").await,
        ["b", "c", "d", "kube-root-ca.crt"]
    );
    assert_eq!(names(&api, "tier").await, ["a", "b"]);
    assert_eq!(names(&api, "!tier").await, ["c", "d", "kube-root-ca.crt"]);
    assert_eq!(names(&api, "app=web,tier=back").await, ["b"]);
    let err = api
        .list(&ListParams::default().labels("app in ("))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 400),
        "{err:?}"
    );
}

#[tokio::test]
async fn field_selectors_as_kubectl_describe_uses_them() {
    let cluster = cluster().await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    for (name, node) in [
        ("p1", Some("worker-1")),
        ("p2", Some("worker-2")),
        ("p3", None),
    ] {
        let mut pod: Pod = serde_json::from_value(json!({"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}})).unwrap();
        pod.spec.as_mut().unwrap().node_name = node.map(str::to_string);
        pods.create(&PostParams::default(), &pod).await.unwrap();
    }
    let on = |sel: &str| {
        let pods = pods.clone();
        let sel = sel.to_string();
        async move {
            let mut n: Vec<String> = pods
                .list(&ListParams::default().fields(&sel))
                .await
                .unwrap()
                .items
                .into_iter()
                .filter_map(|p| p.metadata.name)
                .collect();
            n.sort();
            n
        }
    };
    assert_eq!(on("spec.nodeName=worker-1").await, ["p1"]);
    assert_eq!(
        on("spec.nodeName=").await,
        ["p3"],
        "unscheduled pods have an empty nodeName"
    );
    assert_eq!(
        on("spec.nodeName!=worker-1,metadata.name!=p3").await,
        ["p2"]
    );
    assert_eq!(on("status.phase=Pending").await, ["p1", "p2", "p3"]);
    let err = pods
        .list(&ListParams::default().fields("spec.bogus=1"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 400 && s.message.contains("spec.bogus")),
        "{err:?}"
    );

    let events: Api<Event> = Api::namespaced(cluster.client(), "default");
    for (name, pod) in [("e1", "p1"), ("e2", "p2")] {
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            involved_object: ObjectReference {
                kind: Some("Pod".into()),
                name: Some(pod.into()),
                namespace: Some("default".into()),
                ..Default::default()
            },
            reason: Some("Pulled".into()),
            ..Default::default()
        };
        events.create(&PostParams::default(), &event).await.unwrap();
    }
    let selected = events
        .list(&ListParams::default().fields(
            "involvedObject.kind=Pod,involvedObject.name=p2,involvedObject.namespace=default",
        ))
        .await
        .unwrap();
    assert_eq!(selected.items.len(), 1);
    assert_eq!(selected.items[0].metadata.name.as_deref(), Some("e2"));
}

#[tokio::test]
async fn pagination_is_one_consistent_snapshot() {
    let cluster = cluster().await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    for i in 0..25 {
        labelled(
            &api,
            &format!("cm-{i:02}"),
            &[("batch", if i % 2 == 0 { "even" } else { "odd" })],
        )
        .await;
    }
    let mut seen = Vec::new();
    let mut params = ListParams::default().limit(10);
    let mut pages = 0;
    loop {
        let page = api.list(&params).await.unwrap();
        pages += 1;
        assert!(page.items.len() <= 10);
        seen.extend(page.items.into_iter().filter_map(|c| c.metadata.name));
        if pages == 1 {
            // Written between pages: must not appear in this list, which is a snapshot.
            labelled(&api, "cm-00a", &[]).await;
            api.delete("cm-24", &Default::default()).await.unwrap();
        }
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => break,
        }
    }
    assert_eq!(pages, 3);
    // The namespace's root CA is listed too, last by name.
    let mut expected: Vec<String> = (0..25).map(|i| format!("cm-{i:02}")).collect();
    expected.push("kube-root-ca.crt".to_owned());
    assert_eq!(seen, expected);
    let odd = api
        .list(&ListParams::default().labels("batch=odd").limit(5))
        .await
        .unwrap();
    assert_eq!(odd.items.len(), 5);
    assert!(odd.metadata.continue_.is_some());
    let err = api
        .list(&ListParams::default().limit(5).continue_token("garbage"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 400),
        "{err:?}"
    );
}

/// A list read in pages on a busy cluster stays one whole snapshot after the history has moved past its first page,
/// as kube-apiserver's does until etcd compacts: a client paging through every pod of a churning cluster gets them
/// all.
#[tokio::test]
async fn pages_continue_after_the_history_has_moved_past_the_first() {
    let cluster = super::common::cluster_with(kmm_cluster::EmbeddedOptions {
        history: Some(50),
        ..Default::default()
    })
    .await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    for i in 0..30 {
        labelled(&api, &format!("cm-{i:02}"), &[("batch", "paged")]).await;
    }
    let paged = ListParams::default().labels("batch=paged").limit(10);
    let first = api.list(&paged).await.unwrap();
    let token = first.metadata.continue_.clone().expect("more pages");
    // Far more writes than the history holds, before the next page is asked for.
    let churn: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    for i in 0..120 {
        labelled(&churn, &format!("churn-{i:03}"), &[]).await;
    }
    api.delete("cm-15", &Default::default()).await.unwrap();
    let mut seen: Vec<String> = first
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    let mut params = paged.clone().continue_token(&token);
    loop {
        let page = api
            .list(&params)
            .await
            .expect("the next page of the snapshot");
        seen.extend(page.items.into_iter().filter_map(|c| c.metadata.name));
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = paged.clone().continue_token(&token),
            _ => break,
        }
    }
    let expected: Vec<String> = (0..30).map(|i| format!("cm-{i:02}")).collect();
    assert_eq!(
        seen, expected,
        "every object of the snapshot, the deleted one too"
    );
}

/// A console or an operator lists its own few pods by a label of theirs among the hundred thousand of a busy
/// cluster. The server reads the pods holding a required label key from its index (and in pages from the snapshot
/// the first page cut), so such a list tests only them; a selector with no required key still tests every pod.
#[tokio::test]
async fn pods_selected_by_a_required_label_are_read_from_an_index() {
    let cluster = cluster().await;
    let client = cluster.client();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod = |name: &str, labels: serde_json::Value| -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        }))
        .expect("a pod")
    };
    for i in 0..40 {
        let labels = json!({"app": "busy"});
        pods.create(&PostParams::default(), &pod(&format!("busy-{i}"), labels))
            .await
            .expect("the pod is created");
    }
    for i in 0..3 {
        let labels = json!({"app": "driver", "kmm.node.kubernetes.io/worker-action": "Load"});
        pods.create(&PostParams::default(), &pod(&format!("worker-{i}"), labels))
            .await
            .expect("the pod is created");
    }
    let cases = [
        ("kmm.node.kubernetes.io/worker-action", 3, 3.0),
        (
            "kmm.node.kubernetes.io/worker-action=Load,app=driver",
            3,
            3.0,
        ),
        ("app in (driver)", 3, 43.0),
        ("!kmm.node.kubernetes.io/worker-action", 40, 43.0),
    ];
    for (selector, expected, tested) in cases {
        let before = list_evaluated(&client, "pods").await;
        let listed = pods
            .list(&ListParams::default().labels(selector))
            .await
            .expect("the pods are listed");
        let evaluated = list_evaluated(&client, "pods").await - before;
        assert_eq!(listed.items.len(), expected, "{selector}");
        assert_eq!(evaluated, tested, "{selector} tested {evaluated} pods");
    }
    // In pages of two: the pages after the first read the snapshot it cut from the index.
    let before = list_evaluated(&client, "pods").await;
    let mut names = Vec::new();
    let mut params = ListParams::default()
        .labels("kmm.node.kubernetes.io/worker-action")
        .limit(2);
    loop {
        let page = pods.list(&params).await.expect("a page");
        names.extend(page.items.iter().filter_map(|p| p.metadata.name.clone()));
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => break,
        }
    }
    assert_eq!(names, ["worker-0", "worker-1", "worker-2"]);
    assert!(list_evaluated(&client, "pods").await - before <= 4.0);
}
