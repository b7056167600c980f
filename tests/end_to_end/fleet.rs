//! `kmm-tui serve --scenario fleet --with-engine` as a user runs it: a ManagedClusterModule applied on the hub over
//! HTTPS is built there and loaded by every spoke's own engine; the hub reaches the spokes only through their work
//! agents.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::serve_process::ServeProcess;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kmm_api::hub::ManagedClusterModule;
use kmm_api::kmm::Module;
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;

/// How long the whole fleet may take to build and load the module: builds run in simulated time.
const LIMIT: Duration = Duration::from_secs(120);

/// A client for `context` of the fleet's kubeconfig.
async fn client(kubeconfig: &Path, context: &str) -> kube::Client {
    let config = Kubeconfig::read_from(kubeconfig).expect("the kubeconfig reads");
    let options = KubeConfigOptions {
        context: Some(context.to_owned()),
        ..KubeConfigOptions::default()
    };
    let config = kube::Config::from_custom_kubeconfig(config, &options)
        .await
        .expect("the context loads");
    kube::Client::try_from(config).expect("a client")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_module_applied_on_the_hub_is_loaded_by_every_spoke_of_a_served_fleet() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let server = ServeProcess::start_scenario(
        dir.path(),
        &dir.path().join("state"),
        "serve.log",
        "fleet",
        &["--with-engine", "--spokes", "2", "--spoke-nodes", "1"],
    );
    let hub = client(server.kubeconfig(), "hub").await;
    let spokes = [
        client(server.kubeconfig(), "spoke-1").await,
        client(server.kubeconfig(), "spoke-2").await,
    ];
    for spoke in &spokes {
        let namespace: Namespace =
            serde_json::from_value(json!({"metadata": {"name": "acme"}})).expect("a Namespace");
        Api::<Namespace>::all(spoke.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .expect("the spoke namespace");
    }
    let dockerfile: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "accmod-dockerfile", "namespace": "kmm-hub"},
        "data": {"dockerfile": "FROM quay.io/acme/base:9\nARG KERNEL_FULL_VERSION\nRUN make\n"},
    }))
    .expect("a ConfigMap");
    Api::<ConfigMap>::namespaced(hub.clone(), "kmm-hub")
        .create(&PostParams::default(), &dockerfile)
        .await
        .expect("the Dockerfile on the hub");
    let mcm: ManagedClusterModule = serde_json::from_value(json!({
        "apiVersion": "hub.kmm.sigs.x-k8s.io/v1beta1", "kind": "ManagedClusterModule",
        "metadata": {"name": "accmod"},
        "spec": {
            "spokeNamespace": "acme",
            "selector": {"cluster.open-cluster-management.io/clusterset": "default"},
            "moduleSpec": {
                "selector": {"node-role.kubernetes.io/worker": ""},
                "moduleLoader": {"container": {
                    "modprobe": {"moduleName": "accmod"},
                    "kernelMappings": [{
                        "regexp": "^.+$",
                        "containerImage": "quay.io/acme/accmod:${KERNEL_FULL_VERSION}",
                        "build": {"dockerfileConfigMap": {"name": "accmod-dockerfile"}},
                    }],
                }},
            },
        },
    }))
    .expect("an MCM");
    Api::<ManagedClusterModule>::all(hub.clone())
        .create(&PostParams::default(), &mcm)
        .await
        .expect("the MCM on the hub");

    // spoke-1 runs two kernels, spoke-2 one, a node each.
    let deadline = Instant::now() + LIMIT;
    for (spoke, nodes) in spokes.iter().zip([2, 1]) {
        let modules: Api<Module> = Api::namespaced(spoke.clone(), "acme");
        loop {
            let loaded = modules
                .get_opt("accmod")
                .await
                .ok()
                .flatten()
                .and_then(|m| m.status?.module_loader)
                .map(|counts| counts.available_number);
            if loaded == Some(nodes) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the Module is loaded on {loaded:?} of {nodes} nodes after {LIMIT:?}:\n{}",
                server.log_text()
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        // The spoke's Module came through the work agent; its engine wrote only the status.
        let module = modules.get("accmod").await.expect("the spoke's Module");
        let spec_writers: Vec<String> = module
            .metadata
            .managed_fields
            .unwrap_or_default()
            .into_iter()
            .filter(|entry| {
                entry
                    .fields_v1
                    .as_ref()
                    .is_some_and(|fields| fields.0.get("f:spec").is_some())
            })
            .filter_map(|entry| entry.manager)
            .collect();
        assert_eq!(
            spec_writers,
            ["work-agent"],
            "only the work agent writes the spoke's Module spec"
        );
    }
    let delivered = Api::<ManagedClusterModule>::all(hub)
        .get("accmod")
        .await
        .expect("the MCM")
        .status
        .expect("a status");
    assert_eq!((delivered.number_desired, delivered.number_applied), (2, 2));
}

/// The README's walk through a fleet in the console: `kmm-tui --scenario fleet` opens on the fleet view, where the
/// sample ManagedClusterModule is loaded on every spoke by their engines; `R` on a spoke's row rebuilds its image
/// on the hub, naming the clusters that share it; `enter` opens that spoke's own panes.
#[test]
fn the_console_on_a_fleet_loads_the_sample_everywhere_rebuilds_on_the_hub_and_opens_a_spoke() {
    use crate::screen::{self, header, skip};
    use kmm_api::kmm::ModuleImagesConfig;

    if skip("the console's fleet walk") {
        return;
    }
    let react = Duration::from_secs(30);
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    let console = screen::start(
        dir.path(),
        [
            "--scenario".as_ref(),
            "fleet".as_ref(),
            "--kubeconfig-out".as_ref(),
            kubeconfig.as_os_str(),
        ],
    );
    let applied = |screen: &str, cluster: &str, loaded: &str| {
        screen.lines().any(|line| {
            line.contains(&format!(" accmod {cluster} "))
                && line.contains("Applied")
                && line.contains(loaded)
        })
    };
    console.wait_for("the sample loaded on every spoke", LIMIT, |screen| {
        applied(screen, "spoke-1", "4/4")
            && applied(screen, "spoke-2", "2/2")
            && applied(screen, "spoke-3", "4/4")
    });
    // The module table is sorted by cluster once all is well: spoke-2 is its second row.
    console.press(&["Tab", "j", "R"]);
    console.wait_for("a confirmation on the hub", react, |screen| {
        // The question wraps; the clusters sharing spoke-2's kernel end it.
        screen.contains("Confirm on hub")
            && screen.contains("spoke-1,")
            && screen.contains("spoke-2?")
    });
    console.press(&["y"]);
    console.wait_for("the rebuild written", react, |screen| {
        screen.contains("Rebuild requested: generation 1→2")
    });
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let generations: Vec<Option<i64>> = runtime.block_on(async {
        let hub = client(&kubeconfig, "hub").await;
        Api::<ModuleImagesConfig>::namespaced(hub, kmm_api::hub::DEFAULT_NAMESPACE)
            .get("accmod-fleet")
            .await
            .expect("the hub's MIC")
            .spec
            .images
            .iter()
            .map(|image| image.generation)
            .collect()
    });
    assert_eq!(
        generations.iter().filter(|g| **g == Some(2)).count(),
        1,
        "one image, spoke-2's, is built again: {generations:?}"
    );
    console.press(&["Enter"]);
    console.wait_for("spoke-2's own panes", react, |screen| {
        header(screen).contains("spoke-2") && screen.contains("Available")
    });
}
