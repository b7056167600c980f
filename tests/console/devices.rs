//! DRA devices in the console: ResourceSlices and ResourceClaims written through a `kube::Client` to an embedded
//! cluster, as a driver and the scheduler write them, reach the console through its watches and are drawn in the
//! Devices pane and beside each node's device plugins; a cluster without resource.k8s.io says so where devices
//! would be.

use std::time::Duration;

use crossterm::event::{Event, KeyCode};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceSlice};
use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};
use kmm_tui::tui::action::Action;
use kmm_tui::tui::app::{App, EngineMode, ListId, Session, View};
use kmm_tui::tui::data::{DRA_NOT_SERVED, DraServing, Kind, KindSnapshot};
use kmm_tui::tui::keymap::Keymap;
use kmm_tui::tui::target::Target;
use kmm_tui::tui::theme::Theme;
use kmm_tui::tui::view::devices::DeviceState;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::support::{command, press, screen, type_text};

/// The two sizes the pictures are drawn at.
const SIZES: [(u16, u16); 2] = [(120, 40), (80, 24)];

/// The DRA driver of the pictures.
const DRIVER: &str = "accel.acme.io";

/// A console with no data at `size`.
fn console(size: (u16, u16)) -> App {
    let session = Session {
        context: "snapshot".to_owned(),
        contexts: vec!["snapshot".to_owned()],
        embedded: true,
        engine: EngineMode::Off,
        readonly: false,
        engine_identity: None,
    };
    let mut app = App::new(session, Theme::monochrome(), Keymap::default(), None);
    app.pin_clock(jiff::Timestamp::from_second(1_800_000_000).expect("a time"));
    app.update(Action::Terminal(Event::Resize(size.0, size.1)));
    app
}

/// Compare the screen with the reviewed snapshot `name` (the size is appended).
fn check(name: &str, app: &App) {
    let (width, height) = app.size;
    insta::with_settings!({
        snapshot_path => "snapshots/devices",
        prepend_module_to_snapshot => false,
        omit_expression => true,
    }, {
        insta::assert_snapshot!(format!("{name}_{width}x{height}"), screen(app));
    });
}

/// Create `object` through `api`.
async fn create<K>(api: &Api<K>, object: serde_json::Value) -> K
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let object: K = serde_json::from_value(object).expect("a valid object");
    api.create(&PostParams::default(), &object)
        .await
        .expect("the object is created")
}

/// Three nodes; two publish two accelerators each, and a trainer pod in `lab` holds one on `worker-1` through its
/// claim, as the scheduler records it. A second claim holds a device on `worker-2` that no slice publishes any more.
async fn write_cluster(client: &kube::Client) {
    let nodes: Api<Node> = Api::all(client.clone());
    for (name, kernel) in [
        ("worker-1", "6.1.0-acme"),
        ("worker-2", "6.1.0-acme"),
        ("worker-3", "6.1.0-acme"),
    ] {
        create(&nodes, json!({"metadata": {"name": name}})).await;
        let status = json!({"status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "nodeInfo": {"kernelVersion": kernel, "osImage": "Acme Linux 9", "architecture": "amd64",
                         "operatingSystem": "linux", "bootID": "b", "containerRuntimeVersion": "containerd://2",
                         "kubeProxyVersion": "", "kubeletVersion": "v1.34.0", "machineID": "m", "systemUUID": "u"}
        }});
        nodes
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .expect("the node's status is written");
    }
    let slices: Api<ResourceSlice> = Api::all(client.clone());
    for node in ["worker-1", "worker-2"] {
        create(
            &slices,
            json!({
                "metadata": {"name": format!("{node}-accel")},
                "spec": {
                    "driver": DRIVER,
                    "nodeName": node,
                    "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                    "devices": [
                        {"name": "accel-0", "attributes": {"model": {"string": "a100"}},
                         "capacity": {"memory": {"value": "16Gi"}}},
                        {"name": "accel-1", "attributes": {"model": {"string": "a100"}},
                         "capacity": {"memory": {"value": "16Gi"}}}
                    ]
                }
            }),
        )
        .await;
    }
    let namespaces: Api<Namespace> = Api::all(client.clone());
    create(&namespaces, json!({"metadata": {"name": "lab"}})).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "lab");
    let claims: Api<ResourceClaim> = Api::namespaced(client.clone(), "lab");
    for (claim, pod, node, device) in [
        ("train", "trainer", "worker-1", "accel-1"),
        ("infer", "inference", "worker-2", "accel-7"),
    ] {
        let pod = create(
            &pods,
            json!({
                "metadata": {"name": pod},
                "spec": {"containers": [{"name": "main", "image": "quay.io/acme/train:1"}]}
            }),
        )
        .await;
        create(
            &claims,
            json!({
                "metadata": {"name": claim},
                "spec": {"devices": {"requests": [{"name": "accel", "exactly": {"deviceClassName": DRIVER}}]}}
            }),
        )
        .await;
        let status = json!({"status": {
            "allocation": {
                "devices": {"results": [{"request": "accel", "driver": DRIVER, "pool": node, "device": device}]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [node]}
                ]}]}
            },
            "reservedFor": [{"resource": "pods", "name": pod.metadata.name, "uid": pod.metadata.uid}]
        }});
        claims
            .patch_status(claim, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .expect("the allocation is written");
    }
}

/// What the console's watches deliver of the nodes, slices and claims once each holds what was written, and the
/// cluster's answer about DRA.
async fn watched(client: &kube::Client) -> Vec<Action> {
    let (sender, mut actions) = tokio::sync::mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    kmm_tui::tui::feed::start(client, None, None, &sender, &cancel);
    let mut kept: Vec<Action> = Vec::new();
    let (mut nodes, mut slices, mut claims, mut dra) = (false, false, false, false);
    tokio::time::timeout(Duration::from_secs(30), async {
        while !(nodes && slices && claims && dra) {
            match actions.recv().await.expect("the watches run") {
                Action::Data(KindSnapshot::Nodes(list)) => {
                    nodes = list.len() == 3;
                    kept.push(Action::Data(KindSnapshot::Nodes(list)));
                }
                Action::Data(KindSnapshot::ResourceSlices(list)) => {
                    slices = list.len() == 2;
                    kept.push(Action::Data(KindSnapshot::ResourceSlices(list)));
                }
                Action::Data(KindSnapshot::ResourceClaims(list)) => {
                    claims = list.len() == 2
                        && list.iter().all(|claim| {
                            claim
                                .status
                                .as_ref()
                                .is_some_and(|s| s.allocation.is_some())
                        });
                    kept.push(Action::Data(KindSnapshot::ResourceClaims(list)));
                }
                Action::Dra(serving) => {
                    dra = serving == DraServing::Served;
                    kept.push(Action::Dra(serving));
                }
                _ => {}
            }
        }
    })
    .await
    .expect("the nodes, slices and claims arrive");
    cancel.cancel();
    kept
}

/// A console at `size` fed what the watches delivered, with every other kind listed empty.
fn fed(size: (u16, u16), delivered: &[Action]) -> App {
    let mut app = console(size);
    for kind in Kind::ALL {
        let empty = match kind {
            Kind::Module => KindSnapshot::Modules(Vec::new()),
            Kind::ModuleImagesConfig => KindSnapshot::ModuleImagesConfigs(Vec::new()),
            Kind::NodeModulesConfig => KindSnapshot::NodeModulesConfigs(Vec::new()),
            Kind::Node => KindSnapshot::Nodes(Vec::new()),
            Kind::Pod => KindSnapshot::Pods(Vec::new()),
            Kind::Event => KindSnapshot::Events(Vec::new()),
            Kind::Shim => KindSnapshot::Shims(Vec::new()),
            Kind::ImageCache => KindSnapshot::ImageCaches(Vec::new()),
            Kind::ModuleDay0 => KindSnapshot::ModuleDay0s(Vec::new()),
            Kind::MachineConfigPool => KindSnapshot::MachineConfigPools(Vec::new()),
            Kind::MachineConfig => KindSnapshot::MachineConfigs(Vec::new()),
            Kind::PreflightValidation => KindSnapshot::PreflightValidations(Vec::new()),
            Kind::ResourceSlice => KindSnapshot::ResourceSlices(Vec::new()),
            Kind::ResourceClaim => KindSnapshot::ResourceClaims(Vec::new()),
            Kind::ManagedClusterModule => KindSnapshot::ManagedClusterModules(Vec::new()),
        };
        app.update(Action::Data(empty));
    }
    for action in delivered {
        let action = match action {
            Action::Data(snapshot) => Action::Data(snapshot.clone()),
            Action::Dra(serving) => Action::Dra(*serving),
            other => panic!("only lists and the DRA answer are kept: {other:?}"),
        };
        app.update(action);
    }
    app
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn devices_written_as_a_driver_and_the_scheduler_write_them_are_drawn_per_device_and_per_node()
 {
    let cluster = EmbeddedCluster::start(EmbeddedOptions::default())
        .await
        .expect("the embedded cluster starts");
    let client = cluster.client();
    assert!(
        kmm_tui::tui::feed::dra_served(&client)
            .await
            .expect("discovery answers"),
        "the embedded cluster serves resource.k8s.io/v1"
    );
    write_cluster(&client).await;
    let delivered = watched(&client).await;
    cluster.shutdown().await;

    for size in SIZES {
        let mut app = fed(size, &delivered);
        command(&mut app, "devices");
        assert_eq!(app.view(), &View::Devices);
        let states: Vec<(&str, &str, DeviceState)> = app
            .rows
            .devices
            .iter()
            .map(|r| (r.node.as_str(), r.device.as_str(), r.state))
            .collect();
        assert_eq!(
            states,
            [
                ("worker-1", "accel-0", DeviceState::Free),
                ("worker-1", "accel-1", DeviceState::Allocated),
                ("worker-2", "accel-0", DeviceState::Free),
                ("worker-2", "accel-1", DeviceState::Free),
                ("worker-2", "accel-7", DeviceState::Withdrawn),
            ]
        );
        check("devices", &app);

        command(&mut app, "nodes");
        let text = screen(&app);
        assert!(
            text.lines()
                .any(|l| l.contains("worker-1") && l.contains("1/2")),
            "worker-1 has one of its two devices allocated:\n{text}"
        );
        check("nodes_with_devices", &app);
    }

    // `/` finds the device a pod holds, and `y` shows the ResourceSlice that publishes it.
    let mut app = fed((120, 40), &delivered);
    command(&mut app, "devices");
    press(&mut app, KeyCode::Char('/'));
    type_text(&mut app, "trainer");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.visible(ListId::Devices).len(), 1);
    check("devices_filtered", &app);
    press(&mut app, KeyCode::Char('y'));
    assert_eq!(
        app.view(),
        &View::Yaml(Target::cluster(Kind::ResourceSlice, "worker-1-accel"))
    );
}

#[test]
fn a_cluster_without_dra_says_so_where_devices_would_be() {
    for size in SIZES {
        let mut app = fed(size, &[Action::Dra(DraServing::NotServed)]);
        command(&mut app, "devices");
        let text = screen(&app);
        assert!(text.contains(DRA_NOT_SERVED), "{text}");
        assert!(!text.contains("Loading"), "{text}");
        check("devices_not_served", &app);
        command(&mut app, "nodes");
        assert!(screen(&app).contains(DRA_NOT_SERVED));
    }
}

/// The sample cluster with its kernel upgrade plan, its third Module deploying the DRA driver [`DRIVER`] (available
/// on all its nodes but one), and, on the first node that loaded that module and moves to the new kernel, a slice
/// of two devices of which a claim holds one. Returns the console and that node.
fn with_dra_driver(size: (u16, u16)) -> (App, String) {
    use kmm_tui::tui::sample::{self, sample, snapshots};
    use std::sync::Arc;

    let mut data = sample(12, 40);
    sample::preflight::add(&mut data);
    let target_kernel = data.preflights[0].spec.kernel_version.clone();
    let module = Arc::make_mut(&mut data.modules[2]);
    let (namespace, name) = (
        module.metadata.namespace.clone().unwrap_or_default(),
        module.metadata.name.clone().unwrap_or_default(),
    );
    module.spec.dra = Some(
        serde_json::from_value(json!({
            "container": {"image": "quay.io/acme/accel-dra-driver:1.0"},
            "driverName": DRIVER
        }))
        .expect("a DRA driver"),
    );
    let status = module.status.get_or_insert_with(Default::default);
    let loaded = status
        .module_loader
        .as_ref()
        .map_or(0, |counts| counts.available_number);
    status.dra = Some(kmm_api::kmm::DaemonSetCounts {
        nodes_matching_selector_number: loaded,
        desired_number: loaded,
        available_number: loaded - 1,
    });
    let node = data
        .nmcs
        .iter()
        .filter(|nmc| {
            nmc.status.as_ref().is_some_and(|s| {
                s.modules
                    .iter()
                    .any(|m| m.name == name && m.namespace == namespace)
            })
        })
        .filter_map(|nmc| nmc.metadata.name.clone())
        .find(|node| {
            data.node(node).is_some_and(|n| {
                n.status
                    .as_ref()
                    .and_then(|s| s.node_info.as_ref())
                    .is_some_and(|info| info.kernel_version != target_kernel)
            })
        })
        .expect("a node that loaded the module moves to the new kernel");
    data.slices = vec![Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": format!("{node}-accel")},
            "spec": {"driver": DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "accel-0"}, {"name": "accel-1"}]}
        }))
        .expect("a ResourceSlice"),
    )];
    data.claims = vec![Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": "train", "namespace": "lab"},
            "spec": {"devices": {"requests": [{"name": "accel", "exactly": {"deviceClassName": DRIVER}}]}},
            "status": {
                "allocation": {"devices": {"results": [
                    {"request": "accel", "driver": DRIVER, "pool": node, "device": "accel-1"}
                ]}},
                "reservedFor": [{"resource": "pods", "name": "trainer", "uid": "uid-trainer"}]
            }
        }))
        .expect("a ResourceClaim"),
    )];
    let mut app = console(size);
    app.update(Action::Dra(DraServing::Served));
    for snapshot in snapshots(&data) {
        app.update(Action::Data(snapshot));
    }
    (app, node)
}

#[test]
fn a_modules_dra_driver_rolls_out_beside_device_plugins_and_preflight_names_what_a_reload_disturbs()
{
    for size in SIZES {
        let (mut app, node) = with_dra_driver(size);
        let row = app
            .rows
            .modules
            .iter()
            .find(|row| row.dra.is_some())
            .expect("the Module with a DRA driver");
        let dra = row.dra.expect("its counts");
        assert_eq!(dra.available + 1, dra.desired, "{row:?}");
        check("dra_modules", &app);

        command(&mut app, "preflight");
        let losing = app
            .preflight
            .pane
            .nodes
            .iter()
            .find(|row| row.node == node)
            .expect("the node moves to the kernel");
        assert_eq!(
            losing.dra_drivers.len(),
            1,
            "the node loses the DRA driver: {losing:?}"
        );
        assert!(
            losing.dra_drivers[0].ends_with(&format!("({DRIVER})")),
            "{losing:?}"
        );
        assert_eq!(losing.claims, ["lab/train"]);
        let elsewhere: usize = app
            .preflight
            .pane
            .nodes
            .iter()
            .filter(|row| row.node != node)
            .map(|row| row.claims.len())
            .sum();
        assert_eq!(elsewhere, 0, "no claim is held anywhere else");
        press(&mut app, KeyCode::Tab);
        press(&mut app, KeyCode::Tab);
        check("dra_preflight_nodes", &app);
    }
}
