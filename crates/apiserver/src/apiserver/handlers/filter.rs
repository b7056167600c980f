//! Which objects a list or watch returns: namespace, label selector and field selector.

use serde_json::Value;

use super::RequestContext;
use crate::apiserver::errors::ApiError;
use crate::apiserver::objects;
use crate::apiserver::registry::ResourceType;
use crate::apiserver::selector::{FieldSelector, LabelSelector};
use crate::store::StoredObject;

/// The selection a list or watch request makes.
pub(super) struct Filter {
    namespace: Option<String>,
    labels: Option<LabelSelector>,
    fields: Option<(FieldSelector, Vec<(String, String)>)>,
}

impl Filter {
    /// Parse the request's selectors, rejecting field selectors the resource does not support with 400.
    pub(super) fn from_request(ctx: &RequestContext) -> Result<Self, ApiError> {
        let labels = match ctx.query.get("labelSelector") {
            Some(s) => Some(LabelSelector::parse(s).map_err(|e| {
                ApiError::bad_request(format!("unable to parse labelSelector {s:?}: {e}"))
            })?),
            None => None,
        };
        let fields = match ctx.query.get("fieldSelector") {
            Some(s) => {
                let selector = FieldSelector::parse(s).map_err(|e| {
                    ApiError::bad_request(format!("unable to parse fieldSelector {s:?}: {e}"))
                })?;
                let mut mapping = Vec::new();
                for field in selector.fields() {
                    let stored = stored_field(&ctx.rt, field).ok_or_else(|| {
                        ApiError::bad_request(format!("field label not supported: {field}"))
                    })?;
                    mapping.push((field.to_string(), stored));
                }
                Some((selector, mapping))
            }
            None => None,
        };
        Ok(Self {
            namespace: ctx.path.namespace.clone(),
            labels,
            fields,
        })
    }

    /// The namespace restriction, if any.
    pub(super) fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The `field=value` terms of the field selector, by the stored field they read: candidates for a store
    /// index lookup before [`Filter::matches`] checks the rest.
    pub(super) fn field_equalities(&self) -> impl Iterator<Item = (&str, &str)> {
        self.fields.iter().flat_map(|(selector, mapping)| {
            selector.equalities().filter_map(|(field, value)| {
                let stored = mapping.iter().find(|(f, _)| f == field)?;
                Some((stored.1.as_str(), value))
            })
        })
    }

    /// The label keys every selected object holds, from the label selector.
    pub(super) fn required_labels(&self) -> impl Iterator<Item = &str> {
        self.labels.iter().flat_map(LabelSelector::required_keys)
    }

    /// Whether the stored object is selected, reading its parsed value only when a selector needs it (objects held
    /// only serialised are parsed for that).
    pub(super) fn selects(&self, obj: &StoredObject) -> bool {
        if let Some(ns) = &self.namespace
            && obj.namespace() != ns
        {
            return false;
        }
        if self.labels.is_none() && self.fields.is_none() {
            return true;
        }
        if let Some(selected) = self.selects_by_name(obj) {
            return selected;
        }
        self.matches(&obj.value())
    }

    /// Whether the stored object is selected, when the selection reads nothing but its name and namespace (as
    /// `kubectl get <kind> <name> --watch` and kube's `await_condition` do): told without parsing the object.
    /// Nodes are held only serialised, and a rollout that drains and reboots hundreds of nodes has as many such
    /// watches open, each asked about every node change.
    fn selects_by_name(&self, obj: &StoredObject) -> Option<bool> {
        let (selector, mapping) = self.fields.as_ref()?;
        if self.labels.is_some() {
            return None;
        }
        let by_name = |field: &str| match field {
            "metadata.name" => Some(obj.name()),
            "metadata.namespace" => Some(obj.namespace()),
            _ => None,
        };
        if mapping.iter().any(|(_, stored)| by_name(stored).is_none()) {
            return None;
        }
        Some(selector.matches(|field| {
            let stored = mapping.iter().find(|(f, _)| f == field)?;
            by_name(&stored.1).map(str::to_string)
        }))
    }

    /// Whether the stored object's value is selected.
    pub(super) fn matches(&self, obj: &Value) -> bool {
        if let Some(ns) = &self.namespace
            && objects::meta_str(obj, "namespace").unwrap_or("") != ns
        {
            return false;
        }
        if let Some(labels) = &self.labels
            && !labels.matches(objects::labels(obj))
        {
            return false;
        }
        if let Some((selector, mapping)) = &self.fields {
            let lookup = |field: &str| {
                let stored = mapping
                    .iter()
                    .find(|(f, _)| f == field)
                    .map(|(_, s)| s.as_str())?;
                Some(field_value(obj, stored))
            };
            if !selector.matches(lookup) {
                return false;
            }
        }
        true
    }
}

/// The stored field a selectable field reads, or None when the resource does not support selecting on it.
fn stored_field(rt: &ResourceType, field: &str) -> Option<String> {
    if matches!(field, "metadata.name" | "metadata.namespace") {
        return Some(field.to_string());
    }
    let supported: &[&str] = match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "pods") => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        ("", "events") => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        ("events.k8s.io", "events") => {
            let mapped = match field {
                "reportingController" => "reportingComponent".to_string(),
                "deprecatedSource" => "source".to_string(),
                "reason" | "type" => field.to_string(),
                f => f
                    .strip_prefix("regarding.")
                    .map(|rest| format!("involvedObject.{rest}"))?,
            };
            return Some(mapped);
        }
        ("", "nodes") => &["spec.unschedulable"],
        ("", "namespaces") => &["status.phase"],
        ("", "secrets") => &["type"],
        ("resource.k8s.io", "resourceslices") => &["spec.nodeName", "spec.driver"],
        // kube-apiserver's name for the count of pods that succeeded.
        ("batch", "jobs") if field == "status.successful" => {
            return Some("status.succeeded".to_string());
        }
        _ => &[],
    };
    supported.contains(&field).then(|| field.to_string())
}

/// The value of a selectable field; a missing field reads as its type's zero value printed, as on a real server,
/// whose objects always hold every field: the empty string (so `spec.nodeName=` selects unscheduled pods), or
/// [`unset_value`] for a flag or a count.
fn field_value(obj: &Value, field: &str) -> String {
    let path = if field == "source" {
        "source.component"
    } else {
        field
    };
    let mut cur = obj;
    for part in path.split('.') {
        match cur.get(part) {
            Some(next) => cur = next,
            None => return unset_value(field).to_string(),
        }
    }
    match cur {
        Value::String(s) => s.clone(),
        Value::Null => unset_value(field).to_string(),
        other => other.to_string(),
    }
}

/// How an unset selectable field that is not a string reads: `false` for a flag, `0` for a count.
fn unset_value(field: &str) -> &'static str {
    match field {
        "spec.unschedulable" | "spec.hostNetwork" => "false",
        "status.succeeded" => "0",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::store::ResourceKey;
    use crate::store::Store;

    fn by_fields(selector: &str) -> Filter {
        let selector = FieldSelector::parse(selector).expect("a field selector");
        let mapping = selector
            .fields()
            .map(|field| (field.to_string(), field.to_string()))
            .collect();
        Filter {
            namespace: None,
            labels: None,
            fields: Some((selector, mapping)),
        }
    }

    #[test]
    fn a_selection_by_name_and_namespace_reads_the_same_on_serialised_and_parsed_objects() {
        let store = Store::in_memory(100);
        let node = store
            .put(
                &ResourceKey::new("", "nodes"),
                None,
                json!({"metadata": {"name": "n1"}}),
            )
            .expect("written");
        let pod = store
            .put(
                &ResourceKey::new("", "pods"),
                None,
                json!({"metadata": {"name": "p1", "namespace": "ns"}}),
            )
            .expect("written");
        assert!(node.is_serialised() && !pod.is_serialised());
        for (selector, node_selected, pod_selected) in [
            ("metadata.name=n1", true, false),
            ("metadata.name!=n1", false, true),
            ("metadata.name=p1,metadata.namespace=ns", false, true),
            ("metadata.namespace=", true, false),
            ("metadata.namespace!=ns", true, false),
        ] {
            let filter = by_fields(selector);
            assert_eq!(
                filter.selects(&node),
                node_selected,
                "{selector} on the node"
            );
            assert_eq!(filter.selects(&pod), pod_selected, "{selector} on the pod");
            for (obj, selected) in [(&node, node_selected), (&pod, pod_selected)] {
                assert_eq!(filter.matches(&obj.value()), selected, "{selector}, parsed");
            }
        }
    }
}
