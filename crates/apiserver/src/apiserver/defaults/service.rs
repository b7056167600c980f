//! Service, Endpoints and EndpointSlice defaults: a ClusterIP Service without session affinity, whose ports speak TCP and
//! forward to the same port number unless told otherwise.

use serde_json::{Value, json};

use super::{each_item, set_default};

/// A Service.
pub(super) fn service(obj: &mut Value) {
    set_default(obj, &["spec", "type"], json!("ClusterIP"));
    set_default(obj, &["spec", "sessionAffinity"], json!("None"));
    let kind = obj
        .pointer("/spec/type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if kind != "ExternalName" {
        set_default(obj, &["spec", "internalTrafficPolicy"], json!("Cluster"));
    }
    if matches!(kind.as_str(), "NodePort" | "LoadBalancer") {
        set_default(obj, &["spec", "externalTrafficPolicy"], json!("Cluster"));
    }
    for port in each_item(obj, "/spec/ports") {
        set_default(port, &["protocol"], json!("TCP"));
        let number = port.get("port").cloned().unwrap_or(Value::Null);
        let target = port.get("targetPort");
        if target.is_none() || target == Some(&json!(0)) || target == Some(&json!("")) {
            port["targetPort"] = number;
        }
    }
}

/// An EndpointSlice: its ports speak TCP unless told otherwise.
pub(super) fn endpoint_slice(obj: &mut Value) {
    for port in each_item(obj, "/ports") {
        set_default(port, &["protocol"], json!("TCP"));
    }
}

/// Endpoints: the ports of every subset speak TCP unless told otherwise.
pub(super) fn endpoints(obj: &mut Value) {
    for subset in each_item(obj, "/subsets") {
        for port in each_item(subset, "/ports") {
            set_default(port, &["protocol"], json!("TCP"));
        }
    }
}
