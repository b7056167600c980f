//! The MIC and MBSC reconcilers on their own: ModuleImagesConfigs written by hand, pull pods proving images exist
//! or not, builds and signs producing the missing ones, and every answer kept in the MIC status — through kills,
//! generation bumps and rebuild triggers.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kmm_api::kmm::labels;
use kmm_api::kmm::{BuildSignAction, ImageState, ModuleBuildSignConfig, ModuleImagesConfig};
use kmm_engine::{kmm::mbsc, kmm::mic, runtime::nodes};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::common::{Harness, eventually, wait_for};

const NS: &str = "acme";
const MIC: &str = "acme";
const KERNEL: &str = "5.14.0-284.30.1.el9_2.x86_64";
const KERNEL_DNS: &str = "5-14-0-284-30-1-el9-2-x86-64";
const OTHER_KERNEL: &str = "5.14.0-362.8.1.el9_3.x86_64";
const OTHER_KERNEL_DNS: &str = "5-14-0-362-8-1-el9-3-x86-64";
/// In the registry from the start.
const EXISTING: &str = "quay.io/acme/kmod:5.14.0-284.30.1.el9_2.x86_64";
/// Nowhere, and nothing builds it.
const ABSENT: &str = "quay.io/acme/absent:5.14.0-284.30.1.el9_2.x86_64";
/// Missing until built.
const BUILT: &str = "quay.io/acme/built:5.14.0-284.30.1.el9_2.x86_64";
/// Missing until built and signed.
const SIGNED: &str = "quay.io/acme/signed:5.14.0-362.8.1.el9_3.x86_64";
/// Its first build fails (a `buildFailure` fault of the scenario).
const BROKEN: &str = "quay.io/acme/broken:5.14.0-284.30.1.el9_2.x86_64";

/// The cluster of `images.yaml` with only the MIC and MBSC reconcilers running.
async fn start() -> Harness {
    let mut harness = Harness::start("images.yaml").await;
    start_reconcilers(&mut harness);
    harness
}

fn start_reconcilers(harness: &mut Harness) {
    harness.start_with(|ctx, stop| async move {
        tokio::join!(mic::run(ctx.clone(), stop.clone()), mbsc::run(ctx, stop));
    });
}

fn image(image: &str, kernel: &str) -> Value {
    json!({"image": image, "kernelVersion": kernel})
}

fn built(image: &str, kernel: &str) -> Value {
    json!({
        "image": image,
        "kernelVersion": kernel,
        "build": {
            "dockerfileConfigMap": {"name": "kmod-dockerfile"},
            "buildArgs": [{"name": "EXTRA", "value": "yes"}],
            "baseImageRegistryTLS": {"insecure": true},
        },
    })
}

fn signed(mut image: Value, unsigned: Option<&str>) -> Value {
    image["sign"] = json!({
        "keySecret": {"name": "signing-key"},
        "certSecret": {"name": "signing-cert"},
        "filesToSign": [format!("/opt/lib/modules/{OTHER_KERNEL}/acme.ko")],
    });
    if let Some(unsigned) = unsigned {
        image["sign"]["unsignedImage"] = json!(unsigned);
    }
    image
}

async fn create_mic(client: &Client, spec: Value) -> ModuleImagesConfig {
    let mic: ModuleImagesConfig = serde_json::from_value(json!({
        "apiVersion": "kmm.sigs.x-k8s.io/v1beta1",
        "kind": "ModuleImagesConfig",
        "metadata": {"name": MIC, "namespace": NS},
        "spec": spec,
    }))
    .expect("a MIC");
    Api::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &mic)
        .await
        .expect("the MIC is created")
}

async fn patch_mic_spec(client: &Client, spec: Value) {
    Api::<ModuleImagesConfig>::namespaced(client.clone(), NS)
        .patch(
            MIC,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": spec })),
        )
        .await
        .expect("the MIC spec is patched");
}

async fn get_mic(client: &Client) -> ModuleImagesConfig {
    Api::<ModuleImagesConfig>::namespaced(client.clone(), NS)
        .get(MIC)
        .await
        .expect("the MIC")
}

/// The recorded states as (image, state, observed generation).
fn states(mic: &ModuleImagesConfig) -> Vec<(String, ImageState, Option<i64>)> {
    mic.status
        .iter()
        .flat_map(|s| &s.images_states)
        .map(|s| (s.image.clone(), s.status, s.observed_generation))
        .collect()
}

fn ready(mic: &ModuleImagesConfig) -> Option<&Condition> {
    mic.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
}

/// Wait until the MIC records exactly these states.
async fn wait_states(client: &Client, secs: u64, expected: &[(&str, ImageState, i64)]) {
    let expected: Vec<(String, ImageState, Option<i64>)> = expected
        .iter()
        .map(|(image, state, generation)| (image.to_string(), *state, Some(*generation)))
        .collect();
    eventually(secs, &format!("MIC states {expected:?}"), || {
        let expected = expected.clone();
        async move { states(&get_mic(client).await) == expected }
    })
    .await;
}

/// Wait until the MIC's Ready condition has `reason` and return it.
async fn wait_ready(client: &Client, secs: u64, reason: &str) -> Condition {
    wait_for(secs, &format!("Ready reason {reason}"), || async move {
        ready(&get_mic(client).await)
            .filter(|c| c.reason == reason)
            .cloned()
    })
    .await
}

/// Reasons and notes of the events about `object`.
async fn events(client: &Client, object: &str) -> Vec<(String, String)> {
    Api::<Event>::namespaced(client.clone(), NS)
        .list(&ListParams::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| {
            e.regarding
                .as_ref()
                .and_then(|r| r.name.as_deref())
                .is_some_and(|n| n == object)
        })
        .map(|e| (e.reason.unwrap_or_default(), e.note.unwrap_or_default()))
        .collect()
}

/// Reasons of the events about `object`.
async fn event_reasons(client: &Client, object: &str) -> Vec<String> {
    events(client, object)
        .await
        .into_iter()
        .map(|(reason, _)| reason)
        .collect()
}

/// The job a pod does: `pull <image>`, `BuildImage <kernel>` or `SignImage <kernel>`.
fn job(pod: &Pod) -> Option<String> {
    let labels = pod.labels();
    if labels.contains_key(labels::PULL_POD_TYPE) {
        let image = pod.spec.as_ref()?.containers.first()?.image.clone()?;
        return Some(format!("pull {image}"));
    }
    let action = labels.get(labels::RESOURCE_TYPE)?;
    Some(format!("{action} {}", labels.get(labels::TARGET_KERNEL)?))
}

/// Every pod the namespace showed, by job: each pod's first and last versions, and the most pods alive at once.
#[derive(Default)]
struct Seen {
    first: Vec<Pod>,
    last: BTreeMap<String, Pod>,
    alive: BTreeMap<String, Pod>,
    most_at_once: BTreeMap<String, usize>,
    listed: bool,
}

impl Seen {
    fn apply(&mut self, pod: Pod) {
        let uid = pod.uid().unwrap_or_default();
        if !self.last.contains_key(&uid) {
            self.first.push(pod.clone());
        }
        self.last.insert(uid, pod.clone());
        self.alive.insert(pod.name_any(), pod);
        let mut count: BTreeMap<String, usize> = BTreeMap::new();
        for job in self.alive.values().filter_map(job) {
            *count.entry(job).or_default() += 1;
        }
        for (job, n) in count {
            let most = self.most_at_once.entry(job).or_default();
            *most = (*most).max(n);
        }
    }
}

/// A watch on the namespace's pods, recording every version.
struct PodLog {
    seen: Arc<Mutex<Seen>>,
    task: JoinHandle<()>,
}

impl PodLog {
    async fn start(client: &Client) -> Self {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let record = seen.clone();
        let api = Api::<Pod>::namespaced(client.clone(), NS);
        let task = tokio::spawn(async move {
            let mut events = std::pin::pin!(watcher(api, watcher::Config::default()));
            while let Some(event) = events.next().await {
                let mut seen = record.lock().expect("pod log");
                match event {
                    Ok(watcher::Event::Apply(pod) | watcher::Event::InitApply(pod)) => {
                        seen.apply(pod)
                    }
                    Ok(watcher::Event::Delete(pod)) => {
                        seen.alive.remove(&pod.name_any());
                    }
                    Ok(watcher::Event::InitDone) => seen.listed = true,
                    Ok(watcher::Event::Init) | Err(_) => {}
                }
            }
        });
        let log = Self { seen, task };
        eventually(10, "the pod watch lists", || async {
            log.seen.lock().expect("pod log").listed
        })
        .await;
        log
    }

    /// First versions of the pods that did `job`, in order of appearance.
    fn pods(&self, job: &str) -> Vec<Pod> {
        let seen = self.seen.lock().expect("pod log");
        seen.first
            .iter()
            .filter(|p| self::job(p).as_deref() == Some(job))
            .cloned()
            .collect()
    }

    /// The last version seen of a pod.
    fn last(&self, pod: &Pod) -> Option<Pod> {
        let seen = self.seen.lock().expect("pod log");
        seen.last.get(&pod.uid().unwrap_or_default()).cloned()
    }

    /// Pods doing `job` that exist now.
    fn alive(&self, job: &str) -> usize {
        let seen = self.seen.lock().expect("pod log");
        seen.alive
            .values()
            .filter(|p| self::job(p).as_deref() == Some(job))
            .count()
    }

    fn most_at_once(&self) -> BTreeMap<String, usize> {
        self.seen.lock().expect("pod log").most_at_once.clone()
    }
}

impl Drop for PodLog {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn pull(image: &str) -> String {
    format!("pull {image}")
}

fn args(pod: &Pod) -> Vec<String> {
    pod.spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .and_then(|c| c.args.clone())
        .unwrap_or_default()
}

/// Whether `args` holds `flag` immediately followed by `value`.
fn has_pair(args: &[String], flag: &str, value: &str) -> bool {
    args.windows(2).any(|w| w[0] == flag && w[1] == value)
}

#[tokio::test(start_paused = true)]
async fn an_existing_image_is_proved_by_one_pull_pod_then_recorded() {
    let harness = start().await;
    let client = harness.client();
    let log = PodLog::start(&client).await;
    let created = create_mic(
        &client,
        json!({
            "images": [image(EXISTING, KERNEL)],
            "imageRepoSecret": {"name": "regcred"},
            "imagePullPolicy": "Always",
            "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
        }),
    )
    .await;

    wait_states(&client, 60, &[(EXISTING, ImageState::Exists, 1)]).await;
    let mic = get_mic(&client).await;
    let status = mic.status.as_ref().expect("status");
    assert_eq!(
        (status.existing_images, status.total_images),
        (Some(1), Some(1))
    );
    let condition = ready(&mic).expect("Ready");
    assert_eq!(
        (condition.status.as_str(), condition.reason.as_str()),
        ("True", "ImagesExist")
    );
    assert_eq!(condition.observed_generation, mic.metadata.generation);

    let pods = log.pods(&pull(EXISTING));
    assert_eq!(pods.len(), 1, "one pull pod");
    let pod = &pods[0];
    assert_eq!(pod.name_any(), mic::pull_pod_name(MIC, EXISTING, 1));
    assert_eq!(pod.labels()[labels::IMAGE_OWNER], MIC);
    assert_eq!(pod.labels()[labels::PULL_POD_TYPE], "until-success");
    assert_eq!(
        pod.annotations()["kmm.node.kubernetes.io/image-generation"],
        "1"
    );
    let owner = &pod.owner_references()[0];
    assert_eq!(
        (
            Some(owner.uid.clone()),
            owner.controller,
            owner.kind.as_str()
        ),
        (created.uid(), Some(true), "ModuleImagesConfig")
    );
    let spec = pod.spec.as_ref().expect("pod spec");
    let container = &spec.containers[0];
    assert_eq!(container.name, "puller");
    assert_eq!(container.image.as_deref(), Some(EXISTING));
    assert_eq!(
        container.command.clone().unwrap_or_default(),
        ["/bin/sh", "-c", "exit 0"]
    );
    assert_eq!(container.image_pull_policy.as_deref(), Some("Always"));
    assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
    assert_eq!(
        spec.image_pull_secrets.clone().unwrap_or_default()[0].name,
        "regcred"
    );
    let tolerations = spec.tolerations.clone().unwrap_or_default();
    assert_eq!(tolerations[0].key.as_deref(), Some("dedicated"));
    assert_eq!(tolerations[1..], nodes::internal_tolerations()[..]);
    assert!(spec.node_selector.is_none());
    let finished = log.last(pod).expect("last version");
    assert_eq!(
        finished.status.and_then(|s| s.phase).as_deref(),
        Some("Succeeded")
    );
    eventually(30, "the pull pod is deleted", || async {
        log.alive(&pull(EXISTING)) == 0
    })
    .await;
    assert!(
        event_reasons(&client, MIC)
            .await
            .contains(&"ImageExists".to_owned())
    );
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_missing_image_is_awaited_unless_the_module_says_not_to_wait() {
    let harness = start().await;
    let client = harness.client();
    let log = PodLog::start(&client).await;
    create_mic(&client, json!({"images": [image(ABSENT, KERNEL)]})).await;

    let condition = wait_ready(&client, 60, "ImageMissing").await;
    assert_eq!(condition.status, "False");
    assert!(
        condition
            .message
            .starts_with(&format!("{ABSENT}: not in the registry ("))
            && (condition.message.contains("ImagePullBackOff")
                || condition.message.contains("ErrImagePull"))
            && condition.message.ends_with("waiting for it to appear"),
        "{}",
        condition.message
    );
    tokio::time::sleep(Duration::from_secs(120)).await;
    let pods = log.pods(&pull(ABSENT));
    assert_eq!(pods.len(), 1, "the until-success pod keeps waiting");
    assert_eq!(pods[0].labels()[labels::PULL_POD_TYPE], "until-success");
    assert_eq!(log.alive(&pull(ABSENT)), 1);
    assert!(states(&get_mic(&client).await).is_empty());

    let mut skip = image(ABSENT, KERNEL);
    skip["skipWaitMissingImage"] = json!(true);
    patch_mic_spec(&client, json!({ "images": [skip] })).await;
    wait_states(&client, 60, &[(ABSENT, ImageState::DoesNotExist, 1)]).await;
    let pods = log.pods(&pull(ABSENT));
    assert_eq!(
        pods.len(),
        2,
        "the waiting pod was replaced by a one-time pull"
    );
    assert_eq!(pods[1].labels()[labels::PULL_POD_TYPE], "one-time-pull");
    eventually(30, "the one-time pull pod is deleted", || async {
        log.alive(&pull(ABSENT)) == 0
    })
    .await;
    let condition = wait_ready(&client, 10, "ImageMissing").await;
    assert_eq!(
        condition.message,
        format!(
            "{ABSENT}: not in the registry and nothing builds it; a new image generation checks again"
        )
    );
    assert!(
        event_reasons(&client, MIC)
            .await
            .contains(&"ImageMissing".to_owned())
    );
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn missing_images_are_built_and_signed_then_exist() {
    let harness = start().await;
    let client = harness.client();
    let log = PodLog::start(&client).await;
    let created = create_mic(
        &client,
        json!({
            "images": [built(BUILT, KERNEL), signed(built(SIGNED, OTHER_KERNEL), None)],
            "pushBuiltImage": true,
        }),
    )
    .await;

    wait_states(
        &client,
        60,
        &[
            (BUILT, ImageState::NeedsBuilding, 1),
            (SIGNED, ImageState::NeedsBuilding, 1),
        ],
    )
    .await;
    let building = wait_ready(&client, 10, "Building").await;
    assert!(
        building
            .message
            .contains(&format!("{BUILT}: building (pod acme-build-{KERNEL_DNS}")),
        "{}",
        building.message
    );
    let mbsc = Api::<ModuleBuildSignConfig>::namespaced(client.clone(), NS)
        .get(MIC)
        .await
        .expect("the MBSC");
    let entries: Vec<(&str, BuildSignAction, Option<i64>)> = mbsc
        .spec
        .images
        .iter()
        .map(|e| (e.spec.image.as_str(), e.action, e.generation))
        .collect();
    assert_eq!(
        entries,
        [
            (BUILT, BuildSignAction::BuildImage, Some(1)),
            (SIGNED, BuildSignAction::BuildImage, Some(1)),
        ]
    );
    assert!(mbsc.spec.push_built_image);
    assert_eq!(
        mbsc.owner_references()[0].uid,
        created.uid().unwrap_or_default()
    );

    wait_states(
        &client,
        180,
        &[
            (BUILT, ImageState::Exists, 1),
            (SIGNED, ImageState::Exists, 1),
        ],
    )
    .await;
    let world = harness.cluster.simulation().expect("simulation").world();
    assert!(world.registry.exists(BUILT) && world.registry.exists(SIGNED));
    assert_eq!(wait_ready(&client, 10, "ImagesExist").await.status, "True");

    let builds = log.pods(&format!("BuildImage {KERNEL_DNS}"));
    assert_eq!(builds.len(), 1, "one build pod per kernel");
    let build = &builds[0];
    assert_eq!(build.name_any(), format!("acme-build-{KERNEL_DNS}"));
    let build_labels = build.labels();
    assert_eq!(build_labels[labels::MODULE_NAME], MIC);
    assert_eq!(build_labels["app.kubernetes.io/component"], "BuildImage");
    assert_eq!(build_labels["app.kubernetes.io/part-of"], "kmm");
    assert_eq!(build.annotations()[labels::LAST_HASH].len(), 64);
    let spec = build.spec.as_ref().expect("build pod spec");
    assert_eq!(spec.containers[0].name, "kaniko");
    assert_eq!(
        spec.containers[0].image.as_deref(),
        Some("gcr.io/kaniko-project/executor:latest")
    );
    assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
    let build_args = args(build);
    assert!(has_pair(
        &build_args,
        "--dockerfile",
        "/workspace/Dockerfile"
    ));
    assert!(has_pair(&build_args, "--context", "dir:///workspace"));
    assert!(has_pair(&build_args, "--destination", BUILT));
    assert!(build_args.contains(&"--insecure-pull".to_owned()));
    for arg in [
        "EXTRA=yes".to_owned(),
        format!("KERNEL_VERSION={KERNEL}"),
        format!("KERNEL_FULL_VERSION={KERNEL}"),
        format!("MOD_NAME={MIC}"),
        format!("MOD_NAMESPACE={NS}"),
    ] {
        assert!(
            has_pair(&build_args, "--build-arg", &arg),
            "{arg} in {build_args:?}"
        );
    }
    let volumes = spec.volumes.clone().unwrap_or_default();
    assert!(volumes.iter().any(|v| {
        v.config_map
            .as_ref()
            .is_some_and(|c| c.name == "kmod-dockerfile")
    }));

    let signs = log.pods(&format!("SignImage {OTHER_KERNEL_DNS}"));
    assert_eq!(signs.len(), 1, "one sign pod");
    let sign = &signs[0];
    assert_eq!(sign.name_any(), format!("acme-sign-{OTHER_KERNEL_DNS}"));
    let dockerfile = &sign.annotations()[labels::DOCKERFILE];
    assert!(
        dockerfile.starts_with(&format!("FROM {SIGNED} AS source\n")),
        "{dockerfile}"
    );
    assert!(
        dockerfile.contains("sign-file sha256 /run/secrets/key/key.pem /run/secrets/cert/cert.pem")
    );
    assert!(has_pair(&args(sign), "--destination", SIGNED));
    assert_eq!(
        log.pods(&format!("SignImage {KERNEL_DNS}")).len(),
        0,
        "an image without a sign section is not signed"
    );
    eventually(30, "succeeded build and sign pods are deleted", || async {
        log.alive(&format!("BuildImage {KERNEL_DNS}")) == 0
            && log.alive(&format!("SignImage {OTHER_KERNEL_DNS}")) == 0
    })
    .await;
    let mbsc_events = event_reasons(&client, MIC).await;
    for reason in [
        "BuildCreated",
        "BuildSucceeded",
        "SignCreated",
        "SignSucceeded",
        "BuildRequested",
        "SignRequested",
        "ImageExists",
    ] {
        assert!(
            mbsc_events.iter().any(|r| r == reason),
            "{reason} in {mbsc_events:?}"
        );
    }
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_failed_build_is_reported_and_retried_only_for_a_new_generation() {
    let harness = start().await;
    let client = harness.client();
    let log = PodLog::start(&client).await;
    create_mic(
        &client,
        json!({"images": [built(BROKEN, KERNEL)], "pushBuiltImage": true}),
    )
    .await;

    wait_states(&client, 180, &[(BROKEN, ImageState::DoesNotExist, 1)]).await;
    let condition = wait_ready(&client, 10, "BuildFailed").await;
    assert!(
        condition.message.starts_with(&format!(
            "{BROKEN}: build pod acme-build-{KERNEL_DNS} failed: error building image"
        )),
        "{}",
        condition.message
    );
    tokio::time::sleep(Duration::from_secs(600)).await;
    let job = format!("BuildImage {KERNEL_DNS}");
    assert_eq!(log.pods(&job).len(), 1, "no retry without a new generation");
    assert_eq!(log.alive(&job), 1, "the failed pod stays for inspection");
    assert!(
        event_reasons(&client, MIC)
            .await
            .contains(&"BuildFailed".to_owned())
    );

    let mut again = built(BROKEN, KERNEL);
    again["generation"] = json!(2);
    patch_mic_spec(&client, json!({ "images": [again] })).await;
    wait_states(&client, 240, &[(BROKEN, ImageState::Exists, 2)]).await;
    assert_eq!(
        log.pods(&job).len(),
        2,
        "one new build for the new generation"
    );
    assert_eq!(log.pods(&pull(BROKEN)).len(), 2, "one check per generation");
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_build_without_its_dockerfile_waits_for_it_and_says_why() {
    let harness = start().await;
    let client = harness.client();
    let log = PodLog::start(&client).await;
    let mut recipe = built(BUILT, KERNEL);
    recipe["build"]["dockerfileConfigMap"]["name"] = json!("late-dockerfile");
    create_mic(&client, json!({"images": [recipe], "pushBuiltImage": true})).await;

    wait_states(&client, 60, &[(BUILT, ImageState::NeedsBuilding, 1)]).await;
    let why = wait_for(60, "a BuildFailed event", || async {
        events(&client, MIC)
            .await
            .into_iter()
            .find(|(reason, _)| reason == "BuildFailed")
            .map(|(_, note)| note)
    })
    .await;
    assert!(why.contains("ConfigMap acme/late-dockerfile"), "{why}");
    tokio::time::sleep(Duration::from_secs(30)).await;
    let job = format!("BuildImage {KERNEL_DNS}");
    assert!(
        log.pods(&job).is_empty(),
        "no build pod without a Dockerfile"
    );
    let condition = wait_ready(&client, 10, "Building").await;
    assert!(
        condition.message.ends_with("not started yet)"),
        "{}",
        condition.message
    );

    let dockerfile = serde_json::from_value(json!({
        "metadata": {"name": "late-dockerfile", "namespace": NS},
        "data": {"dockerfile": "FROM quay.io/acme/base-builder:9.3\n"},
    }))
    .expect("a ConfigMap");
    Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &dockerfile)
        .await
        .expect("the ConfigMap is created");
    wait_states(&client, 240, &[(BUILT, ImageState::Exists, 1)]).await;
    assert_eq!(log.pods(&job).len(), 1);
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_new_generation_checks_an_existing_image_again() {
    let harness = start().await;
    let client = harness.client();
    let log = PodLog::start(&client).await;
    create_mic(&client, json!({"images": [image(EXISTING, KERNEL)]})).await;
    wait_states(&client, 60, &[(EXISTING, ImageState::Exists, 1)]).await;

    let mut bumped = image(EXISTING, KERNEL);
    bumped["generation"] = json!(3);
    patch_mic_spec(&client, json!({ "images": [bumped] })).await;
    wait_states(&client, 60, &[(EXISTING, ImageState::Exists, 3)]).await;
    let names: Vec<String> = log
        .pods(&pull(EXISTING))
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    assert_eq!(
        names,
        [
            mic::pull_pod_name(MIC, EXISTING, 1),
            mic::pull_pod_name(MIC, EXISTING, 3)
        ]
    );
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_rebuild_trigger_forgets_every_answer_and_rebuilds_what_is_gone() {
    let harness = start().await;
    let client = harness.client();
    let log = PodLog::start(&client).await;
    create_mic(
        &client,
        json!({"images": [image(EXISTING, KERNEL), built(BUILT, OTHER_KERNEL)], "pushBuiltImage": true}),
    )
    .await;
    wait_states(
        &client,
        180,
        &[
            (EXISTING, ImageState::Exists, 1),
            (BUILT, ImageState::Exists, 1),
        ],
    )
    .await;
    let mbscs = Api::<ModuleBuildSignConfig>::namespaced(client.clone(), NS);
    let first_mbsc = mbscs.get(MIC).await.expect("the MBSC").uid();
    let world = harness.cluster.simulation().expect("simulation").world();
    assert!(
        world.registry.remove(BUILT),
        "the registry loses the built image"
    );

    patch_mic_spec(&client, json!({"imageRebuildTriggerGeneration": 1})).await;
    let build_job = format!("BuildImage {OTHER_KERNEL_DNS}");
    eventually(240, "the lost image is rebuilt", || async {
        let mic = get_mic(&client).await;
        mic.status
            .as_ref()
            .is_some_and(|s| s.image_rebuild_trigger_generation == Some(1))
            && log.pods(&build_job).len() == 2
            && states(&mic)
                == [
                    (EXISTING.to_owned(), ImageState::Exists, Some(1)),
                    (BUILT.to_owned(), ImageState::Exists, Some(1)),
                ]
    })
    .await;
    assert_eq!(
        log.pods(&pull(EXISTING)).len(),
        2,
        "the existing image was checked again"
    );
    assert!(world.registry.exists(BUILT));
    let second_mbsc = mbscs.get(MIC).await.expect("a new MBSC").uid();
    assert_ne!(
        first_mbsc, second_mbsc,
        "the MBSC and its outcomes were replaced"
    );
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_pull_pod_whose_command_fails_still_proves_the_image_and_is_deleted() {
    let mut harness = Harness::start("images.yaml").await;
    let client = harness.client();
    let log = PodLog::start(&client).await;
    let created = create_mic(&client, json!({"images": [image(EXISTING, KERNEL)]})).await;
    // The image pulls, but its command fails, as an image without /bin/sh would.
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {
            "name": mic::pull_pod_name(MIC, EXISTING, 1),
            "namespace": NS,
            "labels": {labels::IMAGE_OWNER: MIC, labels::PULL_POD_TYPE: "until-success"},
            "annotations": {"kmm.node.kubernetes.io/image-generation": "1", "sim.kmm-tui.io/exit-code": "127"},
            "ownerReferences": [{"apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "ModuleImagesConfig",
                                 "name": MIC, "uid": created.uid(), "controller": true}],
        },
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "puller", "image": EXISTING, "command": ["/bin/sh", "-c", "exit 0"]}],
        },
    }))
    .expect("a pod");
    let pod = Api::<Pod>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &pod)
        .await
        .expect("the pull pod is created");
    eventually(60, "the pull pod fails", || async {
        log.last(&pod)
            .and_then(|p| p.status?.phase)
            .is_some_and(|phase| phase == "Failed")
    })
    .await;

    start_reconcilers(&mut harness);
    wait_states(&client, 60, &[(EXISTING, ImageState::Exists, 1)]).await;
    eventually(30, "the failed pull pod is deleted", || async {
        log.alive(&pull(EXISTING)) == 0
    })
    .await;
    assert_eq!(log.pods(&pull(EXISTING)).len(), 1, "no second check");
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn killed_and_restarted_reconcilers_never_run_two_pods_for_one_job() {
    let mut harness = start().await;
    let client = harness.client();
    let log = PodLog::start(&client).await;
    create_mic(
        &client,
        json!({
            "images": [
                image(EXISTING, KERNEL),
                built(BUILT, KERNEL),
                signed(built(SIGNED, OTHER_KERNEL), None),
            ],
            "pushBuiltImage": true,
        }),
    )
    .await;
    for millis in [
        300, 1700, 900, 2500, 500, 3100, 1200, 700, 2200, 400, 1500, 2800,
    ] {
        tokio::time::sleep(Duration::from_millis(millis)).await;
        harness.kill_engine().await;
        tokio::time::sleep(Duration::from_millis(millis / 3)).await;
        start_reconcilers(&mut harness);
    }
    wait_states(
        &client,
        240,
        &[
            (EXISTING, ImageState::Exists, 1),
            (BUILT, ImageState::Exists, 1),
            (SIGNED, ImageState::Exists, 1),
        ],
    )
    .await;
    let most = log.most_at_once();
    assert!(
        most.values().all(|n| *n == 1),
        "at most one pod per job at any time: {most:?}"
    );
    let jobs: BTreeSet<String> = [
        pull(EXISTING),
        pull(BUILT),
        pull(SIGNED),
        format!("BuildImage {KERNEL_DNS}"),
        format!("BuildImage {OTHER_KERNEL_DNS}"),
        format!("SignImage {OTHER_KERNEL_DNS}"),
    ]
    .into();
    assert_eq!(most.keys().cloned().collect::<BTreeSet<_>>(), jobs);
    for job in &jobs {
        assert_eq!(log.pods(job).len(), 1, "{job} ran once");
    }
    harness.shutdown().await;
}
