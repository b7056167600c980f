//! Logs and attach as the kubelet serves them, through kube-rs over HTTPS: a followed log and an attach end when the
//! container exits (so `kubectl logs -f` and `kubectl attach` return), init containers' logs are served, and the
//! log options (`previous`, `sinceSeconds`, `sinceTime`, `tailLines`, `limitBytes`, `timestamps`) select as the
//! kubelet's do.

use std::time::Duration;

use futures::AsyncReadExt;
use k8s_openapi::api::core::v1::Pod;
use kmm_cluster::EmbeddedOptions;
use kube::api::{Api, AttachParams, LogParams};
use kube::config::{Config, KubeConfigOptions, Kubeconfig};
use serde_json::json;
use tokio::io::AsyncReadExt as _;

use crate::common_kubelet::{ONE_WORKER as SCENARIO, Sim, container, start_with};

/// Far longer than any stream here takes on a loaded machine; a stream that never ends fails the test here.
const NEVER: Duration = Duration::from_secs(180);

/// A client of the HTTPS endpoint: attach needs a connection to upgrade, which the in-process client has not.
async fn https_client(sim: &Sim) -> kube::Client {
    let kubeconfig = Kubeconfig::from_yaml(sim.cluster.kubeconfig().expect("served over HTTPS"))
        .expect("a valid kubeconfig");
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("a client configuration");
    kube::Client::try_from(config).expect("a client")
}

/// The message of the error a log request is refused with.
async fn refusal(pods: &Api<Pod>, params: &LogParams) -> (u16, String) {
    match pods.logs("job", params).await {
        Err(kube::Error::Api(status)) => (status.code, status.message.clone()),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn a_followed_log_and_an_attach_end_with_their_container() {
    let sim = start_with(
        SCENARIO,
        EmbeddedOptions {
            listen: Some("127.0.0.1:0".parse().unwrap()),
            ..Default::default()
        },
    )
    .await;
    sim.create_pod(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "job", "namespace": "default",
                     "annotations": {"sim.kmm-tui.io/run-for": "60s"}},
        "spec": {
            "nodeName": "worker-0",
            "restartPolicy": "Never",
            "initContainers": [{"name": "downloader", "image": "quay.io/org/app:1",
                                "command": ["echo", "fetched"]}],
            "containers": [{"name": "main", "image": "quay.io/org/app:1",
                            "command": ["echo", "done"]}]
        }
    }))
    .await;
    sim.pod_until("job", "its container runs", |p| {
        container(p, "main").is_some_and(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()))
    })
    .await;
    let pods: Api<Pod> = Api::namespaced(https_client(&sim).await, "default");

    let mut attached = pods
        .attach("job", &AttachParams::default().stdin(false).stderr(false))
        .await
        .expect("attach is served");
    let mut attached_out = attached.stdout().expect("stdout was asked for");
    let attach_status = attached.take_status().expect("a status");
    let follow = LogParams {
        follow: true,
        ..LogParams::default()
    };
    let mut followed = pods.log_stream("job", &follow).await.expect("a log stream");

    let mut log = String::new();
    tokio::time::timeout(NEVER, followed.read_to_string(&mut log))
        .await
        .expect("the followed log ends when the container exits")
        .expect("the log is read");
    assert_eq!(log, "done\n");
    let mut shown = String::new();
    tokio::time::timeout(NEVER, attached_out.read_to_string(&mut shown))
        .await
        .expect("attach ends when the container exits")
        .expect("attach output is read");
    assert_eq!(shown, "done\n");
    let status = tokio::time::timeout(NEVER, attach_status)
        .await
        .expect("attach reports how it ended")
        .expect("a status frame");
    assert_eq!(status.status.as_deref(), Some("Success"), "{status:?}");
    tokio::time::timeout(NEVER, attached.join())
        .await
        .expect("the attach session closes")
        .expect("cleanly");

    // Once the container has ended, a followed log is all there is and ends at once.
    let mut again = String::new();
    let mut followed = pods.log_stream("job", &follow).await.expect("a log stream");
    tokio::time::timeout(NEVER, followed.read_to_string(&mut again))
        .await
        .expect("a followed log of an exited container ends")
        .expect("the log is read");
    assert_eq!(again, "done\n");

    // Init containers' logs are served.
    let init = LogParams {
        container: Some("downloader".into()),
        ..LogParams::default()
    };
    assert_eq!(
        pods.logs("job", &init).await.expect("init logs"),
        "fetched\n"
    );

    // Options select as the kubelet's do.
    let with = |edit: fn(&mut LogParams)| {
        let mut params = LogParams::default();
        edit(&mut params);
        params
    };
    let stamped = pods
        .logs("job", &with(|p| p.timestamps = true))
        .await
        .unwrap();
    let (stamp, text) = stamped.trim_end().split_once(' ').expect("a timestamp");
    assert_eq!(text, "done");
    assert!(
        stamp.parse::<jiff::Timestamp>().is_ok(),
        "an RFC 3339 timestamp: {stamp}"
    );
    assert_eq!(
        pods.logs("job", &with(|p| p.since_seconds = Some(3600)))
            .await
            .unwrap(),
        "done\n"
    );
    let future = jiff::Timestamp::now() + jiff::SignedDuration::from_hours(1);
    let since_future = LogParams {
        since_time: Some(future),
        ..LogParams::default()
    };
    assert_eq!(pods.logs("job", &since_future).await.unwrap(), "");
    assert_eq!(
        pods.logs("job", &with(|p| p.tail_lines = Some(0)))
            .await
            .unwrap(),
        ""
    );
    assert_eq!(
        pods.logs("job", &with(|p| p.limit_bytes = Some(2)))
            .await
            .unwrap(),
        "do"
    );

    // Refusals, worded as kube-apiserver and the kubelet word them.
    let (code, message) = refusal(&pods, &with(|p| p.previous = true)).await;
    assert_eq!(code, 400);
    assert_eq!(
        message,
        "previous terminated container \"main\" in pod \"job\" not found"
    );
    let (code, message) = refusal(&pods, &with(|p| p.container = Some("nope".into()))).await;
    assert_eq!(code, 400);
    assert_eq!(message, "container nope is not valid for pod job");
    let (code, message) = refusal(&pods, &with(|p| p.since_seconds = Some(0))).await;
    assert_eq!(code, 422);
    assert!(message.contains("sinceSeconds"), "{message}");
    sim.stop().await;
}
