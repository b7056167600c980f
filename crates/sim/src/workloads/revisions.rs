//! A Deployment's revisions, as kube-controller-manager numbers them: what `kubectl rollout history` lists and
//! `kubectl rollout undo` rolls back to.
//!
//! - Each ReplicaSet of a Deployment carries `deployment.kubernetes.io/revision`; a new template gets one more than
//!   the highest of the others, and so does an old ReplicaSet whose template comes back (its earlier numbers kept
//!   in `deployment.kubernetes.io/revision-history`). The Deployment carries its current ReplicaSet's revision.
//! - The current ReplicaSet gets the Deployment's own annotations (`kubernetes.io/change-cause` among them) other
//!   than those the controller and `kubectl apply` keep for themselves.
//! - Old ReplicaSets scaled to nothing beyond `revisionHistoryLimit` are deleted, the lowest revisions first.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use kube::api::{Api, DeleteParams, Patch};
use kube::{Resource, ResourceExt};
use serde_json::json;

use super::patch_params;

/// The revision annotation, on a Deployment and its ReplicaSets.
pub const REVISION: &str = "deployment.kubernetes.io/revision";
/// The earlier revisions of a ReplicaSet whose template came back.
pub const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
/// Why a revision was made, shown by `kubectl rollout history`.
pub const CHANGE_CAUSE: &str = "kubernetes.io/change-cause";

/// Annotations of a Deployment that are not copied to its ReplicaSets.
const NOT_COPIED: &[&str] = &[
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    REVISION_HISTORY,
    "deployment.kubernetes.io/desired-replicas",
    "deployment.kubernetes.io/max-replicas",
    "deprecated.deployment.rollback.to",
];

/// How many old ReplicaSets a Deployment keeps when it does not say.
const DEFAULT_HISTORY_LIMIT: i32 = 10;

/// A ReplicaSet's revision; 0 when it has none.
pub fn revision_of(replica_set: &ReplicaSet) -> u64 {
    replica_set
        .annotations()
        .get(REVISION)
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

/// The revision of the current template's ReplicaSet: its own if it is already the newest, else one more than
/// the newest of the others.
pub fn current_revision(current: Option<&ReplicaSet>, old: &[&Arc<ReplicaSet>]) -> u64 {
    let newest_old = old.iter().map(|rs| revision_of(rs)).max().unwrap_or(0);
    match current.map(revision_of) {
        Some(own) if own > newest_old => own,
        _ => newest_old + 1,
    }
}

/// The annotations the current ReplicaSet should carry at `revision`: the Deployment's own (change cause
/// included), the revision, and the earlier revision it held if it is an old template come back.
pub fn replica_set_annotations(
    deployment: &Deployment,
    current: Option<&ReplicaSet>,
    revision: u64,
) -> BTreeMap<String, String> {
    let mut annotations: BTreeMap<String, String> = deployment
        .annotations()
        .iter()
        .filter(|(key, _)| !NOT_COPIED.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    annotations.insert(REVISION.to_owned(), revision.to_string());
    if let Some(current) = current {
        let earlier = revision_of(current);
        if earlier != 0 && earlier != revision {
            let history = match current.annotations().get(REVISION_HISTORY) {
                Some(history) if !history.is_empty() => format!("{history},{earlier}"),
                _ => earlier.to_string(),
            };
            annotations.insert(REVISION_HISTORY.to_owned(), history);
        }
    }
    annotations
}

/// Give the current ReplicaSet its annotations at `revision`, when it lacks any of them.
pub async fn annotate_replica_set(
    api: &Api<ReplicaSet>,
    deployment: &Deployment,
    current: &ReplicaSet,
    revision: u64,
) -> kube::Result<()> {
    let wanted = replica_set_annotations(deployment, Some(current), revision);
    let held = current.annotations();
    if wanted
        .iter()
        .all(|(key, value)| held.get(key) == Some(value))
    {
        return Ok(());
    }
    api.patch(
        &current.name_any(),
        &patch_params(),
        &Patch::Merge(json!({ "metadata": { "annotations": wanted } })),
    )
    .await
    .map(drop)
}

/// Mark the Deployment with its current revision, when it does not carry it yet.
pub async fn annotate_deployment(
    client: &kube::Client,
    deployment: &Deployment,
    revision: u64,
) -> kube::Result<()> {
    let revision = revision.to_string();
    if deployment.annotations().get(REVISION) == Some(&revision) {
        return Ok(());
    }
    let namespace = deployment.namespace().unwrap_or_default();
    Api::<Deployment>::namespaced(client.clone(), &namespace)
        .patch(
            &deployment.name_any(),
            &patch_params(),
            &Patch::Merge(json!({ "metadata": { "annotations": { REVISION: revision } } })),
        )
        .await
        .map(drop)
}

/// Delete the old ReplicaSets beyond the Deployment's history limit, lowest revision first, among those scaled to
/// nothing and settled.
pub async fn clean_up(
    api: &Api<ReplicaSet>,
    deployment: &Deployment,
    old: &[&Arc<ReplicaSet>],
) -> kube::Result<()> {
    let limit = deployment
        .spec
        .as_ref()
        .and_then(|s| s.revision_history_limit)
        .unwrap_or(DEFAULT_HISTORY_LIMIT);
    let mut alive: Vec<&Arc<ReplicaSet>> = old
        .iter()
        .copied()
        .filter(|rs| rs.meta().deletion_timestamp.is_none())
        .collect();
    let excess = alive
        .len()
        .saturating_sub(usize::try_from(limit).unwrap_or(0));
    alive.sort_by_key(|rs| revision_of(rs));
    for replica_set in alive.into_iter().take(excess) {
        if !is_settled_at_zero(replica_set) {
            continue;
        }
        match api
            .delete(&replica_set.name_any(), &DeleteParams::background())
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// Whether a ReplicaSet wants no pods, has none, and has seen its latest spec.
fn is_settled_at_zero(replica_set: &ReplicaSet) -> bool {
    let wanted = replica_set
        .spec
        .as_ref()
        .and_then(|s| s.replicas)
        .unwrap_or(1);
    let status = replica_set.status.as_ref();
    let has = status.map_or(0, |s| s.replicas);
    let observed = status.and_then(|s| s.observed_generation).unwrap_or(0);
    wanted == 0 && has == 0 && replica_set.metadata.generation.unwrap_or(0) <= observed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replica_set(revision: Option<&str>) -> Arc<ReplicaSet> {
        let mut rs = ReplicaSet::default();
        if let Some(revision) = revision {
            rs.metadata.annotations = Some(BTreeMap::from([(REVISION.into(), revision.into())]));
        }
        Arc::new(rs)
    }

    #[test]
    fn a_template_that_comes_back_gets_the_next_revision() {
        let one = replica_set(Some("1"));
        let two = replica_set(Some("2"));
        assert_eq!(current_revision(None, &[]), 1);
        assert_eq!(current_revision(None, &[&one]), 2);
        assert_eq!(current_revision(Some(&two), &[&one]), 2);
        assert_eq!(current_revision(Some(&one), &[&two]), 3);
        let mut deployment = Deployment::default();
        deployment.metadata.annotations = Some(BTreeMap::from([
            (CHANGE_CAUSE.into(), "why".into()),
            (REVISION.into(), "2".into()),
        ]));
        let annotations = replica_set_annotations(&deployment, Some(&one), 3);
        assert_eq!(
            annotations.get(CHANGE_CAUSE).map(String::as_str),
            Some("why")
        );
        assert_eq!(annotations.get(REVISION).map(String::as_str), Some("3"));
        assert_eq!(
            annotations.get(REVISION_HISTORY).map(String::as_str),
            Some("1")
        );
    }
}
