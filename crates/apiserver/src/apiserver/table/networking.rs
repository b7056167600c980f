//! The networking printers: Ingresses (class, hosts, address, ports) and IngressClasses.

use serde_json::Value;

use super::column::{Column, ColumnType};
use super::common::age_column;
use super::read::{array, get, or_none, text};

/// `kubectl get ingress`.
pub(super) fn ingress_columns() -> Vec<Column> {
    vec![
        Column::computed(
            "Class",
            ColumnType::String,
            0,
            "The class of the ingress.",
            |o, _| or_none(text(o, &["spec", "ingressClassName"])),
        ),
        Column::computed(
            "Hosts",
            ColumnType::String,
            0,
            "The hosts the ingress routes.",
            |o, _| {
                let hosts: Vec<&str> = array(o, &["spec", "rules"])
                    .iter()
                    .map(|r| text(r, &["host"]))
                    .filter(|h| !h.is_empty())
                    .collect();
                Value::String(if hosts.is_empty() {
                    "*".to_owned()
                } else {
                    hosts.join(",")
                })
            },
        ),
        Column::computed(
            "Address",
            ColumnType::String,
            0,
            "Where the ingress is reachable.",
            |o, _| {
                let addresses: Vec<&str> = array(o, &["status", "loadBalancer", "ingress"])
                    .iter()
                    .map(|i| {
                        let ip = text(i, &["ip"]);
                        if ip.is_empty() {
                            text(i, &["hostname"])
                        } else {
                            ip
                        }
                    })
                    .filter(|a| !a.is_empty())
                    .collect();
                Value::String(addresses.join(","))
            },
        ),
        Column::computed(
            "Ports",
            ColumnType::String,
            0,
            "The ports the ingress serves.",
            |o, _| {
                let tls = get(o, &["spec", "tls"])
                    .and_then(Value::as_array)
                    .is_some_and(|t| !t.is_empty());
                Value::String(if tls { "80, 443" } else { "80" }.to_owned())
            },
        ),
        age_column(),
    ]
}

/// `kubectl get ingressclass`.
pub(super) fn ingress_class_columns() -> Vec<Column> {
    vec![
        Column::computed(
            "Controller",
            ColumnType::String,
            0,
            "The controller of the class.",
            |o, _| Value::String(text(o, &["spec", "controller"]).to_owned()),
        ),
        Column::computed(
            "Parameters",
            ColumnType::String,
            0,
            "The parameters of the class.",
            |o, _| {
                let Some(parameters) = get(o, &["spec", "parameters"]) else {
                    return Value::String("<none>".to_owned());
                };
                let group = text(parameters, &["apiGroup"]);
                let kind = text(parameters, &["kind"]);
                let kind = if group.is_empty() {
                    kind.to_owned()
                } else {
                    format!("{kind}.{group}")
                };
                Value::String(format!("{kind}/{}", text(parameters, &["name"])))
            },
        ),
        age_column(),
    ]
}
