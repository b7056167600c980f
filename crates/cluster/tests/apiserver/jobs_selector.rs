//! A new Job gets the selector and pod labels kube-apiserver generates from its uid (unless it chooses its selector
//! itself), so it selects only its own pods: `kubectl logs job/NAME` reads the Job's pod, not another's.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use super::common::cluster;
use super::endpoints::Kubectl;

fn job(name: &str, extra_spec: Value) -> Job {
    let mut spec = json!({
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"restartPolicy": "Never",
                "containers": [{"name": "work", "image": "registry.k8s.io/pause:3.10"}]}
        }
    });
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra_spec.as_object()) {
        spec.extend(extra.clone());
    }
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap()
}

fn template_labels(job: &Job) -> BTreeMap<String, String> {
    job.spec
        .as_ref()
        .and_then(|s| s.template.metadata.as_ref())
        .and_then(|m| m.labels.clone())
        .unwrap_or_default()
}

fn match_labels(job: &Job) -> BTreeMap<String, String> {
    job.spec
        .as_ref()
        .and_then(|s| s.selector.as_ref())
        .and_then(|s| s.match_labels.clone())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_created_job_selects_its_pods_by_its_uid() {
    let cluster = cluster().await;
    let jobs = Api::<Job>::namespaced(cluster.client(), "default");
    let created = jobs
        .create(&PostParams::default(), &job("backup", json!({})))
        .await
        .expect("the Job is created");
    let uid = created.uid().expect("a uid");
    assert_eq!(
        match_labels(&created),
        BTreeMap::from([("batch.kubernetes.io/controller-uid".to_owned(), uid.clone())])
    );
    let labels = template_labels(&created);
    for (key, value) in [
        ("batch.kubernetes.io/controller-uid", uid.as_str()),
        ("controller-uid", uid.as_str()),
        ("batch.kubernetes.io/job-name", "backup"),
        ("job-name", "backup"),
        ("app", "backup"),
    ] {
        assert_eq!(
            labels.get(key).map(String::as_str),
            Some(value),
            "{labels:?}"
        );
    }
    assert_eq!(
        match_labels(&jobs.get("backup").await.unwrap()),
        match_labels(&created),
        "the selector is stored"
    );

    let manual = jobs
        .create(
            &PostParams::default(),
            &job(
                "manual",
                json!({"manualSelector": true, "selector": {"matchLabels": {"app": "manual"}}}),
            ),
        )
        .await
        .expect("the Job with its own selector is created");
    assert_eq!(
        match_labels(&manual),
        BTreeMap::from([("app".to_owned(), "manual".to_owned())])
    );
    assert_eq!(
        template_labels(&manual),
        BTreeMap::from([("app".to_owned(), "manual".to_owned())])
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn kubectl_logs_of_a_job_reads_the_jobs_own_pod() {
    let Some((cluster, kubectl)) = Kubectl::with_cluster().await else {
        return;
    };
    let client = cluster.client();
    let jobs = Api::<Job>::namespaced(client.clone(), "default");
    let pods = Api::<Pod>::namespaced(client.clone(), "default");
    // Each Job gets one pod carrying its template's labels; the other Job's pod is the older one, which kubectl
    // would pick if the Job selected every pod.
    for name in ["first", "second"] {
        let created = jobs
            .create(&PostParams::default(), &job(name, json!({})))
            .await
            .expect("the Job is created");
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": format!("{name}-pod"), "labels": template_labels(&created)},
            "spec": {"restartPolicy": "Never",
                "containers": [{"name": "work", "image": "registry.k8s.io/pause:3.10"}]}
        }))
        .unwrap();
        pods.create(&PostParams::default(), &pod)
            .await
            .expect("the pod is created");
    }
    let output = kubectl
        .run(&["logs", "-n", "default", "job/second", "-v=6"], "")
        .await;
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(log.contains("/pods/second-pod/log"), "{log}");
    assert!(!log.contains("/pods/first-pod/log"), "{log}");
    cluster.shutdown().await;
}
