//! Which objects a list or watch returns: namespace, label selector and field selector.

use serde_json::Value;

use super::RequestContext;
use crate::apiserver::errors::ApiError;
use crate::apiserver::objects;
use crate::apiserver::registry::ResourceType;
use crate::apiserver::selector::{FieldSelector, LabelSelector};
use crate::store::StoredObject;

/// The selection a list or watch request makes.
pub struct Filter {
    namespace: Option<String>,
    labels: Option<LabelSelector>,
    fields: Option<(FieldSelector, Vec<(String, String)>)>,
}

impl Filter {
    /// Parse the request's selectors, rejecting field selectors the resource does not support with 400.
    pub fn from_request(ctx: &RequestContext) -> Result<Self, ApiError> {
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
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The `field=value` terms of the field selector, by the stored field they read: candidates for a store
    /// index lookup before [`Filter::matches`] checks the rest.
    pub fn field_equalities(&self) -> impl Iterator<Item = (&str, &str)> {
        self.fields.iter().flat_map(|(selector, mapping)| {
            selector.equalities().filter_map(|(field, value)| {
                let stored = mapping.iter().find(|(f, _)| f == field)?;
                Some((stored.1.as_str(), value))
            })
        })
    }

    /// Whether the stored object is selected, reading its parsed value only when a selector needs it (objects held
    /// only serialised are parsed for that).
    pub fn selects(&self, obj: &StoredObject) -> bool {
        if let Some(ns) = &self.namespace
            && obj.namespace() != ns
        {
            return false;
        }
        if self.labels.is_none() && self.fields.is_none() {
            return true;
        }
        self.matches(&obj.value())
    }

    /// Whether the stored object's value is selected.
    pub fn matches(&self, obj: &Value) -> bool {
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
        ("batch", "jobs") => &["status.successful"],
        _ => &[],
    };
    supported.contains(&field).then(|| field.to_string())
}

/// The value of a selectable field; missing fields read as the empty string, as on a real server (so
/// `spec.nodeName=` selects unscheduled pods).
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
            None => return String::new(),
        }
    }
    match cur {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}
