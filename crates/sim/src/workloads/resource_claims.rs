//! The resource claim controller of kube-controller-manager: a pod's ResourceClaims made from its templates, and
//! reservations that outlive their pods dropped.
//!
//! - For each entry of a pod's `spec.resourceClaims` that names a `resourceClaimTemplateName`, a ResourceClaim is
//!   created from the template (its metadata and spec), named `<pod>-<claim>-<5 random characters>` (the server
//!   fills in the random part from `generateName`, both names shortened in proportion when together too long),
//!   controlled by the pod (so the garbage collector deletes it with the pod) and annotated with
//!   `resource.kubernetes.io/pod-claim-name`. Its name is recorded in the pod's `status.resourceClaimStatuses`.
//! - A pod that is done (Succeeded or Failed, or deleted before it was scheduled) or gone is dropped from every
//!   claim's `status.reservedFor`; a claim made for a pod that is done, and reserved for nobody, is deleted.
//!
//! Everything is decided from the API on every pass: a claim already made for a pod (found by its owner and
//! annotation) is recorded, never made twice, so a restart of the cluster makes no second claim.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceClaimTemplate};
use kube::api::{Api, DeleteParams, Patch};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use serde_json::json;
use tokio::task::JoinHandle;

use super::{RETRY, controller_ref, params, patch_params};
use crate::scheduler::events::{Recorder, Severity};
use crate::{World, forget_managed_fields};

/// The annotation naming the entry of the pod's `spec.resourceClaims` a claim was made for.
pub const POD_CLAIM_NAME: &str = "resource.kubernetes.io/pod-claim-name";

/// The longest `generateName` of a claim: a name has at most 63 characters, and the server appends 5.
const MAX_GENERATE_NAME: usize = 58;

/// How long a created claim may take to show in the caches before the controller stops remembering it.
const EXPECTATION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Start the controller when the server serves `resource.k8s.io/v1` (Kubernetes 1.34 and later); it runs until
/// the world stops.
pub fn spawn(world: Arc<World>) -> JoinHandle<()> {
    tokio::spawn(async move {
        if world
            .server
            .registry()
            .get("resource.k8s.io", "resourceclaims")
            .is_none()
        {
            return;
        }
        let client = world.client.clone();
        let (claims, claim_writer) = reflector::store::<ResourceClaim>();
        let claim_changes = reflector::reflector(
            claim_writer,
            watcher(
                Api::<ResourceClaim>::all(client.clone()),
                Default::default(),
            )
            .modify(forget_managed_fields),
        )
        .default_backoff()
        .map(|_| true)
        .boxed();
        let pod_changes = world
            .watches
            .pods
            .subscribe_with(|change| match change {
                watcher::Event::Apply(pod) | watcher::Event::Delete(pod) => has_claims(pod),
                _ => true,
            })
            .boxed();
        let mut events = futures::stream::select_all([claim_changes, pod_changes]);
        let pods = world.watches.pods.store();
        let mut controller = Controller {
            client: client.clone(),
            recorder: Recorder::new(client, "resourceclaim-controller"),
            made: HashMap::new(),
        };
        let mut due = true;
        loop {
            tokio::select! {
                () = world.stop.cancelled() => return,
                next = events.next() => match next {
                    Some(matters) => due |= matters,
                    None => return,
                },
                () = tokio::time::sleep(RETRY), if due => {}
            }
            while let Some(Some(matters)) = events.next().now_or_never() {
                due |= matters;
            }
            let ready = pods.wait_until_ready().now_or_never().is_some()
                && claims.wait_until_ready().now_or_never().is_some();
            if !due || !ready {
                continue;
            }
            due = !controller.pass(&pods, &claims).await;
        }
    })
}

/// Whether the pod uses any ResourceClaim.
fn has_claims(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.resource_claims.as_ref())
        .is_some_and(|c| !c.is_empty())
}

/// Whether the pod will never run (again): it ended, or was deleted before it was scheduled.
fn is_done(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    let scheduled = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    matches!(phase, Some("Succeeded" | "Failed"))
        || (pod.metadata.deletion_timestamp.is_some() && !scheduled)
}

/// The `generateName` of the claim made for the pod's entry `claim`: `<pod>-<claim>-`, both parts shortened in
/// proportion to their lengths when together they would not leave room for the random suffix, so that both stay
/// recognisable.
pub fn generate_name(pod: &str, claim: &str) -> String {
    let whole = pod.len() + claim.len() + 2;
    if whole <= MAX_GENERATE_NAME {
        return format!("{pod}-{claim}-");
    }
    let room = MAX_GENERATE_NAME - 2;
    let keep = |part: &str| {
        let length = part.len() * room / (pod.len() + claim.len());
        part.chars().take(length).collect::<String>()
    };
    format!("{}-{}-", keep(pod), keep(claim))
}

/// The reservations of a claim that still stand: those of pods that exist (by UID) and are not done, and every
/// reservation for something that is not a pod.
fn standing_reservations(
    claim: &ResourceClaim,
    pods: &HashMap<&str, &Pod>,
) -> Vec<k8s_openapi::api::resource::v1::ResourceClaimConsumerReference> {
    claim
        .status
        .as_ref()
        .and_then(|s| s.reserved_for.clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|consumer| {
            let a_pod = consumer.resource == "pods"
                && consumer.api_group.as_deref().unwrap_or("").is_empty();
            !a_pod
                || pods
                    .get(consumer.uid.as_str())
                    .is_some_and(|pod| !is_done(pod))
        })
        .collect()
}

/// What the controller keeps between passes.
struct Controller {
    client: kube::Client,
    recorder: Recorder,
    /// Claims made but perhaps not yet in the caches, by pod UID and entry: a pass that runs before the caches
    /// catch up records them rather than making them again.
    made: HashMap<(String, String), (String, tokio::time::Instant)>,
}

impl Controller {
    /// One pass over every pod that uses claims and every claim; whether every write succeeded.
    async fn pass(&mut self, pods: &Store<Pod>, claims: &Store<ResourceClaim>) -> bool {
        let pods = pods.state();
        let claims = claims.state();
        let mut ok = true;
        self.made
            .retain(|_, (_, since)| since.elapsed() <= EXPECTATION_TIMEOUT);
        for pod in pods.iter().filter(|p| has_claims(p)) {
            if pod.metadata.deletion_timestamp.is_none() && !is_done(pod) {
                ok &= self.make_claims(pod, &claims).await;
            }
        }
        let by_uid: HashMap<&str, &Pod> = pods
            .iter()
            .filter_map(|p| Some((p.metadata.uid.as_deref()?, p.as_ref())))
            .collect();
        for claim in claims.iter() {
            ok &= self.release(claim, &by_uid).await;
        }
        ok
    }

    /// Make (or find) the claims of the pod's template entries, and record them in its status.
    async fn make_claims(&mut self, pod: &Pod, claims: &[Arc<ResourceClaim>]) -> bool {
        let (Some(uid), Some(namespace)) = (pod.metadata.uid.as_deref(), pod.namespace()) else {
            return true;
        };
        let recorded: BTreeMap<String, Option<String>> = pod
            .status
            .as_ref()
            .and_then(|s| s.resource_claim_statuses.clone())
            .unwrap_or_default()
            .into_iter()
            .map(|s| (s.name, s.resource_claim_name))
            .collect();
        let mut statuses = recorded.clone();
        let mut ok = true;
        let entries = pod
            .spec
            .as_ref()
            .and_then(|s| s.resource_claims.clone())
            .unwrap_or_default();
        for entry in entries {
            let Some(template) = entry.resource_claim_template_name.as_deref() else {
                continue;
            };
            if recorded.contains_key(&entry.name) {
                continue;
            }
            let key = (uid.to_string(), entry.name.clone());
            let existing = claims
                .iter()
                .find(|c| made_for(c, uid, &entry.name))
                .map(|c| c.name_any())
                .or_else(|| self.made.get(&key).map(|(name, _)| name.clone()));
            let name = match existing {
                Some(name) => name,
                None => match self
                    .make_claim(pod, &namespace, &entry.name, template)
                    .await
                {
                    Some(name) => {
                        self.made
                            .insert(key, (name.clone(), tokio::time::Instant::now()));
                        name
                    }
                    None => {
                        ok = false;
                        continue;
                    }
                },
            };
            statuses.insert(entry.name.clone(), Some(name));
        }
        if statuses != recorded {
            let list: Vec<_> = statuses
                .into_iter()
                .map(|(name, claim)| json!({"name": name, "resourceClaimName": claim}))
                .collect();
            let patch = json!({"status": {"resourceClaimStatuses": list}});
            let written = Api::<Pod>::namespaced(self.client.clone(), &namespace)
                .patch_status(&pod.name_any(), &patch_params(), &Patch::Merge(&patch))
                .await;
            if let Err(e) = written {
                tracing::debug!(pod = %pod.name_any(), "recording the pod's claims: {e}");
                ok = false;
            }
        }
        ok
    }

    /// Create the claim of the pod's entry `entry` from `template`; its name, or None (with an event on the pod)
    /// when the template cannot be read or the claim cannot be created.
    async fn make_claim(
        &self,
        pod: &Pod,
        namespace: &str,
        entry: &str,
        template: &str,
    ) -> Option<String> {
        let templates = Api::<ResourceClaimTemplate>::namespaced(self.client.clone(), namespace);
        let found = match templates.get_opt(template).await {
            Ok(Some(found)) => found,
            Ok(None) => {
                self.warn(
                    pod,
                    &format!(
                        "PodResourceClaim {entry}: resource claim template \"{template}\": \
                         resourceclaimtemplate.resource.k8s.io \"{template}\" not found"
                    ),
                )
                .await;
                return None;
            }
            Err(e) => {
                tracing::debug!(pod = %pod.name_any(), "reading claim template {template}: {e}");
                return None;
            }
        };
        let template_meta = found.spec.metadata.clone().unwrap_or_default();
        let mut annotations = template_meta.annotations.unwrap_or_default();
        annotations.insert(POD_CLAIM_NAME.to_string(), entry.to_string());
        let claim = ResourceClaim {
            metadata: kube::api::ObjectMeta {
                generate_name: Some(generate_name(&pod.name_any(), entry)),
                namespace: Some(namespace.to_string()),
                labels: template_meta.labels,
                annotations: Some(annotations),
                finalizers: template_meta.finalizers,
                owner_references: controller_ref(pod).map(|r| vec![r]),
                ..Default::default()
            },
            spec: found.spec.spec,
            status: None,
        };
        let created = Api::<ResourceClaim>::namespaced(self.client.clone(), namespace)
            .create(&params(), &claim)
            .await;
        match created {
            Ok(created) => Some(created.name_any()),
            Err(e) => {
                self.warn(pod, &format!("PodResourceClaim {entry}: {e}"))
                    .await;
                None
            }
        }
    }

    /// Drop the reservations of pods that are done or gone from the claim, and delete a claim made for a pod that
    /// is done once nothing holds it.
    async fn release(&self, claim: &ResourceClaim, pods: &HashMap<&str, &Pod>) -> bool {
        let namespace = claim.namespace().unwrap_or_default();
        let api = Api::<ResourceClaim>::namespaced(self.client.clone(), &namespace);
        let standing = standing_reservations(claim, pods);
        let reserved = claim
            .status
            .as_ref()
            .and_then(|s| s.reserved_for.as_ref())
            .map_or(0, Vec::len);
        if standing.len() != reserved {
            let mut released = claim.clone();
            released.metadata.managed_fields = None;
            if let Some(status) = released.status.as_mut() {
                status.reserved_for = (!standing.is_empty()).then_some(standing.clone());
            }
            if let Err(e) = api
                .replace_status(&claim.name_any(), &params(), &released)
                .await
            {
                tracing::debug!(claim = %claim.name_any(), "releasing reservations: {e}");
                return false;
            }
        }
        let owner_done = claim
            .owner_references()
            .iter()
            .filter(|r| r.controller == Some(true) && r.kind == "Pod")
            .any(|r| pods.get(r.uid.as_str()).is_some_and(|pod| is_done(pod)));
        if owner_done
            && standing.is_empty()
            && claim.metadata.deletion_timestamp.is_none()
            && let Err(e) = api
                .delete(&claim.name_any(), &DeleteParams::default())
                .await
        {
            tracing::debug!(claim = %claim.name_any(), "deleting a done pod's claim: {e}");
            return false;
        }
        true
    }

    async fn warn(&self, pod: &Pod, message: &str) {
        let regarding = ObjectReference {
            api_version: Some(Pod::api_version(&()).into_owned()),
            kind: Some(Pod::kind(&()).into_owned()),
            name: pod.metadata.name.clone(),
            namespace: pod.namespace(),
            uid: pod.metadata.uid.clone(),
            ..Default::default()
        };
        let recorded = self
            .recorder
            .record(
                regarding,
                Severity::Warning,
                "FailedResourceClaimCreation",
                message,
            )
            .await;
        if let Err(e) = recorded {
            tracing::debug!("recording an event: {e}");
        }
    }
}

/// Whether the claim was made for the pod of `uid`'s entry `entry`: the pod controls it and it says which entry.
fn made_for(claim: &ResourceClaim, uid: &str, entry: &str) -> bool {
    let controlled = claim
        .owner_references()
        .iter()
        .any(|r| r.controller == Some(true) && r.uid == uid);
    controlled && claim.annotations().get(POD_CLAIM_NAME).map(String::as_str) == Some(entry)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodSpec, PodStatus};
    use k8s_openapi::api::resource::v1::{ResourceClaimConsumerReference, ResourceClaimStatus};

    #[test]
    fn a_generated_name_leaves_room_for_the_random_suffix() {
        assert_eq!(generate_name("web-0", "gpu"), "web-0-gpu-");
        let long = generate_name(&"p".repeat(60), &"c".repeat(30));
        assert!(long.len() <= MAX_GENERATE_NAME);
        assert_eq!(long, format!("{}-{}-", "p".repeat(37), "c".repeat(18)));
    }

    fn pod(uid: &str, phase: &str, deleting: bool, node: Option<&str>) -> Pod {
        Pod {
            metadata: kube::api::ObjectMeta {
                uid: Some(uid.into()),
                deletion_timestamp: deleting.then_some(
                    k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                        jiff::Timestamp::UNIX_EPOCH,
                    ),
                ),
                ..Default::default()
            },
            spec: Some(PodSpec {
                node_name: node.map(Into::into),
                ..Default::default()
            }),
            status: Some(PodStatus {
                phase: Some(phase.into()),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn reservations_of_pods_that_are_done_or_gone_are_dropped() {
        let consumer = |resource: &str, uid: &str| ResourceClaimConsumerReference {
            resource: resource.into(),
            name: uid.into(),
            uid: uid.into(),
            api_group: None,
        };
        let claim = ResourceClaim {
            status: Some(ResourceClaimStatus {
                reserved_for: Some(vec![
                    consumer("pods", "running"),
                    consumer("pods", "succeeded"),
                    consumer("pods", "gone"),
                    consumer("pods", "deleted-unscheduled"),
                    consumer("pods", "deleted-on-node"),
                    consumer("jobs", "other"),
                ]),
                ..Default::default()
            }),
            ..Default::default()
        };
        let pods = [
            pod("running", "Running", false, Some("n1")),
            pod("succeeded", "Succeeded", false, Some("n1")),
            pod("deleted-unscheduled", "Pending", true, None),
            pod("deleted-on-node", "Running", true, Some("n1")),
        ];
        let by_uid: HashMap<&str, &Pod> = pods
            .iter()
            .map(|p| (p.metadata.uid.as_deref().unwrap_or_default(), p))
            .collect();
        let standing: Vec<String> = standing_reservations(&claim, &by_uid)
            .into_iter()
            .map(|c| c.uid)
            .collect();
        assert_eq!(standing, ["running", "deleted-on-node", "other"]);
    }
}
