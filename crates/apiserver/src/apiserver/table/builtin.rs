//! Which columns each built-in resource gets, and the small layouts that need no family of their own.

use serde_json::Value;

use super::autoscaling::autoscaler_columns;
use super::certificates::{component_status_columns, signing_request_columns};
use super::column::{Column, ColumnType};
use super::common::{age_column, name_column};
use super::events::event_columns;
use super::networking::{ingress_class_columns, ingress_columns};
use super::nodes::node_columns;
use super::pods::pod_columns;
use super::read::{array, member_count, str_cell, timestamp, zero_time};
use super::resource::{claim_columns as resource_claim_columns, slice_columns};
use super::services::{endpoint_slice_columns, endpoints_columns, service_columns};
use super::storage::{claim_columns, volume_columns};
use super::workloads::{
    daemonset_columns, deployment_columns, job_columns, replicaset_columns, statefulset_columns,
};

/// Columns for a built-in resource as `kubectl get` shows them (priority 1 columns appear with
/// `-o wide`); Name and Age for resources without a dedicated layout.
pub(crate) fn builtin_columns(group: &str, resource: &str) -> Vec<Column> {
    let mut columns = vec![name_column()];
    let specific = match (group, resource) {
        ("", "pods") => pod_columns(),
        ("", "nodes") => node_columns(),
        ("", "namespaces") => vec![
            Column::computed(
                "Status",
                ColumnType::String,
                0,
                "The phase of the namespace.",
                |o, _| str_cell(o, &["status", "phase"]),
            ),
            age_column(),
        ],
        ("", "events") | ("events.k8s.io", "events") => return event_columns(),
        ("apps", "deployments") => deployment_columns(),
        ("apps", "replicasets") => replicaset_columns(),
        ("apps", "daemonsets") => daemonset_columns(),
        ("apps", "statefulsets") => statefulset_columns(),
        ("batch", "jobs") => job_columns(),
        ("", "services") => service_columns(),
        ("", "endpoints") => endpoints_columns(),
        ("discovery.k8s.io", "endpointslices") => endpoint_slice_columns(),
        ("", "configmaps") => vec![
            Column::computed(
                "Data",
                ColumnType::Integer,
                0,
                "Number of entries in data and binaryData.",
                |o, _| Value::from(member_count(o, "data") + member_count(o, "binaryData")),
            ),
            age_column(),
        ],
        ("", "secrets") => vec![
            Column::computed(
                "Type",
                ColumnType::String,
                0,
                "The type of the secret.",
                |o, _| str_cell(o, &["type"]),
            ),
            Column::computed(
                "Data",
                ColumnType::Integer,
                0,
                "Number of entries in data.",
                |o, _| Value::from(member_count(o, "data")),
            ),
            age_column(),
        ],
        ("", "serviceaccounts") => vec![
            Column::computed(
                "Secrets",
                ColumnType::Integer,
                0,
                "Number of secrets the account references.",
                |o, _| Value::from(array(o, &["secrets"]).len()),
            ),
            age_column(),
        ],
        ("node.k8s.io", "runtimeclasses") => vec![
            Column::computed(
                "Handler",
                ColumnType::String,
                0,
                "The CRI handler that runs pods of this class.",
                |o, _| str_cell(o, &["handler"]),
            ),
            age_column(),
        ],
        ("admissionregistration.k8s.io", "validatingadmissionpolicies") => vec![
            Column::computed(
                "Validations",
                ColumnType::Integer,
                0,
                "The number of validations the policy runs.",
                |o, _| Value::from(array(o, &["spec", "validations"]).len()),
            ),
            Column::computed(
                "ParamKind",
                ColumnType::String,
                0,
                "The kind of the policy's parameter resource.",
                |o, _| param_kind(o),
            ),
            age_column(),
        ],
        ("admissionregistration.k8s.io", "validatingadmissionpolicybindings") => vec![
            Column::computed(
                "PolicyName",
                ColumnType::String,
                0,
                "The policy the binding applies.",
                |o, _| str_cell(o, &["spec", "policyName"]),
            ),
            Column::computed(
                "ParamRef",
                ColumnType::String,
                0,
                "The binding's parameter resource.",
                |o, _| {
                    let name = str_cell(o, &["spec", "paramRef", "name"]);
                    if name.as_str().is_some_and(|n| !n.is_empty()) {
                        name
                    } else {
                        Value::from("<unset>")
                    }
                },
            ),
            age_column(),
        ],
        ("coordination.k8s.io", "leases") => vec![
            Column::computed(
                "Holder",
                ColumnType::String,
                0,
                "The identity currently holding the lease.",
                |o, _| str_cell(o, &["spec", "holderIdentity"]),
            ),
            age_column(),
        ],
        ("apiextensions.k8s.io", "customresourcedefinitions") => vec![Column::computed(
            "Created At",
            ColumnType::Date,
            0,
            "When the object was created.",
            |o, _| {
                let created =
                    timestamp(o, &["metadata", "creationTimestamp"]).unwrap_or_else(zero_time);
                Value::String(created.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
            },
        )],
        ("", "persistentvolumeclaims") => claim_columns(),
        ("", "persistentvolumes") => volume_columns(),
        ("networking.k8s.io", "ingresses") => ingress_columns(),
        ("networking.k8s.io", "ingressclasses") => ingress_class_columns(),
        ("autoscaling", "horizontalpodautoscalers") => autoscaler_columns(),
        ("certificates.k8s.io", "certificatesigningrequests") => signing_request_columns(),
        ("", "componentstatuses") => component_status_columns(),
        ("resource.k8s.io", "resourceclaims") => resource_claim_columns(),
        ("resource.k8s.io", "resourceslices") => slice_columns(),
        _ => vec![age_column()],
    };
    columns.extend(specific);
    columns
}

/// A policy's `paramKind` as `kubectl get` prints it: `group/version/Kind`, or `<unset>`.
fn param_kind(policy: &Value) -> Value {
    let kind = str_cell(policy, &["spec", "paramKind", "kind"]);
    match (
        kind.as_str(),
        str_cell(policy, &["spec", "paramKind", "apiVersion"]).as_str(),
    ) {
        (Some(kind), Some(version)) if !kind.is_empty() => Value::from(format!("{version}/{kind}")),
        _ => Value::from("<unset>"),
    }
}
