//! Pods and pod templates: the pod spec's rules (shared with every workload's template), and what an update of a
//! pod may change, which is very little once it exists.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::container::{self, PodFacts, Role};
use super::field::{Errors, child, items, text};
use super::{meta, pod_claims, scheduling, volumes};
use kmm_api::validation::names;

const RESTART_POLICIES: &[&str] = &["Always", "OnFailure", "Never"];
const DNS_POLICIES: &[&str] = &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"];

/// What a pod update may change, as kube-apiserver lists it in its refusal.
const POD_UPDATE_RULE: &str = "pod updates may not change fields other than `spec.containers[*].image`,\
`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing \
tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// A Pod: metadata and spec.
pub(super) fn pod(obj: &Value) -> Errors {
    let mut errors = meta::object_meta(obj.get("metadata"), "metadata");
    match obj.get("spec") {
        Some(spec) => errors.extend(pod_spec(spec, "spec")),
        None => errors.required("spec", ""),
    }
    errors
}

/// A Pod update: the create rules, then the spec compared with the stored one.
pub(super) fn pod_update(new: &Value, old: &Value) -> Errors {
    let mut errors = pod(new);
    if let (Some(new_spec), Some(old_spec)) = (new.get("spec"), old.get("spec"))
        && mutable_view(new_spec, old_spec) != mutable_view(old_spec, old_spec)
    {
        errors.forbidden("spec", POD_UPDATE_RULE);
    }
    errors
}

/// `spec` with the parts an update may change (as compared with `old`) set to what `old` has, so two specs
/// that differ only in allowed ways compare equal. Which changes are allowed depends on the old spec: tolerations
/// may only be added, the deadline only set or shortened.
fn mutable_view(spec: &Value, old: &Value) -> Value {
    let mut view = spec.clone();
    for list in ["containers", "initContainers"] {
        if let Some(containers) = view.get_mut(list).and_then(Value::as_array_mut) {
            for c in containers.iter_mut().filter_map(Value::as_object_mut) {
                c.remove("image");
            }
        }
    }
    let number = |spec: &Value, key: &str| spec.get(key).and_then(Value::as_i64);
    let deadline_allowed = match (
        number(old, "activeDeadlineSeconds"),
        number(spec, "activeDeadlineSeconds"),
    ) {
        (old, None) => old.is_none(),
        (None, Some(_)) => true,
        (Some(old), Some(new)) => new <= old,
    };
    let old_tolerations = items(old, "tolerations");
    let tolerations_allowed = old_tolerations
        .iter()
        .all(|t| items(spec, "tolerations").contains(t));
    let grace_allowed = number(old, "terminationGracePeriodSeconds").is_some_and(|g| g < 0)
        && number(spec, "terminationGracePeriodSeconds") == Some(1);
    let Some(fields) = view.as_object_mut() else {
        return view;
    };
    for (key, allowed) in [
        ("activeDeadlineSeconds", deadline_allowed),
        ("tolerations", tolerations_allowed),
        ("terminationGracePeriodSeconds", grace_allowed),
    ] {
        if !allowed {
            continue;
        }
        match old.get(key) {
            Some(value) => fields.insert(key.into(), value.clone()),
            None => fields.remove(key),
        };
    }
    view
}

/// A pod spec at `path` (`spec`, or `spec.template.spec` in a workload).
pub(super) fn pod_spec(spec: &Value, path: &str) -> Errors {
    let mut errors = Errors::default();
    let volume_names =
        volumes::volumes(&mut errors, items(spec, "volumes"), &child(path, "volumes"));
    let claims = pod_claims::pod_resource_claims(&mut errors, spec, path);
    let facts = PodFacts {
        volumes: volume_names,
        host_network: spec.get("hostNetwork").and_then(Value::as_bool) == Some(true),
        claims,
    };
    let mut seen = HashSet::new();
    let containers = items(spec, "containers");
    if containers.is_empty() {
        errors.required(&child(path, "containers"), "");
    }
    let init = items(spec, "initContainers");
    container::containers(
        &mut errors,
        init,
        &child(path, "initContainers"),
        Role::Init,
        &facts,
        &mut seen,
    );
    container::containers(
        &mut errors,
        containers,
        &child(path, "containers"),
        Role::Regular,
        &facts,
        &mut seen,
    );
    let restart = text(spec, "restartPolicy");
    if !RESTART_POLICIES.contains(&restart) {
        errors.not_supported(
            &child(path, "restartPolicy"),
            &json!(restart),
            RESTART_POLICIES,
        );
    }
    let dns = text(spec, "dnsPolicy");
    if !DNS_POLICIES.contains(&dns) {
        errors.not_supported(&child(path, "dnsPolicy"), &json!(dns), DNS_POLICIES);
    }
    if dns == "None" && spec.get("dnsConfig").is_none() {
        errors.required(
            &child(path, "dnsConfig"),
            "must provide `dnsConfig` when `dnsPolicy` is None",
        );
    }
    meta::labels(
        &mut errors,
        spec.get("nodeSelector"),
        &child(path, "nodeSelector"),
    );
    for (field, grammar) in [
        (
            "serviceAccountName",
            names::dns1123_subdomain_errors as fn(&str) -> Vec<String>,
        ),
        ("nodeName", names::dns1123_subdomain_errors),
        ("schedulerName", names::dns1123_subdomain_errors),
        ("priorityClassName", names::dns1123_subdomain_errors),
        ("hostname", names::dns1123_label_errors),
        ("subdomain", names::dns1123_label_errors),
    ] {
        let value = text(spec, field);
        if !value.is_empty() {
            errors.invalid_each(&child(path, field), value, grammar(value));
        }
    }
    if let Some(deadline) = spec.get("activeDeadlineSeconds").and_then(Value::as_i64)
        && !(1..=i64::from(i32::MAX)).contains(&deadline)
    {
        errors.invalid(
            &child(path, "activeDeadlineSeconds"),
            &json!(deadline),
            "must be between 1 and 2147483647, inclusive",
        );
    }
    for (i, secret) in items(spec, "imagePullSecrets").iter().enumerate() {
        if text(secret, "name").is_empty() {
            errors.required(
                &child(
                    &super::field::index(&child(path, "imagePullSecrets"), i),
                    "name",
                ),
                "",
            );
        }
    }
    scheduling::tolerations(
        &mut errors,
        items(spec, "tolerations"),
        &child(path, "tolerations"),
    );
    scheduling::node_affinity(
        &mut errors,
        spec.pointer("/affinity/nodeAffinity"),
        &child(&child(path, "affinity"), "nodeAffinity"),
    );
    errors
}

/// A pod template at `path` (`spec.template`): its labels and annotations, and its pod spec.
pub(super) fn template(template: Option<&Value>, path: &str) -> Errors {
    let Some(template) = template else {
        let mut errors = Errors::default();
        errors.required(path, "");
        return errors;
    };
    let mut errors = meta::object_meta(template.get("metadata"), &child(path, "metadata"));
    match template.get("spec") {
        Some(spec) => errors.extend(pod_spec(spec, &child(path, "spec"))),
        None => errors.required(&child(path, "spec"), ""),
    }
    errors
}

/// The template of a controller whose pods run forever (Deployment, ReplicaSet, DaemonSet, ReplicationController):
/// they must restart always, and have no deadline.
/// `controller` names the kind in the refusal of a deadline.
pub(super) fn long_running_template(
    errors: &mut Errors,
    template: Option<&Value>,
    path: &str,
    controller: &str,
) {
    errors.extend(self::template(template, path));
    let Some(spec) = template.and_then(|t| t.get("spec")) else {
        return;
    };
    let spec_at = child(path, "spec");
    let restart = text(spec, "restartPolicy");
    if restart != "Always" {
        errors.not_supported(
            &child(&spec_at, "restartPolicy"),
            &json!(restart),
            &["Always"],
        );
    }
    if spec.get("activeDeadlineSeconds").is_some() {
        errors.forbidden(
            &child(&spec_at, "activeDeadlineSeconds"),
            &format!("activeDeadlineSeconds in {controller} is not Supported"),
        );
    }
}
