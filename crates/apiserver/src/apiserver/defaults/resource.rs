//! The defaults of `resource.k8s.io/v1`: a device request that says nothing of how many devices it wants asks for
//! exactly one, and a toleration without an operator compares values.

use serde_json::{Value, json};

use super::{each_item, set_default};

/// A ResourceClaim: its spec's requests.
pub(super) fn resource_claim(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec") {
        claim_spec(spec);
    }
}

/// A ResourceClaimTemplate: the requests of the claim spec it stamps out.
pub(super) fn resource_claim_template(obj: &mut Value) {
    if let Some(spec) = obj.pointer_mut("/spec/spec") {
        claim_spec(spec);
    }
}

fn claim_spec(spec: &mut Value) {
    for request in each_item(spec, "/devices/requests") {
        if let Some(exactly) = request.get_mut("exactly").filter(|e| e.is_object()) {
            device_request(exactly);
        }
        for subrequest in each_item(request, "/firstAvailable") {
            device_request(subrequest);
        }
    }
}

/// `allocationMode: ExactCount`, and then `count: 1`, unless given; tolerations' `operator: Equal`.
fn device_request(request: &mut Value) {
    set_default(request, &["allocationMode"], json!("ExactCount"));
    if request.get("allocationMode").and_then(Value::as_str) == Some("ExactCount") {
        let count = request.get("count").and_then(Value::as_i64).unwrap_or(0);
        if count == 0 {
            request["count"] = json!(1);
        }
    }
    for toleration in each_item(request, "/tolerations") {
        set_default(toleration, &["operator"], json!("Equal"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_asks_for_exactly_one_device_unless_it_says_otherwise() {
        let mut claim = json!({"spec": {"devices": {"requests": [
            {"name": "a", "exactly": {"deviceClassName": "gpu"}},
            {"name": "b", "exactly": {"deviceClassName": "gpu", "count": 3}},
            {"name": "c", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}},
            {"name": "d", "firstAvailable": [{"name": "x", "deviceClassName": "gpu",
                "tolerations": [{"key": "k"}]}]},
        ]}}});
        resource_claim(&mut claim);
        let requests = &claim["spec"]["devices"]["requests"];
        assert_eq!(requests[0]["exactly"]["allocationMode"], "ExactCount");
        assert_eq!(requests[0]["exactly"]["count"], 1);
        assert_eq!(requests[1]["exactly"]["count"], 3);
        assert_eq!(requests[2]["exactly"].get("count"), None);
        let sub = &requests[3]["firstAvailable"][0];
        assert_eq!(sub["count"], 1);
        assert_eq!(sub["tolerations"][0]["operator"], "Equal");
    }
}
