//! The printers of what routes traffic to pods: Services, Endpoints and EndpointSlices, with kubectl's wording for
//! what is missing (`<none>`, `<pending>`, `<unset>`) and its way of shortening long lists (`a,b,c + 2 more...`).

use serde_json::Value;

use super::column::{Column, ColumnType};
use super::common::age_column;
use super::read::{array, format_labels, get, or_none, text};

/// How many addresses or ports a cell lists before it says how many more there are.
const LISTED: usize = 3;

pub(super) fn service_columns() -> Vec<Column> {
    vec![
        Column::computed(
            "Type",
            ColumnType::String,
            0,
            "How the service is exposed.",
            |o, _| Value::String(text(o, &["spec", "type"]).to_owned()),
        ),
        Column::computed(
            "Cluster-IP",
            ColumnType::String,
            0,
            "The address of the service inside the cluster.",
            |o, _| or_none(text(o, &["spec", "clusterIP"])),
        ),
        Column::computed(
            "External-IP",
            ColumnType::String,
            0,
            "Where the service is reached from outside the cluster.",
            |o, _| Value::String(external_ip(o)),
        ),
        Column::computed(
            "Port(s)",
            ColumnType::String,
            0,
            "The ports the service listens on, with their node ports.",
            |o, _| or_none(&service_ports(o)),
        ),
        age_column(),
        Column::computed(
            "Selector",
            ColumnType::String,
            1,
            "The labels of the pods the service routes to.",
            |o, _| {
                or_none(&format_labels(
                    get(o, &["spec", "selector"]).and_then(Value::as_object),
                ))
            },
        ),
    ]
}

pub(super) fn endpoints_columns() -> Vec<Column> {
    vec![
        Column::computed(
            "Endpoints",
            ColumnType::String,
            0,
            "The ready addresses, each with each port.",
            |o, _| Value::String(endpoints_addresses(o)),
        ),
        age_column(),
    ]
}

pub(super) fn endpoint_slice_columns() -> Vec<Column> {
    vec![
        Column::computed(
            "AddressType",
            ColumnType::String,
            0,
            "The kind of address the slice holds.",
            |o, _| Value::String(text(o, &["addressType"]).to_owned()),
        ),
        Column::computed(
            "Ports",
            ColumnType::String,
            0,
            "The ports of the slice's endpoints.",
            |o, _| {
                let ports = array(o, &["ports"]).iter().map(|port| {
                    match (
                        get(port, &["port"]).and_then(Value::as_i64),
                        text(port, &["name"]),
                    ) {
                        (Some(number), _) => number.to_string(),
                        (None, name) if get(port, &["name"]).is_some() => name.to_owned(),
                        (None, _) => "*".to_owned(),
                    }
                });
                Value::String(listed_or_unset(ports))
            },
        ),
        Column::computed(
            "Endpoints",
            ColumnType::String,
            0,
            "The addresses of the slice's endpoints.",
            |o, _| {
                let addresses = array(o, &["endpoints"])
                    .iter()
                    .flat_map(|endpoint| array(endpoint, &["addresses"]))
                    .map(|address| address.as_str().unwrap_or_default().to_owned());
                Value::String(listed_or_unset(addresses))
            },
        ),
        age_column(),
    ]
}

/// The External-IP cell: what each type of Service is reached by from outside, or why nothing yet.
fn external_ip(service: &Value) -> String {
    let external: Vec<&str> = array(service, &["spec", "externalIPs"])
        .iter()
        .filter_map(Value::as_str)
        .collect();
    match text(service, &["spec", "type"]) {
        "ClusterIP" | "NodePort" if external.is_empty() => "<none>".to_owned(),
        "ClusterIP" | "NodePort" => external.join(","),
        "LoadBalancer" => {
            let mut addresses: Vec<&str> = array(service, &["status", "loadBalancer", "ingress"])
                .iter()
                .map(|ingress| match text(ingress, &["ip"]) {
                    "" => text(ingress, &["hostname"]),
                    ip => ip,
                })
                .filter(|address| !address.is_empty())
                .collect();
            addresses.extend(external);
            if addresses.is_empty() {
                "<pending>".to_owned()
            } else {
                addresses.join(",")
            }
        }
        "ExternalName" => text(service, &["spec", "externalName"]).to_owned(),
        _ => "<unknown>".to_owned(),
    }
}

/// `80/TCP`, or `80:30080/TCP` with a node port, for every port of the Service.
fn service_ports(service: &Value) -> String {
    array(service, &["spec", "ports"])
        .iter()
        .map(|port| {
            let number = get(port, &["port"]).and_then(Value::as_i64).unwrap_or(0);
            let protocol = text(port, &["protocol"]);
            match get(port, &["nodePort"]).and_then(Value::as_i64) {
                Some(node_port) if node_port > 0 => format!("{number}:{node_port}/{protocol}"),
                _ => format!("{number}/{protocol}"),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Every ready address of the Endpoints with every port of its subset (`10.0.0.1:80`), or the bare address in a
/// subset without ports; `<none>` when there are no subsets at all.
fn endpoints_addresses(endpoints: &Value) -> String {
    let subsets = array(endpoints, &["subsets"]);
    if subsets.is_empty() {
        return "<none>".to_owned();
    }
    let pairs = subsets.iter().flat_map(|subset| {
        let addresses: Vec<&str> = array(subset, &["addresses"])
            .iter()
            .map(|address| text(address, &["ip"]))
            .collect();
        let ports: Vec<Option<i64>> = match array(subset, &["ports"]) {
            [] => vec![None],
            ports => ports
                .iter()
                .map(|port| Some(get(port, &["port"]).and_then(Value::as_i64).unwrap_or(0)))
                .collect(),
        };
        ports.into_iter().flat_map(move |port| {
            addresses.clone().into_iter().map(move |ip| match port {
                Some(port) if ip.contains(':') => format!("[{ip}]:{port}"),
                Some(port) => format!("{ip}:{port}"),
                None => ip.to_owned(),
            })
        })
    });
    listed(pairs)
}

/// The first few items joined by commas, and how many more there are when that is not all.
fn listed(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    let shown = items[..items.len().min(LISTED)].join(",");
    if items.len() > LISTED {
        format!("{shown} + {} more...", items.len() - LISTED)
    } else {
        shown
    }
}

/// [`listed`], or `<unset>` when there is nothing to list.
fn listed_or_unset(items: impl Iterator<Item = String>) -> String {
    match listed(items) {
        empty if empty.is_empty() => "<unset>".to_owned(),
        list => list,
    }
}
