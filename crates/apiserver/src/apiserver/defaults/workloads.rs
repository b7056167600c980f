//! Workload controllers' defaults: replica counts, history limits, rollout strategies, Job counts and CronJob
//! policies, and their pod templates' defaults.

use serde_json::{Value, json};

use super::{drop_if_empty, pod_spec, set_default};

/// A Deployment: one replica, rolled 25% at a time, ten old ReplicaSets kept, ten minutes to progress.
pub(super) fn deployment(obj: &mut Value) {
    drop_if_empty(obj, "/spec/strategy");
    set_default(obj, &["spec", "replicas"], json!(1));
    set_default(obj, &["spec", "revisionHistoryLimit"], json!(10));
    set_default(obj, &["spec", "progressDeadlineSeconds"], json!(600));
    set_default(obj, &["spec", "strategy", "type"], json!("RollingUpdate"));
    if let Some(strategy) = obj.pointer_mut("/spec/strategy")
        && strategy["type"] == "RollingUpdate"
    {
        set_default(strategy, &["rollingUpdate", "maxSurge"], json!("25%"));
        set_default(strategy, &["rollingUpdate", "maxUnavailable"], json!("25%"));
    }
    template(obj, "/spec/template/spec");
}

/// A ReplicaSet: one replica.
pub(super) fn replica_set(obj: &mut Value) {
    set_default(obj, &["spec", "replicas"], json!(1));
    template(obj, "/spec/template/spec");
}

/// A ReplicationController: one replica, and a selector and labels taken from its template's labels.
pub(super) fn replication_controller(obj: &mut Value) {
    set_default(obj, &["spec", "replicas"], json!(1));
    let labels = obj.pointer("/spec/template/metadata/labels").cloned();
    if let Some(labels) = labels.filter(|l| l.as_object().is_some_and(|l| !l.is_empty())) {
        drop_if_empty(obj, "/spec/selector");
        set_default(obj, &["spec", "selector"], labels.clone());
        drop_if_empty(obj, "/metadata/labels");
        set_default(obj, &["metadata", "labels"], labels);
    }
    template(obj, "/spec/template/spec");
}

/// A StatefulSet: one replica, its pods started one at a time in order, rolled from the highest ordinal down, ten
/// old revisions kept, its volume claims retained.
pub(super) fn stateful_set(obj: &mut Value) {
    drop_if_empty(obj, "/spec/updateStrategy");
    set_default(obj, &["spec", "replicas"], json!(1));
    set_default(obj, &["spec", "podManagementPolicy"], json!("OrderedReady"));
    set_default(obj, &["spec", "revisionHistoryLimit"], json!(10));
    set_default(
        obj,
        &["spec", "updateStrategy", "type"],
        json!("RollingUpdate"),
    );
    if let Some(strategy) = obj.pointer_mut("/spec/updateStrategy")
        && strategy["type"] == "RollingUpdate"
    {
        set_default(strategy, &["rollingUpdate", "partition"], json!(0));
    }
    for when in ["whenDeleted", "whenScaled"] {
        set_default(
            obj,
            &["spec", "persistentVolumeClaimRetentionPolicy", when],
            json!("Retain"),
        );
    }
    template(obj, "/spec/template/spec");
}

/// A DaemonSet: rolled one node at a time, ten old revisions kept.
pub(super) fn daemon_set(obj: &mut Value) {
    drop_if_empty(obj, "/spec/updateStrategy");
    set_default(obj, &["spec", "revisionHistoryLimit"], json!(10));
    set_default(
        obj,
        &["spec", "updateStrategy", "type"],
        json!("RollingUpdate"),
    );
    if let Some(strategy) = obj.pointer_mut("/spec/updateStrategy")
        && strategy["type"] == "RollingUpdate"
    {
        set_default(strategy, &["rollingUpdate", "maxUnavailable"], json!(1));
        set_default(strategy, &["rollingUpdate", "maxSurge"], json!(0));
    }
    template(obj, "/spec/template/spec");
}

/// A Job: one pod to completion, six retries, not suspended, pods replaced once they are terminal.
pub(super) fn job(obj: &mut Value) {
    set_default(obj, &["spec", "backoffLimit"], json!(6));
    set_default(obj, &["spec", "completions"], json!(1));
    set_default(obj, &["spec", "parallelism"], json!(1));
    set_default(obj, &["spec", "completionMode"], json!("NonIndexed"));
    set_default(obj, &["spec", "suspend"], json!(false));
    if obj.pointer("/spec/podFailurePolicy").is_none() {
        set_default(
            obj,
            &["spec", "podReplacementPolicy"],
            json!("TerminatingOrFailed"),
        );
    }
    template(obj, "/spec/template/spec");
}

/// A new Job's pods carry its name and uid, and its selector is the uid, so it selects its own pods and never
/// another Job's (`kubectl logs job/NAME` follows the selector): unless the Job asks to choose its selector itself
/// (`manualSelector`). A label or selector key the client set is kept; only its absence is filled in.
pub(super) fn job_selector(obj: &mut Value) {
    if obj.pointer("/spec/manualSelector") == Some(&json!(true)) {
        return;
    }
    let meta = |key: &str| obj.pointer(&format!("/metadata/{key}")).cloned();
    let (Some(name), Some(uid)) = (meta("name"), meta("uid")) else {
        return;
    };
    for (label, value) in [
        ("batch.kubernetes.io/controller-uid", &uid),
        ("batch.kubernetes.io/job-name", &name),
        ("controller-uid", &uid),
        ("job-name", &name),
    ] {
        set_default(
            obj,
            &["spec", "template", "metadata", "labels", label],
            value.clone(),
        );
    }
    set_default(
        obj,
        &[
            "spec",
            "selector",
            "matchLabels",
            "batch.kubernetes.io/controller-uid",
        ],
        uid,
    );
}

/// A CronJob: concurrent runs allowed, not suspended, three successful and one failed Job kept.
pub(super) fn cron_job(obj: &mut Value) {
    set_default(obj, &["spec", "concurrencyPolicy"], json!("Allow"));
    set_default(obj, &["spec", "suspend"], json!(false));
    set_default(obj, &["spec", "successfulJobsHistoryLimit"], json!(3));
    set_default(obj, &["spec", "failedJobsHistoryLimit"], json!(1));
    template(obj, "/spec/jobTemplate/spec/template/spec");
}

fn template(obj: &mut Value, pointer: &str) {
    if let Some(spec) = obj.pointer_mut(pointer) {
        pod_spec(spec);
    }
}
