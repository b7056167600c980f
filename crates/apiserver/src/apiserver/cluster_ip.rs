//! Cluster IPs for Services, allocated from the service range as kube-apiserver allocates them, so a Service reads
//! back with `clusterIP`, `clusterIPs`, `ipFamilies` and `ipFamilyPolicy` set, and keeps its address on update
//! when the client leaves it out (as `kubectl apply` does).

use std::collections::HashSet;
use std::net::Ipv4Addr;

use serde_json::{Value, json};

use super::ApiServer;
use super::errors::ApiError;
use crate::store::ResourceKey;

/// The service range: 10.96.0.0/12, kube-apiserver's usual default.
const RANGE_START: u32 = u32::from_be_bytes([10, 96, 0, 0]);
const RANGE_SIZE: u32 = 1 << 20;

/// The first address of the range, which is the `kubernetes` Service's on every cluster: allocation for other
/// Services starts after it.
pub(crate) const KUBERNETES_SERVICE_IP: Ipv4Addr = Ipv4Addr::new(10, 96, 0, 1);

/// The offset in the range of the first address given to Services that do not ask for one.
const FIRST_FREE_OFFSET: u32 = 2;

/// Give `service` its cluster IP: the one it had (`old`), the one it asks for, or a free one of the range.
pub(crate) fn assign(
    server: &ApiServer,
    service: &mut Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    let Some(spec) = service.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    if spec.get("type").and_then(Value::as_str) == Some("ExternalName") {
        return Ok(());
    }
    let asked = spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let kept = old
        .and_then(|o| o.pointer("/spec/clusterIP"))
        .and_then(Value::as_str)
        .filter(|_| asked.is_empty())
        .map(str::to_string);
    let address = match kept {
        Some(address) => address,
        None if !asked.is_empty() => asked,
        None => free_address(server)?,
    };
    spec.insert("clusterIP".into(), json!(address));
    spec.insert("clusterIPs".into(), json!([address]));
    if address != "None" {
        spec.entry("ipFamilies").or_insert_with(|| json!(["IPv4"]));
    }
    let policy = if address == "None" {
        "RequireDualStack"
    } else {
        "SingleStack"
    };
    spec.entry("ipFamilyPolicy")
        .or_insert_with(|| json!(policy));
    Ok(())
}

/// The lowest address of the range, after the `kubernetes` Service's, that no stored Service holds.
fn free_address(server: &ApiServer) -> Result<String, ApiError> {
    let (services, _) = server.store().list(&ResourceKey::new("", "services"), None);
    let taken: HashSet<String> = services
        .iter()
        .filter_map(|s| serde_json::from_slice::<Value>(&s.json).ok())
        .filter_map(|s| {
            s.pointer("/spec/clusterIP")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect();
    (FIRST_FREE_OFFSET..RANGE_SIZE)
        .map(|offset| Ipv4Addr::from(RANGE_START + offset).to_string())
        .find(|address| !taken.contains(address))
        .ok_or_else(|| ApiError::internal("the service IP range 10.96.0.0/12 is full"))
}
