//! Rows of the Images pane and of a Module's image table: each image of each ModuleImagesConfig, with its state,
//! the generation asked for and answered, and the pod working on it.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

use crate::tui::data::ClusterData;
use kmm_api::kmm::labels;
use kmm_api::kmm::{ImageState, ModuleImagesConfig};
use kmm_engine::kmm::kernel;
use kmm_engine::kmm::mic::pods::{PullAnswer, pull_answer};

use super::{Health, age, matches_filter};

/// The pod working on an image, if any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImagePod {
    /// `pull`, `build` or `sign`.
    pub role: &'static str,
    /// The pod's phase (`Pending`, `Running`, `Succeeded`, `Failed`).
    pub phase: String,
    /// Why the kubelet cannot pull the image, for a pull pod it cannot pull (`ImagePullBackOff: not found`): the
    /// same answer the engine judges the image by, so the pane and the Module tell the same story.
    pub pull_error: Option<String>,
}

impl ImagePod {
    /// The pod as a cell: its role and phase, or the pull error that keeps it pending.
    pub fn summary(&self) -> String {
        format!(
            "{} {}",
            self.role,
            self.pull_error.as_deref().unwrap_or(&self.phase)
        )
    }
}

/// One image of one Module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageRow {
    /// The Module's namespace.
    pub namespace: String,
    /// The Module's (and its ModuleImagesConfig's) name.
    pub module: String,
    /// The image reference.
    pub image: String,
    /// The kernel the image is for.
    pub kernel: String,
    /// The recorded state; `None` while the first check runs.
    pub state: Option<ImageState>,
    /// The generation the spec asks for.
    pub generation: i64,
    /// The generation the state answers.
    pub observed_generation: Option<i64>,
    /// The newest pod working on the image.
    pub pod: Option<ImagePod>,
    /// Age of the ModuleImagesConfig.
    pub age: String,
    /// Overall state.
    pub health: Health,
}

impl ImageRow {
    /// The state as the pane prints it: `PullFailing` while the kubelet cannot pull the image, the recorded state,
    /// or `Checking` while a newer generation is open.
    pub fn state_label(&self) -> &'static str {
        if self.pull_failing() {
            return "PullFailing";
        }
        if self.observed_generation != Some(self.generation) && self.pod.is_some() {
            return "Checking";
        }
        match self.state {
            Some(ImageState::Exists) => "Exists",
            Some(ImageState::DoesNotExist) => "DoesNotExist",
            Some(ImageState::NeedsBuilding) => "NeedsBuilding",
            Some(ImageState::NeedsSigning) => "NeedsSigning",
            None => "Checking",
        }
    }

    /// Whether the newest pull pod of the image cannot pull it.
    pub fn pull_failing(&self) -> bool {
        self.pod
            .as_ref()
            .is_some_and(|pod| pod.pull_error.is_some())
    }

    /// The text the `/` filter searches.
    pub fn matches(&self, needle: &str) -> bool {
        matches_filter(
            needle,
            &[
                &self.namespace,
                &self.module,
                &self.image,
                &self.kernel,
                self.state_label(),
            ],
        )
    }
}

/// KMM pods by the namespace and name of the Module (or MIC) they work for.
pub struct PodIndex<'a> {
    by_owner: HashMap<(&'a str, &'a str), Vec<&'a Arc<Pod>>>,
}

impl<'a> PodIndex<'a> {
    /// Index the pull, build and sign pods of `data`.
    pub fn new(data: &'a ClusterData) -> PodIndex<'a> {
        let mut by_owner: HashMap<(&str, &str), Vec<&Arc<Pod>>> = HashMap::new();
        for pod in &data.pods {
            let labels = pod.metadata.labels.as_ref();
            let owner = labels.and_then(|l| {
                l.get(labels::IMAGE_OWNER)
                    .or_else(|| l.get(labels::RESOURCE_TYPE).and(l.get(labels::MODULE_NAME)))
            });
            if let Some(owner) = owner {
                let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
                by_owner.entry((namespace, owner)).or_default().push(pod);
            }
        }
        PodIndex { by_owner }
    }

    /// The newest pod working on `image` (for `kernel`) of the Module `namespace/module`.
    fn newest(
        &self,
        namespace: &str,
        module: &str,
        image: &str,
        kernel_version: &str,
    ) -> Option<ImagePod> {
        let pods = self.by_owner.get(&(namespace, module))?;
        let safe_kernel = kernel::dns_safe(kernel_version);
        pods.iter()
            .filter_map(|pod| {
                let labels = pod.metadata.labels.as_ref()?;
                let role = if labels.contains_key(labels::IMAGE_OWNER) {
                    let pulls = pod.spec.as_ref().is_some_and(|spec| {
                        spec.containers
                            .iter()
                            .any(|c| c.image.as_deref() == Some(image))
                    });
                    pulls.then_some("pull")?
                } else if labels.get(labels::TARGET_KERNEL) == Some(&safe_kernel) {
                    match labels.get(labels::RESOURCE_TYPE).map(String::as_str) {
                        Some("BuildImage") => "build",
                        Some("SignImage") => "sign",
                        _ => return None,
                    }
                } else {
                    return None;
                };
                let phase = pod
                    .status
                    .as_ref()
                    .and_then(|status| status.phase.clone())
                    .unwrap_or_else(|| "Pending".to_owned());
                let pull_error = match (role, pull_answer(pod)) {
                    ("pull", PullAnswer::NotPulled(error)) => Some(error),
                    _ => None,
                };
                Some((
                    pod.metadata.creation_timestamp.clone(),
                    ImagePod {
                        role,
                        phase,
                        pull_error,
                    },
                ))
            })
            .max_by(|a, b| a.0.cmp(&b.0))
            .map(|(_, pod)| pod)
    }
}

/// The rows of one ModuleImagesConfig, in spec order.
pub fn rows_of(
    mic: &ModuleImagesConfig,
    pods: &PodIndex<'_>,
    now: jiff::Timestamp,
) -> Vec<ImageRow> {
    let namespace = mic.metadata.namespace.clone().unwrap_or_default();
    let module = mic.metadata.name.clone().unwrap_or_default();
    let states = mic
        .status
        .as_ref()
        .map(|s| s.images_states.as_slice())
        .unwrap_or_default();
    let age = age(mic.metadata.creation_timestamp.as_ref().map(|t| t.0), now);
    mic.spec
        .images
        .iter()
        .map(|entry| {
            let recorded = states.iter().find(|s| s.image == entry.spec.image);
            let generation = entry.generation.unwrap_or(1);
            let pod = pods.newest(
                &namespace,
                &module,
                &entry.spec.image,
                &entry.spec.kernel_version,
            );
            let state = recorded.map(|s| s.status);
            let observed_generation = recorded.map(|s| s.observed_generation.unwrap_or(1));
            let settled = observed_generation == Some(generation);
            let pull_failing = pod.as_ref().is_some_and(|p| p.pull_error.is_some());
            let health = match state {
                _ if pull_failing => Health::Error,
                _ if !settled => Health::Progressing,
                Some(ImageState::Exists) => Health::Ok,
                Some(ImageState::NeedsBuilding | ImageState::NeedsSigning) => Health::Progressing,
                Some(ImageState::DoesNotExist) => Health::Error,
                None => Health::Progressing,
            };
            ImageRow {
                namespace: namespace.clone(),
                module: module.clone(),
                image: entry.spec.image.clone(),
                kernel: entry.spec.kernel_version.clone(),
                state,
                generation,
                observed_generation,
                pod,
                age: age.clone(),
                health,
            }
        })
        .collect()
}

/// Every image of every ModuleImagesConfig.
pub fn rows(data: &ClusterData, now: jiff::Timestamp) -> Vec<ImageRow> {
    let pods = PodIndex::new(data);
    data.mics
        .iter()
        .flat_map(|mic| rows_of(mic, &pods, now))
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_image_the_kubelet_cannot_pull_says_so_rather_than_checking() {
        let mic: ModuleImagesConfig = serde_json::from_value(json!({
            "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "ModuleImagesConfig",
            "metadata": {"name": "kmod", "namespace": "ns"},
            "spec": {"images": [{"image": "quay.io/x:k", "kernelVersion": "6.1.0", "generation": 1}]},
        }))
        .expect("a ModuleImagesConfig");
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "pull-kmod", "namespace": "ns", "labels": {labels::IMAGE_OWNER: "kmod"}},
            "spec": {"containers": [{"name": "pull", "image": "quay.io/x:k"}]},
            "status": {"phase": "Pending", "containerStatuses": [{"name": "pull", "image": "quay.io/x:k",
                "imageID": "", "ready": false, "restartCount": 0,
                "state": {"waiting": {"reason": "ImagePullBackOff", "message": "not found"}}}]},
        }))
        .expect("a pod");
        let data = ClusterData {
            mics: vec![Arc::new(mic)],
            pods: vec![Arc::new(pod)],
            ..ClusterData::default()
        };
        let rows = rows(&data, jiff::Timestamp::UNIX_EPOCH);
        assert_eq!(rows[0].state_label(), "PullFailing");
        assert_eq!(rows[0].health, Health::Error);
        assert_eq!(
            rows[0].pod.as_ref().map(ImagePod::summary).as_deref(),
            Some("pull ImagePullBackOff: not found")
        );
    }
}
