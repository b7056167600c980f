//! `pods/ephemeralcontainers`, what `kubectl debug` patches: read and written as kube-apiserver serves it (only the
//! ephemeral containers change, existing ones stay as they are, the pod's other fields are left alone), and every
//! NotFound answered with `details`, which kubectl reads without checking they are there.

use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::common::cluster;

const POD: &str = "/api/v1/namespaces/default/pods/app";

/// The status code and JSON body of a request, whatever the code.
async fn exchange(
    client: &kube::Client,
    method: &str,
    uri: &str,
    body: Option<(&str, Value)>,
) -> (u16, Value) {
    let builder = http::Request::builder().method(method).uri(uri);
    let request = match body {
        Some((content_type, value)) => builder
            .header("content-type", content_type)
            .body(serde_json::to_vec(&value).unwrap()),
        None => builder.body(Vec::new()),
    }
    .unwrap();
    let response = client
        .send(request.map(kube::client::Body::from))
        .await
        .unwrap_or_else(|e| panic!("{method} {uri}: {e}"));
    let code = response.status().as_u16();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("the body is read")
        .to_bytes();
    let value = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
        panic!(
            "{method} {uri}: not JSON ({e}): {}",
            String::from_utf8_lossy(&bytes)
        )
    });
    (code, value)
}

async fn create_pod(client: &kube::Client) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "app"},
        "spec": {"containers": [{"name": "main", "image": "busybox:1"}]}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
}

/// What `kubectl debug app --image=busybox --target=main` patches in.
fn debugger(image: &str) -> Value {
    json!({"name": "debugger", "image": image, "targetContainerName": "main",
           "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"})
}

#[tokio::test]
async fn every_not_found_carries_details() {
    let cluster = cluster().await;
    let client = cluster.client();
    create_pod(&client).await;
    for uri in [
        "/api/v1/namespaces/default/pods/missing",
        "/api/v1/namespaces/default/pods/app/nosuchsubresource",
        "/api/v1/namespaces/default/nosuchresources/x",
        "/apis/no.such.group/v1/things",
        "/api/v1/namespaces/default/pods/missing/ephemeralcontainers",
    ] {
        let (code, status) = exchange(&client, "GET", uri, None).await;
        assert_eq!(code, 404, "{uri}: {status}");
        assert_eq!(status["reason"], "NotFound", "{uri}: {status}");
        assert!(
            status["details"].is_object(),
            "{uri} has no details: {status}"
        );
    }
    let (_, missing) = exchange(
        &client,
        "GET",
        "/api/v1/namespaces/default/pods/missing",
        None,
    )
    .await;
    assert_eq!(
        missing["details"],
        json!({"name": "missing", "kind": "pods"})
    );
}

#[tokio::test]
async fn ephemeral_containers_are_added_and_kept() {
    let cluster = cluster().await;
    let client = cluster.client();
    create_pod(&client).await;
    let uri = format!("{POD}/ephemeralcontainers");

    let (code, read) = exchange(&client, "GET", &uri, None).await;
    assert_eq!((code, read["kind"].clone()), (200, json!("Pod")), "{read}");

    // kubectl debug's strategic merge patch.
    let patch = json!({"spec": {"ephemeralContainers": [debugger("busybox")]}});
    let (code, patched) = exchange(
        &client,
        "PATCH",
        &uri,
        Some(("application/strategic-merge-patch+json", patch)),
    )
    .await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(
        patched["spec"]["ephemeralContainers"][0]["name"],
        "debugger"
    );
    assert_eq!(
        patched["spec"]["ephemeralContainers"][0]["targetContainerName"],
        "main"
    );

    // An existing ephemeral container may not change.
    let changed = json!({"spec": {"ephemeralContainers": [debugger("alpine")]}});
    let (code, refused) = exchange(
        &client,
        "PATCH",
        &uri,
        Some(("application/strategic-merge-patch+json", changed)),
    )
    .await;
    assert_eq!(
        (code, refused["reason"].clone()),
        (422, json!("Invalid")),
        "{refused}"
    );
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("spec.ephemeralContainers[0]"),
        "{refused}"
    );

    // Fields an ephemeral container cannot have, a target that does not exist, a name already taken.
    for (container, field) in [
        (
            json!({"name": "ports", "image": "busybox", "ports": [{"containerPort": 80}]}),
            "ports",
        ),
        (
            json!({"name": "aimless", "image": "busybox", "targetContainerName": "nope"}),
            "targetContainerName",
        ),
        (json!({"name": "main", "image": "busybox"}), "name"),
        (json!({"name": "imageless"}), "image"),
    ] {
        let patch = json!({"spec": {"ephemeralContainers": [container]}});
        let (code, refused) = exchange(
            &client,
            "PATCH",
            &uri,
            Some(("application/strategic-merge-patch+json", patch)),
        )
        .await;
        assert_eq!(code, 422, "{field}: {refused}");
        assert!(
            refused["message"].as_str().unwrap().contains(field),
            "{field}: {refused}"
        );
    }

    // A PUT changes nothing but the ephemeral containers; the pod's own update may not change them at all.
    let mut pod = exchange(&client, "GET", POD, None).await.1;
    pod["spec"]["containers"][0]["image"] = json!("busybox:2");
    pod["spec"]["ephemeralContainers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "second", "image": "busybox"}));
    let (code, put) = exchange(
        &client,
        "PUT",
        &uri,
        Some(("application/json", pod.clone())),
    )
    .await;
    assert_eq!(code, 200, "{put}");
    assert_eq!(put["spec"]["containers"][0]["image"], "busybox:1");
    assert_eq!(put["spec"]["ephemeralContainers"][1]["name"], "second");

    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let removal = json!({"spec": {"ephemeralContainers": null}});
    let err = pods
        .patch("app", &PatchParams::default(), &Patch::Merge(&removal))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 422),
        "{err:?}"
    );
}
