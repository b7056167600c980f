//! What the soak runs: the scenario (nodes in three groups, the registry, OS images, pools) and the objects of all
//! four families, created through the API as a user would, and the changes a user makes to them while faults
//! happen (kernel upgrades of a pool, a new day-0 image, a new shim version, a cache's images).
//!
//! - `w-*` nodes stay on the first kernel; `up-*` nodes form the pool `upgrade`, whose MachineConfig
//!   `99-upgrade-os` moves them through three OS images with three kernels; `d0-*` nodes form the pool `day0`,
//!   whose kmm-managed MachineConfig `99-day0-kmod-os` the day-0 engine takes over and moves through three layered
//!   images it builds.
//! - Module `soak/kmod` loads `soak_kmod` on every node; its image exists for the first kernel only, the others are
//!   built (a kernel mapping with `build:`).
//! - Shim `spin` rolls onto every node `maxUpdate` nodes at a time, each batch waiting for a manual approval.
//! - ImageCache `soak/warm` keeps two (or three) images on every node.
//!
//! The objects the engine or a user changes are created through the API rather than listed in the scenario: a
//! restarted `serve` applies the scenario's objects again, which would undo those changes.

use std::time::Duration;

use kmm_api::day0::{MachineConfig, ModuleDay0};
use kmm_api::imagecache::ImageCache;
use kmm_api::kmm::Module;
use kmm_api::shim::Shim;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::ApiResource;
use serde_json::{Value, json};

/// Namespace of the Module, its Dockerfile and the ImageCache.
pub(super) const NAMESPACE: &str = "soak";
/// The Module.
pub(super) const MODULE: &str = "kmod";
/// The kernel module it loads.
pub(super) const KERNEL_MODULE: &str = "soak_kmod";
/// The Shim.
pub(super) const SHIM: &str = "spin";
/// The binary the Shim installs.
pub(super) const SHIM_BINARY: &str = "containerd-shim-spin";
/// The ImageCache.
pub(super) const CACHE: &str = "warm";
/// The pool whose kernel is upgraded, and its MachineConfig.
pub(super) const UPGRADE_POOL: &str = "upgrade";
const UPGRADE_CONFIG: &str = "99-upgrade-os";
/// The day-0 pool, its MachineConfig and the ModuleDay0 the engine makes of it.
pub(super) const DAY0_POOL: &str = "day0";
pub(super) const DAY0: &str = "99-day0-kmod-os";
/// Namespace of the ModuleDay0.
pub(super) const DAY0_NAMESPACE: &str = "openshift-kmm";
/// Label every soak node carries; the Module and the Shim select it.
const NODE_LABEL: &str = "soak";

const KERNELS: [&str; 3] = [
    "5.14.0-284.30.1.el9_2.x86_64",
    "5.14.0-284.52.1.el9_2.x86_64",
    "5.14.0-284.66.1.el9_2.x86_64",
];

/// The OS images of the upgrade pool, by kernel.
const OS: [&str; 3] = [
    "Red Hat Enterprise Linux CoreOS 414.92.202401010000-0 (Plow)",
    "Red Hat Enterprise Linux CoreOS 414.92.202402010000-0 (Plow)",
    "Red Hat Enterprise Linux CoreOS 414.92.202403010000-0 (Plow)",
];
const OS_URL: [&str; 3] = [
    "quay.io/soak/rhcos@sha256:1",
    "quay.io/soak/rhcos@sha256:2",
    "quay.io/soak/rhcos@sha256:3",
];

/// The layered OS images of the day-0 pool, by kernel; only the first exists before the engine builds them.
const LAYERED_OS: [&str; 3] = [
    "Red Hat Enterprise Linux CoreOS 414.92.202401010000-1 (Plow)",
    "Red Hat Enterprise Linux CoreOS 414.92.202402010000-1 (Plow)",
    "Red Hat Enterprise Linux CoreOS 414.92.202403010000-1 (Plow)",
];
const LAYERED_URL: [&str; 3] = [
    "registry.local/soak/rhcos-kmod:1",
    "registry.local/soak/rhcos-kmod:2",
    "registry.local/soak/rhcos-kmod:3",
];

/// The shim archives the Shim moves between.
const SHIM_URLS: [&str; 2] = [
    "https://example.com/spin/containerd-shim-spin-v1.tar.gz",
    "https://example.com/spin/containerd-shim-spin-v2.tar.gz",
];

/// The images every node caches, and the one the cache takes in and out of its spec.
pub(super) const CACHED: [&str; 2] = ["docker.io/library/nginx:1.27", "quay.io/soak/app:1"];
const CACHED_SOMETIMES: &str = "quay.io/soak/tools:1";

/// The Module's image for `kernel`.
pub(super) fn module_image(kernel: &str) -> String {
    format!("registry.local/soak/kmod:{kernel}")
}

/// How many nodes of each group: workers, upgrade pool, day-0 pool.
pub(super) fn groups(nodes: usize) -> (usize, usize, usize) {
    let pool = (nodes / 5).max(2);
    (nodes.saturating_sub(2 * pool).max(1), pool, pool)
}

/// Every node name.
pub(super) fn node_names(nodes: usize) -> Vec<String> {
    let (workers, upgrade, day0) = groups(nodes);
    let named =
        |prefix: &'static str, count: usize| (0..count).map(move |i| format!("{prefix}{i}"));
    named("w-", workers)
        .chain(named("up-", upgrade))
        .chain(named("d0-", day0))
        .collect()
}

/// The scenario file's text.
pub(super) fn scenario(seed: u64, time_scale: f64, nodes: usize) -> String {
    let (workers, upgrade, day0) = groups(nodes);
    let k1 = KERNELS[0];
    let os_images: Vec<String> = (0..3)
        .map(|i| {
            format!(
                "  - {{url: \"{}\", kernelVersion: {}, osImage: \"{}\"}}\n  - {{url: \"{}\", kernelVersion: {}, osImage: \"{}\"}}",
                LAYERED_URL[i], KERNELS[i], LAYERED_OS[i], OS_URL[i], KERNELS[i], OS[i]
            )
        })
        .collect();
    format!(
        r#"seed: {seed}
timeScale: {time_scale}
nodes:
  - {{namePrefix: w-, count: {workers}, labels: {{{NODE_LABEL}: "yes"}}, kernelVersion: {k1}, osImage: "{os1}", diskGiB: 40}}
  - namePrefix: up-
    count: {upgrade}
    labels: {{{NODE_LABEL}: "yes", node-role.kubernetes.io/{UPGRADE_POOL}: ""}}
    kernelVersion: {k1}
    osImage: "{os1}"
    diskGiB: 40
  - namePrefix: d0-
    count: {day0}
    labels: {{{NODE_LABEL}: "yes", node-role.kubernetes.io/{DAY0_POOL}: ""}}
    kernelVersion: {k1}
    osImage: "{layered1}"
    diskGiB: 40
registry:
  images:
    - {{name: "{kmod1}", sizeMiB: 30}}
    - {{name: "{layered_url1}", sizeMiB: 1200}}
    - {{name: "{nginx}", sizeMiB: 70}}
    - {{name: "{app}", sizeMiB: 200}}
    - {{name: "{tools}", sizeMiB: 100}}
  shims:
    - {{url: "{shim1}", binary: {SHIM_BINARY}}}
    - {{url: "{shim2}", binary: {SHIM_BINARY}}}
# Layered images first: a node reporting an OS is taken to run the first image listed with it.
osImages:
{os_images}
  - {{url: "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:4140000000000000000000000000000000000000000000000000000000000000", kernelVersion: {k1}, osImage: "{os1}", release: 4.14.12}}
objects:
  - {{apiVersion: v1, kind: Namespace, metadata: {{name: {NAMESPACE}}}}}
  - {{apiVersion: v1, kind: Namespace, metadata: {{name: {DAY0_NAMESPACE}}}}}
  - apiVersion: v1
    kind: ConfigMap
    metadata: {{name: kmod-dockerfile, namespace: {NAMESPACE}}}
    data:
      dockerfile: |
        FROM registry.local/soak/builder:1
        ARG KERNEL_FULL_VERSION
        RUN make -C /src KERNEL=${{KERNEL_FULL_VERSION}} && make install
  - apiVersion: v1
    kind: ConfigMap
    metadata: {{name: kmod-os-dockerfile, namespace: {DAY0_NAMESPACE}}}
    data:
      dockerfile: |
        ARG DTK_AUTO
        ARG OS_AUTO
        FROM ${{DTK_AUTO}} as builder
        ARG KERNEL_VERSION
        RUN make -C /usr/src/soak-kmod KERNEL_SRC_DIR=/lib/modules/${{KERNEL_VERSION}}/build all
        FROM ${{OS_AUTO}}
        ARG KERNEL_VERSION
        COPY --from=builder /usr/src/soak-kmod/soak_kmod.ko /opt/lib/modules/${{KERNEL_VERSION}}/
  - apiVersion: machineconfiguration.openshift.io/v1
    kind: MachineConfigPool
    metadata: {{name: {UPGRADE_POOL}}}
    spec:
      machineConfigSelector: {{matchLabels: {{machineconfiguration.openshift.io/role: {UPGRADE_POOL}}}}}
      nodeSelector: {{matchLabels: {{node-role.kubernetes.io/{UPGRADE_POOL}: ""}}}}
      maxUnavailable: 50%
  - apiVersion: machineconfiguration.openshift.io/v1
    kind: MachineConfigPool
    metadata: {{name: {DAY0_POOL}}}
    spec:
      machineConfigSelector: {{matchLabels: {{machineconfiguration.openshift.io/role: {DAY0_POOL}}}}}
      nodeSelector: {{matchLabels: {{node-role.kubernetes.io/{DAY0_POOL}: ""}}}}
      maxUnavailable: 50%
"#,
        os1 = OS[0],
        layered1 = LAYERED_OS[0],
        kmod1 = module_image(k1),
        layered_url1 = LAYERED_URL[0],
        nginx = CACHED[0],
        app = CACHED[1],
        tools = CACHED_SOMETIMES,
        shim1 = SHIM_URLS[0],
        shim2 = SHIM_URLS[1],
        os_images = os_images.join("\n"),
    )
}

/// The API of kind `K`, in `namespace` for a namespaced kind.
pub(super) fn api<K>(client: &kube::Client, namespace: Option<&str>) -> Api<DynamicObject>
where
    K: kube::Resource<DynamicType = ()>,
{
    let resource = ApiResource::erase::<K>(&());
    match namespace {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

/// The shim's rollout: `max_update` nodes at a time, every batch approved by hand, one failure tolerated per batch.
fn shim_spec(url: &str, max_update: i64) -> Value {
    json!({
        "nodeSelector": {NODE_LABEL: "yes"},
        "fetchStrategy": {"type": "anonymousHttp", "anonHttp": {"location": url}},
        "runtimeClass": {"name": "wasmtime-spin", "handler": "spin"},
        "rolloutStrategy": {"type": "rolling", "rolling": {
            "maxUpdate": max_update, "approval": "Manual", "approvedBatch": 0, "maxFailures": 1
        }}
    })
}

fn object(api_version: &str, kind: &str, metadata: Value, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": api_version, "kind": kind, "metadata": metadata, "spec": spec
    }))
    .expect("an object")
}

/// Create the objects of every family.
pub(super) async fn create(client: &kube::Client, max_update: i64) -> Result<(), kube::Error> {
    let params = PostParams::default();
    let module = object(
        "kmm.sigs.x-k8s.io/v1beta1",
        "Module",
        json!({"name": MODULE, "namespace": NAMESPACE}),
        json!({
            "selector": {NODE_LABEL: "yes"},
            "moduleLoader": {"container": {
                "modprobe": {"moduleName": KERNEL_MODULE},
                "kernelMappings": [{
                    "regexp": "^.+$",
                    "containerImage": "registry.local/soak/kmod:${KERNEL_FULL_VERSION}",
                    "build": {"dockerfileConfigMap": {"name": "kmod-dockerfile"}}
                }]
            }}
        }),
    );
    api::<Module>(client, Some(NAMESPACE))
        .create(&params, &module)
        .await?;
    let shim = object(
        "runtime.spinkube.dev/v1alpha1",
        "Shim",
        json!({"name": SHIM}),
        shim_spec(SHIM_URLS[0], max_update),
    );
    api::<Shim>(client, None).create(&params, &shim).await?;
    let cache = object(
        "kubefledged.io/v1alpha2",
        "ImageCache",
        json!({"name": CACHE, "namespace": NAMESPACE}),
        json!({"cacheSpec": [{"images": CACHED}]}),
    );
    api::<ImageCache>(client, Some(NAMESPACE))
        .create(&params, &cache)
        .await?;
    let configs = api::<MachineConfig>(client, None);
    let role = "machineconfiguration.openshift.io/role";
    configs
        .create(
            &params,
            &object(
                "machineconfiguration.openshift.io/v1",
                "MachineConfig",
                json!({"name": UPGRADE_CONFIG, "labels": {role: UPGRADE_POOL}}),
                json!({"osImageURL": OS_URL[0]}),
            ),
        )
        .await?;
    configs
        .create(
            &params,
            &object(
                "machineconfiguration.openshift.io/v1",
                "MachineConfig",
                json!({"name": DAY0, "labels": {
                    role: DAY0_POOL, "machineconfiguration.openshift.io/kmm-managed": "true"
                }}),
                json!({"osImageURL": LAYERED_URL[0]}),
            ),
        )
        .await?;
    Ok(())
}

/// What the user has asked of each object so far, so that changes move on from there.
#[derive(Debug, Default)]
pub(super) struct Asked {
    /// Index of the OS image the upgrade pool is asked to run.
    pub upgrade_os: usize,
    /// Index of the layered image the day-0 pool is asked to run.
    pub day0_os: usize,
    /// Index of the shim archive.
    pub shim_url: usize,
    /// Whether the cache holds its third image.
    pub cache_third: bool,
}

impl Asked {
    /// The OS the upgrade pool's nodes must end up on.
    pub(super) fn upgrade_os(&self) -> &'static str {
        OS[self.upgrade_os]
    }

    /// The layered OS the day-0 pool's nodes must end up on.
    pub(super) fn day0_os(&self) -> &'static str {
        LAYERED_OS[self.day0_os]
    }

    /// Every image the cache holds now.
    pub(super) fn cached(&self) -> Vec<&'static str> {
        let mut images = CACHED.to_vec();
        if self.cache_third {
            images.push(CACHED_SOMETIMES);
        }
        images
    }

    /// The image the cache does not hold now, which no node should keep.
    pub(super) fn not_cached(&self) -> Vec<&'static str> {
        if self.cache_third {
            Vec::new()
        } else {
            vec![CACHED_SOMETIMES]
        }
    }
}

/// Move the upgrade pool to the next OS image (a kernel upgrade of its nodes).
pub(super) async fn upgrade_kernel(
    client: &kube::Client,
    asked: &mut Asked,
) -> Result<String, String> {
    let next = (asked.upgrade_os + 1) % OS.len();
    api::<MachineConfig>(client, None)
        .patch(
            UPGRADE_CONFIG,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"osImageURL": OS_URL[next]}})),
        )
        .await
        .map_err(|e| e.to_string())?;
    asked.upgrade_os = next;
    Ok(format!("pool {UPGRADE_POOL} to kernel {}", KERNELS[next]))
}

/// Point the ModuleDay0 at the next layered image, to be built (a kernel upgrade of the day-0 pool).
pub(super) async fn move_day0(client: &kube::Client, asked: &mut Asked) -> Result<String, String> {
    let next = (asked.day0_os + 1) % LAYERED_OS.len();
    let patch = json!({"spec": {"osMapping": {
        "literal": LAYERED_OS[next],
        "containerImage": LAYERED_URL[next],
        "build": {"dockerfileConfigMap": {"name": "kmod-os-dockerfile"}},
    }}});
    api::<ModuleDay0>(client, Some(DAY0_NAMESPACE))
        .patch(DAY0, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .map_err(|e| e.to_string())?;
    asked.day0_os = next;
    Ok(format!("pool {DAY0_POOL} to {}", LAYERED_URL[next]))
}

/// Roll the Shim to its other archive: a new spec, every node again from batch 1, approvals anew.
pub(super) async fn update_shim(
    client: &kube::Client,
    asked: &mut Asked,
    max_update: i64,
) -> Result<String, String> {
    let next = (asked.shim_url + 1) % SHIM_URLS.len();
    api::<Shim>(client, None)
        .patch(
            SHIM,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": shim_spec(SHIM_URLS[next], max_update)})),
        )
        .await
        .map_err(|e| e.to_string())?;
    asked.shim_url = next;
    Ok(format!("shim {SHIM} to {}", SHIM_URLS[next]))
}

/// Take the cache's third image in or out of its spec.
pub(super) async fn change_cache(
    client: &kube::Client,
    asked: &mut Asked,
) -> Result<String, String> {
    let third = !asked.cache_third;
    let mut images = CACHED.to_vec();
    if third {
        images.push(CACHED_SOMETIMES);
    }
    api::<ImageCache>(client, Some(NAMESPACE))
        .patch(
            CACHE,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"cacheSpec": [{"images": images}]}})),
        )
        .await
        .map_err(|e| e.to_string())?;
    asked.cache_third = third;
    Ok(format!(
        "cache {CACHE} {} {CACHED_SOMETIMES}",
        if third { "takes in" } else { "drops" }
    ))
}

/// Wait until the engine has made the ModuleDay0 of the day-0 MachineConfig, then point it at the second layered
/// image (built by the engine).
pub(super) async fn hand_over_day0(
    client: &kube::Client,
    asked: &mut Asked,
) -> Result<String, String> {
    let day0s = api::<ModuleDay0>(client, Some(DAY0_NAMESPACE));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while !matches!(day0s.get_opt(DAY0).await, Ok(Some(_))) {
        if tokio::time::Instant::now() > deadline {
            return Err(format!(
                "no ModuleDay0 {DAY0_NAMESPACE}/{DAY0} within 120 s"
            ));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    move_day0(client, asked).await
}
