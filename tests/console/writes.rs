//! The console's writes against the embedded cluster, through a real `kube::Client`: rebuilds move image
//! generations (or the Module's rebuild trigger on upstream CRDs), rechecks start new pull checks, deletes say what
//! is left to happen, and the editor keeps its buffer on every error, from a YAML typo to a stale resourceVersion.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crossterm::event::{KeyCode, KeyModifiers};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kmm_api::kmm::labels;
use kmm_api::kmm::{
    ImageState, Module, ModuleImagesConfig, NodeModulesConfig, PreflightValidation,
};
use kmm_cluster::sim::scenario::Scenario;
use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};
use kmm_engine::{self, Context, PodImages, kmm::mic};
use kmm_tui::tui::access::{self, Capability};
use kmm_tui::tui::action::Action;
use kmm_tui::tui::app::{App, Availability, EngineMode, Mode, Request, Session, Severity};
use kmm_tui::tui::data::{Kind, KindSnapshot};
use kmm_tui::tui::keymap::{Command, Keymap};
use kmm_tui::tui::target::Target;
use kmm_tui::tui::theme::Theme;
use kmm_tui::tui::writes::images::image_generations_served;
use kmm_tui::tui::writes::{self, WriteOutcome, WriteRequest};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::support::{press_with, type_text};
use kmm_testing::eventually;

const NS: &str = "acme";
const MODULE: &str = "acme-accel";
const KERNEL: &str = "5.14.0-284.30.1.el9_2.x86_64";
/// In the registry from the start.
const EXISTING: &str = "quay.io/acme/accel-kmod:5.14.0-284.30.1.el9_2.x86_64";
/// Nowhere.
const ABSENT: &str = "quay.io/acme/accel-kmod:5.14.0-362.8.1.el9_3.x86_64";

const SCENARIO: &str = r#"
seed: 3
timeScale: 10
nodes:
  - namePrefix: worker-
    count: 2
    labels: {accelerator: acme}
    kernelVersion: 5.14.0-284.30.1.el9_2.x86_64
    osImage: Red Hat Enterprise Linux CoreOS 414.92.202312311229-0 (Plow)
    diskGiB: 40
registry:
  images:
    - {name: "quay.io/acme/accel-kmod:5.14.0-284.30.1.el9_2.x86_64", sizeMiB: 60}
objects:
  - {apiVersion: v1, kind: Namespace, metadata: {name: acme}}
"#;

async fn start_cluster() -> EmbeddedCluster {
    let scenario = Scenario::parse(SCENARIO, "tui_writes", None).expect("the scenario parses");
    EmbeddedCluster::start(EmbeddedOptions {
        scenario: Some(scenario),
        ..Default::default()
    })
    .await
    .expect("the embedded cluster starts")
}

fn module_target() -> Target {
    Target::namespaced(Kind::Module, NS, MODULE)
}

fn mic_api(client: &Client) -> Api<ModuleImagesConfig> {
    Api::namespaced(client.clone(), NS)
}

fn module_api(client: &Client) -> Api<Module> {
    Api::namespaced(client.clone(), NS)
}

async fn create_module(client: &Client, finalizers: &[&str]) -> Module {
    let module: Module = serde_json::from_value(json!({
        "apiVersion": "kmm.sigs.x-k8s.io/v1beta1",
        "kind": "Module",
        "metadata": {"name": MODULE, "namespace": NS, "finalizers": finalizers},
        "spec": {
            "selector": {"accelerator": "acme"},
            "moduleLoader": {"container": {
                "modprobe": {"moduleName": "acme_accel"},
                "kernelMappings": [{
                    "regexp": "^.+$",
                    "containerImage": "quay.io/acme/accel-kmod:${KERNEL_FULL_VERSION}",
                }],
            }},
        },
    }))
    .expect("a Module");
    module_api(client)
        .create(&PostParams::default(), &module)
        .await
        .expect("the Module is created")
}

async fn create_mic(client: &Client, images: &[&str]) -> ModuleImagesConfig {
    let images: Vec<Value> = images
        .iter()
        .map(|image| json!({"image": image, "kernelVersion": KERNEL}))
        .collect();
    let mic: ModuleImagesConfig = serde_json::from_value(json!({
        "apiVersion": "kmm.sigs.x-k8s.io/v1beta1",
        "kind": "ModuleImagesConfig",
        "metadata": {"name": MODULE, "namespace": NS},
        "spec": {"images": images},
    }))
    .expect("a MIC");
    mic_api(client)
        .create(&PostParams::default(), &mic)
        .await
        .expect("the MIC is created")
}

/// The spec generation of each image (unset reads as 1, as the engine reads it).
async fn generations(client: &Client) -> Vec<(String, i64)> {
    let mic = mic_api(client).get(MODULE).await.expect("the MIC");
    mic.spec
        .images
        .iter()
        .map(|i| (i.spec.image.clone(), i.generation.unwrap_or(1)))
        .collect()
}

async fn perform(client: &Client, request: WriteRequest) -> Result<String, writes::WriteError> {
    writes::perform(client, request).await.result
}

fn rebuild(image: Option<&str>) -> WriteRequest {
    WriteRequest::Rebuild {
        module: module_target(),
        image: image.map(str::to_owned),
    }
}

fn recheck(image: Option<&str>) -> WriteRequest {
    WriteRequest::Recheck {
        module: module_target(),
        image: image.map(str::to_owned),
    }
}

#[tokio::test]
async fn rebuild_bumps_every_image_generation_and_again() {
    let cluster = start_cluster().await;
    let client = cluster.client();
    create_mic(&client, &[EXISTING, ABSENT]).await;

    let message = perform(&client, rebuild(None)).await.expect("rebuilt");
    assert_eq!(
        message,
        "Rebuild requested: generation 1→2 for 2 images of Module acme/acme-accel"
    );
    assert_eq!(
        generations(&client).await,
        [(EXISTING.to_owned(), 2), (ABSENT.to_owned(), 2)]
    );

    let message = perform(&client, rebuild(Some(ABSENT)))
        .await
        .expect("rebuilt");
    assert_eq!(
        message,
        format!("Rebuild requested: generation 2→3 for image {ABSENT} of Module acme/acme-accel")
    );
    let message = perform(&client, rebuild(None)).await.expect("rebuilt");
    assert_eq!(
        message,
        "Rebuild requested: generation 2→3 for 1 image and 3→4 for 1 image of Module acme/acme-accel"
    );
    assert_eq!(
        generations(&client).await,
        [(EXISTING.to_owned(), 3), (ABSENT.to_owned(), 4)]
    );
    let managers: Vec<String> = mic_api(&client)
        .get(MODULE)
        .await
        .expect("the MIC")
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter_map(|entry| entry.manager)
        .collect();
    assert!(
        managers.contains(&writes::FIELD_MANAGER.to_owned()),
        "{managers:?}"
    );

    let unknown = perform(&client, rebuild(Some("quay.io/acme/other:1")))
        .await
        .expect_err("no such image");
    assert_eq!(
        unknown.message,
        "Module acme/acme-accel has no image quay.io/acme/other:1"
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn rebuild_without_a_mic_says_why() {
    let cluster = start_cluster().await;
    let error = perform(&cluster.client(), rebuild(None))
        .await
        .expect_err("no MIC yet");
    assert!(
        error.message.contains("has no ModuleImagesConfig yet"),
        "{}",
        error.message
    );
    cluster.shutdown().await;
}

/// A client that lets another writer change the MIC just before each of the console's first `meddle` MIC
/// patches, so each of them carries a stale resourceVersion; and that can refuse to show CRDs.
struct Meddler {
    client: Client,
    patches: Arc<AtomicUsize>,
}

impl Meddler {
    fn new(inner: Client, meddle: usize, hide_crds: bool) -> Meddler {
        let patches = Arc::new(AtomicUsize::new(0));
        let seen = patches.clone();
        let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
            let inner = inner.clone();
            let seen = seen.clone();
            async move {
                let path = request.uri().path().to_owned();
                if hide_crds && path.contains("customresourcedefinitions") {
                    let forbidden = json!({
                        "kind": "Status", "apiVersion": "v1", "status": "Failure",
                        "message": "customresourcedefinitions is forbidden", "reason": "Forbidden", "code": 403,
                    });
                    let response = http::Response::builder()
                        .status(403)
                        .header("content-type", "application/json")
                        .body(kube::client::Body::from(forbidden.to_string().into_bytes()))
                        .expect("a response");
                    return Ok::<_, kube::Error>(response);
                }
                if request.method() == http::Method::PATCH && path.contains("moduleimagesconfigs") {
                    let attempt = seen.fetch_add(1, Ordering::SeqCst);
                    if attempt < meddle {
                        let label =
                            json!({"metadata": {"labels": {"meddled": attempt.to_string()}}});
                        Api::<ModuleImagesConfig>::namespaced(inner.clone(), NS)
                            .patch(MODULE, &PatchParams::default(), &Patch::Merge(&label))
                            .await?;
                    }
                }
                inner.send(request).await
            }
        });
        Meddler {
            client: Client::new(service, "default"),
            patches,
        }
    }
}

#[tokio::test]
async fn a_conflicting_write_is_read_again_and_retried() {
    let cluster = start_cluster().await;
    create_mic(&cluster.client(), &[EXISTING]).await;

    let meddler = Meddler::new(cluster.client(), 2, false);
    let message = perform(&meddler.client, rebuild(None))
        .await
        .expect("rebuilt after two conflicts");
    assert!(message.contains("generation 1→2"), "{message}");
    assert_eq!(meddler.patches.load(Ordering::SeqCst), 3);
    assert_eq!(
        generations(&cluster.client()).await,
        [(EXISTING.to_owned(), 2)],
        "one bump, however many attempts"
    );

    let hopeless = Meddler::new(cluster.client(), usize::MAX, false);
    let error = perform(&hopeless.client, rebuild(None))
        .await
        .expect_err("always stale");
    assert_eq!(error.code, Some(409));
    assert!(
        error.message.contains("kept changing on the server"),
        "{}",
        error.message
    );
    assert_eq!(
        generations(&cluster.client()).await,
        [(EXISTING.to_owned(), 2)]
    );
    cluster.shutdown().await;
}

/// Drop `generation` from the MIC CRD's image items, as upstream KMM's CRD has it.
async fn install_upstream_mic_crd(client: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = "moduleimagesconfigs.kmm.sigs.x-k8s.io";
    let mut crd = serde_json::to_value(crds.get(name).await.expect("our MIC CRD")).expect("JSON");
    let versions = crd["spec"]["versions"].as_array_mut().expect("versions");
    for version in versions {
        let items = version
            .pointer_mut(
                "/schema/openAPIV3Schema/properties/spec/properties/images/items/properties",
            )
            .and_then(Value::as_object_mut)
            .expect("image item properties");
        assert!(items.remove("generation").is_some());
    }
    let crd: CustomResourceDefinition = serde_json::from_value(crd).expect("a CRD");
    crds.replace(name, &PostParams::default(), &crd)
        .await
        .expect("the upstream-shaped CRD is installed");
}

#[tokio::test]
async fn rebuild_moves_the_modules_trigger_on_upstream_crds() {
    let cluster = start_cluster().await;
    let client = cluster.client();
    assert_eq!(image_generations_served(&client).await, Some(true));
    install_upstream_mic_crd(&client).await;
    assert_eq!(image_generations_served(&client).await, Some(false));
    create_module(&client, &[]).await;
    create_mic(&client, &[EXISTING]).await;

    let message = perform(&client, rebuild(None)).await.expect("rebuilt");
    assert_eq!(
        message,
        "Rebuild requested: imageRebuildTriggerGeneration 0→1 of Module acme/acme-accel \
         (upstream KMM CRDs: every image of it is checked again)"
    );
    let trigger = |module: Module| module.spec.image_rebuild_trigger_generation;
    assert_eq!(
        trigger(module_api(&client).get(MODULE).await.expect("Module")),
        Some(1)
    );

    // Without leave to read CRDs, the pruned generation gives the upstream shape away.
    let blind = Meddler::new(client.clone(), 0, true);
    assert_eq!(image_generations_served(&blind.client).await, None);
    let message = perform(&blind.client, rebuild(Some(EXISTING)))
        .await
        .expect("rebuilt");
    assert!(
        message.contains("imageRebuildTriggerGeneration 1→2")
            && message.contains("no per-image generation"),
        "{message}"
    );
    assert_eq!(
        trigger(module_api(&client).get(MODULE).await.expect("Module")),
        Some(2)
    );
    cluster.shutdown().await;
}

/// Record the state of an image in the MIC status by hand, as the engine would.
async fn record_state(client: &Client, image: &str, state: &str) {
    let status = json!({"status": {"imagesStates": [
        {"image": image, "status": state, "observedGeneration": 1},
        {"image": ABSENT, "status": "DoesNotExist", "observedGeneration": 1},
    ]}});
    mic_api(client)
        .patch_status(MODULE, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("the status is written");
}

async fn recorded_images(client: &Client) -> Vec<String> {
    let mic = mic_api(client).get(MODULE).await.expect("the MIC");
    mic.status
        .iter()
        .flat_map(|s| &s.images_states)
        .map(|s| s.image.clone())
        .collect()
}

#[tokio::test]
async fn recheck_forgets_the_recorded_state_only() {
    let cluster = start_cluster().await;
    let client = cluster.client();
    create_mic(&client, &[EXISTING, ABSENT]).await;
    record_state(&client, EXISTING, "Exists").await;

    let message = perform(&client, recheck(Some(EXISTING)))
        .await
        .expect("rechecked");
    assert_eq!(
        message,
        format!("Recheck requested: image {EXISTING} of Module acme/acme-accel is pulled again")
    );
    assert_eq!(recorded_images(&client).await, [ABSENT]);
    assert_eq!(
        generations(&client).await,
        [(EXISTING.to_owned(), 1), (ABSENT.to_owned(), 1)],
        "no build request: the generations stay"
    );

    let message = perform(&client, recheck(Some(EXISTING)))
        .await
        .expect("nothing to forget");
    assert!(message.contains("already under way"), "{message}");
    let message = perform(&client, recheck(None)).await.expect("rechecked");
    assert_eq!(
        message,
        "Recheck requested: 1 image of Module acme/acme-accel is pulled again"
    );
    assert!(recorded_images(&client).await.is_empty());
    cluster.shutdown().await;
}

/// UIDs of the pull pods of one image, as a pod watch sees them come.
struct PullPods {
    uids: Arc<Mutex<BTreeSet<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl PullPods {
    fn watch(client: &Client, image: &str) -> PullPods {
        let name = mic::pull_pod_name(MODULE, image, 1);
        let uids = Arc::new(Mutex::new(BTreeSet::new()));
        let seen = uids.clone();
        let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
        let stream =
            watcher(pods, watcher::Config::default().labels(labels::IMAGE_OWNER)).default_backoff();
        let task = tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                let Ok(watcher::Event::Apply(pod) | watcher::Event::InitApply(pod)) = event else {
                    continue;
                };
                if pod.name_any() == name
                    && let Some(uid) = pod.uid()
                {
                    seen.lock().expect("pod record").insert(uid);
                }
            }
        });
        PullPods { uids, task }
    }

    fn count(&self) -> usize {
        self.uids.lock().expect("pod record").len()
    }
}

impl Drop for PullPods {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn state_of(client: &Client, image: &str) -> Option<ImageState> {
    let mic = mic_api(client).get(MODULE).await.ok()?;
    mic.status?
        .images_states
        .into_iter()
        .find(|s| s.image == image)
        .map(|s| s.status)
}

#[tokio::test(start_paused = true)]
async fn recheck_makes_the_engine_pull_the_image_again() {
    let cluster = start_cluster().await;
    let client = cluster.client();
    let stop = CancellationToken::new();
    let context = Arc::new(Context::new(
        client.clone(),
        PodImages::default(),
        Some("tui-writes".to_owned()),
    ));
    let engine = tokio::spawn(kmm_engine::run_reconcilers(context, stop.clone()));
    let pulls = PullPods::watch(&client, EXISTING);
    create_mic(&client, &[EXISTING]).await;
    eventually(120, "the image is proved to exist", || async {
        state_of(&client, EXISTING).await == Some(ImageState::Exists)
    })
    .await;
    assert_eq!(pulls.count(), 1);

    perform(&client, recheck(None)).await.expect("rechecked");
    eventually(120, "a second pull pod checks the image", || async {
        pulls.count() == 2
    })
    .await;
    eventually(120, "the image is proved to exist again", || async {
        state_of(&client, EXISTING).await == Some(ImageState::Exists)
    })
    .await;
    assert_eq!(generations(&client).await, [(EXISTING.to_owned(), 1)]);

    stop.cancel();
    let _ = engine.await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn delete_removes_the_object_or_says_what_it_waits_for() {
    let cluster = start_cluster().await;
    let client = cluster.client();
    create_mic(&client, &[EXISTING]).await;
    let mic_target = Target::namespaced(Kind::ModuleImagesConfig, NS, MODULE);
    let message = perform(
        &client,
        WriteRequest::Delete {
            target: mic_target.clone(),
        },
    )
    .await
    .expect("deleted");
    assert_eq!(message, "Deleted ModuleImagesConfig acme/acme-accel");
    assert!(
        mic_api(&client)
            .get_opt(MODULE)
            .await
            .expect("read")
            .is_none()
    );

    let gone = perform(&client, WriteRequest::Delete { target: mic_target })
        .await
        .expect_err("already gone");
    assert_eq!(gone.code, Some(404));

    create_module(&client, &["kmm.node.kubernetes.io/module-finalizer"]).await;
    let nmc: NodeModulesConfig = serde_json::from_value(json!({
        "apiVersion": "kmm.sigs.x-k8s.io/v1beta1",
        "kind": "NodeModulesConfig",
        "metadata": {"name": "worker-a"},
        "spec": {"modules": [{
            "name": MODULE, "namespace": NS, "serviceAccountName": "default",
            "config": {
                "kernelVersion": KERNEL, "containerImage": EXISTING, "insecurePull": false,
                "modprobe": {"moduleName": "acme_accel"},
            },
        }]},
    }))
    .expect("an NMC");
    Api::<NodeModulesConfig>::all(client.clone())
        .create(&PostParams::default(), &nmc)
        .await
        .expect("the NMC is created");
    let message = perform(
        &client,
        WriteRequest::Delete {
            target: module_target(),
        },
    )
    .await
    .expect("deletion requested");
    assert_eq!(
        message,
        "Module acme/acme-accel: deletion requested; unloading from 1 node"
    );
    let module = module_api(&client).get(MODULE).await.expect("still there");
    assert!(module.metadata.deletion_timestamp.is_some());
    cluster.shutdown().await;
}

#[tokio::test]
async fn the_embedded_cluster_allows_every_capability() {
    let cluster = start_cluster().await;
    let report = access::review(&cluster.client(), "embedded").await;
    assert_eq!(report.context, "embedded");
    assert_eq!(report.allowed.get(&Capability::Rebuild), Some(&true));
    assert_eq!(report.allowed.get(&Capability::Recheck), Some(&true));
    assert_eq!(report.allowed.get(&Capability::CacheWork), Some(&true));
    for kind in Kind::ALL {
        assert_eq!(report.allowed.get(&Capability::Delete(kind)), Some(&true));
        assert_eq!(report.allowed.get(&Capability::Edit(kind)), Some(&true));
    }
    let namespaced = access::review_in(&cluster.client(), "embedded", Some(NS)).await;
    assert_eq!(namespaced.allowed, report.allowed);
    cluster.shutdown().await;
}

#[tokio::test]
async fn the_viewer_context_sees_every_write_dimmed_from_the_servers_answers() {
    let cluster = EmbeddedCluster::start(EmbeddedOptions {
        scenario: Some(Scenario::parse(SCENARIO, "tui_writes", None).expect("the scenario parses")),
        listen: Some("127.0.0.1:0".parse().expect("an address")),
        ..Default::default()
    })
    .await
    .expect("the embedded cluster starts");
    let kubeconfig = kube::config::Kubeconfig::from_yaml(cluster.kubeconfig().expect("served"))
        .expect("the kubeconfig parses");
    let options = kube::config::KubeConfigOptions {
        context: Some(
            kmm_cluster::kubeconfig::Names::new(kmm_cluster::kubeconfig::DEFAULT_NAME)
                .viewer_context(),
        ),
        ..Default::default()
    };
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .expect("the viewer context");
    let viewer = Client::try_from(config).expect("a client for the viewer context");
    assert!(
        module_api(&viewer).list(&Default::default()).await.is_ok(),
        "the viewer reads"
    );
    let report = access::review(&viewer, "viewer").await;
    let namespaced = access::review_in(&viewer, "viewer", Some(NS)).await;
    for report in [&report, &namespaced] {
        assert_eq!(report.allowed.get(&Capability::Rebuild), Some(&false));
        assert_eq!(report.allowed.get(&Capability::Recheck), Some(&false));
        assert_eq!(report.allowed.get(&Capability::CacheWork), Some(&false));
        assert_eq!(report.allowed.get(&Capability::SteerShim), Some(&false));
        for kind in Kind::ALL {
            assert_eq!(
                report.allowed.get(&Capability::Delete(kind)),
                Some(&false),
                "{kind:?}"
            );
            assert_eq!(
                report.allowed.get(&Capability::Edit(kind)),
                Some(&false),
                "{kind:?}"
            );
        }
    }
    let session = Session {
        context: "viewer".to_owned(),
        contexts: vec!["viewer".to_owned()],
        embedded: true,
        engine: EngineMode::Off,
        readonly: false,
        engine_identity: None,
    };
    let mut app = App::new(session, Theme::monochrome(), Keymap::default(), None);
    let module: Module = serde_json::from_value(json!({
        "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "Module",
        "metadata": {"name": MODULE, "namespace": NS},
        "spec": {"selector": {"a": "b"}, "moduleLoader": {"container": {"modprobe": {"moduleName": "acme_accel"}, "kernelMappings": []}}},
    }))
    .expect("a Module");
    app.update(Action::Data(KindSnapshot::Modules(vec![Arc::new(module)])));
    app.update(Action::Access(report));
    for command in [
        Command::Rebuild,
        Command::Recheck,
        Command::Delete,
        Command::Edit,
    ] {
        assert!(
            matches!(app.availability(command), Availability::Unavailable(_)),
            "{command:?} is offered to the viewer"
        );
    }
    press_with(&mut app, KeyCode::Char('d'), KeyModifiers::CONTROL);
    assert!(
        app.requests.is_empty(),
        "nothing is sent for a refused delete"
    );

    // Everything the console watches, the viewer may watch: every kind's list arrives, no watch fails.
    let (sender, mut actions) = tokio::sync::mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    kmm_tui::tui::feed::start(&viewer, None, None, &sender, &cancel);
    let mut delivered = BTreeSet::new();
    let mut lease_seen = false;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    while delivered.len() < Kind::ALL.len() || !lease_seen {
        let action = tokio::time::timeout_at(deadline, actions.recv())
            .await
            .unwrap_or_else(|_| {
                panic!("lists the viewer received: {delivered:?}, lease seen: {lease_seen}")
            })
            .expect("the feed runs");
        match action {
            Action::Data(snapshot) => {
                delivered.insert(format!("{:?}", snapshot.kind()));
            }
            Action::Feed(kind, kmm_tui::tui::data::FeedState::Failing(why)) => {
                panic!("the viewer's {kind:?} watch fails: {why}")
            }
            Action::EngineLease(_) => lease_seen = true,
            _ => {}
        }
    }
    cancel.cancel();
    cluster.shutdown().await;
}

/// The console drawn on a 120x40 terminal, as text.
fn render(app: &App) -> String {
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 40))
        .expect("a test terminal");
    terminal
        .draw(|frame| kmm_tui::tui::ui::draw(frame, app))
        .expect("drawn");
    let buffer = terminal.backend().buffer();
    (0..buffer.area.height)
        .map(|y| {
            (0..buffer.area.width)
                .map(|x| buffer[(x, y)].symbol())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A console on the embedded cluster showing the Module as the server has it, with the editor open on it.
async fn console_editing(client: &Client) -> App {
    let module = module_api(client).get(MODULE).await.expect("the Module");
    let session = Session {
        context: "embedded".to_owned(),
        contexts: vec!["embedded".to_owned()],
        embedded: true,
        engine: EngineMode::Off,
        readonly: false,
        engine_identity: None,
    };
    let mut app = App::new(session, Theme::monochrome(), Keymap::default(), None);
    app.update(Action::Data(KindSnapshot::Modules(vec![Arc::new(module)])));
    press_with(&mut app, KeyCode::Char('e'), KeyModifiers::NONE);
    let requests = std::mem::take(&mut app.requests);
    let [Request::Edit(target)] = requests.as_slice() else {
        panic!("e asks to read the object, got {requests:?}");
    };
    let object = kmm_tui::tui::live::read(client, target).await;
    app.update(Action::Editable(target.clone(), object));
    assert!(app.editor.is_some(), "the editor opens: {:?}", app.status);
    app
}

/// Move the cursor to the end of the first line holding `needle` (the cursor starts at the top).
fn go_to_end_of(app: &mut App, needle: &str) -> String {
    let text = app.editor.as_ref().expect("editor").text();
    let (index, line) = text
        .lines()
        .enumerate()
        .find(|(_, line)| line.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle} in\n{text}"));
    for _ in 0..index {
        press_with(app, KeyCode::Down, KeyModifiers::NONE);
    }
    press_with(app, KeyCode::End, KeyModifiers::NONE);
    line.to_owned()
}

/// Replace the value after `key: ` on its line.
fn replace_value(app: &mut App, key: &str, value: &str) {
    let line = go_to_end_of(app, &format!("{key}: "));
    let old = line.split_once(&format!("{key}: ")).map_or("", |(_, v)| v);
    for _ in old.chars() {
        press_with(app, KeyCode::Backspace, KeyModifiers::NONE);
    }
    type_text(app, value);
}

fn save(app: &mut App) {
    press_with(app, KeyCode::Char('s'), KeyModifiers::CONTROL);
}

/// Confirm the pending apply, perform it on the cluster and hand the outcome back to the console.
async fn confirm_and_perform(app: &mut App, client: &Client) -> WriteOutcome {
    assert!(
        matches!(&app.mode, Mode::Confirm(WriteRequest::Apply { .. })),
        "ctrl-s asks for a confirmation; editor: {:?}",
        app.editor.as_ref().map(|e| (&e.message, &e.errors))
    );
    press_with(app, KeyCode::Char('y'), KeyModifiers::NONE);
    let requests = std::mem::take(&mut app.requests);
    let [Request::Write(request)] = requests.as_slice() else {
        panic!("one write expected, got {requests:?}");
    };
    let outcome = writes::perform(client, request.clone()).await;
    app.update(Action::Written(outcome.clone()));
    outcome
}

#[tokio::test]
async fn malformed_yaml_is_caught_before_anything_is_sent() {
    let cluster = start_cluster().await;
    let client = cluster.client();
    let before = create_module(&client, &[]).await;
    let mut app = console_editing(&client).await;

    type_text(&mut app, "{");
    let typed = app.editor.as_ref().expect("editor").text();
    save(&mut app);

    let editor = app.editor.as_ref().expect("the editor stays open");
    assert_eq!(editor.text(), typed, "the buffer is kept");
    let line = editor
        .error_line
        .expect("the syntax error's line is marked");
    assert!(
        editor.errors[0]
            .path
            .starts_with(&format!("line {}, column ", line + 1)),
        "{:?}",
        editor.errors
    );
    assert!(
        editor
            .message
            .as_deref()
            .is_some_and(|m| m.contains("nothing was sent")),
        "{:?}",
        editor.message
    );
    assert!(matches!(app.mode, Mode::Normal));
    assert!(app.requests.is_empty(), "nothing was sent");
    let screen = render(&app);
    for shown in [
        "Editing Module acme/acme-accel [modified]",
        "ctrl-s apply",
        "Problems",
        "1 problem found; nothing was sent",
        &format!("line {}, column", line + 1),
        " 1 {apiVersion: kmm.sigs.x-k8s.io/v1beta1",
    ] {
        assert!(screen.contains(shown), "{shown:?} not on screen:\n{screen}");
    }
    let after = module_api(&client).get(MODULE).await.expect("the Module");
    assert_eq!(after.resource_version(), before.resource_version());
    cluster.shutdown().await;
}

#[tokio::test]
async fn an_invalid_object_names_the_field_before_sending() {
    let cluster = start_cluster().await;
    let client = cluster.client();
    create_module(&client, &[]).await;
    let mut app = console_editing(&client).await;

    replace_value(&mut app, "regexp", "'(['");
    save(&mut app);

    let editor = app.editor.as_ref().expect("the editor stays open");
    assert!(
        editor
            .errors
            .iter()
            .any(|e| e.path == "spec.moduleLoader.container.kernelMappings[0].regexp"),
        "{:?}",
        editor.errors
    );
    assert!(editor.text().contains("regexp: '(['"));
    assert!(app.requests.is_empty());
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_stale_edit_is_refused_and_kept() {
    let cluster = start_cluster().await;
    let client = cluster.client();
    create_module(&client, &[]).await;
    let mut app = console_editing(&client).await;
    let meanwhile = json!({"metadata": {"labels": {"touched": "elsewhere"}}});
    module_api(&client)
        .patch(MODULE, &PatchParams::default(), &Patch::Merge(&meanwhile))
        .await
        .expect("someone else writes");

    replace_value(&mut app, "accelerator", "beta");
    let typed = app.editor.as_ref().expect("editor").text();
    save(&mut app);
    let outcome = confirm_and_perform(&mut app, &client).await;

    let error = outcome.result.expect_err("stale");
    assert_eq!(error.code, Some(409));
    let editor = app.editor.as_ref().expect("the editor stays open");
    assert_eq!(editor.text(), typed, "the buffer is kept");
    assert_eq!(
        editor.message.as_deref(),
        Some(
            "Module acme/acme-accel changed on the server since you opened it; reopen to merge \
             (dry-run: nothing was changed)"
        )
    );
    let status = app.status.as_ref().expect("footer");
    assert_eq!(status.severity, Severity::Error);
    let module = module_api(&client).get(MODULE).await.expect("the Module");
    assert_eq!(module.spec.selector["accelerator"], "acme");
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_good_edit_is_applied_and_closes_the_editor() {
    let cluster = start_cluster().await;
    let client = cluster.client();
    create_module(&client, &[]).await;
    let mut app = console_editing(&client).await;

    replace_value(&mut app, "accelerator", "beta");
    save(&mut app);
    let outcome = confirm_and_perform(&mut app, &client).await;

    assert_eq!(
        outcome.result.as_deref(),
        Ok("Applied Module acme/acme-accel")
    );
    assert!(app.editor.is_none(), "success closes the editor");
    let status = app.status.as_ref().expect("footer");
    assert_eq!(
        (status.severity, status.text.as_str()),
        (Severity::Info, "Applied Module acme/acme-accel")
    );
    let module = module_api(&client).get(MODULE).await.expect("the Module");
    assert_eq!(module.spec.selector["accelerator"], "beta");
    let managers: Vec<String> = module
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter_map(|entry| entry.manager)
        .collect();
    assert!(managers.contains(&writes::FIELD_MANAGER.to_owned()));
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_second_esc_discards_an_edit() {
    let cluster = start_cluster().await;
    let client = cluster.client();
    create_module(&client, &[]).await;
    let mut app = console_editing(&client).await;
    type_text(&mut app, "# note ");
    press_with(&mut app, KeyCode::Esc, KeyModifiers::NONE);
    assert!(app.editor.as_ref().is_some_and(|e| e.notice().is_some()));
    assert!(render(&app).contains("unsaved changes: esc again to discard, ctrl-s to apply"));
    press_with(&mut app, KeyCode::Esc, KeyModifiers::NONE);
    assert!(app.editor.is_none());
    cluster.shutdown().await;
}

/// The annotations of the ImageCache `acme/warm`.
async fn cache_annotations(client: &Client) -> std::collections::BTreeMap<String, String> {
    let caches: Api<kmm_api::imagecache::ImageCache> = Api::namespaced(client.clone(), NS);
    caches
        .get("warm")
        .await
        .expect("the cache")
        .metadata
        .annotations
        .unwrap_or_default()
}

#[tokio::test]
async fn cache_work_is_asked_for_with_annotations_once() {
    use kmm_api::imagecache::REPULL_ANNOTATION;
    use kmm_api::imagecache::{PURGE_ANNOTATION, REFRESH_ANNOTATION};
    let cluster = start_cluster().await;
    let client = cluster.client();
    let caches: Api<kmm_api::imagecache::ImageCache> = Api::namespaced(client.clone(), NS);
    let cache = serde_json::from_value(json!({
        "apiVersion": "kubefledged.io/v1alpha2", "kind": "ImageCache",
        "metadata": {"name": "warm", "namespace": NS},
        "spec": {"cacheSpec": [{"images": ["nginx:1.27", "redis:7.4"]}]},
    }))
    .expect("an ImageCache");
    caches
        .create(&PostParams::default(), &cache)
        .await
        .expect("created");
    let target = Target::namespaced(Kind::ImageCache, NS, "warm");
    let repull = |image: Option<&str>, node: Option<&str>| WriteRequest::Repull {
        cache: target.clone(),
        image: image.map(str::to_owned),
        node: node.map(str::to_owned),
    };

    let message = perform(&client, repull(Some("nginx:1.27"), Some("worker-0")))
        .await
        .expect("re-pull of one cell");
    assert_eq!(
        message,
        "Re-pull requested: nginx:1.27 on worker-0 (ImageCache acme/warm)"
    );
    perform(&client, repull(Some("redis:7.4"), None))
        .await
        .expect("re-pull of one image everywhere");
    let again = perform(&client, repull(Some("nginx:1.27"), Some("worker-0")))
        .await
        .expect("asked twice");
    assert!(again.contains("already pending"), "{again}");
    let annotations = cache_annotations(&client).await;
    assert_eq!(
        annotations.get(REPULL_ANNOTATION).map(String::as_str),
        Some("nginx:1.27@worker-0,redis:7.4")
    );
    assert!(!annotations.contains_key(REFRESH_ANNOTATION));

    let message = perform(&client, repull(None, None)).await.expect("refresh");
    assert!(message.starts_with("Refresh requested"), "{message}");
    let first = cache_annotations(&client)
        .await
        .get(REFRESH_ANNOTATION)
        .cloned();
    assert!(first.is_some());
    let again = perform(&client, repull(None, None))
        .await
        .expect("refresh again");
    assert!(again.contains("already pending"), "{again}");
    assert_eq!(
        cache_annotations(&client)
            .await
            .get(REFRESH_ANNOTATION)
            .cloned(),
        first
    );

    let message = perform(
        &client,
        WriteRequest::Purge {
            cache: target.clone(),
        },
    )
    .await
    .expect("purge");
    assert!(message.starts_with("Purge requested"), "{message}");
    assert!(
        cache_annotations(&client)
            .await
            .contains_key(PURGE_ANNOTATION)
    );

    caches
        .delete("warm", &Default::default())
        .await
        .expect("deleted");
    let gone = perform(&client, repull(Some("nginx:1.27"), None))
        .await
        .expect_err("no cache, no write");
    assert_eq!(gone.message, "ImageCache acme/warm no longer exists");
    cluster.shutdown().await;
}

/// Confirm the pending write, perform it on the cluster and hand the outcome back to the console.
async fn confirm_write(app: &mut App, client: &Client) -> WriteOutcome {
    press_with(app, KeyCode::Char('y'), KeyModifiers::NONE);
    let requests = std::mem::take(&mut app.requests);
    let [Request::Write(request)] = requests.as_slice() else {
        panic!("one write expected, got {requests:?}");
    };
    let outcome = writes::perform(client, request.clone()).await;
    app.update(Action::Written(outcome.clone()));
    outcome
}

/// Feed the console the cluster's Modules, Nodes and PreflightValidations as the watches would.
async fn feed_preflight(app: &mut App, client: &Client) {
    let modules = module_api(client)
        .list(&Default::default())
        .await
        .expect("Modules");
    let nodes = Api::<k8s_openapi::api::core::v1::Node>::all(client.clone())
        .list(&Default::default())
        .await
        .expect("Nodes");
    let preflights = Api::<PreflightValidation>::all(client.clone())
        .list(&Default::default())
        .await
        .expect("PreflightValidations");
    app.update(Action::Data(KindSnapshot::Modules(
        modules.items.into_iter().map(Arc::new).collect(),
    )));
    app.update(Action::Data(KindSnapshot::Nodes(
        nodes.items.into_iter().map(Arc::new).collect(),
    )));
    app.update(Action::Data(KindSnapshot::PreflightValidations(
        preflights.items.into_iter().map(Arc::new).collect(),
    )));
}

#[tokio::test]
async fn the_preflight_pane_validates_a_kernel_and_has_its_builds_pushed() {
    const NEXT: &str = "5.14.0-362.8.1.el9_3.x86_64";
    let cluster = start_cluster().await;
    let client = cluster.client();
    let module: Module = serde_json::from_value(json!({
        "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "Module",
        "metadata": {"name": MODULE, "namespace": NS},
        "spec": {
            "selector": {"accelerator": "acme"},
            "moduleLoader": {"container": {
                "modprobe": {"moduleName": "acme_accel"},
                "kernelMappings": [{
                    "regexp": "^.+$",
                    "containerImage": "quay.io/acme/accel-kmod:${KERNEL_FULL_VERSION}",
                    "build": {"dockerfileConfigMap": {"name": "accel-dockerfile"}},
                }],
            }},
        },
    }))
    .expect("a Module");
    module_api(&client)
        .create(&PostParams::default(), &module)
        .await
        .expect("the Module is created");
    let session = Session {
        context: "embedded".to_owned(),
        contexts: vec!["embedded".to_owned()],
        embedded: true,
        engine: EngineMode::Off,
        readonly: false,
        engine_identity: None,
    };
    let mut app = App::new(session, Theme::monochrome(), Keymap::default(), None);
    feed_preflight(&mut app, &client).await;
    let preflights: Api<PreflightValidation> = Api::all(client.clone());

    // Typed: the PreflightValidation is created for the kernel, pushing off.
    press_with(&mut app, KeyCode::Char(':'), KeyModifiers::NONE);
    type_text(&mut app, &format!("preflight {NEXT}"));
    press_with(&mut app, KeyCode::Enter, KeyModifiers::NONE);
    assert!(
        matches!(&app.mode, Mode::Confirm(WriteRequest::ValidateKernel { create: true, kernel, .. }) if kernel == NEXT),
        "{:?} {:?}",
        app.mode,
        app.status
    );
    assert!(render(&app).contains(&format!("Validate every Module against kernel {NEXT}")));
    let outcome = confirm_write(&mut app, &client).await;
    assert!(outcome.result.is_ok(), "{outcome:?}");
    let created = preflights
        .get("preflight")
        .await
        .expect("the PreflightValidation");
    assert_eq!(created.spec.kernel_version, NEXT);
    assert!(!created.spec.push_built_image);

    // B: the validation pushes what it builds, after a dialog naming the Module.
    feed_preflight(&mut app, &client).await;
    assert_eq!(app.availability(Command::Build), Availability::Available);
    press_with(&mut app, KeyCode::Char('B'), KeyModifiers::NONE);
    assert!(
        matches!(
            &app.mode,
            Mode::Confirm(WriteRequest::PushBuiltImages { .. })
        ),
        "{:?} {:?}",
        app.mode,
        app.status
    );
    let dialog = render(&app);
    assert!(dialog.contains("Build and push"), "{dialog}");
    assert!(dialog.contains(&format!("{NS}/{MODULE}")), "{dialog}");
    let outcome = confirm_write(&mut app, &client).await;
    assert!(outcome.result.is_ok(), "{outcome:?}");
    assert!(
        preflights
            .get("preflight")
            .await
            .expect("read")
            .spec
            .push_built_image
    );
    feed_preflight(&mut app, &client).await;
    assert!(matches!(
        app.availability(Command::Build),
        Availability::Unavailable(why) if why.contains("already")
    ));

    // Picked: the node kernel's row moves the same PreflightValidation to it, pushing off again.
    let row = app
        .preflight
        .pane
        .kernels
        .iter()
        .position(|k| k.kernel == KERNEL)
        .expect("the nodes' kernel is offered");
    for _ in 0..row {
        press_with(&mut app, KeyCode::Down, KeyModifiers::NONE);
    }
    press_with(&mut app, KeyCode::Enter, KeyModifiers::NONE);
    assert!(
        matches!(&app.mode, Mode::Confirm(WriteRequest::ValidateKernel { create: false, kernel, .. }) if kernel == KERNEL),
        "{:?}",
        app.mode
    );
    let outcome = confirm_write(&mut app, &client).await;
    assert!(outcome.result.is_ok(), "{outcome:?}");
    let moved = preflights.get("preflight").await.expect("read");
    assert_eq!(moved.spec.kernel_version, KERNEL);
    assert!(!moved.spec.push_built_image);
    cluster.shutdown().await;
}

/// A rebuild from the fleet view goes to the hub: it raises the generation of the chosen images in the module's
/// ModuleImagesConfig there (found by the module controlling it, in whichever namespace), leaves the others, and on
/// a module no kmm-tui engine keeps images for (upstream's hub operator), raises its rebuild trigger instead.
#[tokio::test]
async fn a_rebuild_on_the_hub_raises_the_chosen_images_of_the_module_it_controls() {
    use kmm_api::hub::{DEFAULT_NAMESPACE, ManagedClusterModule};
    use kmm_cluster::fleet::{EmbeddedFleet, FleetOptions};

    let fleet = EmbeddedFleet::start(FleetOptions::new(1, 1))
        .await
        .expect("the fleet starts");
    let hub = fleet.hub().client();
    let modules: Api<ManagedClusterModule> = Api::all(hub.clone());
    let module = |name: &str| -> ManagedClusterModule {
        serde_json::from_value(json!({
            "apiVersion": "hub.kmm.sigs.x-k8s.io/v1beta1", "kind": "ManagedClusterModule",
            "metadata": {"name": name},
            "spec": {"spokeNamespace": NS, "selector": {}, "moduleSpec": {"selector": {}}},
        }))
        .expect("an MCM")
    };
    let ours = modules
        .create(&PostParams::default(), &module("accel"))
        .await
        .expect("creating the module");
    let mics: Api<ModuleImagesConfig> = Api::namespaced(hub.clone(), DEFAULT_NAMESPACE);
    let mic: ModuleImagesConfig = serde_json::from_value(json!({
        "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "ModuleImagesConfig",
        "metadata": {"name": "accel-fleet", "ownerReferences": [{
            "apiVersion": "hub.kmm.sigs.x-k8s.io/v1beta1", "kind": "ManagedClusterModule",
            "name": "accel", "uid": ours.uid().expect("a uid"), "controller": true}]},
        "spec": {"images": [
            {"image": EXISTING, "kernelVersion": KERNEL, "generation": 2},
            {"image": ABSENT, "kernelVersion": KERNEL},
        ]},
    }))
    .expect("a MIC");
    mics.create(&PostParams::default(), &mic)
        .await
        .expect("creating the hub's MIC");
    let rebuild = |name: &str, images: &[&str]| WriteRequest::RebuildOnHub {
        hub: "hub".to_owned(),
        module: Target::cluster(Kind::ManagedClusterModule, name),
        images: images.iter().map(|i| (*i).to_owned()).collect(),
        clusters: Vec::new(),
    };
    let outcome = writes::perform(&hub, rebuild("accel", &[EXISTING])).await;
    let said = outcome.result.expect("the rebuild is written");
    assert!(said.contains("generation 2→3"), "{said}");
    let generations: Vec<Option<i64>> = mics
        .get("accel-fleet")
        .await
        .expect("the MIC")
        .spec
        .images
        .iter()
        .map(|image| image.generation)
        .collect();
    assert_eq!(generations, [Some(3), None], "only the chosen image moves");

    // Upstream's operator keeps no such MIC and writes counts only: the module's trigger moves.
    modules
        .create(&PostParams::default(), &module("upstream"))
        .await
        .expect("creating the upstream module");
    let outcome = writes::perform(&hub, rebuild("upstream", &[])).await;
    let said = outcome.result.expect("the trigger is written");
    assert!(said.contains("imageRebuildTriggerGeneration 0→1"), "{said}");
    let trigger = modules
        .get("upstream")
        .await
        .expect("the module")
        .spec
        .module_spec
        .image_rebuild_trigger_generation;
    assert_eq!(trigger, Some(1));

    // A module that is not there says so, naming it.
    let missing = writes::perform(&hub, rebuild("nowhere", &[])).await;
    let error = missing.result.expect_err("nothing to rebuild");
    assert!(error.message.contains("nowhere"), "{}", error.message);
    fleet.shutdown().await;
}
