//! The work agent of one spoke: it watches the ManifestWorks in the spoke's cluster namespace on the hub, applies
//! each manifest to the spoke by server-side apply under its own field manager ([`MANAGER`]), removes from the spoke
//! what leaves a work (and, honouring `deleteOption`, everything of a deleted work), and reports on the work what
//! happened: `Applied` and `Available`, and per manifest its conditions and the status feedback the hub asked for.
//!
//! A manifest is applied again when its work's generation changes or its object disappeared from the spoke; in
//! between, the agent only reads the objects back, every [`RESYNC`], so feedback follows the spoke.

use std::collections::HashMap;
use std::time::Duration;

use futures::StreamExt;
use kmm_api::ocm::names;
use kmm_api::ocm::work::{
    DeletePropagationPolicy, ManifestCondition, ManifestConfigOption, ManifestResourceMeta,
    ManifestResourceStatus, ManifestWork, ManifestWorkStatus, ResourceIdentifier,
    StatusFeedbackResult,
};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::{ApiResource, Scope};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::conditions::{self, Wanted};
use super::feedback;

/// The field manager of every object the agent applies to its spoke.
pub const MANAGER: &str = "work-agent";

/// How often the agent reads its objects back for feedback, when nothing else wakes it.
pub const RESYNC: Duration = Duration::from_secs(1);

/// Run the work agent of `cluster` until `stop`.
pub(crate) async fn run(
    hub: kube::Client,
    spoke: kube::Client,
    cluster: String,
    stop: CancellationToken,
) {
    let works: Api<ManifestWork> = Api::namespaced(hub, &cluster);
    let mut agent = Agent {
        works: works.clone(),
        spoke,
        applied: HashMap::new(),
    };
    let mut changes = watcher(works, watcher::Config::default())
        .default_backoff()
        .boxed();
    loop {
        if let Err(error) = agent.sync_all().await {
            tracing::debug!(%cluster, "work agent: {error:#}");
        }
        tokio::select! {
            () = stop.cancelled() => return,
            _ = changes.next() => {}
            () = tokio::time::sleep(RESYNC) => {}
        }
    }
}

/// What the agent keeps between rounds.
struct Agent {
    works: Api<ManifestWork>,
    spoke: kube::Client,
    /// Per work (by UID): the generation whose manifests all applied.
    applied: HashMap<String, i64>,
}

/// One manifest: where it goes on the spoke, and its object there.
struct Target {
    resource: ApiResource,
    namespaced: bool,
    identity: ResourceIdentifier,
}

/// What became of one manifest this round.
struct Outcome {
    meta: ManifestResourceMeta,
    applied: Result<(), String>,
    object: Option<Value>,
}

impl Agent {
    async fn sync_all(&mut self) -> anyhow::Result<()> {
        let works = self.works.list(&ListParams::default()).await?.items;
        let live: Vec<String> = works
            .iter()
            .filter_map(|w| w.metadata.uid.clone())
            .collect();
        self.applied.retain(|uid, _| live.contains(uid));
        for work in works {
            let name = work.metadata.name.clone().unwrap_or_default();
            if let Err(error) = self.sync(work).await {
                tracing::debug!(work = %name, "work agent: {error:#}");
            }
        }
        Ok(())
    }

    async fn sync(&mut self, work: ManifestWork) -> anyhow::Result<()> {
        let name = work.metadata.name.clone().unwrap_or_default();
        let finalizers = work.metadata.finalizers.clone().unwrap_or_default();
        let holds = finalizers
            .iter()
            .any(|f| f == names::WORK_CLEANUP_FINALIZER);
        if work.metadata.deletion_timestamp.is_some() {
            if holds {
                self.clean_up(&work).await?;
                let rest: Vec<&String> = finalizers
                    .iter()
                    .filter(|f| *f != names::WORK_CLEANUP_FINALIZER)
                    .collect();
                self.works
                    .patch(
                        &name,
                        &PatchParams::default(),
                        &Patch::Merge(json!({"metadata": {
                            "finalizers": rest,
                            "resourceVersion": work.metadata.resource_version,
                        }})),
                    )
                    .await?;
            }
            return Ok(());
        }
        if !holds {
            let mut with = finalizers.clone();
            with.push(names::WORK_CLEANUP_FINALIZER.to_owned());
            self.works
                .patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"metadata": {
                        "finalizers": with,
                        "resourceVersion": work.metadata.resource_version,
                    }})),
                )
                .await?;
        }
        let generation = work.metadata.generation.unwrap_or_default();
        let uid = work.metadata.uid.clone().unwrap_or_default();
        let current = self.applied.get(&uid) == Some(&generation);
        let mut discovered = HashMap::new();
        let mut outcomes = Vec::new();
        for (ordinal, manifest) in work.spec.workload.manifests.iter().enumerate() {
            let ordinal = i32::try_from(ordinal).unwrap_or(i32::MAX);
            outcomes.push(
                self.manifest(ordinal, manifest, current, &mut discovered)
                    .await,
            );
        }
        let kept: Vec<ResourceIdentifier> = outcomes.iter().map(|o| identity(&o.meta)).collect();
        self.remove_departed(&work, &kept).await;
        if outcomes.iter().all(|o| o.applied.is_ok()) {
            self.applied.insert(uid, generation);
        } else {
            self.applied.remove(&uid);
        }
        let status = report(&work, &outcomes);
        if work.status.as_ref() != Some(&status) {
            let mut body = serde_json::to_value(&status)?;
            // A merge patch leaves out what it omits: an emptied list must be sent as one.
            if let Some(resources) = body
                .get_mut("resourceStatus")
                .and_then(Value::as_object_mut)
            {
                resources.entry("manifests").or_insert_with(|| json!([]));
            }
            self.works
                .patch_status(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({ "status": body })),
                )
                .await?;
        }
        Ok(())
    }

    /// Apply one manifest (or, when its work's generation is already applied, read its object back, applying it
    /// again only if it is gone).
    async fn manifest(
        &self,
        ordinal: i32,
        manifest: &Value,
        current: bool,
        discovered: &mut HashMap<GroupVersionKind, (ApiResource, bool)>,
    ) -> Outcome {
        let mut meta = ManifestResourceMeta {
            ordinal,
            ..ManifestResourceMeta::default()
        };
        let target = match self.target(manifest, &mut meta, discovered).await {
            Ok(target) => target,
            Err(message) => {
                return Outcome {
                    meta,
                    applied: Err(message),
                    object: None,
                };
            }
        };
        let api = self.api(&target);
        let name = target.identity.name.as_str();
        if current && let Ok(Some(object)) = api.get_opt(name).await {
            return Outcome {
                meta,
                applied: Ok(()),
                object: serde_json::to_value(object).ok(),
            };
        }
        let params = PatchParams::apply(MANAGER).force();
        match api.patch(name, &params, &Patch::Apply(manifest)).await {
            Ok(object) => Outcome {
                meta,
                applied: Ok(()),
                object: serde_json::to_value(object).ok(),
            },
            Err(error) => Outcome {
                meta,
                applied: Err(refusal(&error)),
                object: None,
            },
        }
    }

    /// Where a manifest goes, filling in `meta` as far as the manifest says.
    async fn target(
        &self,
        manifest: &Value,
        meta: &mut ManifestResourceMeta,
        discovered: &mut HashMap<GroupVersionKind, (ApiResource, bool)>,
    ) -> Result<Target, String> {
        let text = |field: &str| manifest.pointer(field).and_then(Value::as_str);
        let api_version = text("/apiVersion").ok_or("the manifest has no apiVersion")?;
        let kind = text("/kind").ok_or("the manifest has no kind")?;
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        meta.group = Some(group.to_owned());
        meta.version = Some(version.to_owned());
        meta.kind = Some(kind.to_owned());
        meta.name = text("/metadata/name").map(str::to_owned);
        meta.namespace = text("/metadata/namespace").map(str::to_owned);
        let name = meta
            .name
            .clone()
            .ok_or("the manifest has no metadata.name")?;
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (resource, namespaced) = match discovered.get(&gvk) {
            Some(found) => found.clone(),
            None => {
                let (resource, capabilities) = kube::discovery::pinned_kind(&self.spoke, &gvk)
                    .await
                    .map_err(|error| {
                        format!("the spoke does not serve {kind} in {api_version}: {error}")
                    })?;
                let found = (resource, capabilities.scope == Scope::Namespaced);
                discovered.insert(gvk, found.clone());
                found
            }
        };
        meta.resource = Some(resource.plural.clone());
        let namespace = match (&meta.namespace, namespaced) {
            (Some(namespace), true) => namespace.clone(),
            (None, true) => {
                return Err(format!(
                    "{kind} {name} is namespaced but the manifest names no metadata.namespace"
                ));
            }
            (_, false) => {
                meta.namespace = None;
                String::new()
            }
        };
        Ok(Target {
            identity: ResourceIdentifier {
                group: group.to_owned(),
                resource: resource.plural.clone(),
                name,
                namespace,
            },
            resource,
            namespaced,
        })
    }

    fn api(&self, target: &Target) -> Api<DynamicObject> {
        if target.namespaced {
            Api::namespaced_with(
                self.spoke.clone(),
                &target.identity.namespace,
                &target.resource,
            )
        } else {
            Api::all_with(self.spoke.clone(), &target.resource)
        }
    }

    /// Delete from the spoke what the work's last report listed and its manifests no longer hold, unless the
    /// delete option orphans it.
    async fn remove_departed(&self, work: &ManifestWork, kept: &[ResourceIdentifier]) {
        for meta in reported(work) {
            let identity = identity(meta);
            if !kept.contains(&identity) && !orphaned(work, &identity) {
                self.delete(meta).await;
            }
        }
    }

    /// Delete from the spoke every object of a deleted work its delete option does not orphan.
    async fn clean_up(&self, work: &ManifestWork) -> anyhow::Result<()> {
        for meta in reported(work) {
            if !orphaned(work, &identity(meta)) {
                self.delete(meta).await;
            }
        }
        Ok(())
    }

    async fn delete(&self, meta: &ManifestResourceMeta) {
        let (Some(version), Some(kind), Some(resource), Some(name)) =
            (&meta.version, &meta.kind, &meta.resource, &meta.name)
        else {
            return;
        };
        let group = meta.group.clone().unwrap_or_default();
        let gvk = GroupVersionKind::gvk(&group, version, kind);
        let api_resource = ApiResource::from_gvk_with_plural(&gvk, resource);
        let api: Api<DynamicObject> = match &meta.namespace {
            Some(namespace) => Api::namespaced_with(self.spoke.clone(), namespace, &api_resource),
            None => Api::all_with(self.spoke.clone(), &api_resource),
        };
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(error) if kmm_api::errors::is_not_found(&error) => {}
            Err(error) => {
                tracing::warn!(%kind, %name, "work agent: deleting from the spoke: {error}")
            }
        }
    }
}

/// The objects the work's last report lists as applied.
fn reported(work: &ManifestWork) -> impl Iterator<Item = &ManifestResourceMeta> {
    work.status
        .iter()
        .flat_map(|status| status.resource_status.iter())
        .flat_map(|resources| resources.manifests.iter())
        .filter(|manifest| {
            manifest
                .conditions
                .iter()
                .any(|c| c.type_ == names::WORK_APPLIED && c.status == "True")
        })
        .map(|manifest| &manifest.resource_meta)
}

fn identity(meta: &ManifestResourceMeta) -> ResourceIdentifier {
    ResourceIdentifier {
        group: meta.group.clone().unwrap_or_default(),
        resource: meta.resource.clone().unwrap_or_default(),
        name: meta.name.clone().unwrap_or_default(),
        namespace: meta.namespace.clone().unwrap_or_default(),
    }
}

/// Whether the work's delete option leaves `identity` on the spoke.
fn orphaned(work: &ManifestWork, identity: &ResourceIdentifier) -> bool {
    match &work.spec.delete_option {
        None => false,
        Some(option) => match option.propagation_policy {
            DeletePropagationPolicy::Foreground => false,
            DeletePropagationPolicy::Orphan => true,
            DeletePropagationPolicy::SelectivelyOrphan => option
                .selectively_orphans
                .iter()
                .flat_map(|orphans| orphans.orphaning_rules.iter())
                .any(|rule| rule == identity),
        },
    }
}

/// What the spoke's refusal says, with its status code.
fn refusal(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => format!(
            "the spoke refused it ({} {}): {}",
            status.code, status.reason, status.message
        ),
        other => format!("the spoke could not be reached: {other}"),
    }
}

/// The config of the manifest `meta` describes, when the work has one.
fn config_of<'a>(
    work: &'a ManifestWork,
    meta: &ManifestResourceMeta,
) -> Option<&'a ManifestConfigOption> {
    let identity = identity(meta);
    work.spec
        .manifest_configs
        .iter()
        .find(|config| config.resource_identifier == identity)
}

/// The status the outcomes make, keeping the transition times of conditions that did not change.
fn report(work: &ManifestWork, outcomes: &[Outcome]) -> ManifestWorkStatus {
    let generation = work.metadata.generation;
    let old = work.status.clone().unwrap_or_default();
    let old_manifests = old
        .resource_status
        .as_ref()
        .map(|r| r.manifests.as_slice())
        .unwrap_or_default();
    let mut manifests = Vec::new();
    for outcome in outcomes {
        let mut entry = old_manifests
            .iter()
            .find(|m| m.resource_meta == outcome.meta)
            .cloned()
            .unwrap_or_else(|| ManifestCondition {
                resource_meta: outcome.meta.clone(),
                ..ManifestCondition::default()
            });
        let (status, reason, message) = match &outcome.applied {
            Ok(()) => ("True", names::REASON_MANIFEST_APPLIED, "applied".to_owned()),
            Err(message) => (
                "False",
                names::REASON_MANIFEST_APPLY_FAILED,
                message.clone(),
            ),
        };
        conditions::set(
            &mut entry.conditions,
            Wanted {
                type_: names::WORK_APPLIED,
                status,
                reason,
                message,
                observed_generation: generation,
            },
        );
        let exists = outcome.object.is_some();
        conditions::set(
            &mut entry.conditions,
            Wanted {
                type_: names::WORK_AVAILABLE,
                status: if exists { "True" } else { "False" },
                reason: if exists {
                    names::REASON_RESOURCE_AVAILABLE
                } else {
                    names::REASON_RESOURCE_NOT_AVAILABLE
                },
                message: if exists {
                    "the object exists on the spoke".to_owned()
                } else {
                    "the object does not exist on the spoke".to_owned()
                },
                observed_generation: generation,
            },
        );
        entry.status_feedback = None;
        if let (Some(config), Some(object)) = (config_of(work, &outcome.meta), &outcome.object)
            && !config.feedback_rules.is_empty()
        {
            let read = feedback::evaluate(
                &config.feedback_rules,
                outcome.meta.group.as_deref().unwrap_or_default(),
                outcome.meta.kind.as_deref().unwrap_or_default(),
                object,
            );
            let synced = read.missing.is_empty();
            conditions::set(
                &mut entry.conditions,
                Wanted {
                    type_: names::MANIFEST_FEEDBACK_SYNCED,
                    status: if synced { "True" } else { "False" },
                    reason: if synced {
                        names::REASON_FEEDBACK_SYNCED
                    } else {
                        names::REASON_FEEDBACK_INCOMPLETE
                    },
                    message: if synced {
                        "every feedback rule was read".to_owned()
                    } else {
                        read.missing.join("; ")
                    },
                    observed_generation: generation,
                },
            );
            entry.status_feedback = Some(StatusFeedbackResult {
                values: read.values,
            });
        }
        manifests.push(entry);
    }
    let mut conditions_now = old.conditions.clone();
    let failed: Vec<String> = outcomes
        .iter()
        .filter_map(|o| {
            o.applied.as_ref().err().map(|message| {
                format!(
                    "manifest {} ({} {}): {message}",
                    o.meta.ordinal,
                    o.meta.kind.as_deref().unwrap_or("?"),
                    o.meta.name.as_deref().unwrap_or("?")
                )
            })
        })
        .collect();
    let total = outcomes.len();
    conditions::set(
        &mut conditions_now,
        if failed.is_empty() {
            Wanted {
                type_: names::WORK_APPLIED,
                status: "True",
                reason: names::REASON_WORK_APPLIED,
                message: format!("applied {total} manifests"),
                observed_generation: generation,
            }
        } else {
            Wanted {
                type_: names::WORK_APPLIED,
                status: "False",
                reason: names::REASON_WORK_APPLY_FAILED,
                message: format!(
                    "{} of {total} manifests not applied: {}",
                    failed.len(),
                    failed.join("; ")
                ),
                observed_generation: generation,
            }
        },
    );
    let missing = outcomes.iter().filter(|o| o.object.is_none()).count();
    conditions::set(
        &mut conditions_now,
        Wanted {
            type_: names::WORK_AVAILABLE,
            status: if missing == 0 { "True" } else { "False" },
            reason: if missing == 0 {
                names::REASON_RESOURCES_AVAILABLE
            } else {
                names::REASON_RESOURCES_NOT_AVAILABLE
            },
            message: if missing == 0 {
                format!("all {total} objects exist on the spoke")
            } else {
                format!("{missing} of {total} objects do not exist on the spoke")
            },
            observed_generation: generation,
        },
    );
    ManifestWorkStatus {
        conditions: conditions_now,
        resource_status: Some(ManifestResourceStatus { manifests }),
    }
}
