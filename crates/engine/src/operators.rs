//! Upstream operators that already act on a family: the Kernel Module Management operator, runtime-class-manager
//! and kube-fledged. Where one runs, the engine leaves its family alone, so two controllers never fight over the same
//! objects, and the console says who acts.
//!
//! An operator is recognised by its leader-election Lease (held, and renewed within twice its duration) or by a
//! Deployment with replicas whose container runs the operator's image.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::context::Family;

/// An upstream operator found acting on a family.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Upstream {
    /// The operator's name, for people.
    pub operator: &'static str,
    /// What gave it away: `Lease ns/name held by …` or `Deployment ns/name`.
    pub evidence: String,
}

/// A known upstream operator: the family it acts on, its name, its leader-election Lease (if it elects) and its
/// image.
struct Known {
    family: Family,
    operator: &'static str,
    lease: Option<&'static str>,
    image: &'static str,
}

/// The operators recognised. The Lease names are the operators' leader-election IDs; the images are the last
/// path segment of their published controller images.
const KNOWN: [Known; 3] = [
    Known {
        family: Family::Kmm,
        operator: "upstream KMM operator",
        lease: Some("kmm.sigs.x-k8s.io"),
        image: "kernel-module-management-operator",
    },
    Known {
        family: Family::Shims,
        operator: "runtime-class-manager",
        lease: Some("7584d300.spinkube.dev"),
        image: "runtime-class-manager",
    },
    Known {
        family: Family::Caches,
        operator: "kube-fledged",
        // kube-fledged runs one replica without leader election.
        lease: None,
        image: "kubefledged-controller",
    },
];

/// The names of the leader-election Leases the recognised operators hold, so a look that cannot afford every
/// Lease of a cluster (the fleet view's) can ask for these alone.
pub fn lease_names() -> impl Iterator<Item = &'static str> {
    KNOWN.iter().filter_map(|known| known.lease)
}

/// Which families an upstream operator acts on, judged from every Lease and Deployment at `now`.
pub fn detect(
    leases: &[Arc<Lease>],
    deployments: &[Arc<Deployment>],
    now: jiff::Timestamp,
) -> BTreeMap<Family, Upstream> {
    let mut found = BTreeMap::new();
    for known in &KNOWN {
        let by_lease = leases
            .iter()
            .filter(|lease| known.lease.is_some() && lease.metadata.name.as_deref() == known.lease)
            .find_map(|lease| held_evidence(lease, now));
        let by_deployment = || {
            deployments
                .iter()
                .find(|deployment| runs_image(deployment, known.image))
                .map(|deployment| format!("Deployment {}", key(&deployment.metadata)))
        };
        if let Some(evidence) = by_lease.or_else(by_deployment) {
            found.insert(
                known.family,
                Upstream {
                    operator: known.operator,
                    evidence,
                },
            );
        }
    }
    found
}

/// `Lease ns/name held by …` when the Lease is held and was renewed within twice its duration.
fn held_evidence(lease: &Lease, now: jiff::Timestamp) -> Option<String> {
    let spec = lease.spec.as_ref()?;
    let holder = spec.holder_identity.as_deref().filter(|h| !h.is_empty())?;
    let renewed = spec.renew_time.as_ref()?.0;
    let duration = i64::from(spec.lease_duration_seconds.unwrap_or(15).max(1));
    if now.as_second() - renewed.as_second() > 2 * duration {
        return None;
    }
    Some(format!("Lease {} held by {holder}", key(&lease.metadata)))
}

/// Whether the Deployment wants pods and one of its containers runs `image` (by the image's last path segment).
fn runs_image(deployment: &Deployment, image: &str) -> bool {
    let Some(spec) = deployment.spec.as_ref() else {
        return false;
    };
    if spec.replicas == Some(0) {
        return false;
    }
    let pod = spec.template.spec.as_ref();
    pod.iter()
        .flat_map(|pod| pod.containers.iter())
        .filter_map(|container| container.image.as_deref())
        .any(|reference| image_name(reference) == image)
}

/// The last path segment of an image reference, without tag or digest.
fn image_name(reference: &str) -> &str {
    let without_digest = reference.split('@').next().unwrap_or(reference);
    let last = without_digest.rsplit('/').next().unwrap_or(without_digest);
    last.split(':').next().unwrap_or(last)
}

fn key(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    format!(
        "{}/{}",
        meta.namespace.as_deref().unwrap_or(""),
        meta.name.as_deref().unwrap_or("")
    )
}

/// How long the engine waits for the first look at Leases and Deployments before it starts without it.
const FIRST_LOOK: Duration = Duration::from_secs(5);

/// How often a stale Lease is judged again when nothing changes (a Lease stops changing when its operator is gone).
const REJUDGE: Duration = Duration::from_secs(30);

/// Follow every Lease and Deployment until `stop`, publishing the families upstream operators act on. The value is
/// `None` until both have been listed once. A kind that cannot be listed (not permitted, not served) counts as
/// empty, so the engine still runs.
pub fn follow(
    client: kube::Client,
    stop: CancellationToken,
) -> watch::Receiver<Option<BTreeMap<Family, Upstream>>> {
    let (sender, receiver) = watch::channel(None);
    tokio::spawn(async move {
        let (leases, lease_writer) = reflector::store::<Lease>();
        let (deployments, deployment_writer) = reflector::store::<Deployment>();
        let mut lease_events = reflector::reflector(
            lease_writer,
            watcher(
                Api::<Lease>::all(client.clone()),
                watcher::Config::default(),
            )
            .default_backoff(),
        )
        .boxed();
        let mut deployment_events = reflector::reflector(
            deployment_writer,
            watcher(Api::<Deployment>::all(client), watcher::Config::default()).default_backoff(),
        )
        .boxed();
        let (mut leases_seen, mut deployments_seen) = (false, false);
        let started = tokio::time::Instant::now();
        let mut rejudge = tokio::time::interval(REJUDGE);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                event = lease_events.next() => match event {
                    Some(Ok(watcher::Event::InitDone | watcher::Event::Apply(_) | watcher::Event::Delete(_))) => leases_seen = true,
                    Some(Err(error)) => {
                        tracing::debug!(%error, "upstream operator Leases cannot be followed");
                        leases_seen = true;
                    }
                    Some(Ok(_)) => {}
                    None => return,
                },
                event = deployment_events.next() => match event {
                    Some(Ok(watcher::Event::InitDone | watcher::Event::Apply(_) | watcher::Event::Delete(_))) => deployments_seen = true,
                    Some(Err(error)) => {
                        tracing::debug!(%error, "upstream operator Deployments cannot be followed");
                        deployments_seen = true;
                    }
                    Some(Ok(_)) => {}
                    None => return,
                },
                _ = rejudge.tick() => {}
            }
            let looked = (leases_seen && deployments_seen) || started.elapsed() >= FIRST_LOOK;
            if looked {
                let found = detect(
                    &leases.state(),
                    &deployments.state(),
                    jiff::Timestamp::now(),
                );
                sender.send_if_modified(|current| {
                    let changed = current.as_ref() != Some(&found);
                    if changed {
                        *current = Some(found);
                    }
                    changed
                });
            }
        }
    });
    receiver
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(name: &str, holder: Option<&str>, renewed: i64) -> Arc<Lease> {
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": name, "namespace": "kmm-operator-system"},
                "spec": {
                    "holderIdentity": holder,
                    "leaseDurationSeconds": 15,
                    "renewTime": jiff::Timestamp::from_second(renewed).expect("a time").to_string(),
                }
            }))
            .expect("a Lease"),
        )
    }

    fn deployment(image: &str, replicas: i32) -> Arc<Deployment> {
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "kubefledged-controller", "namespace": "kube-fledged"},
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": {"app": "x"}},
                    "template": {"spec": {"containers": [{"name": "c", "image": image}]}}
                }
            }))
            .expect("a Deployment"),
        )
    }

    fn at(second: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(second).expect("a time")
    }

    #[test]
    fn a_held_upstream_lease_claims_its_family() {
        let found = detect(
            &[lease("kmm.sigs.x-k8s.io", Some("kmm-operator-abc"), 1_000)],
            &[],
            at(1_010),
        );
        let kmm = found.get(&Family::Kmm).expect("KMM is taken");
        assert_eq!(kmm.operator, "upstream KMM operator");
        assert_eq!(
            kmm.evidence,
            "Lease kmm-operator-system/kmm.sigs.x-k8s.io held by kmm-operator-abc"
        );
        assert_eq!(found.len(), 1);
    }

    #[test]
    fn released_or_long_stale_leases_claim_nothing() {
        assert!(detect(&[lease("kmm.sigs.x-k8s.io", None, 1_000)], &[], at(1_010)).is_empty());
        assert!(
            detect(
                &[lease("kmm.sigs.x-k8s.io", Some("gone"), 1_000)],
                &[],
                at(1_031)
            )
            .is_empty()
        );
    }

    #[test]
    fn a_deployment_running_the_operator_image_claims_its_family_unless_scaled_to_zero() {
        let running = deployment("docker.io/senthilrch/kubefledged-controller:v0.10.0", 1);
        let found = detect(&[], &[running], at(0));
        assert_eq!(
            found.get(&Family::Caches).map(|u| u.evidence.as_str()),
            Some("Deployment kube-fledged/kubefledged-controller")
        );
        let scaled_down = deployment("senthilrch/kubefledged-controller:v0.10.0", 0);
        assert!(detect(&[], &[scaled_down], at(0)).is_empty());
        let other = deployment("senthilrch/kubefledged-webhook-server:v0.10.0", 1);
        assert!(detect(&[], &[other], at(0)).is_empty());
    }

    #[test]
    fn image_names_drop_registry_tag_and_digest() {
        assert_eq!(
            image_name("ghcr.io/spinframework/runtime-class-manager:v0.1@sha256:abc"),
            "runtime-class-manager"
        );
        assert_eq!(image_name("runtime-class-manager"), "runtime-class-manager");
    }
}
