//! Rows of the Devices pane (`:devices`): every device the DRA drivers publish in ResourceSlices, with its node,
//! driver, pool and key attributes, and the claim (with the pods it is reserved for) that holds it, or free. A
//! device a claim holds that no slice publishes any more (its driver withdrew it, as while its module reloads) is
//! listed too, so an allocation never drops out of sight. Each node's counts, for the Nodes pane, come from the
//! same rows.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::NodeSelector;
use k8s_openapi::api::resource::v1::{DeviceAttribute, ResourceClaim, ResourceSlice};

use crate::tui::data::{ClusterData, Kind};
use crate::tui::target::Target;

use super::{Health, matches_filter};

/// The node column of a device any node (or a selection of nodes) can reach: not node-local.
pub const ANY_NODE: &str = "(shared)";

/// Where a device stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DeviceState {
    /// Published and allocated to no claim.
    Free,
    /// Published and allocated to a claim.
    Allocated,
    /// Allocated to a claim, but no ResourceSlice publishes it any more.
    Withdrawn,
}

impl DeviceState {
    /// The word the pane shows.
    pub fn label(self) -> &'static str {
        match self {
            DeviceState::Free => "Free",
            DeviceState::Allocated => "Allocated",
            DeviceState::Withdrawn => "Withdrawn",
        }
    }

    /// How to colour it: a withdrawn device under a claim is a pod that lost what it runs on.
    pub fn health(self) -> Health {
        match self {
            DeviceState::Free => Health::Ok,
            DeviceState::Allocated => Health::Progressing,
            DeviceState::Withdrawn => Health::Warning,
        }
    }
}

/// One device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceRow {
    /// The node the device is on, or [`ANY_NODE`].
    pub node: String,
    /// The DRA driver that publishes it.
    pub driver: String,
    /// Its pool.
    pub pool: String,
    /// Its name in the pool.
    pub device: String,
    /// Its attributes and capacities, `name=value`, by name.
    pub attributes: String,
    /// The claims (`namespace/name`) it is allocated to: one, unless the device may be shared.
    pub claims: Vec<String>,
    /// The pods (`namespace/name`) those claims are reserved for.
    pub pods: Vec<String>,
    /// Free, allocated, or allocated and withdrawn.
    pub state: DeviceState,
    /// What `y` shows: the ResourceSlice publishing it, or the claim holding it once withdrawn.
    pub object: Target,
}

impl DeviceRow {
    /// The text the `/` filter searches.
    pub fn matches(&self, needle: &str) -> bool {
        matches_filter(
            needle,
            &[
                &self.node,
                &self.driver,
                &self.pool,
                &self.device,
                &self.attributes,
                self.state.label(),
            ],
        ) || self
            .claims
            .iter()
            .chain(&self.pods)
            .any(|name| matches_filter(needle, &[name]))
    }
}

/// How many devices a node publishes, and how many of those are allocated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeDevices {
    /// Devices published on the node.
    pub published: usize,
    /// Of those, devices allocated to a claim.
    pub allocated: usize,
}

/// A device, as `driver/pool/device` name it across the cluster.
type DeviceKey = (String, String, String);

/// The claims holding one device.
#[derive(Clone, Debug, Default)]
struct Holders {
    /// `namespace/name` of each claim.
    claims: Vec<String>,
    /// `namespace/name` of each pod they are reserved for.
    pods: Vec<String>,
    /// The node the first claim's allocation is limited to, when its node selector names one.
    node: Option<String>,
    /// The first claim, for `y` once its device is withdrawn.
    claim: Option<Target>,
}

/// Every device's row, by node, driver, pool and device.
pub fn rows(data: &ClusterData) -> Vec<DeviceRow> {
    let mut holders = holders(&data.claims);
    let mut rows = Vec::new();
    for slice in current_slices(&data.slices) {
        let spec = &slice.spec;
        let object = Target::cluster(
            Kind::ResourceSlice,
            slice.metadata.name.as_deref().unwrap_or_default(),
        );
        for device in spec.devices.iter().flatten() {
            let key = (
                spec.driver.clone(),
                spec.pool.name.clone(),
                device.name.clone(),
            );
            let held = holders.remove(&key).unwrap_or_default();
            let node = spec
                .node_name
                .as_ref()
                .or(device.node_name.as_ref())
                .cloned()
                .unwrap_or_else(|| ANY_NODE.to_owned());
            rows.push(DeviceRow {
                node,
                driver: key.0,
                pool: key.1,
                device: key.2,
                attributes: attributes(
                    device.attributes.as_ref(),
                    device.capacity.as_ref().map(|capacity| {
                        capacity
                            .iter()
                            .map(|(name, c)| (name.as_str(), c.value.0.as_str()))
                    }),
                ),
                state: if held.claims.is_empty() {
                    DeviceState::Free
                } else {
                    DeviceState::Allocated
                },
                claims: held.claims,
                pods: held.pods,
                object: object.clone(),
            });
        }
    }
    for ((driver, pool, device), held) in holders {
        let Some(object) = held.claim else {
            continue;
        };
        rows.push(DeviceRow {
            node: held.node.unwrap_or_else(|| ANY_NODE.to_owned()),
            driver,
            pool,
            device,
            attributes: String::new(),
            claims: held.claims,
            pods: held.pods,
            state: DeviceState::Withdrawn,
            object,
        });
    }
    rows.sort_by(|a, b| {
        (&a.node, &a.driver, &a.pool, &a.device).cmp(&(&b.node, &b.driver, &b.pool, &b.device))
    });
    rows
}

/// Each node's published and allocated devices, from the pane's rows.
pub fn per_node(rows: &[DeviceRow]) -> HashMap<String, NodeDevices> {
    let mut nodes: HashMap<String, NodeDevices> = HashMap::new();
    for row in rows
        .iter()
        .filter(|row| row.state != DeviceState::Withdrawn)
    {
        let counts = nodes.entry(row.node.clone()).or_default();
        counts.published += 1;
        if row.state == DeviceState::Allocated {
            counts.allocated += 1;
        }
    }
    nodes
}

/// The claims allocated on each node, with the driver of each device they hold: `(driver, namespace/name)`, sorted
/// and without repeats. A claim's node is where its devices are published, else the node its allocation is limited
/// to.
pub fn claims_per_node(data: &ClusterData) -> HashMap<String, Vec<(String, String)>> {
    let mut nodes: HashMap<String, Vec<(String, String)>> = HashMap::new();
    for row in rows(data) {
        if row.node == ANY_NODE {
            continue;
        }
        let entry = nodes.entry(row.node).or_default();
        entry.extend(row.claims.into_iter().map(|c| (row.driver.clone(), c)));
    }
    for claims in nodes.values_mut() {
        claims.sort();
        claims.dedup();
    }
    nodes.retain(|_, claims| !claims.is_empty());
    nodes
}

/// The slices of each pool's newest generation: a driver that republishes a pool bumps its generation, and slices of
/// an older one are on their way out.
fn current_slices(slices: &[std::sync::Arc<ResourceSlice>]) -> Vec<&ResourceSlice> {
    let mut newest: HashMap<(&str, &str), i64> = HashMap::new();
    for slice in slices {
        let generation = newest
            .entry((slice.spec.driver.as_str(), slice.spec.pool.name.as_str()))
            .or_insert(slice.spec.pool.generation);
        *generation = (*generation).max(slice.spec.pool.generation);
    }
    slices
        .iter()
        .filter(|slice| {
            newest.get(&(slice.spec.driver.as_str(), slice.spec.pool.name.as_str()))
                == Some(&slice.spec.pool.generation)
        })
        .map(AsRef::as_ref)
        .collect()
}

/// Who holds each allocated device, from the claims' allocation results and reservations.
fn holders(claims: &[std::sync::Arc<ResourceClaim>]) -> HashMap<DeviceKey, Holders> {
    let mut held: HashMap<DeviceKey, Holders> = HashMap::new();
    for claim in claims {
        let Some(status) = &claim.status else {
            continue;
        };
        let Some(allocation) = &status.allocation else {
            continue;
        };
        let namespace = claim.metadata.namespace.as_deref().unwrap_or_default();
        let name = claim.metadata.name.as_deref().unwrap_or_default();
        let pods: Vec<String> = status
            .reserved_for
            .iter()
            .flatten()
            .filter(|consumer| consumer.resource == "pods")
            .map(|consumer| format!("{namespace}/{}", consumer.name))
            .collect();
        let node = allocation.node_selector.as_ref().and_then(selected_node);
        let results = allocation
            .devices
            .as_ref()
            .and_then(|devices| devices.results.as_ref());
        for result in results.iter().copied().flatten() {
            let key = (
                result.driver.clone(),
                result.pool.clone(),
                result.device.clone(),
            );
            let entry = held.entry(key).or_default();
            let claim_name = format!("{namespace}/{name}");
            if !entry.claims.contains(&claim_name) {
                entry.claims.push(claim_name);
                entry.pods.extend(pods.iter().cloned());
            }
            entry.node = entry.node.take().or_else(|| node.clone());
            entry.claim = entry
                .claim
                .take()
                .or_else(|| Some(Target::namespaced(Kind::ResourceClaim, namespace, name)));
        }
    }
    held
}

/// The one node a node selector names, as the scheduler writes it for a node-local allocation: a `metadata.name`
/// field or a `kubernetes.io/hostname` label, with a single value.
fn selected_node(selector: &NodeSelector) -> Option<String> {
    let term = selector.node_selector_terms.first()?;
    let single = |values: &Option<Vec<String>>| match values.as_deref() {
        Some([one]) => Some(one.clone()),
        _ => None,
    };
    term.match_fields
        .iter()
        .flatten()
        .find(|r| r.key == "metadata.name" && r.operator == "In")
        .and_then(|r| single(&r.values))
        .or_else(|| {
            term.match_expressions
                .iter()
                .flatten()
                .find(|r| r.key == "kubernetes.io/hostname" && r.operator == "In")
                .and_then(|r| single(&r.values))
        })
}

/// A device's attributes and capacities as `name=value`, by name.
fn attributes<'a>(
    attributes: Option<&BTreeMap<String, DeviceAttribute>>,
    capacity: Option<impl Iterator<Item = (&'a str, &'a str)>>,
) -> String {
    let mut pairs: Vec<(&str, String)> = attributes
        .into_iter()
        .flatten()
        .filter_map(|(name, value)| Some((name.as_str(), attribute_value(value)?)))
        .collect();
    pairs.extend(
        capacity
            .into_iter()
            .flatten()
            .map(|(name, value)| (name, value.to_owned())),
    );
    pairs.sort();
    pairs
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The one value an attribute carries.
fn attribute_value(value: &DeviceAttribute) -> Option<String> {
    value
        .string
        .clone()
        .or_else(|| value.version.clone())
        .or_else(|| value.int.map(|i| i.to_string()))
        .or_else(|| value.bool.map(|b| b.to_string()))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::tui::data::KindSnapshot;
    use serde_json::json;

    fn slice(
        name: &str,
        node: &str,
        generation: i64,
        devices: serde_json::Value,
    ) -> Arc<ResourceSlice> {
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": name},
                "spec": {
                    "driver": "accel.acme.io",
                    "nodeName": node,
                    "pool": {"name": node, "generation": generation, "resourceSliceCount": 1},
                    "devices": devices
                }
            }))
            .expect("a ResourceSlice"),
        )
    }

    fn claim(name: &str, node: &str, device: &str, pods: &[&str]) -> Arc<ResourceClaim> {
        let reserved: Vec<serde_json::Value> = pods
            .iter()
            .map(|pod| json!({"resource": "pods", "name": pod, "uid": format!("uid-{pod}")}))
            .collect();
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": "lab"},
                "spec": {"devices": {"requests": [{"name": "accel", "exactly": {"deviceClassName": "accel.acme.io"}}]}},
                "status": {
                    "allocation": {
                        "devices": {"results": [{"request": "accel", "driver": "accel.acme.io", "pool": node, "device": device}]},
                        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": [node]}
                        ]}]}
                    },
                    "reservedFor": reserved
                }
            }))
            .expect("a ResourceClaim"),
        )
    }

    fn data(slices: Vec<Arc<ResourceSlice>>, claims: Vec<Arc<ResourceClaim>>) -> ClusterData {
        let mut data = ClusterData::default();
        data.apply(KindSnapshot::ResourceSlices(slices));
        data.apply(KindSnapshot::ResourceClaims(claims));
        data
    }

    #[test]
    fn each_published_device_is_a_row_with_its_holder_or_free() {
        let devices = json!([
            {"name": "accel-1", "attributes": {"model": {"string": "a100"}, "driverVersion": {"version": "1.2.0"}},
             "capacity": {"memory": {"value": "16Gi"}}},
            {"name": "accel-0", "attributes": {"ecc": {"bool": true}, "cores": {"int": 64}}}
        ]);
        let data = data(
            vec![slice("worker-1-accel", "worker-1", 1, devices)],
            vec![claim("train", "worker-1", "accel-1", &["trainer"])],
        );
        let rows = rows(&data);
        // Device, attributes, state, claims and pods of each row.
        type Shown<'a> = (&'a str, &'a str, DeviceState, &'a [String], &'a [String]);
        let shown: Vec<Shown<'_>> = rows
            .iter()
            .map(|r| {
                (
                    r.device.as_str(),
                    r.attributes.as_str(),
                    r.state,
                    r.claims.as_slice(),
                    r.pods.as_slice(),
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                (
                    "accel-0",
                    "cores=64, ecc=true",
                    DeviceState::Free,
                    &[][..],
                    &[][..]
                ),
                (
                    "accel-1",
                    "driverVersion=1.2.0, memory=16Gi, model=a100",
                    DeviceState::Allocated,
                    &["lab/train".to_owned()][..],
                    &["lab/trainer".to_owned()][..]
                ),
            ]
        );
        assert_eq!(rows[0].node, "worker-1");
        assert_eq!(
            rows[0].object,
            Target::cluster(Kind::ResourceSlice, "worker-1-accel")
        );
        assert_eq!(
            per_node(&rows).get("worker-1"),
            Some(&NodeDevices {
                published: 2,
                allocated: 1
            })
        );
    }

    #[test]
    fn a_claimed_device_no_slice_publishes_is_withdrawn_on_its_claims_node() {
        let data = data(
            Vec::new(),
            vec![claim("train", "worker-2", "accel-0", &["trainer"])],
        );
        let rows = rows(&data);
        assert_eq!(rows.len(), 1);
        assert_eq!(
            (rows[0].node.as_str(), rows[0].state),
            ("worker-2", DeviceState::Withdrawn)
        );
        assert_eq!(
            rows[0].object,
            Target::namespaced(Kind::ResourceClaim, "lab", "train")
        );
        assert!(
            per_node(&rows).is_empty(),
            "a withdrawn device is published nowhere"
        );
        assert_eq!(
            claims_per_node(&data).get("worker-2"),
            Some(&vec![("accel.acme.io".to_owned(), "lab/train".to_owned())])
        );
    }

    #[test]
    fn only_the_newest_generation_of_a_pool_counts() {
        let data = data(
            vec![
                slice("old", "worker-1", 1, json!([{"name": "gone"}])),
                slice("new", "worker-1", 2, json!([{"name": "accel-0"}])),
            ],
            Vec::new(),
        );
        let devices: Vec<String> = rows(&data).into_iter().map(|r| r.device).collect();
        assert_eq!(devices, ["accel-0"]);
    }

    #[test]
    fn the_filter_finds_devices_by_node_attribute_claim_and_pod() {
        let data = data(
            vec![slice(
                "s",
                "worker-1",
                1,
                json!([{"name": "accel-0", "attributes": {"model": {"string": "A100"}}}]),
            )],
            vec![claim("train", "worker-1", "accel-0", &["trainer"])],
        );
        let row = &rows(&data)[0];
        for needle in ["worker-1", "a100", "lab/train", "trainer", "allocated"] {
            assert!(row.matches(needle), "{needle}");
        }
        assert!(!row.matches("worker-2"));
    }
}
