//! The hub family on an embedded fleet: a ManagedClusterModule on the hub is built there once per kernel, delivered
//! to every selected spoke through a ManifestWork, and loaded by each spoke's own engine; a cluster leaving the
//! selector loses it, and bad input (no cluster selected, a spoke namespace that does not exist) gets a reason on
//! the MCM and an Event; a spoke killed mid-rollout gets the module once it returns.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace, Pod};
use kmm_api::hub::{CONDITION_DELIVERED, ManagedClusterModule, NAME_LABEL, reasons};
use kmm_api::kmm::{Module, ModuleImagesConfig};
use kmm_api::ocm::cluster::ManagedCluster;
use kmm_api::ocm::work::ManifestWork;
use kmm_cluster::fleet::{DEFAULT_KERNELS, EmbeddedFleet, FleetOptions, HUB};
use kmm_engine::{Context, PodImages};
use kmm_testing::metrics::samples;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::common::{eventually, wait_for};

/// The hub namespace of the fleet, where builds run.
const HUB_NAMESPACE: &str = kmm_api::hub::DEFAULT_NAMESPACE;

/// A fleet of a hub and two spokes (spoke-1 on the first two default kernels, spoke-2 on the second), one node per
/// kernel, each cluster with its own engine, and the spoke namespace `acme` on every spoke.
struct Fleet {
    fleet: EmbeddedFleet,
    /// Each cluster's engine, by cluster name.
    engines: Vec<(String, CancellationToken, tokio::task::JoinHandle<()>)>,
    /// The hub engine's context, whose metrics count its passes.
    hub_engine: Arc<Context>,
    /// Where the clusters keep their stores, so a restarted spoke comes back with what it held.
    _state: tempfile::TempDir,
}

/// The context of an engine on `client`, named after its cluster.
fn engine_context(name: &str, client: kube::Client) -> Arc<Context> {
    Arc::new(Context::new(
        client,
        PodImages::default(),
        Some(name.to_owned()),
    ))
}

/// An engine on `context`, named after its cluster.
fn engine(
    name: &str,
    context: Arc<Context>,
) -> (String, CancellationToken, tokio::task::JoinHandle<()>) {
    let stop = CancellationToken::new();
    let task = tokio::spawn(kmm_engine::run_reconcilers(context, stop.clone()));
    (name.to_owned(), stop, task)
}

/// How many passes the hub engine of `fleet` made over ManagedClusterModules, whatever their result.
fn hub_passes(fleet: &Fleet) -> f64 {
    let scrape = fleet.hub_engine.metrics.encode();
    samples(&scrape, "controller_runtime_reconcile_total")
        .filter(|sample| sample.label("controller") == Some("managedclustermodule"))
        .map(|sample| sample.value)
        .sum()
}

impl Fleet {
    async fn start() -> Self {
        let state = tempfile::tempdir().expect("a state directory");
        let fleet = EmbeddedFleet::start(FleetOptions {
            lease_duration_seconds: 2,
            // Builds take about a second rather than ten.
            time_scale: Some(60.0),
            state_dir: Some(state.path().to_owned()),
            ..FleetOptions::new(2, 1)
        })
        .await
        .expect("the fleet starts");
        let hub = fleet.hub().client();
        let dockerfile: ConfigMap = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "accmod-dockerfile", "namespace": HUB_NAMESPACE},
            "data": {"dockerfile": "FROM quay.io/acme/base-builder:9.3\nARG KERNEL_FULL_VERSION\nRUN make\n"},
        }))
        .expect("a ConfigMap");
        Api::<ConfigMap>::namespaced(hub.clone(), HUB_NAMESPACE)
            .create(&PostParams::default(), &dockerfile)
            .await
            .expect("the Dockerfile is stored on the hub");
        let mut clients = vec![(HUB.to_owned(), hub)];
        for name in fleet.spoke_names() {
            let spoke = fleet.spoke(name).expect("the spoke runs").client();
            let namespace: Namespace =
                serde_json::from_value(json!({"metadata": {"name": "acme"}})).expect("a Namespace");
            Api::<Namespace>::all(spoke.clone())
                .create(&PostParams::default(), &namespace)
                .await
                .expect("the spoke namespace is created");
            clients.push((name.to_owned(), spoke));
        }
        let hub_engine = engine_context(HUB, clients[0].1.clone());
        let engines = clients
            .into_iter()
            .map(|(name, client)| {
                let context = if name == HUB {
                    hub_engine.clone()
                } else {
                    engine_context(&name, client)
                };
                engine(&name, context)
            })
            .collect();
        Self {
            fleet,
            engines,
            hub_engine,
            _state: state,
        }
    }

    /// Kill spoke `name` and its engine, as a cluster that goes away.
    async fn kill_spoke(&mut self, name: &str) {
        if let Some(index) = self.engines.iter().position(|(n, _, _)| n == name) {
            let (_, stop, task) = self.engines.remove(index);
            stop.cancel();
            let _ = task.await;
        }
        self.fleet.stop_spoke(name).await.expect("the spoke stops");
    }

    /// Bring spoke `name` back, with its store, and an engine on it.
    async fn restart_spoke(&mut self, name: &str) {
        self.fleet
            .start_spoke(name)
            .await
            .expect("the spoke starts again");
        let client = self.spoke(name);
        self.engines
            .push(engine(name, engine_context(name, client)));
    }

    fn hub(&self) -> kube::Client {
        self.fleet.hub().client()
    }

    fn spoke(&self, name: &str) -> kube::Client {
        self.fleet.spoke(name).expect("the spoke runs").client()
    }

    async fn shutdown(self) {
        for (_, stop, task) in self.engines {
            stop.cancel();
            let _ = task.await;
        }
        self.fleet.shutdown().await;
    }
}

/// An MCM of `accmod` for the clusters of `clusterset`, built on the hub for every kernel, into `spoke_namespace`.
fn mcm(name: &str, clusterset: &str, spoke_namespace: &str) -> ManagedClusterModule {
    serde_json::from_value(json!({
        "apiVersion": "hub.kmm.sigs.x-k8s.io/v1beta1", "kind": "ManagedClusterModule",
        "metadata": {"name": name},
        "spec": {
            "spokeNamespace": spoke_namespace,
            "selector": {"cluster.open-cluster-management.io/clusterset": clusterset},
            "moduleSpec": {
                "selector": {"node-role.kubernetes.io/worker": ""},
                "moduleLoader": {"container": {
                    "modprobe": {"moduleName": "accmod"},
                    "kernelMappings": [{
                        "regexp": "^.+$",
                        "containerImage": "quay.io/acme/${MOD_NAMESPACE}-accmod:${KERNEL_FULL_VERSION}",
                        "build": {"dockerfileConfigMap": {"name": "accmod-dockerfile"}},
                    }],
                }},
            },
        },
    }))
    .expect("an MCM")
}

/// The MCM's state of `cluster`, once it has one.
async fn cluster_reason(
    api: &Api<ManagedClusterModule>,
    mcm: &str,
    cluster: &str,
) -> Option<String> {
    let mcm = api.get(mcm).await.ok()?;
    mcm.status?
        .clusters
        .into_iter()
        .find(|c| c.name == cluster)
        .map(|c| c.reason)
}

/// The reasons of the Events about `mcm` on the hub.
async fn event_reasons(hub: &kube::Client, mcm: &str) -> Vec<String> {
    let events: Api<Event> = Api::all(hub.clone());
    events
        .list(&ListParams::default())
        .await
        .map(|list| list.items)
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(mcm))
        .filter_map(|e| e.reason)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_managed_cluster_module_is_built_once_on_the_hub_and_loaded_by_every_spoke() {
    let fleet = Fleet::start().await;
    let hub = fleet.hub();
    let mcms: Api<ManagedClusterModule> = Api::all(hub.clone());
    mcms.create(&PostParams::default(), &mcm("accmod", "default", "acme"))
        .await
        .expect("the MCM is created");

    let kernels_of = [("spoke-1", 2), ("spoke-2", 1)];
    for (spoke, nodes) in kernels_of {
        let modules: Api<Module> = Api::namespaced(fleet.spoke(spoke), "acme");
        eventually(
            120,
            &format!("the Module loaded on the {nodes} nodes of {spoke}"),
            || {
                let modules = modules.clone();
                async move {
                    modules
                        .get("accmod")
                        .await
                        .ok()
                        .and_then(|m| m.status?.module_loader)
                        .is_some_and(|counts| counts.available_number == nodes)
                }
            },
        )
        .await;
    }
    let delivered = wait_for(60, "the MCM delivered everywhere", || {
        let mcms = mcms.clone();
        async move {
            let mcm = mcms.get("accmod").await.ok()?;
            let status = mcm.status?;
            // The feedback of every node loaded: an earlier report (desired 0, available 0, as each spoke starts)
            // would also read as settled.
            let loaded = status
                .clusters
                .iter()
                .map(|c| (c.name.as_str(), c.available_number.zip(c.desired_number)))
                .eq([("spoke-1", Some((2, 2))), ("spoke-2", Some((1, 1)))]);
            let delivered = status
                .conditions
                .iter()
                .any(|c| c.type_ == CONDITION_DELIVERED && c.status == "True");
            (delivered && loaded).then_some(status)
        }
    })
    .await;
    assert_eq!(
        (
            delivered.number_desired,
            delivered.number_applied,
            delivered.number_degraded
        ),
        (2, 2, 0)
    );
    assert_eq!(
        delivered
            .clusters
            .iter()
            .map(|c| (c.name.as_str(), c.available_number))
            .collect::<Vec<_>>(),
        [("spoke-1", Some(2)), ("spoke-2", Some(1))]
    );

    // One image per kernel of the fleet, built on the hub: spoke-2's kernel is spoke-1's second, built once.
    let mic = Api::<ModuleImagesConfig>::namespaced(hub.clone(), HUB_NAMESPACE)
        .get("accmod-fleet")
        .await
        .expect("the hub's ModuleImagesConfig");
    let images: Vec<&str> = mic
        .spec
        .images
        .iter()
        .map(|i| i.spec.image.as_str())
        .collect();
    let expected: Vec<String> = DEFAULT_KERNELS[..2]
        .iter()
        .map(|(kernel, _)| format!("quay.io/acme/acme-accmod:{kernel}"))
        .collect();
    assert_eq!(images, expected);
    // Each cluster names the images its kernels need: spoke-2's is the second of spoke-1's.
    let needs: Vec<&[String]> = delivered
        .clusters
        .iter()
        .map(|c| c.images.as_slice())
        .collect();
    assert_eq!(needs, [&expected[..], &expected[1..]]);
    for spoke in ["spoke-1", "spoke-2"] {
        let builds = Api::<Pod>::all(fleet.spoke(spoke))
            .list(&ListParams::default().labels(kmm_api::kmm::labels::RESOURCE_TYPE))
            .await
            .expect("pods list")
            .items;
        assert!(
            builds.is_empty(),
            "no build or sign pod on {spoke}: {:?}",
            builds.iter().map(|p| &p.metadata.name).collect::<Vec<_>>()
        );
        let module = Api::<Module>::namespaced(fleet.spoke(spoke), "acme")
            .get("accmod")
            .await
            .expect("the spoke's Module");
        let container = module.spec.module_loader.expect("a loader").container;
        assert!(container.build.is_none() && container.sign.is_none());
        assert!(
            container
                .kernel_mappings
                .iter()
                .all(|m| m.literal.is_some() && m.regexp.is_none()),
            "{spoke} gets literal mappings: {:?}",
            container.kernel_mappings
        );
    }
    assert!(
        event_reasons(&hub, "accmod")
            .await
            .iter()
            .any(|r| r == reasons::APPLIED),
        "an Event tells each cluster applied it"
    );

    // Settled: passes find the works as they wrote them and write nothing more.
    let works: Api<ManifestWork> = Api::all(hub.clone());
    let generations = |list: Vec<ManifestWork>| -> Vec<Option<i64>> {
        list.into_iter().map(|w| w.metadata.generation).collect()
    };
    let params = ListParams::default().labels(&format!("{NAME_LABEL}=accmod"));
    let before = generations(works.list(&params).await.expect("works").items);
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let after = generations(works.list(&params).await.expect("works").items);
    assert_eq!(before, after, "the works are not written again");

    // A cluster's status moving where no pass reads (its allocatable CPU, as a node joins) wakes no MCM: with many
    // MCMs and clusters, such writes would otherwise cost a pass of every MCM each.
    let clusters: Api<ManagedCluster> = Api::all(hub.clone());
    let quiet_from = hub_passes(&fleet);
    assert!(quiet_from > 0.0, "the hub engine's passes are counted");
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let quiet = hub_passes(&fleet) - quiet_from;
    let writes_from = hub_passes(&fleet);
    for cpu in 1..=20 {
        clusters
            .patch_status(
                "spoke-1",
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"allocatable": {"cpu": cpu.to_string()}}})),
            )
            .await
            .expect("the cluster's status is written");
        tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    }
    let during_writes = hub_passes(&fleet) - writes_from;
    assert!(
        during_writes <= quiet + 2.0,
        "{during_writes} passes during 20 status writes, {quiet} in as long a quiet spell"
    );

    // Each spoke runs the image pinned to the digest the hub's build pushed, the registry's digest of it now.
    let registry = &fleet
        .fleet
        .hub()
        .simulation()
        .expect("the hub simulates")
        .world()
        .registry;
    let shared = &expected[1];
    let built = registry.digest(shared).expect("the hub pushed the image");
    assert_eq!(
        recorded_digest(&mic_of(&hub).await, shared).as_deref(),
        Some(built.as_str()),
        "the hub's MIC records the digest the build pushed"
    );
    let pinned = format!("{shared}@{built}");
    assert_eq!(
        spoke_images(&fleet.spoke("spoke-2")).await,
        std::slice::from_ref(&pinned)
    );

    // Someone pushes another image over the tag: the spokes keep running the image the hub checked.
    let pushed_over = format!("sha256:{}", "e".repeat(64));
    registry.push(shared, 1024, &pushed_over);
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    assert_eq!(
        spoke_images(&fleet.spoke("spoke-2")).await,
        std::slice::from_ref(&pinned)
    );

    // `R` on the hub (a new generation of the image) checks it again, finds the new digest, and the spokes follow.
    let mics = Api::<ModuleImagesConfig>::namespaced(hub.clone(), HUB_NAMESPACE);
    let mut raised = mic_of(&hub).await.spec;
    for image in raised.images.iter_mut().filter(|i| i.spec.image == *shared) {
        image.generation = Some(image.generation.unwrap_or(1) + 1);
    }
    mics.patch(
        "accmod-fleet",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": raised})),
    )
    .await
    .expect("the check is asked for");
    let spoke_2 = fleet.spoke("spoke-2");
    let repinned = format!("{shared}@{pushed_over}");
    eventually(60, "spoke-2 runs the image now at the tag", || {
        let spoke = spoke_2.clone();
        let repinned = repinned.clone();
        async move { spoke_images(&spoke).await == [repinned] }
    })
    .await;
    fleet.shutdown().await;
}

/// The hub's ModuleImagesConfig of `accmod`.
async fn mic_of(hub: &kube::Client) -> ModuleImagesConfig {
    Api::<ModuleImagesConfig>::namespaced(hub.clone(), HUB_NAMESPACE)
        .get("accmod-fleet")
        .await
        .expect("the hub's ModuleImagesConfig")
}

/// The digest `mic` records `image` to exist at.
fn recorded_digest(mic: &ModuleImagesConfig, image: &str) -> Option<String> {
    mic.status
        .as_ref()?
        .images_states
        .iter()
        .find(|state| state.image == image)?
        .digest
        .clone()
}

/// The images the Module `acme/accmod` on `spoke` maps its kernels to.
async fn spoke_images(spoke: &kube::Client) -> Vec<String> {
    let module = Api::<Module>::namespaced(spoke.clone(), "acme")
        .get("accmod")
        .await
        .expect("the spoke's Module");
    module
        .spec
        .module_loader
        .map(|loader| loader.container.kernel_mappings)
        .unwrap_or_default()
        .into_iter()
        .map(|mapping| mapping.container_image)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_leaving_the_selector_loses_its_module_and_bad_input_gets_a_reason() {
    let fleet = Fleet::start().await;
    let hub = fleet.hub();
    let mcms: Api<ManagedClusterModule> = Api::all(hub.clone());
    for mcm in [
        mcm("accmod", "default", "acme"),
        mcm("nowhere", "default", "missing"),
        mcm("nobody", "no-such-set", "acme"),
    ] {
        mcms.create(&PostParams::default(), &mcm)
            .await
            .expect("the MCM is created");
    }
    for spoke in ["spoke-1", "spoke-2"] {
        eventually(120, &format!("accmod applied on {spoke}"), || {
            let mcms = mcms.clone();
            async move {
                cluster_reason(&mcms, "accmod", spoke).await.as_deref() == Some(reasons::APPLIED)
            }
        })
        .await;
        eventually(
            60,
            &format!("a spoke namespace missing on {spoke} is told"),
            || {
                let mcms = mcms.clone();
                async move {
                    cluster_reason(&mcms, "nowhere", spoke).await.as_deref()
                        == Some(reasons::APPLY_FAILED)
                }
            },
        )
        .await;
    }
    let nowhere = mcms.get("nowhere").await.expect("the MCM");
    let message = nowhere.status.expect("a status").clusters[0]
        .message
        .clone();
    assert!(
        message.contains("missing"),
        "the spoke's refusal names the namespace: {message}"
    );
    eventually(30, "an MCM selecting nothing says so", || {
        let mcms = mcms.clone();
        async move {
            mcms.get("nobody")
                .await
                .ok()
                .and_then(|m| m.status)
                .is_some_and(|s| {
                    s.conditions.iter().any(|c| {
                        c.type_ == CONDITION_DELIVERED
                            && c.status == "False"
                            && c.reason == reasons::NO_CLUSTER
                    })
                })
        }
    })
    .await;
    eventually(30, "the refusals are Events", || {
        let hub = hub.clone();
        async move {
            event_reasons(&hub, "nowhere")
                .await
                .iter()
                .any(|r| r == reasons::APPLY_FAILED)
                && event_reasons(&hub, "nobody")
                    .await
                    .iter()
                    .any(|r| r == reasons::NO_CLUSTER)
        }
    })
    .await;

    // spoke-2 moves to another set: its work goes, and its agent removes the Module from the spoke.
    Api::<ManagedCluster>::all(hub.clone())
        .patch(
            "spoke-2",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"cluster.open-cluster-management.io/clusterset": "elsewhere"}}})),
        )
        .await
        .expect("spoke-2 is relabelled");
    let spoke2: Api<Module> = Api::namespaced(fleet.spoke("spoke-2"), "acme");
    eventually(60, "spoke-2 loses the Module", || {
        let spoke2 = spoke2.clone();
        async move { matches!(spoke2.get_opt("accmod").await, Ok(None)) }
    })
    .await;
    let status = mcms
        .get("accmod")
        .await
        .expect("the MCM")
        .status
        .expect("a status");
    assert_eq!(status.number_desired, 1);
    assert_eq!(
        status
            .clusters
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>(),
        ["spoke-1"]
    );
    assert!(
        Api::<Module>::namespaced(fleet.spoke("spoke-1"), "acme")
            .get_opt("accmod")
            .await
            .expect("read")
            .is_some(),
        "spoke-1 keeps it"
    );
    fleet.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spoke_killed_mid_rollout_converges_once_it_returns() {
    let mut fleet = Fleet::start().await;
    let hub = fleet.hub();
    let mcms: Api<ManagedClusterModule> = Api::all(hub.clone());
    mcms.create(&PostParams::default(), &mcm("accmod", "default", "acme"))
        .await
        .expect("the MCM is created");
    // spoke-2 goes away while the hub builds: its work is written meanwhile, and nothing reaches it.
    fleet.kill_spoke("spoke-2").await;
    eventually(120, "spoke-1 loads the module meanwhile", || {
        let mcms = mcms.clone();
        async move {
            cluster_reason(&mcms, "accmod", "spoke-1").await.as_deref() == Some(reasons::APPLIED)
        }
    })
    .await;
    eventually(60, "the hub sees spoke-2 gone", || {
        let clusters: Api<ManagedCluster> = Api::all(hub.clone());
        async move {
            clusters
                .get("spoke-2")
                .await
                .is_ok_and(|cluster| !cluster.is_available())
        }
    })
    .await;
    let held = cluster_reason(&mcms, "accmod", "spoke-2").await;
    assert_ne!(held.as_deref(), Some(reasons::APPLIED), "spoke-2 is down");

    fleet.restart_spoke("spoke-2").await;
    let modules: Api<Module> = Api::namespaced(fleet.spoke("spoke-2"), "acme");
    eventually(120, "spoke-2 loads the module once it is back", || {
        let modules = modules.clone();
        async move {
            modules
                .get("accmod")
                .await
                .ok()
                .and_then(|m| m.status?.module_loader)
                .is_some_and(|counts| counts.available_number == 1)
        }
    })
    .await;
    eventually(60, "the MCM counts spoke-2 applied again", || {
        let mcms = mcms.clone();
        async move {
            cluster_reason(&mcms, "accmod", "spoke-2").await.as_deref() == Some(reasons::APPLIED)
        }
    })
    .await;
    fleet.shutdown().await;
}
