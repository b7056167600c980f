//! The in-cluster controller on the embedded cluster: `kmm-tui install | kubectl apply -f -` gives two controller
//! pods (Deployment → ReplicaSet → pods), one of which holds the engine's Lease and acts; deleting it leaves the
//! Lease held (a killed pod releases nothing) until it expires, and the other pod takes over and keeps working. An
//! engine on the console's Lease stands by meanwhile, and takes over once uninstall has killed the pods.
//! Real time throughout: the pods' engines and kubectl run on the wall clock.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kmm_api::lease::{DEFAULT_LEASE_NAME, DEFAULT_LEASE_NAMESPACE};
use kmm_engine::runtime::rbac::ENGINE_ACCOUNT;
use kmm_engine::{self, EngineConfig, Family, LeaseConfig, PodImages, Settings};
use kmm_tui::install::{self, DEFAULT_NAMESPACE, DEPLOYMENT_NAME, InstallOptions};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, LogParams};
use serde_json::json;
use tokio::time::Instant;

use crate::kubectl::kubectl_installed;
use tokio_util::sync::CancellationToken;

use kmm_api::kmm::Module;
use kmm_api::kmm::labels;
use kmm_cluster::sim::scenario::Scenario;
use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};
use kmm_testing::{eventually, wait_for};

/// The lease duration installed: short, so the hand-over is quick.
const LEASE_SECS: u64 = 3;

/// Slack on top of the lease duration for the standby's claim to be written and seen on a loaded machine.
const TAKEOVER_SLACK: Duration = Duration::from_secs(2);

/// Identity of the engine that plays the console's foreground engine.
const CONSOLE: &str = "console";

const KERNEL: &str = "5.14.0-284.30.1.el9_2.x86_64";

const WORKERS: [&str; 2] = ["worker-0", "worker-1"];

/// What `kmm-tui install --lease-duration 3` prints.
fn install_yaml() -> String {
    let (ok, stdout, stderr) = kmm_tui(&["install", "--lease-duration", &LEASE_SECS.to_string()]);
    assert!(ok, "kmm-tui install failed: {stderr}");
    stdout
}

/// The options `install_yaml` installs with.
fn install_options() -> InstallOptions {
    InstallOptions {
        namespace: DEFAULT_NAMESPACE.to_owned(),
        image: install::default_image(),
        families: Family::ALL.to_vec(),
        lease: LeaseConfig::new(
            DEFAULT_LEASE_NAMESPACE,
            DEFAULT_LEASE_NAME,
            "$(POD_NAME)",
            Duration::from_secs(LEASE_SECS),
        ),
        replicas: 2,
        service_monitor: false,
    }
}

/// `kmm-tui <args>`: whether it succeeded, and its stdout and stderr. The runtime keeps serving the cluster
/// meanwhile.
fn kmm_tui(args: &[&str]) -> (bool, String, String) {
    let output = tokio::task::block_in_place(|| {
        Command::new(env!("CARGO_BIN_EXE_kmm-tui"))
            .args(args)
            .output()
            .expect("running kmm-tui")
    });
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `kubectl <args>` with `stdin`, against the cluster of `kubeconfig`; its combined output. The runtime keeps
/// serving the cluster meanwhile.
fn kubectl(
    kubeconfig: &std::path::Path,
    cache: &std::path::Path,
    args: &[&str],
    stdin: &str,
) -> String {
    tokio::task::block_in_place(|| run_kubectl(kubeconfig, cache, args, stdin))
}

fn run_kubectl(
    kubeconfig: &std::path::Path,
    cache: &std::path::Path,
    args: &[&str],
    stdin: &str,
) -> String {
    let mut child = Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("KUBECACHEDIR", cache)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting kubectl");
    child
        .stdin
        .take()
        .expect("kubectl's stdin")
        .write_all(stdin.as_bytes())
        .expect("writing to kubectl");
    let output = child.wait_with_output().expect("waiting for kubectl");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "kubectl {args:?} failed:\n{text}");
    text
}

/// The controller pods that run (phase Running, Ready), by name.
async fn running_controllers(harness: &Harness) -> Vec<String> {
    let pods = Api::<Pod>::namespaced(harness.client(), DEFAULT_NAMESPACE)
        .list(&ListParams::default().labels("app.kubernetes.io/component=controller"))
        .await
        .expect("listing controller pods");
    let mut names: Vec<String> = pods
        .items
        .into_iter()
        .filter(|pod| pod.metadata.deletion_timestamp.is_none())
        .filter(|pod| {
            let status = pod.status.as_ref();
            status.and_then(|s| s.phase.as_deref()) == Some("Running")
                && status
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        })
        .filter_map(|pod| pod.metadata.name)
        .collect();
    names.sort();
    names
}

/// Who holds the engine's Lease.
async fn lease_holder(harness: &Harness) -> Option<String> {
    Api::<Lease>::namespaced(harness.client(), DEFAULT_LEASE_NAMESPACE)
        .get_opt(DEFAULT_LEASE_NAME)
        .await
        .expect("reading the Lease")?
        .spec?
        .holder_identity
        .filter(|h| !h.is_empty())
}

/// A Module whose image for the scenario's kernel is in the registry.
async fn converge_module(harness: &Harness, name: &str) {
    create_module(
        harness,
        name,
        json!({
            "selector": {"node-role.kubernetes.io/worker": ""},
            "moduleLoader": {"container": {
                "modprobe": {"moduleName": format!("acme_{name}")},
                "kernelMappings": [
                    {"literal": KERNEL, "containerImage": format!("quay.io/acme/{name}:${{KERNEL_FULL_VERSION}}")}
                ]
            }}
        }),
    )
    .await;
    for node in WORKERS {
        eventually(120, &format!("{name} loaded on {node}"), || {
            node_ready(harness, node, name)
        })
        .await;
    }
    eventually(60, &format!("{name} Available"), || async {
        condition(harness, name, "Available")
            .await
            .is_some_and(|(status, _, _)| status == "True")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn installed_controllers_elect_one_engine_and_the_standby_takes_over_when_it_is_killed() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let kubeconfig = dir.path().join("kubeconfig");
    let cache = dir.path().join("kube-cache");
    let harness = Harness::start_serving("install.yaml", &kubeconfig).await;

    let yaml = install_yaml();
    let objects = install::manifests(&install_options());
    assert_eq!(
        yaml,
        install::to_yaml(&objects),
        "install prints the manifests"
    );
    let use_kubectl = kubectl_installed();
    if use_kubectl {
        let applied = kubectl(&kubeconfig, &cache, &["apply", "-f", "-"], &yaml);
        println!("kubectl apply:\n{applied}");
    } else {
        println!(
            "kubectl skipped: not found on PATH; applying the same objects through kube::Client"
        );
        install::apply(&harness.client(), &objects)
            .await
            .expect("the manifests apply");
    }

    // Two controller pods run, and one of them holds the Lease.
    let pods = wait_for(60, "two controller pods Running and Ready", || async {
        let pods = running_controllers(&harness).await;
        (pods.len() == 2).then_some(pods)
    })
    .await;
    let leader = wait_for(30, "a controller pod holds the Lease", || async {
        lease_holder(&harness).await.filter(|h| pods.contains(h))
    })
    .await;
    println!("controller pods {pods:?}; {leader} holds the Lease");
    eventually(
        30,
        "the Deployment reports 2 available replicas",
        || async {
            Api::<Deployment>::namespaced(harness.client(), DEFAULT_NAMESPACE)
                .get(DEPLOYMENT_NAME)
                .await
                .ok()
                .and_then(|d| d.status)
                .is_some_and(|s| s.available_replicas == Some(2) && s.ready_replicas == Some(2))
        },
    )
    .await;

    converge_module(&harness, "first").await;

    // The engine's log is the pod's log.
    let pod_api = Api::<Pod>::namespaced(harness.client(), DEFAULT_NAMESPACE);
    let log = pod_api
        .logs(&leader, &LogParams::default())
        .await
        .expect("reading the leader's log");
    assert!(log.contains("acquired lease"), "the leader's log:\n{log}");
    if use_kubectl {
        let log = kubectl(
            &kubeconfig,
            &cache,
            &["logs", "-n", DEFAULT_NAMESPACE, &leader],
            "",
        );
        assert!(
            log.contains("engine acting"),
            "kubectl logs {leader}:\n{log}"
        );
    }

    // Killing the leader's pod releases nothing: the Lease still names it until it expires.
    pod_api
        .delete(&leader, &DeleteParams::default())
        .await
        .expect("deleting the leader's pod");
    let killed = Instant::now();
    assert_eq!(
        lease_holder(&harness).await.as_deref(),
        Some(leader.as_str()),
        "a killed engine does not release the Lease"
    );
    let successor = wait_for(
        LEASE_SECS + 10,
        "another controller takes the Lease",
        || async { lease_holder(&harness).await.filter(|h| *h != leader) },
    )
    .await;
    let took = killed.elapsed();
    println!(
        "{successor} took over {took:.1?} after {leader} was killed (lease duration {LEASE_SECS} s)"
    );
    assert!(
        pods.contains(&successor),
        "the standby replica {pods:?} takes over, not {successor}"
    );
    // A released Lease would be taken at once; a killed holder's only once it expires (at most one renewal period,
    // a fifth of the duration, after the kill).
    assert!(
        took >= Duration::from_secs(LEASE_SECS) * 3 / 4,
        "took over after {took:?}: the killed engine released the Lease"
    );
    assert!(
        took <= Duration::from_secs(LEASE_SECS) + TAKEOVER_SLACK,
        "took {took:?}, more than the lease duration {LEASE_SECS} s (+{TAKEOVER_SLACK:?})"
    );

    // Work goes on under the new leader, and the ReplicaSet replaced the killed pod.
    converge_module(&harness, "second").await;
    eventually(60, "a replacement pod runs", || async {
        let now = running_controllers(&harness).await;
        now.len() == 2 && !now.contains(&leader)
    })
    .await;

    // An engine elected like the console's foreground engine (the default Lease) stands by while a pod leads.
    let console_engine = tokio::spawn(kmm_engine::run(
        harness.client(),
        EngineConfig {
            images: PodImages::default(),
            lease: LeaseConfig::new(
                DEFAULT_LEASE_NAMESPACE,
                DEFAULT_LEASE_NAME,
                CONSOLE,
                Duration::from_secs(LEASE_SECS),
            ),
            settings: Settings::default(),
        },
        CancellationToken::new(),
    ));
    tokio::time::sleep(Duration::from_secs(LEASE_SECS + 1)).await;
    assert_eq!(
        lease_holder(&harness).await.as_deref(),
        Some(successor.as_str()),
        "the console's engine stands by while the pod renews"
    );

    // Uninstall refuses to take the CRDs while Modules exist, naming them, and removes nothing.
    let kubeconfig_arg = kubeconfig.to_string_lossy().into_owned();
    let (ok, stdout, stderr) = kmm_tui(&[
        "uninstall",
        "--apply",
        "--include-crds",
        "--kubeconfig",
        &kubeconfig_arg,
    ]);
    assert!(!ok, "uninstall with Modules left must refuse:\n{stdout}");
    assert!(
        stderr.contains("2 modules.kmm.sigs.x-k8s.io") && stderr.contains("--force"),
        "{stderr}"
    );
    assert_eq!(
        running_controllers(&harness).await.len(),
        2,
        "nothing was removed"
    );
    // Without the CRDs it removes the controller: the Deployment, its ReplicaSet and pods go.
    let (ok, stdout, stderr) = kmm_tui(&["uninstall", "--apply", "--kubeconfig", &kubeconfig_arg]);
    assert!(ok, "uninstall failed: {stderr}");
    assert!(
        stdout.contains(&format!(
            "Deployment {DEFAULT_NAMESPACE}/{DEPLOYMENT_NAME} deleted"
        )),
        "{stdout}"
    );
    eventually(60, "the controller pods are gone", || async {
        Api::<Pod>::namespaced(harness.client(), DEFAULT_NAMESPACE)
            .list(&ListParams::default().labels("app.kubernetes.io/component=controller"))
            .await
            .is_ok_and(|pods| pods.items.is_empty())
    })
    .await;
    // The pods were killed holding the Lease; once it expires the console's engine takes it.
    eventually(
        LEASE_SECS + 10,
        "the console's engine takes the Lease",
        || async { lease_holder(&harness).await.as_deref() == Some(CONSOLE) },
    )
    .await;
    console_engine.abort();
    let _ = console_engine.await;
    harness.shutdown().await;
}

#[tokio::test]
async fn install_applies_server_side_under_its_field_manager_and_again_without_change() {
    let harness = Harness::start("empty").await;
    let client = harness.client();
    let objects = install::manifests(&install_options());
    install::apply(&client, &objects)
        .await
        .expect("the manifests apply");
    let deployments = Api::<Deployment>::namespaced(client.clone(), DEFAULT_NAMESPACE);
    let first = deployments
        .get(DEPLOYMENT_NAME)
        .await
        .expect("the Deployment exists");
    let managers: Vec<(String, String)> = first
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .map(|m| {
            (
                m.manager.clone().unwrap_or_default(),
                m.operation.clone().unwrap_or_default(),
            )
        })
        .collect();
    assert!(
        managers.contains(&(install::FIELD_MANAGER.to_owned(), "Apply".to_owned())),
        "{managers:?}"
    );
    let roles = Api::<ClusterRole>::all(client.clone());
    let role = roles
        .get(ENGINE_ACCOUNT)
        .await
        .expect("the ClusterRole exists");
    let applied = install::apply(&client, &objects)
        .await
        .expect("the manifests apply again");
    assert_eq!(applied.len(), objects.len());
    let again = deployments
        .get(DEPLOYMENT_NAME)
        .await
        .expect("the Deployment exists");
    assert_eq!(
        (first.metadata.generation, again.metadata.generation),
        (Some(1), Some(1)),
        "applying the same manifests leaves the Deployment's spec as it was"
    );
    assert_eq!(
        role.metadata.resource_version,
        roles
            .get(ENGINE_ACCOUNT)
            .await
            .expect("the ClusterRole exists")
            .metadata
            .resource_version,
        "applying the same manifests writes nothing new"
    );
    let removed = install::delete(&client, &install::removals(&install_options(), false))
        .await
        .expect("uninstall deletes");
    assert!(
        removed.iter().all(|line| line.ends_with(" deleted")),
        "{removed:?}"
    );
    assert!(
        deployments
            .get_opt(DEPLOYMENT_NAME)
            .await
            .expect("reading")
            .is_none_or(|d| d.metadata.deletion_timestamp.is_some())
    );
    harness.shutdown().await;
}

/// The embedded cluster of these tests, whose pods of kmm-tui's image run the binary's `controller` command, as
/// the published image does in a real cluster.
struct Harness {
    cluster: EmbeddedCluster,
}

impl Harness {
    /// The cluster of `tests/end_to_end/scenarios/<file>`, also served over HTTPS on a free loopback port with its
    /// kubeconfig written to `kubeconfig`, for kubectl.
    async fn start_serving(file: &str, kubeconfig: &std::path::Path) -> Self {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/end_to_end/scenarios")
            .join(file);
        let scenario = Scenario::load(&path.to_string_lossy()).expect("the scenario loads");
        Self::start_with(EmbeddedOptions {
            scenario: Some(scenario),
            listen: Some(([127, 0, 0, 1], 0).into()),
            kubeconfig_out: Some(kubeconfig.to_path_buf()),
            ..Default::default()
        })
        .await
    }

    /// The cluster of the built-in scenario `name`.
    async fn start(name: &str) -> Self {
        let scenario = Scenario::load(name).expect("the scenario loads");
        Self::start_with(EmbeddedOptions {
            scenario: Some(scenario),
            ..Default::default()
        })
        .await
    }

    async fn start_with(options: EmbeddedOptions) -> Self {
        let cluster = EmbeddedCluster::start(EmbeddedOptions {
            own_image: Some(kmm_tui::controller::own_image()),
            ..options
        })
        .await
        .expect("the embedded cluster starts");
        Self { cluster }
    }

    fn client(&self) -> kube::Client {
        self.cluster.client()
    }

    async fn shutdown(self) {
        self.cluster.shutdown().await;
    }
}

/// Create the Module `name` in `acme` with `spec`.
async fn create_module(harness: &Harness, name: &str, spec: serde_json::Value) -> Module {
    let module: Module = serde_json::from_value(json!({
        "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "Module",
        "metadata": {"name": name, "namespace": "acme"},
        "spec": spec,
    }))
    .expect("a Module");
    Api::<Module>::namespaced(harness.client(), "acme")
        .create(&kube::api::PostParams::default(), &module)
        .await
        .expect("the Module is created")
}

/// The Module's condition `type_`: status, reason and message.
async fn condition(harness: &Harness, name: &str, type_: &str) -> Option<(String, String, String)> {
    Api::<Module>::namespaced(harness.client(), "acme")
        .get_opt(name)
        .await
        .expect("reading the Module")?
        .status?
        .conditions
        .into_iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status, c.reason, c.message))
}

/// Whether `node` carries the module's `ready` label.
async fn node_ready(harness: &Harness, node: &str, module: &str) -> bool {
    Api::<k8s_openapi::api::core::v1::Node>::all(harness.client())
        .get(node)
        .await
        .expect("reading the node")
        .labels()
        .contains_key(&labels::node_ready("acme", module))
}
