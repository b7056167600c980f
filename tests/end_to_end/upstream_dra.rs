//! Upstream KMM's CI DRA Module, applied as written with kubectl to `kmm-tui serve --with-engine`: the module is
//! built (from upstream's own Dockerfile ConfigMap) and loaded on the `minikube` node, the engine runs the DRA driver
//! there and creates the Module's DeviceClass, the driver publishes the node's devices in a ResourceSlice, and a pod
//! claiming a device of that class is given one. Skipped where kubectl or the upstream reference data is missing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
use kmm_api::kmm::Module;
use kube::api::{Api, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;
use tokio::time::Instant;

use crate::kubectl::kubectl_installed;
use crate::serve_process::ServeProcess;

/// Upstream's CI directory in the reference data.
fn upstream_ci() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/reference/kmm/ci");
    dir.join("module-kmm-ci-dra.yaml").is_file().then_some(dir)
}

/// What the sample names.
const MODULE: &str = "kmm-ci-dra";
const DRIVER: &str = "gpu.example.com";
const DEVICE_CLASS: &str = "kmm-ci-test-device";
const NODE: &str = "minikube-0";

/// The build, the load and the driver's start are minutes of simulated time, seconds at the scenario's time scale.
const CONVERGENCE: Duration = Duration::from_secs(120);

#[tokio::test]
async fn upstream_cis_dra_module_applied_with_kubectl_gives_pods_devices() {
    if !kubectl_installed() {
        println!("skipping: kubectl not found on PATH");
        return;
    }
    let Some(ci) = upstream_ci() else {
        println!("skipping: the upstream reference data (../shared/reference/kmm/ci) is absent");
        return;
    };
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/end_to_end/scenarios/upstream-ci-dra.yaml");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let server = ServeProcess::start_scenario(
        dir.path(),
        &dir.path().join("state"),
        "serve.log",
        scenario.to_str().expect("a UTF-8 path"),
        &["--with-engine"],
    );
    let applied = Command::new("kubectl")
        .env("KUBECONFIG", server.kubeconfig())
        .env("KUBECACHEDIR", dir.path().join("kube-cache"))
        .arg("apply")
        .arg("-f")
        .arg(ci.join("kmm-kmod-dockerfile.yaml"))
        .arg("-f")
        .arg(ci.join("module-kmm-ci-dra.yaml"))
        .output()
        .expect("running kubectl");
    assert!(
        applied.status.success(),
        "kubectl apply: {}{}",
        String::from_utf8_lossy(&applied.stdout),
        String::from_utf8_lossy(&applied.stderr)
    );

    let config = Kubeconfig::read_from(server.kubeconfig()).expect("the kubeconfig reads");
    let config = kube::Config::from_custom_kubeconfig(config, &KubeConfigOptions::default())
        .await
        .expect("the kubeconfig loads");
    let client = kube::Client::try_from(config).expect("a client");

    let modules = Api::<Module>::namespaced(client.clone(), "default");
    until(
        &server,
        "the Module's DRA driver is available on its node",
        || async {
            let dra = modules.get(MODULE).await.ok()?.status?.dra?;
            (dra.desired_number == 1 && dra.available_number == 1).then_some(())
        },
    )
    .await;
    let classes = Api::<DeviceClass>::all(client.clone());
    until(&server, "the Module's DeviceClass", || async {
        classes.get_opt(DEVICE_CLASS).await.ok()?.map(|_| ())
    })
    .await;
    let slices = Api::<ResourceSlice>::all(client.clone());
    let published = until(
        &server,
        "the driver's ResourceSlice for the node",
        || async {
            let listed = slices.list(&ListParams::default()).await.ok()?;
            let devices: Vec<String> = listed
                .items
                .into_iter()
                .filter(|s| s.spec.driver == DRIVER && s.spec.node_name.as_deref() == Some(NODE))
                .flat_map(|s| s.spec.devices.unwrap_or_default())
                .map(|d| d.name)
                .collect();
            (!devices.is_empty()).then_some(devices)
        },
    )
    .await;
    assert_eq!(
        published.len(),
        2,
        "the scenario's two devices: {published:?}"
    );

    // A workload claims one device of the Module's class.
    let claims = Api::<ResourceClaim>::namespaced(client.clone(), "default");
    let claim: ResourceClaim = serde_json::from_value(json!({
        "metadata": {"name": "one-gpu"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DEVICE_CLASS}}]}}
    }))
    .expect("a claim");
    claims
        .create(&PostParams::default(), &claim)
        .await
        .expect("the claim is created");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "uses-a-gpu"},
        "spec": {
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "one-gpu"}],
            "containers": [{"name": "ctr", "image": "registry.k8s.io/e2e-test-images/busybox:1.36.1-1",
                            "command": ["sleep", "3600"], "resources": {"claims": [{"name": "gpu"}]}}]
        }
    }))
    .expect("a pod");
    let pods = Api::<Pod>::namespaced(client.clone(), "default");
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("the pod is created");
    let (device, reserved) = until(&server, "the claim is allocated and reserved", || async {
        let status = claims.get("one-gpu").await.ok()?.status?;
        let result = status.allocation?.devices?.results?.into_iter().next()?;
        let reserved: Vec<String> = status
            .reserved_for
            .unwrap_or_default()
            .into_iter()
            .map(|r| r.name)
            .collect();
        (result.driver == DRIVER && !reserved.is_empty()).then_some((result.device, reserved))
    })
    .await;
    assert!(
        published.contains(&device),
        "{device} is one of {published:?}"
    );
    assert_eq!(reserved, ["uses-a-gpu"]);
    let node = until(&server, "the pod is scheduled", || async {
        pods.get("uses-a-gpu").await.ok()?.spec?.node_name
    })
    .await;
    assert_eq!(node, NODE);
}

/// Poll `probe` until it yields, or fail after `CONVERGENCE` with the server's log.
async fn until<T, F, Fut>(server: &ServeProcess, what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + CONVERGENCE;
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not within {CONVERGENCE:?}; the server's log:\n{}",
            server.log_text()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
