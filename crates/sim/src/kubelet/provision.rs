//! Node registration: the machines of the scenario's node groups and their Node objects, or — when the store
//! survived a restart — the machines and Nodes already there.

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::Context;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node};
use kube::api::{Api, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use rand::{Rng, RngCore};
use serde_json::json;

use super::{ids, node, publish, record};
use crate::machine::{Containerd, ImageStore, Machine};
use crate::scenario::NodeGroup;
use crate::{SIM_NAMESPACE, World};

/// The sandbox ("pause") image every pod's sandbox runs; containerd pins it so image GC never removes it.
pub(super) const PAUSE_IMAGE: &str = "registry.k8s.io/pause:3.10";

/// Size of the pause image in a node's store.
const PAUSE_IMAGE_BYTES: u64 = 320_368;

/// How many registrations are in flight at once.
const PARALLEL_WRITES: usize = 64;

/// Create (or, after a restart on a durable store, adopt) the machines and Node objects of the scenario.
///
/// A machine whose `kmm-tui-sim/machine-<node>` ConfigMap exists is adopted from it as it was (same boot, same
/// images, same modules), and an existing Node object keeps its labels, taints and spec — a restarted simulation
/// is a restarted kubelet, not a rebooted machine; only its status is brought up to date where it differs.
pub async fn register(world: &Arc<World>) -> anyhow::Result<()> {
    let client = &world.client;
    ensure_namespace(client).await?;
    let mut existing_nodes: HashMap<String, Node> = Api::<Node>::all(client.clone())
        .list(&ListParams::default())
        .await
        .context("listing Nodes")?
        .items
        .into_iter()
        .filter_map(|n| Some((n.metadata.name.clone()?, n)))
        .collect();
    let mut recorded: HashMap<String, Machine> =
        Api::<ConfigMap>::namespaced(client.clone(), SIM_NAMESPACE)
            .list(&ListParams::default())
            .await
            .context("listing the machine ConfigMaps")?
            .items
            .into_iter()
            .filter_map(|cm| record::machine_of(&cm))
            .map(|m| (m.name.clone(), m))
            .collect();

    let mut rng = world.rng("kubelet");
    let mut writes = Vec::new();
    let mut index = 0;
    for group in &world.scenario.nodes {
        for n in 0..group.count {
            let name = format!("{}{n}", group.name_prefix);
            let (machine, adopted) = match recorded.remove(&name) {
                Some(mut machine) => {
                    machine.ready = true;
                    (machine, true)
                }
                None => (new_machine(world, group, &name, &mut rng), false),
            };
            world.machines.lock().insert(name.clone(), machine.clone());
            let node = match existing_nodes.remove(&name) {
                None => Some(Registration::Create(Box::new(node::new_object(
                    world, group, &machine, index,
                )))),
                Some(existing) => {
                    let previous = node::WrittenStatus::of(&existing.status.unwrap_or_default());
                    let status = node::status(world, &machine, index, Some(&previous));
                    (!previous.says_the_same(&status)).then(|| {
                        Registration::Refresh(Box::new(publish::status_patch(
                            &status,
                            Some(&previous),
                        )))
                    })
                }
            };
            if node.is_some() || !adopted {
                writes.push((node, (!adopted).then(|| record::config_map(&machine)), name));
            }
            index += 1;
        }
    }

    // Each registration is a task of its own so that a multi-threaded runtime spreads them over its threads.
    futures::stream::iter(writes)
        .map(|(node, record, name)| {
            let client = world.client.clone();
            tokio::spawn(async move {
                let nodes = Api::<Node>::all(client.clone());
                match node {
                    Some(Registration::Create(object)) => create(&nodes, object.as_ref()).await,
                    Some(Registration::Refresh(status)) => nodes
                        .patch_status(
                            &name,
                            &PatchParams::default(),
                            &Patch::Merge(json!({ "status": *status })),
                        )
                        .await
                        .map(drop),
                    None => Ok(()),
                }
                .with_context(|| format!("registering node {name}"))?;
                if let Some(record) = record {
                    create(
                        &Api::<ConfigMap>::namespaced(client, SIM_NAMESPACE),
                        &record,
                    )
                    .await
                    .with_context(|| format!("publishing machine {name}"))?;
                }
                anyhow::Ok(())
            })
        })
        .buffer_unordered(PARALLEL_WRITES)
        .map(|joined| joined.context("a registration task failed")?)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

/// What registering a node writes.
enum Registration {
    /// A new Node object.
    Create(Box<Node>),
    /// The status patch of a Node that exists, where it differs from what the machine shows now.
    Refresh(Box<serde_json::Value>),
}

/// Create an object; one that exists already (another writer was first) is fine.
async fn create<K>(api: &Api<K>, object: &K) -> Result<(), kube::Error>
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.create(&PostParams::default(), object).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

async fn ensure_namespace(client: &kube::Client) -> anyhow::Result<()> {
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(SIM_NAMESPACE.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    create(&Api::<Namespace>::all(client.clone()), &namespace)
        .await
        .with_context(|| format!("creating the namespace {SIM_NAMESPACE}"))
}

/// A machine fresh from installation: the group's kernel and OS, containerd with its default configuration, and
/// nothing in its image store but the pinned pause image.
fn new_machine(world: &World, group: &NodeGroup, name: &str, rng: &mut impl RngCore) -> Machine {
    let os_image_url = world
        .scenario
        .os_images
        .iter()
        .find(|o| o.os_image == group.os_image && o.kernel_version == group.kernel_version)
        .map(|o| o.url.clone());
    let mut images = ImageStore::default();
    images.insert(PAUSE_IMAGE, PAUSE_IMAGE_BYTES, world.clock.now(), true);
    let boot_entropy = format!("{:x}", rng.random::<u128>());
    Machine {
        name: name.to_string(),
        kernel_version: group.kernel_version.clone(),
        os_image: group.os_image.clone(),
        os_image_url,
        boot_id: ids::uuid(&["boot", name, &boot_entropy]),
        architecture: group.architecture.clone(),
        operating_system: group.operating_system.clone(),
        disk_bytes: group.disk_gi_b * 1024 * 1024 * 1024,
        modules: Default::default(),
        shims: Default::default(),
        containerd: Containerd {
            version: group.containerd.version.clone(),
            config_path: group.containerd.config_path.clone(),
            config: default_containerd_config(&group.containerd.version),
            restarts: 0,
            last_restart: None,
        },
        images,
        ready: true,
    }
}

/// The configuration a node's containerd is installed with: the CRI plugin with runc as the default runtime and
/// the pause image as sandbox image. containerd 2 reads configuration version 3, with the CRI plugin split into
/// `io.containerd.cri.v1.images` and `io.containerd.cri.v1.runtime`; earlier releases read version 2 with the
/// single `io.containerd.grpc.v1.cri` plugin.
pub(super) fn default_containerd_config(version: &str) -> String {
    let major: u32 = version
        .trim_start_matches('v')
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(1);
    let common = "root = \"/var/lib/containerd\"\n\
                  state = \"/run/containerd\"\n\
                  oom_score = 0\n\
                  \n\
                  [grpc]\n  \
                  address = \"/run/containerd/containerd.sock\"\n  \
                  max_recv_message_size = 16777216\n  \
                  max_send_message_size = 16777216\n\
                  \n\
                  [metrics]\n  \
                  address = \"\"\n\n";
    if major >= 2 {
        format!(
            "version = 3\n{common}\
             [plugins]\n\n  \
             [plugins.\"io.containerd.cri.v1.images\"]\n    \
             snapshotter = \"overlayfs\"\n\n    \
             [plugins.\"io.containerd.cri.v1.images\".pinned_images]\n      \
             sandbox = \"{PAUSE_IMAGE}\"\n\n    \
             [plugins.\"io.containerd.cri.v1.images\".registry]\n      \
             config_path = \"/etc/containerd/certs.d\"\n\n  \
             [plugins.\"io.containerd.cri.v1.runtime\"]\n    \
             enable_selinux = false\n\n    \
             [plugins.\"io.containerd.cri.v1.runtime\".containerd]\n      \
             default_runtime_name = \"runc\"\n\n      \
             [plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes]\n\n        \
             [plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.runc]\n          \
             runtime_type = \"io.containerd.runc.v2\"\n\n          \
             [plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.runc.options]\n            \
             SystemdCgroup = true\n"
        )
    } else {
        format!(
            "version = 2\n{common}\
             [plugins]\n\n  \
             [plugins.\"io.containerd.grpc.v1.cri\"]\n    \
             sandbox_image = \"{PAUSE_IMAGE}\"\n    \
             enable_selinux = false\n\n    \
             [plugins.\"io.containerd.grpc.v1.cri\".containerd]\n      \
             snapshotter = \"overlayfs\"\n      \
             default_runtime_name = \"runc\"\n\n      \
             [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes]\n\n        \
             [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n          \
             runtime_type = \"io.containerd.runc.v2\"\n\n          \
             [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n            \
             SystemdCgroup = true\n\n    \
             [plugins.\"io.containerd.grpc.v1.cri\".registry]\n      \
             config_path = \"/etc/containerd/certs.d\"\n"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_configuration_matches_the_containerd_release() {
        for (version, schema, plugin) in [
            ("1.7.13", "version = 2", "io.containerd.grpc.v1.cri"),
            ("2.0.2", "version = 3", "io.containerd.cri.v1.runtime"),
        ] {
            let config = default_containerd_config(version);
            let parsed: toml_edit::DocumentMut = config.parse().expect("valid TOML");
            assert!(config.starts_with(schema), "{config}");
            assert!(parsed["plugins"].get(plugin).is_some(), "{config}");
            assert!(config.contains(PAUSE_IMAGE));
        }
    }
}
