//! Jobs and CronJobs: pods that run to completion (so they never restart `Always`), counts that are not negative,
//! a schedule that parses, and a template fixed once the Job exists.

use serde_json::{Value, json};

use super::field::{Errors, child, text};
use super::{cron, meta, pod};

/// The longest CronJob name: its Jobs append an 11-character suffix and must still fit a label value.
const CRON_JOB_NAME_MAX: usize = 52;

/// A Job.
pub(super) fn job(obj: &Value) -> Errors {
    let mut errors = meta::object_meta(obj.get("metadata"), "metadata");
    errors.extend(job_spec(obj.get("spec").unwrap_or(&Value::Null), "spec"));
    errors
}

/// A Job update: besides the create rules, what its pods are made from stays fixed.
pub(super) fn job_update(new: &Value, old: &Value) -> Errors {
    let mut errors = job(new);
    for field in ["selector", "completionMode", "completions", "template"] {
        let (now, was) = (
            new.pointer(&format!("/spec/{field}")),
            old.pointer(&format!("/spec/{field}")),
        );
        if now != was {
            let at = format!("spec.{field}");
            let shown = if field == "template" {
                &json!("...")
            } else {
                now.unwrap_or(&Value::Null)
            };
            errors.invalid(&at, shown, "field is immutable");
        }
    }
    errors
}

/// A CronJob.
pub(super) fn cron_job(obj: &Value) -> Errors {
    let mut errors = meta::object_meta(obj.get("metadata"), "metadata");
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if name.len() > CRON_JOB_NAME_MAX {
        errors.invalid(
            "metadata.name",
            &json!(name),
            &format!("must be no more than {CRON_JOB_NAME_MAX} characters"),
        );
    }
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let schedule = text(spec, "schedule");
    if schedule.is_empty() {
        errors.required("spec.schedule", "");
    } else if let Some(why) = cron::schedule_error(schedule) {
        errors.invalid("spec.schedule", &json!(schedule), &why);
    }
    let zone = text(spec, "timeZone");
    if !zone.is_empty() && jiff::tz::TimeZone::get(zone).is_err() {
        errors.invalid(
            "spec.timeZone",
            &json!(zone),
            &format!("unknown time zone {zone}"),
        );
    }
    let policy = text(spec, "concurrencyPolicy");
    if !["Allow", "Forbid", "Replace"].contains(&policy) {
        errors.not_supported(
            "spec.concurrencyPolicy",
            &json!(policy),
            &["Allow", "Forbid", "Replace"],
        );
    }
    for field in [
        "startingDeadlineSeconds",
        "successfulJobsHistoryLimit",
        "failedJobsHistoryLimit",
    ] {
        errors.non_negative(spec, field, "spec");
    }
    match spec.get("jobTemplate") {
        Some(template) => {
            errors.extend(meta::object_meta(
                template.get("metadata"),
                "spec.jobTemplate.metadata",
            ));
            errors.extend(job_spec(
                template.get("spec").unwrap_or(&Value::Null),
                "spec.jobTemplate.spec",
            ));
        }
        None => errors.required("spec.jobTemplate", ""),
    }
    errors
}

/// A Job's spec at `path` (`spec`, or `spec.jobTemplate.spec` in a CronJob).
fn job_spec(spec: &Value, path: &str) -> Errors {
    let mut errors = Errors::default();
    for field in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
    ] {
        errors.non_negative(spec, field, path);
    }
    let mode = text(spec, "completionMode");
    match mode {
        "" | "NonIndexed" => {}
        "Indexed" if spec.get("completions").is_none() => errors.required(
            &child(path, "completions"),
            "when completion mode is Indexed",
        ),
        "Indexed" => {}
        other => errors.not_supported(
            &child(path, "completionMode"),
            &json!(other),
            &["NonIndexed", "Indexed"],
        ),
    }
    let template = spec.get("template");
    let manual = spec.get("manualSelector").and_then(Value::as_bool) == Some(true);
    match spec.get("selector") {
        None if manual => errors.required(&child(path, "selector"), ""),
        None => {}
        Some(selector) => {
            meta::label_selector(&mut errors, selector, &child(path, "selector"));
            let labels = template.and_then(|t| t.pointer("/metadata/labels"));
            if !meta::selector_matches(selector, labels) {
                errors.invalid_shown(
                    &child(path, "template.metadata.labels"),
                    &meta::show_labels(labels),
                    "`selector` does not match template `labels`",
                );
            }
        }
    }
    let template_at = child(path, "template");
    errors.extend(pod::template(template, &template_at));
    if let Some(spec) = template.and_then(|t| t.get("spec")) {
        let restart = text(spec, "restartPolicy");
        if !["OnFailure", "Never"].contains(&restart) {
            errors.not_supported(
                &child(&template_at, "spec.restartPolicy"),
                &json!(restart),
                &["OnFailure", "Never"],
            );
        }
    }
    errors
}
