//! Device plugins: containers that tell their node's kubelet about devices, which the node then offers to pods as
//! an extended resource.
//!
//! A real device plugin registers with the kubelet over the socket in `/var/lib/kubelet/device-plugins` and lists
//! its devices; the kubelet adds them to the node's `status.capacity` and `status.allocatable`, and takes them out
//! when the plugin goes. The simulation has no sockets, so a container says what it advertises in its env:
//! `DEVICE_PLUGIN_RESOURCE=<resource name>` (one device) or `<resource name>=<count>`. The name must be an extended
//! resource name (`<domain>/<name>`, outside the `kubernetes.io` domains). While such a container runs, its node
//! advertises the devices; when it stops (pod deleted, container exit, reboot) they are gone. Several plugins of
//! the same resource on a node add up.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use k8s_openapi::api::core::v1::Container;

use super::podspec::env;
use crate::World;

/// The env var through which a container advertises devices.
pub const RESOURCE_ENV: &str = "DEVICE_PLUGIN_RESOURCE";

/// What one device plugin container advertises: an extended resource and how many devices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Advertised {
    /// The extended resource name, e.g. `example.com/gpu`.
    pub resource: String,
    /// How many devices.
    pub count: u64,
}

/// What a container advertises, when it is a device plugin whose env names a valid extended resource.
pub fn advertised(container: &Container) -> Option<Advertised> {
    let value = env(container, RESOURCE_ENV)?.trim();
    let (resource, count) = match value.split_once('=') {
        Some((resource, count)) => (resource.trim(), count.trim().parse::<u64>().ok()?),
        None => (value, 1),
    };
    is_extended_resource(resource).then(|| Advertised {
        resource: resource.to_owned(),
        count,
    })
}

/// Whether `name` is an extended resource name: `<domain>/<name>` outside the `kubernetes.io` domains (which are
/// Kubernetes' own), as the API server and the scheduler tell them apart.
pub fn is_extended_resource(name: &str) -> bool {
    let Some((domain, rest)) = name.split_once('/') else {
        return false;
    };
    !domain.is_empty()
        && !rest.is_empty()
        && !rest.contains('/')
        && domain != "kubernetes.io"
        && !domain.ends_with(".kubernetes.io")
        && !name.starts_with("requests.")
}

/// The devices every node's running plugins advertise: node → registration (pod UID and container) → devices. It
/// is the kubelets' device manager, kept in memory as a kubelet keeps it.
#[derive(Debug, Clone, Default)]
pub struct DevicePlugins(Arc<Mutex<BTreeMap<String, BTreeMap<String, Advertised>>>>);

impl DevicePlugins {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, BTreeMap<String, Advertised>>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The extended resources `node` offers, with how many devices of each.
    pub fn offered(&self, node: &str) -> BTreeMap<String, u64> {
        let mut offered = BTreeMap::new();
        for advertised in self.lock().get(node).into_iter().flat_map(BTreeMap::values) {
            *offered.entry(advertised.resource.clone()).or_default() += advertised.count;
        }
        offered
    }
}

/// A running plugin's registration; dropping it (the container stops) takes its devices off the node.
pub struct Registration {
    world: Arc<World>,
    node: String,
    key: String,
}

/// Register the devices `container` advertises on `node` for as long as the returned registration lives; None when
/// the container is no device plugin.
pub fn register(
    world: &Arc<World>,
    node: &str,
    pod_uid: &str,
    container: &Container,
) -> Option<Registration> {
    let advertised = advertised(container)?;
    let key = format!("{pod_uid}/{}", container.name);
    world
        .device_plugins
        .lock()
        .entry(node.to_owned())
        .or_default()
        .insert(key.clone(), advertised);
    super::announce(world, node);
    Some(Registration {
        world: world.clone(),
        node: node.to_owned(),
        key,
    })
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut plugins = self.world.device_plugins.lock();
        if let Some(registrations) = plugins.get_mut(&self.node) {
            registrations.remove(&self.key);
            if registrations.is_empty() {
                plugins.remove(&self.node);
            }
        }
        drop(plugins);
        super::announce(&self.world, &self.node);
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::world;
    use super::*;
    use serde_json::json;

    fn container(resource: Option<&str>) -> Container {
        let env = resource.map(|r| json!([{"name": RESOURCE_ENV, "value": r}]));
        serde_json::from_value(
            json!({"name": "device-plugin", "image": "quay.io/acme/dp:1", "env": env}),
        )
        .expect("a container")
    }

    #[test]
    fn the_env_names_the_resource_and_count() {
        assert_eq!(
            advertised(&container(Some("example.com/gpu"))),
            Some(Advertised {
                resource: "example.com/gpu".into(),
                count: 1
            })
        );
        assert_eq!(
            advertised(&container(Some("example.com/gpu=4"))).map(|a| a.count),
            Some(4)
        );
        for invalid in [
            "gpu",
            "kubernetes.io/gpu",
            "node.kubernetes.io/x",
            "example.com/gpu=x",
        ] {
            assert_eq!(advertised(&container(Some(invalid))), None, "{invalid}");
        }
        assert_eq!(advertised(&container(None)), None);
    }

    #[tokio::test]
    async fn devices_stay_while_registered_and_add_up() {
        let world = world();
        let first = register(
            &world,
            "worker-0",
            "a",
            &container(Some("example.com/gpu=2")),
        );
        let second = register(&world, "worker-0", "b", &container(Some("example.com/gpu")));
        assert!(register(&world, "worker-0", "c", &container(None)).is_none());
        assert_eq!(
            world.device_plugins.offered("worker-0"),
            BTreeMap::from([("example.com/gpu".to_owned(), 3)])
        );
        drop(first);
        assert_eq!(
            world.device_plugins.offered("worker-0")["example.com/gpu"],
            1
        );
        drop(second);
        assert!(world.device_plugins.offered("worker-0").is_empty());
    }
}
