//! Jobs and CronJobs: restart policies of pods that complete, counts, schedules; a Job's template fixed.

use serde_json::{Value, json};

use super::{admitted, check, check_update, refused};
use crate::common::cluster;

fn job_spec(restart: &str) -> Value {
    json!({"template": {"spec": {"restartPolicy": restart, "containers": [{"name": "run", "image": "busybox:1", "command": ["true"]}]}}})
}

fn job(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "default"}, "spec": spec})
}

fn cron_job(name: &str, schedule: &str) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedule": schedule, "jobTemplate": {"spec": job_spec("OnFailure")}}})
}

#[tokio::test]
async fn jobs_and_cron_jobs_are_validated_as_kube_apiserver_validates_them() {
    let cluster = cluster().await;
    let client = cluster.client();
    let mut negative = job_spec("Never");
    negative["backoffLimit"] = json!(-1);
    negative["completionMode"] = json!("Sometimes");
    let cases = vec![
        admitted("a job", job("ok", job_spec("Never"))),
        admitted("a cron job", cron_job("nightly", "0 3 * * *")),
        admitted("a cron job by descriptor", cron_job("hourly", "@hourly")),
        refused(
            "a job whose pods restart Always",
            job("forever", job_spec("Always")),
            &[(
                "spec.template.spec.restartPolicy",
                "Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\"",
            )],
        ),
        refused(
            "negative retries and an unknown completion mode",
            job("negative", negative),
            &[
                (
                    "spec.backoffLimit",
                    "Invalid value: -1: must be greater than or equal to 0",
                ),
                ("spec.completionMode", "Unsupported value: \"Sometimes\""),
            ],
        ),
        refused(
            "a schedule that is not one",
            cron_job("never", "every day"),
            &[("spec.schedule", "Invalid value: \"every day\"")],
        ),
        refused(
            "a minute of 70",
            cron_job("late", "70 * * * *"),
            &[("spec.schedule", "Invalid value: \"70 * * * *\"")],
        ),
        refused(
            "a cron job name of 53 characters",
            cron_job(&"c".repeat(53), "@daily"),
            &[("metadata.name", "Invalid value: \"ccc")],
        ),
    ];
    check(&client, cases).await;
    check_update(
        &client,
        "a job's template",
        job("fixed", job_spec("Never")),
        json!({"spec": {"template": {"spec": {"containers": [{"name": "run", "image": "busybox:2", "command": ["true"]}]}}}}),
        &[("spec.template", "Invalid value: ")],
    )
    .await;
    cluster.shutdown().await;
}
