//! The Shim reconciler: installs a containerd shim on the nodes a `Shim` selects, in batches when it rolls, keeps
//! its RuntimeClass, and takes it off again.
//!
//! Per node, an installer pod in runtime-class-manager's shape ([`pods`]) downloads the node's archive
//! ([`artifact`]), installs the binary, adds the runtime to containerd's configuration and restarts containerd. Its
//! outcome lands on the node as upstream's label `<shim>=provisioned|failed`, plus the annotation
//! `shims.kmm-tui.io/<shim>` holding the hash of the spec it installed ([`spec_hash`]: the archives and the runtime
//! options). A node whose hash differs from the Shim's is installed again, so any change of those parts rolls
//! every node. A node the selector stops matching, and every node of a deleted Shim, gets an uninstall pod; the
//! finalizer `rcm.spinkube.dev/finalizer` holds the Shim until no node carries the shim, then the RuntimeClass
//! goes.
//!
//! **Rollout.** `recreate` starts every selected node at once. `rolling` keeps at most `maxUpdate` installer pods
//! unfinished at any moment (a count, or a percentage of the selected, Ready, schedulable nodes with an archive,
//! rounded down and at least 1). Each pass lists the Shim's installer pods afresh, so the bound holds across engine
//! restarts and kills. Nodes start in name order.
//!
//! **Batch numbers** are derived from the cluster, never remembered: with `S` the nodes of the current spec whose
//! install started (labelled provisioned with the current hash, or with an unfinished or failed install pod of
//! that hash) and `M` the batch size, batch `S / M + 1` is the next one and `ceil(S / M)` the one in progress. The
//! same cluster gives the same numbers after any restart; a spec change (new hash) numbers from 1 again. Batch `n`
//! starts only when no install of the current spec is unfinished, failures are within `maxFailures` (default 0:
//! any failure stops the rollout) and, with `approval: Manual`, `approvedBatch >= n`. A batch cut short by a
//! restart or a retried node is filled up before the next one starts.
//!
//! **What a person does** — each a single API write the console also makes:
//! - approve batch `n`: `kubectl patch shim <name> --type merge -p
//!   '{"spec":{"rolloutStrategy":{"rolling":{"approvedBatch":n}}}}'`. A spec change that starts a new rollout
//!   should set `approvedBatch` back to 0 in the same write, or the new rollout's first batches count as approved.
//! - pause or resume: set `spec.rolloutStrategy.rolling.paused` to true or false; running installers finish, no
//!   new one starts.
//! - retry a failed node: delete its failed installer pod (`kubectl -n kube-system delete pod
//!   <node>-<shim>-install`); the failed pod is the record of the failure, and without it the node is installed
//!   again.
//!
//! Passes start on changes of the Shim's spec, finalizers or deletion, of its installer pods (label
//! `spinkube.dev/shimName`), of its RuntimeClass, and of nodes' labels, readiness, schedulability and
//! architecture. Status conditions are described in [`report`].

mod artifact;
mod plan;
mod pod_names;
mod pods;
mod reconcile;
mod report;
mod runtime_class;

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use futures::{Future, StreamExt};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::node::v1::RuntimeClass;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::runtime::context::{Context, retry_on_error};
use crate::runtime::digest::sha256_hex;
use crate::runtime::family::Family;
use crate::runtime::nodes;
use crate::runtime::shared::{SharedStore, SharedWatches};
use crate::runtime::wiring::{Metered, Wiring};
use kmm_api::shim::{Shim, names};

/// What a Shim pass reads besides the API: the shared node cache.
pub(crate) struct ShimContext {
    /// Client, images, events.
    pub engine: Arc<Context>,
    /// Every node.
    pub nodes: SharedStore<Node>,
}

/// The Shim reconciler, subscribed to the shared node watch now (before it starts); the future runs it until
/// `stop` is cancelled.
pub(crate) fn run(
    context: Arc<Context>,
    shared: &SharedWatches,
    stop: CancellationToken,
) -> impl Future<Output = ()> + Send + 'static {
    let node_changes = shared.node_changes(node_fingerprint);
    let nodes = shared.nodes();
    async move {
        let client = context.client.clone();
        let pod_changes = watcher(
            Api::<Pod>::namespaced(client.clone(), names::INSTALLER_NAMESPACE),
            watcher::Config::default().labels(names::SHIM_NAME),
        )
        .default_backoff()
        // Deletions too: deleting a failed installer pod is how a person retries its node.
        .touched_objects();
        let wiring = Wiring::filtered(
            &context,
            Metered::new("shim", Family::Shims),
            watcher(Api::<Shim>::all(client.clone()), watcher::Config::default()).default_backoff(),
            shim_fingerprint,
        );
        let all_shims = wiring.store();
        let shim_context = Arc::new(ShimContext {
            engine: context.clone(),
            nodes,
        });
        wiring
            .with(|controller| {
                controller
                    .owns(
                        Api::<RuntimeClass>::all(client),
                        watcher::Config::default().labels(names::RUNTIME_CLASS_SHIM),
                    )
                    .watches_stream(pod_changes, |pod: Pod| {
                        Some(ObjectRef::<Shim>::new(pod.labels().get(names::SHIM_NAME)?))
                    })
                    .watches_stream(
                        node_changes
                            .map(|node| Ok::<_, watcher::Error>(Arc::unwrap_or_clone(node))),
                        move |_node: Node| {
                            all_shims
                                .state()
                                .iter()
                                .map(|s| ObjectRef::from_obj(s.as_ref()))
                                .collect::<Vec<_>>()
                        },
                    )
            })
            .drive(
                reconcile::reconcile,
                error_policy,
                shim_context,
                &stop,
                "Shim",
            )
            .await;
    }
}

/// The engine-wide retry policy.
fn error_policy(
    shim: Arc<Shim>,
    error: &crate::runtime::context::Error,
    context: Arc<ShimContext>,
) -> kube::runtime::controller::Action {
    retry_on_error(shim, error, context.engine.clone())
}

/// Hash of what a node installs: the archives and the runtime options. Stable across engine restarts and releases
/// (SHA-256 of canonical JSON, whose maps are ordered), short enough for an annotation.
pub(crate) fn spec_hash(shim: &Shim) -> String {
    let fetch = &shim.spec.fetch_strategy;
    let subject = json!({
        "anonHttp": fetch.anon_http,
        "platforms": fetch.platforms,
        "options": shim.spec.containerd_runtime_options,
    });
    sha256_hex(subject.to_string().as_bytes())[..12].to_owned()
}

/// What about a Shim starts a pass: its spec (through the generation), finalizers and deletion — not its status,
/// which is the reconciler's own output.
fn shim_fingerprint(shim: &Shim) -> Option<u64> {
    let mut hasher = DefaultHasher::new();
    shim.metadata.generation.hash(&mut hasher);
    shim.metadata.finalizers.hash(&mut hasher);
    shim.metadata.deletion_timestamp.is_some().hash(&mut hasher);
    Some(hasher.finish())
}

/// What about a node matters to Shims: labels, spec hash annotations, readiness, schedulability and platform (not
/// heartbeats).
fn node_fingerprint(node: &Node) -> u64 {
    let mut hasher = DefaultHasher::new();
    node.metadata.labels.hash(&mut hasher);
    node.annotations()
        .iter()
        .filter(|(key, _)| key.starts_with(names::ANNOTATION_PREFIX))
        .for_each(|entry| entry.hash(&mut hasher));
    nodes::is_ready(node).hash(&mut hasher);
    node.spec
        .as_ref()
        .and_then(|s| s.unschedulable)
        .hash(&mut hasher);
    if let Some(info) = node.status.as_ref().and_then(|s| s.node_info.as_ref()) {
        (&info.operating_system, &info.architecture).hash(&mut hasher);
    }
    hasher.finish()
}
