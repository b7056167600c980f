//! The API calls of the MIC reconciler: its pull and build pods, its MBSC and its status, each failure naming the
//! MIC and what was being done.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{DeleteParams, ListParams, Patch, PostParams};
use kube::{Api, Client, Resource, ResourceExt};
use serde_json::{Map, Value};

use super::build_sign;
use super::wanted::Wanted;
use crate::runtime::context::{Error, KubeResultExt};
use crate::runtime::writes::patch_params;
use crate::runtime::writes::post_params;
use kmm_api::errors::{is_conflict, is_not_found};
use kmm_api::kmm::labels;
use kmm_api::kmm::{
    ImageState, ModuleBuildSignConfig, ModuleBuildSignConfigSpec, ModuleImagesConfig,
    ModuleImagesConfigSpec, ModuleImagesConfigStatus,
};

/// The ModuleImagesConfig `name` as stored, or none: what its owner's pass starts from.
pub async fn read_mic(
    api: &Api<ModuleImagesConfig>,
    namespace: &str,
    name: &str,
) -> Result<Option<ModuleImagesConfig>, Error> {
    match api.get(name).await {
        Ok(mic) => Ok(Some(mic)),
        Err(error) if is_not_found(&error) => Ok(None),
        Err(error) => Err(error).doing(|| format!("reading ModuleImagesConfig {namespace}/{name}")),
    }
}

/// Store `spec` as the ModuleImagesConfig `name` that `owner` controls: created when `current` is none, replaced
/// (guarded by `current`'s resourceVersion) when its spec differs, left alone otherwise. Returns it as stored.
/// Modules and ModuleDay0s both hand their images to the MIC reconciler this way.
pub async fn put_mic(
    api: &Api<ModuleImagesConfig>,
    namespace: &str,
    name: &str,
    owner: Option<OwnerReference>,
    current: Option<ModuleImagesConfig>,
    spec: ModuleImagesConfigSpec,
) -> Result<ModuleImagesConfig, Error> {
    match current {
        Some(mic) if mic.spec == spec => Ok(mic),
        Some(mut mic) => {
            mic.spec = spec;
            api.replace(name, &post_params(), &mic)
                .await
                .doing(|| format!("updating ModuleImagesConfig {namespace}/{name}"))
        }
        None => {
            let mic = ModuleImagesConfig {
                metadata: ObjectMeta {
                    name: Some(name.to_owned()),
                    namespace: Some(namespace.to_owned()),
                    owner_references: owner.map(|o| vec![o]),
                    ..Default::default()
                },
                spec,
                status: None,
            };
            api.create(&post_params(), &mic)
                .await
                .doing(|| format!("creating ModuleImagesConfig {namespace}/{name}"))
        }
    }
}

/// The API calls of a pass over one MIC, each failure naming the MIC and what was being done.
pub(super) struct MicApi {
    /// The MIC's name (also its MBSC's).
    pub name: String,
    namespace: String,
    pods: Api<Pod>,
    mics: Api<ModuleImagesConfig>,
    mbscs: Api<ModuleBuildSignConfig>,
}

impl MicApi {
    /// The calls about `mic`.
    pub(super) fn new(client: &Client, mic: &ModuleImagesConfig) -> Result<Self, Error> {
        let name = mic.name_any();
        let namespace = mic
            .namespace()
            .ok_or_else(|| Error::Invalid(format!("ModuleImagesConfig {name} has no namespace")))?;
        Ok(Self {
            pods: Api::namespaced(client.clone(), &namespace),
            mics: Api::namespaced(client.clone(), &namespace),
            mbscs: Api::namespaced(client.clone(), &namespace),
            name,
            namespace,
        })
    }

    /// The MIC's name and namespace, for messages.
    fn mic(&self) -> String {
        format!("ModuleImagesConfig {}/{}", self.namespace, self.name)
    }

    /// The MIC's pull pods, read now from the API.
    pub(super) async fn pull_pods(&self) -> Result<Vec<Pod>, Error> {
        self.list_pods(&format!("{}={}", labels::IMAGE_OWNER, self.name))
            .await
    }

    /// The build and sign pods of the MIC's MBSC, read now from the API.
    pub(super) async fn build_pods(&self) -> Result<Vec<Pod>, Error> {
        self.list_pods(&format!(
            "{}={},{}",
            labels::MODULE_NAME,
            self.name,
            labels::RESOURCE_TYPE
        ))
        .await
    }

    /// Pods of the namespace matching `selector`.
    async fn list_pods(&self, selector: &str) -> Result<Vec<Pod>, Error> {
        Ok(self
            .pods
            .list(&ListParams::default().labels(selector))
            .await
            .doing(|| format!("listing pods {selector} of {}", self.mic()))?
            .items)
    }

    /// The MIC's MBSC, unless it is absent or being deleted.
    pub(super) async fn mbsc(&self) -> Result<Option<ModuleBuildSignConfig>, Error> {
        let mbsc = self
            .mbscs
            .get_opt(&self.name)
            .await
            .doing(|| format!("reading the ModuleBuildSignConfig of {}", self.mic()))?;
        Ok(mbsc.filter(|m| m.metadata.deletion_timestamp.is_none()))
    }

    /// Delete a pod; one already gone is fine.
    pub(super) async fn delete_pod(&self, pod: &str) -> Result<(), Error> {
        match self.pods.delete(pod, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(error) if is_not_found(&error) => Ok(()),
            Err(source) => Err(Error::Kube {
                action: format!("deleting pod {pod} of {}", self.mic()),
                source,
            }),
        }
    }

    /// Create a pod; one that already exists under its name is fine (its name says what it does).
    pub(super) async fn create_pod(&self, pod: &Pod) -> Result<(), Error> {
        match self.pods.create(&PostParams::default(), pod).await {
            Ok(_) => Ok(()),
            Err(error) if is_conflict(&error) => Ok(()),
            Err(source) => Err(Error::Kube {
                action: format!("creating pull pod {} of {}", pod.name_any(), self.mic()),
                source,
            }),
        }
    }

    /// Merge-patch the status of `mic` as the pass read it; optional fields left unset are written as null so that
    /// they are cleared. The patch carries `mic`'s resourceVersion: a status someone changed since (the console
    /// forgetting an image's state to have it checked again) answers 409 instead of being overwritten with what
    /// this pass computed from the older one.
    pub(super) async fn write_status(
        &self,
        mic: &ModuleImagesConfig,
        status: &ModuleImagesConfigStatus,
    ) -> Result<(), Error> {
        let mut fields = match serde_json::to_value(status) {
            Ok(Value::Object(fields)) => fields,
            other => {
                return Err(Error::Invalid(format!(
                    "the status of {} does not serialise to an object: {other:?}",
                    self.mic()
                )));
            }
        };
        for key in [
            "imageRebuildTriggerGeneration",
            "existingImages",
            "totalImages",
            "conditions",
        ] {
            fields.entry(key).or_insert(Value::Null);
        }
        let patch = guarded_status_patch(mic, fields);
        self.mics
            .patch_status(&self.name, &patch_params(), &Patch::Merge(&patch))
            .await
            .doing(|| format!("writing the status of {}", self.mic()))?;
        tracing::debug!(mic = %self.mic(), "status written");
        Ok(())
    }

    /// A new rebuild trigger: forget everything the checks proved. The MBSC (with its outcomes), its build and
    /// sign pods and the pull pods go first, then the status is cleared (guarded by `mic`'s resourceVersion) and
    /// records the trigger as acted upon. Returns the MIC as stored after that write.
    pub(super) async fn restart_checks(
        &self,
        mic: &ModuleImagesConfig,
    ) -> Result<ModuleImagesConfig, Error> {
        tracing::info!(mic = %self.mic(), "image rebuild trigger changed: checking every image again");
        match self
            .mbscs
            .delete(&self.name, &DeleteParams::default())
            .await
        {
            Ok(_) => {}
            Err(error) if is_not_found(&error) => {}
            Err(source) => {
                return Err(Error::Kube {
                    action: format!("deleting the ModuleBuildSignConfig of {}", self.mic()),
                    source,
                });
            }
        }
        let build_pods = self.build_pods().await?;
        let mbsc_kind = ModuleBuildSignConfig::kind(&());
        for pod in build_pods.iter().filter(|pod| {
            pod.owner_references()
                .iter()
                .any(|o| o.controller == Some(true) && o.kind == mbsc_kind && o.name == self.name)
        }) {
            self.delete_pod(&pod.name_any()).await?;
        }
        for pod in self.pull_pods().await? {
            self.delete_pod(&pod.name_any()).await?;
        }
        let cleared = Map::from_iter([
            ("imagesStates".to_owned(), Value::Array(Vec::new())),
            (
                "imageRebuildTriggerGeneration".to_owned(),
                Value::from(mic.spec.image_rebuild_trigger_generation),
            ),
        ]);
        let patch = guarded_status_patch(mic, cleared);
        self.mics
            .patch_status(&self.name, &patch_params(), &Patch::Merge(&patch))
            .await
            .doing(|| format!("clearing the image states of {}", self.mic()))
    }

    /// Bring the MBSC to what the image states need: created (owned by the MIC) when an image first needs building
    /// or signing, patched when its entries, secret, push setting or tolerations differ.
    pub(super) async fn update_mbsc(
        &self,
        mic: &ModuleImagesConfig,
        current: Option<&ModuleBuildSignConfig>,
        wanted: &[Wanted<'_>],
        states: &BTreeMap<String, ImageState>,
    ) -> Result<(), Error> {
        let desired = build_sign::desired_spec(mic, wanted, states, current.map(|m| &m.spec));
        match current {
            Some(current) if current.spec == desired => Ok(()),
            Some(_) => {
                let patch = spec_patch(&desired).map_err(|error| {
                    Error::Invalid(format!(
                        "the ModuleBuildSignConfig spec of {} does not serialise: {error}",
                        self.mic()
                    ))
                })?;
                self.mbscs
                    .patch(&self.name, &patch_params(), &Patch::Merge(&patch))
                    .await
                    .doing(|| format!("updating the ModuleBuildSignConfig of {}", self.mic()))?;
                Ok(())
            }
            None if desired.images.is_empty() => Ok(()),
            None => {
                let owner = mic.controller_owner_ref(&()).ok_or_else(|| {
                    Error::Invalid(format!(
                        "{} has no uid to own its ModuleBuildSignConfig",
                        self.mic()
                    ))
                })?;
                let mbsc = ModuleBuildSignConfig {
                    metadata: ObjectMeta {
                        name: Some(self.name.clone()),
                        namespace: Some(self.namespace.clone()),
                        owner_references: Some(vec![owner]),
                        ..Default::default()
                    },
                    spec: desired,
                    status: None,
                };
                match self.mbscs.create(&PostParams::default(), &mbsc).await {
                    Ok(_) => Ok(()),
                    Err(error) if is_conflict(&error) => Ok(()),
                    Err(source) => Err(Error::Kube {
                        action: format!("creating the ModuleBuildSignConfig of {}", self.mic()),
                        source,
                    }),
                }
            }
        }
    }
}

/// A merge patch of `status` that applies only while `mic` is as read: it names `mic`'s resourceVersion, which the
/// server compares with the stored one.
fn guarded_status_patch(mic: &ModuleImagesConfig, status: Map<String, Value>) -> Value {
    let mut patch = Map::new();
    if let Some(version) = &mic.metadata.resource_version {
        patch.insert(
            "metadata".to_owned(),
            Value::Object(Map::from_iter([(
                "resourceVersion".to_owned(),
                Value::String(version.clone()),
            )])),
        );
    }
    patch.insert("status".to_owned(), Value::Object(status));
    Value::Object(patch)
}

/// A merge patch replacing every MBSC spec field (an unset registry secret is written as null to clear it).
fn spec_patch(spec: &ModuleBuildSignConfigSpec) -> Result<Value, serde_json::Error> {
    let mut fields = Map::new();
    fields.insert("images".to_owned(), serde_json::to_value(&spec.images)?);
    fields.insert(
        "imageRepoSecret".to_owned(),
        serde_json::to_value(&spec.image_repo_secret)?,
    );
    fields.insert(
        "pushBuiltImage".to_owned(),
        Value::Bool(spec.push_built_image),
    );
    fields.insert(
        "tolerations".to_owned(),
        serde_json::to_value(&spec.tolerations)?,
    );
    Ok(Value::Object(Map::from_iter([(
        "spec".to_owned(),
        Value::Object(fields),
    )])))
}
