//! Dynamic resource allocation, as kube-scheduler's DynamicResources plugin does it with structured parameters: a
//! pod's ResourceClaims are resolved, and an unallocated claim gets devices the drivers published for the candidate
//! node in ResourceSlices, those its DeviceClass's selectors and its request's selectors all match (CEL, through
//! `kmm_cel`). A request takes `count` devices (`ExactCount`, one by default) or every matching device of the node
//! (`All`); a device in another claim's allocation is not free. An allocated claim keeps the pod to the node its
//! allocation names, and several pods may share it (each is in its `reservedFor`).
//!
//! Only slices of one node (`spec.nodeName`) are read, of each pool the newest generation; `firstAvailable`
//! requests, admin access, capacity sharing and device taints are not modelled, and a claim asking for them is
//! not allocated (the scheduler says why).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use k8s_openapi::api::core::v1::{
    Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod,
};
use k8s_openapi::api::resource::v1::{
    AllocationResult, Device, DeviceAllocationResult, DeviceClass, DeviceRequest,
    DeviceRequestAllocationResult, DeviceSelector as SelectorSpec, ResourceClaim, ResourceSlice,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kmm_cel::device::DeviceSelector;
use kube::ResourceExt;

use super::filter::{self, Unfit};

/// One device as a ResourceSlice publishes it: driver, pool, and the device.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct DeviceId {
    /// The driver that published it.
    pub(crate) driver: String,
    /// Its pool (the node's name, for node-local drivers).
    pub(crate) pool: String,
    /// The device's name in the pool.
    pub(crate) device: String,
}

/// A published device with what selectors read of it.
#[derive(Debug, Clone)]
pub(crate) struct Published {
    id: DeviceId,
    device: Device,
}

/// The compiled selectors of each DeviceClass, or why they do not compile.
pub(crate) type Classes = BTreeMap<String, Result<Vec<DeviceSelector>, String>>;

/// Compile each class's CEL selectors once.
pub(crate) fn classes(classes: &[DeviceClass]) -> Classes {
    classes
        .iter()
        .map(|class| (class.name_any(), compile(class.spec.selectors.as_deref())))
        .collect()
}

fn compile(selectors: Option<&[SelectorSpec]>) -> Result<Vec<DeviceSelector>, String> {
    selectors
        .unwrap_or_default()
        .iter()
        .filter_map(|s| s.cel.as_ref())
        .map(|cel| DeviceSelector::compile(&cel.expression).map_err(|e| e.to_string()))
        .collect()
}

/// The devices each node's drivers publish: node → devices, of each pool the newest generation, sorted, each once.
pub(crate) fn inventory(slices: &[ResourceSlice]) -> HashMap<String, Vec<Published>> {
    let mut newest: HashMap<(&str, &str), i64> = HashMap::new();
    for slice in slices {
        let key = (slice.spec.driver.as_str(), slice.spec.pool.name.as_str());
        let generation = newest.entry(key).or_insert(slice.spec.pool.generation);
        *generation = (*generation).max(slice.spec.pool.generation);
    }
    let mut by_node: HashMap<String, BTreeMap<DeviceId, Device>> = HashMap::new();
    for slice in slices {
        let spec = &slice.spec;
        let Some(node) = spec.node_name.as_deref() else {
            continue;
        };
        if newest.get(&(spec.driver.as_str(), spec.pool.name.as_str()))
            != Some(&spec.pool.generation)
        {
            continue;
        }
        for device in spec.devices.iter().flatten() {
            let id = DeviceId {
                driver: spec.driver.clone(),
                pool: spec.pool.name.clone(),
                device: device.name.clone(),
            };
            by_node
                .entry(node.to_owned())
                .or_default()
                .entry(id)
                .or_insert_with(|| device.clone());
        }
    }
    by_node
        .into_iter()
        .map(|(node, devices)| {
            let devices = devices
                .into_iter()
                .map(|(id, device)| Published { id, device })
                .collect();
            (node, devices)
        })
        .collect()
}

/// The devices an allocation holds.
pub(crate) fn allocated_devices(claim: &ResourceClaim) -> impl Iterator<Item = DeviceId> + '_ {
    claim
        .status
        .as_ref()
        .and_then(|s| s.allocation.as_ref())
        .and_then(|a| a.devices.as_ref())
        .and_then(|d| d.results.as_ref())
        .into_iter()
        .flatten()
        .map(|r| DeviceId {
            driver: r.driver.clone(),
            pool: r.pool.clone(),
            device: r.device.clone(),
        })
}

/// Why a claim gets no devices on a node (for the log; the pod's message says `cannot allocate all claims`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NoFit {
    /// The request's DeviceClass does not exist.
    NoClass(String),
    /// A selector does not compile.
    BadSelector(String),
    /// The request uses what the simulation does not model.
    Unsupported(String),
    /// Too few free devices match the request.
    TooFew(String),
}

/// The devices `claim` gets from `devices` (one node's), none of them in `taken`: one result per device, in request
/// order, or why it cannot be allocated there.
pub(crate) fn allocate(
    claim: &ResourceClaim,
    devices: &[Published],
    classes: &Classes,
    taken: &BTreeSet<DeviceId>,
) -> Result<Vec<DeviceRequestAllocationResult>, NoFit> {
    let mut picked: BTreeSet<&DeviceId> = BTreeSet::new();
    let mut results = Vec::new();
    for request in claim
        .spec
        .devices
        .as_ref()
        .and_then(|d| d.requests.as_deref())
        .unwrap_or_default()
    {
        for id in pick(request, devices, classes, taken, &picked)? {
            results.push(DeviceRequestAllocationResult {
                request: request.name.clone(),
                driver: id.driver.clone(),
                pool: id.pool.clone(),
                device: id.device.clone(),
                ..DeviceRequestAllocationResult::default()
            });
            picked.insert(id);
        }
    }
    Ok(results)
}

/// The devices one request takes.
fn pick<'d>(
    request: &DeviceRequest,
    devices: &'d [Published],
    classes: &Classes,
    taken: &BTreeSet<DeviceId>,
    picked: &BTreeSet<&DeviceId>,
) -> Result<Vec<&'d DeviceId>, NoFit> {
    let Some(exactly) = request.exactly.as_ref() else {
        return Err(NoFit::Unsupported(format!(
            "request {}: only requests for exactly one kind of device are allocated",
            request.name
        )));
    };
    if exactly.admin_access == Some(true) {
        return Err(NoFit::Unsupported(format!(
            "request {}: admin access",
            request.name
        )));
    }
    let class = match classes.get(&exactly.device_class_name) {
        None => return Err(NoFit::NoClass(exactly.device_class_name.clone())),
        Some(Err(error)) => return Err(NoFit::BadSelector(error.clone())),
        Some(Ok(selectors)) => selectors,
    };
    let own = compile(exactly.selectors.as_deref()).map_err(NoFit::BadSelector)?;
    let matching: Vec<&Published> = devices
        .iter()
        .filter(|d| {
            class
                .iter()
                .chain(&own)
                .all(|selector| selector.matches(&d.id.driver, &d.device) == Ok(true))
        })
        .collect();
    let free = |d: &Published| !taken.contains(&d.id) && !picked.contains(&d.id);
    let too_few = || NoFit::TooFew(request.name.clone());
    match exactly.allocation_mode.as_deref().unwrap_or("ExactCount") {
        "All" => {
            if matching.is_empty() || !matching.iter().all(|d| free(d)) {
                return Err(too_few());
            }
            Ok(matching.iter().map(|d| &d.id).collect())
        }
        "ExactCount" => {
            let count = usize::try_from(exactly.count.unwrap_or(1)).map_err(|_| too_few())?;
            let chosen: Vec<&DeviceId> = matching
                .iter()
                .filter(|d| free(d))
                .take(count)
                .map(|d| &d.id)
                .collect();
            if chosen.len() < count {
                return Err(too_few());
            }
            Ok(chosen)
        }
        other => Err(NoFit::Unsupported(format!(
            "request {}: allocation mode {other}",
            request.name
        ))),
    }
}

/// The allocation of `results` on `node`: the devices, and a node selector pinning the claim's pods to the node.
pub(crate) fn allocation(
    node: &str,
    results: Vec<DeviceRequestAllocationResult>,
) -> AllocationResult {
    AllocationResult {
        allocation_timestamp: Some(Time(jiff::Timestamp::now())),
        devices: Some(DeviceAllocationResult {
            results: Some(results),
            config: None,
        }),
        node_selector: Some(NodeSelector {
            node_selector_terms: vec![NodeSelectorTerm {
                match_fields: Some(vec![NodeSelectorRequirement {
                    key: "metadata.name".into(),
                    operator: "In".into(),
                    values: Some(vec![node.to_owned()]),
                }]),
                match_expressions: None,
            }],
        }),
    }
}

/// The claims a pod uses, by `namespace/name`: a `resourceClaimName`, or the claim the claim-template controller
/// recorded in the pod's status. The error is kube-scheduler's reason the pod cannot be scheduled yet.
pub(crate) fn claim_names(pod: &Pod) -> Result<Vec<String>, String> {
    let namespace = pod.namespace().unwrap_or_default();
    let statuses = pod
        .status
        .as_ref()
        .and_then(|s| s.resource_claim_statuses.as_deref())
        .unwrap_or_default();
    let mut names = Vec::new();
    for pod_claim in pod
        .spec
        .as_ref()
        .and_then(|s| s.resource_claims.as_deref())
        .unwrap_or_default()
    {
        if let Some(name) = &pod_claim.resource_claim_name {
            names.push(name.clone());
            continue;
        }
        match statuses.iter().find(|s| s.name == pod_claim.name) {
            Some(status) => names.extend(status.resource_claim_name.clone()),
            None => {
                return Err(format!(
                    "waiting for resource claim {} of pod {namespace}/{} to be created",
                    pod_claim.name,
                    pod.name_any()
                ));
            }
        }
    }
    Ok(names
        .into_iter()
        .map(|name| format!("{namespace}/{name}"))
        .collect())
}

/// Whether `claim` is reserved for `pod`.
pub(crate) fn reserved_for(claim: &ResourceClaim, pod: &Pod) -> bool {
    let uid = pod.uid().unwrap_or_default();
    claim
        .status
        .as_ref()
        .and_then(|s| s.reserved_for.as_deref())
        .unwrap_or_default()
        .iter()
        .any(|r| r.resource == "pods" && r.uid == uid)
}

/// The node an allocated claim keeps its pods to: whether `node` is it (an unallocated claim fits anywhere).
pub(crate) fn available_on(claim: &ResourceClaim, node: &Node) -> bool {
    match claim.status.as_ref().and_then(|s| s.allocation.as_ref()) {
        None => true,
        Some(allocation) => allocation
            .node_selector
            .as_ref()
            .is_none_or(|selector| filter::node_selector_matches(selector, node)),
    }
}

/// What one pass knows of DRA: every node's published devices, the classes, the claims and the devices taken.
#[derive(Default)]
pub(crate) struct State {
    devices: HashMap<String, Vec<Published>>,
    classes: Classes,
    claims: HashMap<String, ResourceClaim>,
    taken: BTreeSet<DeviceId>,
}

/// How a pod's claims fit one node: for each claim (by `namespace/name`), the devices it gets there, or None when
/// it is allocated already.
pub(crate) type Plan = Vec<(String, Option<Vec<DeviceRequestAllocationResult>>)>;

impl State {
    /// The state of slices, classes and claims as listed.
    pub(crate) fn new(
        slices: &[ResourceSlice],
        device_classes: &[DeviceClass],
        claims: Vec<ResourceClaim>,
    ) -> Self {
        let taken = claims.iter().flat_map(allocated_devices).collect();
        let claims = claims
            .into_iter()
            .map(|claim| {
                (
                    format!(
                        "{}/{}",
                        claim.namespace().unwrap_or_default(),
                        claim.name_any()
                    ),
                    claim,
                )
            })
            .collect();
        Self {
            devices: inventory(slices),
            classes: classes(device_classes),
            claims,
            taken,
        }
    }

    /// The pod's claims, or the reason it waits for them (a claim that does not exist yet, or not for this pod).
    pub(crate) fn claims_of(&self, pod: &Pod) -> Result<Vec<String>, String> {
        let names = claim_names(pod)?;
        for key in &names {
            let Some(claim) = self.claims.get(key) else {
                let name = key.split_once('/').map_or(key.as_str(), |(_, n)| n);
                return Err(format!("resourceclaim \"{name}\" not found"));
            };
            if claim.metadata.deletion_timestamp.is_some() {
                return Err(format!(
                    "resourceclaim \"{}\" is being deleted",
                    claim.name_any()
                ));
            }
        }
        Ok(names)
    }

    /// The claim stored under `namespace/name`.
    pub(crate) fn claim(&self, key: &str) -> Option<&ResourceClaim> {
        self.claims.get(key)
    }

    /// How `claims` fit `node`, or why they do not.
    pub(crate) fn check(&self, claims: &[String], node: &Node) -> Result<Plan, Unfit> {
        let devices = self
            .devices
            .get(&node.name_any())
            .map(Vec::as_slice)
            .unwrap_or_default();
        let mut taken = self.taken.clone();
        let mut plan = Plan::new();
        for key in claims {
            let Some(claim) = self.claims.get(key) else {
                return Err(Unfit::ClaimsUnallocatable);
            };
            if claim
                .status
                .as_ref()
                .and_then(|s| s.allocation.as_ref())
                .is_some()
            {
                if !available_on(claim, node) {
                    return Err(Unfit::ClaimNotOnNode);
                }
                plan.push((key.clone(), None));
                continue;
            }
            match allocate(claim, devices, &self.classes, &taken) {
                Ok(results) => {
                    taken.extend(results.iter().map(|r| DeviceId {
                        driver: r.driver.clone(),
                        pool: r.pool.clone(),
                        device: r.device.clone(),
                    }));
                    plan.push((key.clone(), Some(results)));
                }
                Err(reason) => {
                    tracing::debug!(claim = %key, node = %node.name_any(), ?reason, "claim not allocatable");
                    return Err(Unfit::ClaimsUnallocatable);
                }
            }
        }
        Ok(plan)
    }

    /// Take in a claim as written, so the rest of the pass sees its devices taken.
    pub(crate) fn update(&mut self, claim: ResourceClaim) {
        self.taken.extend(allocated_devices(&claim));
        let key = format!(
            "{}/{}",
            claim.namespace().unwrap_or_default(),
            claim.name_any()
        );
        self.claims.insert(key, claim);
    }
}

/// Whether a pod uses ResourceClaims.
pub(crate) fn has_claims(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.resource_claims.as_ref())
        .is_some_and(|c| !c.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn slice(node: &str, generation: i64, devices: Value) -> ResourceSlice {
        serde_json::from_value(json!({
            "metadata": {"name": format!("{node}-gpu-{generation}")},
            "spec": {
                "driver": "gpu.example.com", "nodeName": node,
                "pool": {"name": node, "generation": generation, "resourceSliceCount": 1},
                "devices": devices,
            }
        }))
        .expect("a slice")
    }

    fn gpus(models: &[&str]) -> Value {
        Value::Array(
            models
                .iter()
                .enumerate()
                .map(|(i, model)| json!({"name": format!("gpu-{i}"), "attributes": {"model": {"string": model}}}))
                .collect(),
        )
    }

    fn class(name: &str, expression: &str) -> DeviceClass {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expression}}]}
        }))
        .expect("a class")
    }

    fn claim(name: &str, requests: Value) -> ResourceClaim {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": requests}}
        }))
        .expect("a claim")
    }

    fn exactly(extra: Value) -> Value {
        let mut request = json!({"deviceClassName": "gpu"});
        if let (Some(request), Value::Object(extra)) = (request.as_object_mut(), extra) {
            request.extend(extra);
        }
        json!([{"name": "gpu", "exactly": request}])
    }

    fn taken(devices: &[&str]) -> BTreeSet<DeviceId> {
        devices
            .iter()
            .map(|device| DeviceId {
                driver: "gpu.example.com".into(),
                pool: "w-0".into(),
                device: (*device).into(),
            })
            .collect()
    }

    #[test]
    fn requests_take_the_free_devices_that_match() {
        let slices = [slice("w-0", 1, gpus(&["A100", "A100", "H100"]))];
        let inventory = inventory(&slices);
        let devices = &inventory["w-0"];
        let classes = classes(&[
            class("gpu", "device.driver == 'gpu.example.com'"),
            class("nic", "device.driver == 'nic.example.com'"),
            class("broken", "device.driver =="),
        ]);
        let a100 = json!([{"cel": {"expression": "device.attributes['gpu.example.com'].model == 'A100'"}}]);
        // What is asked, the request, the devices already taken, and what is allocated (or why not).
        type Case<'a> = (&'a str, Value, &'a [&'a str], Result<Vec<&'a str>, NoFit>);
        let cases: Vec<Case<'_>> = vec![
            ("one by default", exactly(json!({})), &[], Ok(vec!["gpu-0"])),
            (
                "ExactCount 2",
                exactly(json!({"count": 2})),
                &[],
                Ok(vec!["gpu-0", "gpu-1"]),
            ),
            (
                "a taken device is skipped",
                exactly(json!({"count": 2})),
                &["gpu-0"],
                Ok(vec!["gpu-1", "gpu-2"]),
            ),
            (
                "too few free",
                exactly(json!({"count": 3})),
                &["gpu-2"],
                Err(NoFit::TooFew("gpu".into())),
            ),
            (
                "All",
                exactly(json!({"allocationMode": "All"})),
                &[],
                Ok(vec!["gpu-0", "gpu-1", "gpu-2"]),
            ),
            (
                "All with one taken",
                exactly(json!({"allocationMode": "All"})),
                &["gpu-1"],
                Err(NoFit::TooFew("gpu".into())),
            ),
            (
                "the request's selector",
                exactly(json!({"count": 2, "selectors": a100})),
                &[],
                Ok(vec!["gpu-0", "gpu-1"]),
            ),
            (
                "All of the selected",
                exactly(json!({"allocationMode": "All", "selectors": a100})),
                &["gpu-2"],
                Ok(vec!["gpu-0", "gpu-1"]),
            ),
            (
                "a selector nothing matches",
                exactly(
                    json!({"selectors": [{"cel": {"expression": "device.attributes['gpu.example.com'].model == 'B200'"}}]}),
                ),
                &[],
                Err(NoFit::TooFew("gpu".into())),
            ),
            (
                "the class's selector",
                json!([{"name": "nic", "exactly": {"deviceClassName": "nic"}}]),
                &[],
                Err(NoFit::TooFew("nic".into())),
            ),
            (
                "no such class",
                json!([{"name": "gpu", "exactly": {"deviceClassName": "fpga"}}]),
                &[],
                Err(NoFit::NoClass("fpga".into())),
            ),
            (
                "two requests never share a device",
                json!([{"name": "a", "exactly": {"deviceClassName": "gpu"}}, {"name": "b", "exactly": {"deviceClassName": "gpu", "count": 2}}]),
                &[],
                Ok(vec!["gpu-0", "gpu-1", "gpu-2"]),
            ),
            (
                "unsupported firstAvailable",
                json!([{"name": "gpu", "firstAvailable": [{"name": "x", "deviceClassName": "gpu"}]}]),
                &[],
                Err(NoFit::Unsupported(
                    "request gpu: only requests for exactly one kind of device are allocated"
                        .into(),
                )),
            ),
        ];
        for (case, requests, used, expected) in cases {
            let got = allocate(&claim("c", requests), devices, &classes, &taken(used))
                .map(|results| results.iter().map(|r| r.device.clone()).collect::<Vec<_>>());
            let expected =
                expected.map(|names| names.into_iter().map(String::from).collect::<Vec<_>>());
            assert_eq!(got, expected, "{case}");
        }
        let broken = json!([{"name": "gpu", "exactly": {"deviceClassName": "broken"}}]);
        assert!(matches!(
            allocate(&claim("c", broken), devices, &classes, &BTreeSet::new()),
            Err(NoFit::BadSelector(_))
        ));
    }

    #[test]
    fn only_the_newest_generation_of_a_pool_counts() {
        let slices = [
            slice("w-0", 1, gpus(&["A100", "A100", "A100"])),
            slice("w-0", 2, gpus(&["H100"])),
            slice("w-1", 1, gpus(&["A100"])),
        ];
        let inventory = inventory(&slices);
        assert_eq!(inventory["w-0"].len(), 1);
        assert_eq!(inventory["w-1"].len(), 1);
    }

    fn node(name: &str) -> Node {
        serde_json::from_value(json!({"metadata": {"name": name}})).expect("a node")
    }

    fn pod(claims: Value, statuses: Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "default", "uid": "u-p"},
            "spec": {"containers": [], "resourceClaims": claims},
            "status": {"resourceClaimStatuses": statuses},
        }))
        .expect("a pod")
    }

    #[test]
    fn claims_resolve_by_name_or_through_the_pod_status() {
        let state = State::new(
            &[slice("w-0", 1, gpus(&["A100"]))],
            &[class("gpu", "device.driver == 'gpu.example.com'")],
            vec![
                claim("mine", exactly(json!({}))),
                claim("p-gpu-x1", exactly(json!({}))),
            ],
        );
        let named = pod(
            json!([{"name": "gpu", "resourceClaimName": "mine"}]),
            json!(null),
        );
        assert_eq!(state.claims_of(&named), Ok(vec!["default/mine".to_owned()]));
        let missing = pod(
            json!([{"name": "gpu", "resourceClaimName": "other"}]),
            json!(null),
        );
        assert_eq!(
            state.claims_of(&missing),
            Err("resourceclaim \"other\" not found".to_owned())
        );
        let templated = json!([{"name": "gpu", "resourceClaimTemplateName": "t"}]);
        assert_eq!(
            state.claims_of(&pod(templated.clone(), json!(null))),
            Err("waiting for resource claim gpu of pod default/p to be created".to_owned())
        );
        let created = pod(
            templated,
            json!([{"name": "gpu", "resourceClaimName": "p-gpu-x1"}]),
        );
        assert_eq!(
            state.claims_of(&created),
            Ok(vec!["default/p-gpu-x1".to_owned()])
        );
    }

    #[test]
    fn an_allocated_claim_keeps_its_pods_on_its_node_and_a_pass_takes_what_it_gave() {
        let mut state = State::new(
            &[slice("w-0", 1, gpus(&["A100"])), slice("w-1", 1, gpus(&[]))],
            &[class("gpu", "device.driver == 'gpu.example.com'")],
            vec![
                claim("a", exactly(json!({}))),
                claim("b", exactly(json!({}))),
            ],
        );
        let a = vec!["default/a".to_owned()];
        assert_eq!(
            state.check(&a, &node("w-1")),
            Err(Unfit::ClaimsUnallocatable)
        );
        let plan = state.check(&a, &node("w-0")).expect("a fits on w-0");
        let Some((_, Some(results))) = plan.into_iter().next() else {
            panic!("claim a is allocated on w-0");
        };
        let mut allocated = state.claim("default/a").cloned().expect("claim a");
        allocated.status = Some(k8s_openapi::api::resource::v1::ResourceClaimStatus {
            allocation: Some(allocation("w-0", results)),
            ..Default::default()
        });
        state.update(allocated);
        assert_eq!(
            state.check(&a, &node("w-0")),
            Ok(vec![("default/a".to_owned(), None)])
        );
        assert_eq!(state.check(&a, &node("w-1")), Err(Unfit::ClaimNotOnNode));
        let b = vec!["default/b".to_owned()];
        assert_eq!(
            state.check(&b, &node("w-0")),
            Err(Unfit::ClaimsUnallocatable)
        );
    }
}
