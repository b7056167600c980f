//! The node printer: status, roles, version and, wide, addresses and the node's software.

use serde_json::Value;

use super::column::{Column, ColumnType};
use super::common::age_column;
use super::read::{array, condition_status, get, or_none, or_unknown, str_cell, text};

pub(super) fn node_columns() -> Vec<Column> {
    vec![
        Column::computed(
            "Status",
            ColumnType::String,
            0,
            "Whether the node is ready and schedulable.",
            |o, _| {
                let mut status = vec![match condition_status(o, "Ready") {
                    Some("True") => "Ready",
                    Some(_) => "NotReady",
                    None => "Unknown",
                }];
                if get(o, &["spec", "unschedulable"]).and_then(Value::as_bool) == Some(true) {
                    status.push("SchedulingDisabled");
                }
                Value::String(status.join(","))
            },
        ),
        Column::computed(
            "Roles",
            ColumnType::String,
            0,
            "The roles named by the node's role labels.",
            |o, _| or_none(&node_roles(o).join(",")),
        ),
        age_column(),
        Column::computed(
            "Version",
            ColumnType::String,
            0,
            "The kubelet version the node reports.",
            |o, _| str_cell(o, &["status", "nodeInfo", "kubeletVersion"]),
        ),
        Column::computed(
            "Internal-IP",
            ColumnType::String,
            1,
            "The node's first internal address.",
            |o, _| or_none(node_address(o, "InternalIP")),
        ),
        Column::computed(
            "External-IP",
            ColumnType::String,
            1,
            "The node's first external address.",
            |o, _| or_none(node_address(o, "ExternalIP")),
        ),
        Column::computed(
            "OS-Image",
            ColumnType::String,
            1,
            "The operating system image the node reports.",
            |o, _| or_unknown(text(o, &["status", "nodeInfo", "osImage"])),
        ),
        Column::computed(
            "Kernel-Version",
            ColumnType::String,
            1,
            "The kernel version the node reports.",
            |o, _| or_unknown(text(o, &["status", "nodeInfo", "kernelVersion"])),
        ),
        Column::computed(
            "Container-Runtime",
            ColumnType::String,
            1,
            "The container runtime and version the node reports.",
            |o, _| or_unknown(text(o, &["status", "nodeInfo", "containerRuntimeVersion"])),
        ),
    ]
}

const NODE_ROLE_PREFIX: &str = "node-role.kubernetes.io/";
const LEGACY_NODE_ROLE_LABEL: &str = "kubernetes.io/role";

/// Roles from `node-role.kubernetes.io/<role>` label keys and the legacy `kubernetes.io/role` value,
/// sorted and without duplicates.
fn node_roles(node: &Value) -> Vec<String> {
    let labels = get(node, &["metadata", "labels"]).and_then(Value::as_object);
    let mut roles: Vec<String> = labels
        .into_iter()
        .flatten()
        .filter_map(|(key, value)| match key.strip_prefix(NODE_ROLE_PREFIX) {
            Some(role) => Some(role.to_owned()),
            None if key == LEGACY_NODE_ROLE_LABEL => value.as_str().map(str::to_owned),
            None => None,
        })
        .filter(|role| !role.is_empty())
        .collect();
    roles.sort();
    roles.dedup();
    roles
}

fn node_address<'a>(node: &'a Value, kind: &str) -> &'a str {
    array(node, &["status", "addresses"])
        .iter()
        .find(|a| text(a, &["type"]) == kind)
        .map(|a| text(a, &["address"]))
        .unwrap_or_default()
}
