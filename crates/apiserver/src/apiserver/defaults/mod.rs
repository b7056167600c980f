//! The defaults kube-apiserver applies to built-in kinds on create and update, so an object reads back as it
//! would from a real cluster: clients and controllers rely on seeing them (a pod's restart policy, a port's
//! protocol), and server-side apply keys lists by fields only defaulting fills in (a port is keyed by
//! `containerPort` and `protocol`).

mod pod;
mod resource;
mod service;
mod workloads;

use serde_json::{Value, json};

use super::registry::ResourceType;

pub(crate) use pod::pod_spec;

/// Apply the defaults of `rt`'s kind to `obj`.
pub(crate) fn apply(rt: &ResourceType, obj: &mut Value) {
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "pods") => pod::pod(obj),
        ("", "namespaces") => {
            let name = obj
                .pointer("/metadata/name")
                .cloned()
                .unwrap_or(Value::Null);
            set_default(
                obj,
                &["metadata", "labels", "kubernetes.io/metadata.name"],
                name,
            );
            set_default(obj, &["spec", "finalizers"], json!(["kubernetes"]));
            set_default(obj, &["status", "phase"], json!("Active"));
        }
        ("", "secrets") => {
            set_default(obj, &["type"], json!("Opaque"));
            merge_string_data(obj);
        }
        ("", "services") => service::service(obj),
        ("", "replicationcontrollers") => workloads::replication_controller(obj),
        ("apps", "deployments") => workloads::deployment(obj),
        ("apps", "replicasets") => workloads::replica_set(obj),
        ("apps", "daemonsets") => workloads::daemon_set(obj),
        ("apps", "statefulsets") => workloads::stateful_set(obj),
        ("batch", "jobs") => workloads::job(obj),
        ("batch", "cronjobs") => workloads::cron_job(obj),
        ("", "endpoints") => service::endpoints(obj),
        ("discovery.k8s.io", "endpointslices") => service::endpoint_slice(obj),
        ("rbac.authorization.k8s.io", "rolebindings" | "clusterrolebindings") => subjects(obj),
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            set_default(obj, &["spec", "conversion"], json!({"strategy": "None"}));
        }
        ("", "persistentvolumeclaims") => {
            set_default(obj, &["spec", "volumeMode"], json!("Filesystem"));
            set_default(obj, &["status", "phase"], json!("Pending"));
        }
        ("", "persistentvolumes") => {
            set_default(
                obj,
                &["spec", "persistentVolumeReclaimPolicy"],
                json!("Retain"),
            );
            set_default(obj, &["spec", "volumeMode"], json!("Filesystem"));
            set_default(obj, &["status", "phase"], json!("Pending"));
        }
        ("autoscaling", "horizontalpodautoscalers") => autoscaler(obj),
        ("resource.k8s.io", "resourceclaims") => resource::resource_claim(obj),
        ("resource.k8s.io", "resourceclaimtemplates") => resource::resource_claim_template(obj),
        _ => {}
    }
}

/// Apply what kube-apiserver fills in only when an object of `rt` is created, from the name and uid it has just
/// been given: a Job's generated selector and labels.
pub(crate) fn apply_on_create(rt: &ResourceType, obj: &mut Value) {
    if (rt.group.as_str(), rt.plural.as_str()) == ("batch", "jobs") {
        workloads::job_selector(obj);
    }
}

/// A HorizontalPodAutoscaler scales from one replica; written as v2 without metrics, it targets 80% CPU, the
/// target the autoscaler assumes for a v1 object without one.
fn autoscaler(obj: &mut Value) {
    set_default(obj, &["spec", "minReplicas"], json!(1));
    let v2 = obj.get("apiVersion").and_then(Value::as_str) == Some("autoscaling/v2");
    let no_metrics = obj
        .pointer("/spec/metrics")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if v2 && no_metrics && obj.get("spec").is_some_and(Value::is_object) {
        obj["spec"]["metrics"] = json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 80}}}]);
    }
}

/// A binding's subjects name their API group: none for service accounts, RBAC's for users and groups.
fn subjects(obj: &mut Value) {
    let Some(subjects) = obj.get_mut("subjects").and_then(Value::as_array_mut) else {
        return;
    };
    for subject in subjects {
        let group = match subject.get("kind").and_then(Value::as_str) {
            Some("ServiceAccount") => "",
            Some("User" | "Group") => "rbac.authorization.k8s.io",
            _ => continue,
        };
        if subject
            .get("apiGroup")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            subject["apiGroup"] = json!(group);
        }
    }
}

/// Remove an empty object at `pointer`, which Go clients send for a struct they leave zero (kubectl's
/// `create deployment` sends `strategy: {}`), so that its default applies as kube-apiserver applies it.
fn drop_if_empty(obj: &mut Value, pointer: &str) {
    let Some((parent, key)) = pointer.rsplit_once('/') else {
        return;
    };
    if let Some(map) = obj.pointer_mut(parent).and_then(Value::as_object_mut)
        && map
            .get(key)
            .is_some_and(|v| v.as_object().is_some_and(|o| o.is_empty()))
    {
        map.remove(key);
    }
}

/// Set `path` to `value` unless something is there already.
fn set_default(obj: &mut Value, path: &[&str], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut cur = obj;
    for key in parents {
        if !cur.is_object() {
            return;
        }
        cur = cur
            .as_object_mut()
            .expect("checked object")
            .entry(key.to_string())
            .or_insert_with(|| json!({}));
    }
    if let Some(map) = cur.as_object_mut() {
        map.entry(last.to_string()).or_insert(value);
    }
}

/// Each object of the array at `pointer`, for defaults that apply to every item of a list.
fn each_item<'a>(obj: &'a mut Value, pointer: &str) -> impl Iterator<Item = &'a mut Value> {
    obj.pointer_mut(pointer)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter(|item| item.is_object())
}

/// Secrets: `stringData` is a write-only convenience folded into `data` (base64), as the real server does.
fn merge_string_data(obj: &mut Value) {
    use base64::Engine;
    let Some(string_data) = obj.as_object_mut().and_then(|o| o.remove("stringData")) else {
        return;
    };
    let Value::Object(entries) = string_data else {
        return;
    };
    let data = obj
        .as_object_mut()
        .expect("secret is an object")
        .entry("data")
        .or_insert_with(|| json!({}));
    if let Some(data) = data.as_object_mut() {
        for (key, value) in entries {
            if let Some(text) = value.as_str() {
                data.insert(
                    key,
                    json!(base64::engine::general_purpose::STANDARD.encode(text)),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::registry::Registry;

    #[test]
    fn secret_string_data_becomes_data() {
        let registry = Registry::with_builtins();
        let rt = registry.get("", "secrets").unwrap();
        let mut secret = json!({"stringData": {"token": "abc"}});
        apply(&rt, &mut secret);
        assert_eq!(secret["data"]["token"], "YWJj");
        assert_eq!(secret["type"], "Opaque");
        assert!(secret.get("stringData").is_none());
    }

    #[test]
    fn binding_subjects_name_their_group() {
        let registry = Registry::with_builtins();
        let rt = registry
            .get("rbac.authorization.k8s.io", "rolebindings")
            .unwrap();
        let mut binding = json!({"subjects": [{"kind": "User", "name": "u"}, {"kind": "ServiceAccount", "name": "s"}]});
        apply(&rt, &mut binding);
        assert_eq!(
            binding["subjects"][0]["apiGroup"],
            "rbac.authorization.k8s.io"
        );
        assert_eq!(binding["subjects"][1]["apiGroup"], "");
    }
}
