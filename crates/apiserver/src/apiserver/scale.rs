//! The `autoscaling/v1` Scale view of a workload: where its desired and observed replica counts and its pod
//! selector live, and the Scale object `kubectl scale` and autoscalers read and write instead of the workload
//! itself, so one client scales every kind alike.

use serde_json::{Map, Value, json};

use super::selector::LabelSelector;

/// Where a resource keeps what its Scale shows: the built-in workloads' fixed fields, or the paths a CRD declares
/// in `subresources.scale`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalePaths {
    /// The desired count (`spec.replicas`), as JSON field names.
    spec_replicas: Vec<String>,
    /// The observed count (`status.replicas`).
    status_replicas: Vec<String>,
    /// How the pod selector is found.
    selector: SelectorSource,
}

/// Where a resource's pod selector is and in which shape it is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
enum SelectorSource {
    /// A `metav1.LabelSelector` object at `spec.selector` (the `apps` workloads).
    LabelSelector,
    /// A plain label map at `spec.selector` (ReplicationControllers).
    LabelMap,
    /// A selector already written as a string, at a path a CRD names (`labelSelectorPath`).
    Text(Vec<String>),
    /// No selector: the Scale's `status.selector` is left out.
    Absent,
}

/// The group, version and kind of every Scale, whatever it scales.
pub(crate) const SCALE_GROUP: &str = "autoscaling";
/// See [`SCALE_GROUP`].
pub(crate) const SCALE_VERSION: &str = "v1";
/// See [`SCALE_GROUP`].
pub(crate) const SCALE_KIND: &str = "Scale";

impl ScalePaths {
    /// The Scale of a built-in resource, for the workloads that have one.
    pub fn builtin(group: &str, plural: &str) -> Option<Self> {
        let selector = match (group, plural) {
            ("apps", "deployments" | "replicasets" | "statefulsets") => {
                SelectorSource::LabelSelector
            }
            ("", "replicationcontrollers") => SelectorSource::LabelMap,
            _ => return None,
        };
        Some(Self {
            spec_replicas: fields(".spec.replicas"),
            status_replicas: fields(".status.replicas"),
            selector,
        })
    }

    /// The Scale a CRD version declares (`subresources.scale` of one entry of `spec.versions`), if any.
    pub fn from_crd_version(version: &Value) -> Option<Self> {
        let scale = version.pointer("/subresources/scale")?;
        let path = |key: &str| scale.get(key).and_then(Value::as_str).map(fields);
        Some(Self {
            spec_replicas: path("specReplicasPath")?,
            status_replicas: path("statusReplicasPath")?,
            selector: path("labelSelectorPath")
                .map_or(SelectorSource::Absent, SelectorSource::Text),
        })
    }

    /// The Scale of `object`: its identity, desired count, observed count and selector. Counts it does not hold
    /// read as 0, as kube-apiserver shows them.
    pub fn scale_of(&self, object: &Value) -> Value {
        let meta = object.get("metadata").cloned().unwrap_or_else(|| json!({}));
        let mut metadata = Map::new();
        for key in [
            "name",
            "namespace",
            "uid",
            "resourceVersion",
            "creationTimestamp",
        ] {
            if let Some(value) = meta.get(key).filter(|v| !v.is_null()) {
                metadata.insert(key.to_owned(), value.clone());
            }
        }
        let count = |path: &[String]| at(object, path).and_then(Value::as_i64).unwrap_or(0);
        let mut status = json!({ "replicas": count(&self.status_replicas) });
        if let Some(selector) = self.selector_of(object) {
            status["selector"] = json!(selector);
        }
        json!({
            "kind": SCALE_KIND,
            "apiVersion": format!("{SCALE_GROUP}/{SCALE_VERSION}"),
            "metadata": metadata,
            "spec": { "replicas": count(&self.spec_replicas) },
            "status": status,
        })
    }

    /// `object` with its desired count set to `replicas`, nothing else changed.
    pub fn with_replicas(&self, object: &Value, replicas: i64) -> Value {
        let mut out = object.clone();
        let Some((last, parents)) = self.spec_replicas.split_last() else {
            return out;
        };
        let mut node = &mut out;
        for key in parents {
            if !node.get(key).is_some_and(Value::is_object) {
                node[key.as_str()] = json!({});
            }
            node = &mut node[key.as_str()];
        }
        node[last.as_str()] = json!(replicas);
        out
    }

    /// The selector in its string form, as the Scale's `status.selector` carries it.
    fn selector_of(&self, object: &Value) -> Option<String> {
        let selector = object.pointer("/spec/selector");
        match &self.selector {
            SelectorSource::LabelSelector => LabelSelector::from_label_selector(selector?)
                .ok()
                .map(|s| s.to_string()),
            SelectorSource::LabelMap => {
                LabelSelector::from_label_selector(&json!({ "matchLabels": selector? }))
                    .ok()
                    .map(|s| s.to_string())
            }
            SelectorSource::Text(path) => {
                at(object, path).and_then(Value::as_str).map(str::to_owned)
            }
            SelectorSource::Absent => None,
        }
    }
}

/// `.spec.replicas` as its field names.
fn fields(path: &str) -> Vec<String> {
    path.trim_start_matches('.')
        .split('.')
        .filter(|f| !f.is_empty())
        .map(str::to_owned)
        .collect()
}

fn at<'a>(object: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(object, |node, key| node.get(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deployment_scale_carries_its_counts_and_selector_string() {
        let paths = ScalePaths::builtin("apps", "deployments").expect("deployments scale");
        let deployment = json!({
            "metadata": {"name": "web", "namespace": "default", "uid": "u", "resourceVersion": "7", "labels": {"a": "b"}},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web", "tier": "front"}}},
            "status": {"replicas": 2},
        });
        let scale = paths.scale_of(&deployment);
        assert_eq!(scale["spec"]["replicas"], 3);
        assert_eq!(
            scale["status"],
            json!({"replicas": 2, "selector": "app=web,tier=front"})
        );
        assert_eq!(scale["metadata"].get("labels"), None);
        assert_eq!(paths.with_replicas(&deployment, 5)["spec"]["replicas"], 5);
    }

    #[test]
    fn a_crd_scale_follows_its_declared_paths() {
        let version = json!({"subresources": {"scale": {
            "specReplicasPath": ".spec.size", "statusReplicasPath": ".status.count",
            "labelSelectorPath": ".status.selector"}}});
        let paths = ScalePaths::from_crd_version(&version).expect("declared");
        let object = json!({"metadata": {"name": "f"}, "spec": {}, "status": {"selector": "x=y"}});
        let scale = paths.scale_of(&object);
        assert_eq!(scale["spec"]["replicas"], 0);
        assert_eq!(scale["status"], json!({"replicas": 0, "selector": "x=y"}));
        assert_eq!(paths.with_replicas(&object, 4)["spec"]["size"], 4);
        assert!(ScalePaths::from_crd_version(&json!({"subresources": {"status": {}}})).is_none());
    }
}
