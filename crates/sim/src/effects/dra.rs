//! DRA drivers: kubelet plugins that publish the devices of their node in a ResourceSlice, from which the scheduler
//! allocates ResourceClaims.
//!
//! A real DRA kubelet plugin (such as `dra-example-kubeletplugin`, which upstream KMM's DRA Modules run) finds its
//! devices on the node, registers with the kubelet, and publishes a ResourceSlice for its node: `spec.driver`,
//! `spec.nodeName`, `spec.pool` named after the node, and the devices with their attributes and capacity, owned by
//! the Node as the kubelet owns it. The simulation recognises such a container by its env `DRIVER_NAME` (a DNS
//! subdomain, e.g. `gpu.example.com`). What it finds comes from the scenario: the `draDevices` of the node's group
//! for that driver, present while the kernel module they name is loaded on the machine (or always, when they name
//! none). So the slice appears once the container runs and the module is loaded, and is deleted when the module
//! unloads, the container stops (pod deleted, node drained) or the machine reboots.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Node};
use k8s_openapi::api::resource::v1::{
    Device, DeviceAttribute, DeviceCapacity, ResourcePool, ResourceSlice, ResourceSliceSpec,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Api, DeleteParams, PostParams};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use super::podspec::env;
use crate::World;
use crate::scenario::{DraAttribute, DraDevices, Scenario};

/// The env var that names a DRA kubelet plugin's driver.
pub const DRIVER_ENV: &str = "DRIVER_NAME";

/// How long a driver waits before publishing again after the API server refused a write.
const RETRY: Duration = Duration::from_secs(5);

/// The driver a container runs, when it is a DRA kubelet plugin: its `DRIVER_NAME`, a DNS subdomain.
pub fn driver_name(container: &Container) -> Option<&str> {
    let name = env(container, DRIVER_ENV)?.trim();
    let label = |l: &str| {
        !l.is_empty()
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    };
    (name.len() <= 63 && name.contains('.') && name.split('.').all(label)).then_some(name)
}

/// The devices `driver` finds on `node` now: the scenario's devices of the node's group for the driver, when
/// the kernel module they need is loaded on the machine.
pub fn devices_found(world: &World, node: &str, driver: &str) -> Vec<Device> {
    let Some(devices) = scenario_devices(&world.scenario, node, driver) else {
        return Vec::new();
    };
    let loaded = world.machines.with(node, |machine| {
        devices
            .module
            .as_ref()
            .is_none_or(|module| machine.modules.contains(&module.replace('-', "_")))
    });
    if loaded != Some(true) {
        return Vec::new();
    }
    (0..devices.count)
        .map(|index| device(devices, index))
        .collect()
}

/// The `draDevices` entry of `node`'s group for `driver`.
fn scenario_devices<'s>(
    scenario: &'s Scenario,
    node: &str,
    driver: &str,
) -> Option<&'s DraDevices> {
    let group = scenario.nodes.iter().find(|group| {
        node.strip_prefix(group.name_prefix.as_str())
            .and_then(|index| index.parse::<u32>().ok())
            .is_some_and(|index| {
                index < group.count && format!("{}{index}", group.name_prefix) == node
            })
    })?;
    group.dra_devices.iter().find(|d| d.driver == driver)
}

/// Device `index` as the driver publishes it: the scenario's attributes (in the driver's domain) and its index.
fn device(devices: &DraDevices, index: u32) -> Device {
    let mut attributes: BTreeMap<String, DeviceAttribute> = devices
        .attributes
        .iter()
        .map(|(name, value)| {
            let attribute = match value {
                DraAttribute::Bool(b) => DeviceAttribute {
                    bool: Some(*b),
                    ..DeviceAttribute::default()
                },
                DraAttribute::Int(i) => DeviceAttribute {
                    int: Some(*i),
                    ..DeviceAttribute::default()
                },
                DraAttribute::String(s) => DeviceAttribute {
                    string: Some(s.clone()),
                    ..DeviceAttribute::default()
                },
            };
            (name.clone(), attribute)
        })
        .collect();
    attributes
        .entry("index".to_owned())
        .or_insert(DeviceAttribute {
            int: Some(i64::from(index)),
            ..DeviceAttribute::default()
        });
    let capacity = devices
        .capacity
        .iter()
        .map(|(name, value)| {
            (
                name.clone(),
                DeviceCapacity {
                    value: Quantity(value.clone()),
                    ..DeviceCapacity::default()
                },
            )
        })
        .collect::<BTreeMap<_, _>>();
    Device {
        name: devices.device_name(index),
        attributes: Some(attributes),
        capacity: (!capacity.is_empty()).then_some(capacity),
        ..Device::default()
    }
}

/// A running driver's publication: dropping it (the container stops) withdraws its ResourceSlice.
pub struct Publication {
    stop: CancellationToken,
}

impl Drop for Publication {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Publish the devices `container`'s driver finds on `node` for as long as the returned publication lives, following
/// the machine as its modules load and unload; None when the container is no DRA kubelet plugin.
pub fn register(world: &Arc<World>, node: &str, container: &Container) -> Option<Publication> {
    let driver = driver_name(container)?.to_owned();
    let stop = CancellationToken::new();
    let publisher = Publisher {
        world: world.clone(),
        node: node.to_owned(),
        driver,
        published: None,
        generation: 0,
    };
    tokio::spawn(publisher.run(stop.clone()));
    Some(Publication { stop })
}

/// One driver on one node, keeping its ResourceSlice in step with the devices it finds.
struct Publisher {
    world: Arc<World>,
    node: String,
    driver: String,
    /// The slice it published (its name) and the devices in it.
    published: Option<(String, Vec<Device>)>,
    /// The pool's generation, raised with every new slice.
    generation: i64,
}

impl Publisher {
    async fn run(mut self, stop: CancellationToken) {
        let mut changes = self.world.machine_changed.subscribe();
        loop {
            let settled = self.publish().await;
            let retry = async {
                if settled {
                    std::future::pending::<()>().await;
                } else {
                    self.world.clock.sleep(RETRY).await;
                }
            };
            tokio::select! {
                () = self.world.stop.cancelled() => return,
                () = stop.cancelled() => break,
                () = retry => {}
                changed = changes.recv() => match changed {
                    Ok(node) if node != self.node => continue,
                    Ok(_) | Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => break,
                },
            }
        }
        self.withdraw().await;
    }

    /// Make the slice show the devices found now; false when the API server refused and it must be tried again.
    async fn publish(&mut self) -> bool {
        let found = devices_found(&self.world, &self.node, &self.driver);
        if self.published.as_ref().map(|(_, devices)| devices) == Some(&found)
            || (found.is_empty() && self.published.is_none())
        {
            return true;
        }
        if !self.withdraw().await {
            return false;
        }
        if found.is_empty() {
            return true;
        }
        match self.create(&found).await {
            Ok(name) => {
                self.published = Some((name, found));
                true
            }
            Err(error) => {
                tracing::warn!(node = %self.node, driver = %self.driver, %error, "ResourceSlice not published");
                false
            }
        }
    }

    async fn create(&mut self, devices: &[Device]) -> Result<String, kube::Error> {
        let owner = Api::<Node>::all(self.world.client.clone())
            .get(&self.node)
            .await?;
        self.generation += 1;
        let slice = ResourceSlice {
            metadata: ObjectMeta {
                generate_name: Some(format!("{}-{}-", self.node, self.driver)),
                owner_references: Some(vec![OwnerReference {
                    api_version: "v1".into(),
                    kind: "Node".into(),
                    name: self.node.clone(),
                    uid: owner.metadata.uid.unwrap_or_default(),
                    controller: Some(true),
                    ..OwnerReference::default()
                }]),
                ..ObjectMeta::default()
            },
            spec: ResourceSliceSpec {
                driver: self.driver.clone(),
                node_name: Some(self.node.clone()),
                pool: ResourcePool {
                    name: self.node.clone(),
                    generation: self.generation,
                    resource_slice_count: 1,
                },
                devices: Some(devices.to_vec()),
                ..ResourceSliceSpec::default()
            },
        };
        let created = Api::<ResourceSlice>::all(self.world.client.clone())
            .create(&PostParams::default(), &slice)
            .await?;
        Ok(created.metadata.name.unwrap_or_default())
    }

    /// Delete the published slice, if any; false when the API server refused.
    async fn withdraw(&mut self) -> bool {
        let Some((name, _)) = &self.published else {
            return true;
        };
        let api = Api::<ResourceSlice>::all(self.world.client.clone());
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => {
                tracing::warn!(node = %self.node, slice = %name, %error, "ResourceSlice not withdrawn");
                return false;
            }
        }
        self.published = None;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::world;
    use super::*;
    use serde_json::json;

    fn container(driver: Option<&str>) -> Container {
        let env = driver.map(|d| json!([{"name": DRIVER_ENV, "value": d}]));
        serde_json::from_value(json!({"name": "dra", "image": "registry.k8s.io/dra:1", "env": env}))
            .expect("a container")
    }

    #[test]
    fn the_env_names_the_driver() {
        assert_eq!(
            driver_name(&container(Some("gpu.example.com"))),
            Some("gpu.example.com")
        );
        for invalid in ["", "gpu", "GPU.example.com", "gpu_example.com"] {
            assert_eq!(driver_name(&container(Some(invalid))), None, "{invalid:?}");
        }
        assert_eq!(driver_name(&container(None)), None);
    }

    #[tokio::test]
    async fn devices_come_from_the_group_once_their_module_is_loaded() {
        let world = world();
        let node = world.scenario.node_names()[0].clone();
        assert!(devices_found(&world, &node, "nic.example.com").is_empty());
        let Some(devices) = scenario_devices(&world.scenario, &node, "gpu.example.com") else {
            panic!("the test scenario gives {node} gpu.example.com devices");
        };
        let module = devices.module.clone().expect("a module");
        assert!(devices_found(&world, &node, "gpu.example.com").is_empty());
        world
            .machines
            .with(&node, |m| m.modules.insert(module.replace('-', "_")));
        let found = devices_found(&world, &node, "gpu.example.com");
        assert_eq!(found.len(), devices.count as usize);
        assert_eq!(found[1].name, devices.device_name(1));
        let attributes = found[1].attributes.as_ref().expect("attributes");
        assert_eq!(attributes["index"].int, Some(1));
        assert_eq!(attributes["model"].string.as_deref(), Some("A100"));
        assert_eq!(
            found[0].capacity.as_ref().expect("capacity")["memory"].value,
            Quantity("40Gi".into())
        );
    }
}
