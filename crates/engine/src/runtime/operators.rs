//! Upstream operators that already act on a family: the Kernel Module Management operator, runtime-class-manager
//! and kube-fledged. Where one runs, the engine leaves its family alone, so two controllers never fight over the same
//! objects, and the console says who acts.
//!
//! Only what a cluster administrator alone can set up counts, so that a namespace editor cannot switch a family off
//! for everyone with a look-alike: a Deployment counts when it wants pods and its pods run as a ServiceAccount that
//! a ClusterRoleBinding names (namespace roles cannot create ClusterRoleBindings). Such a Deployment is the operator
//! when it runs the operator's image; a held leader-election Lease (renewed within twice its duration) is the
//! operator's when its namespace hosts such a Deployment, whatever image it runs (a mirrored or rebuilt one). A
//! namespace holding a ServiceAccount bound cluster-wide is trusted as much as that binding already trusts whoever
//! can run pods there.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::{BoxStream, SelectAll};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::Resource;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::runtime::family::Family;

/// An upstream operator found acting on a family.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Upstream {
    /// The operator's name, for people.
    pub operator: &'static str,
    /// What gave it away, down to the binding that vouches for it: `Deployment ns/name runs as <account>, bound by
    /// ClusterRoleBinding <name>`, after `Lease ns/name held by …; ` when the Lease did.
    pub evidence: String,
    /// The operator's Deployment, which the Event recording the hand-over is about.
    pub deployment: Installed,
}

/// A Deployment, by the fields an Event needs to point at it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Installed {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its uid, so the Event points at this Deployment and not a later one of the same name.
    pub uid: Option<String>,
}

impl Installed {
    /// The reference an Event about the Deployment carries.
    pub fn object_ref(&self) -> ObjectReference {
        ObjectReference {
            api_version: Some(Deployment::api_version(&()).into_owned()),
            kind: Some(Deployment::kind(&()).into_owned()),
            namespace: Some(self.namespace.clone()),
            name: Some(self.name.clone()),
            uid: self.uid.clone(),
            ..ObjectReference::default()
        }
    }
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

/// Which families an upstream operator acts on, judged from every Lease, Deployment and ClusterRoleBinding at
/// `now`. The same objects always give the same evidence, whatever order they come in.
pub fn detect(
    leases: &[Arc<Lease>],
    deployments: &[Arc<Deployment>],
    bindings: &[Arc<ClusterRoleBinding>],
    now: jiff::Timestamp,
) -> BTreeMap<Family, Upstream> {
    let vouched = vouched(deployments, bindings);
    let mut held: Vec<(&Lease, String)> = leases
        .iter()
        .filter_map(|lease| Some((lease.as_ref(), held_evidence(lease, now)?)))
        .collect();
    held.sort_by_key(|(lease, _)| key(&lease.metadata));
    let mut found = BTreeMap::new();
    for known in &KNOWN {
        let by_lease = held
            .iter()
            .filter(|(lease, _)| {
                known.lease.is_some() && lease.metadata.name.as_deref() == known.lease
            })
            .find_map(|(lease, held)| {
                let namespace = lease.metadata.namespace.as_deref();
                let install = vouched
                    .iter()
                    .find(|v| v.deployment.metadata.namespace.as_deref() == namespace)?;
                Some((format!("{held}; {install}"), install))
            });
        let by_deployment = || {
            vouched
                .iter()
                .find(|v| runs_image(v.deployment, known.image))
                .map(|install| (install.to_string(), install))
        };
        if let Some((evidence, install)) = by_lease.or_else(by_deployment) {
            found.insert(
                known.family,
                Upstream {
                    operator: known.operator,
                    evidence,
                    deployment: install.installed(),
                },
            );
        }
    }
    found
}

/// A Deployment that wants pods whose ServiceAccount a ClusterRoleBinding names: what a namespace role cannot set
/// up.
struct Vouched<'a> {
    deployment: &'a Deployment,
    account: &'a str,
    binding: &'a str,
}

impl Vouched<'_> {
    fn installed(&self) -> Installed {
        let meta = &self.deployment.metadata;
        Installed {
            namespace: meta.namespace.clone().unwrap_or_default(),
            name: meta.name.clone().unwrap_or_default(),
            uid: meta.uid.clone(),
        }
    }
}

impl fmt::Display for Vouched<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Deployment {} runs as {}, bound by ClusterRoleBinding {}",
            key(&self.deployment.metadata),
            self.account,
            self.binding
        )
    }
}

/// The Deployments that want pods and run as a ServiceAccount bound cluster-wide, by namespace and name, each with
/// the first binding (by name) that names its account.
fn vouched<'a>(
    deployments: &'a [Arc<Deployment>],
    bindings: &'a [Arc<ClusterRoleBinding>],
) -> Vec<Vouched<'a>> {
    let mut found: Vec<Vouched<'a>> = deployments
        .iter()
        .filter_map(|deployment| {
            let namespace = deployment.metadata.namespace.as_deref()?;
            let account = service_account(deployment)?;
            let binding = bindings
                .iter()
                .filter(|binding| binds(binding, namespace, account))
                .filter_map(|binding| binding.metadata.name.as_deref())
                .min()?;
            Some(Vouched {
                deployment,
                account,
                binding,
            })
        })
        .collect();
    found.sort_by_key(|v| key(&v.deployment.metadata));
    found
}

/// The ServiceAccount the Deployment's pods run as (`default` when the template names none), if it wants pods.
fn service_account(deployment: &Deployment) -> Option<&str> {
    let spec = deployment.spec.as_ref()?;
    if spec.replicas == Some(0) {
        return None;
    }
    let named = spec.template.spec.as_ref()?.service_account_name.as_deref();
    Some(named.filter(|name| !name.is_empty()).unwrap_or("default"))
}

/// Whether `binding` names the ServiceAccount `namespace/account` as a subject. Groups do not count: the built-in
/// bindings name `system:authenticated` and the like, which hold every account of every namespace.
fn binds(binding: &ClusterRoleBinding, namespace: &str, account: &str) -> bool {
    binding.subjects.iter().flatten().any(|subject| {
        subject.kind == "ServiceAccount"
            && subject.name == account
            && subject.namespace.as_deref() == Some(namespace)
    })
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

/// Whether one of the Deployment's containers runs `image` (by the image's last path segment).
fn runs_image(deployment: &Deployment, image: &str) -> bool {
    let pod = deployment
        .spec
        .as_ref()
        .and_then(|spec| spec.template.spec.as_ref());
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

/// How long the engine waits for the first look at Leases, Deployments and ClusterRoleBindings before it starts
/// without it.
const FIRST_LOOK: Duration = Duration::from_secs(5);

/// How often a stale Lease is judged again when nothing changes (a Lease stops changing when its operator is gone).
const REJUDGE: Duration = Duration::from_secs(30);

/// Follow what the judgement reads until `stop`, publishing the families upstream operators act on: the Leases of
/// the recognised operators' names (not the thousands of nodes' heartbeats and other controllers' elections), every
/// ClusterRoleBinding, and the Deployments of the namespaces whose ServiceAccounts those bindings name (not a busy
/// cluster's thousands of others, whose status changes with every pod). The value is `None` until all three have
/// been listed once. A kind that cannot be listed (not permitted, not served) counts as empty, so the engine still
/// runs.
pub fn follow(
    client: kube::Client,
    stop: CancellationToken,
) -> watch::Receiver<Option<BTreeMap<Family, Upstream>>> {
    let (sender, receiver) = watch::channel(None);
    tokio::spawn(async move {
        let mut leases = Watches::<Lease>::default();
        for name in lease_names() {
            let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
            leases.open(name, Api::all(client.clone()), config);
        }
        let mut deployments = Watches::<Deployment>::default();
        let (bindings, binding_writer) = reflector::store::<ClusterRoleBinding>();
        let mut binding_events = reflector(
            binding_writer,
            watcher(Api::all(client.clone()), watcher::Config::default()).default_backoff(),
        )
        .boxed();
        let mut bindings_seen = false;
        let started = tokio::time::Instant::now();
        let mut rejudge = tokio::time::interval(REJUDGE);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                Some((name, event)) = leases.changes.next() => leases.seen(&name, event, "Leases"),
                Some((namespace, event)) = deployments.changes.next() => {
                    deployments.seen(&namespace, event, "Deployments");
                }
                event = binding_events.next() => {
                    match seen(event, "ClusterRoleBindings") {
                        Some(looked) => bindings_seen |= looked,
                        None => return,
                    }
                    deployments.follow(&bound_namespaces(&bindings.state()), |namespace| {
                        (Api::namespaced(client.clone(), namespace), watcher::Config::default())
                    });
                }
                _ = rejudge.tick() => {}
            }
            let looked = (leases.looked() && bindings_seen && deployments.looked())
                || started.elapsed() >= FIRST_LOOK;
            if looked {
                let found = detect(
                    &leases.state(),
                    &deployments.state(),
                    &bindings.state(),
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

/// The namespaces of the ServiceAccounts ClusterRoleBindings name: the only ones whose Deployments can be vouched
/// for.
fn bound_namespaces(bindings: &[Arc<ClusterRoleBinding>]) -> BTreeSet<String> {
    bindings
        .iter()
        .flat_map(|binding| binding.subjects.iter().flatten())
        .filter(|subject| subject.kind == "ServiceAccount")
        .filter_map(|subject| subject.namespace.clone())
        .collect()
}

/// Watches of one kind, each under a key (a Lease name, a namespace) with a cache of its own, whose union the
/// judgement reads.
struct Watches<K: Resource<DynamicType = ()> + Clone + 'static> {
    by_key: BTreeMap<String, Watched<K>>,
    changes: SelectAll<BoxStream<'static, (String, Change<K>)>>,
}

/// One watch event, or its failure.
type Change<K> = Result<watcher::Event<K>, watcher::Error>;

/// One watch: its cache, whether it has been looked at, and how to stop it.
struct Watched<K: Resource<DynamicType = ()> + Clone + 'static> {
    store: reflector::Store<K>,
    looked: bool,
    stop: CancellationToken,
}

impl<K: Resource<DynamicType = ()> + Clone + 'static> Default for Watches<K> {
    fn default() -> Self {
        Watches {
            by_key: BTreeMap::new(),
            changes: SelectAll::new(),
        }
    }
}

impl<K> Watches<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
{
    /// Start watching `api` with `config` under `key`.
    fn open(&mut self, key: &str, api: Api<K>, config: watcher::Config) {
        let (store, writer) = reflector::store();
        let stop = CancellationToken::new();
        let owned = key.to_owned();
        let events = reflector(writer, watcher(api, config).default_backoff())
            .take_until(stop.clone().cancelled_owned())
            .map(move |event| (owned.clone(), event))
            .boxed();
        self.changes.push(events);
        let watched = Watched {
            store,
            looked: false,
            stop,
        };
        self.by_key.insert(key.to_owned(), watched);
    }

    /// Hold one watch per key of `wanted`, made by `source`: start those of new keys, stop those of keys gone.
    fn follow(
        &mut self,
        wanted: &BTreeSet<String>,
        source: impl Fn(&str) -> (Api<K>, watcher::Config),
    ) {
        self.by_key.retain(|key, watched| {
            let keep = wanted.contains(key);
            if !keep {
                watched.stop.cancel();
            }
            keep
        });
        for key in wanted {
            if !self.by_key.contains_key(key) {
                let (api, config) = source(key);
                self.open(key, api, config);
            }
        }
    }

    /// Take in one event of the watch under `key`.
    fn seen(&mut self, key: &str, event: Change<K>, kind: &str) {
        if let Some(watched) = self.by_key.get_mut(key) {
            watched.looked |= seen(Some(event), kind).unwrap_or(true);
        }
    }

    /// Whether every watch has been looked at.
    fn looked(&self) -> bool {
        self.by_key.values().all(|watched| watched.looked)
    }

    /// The union of every watch's cache.
    fn state(&self) -> Vec<Arc<K>> {
        self.by_key
            .values()
            .flat_map(|watched| watched.store.state())
            .collect()
    }
}

/// Whether a watch event of `kind` means the kind has been looked at (listed, changed, or found unlistable); `None`
/// when the watch has ended.
fn seen<K>(event: Option<Result<watcher::Event<K>, watcher::Error>>, kind: &str) -> Option<bool> {
    match event? {
        Ok(watcher::Event::InitDone | watcher::Event::Apply(_) | watcher::Event::Delete(_)) => {
            Some(true)
        }
        Ok(_) => Some(false),
        Err(error) => {
            tracing::debug!(%error, "upstream operator {kind} cannot be followed");
            Some(true)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INSTALLED: &str = "kmm-operator-system";

    fn lease(namespace: &str, holder: Option<&str>, renewed: i64) -> Arc<Lease> {
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "kmm.sigs.x-k8s.io", "namespace": namespace},
                "spec": {
                    "holderIdentity": holder,
                    "leaseDurationSeconds": 15,
                    "renewTime": jiff::Timestamp::from_second(renewed).expect("a time").to_string(),
                }
            }))
            .expect("a Lease"),
        )
    }

    fn deployment(
        namespace: &str,
        image: &str,
        replicas: i32,
        account: Option<&str>,
    ) -> Arc<Deployment> {
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "controller", "namespace": namespace, "uid": "d-1"},
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": {"app": "x"}},
                    "template": {"spec": {
                        "serviceAccountName": account,
                        "containers": [{"name": "c", "image": image}]
                    }}
                }
            }))
            .expect("a Deployment"),
        )
    }

    fn binding(name: &str, subjects: serde_json::Value) -> Arc<ClusterRoleBinding> {
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "manager"},
                "subjects": subjects,
            }))
            .expect("a ClusterRoleBinding"),
        )
    }

    fn account_binding(name: &str, namespace: &str, account: &str) -> Arc<ClusterRoleBinding> {
        binding(
            name,
            serde_json::json!([{"kind": "ServiceAccount", "name": account, "namespace": namespace}]),
        )
    }

    fn at(second: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(second).expect("a time")
    }

    #[test]
    fn only_namespaces_of_service_accounts_bound_cluster_wide_are_watched_for_deployments() {
        let bindings = [
            account_binding("kmm-manager", INSTALLED, "manager"),
            account_binding("fledged", "kube-fledged", "kubefledged-controller"),
            binding(
                "everyone",
                serde_json::json!([{"kind": "Group", "name": "system:authenticated"}]),
            ),
        ];
        assert_eq!(
            bound_namespaces(&bindings),
            BTreeSet::from([INSTALLED.to_owned(), "kube-fledged".to_owned()])
        );
    }

    #[test]
    fn a_held_lease_beside_a_cluster_bound_deployment_claims_its_family() {
        let found = detect(
            &[lease(INSTALLED, Some("kmm-operator-abc"), 1_000)],
            &[deployment(
                INSTALLED,
                "mirror.example/kmm-rhel9-operator:v2",
                1,
                Some("manager"),
            )],
            &[account_binding("kmm-manager", INSTALLED, "manager")],
            at(1_010),
        );
        let kmm = found.get(&Family::Kmm).expect("KMM is taken");
        assert_eq!(kmm.operator, "upstream KMM operator");
        assert_eq!(
            kmm.evidence,
            "Lease kmm-operator-system/kmm.sigs.x-k8s.io held by kmm-operator-abc; Deployment \
             kmm-operator-system/controller runs as manager, bound by ClusterRoleBinding kmm-manager"
        );
        assert_eq!(
            kmm.deployment,
            Installed {
                namespace: INSTALLED.to_owned(),
                name: "controller".to_owned(),
                uid: Some("d-1".to_owned()),
            }
        );
        assert_eq!(found.len(), 1);
    }

    #[test]
    fn released_or_long_stale_leases_claim_nothing() {
        let deployments = [deployment(INSTALLED, "other", 1, None)];
        let bindings = [account_binding("b", INSTALLED, "default")];
        for held in [
            lease(INSTALLED, None, 1_000),
            lease(INSTALLED, Some("gone"), 1_000),
        ] {
            assert!(detect(&[held], &deployments, &bindings, at(1_031)).is_empty());
        }
    }

    #[test]
    fn a_lease_in_a_namespace_without_a_cluster_bound_deployment_claims_nothing() {
        let held = [lease("tenant", Some("decoy"), 1_000)];
        // Alone; beside a Deployment whose account nothing binds; beside one bound only in another namespace.
        assert!(detect(&held, &[], &[], at(1_010)).is_empty());
        let tenant = [deployment("tenant", "other", 1, Some("app"))];
        assert!(detect(&held, &tenant, &[], at(1_010)).is_empty());
        let elsewhere = [account_binding("b", INSTALLED, "app")];
        assert!(detect(&held, &tenant, &elsewhere, at(1_010)).is_empty());
    }

    #[test]
    fn a_deployment_of_the_operator_image_counts_only_when_bound_cluster_wide_and_wanting_pods() {
        let image = "docker.io/senthilrch/kubefledged-controller:v0.10.0";
        let bindings = [account_binding("fledged", "kube-fledged", "default")];
        let running = deployment("kube-fledged", image, 1, None);
        let found = detect(&[], &[running], &bindings, at(0));
        assert_eq!(
            found.get(&Family::Caches).map(|u| u.evidence.as_str()),
            Some(
                "Deployment kube-fledged/controller runs as default, bound by ClusterRoleBinding \
                 fledged"
            )
        );
        let scaled_down = deployment("kube-fledged", image, 0, None);
        assert!(detect(&[], &[scaled_down], &bindings, at(0)).is_empty());
        let other = deployment(
            "kube-fledged",
            "senthilrch/kubefledged-webhook-server:v0.10.0",
            1,
            None,
        );
        assert!(detect(&[], &[other], &bindings, at(0)).is_empty());
        let tenant = deployment("tenant", image, 1, None);
        assert!(detect(&[], &[tenant], &bindings, at(0)).is_empty());
    }

    #[test]
    fn groups_bound_cluster_wide_vouch_for_no_one() {
        let everyone = binding(
            "system:basic-user",
            serde_json::json!([
                {"kind": "Group", "name": "system:authenticated", "apiGroup": "rbac.authorization.k8s.io"},
                {"kind": "Group", "name": "system:serviceaccounts", "apiGroup": "rbac.authorization.k8s.io"},
                {"kind": "Group", "name": "system:serviceaccounts:tenant", "apiGroup": "rbac.authorization.k8s.io"}
            ]),
        );
        let decoy = deployment("tenant", "x/kernel-module-management-operator:v2", 1, None);
        assert!(
            detect(
                &[lease("tenant", Some("decoy"), 0)],
                &[decoy],
                &[everyone],
                at(0)
            )
            .is_empty()
        );
    }

    #[test]
    fn the_evidence_does_not_depend_on_the_order_objects_come_in() {
        let image = "runtime-class-manager:v1";
        let mut first = (*deployment("a-system", image, 1, None)).clone();
        first.metadata.name = Some("a".to_owned());
        let mut second = (*deployment("b-system", image, 1, None)).clone();
        second.metadata.name = Some("b".to_owned());
        let deployments = [Arc::new(second), Arc::new(first)];
        let bindings = [
            account_binding("z", "b-system", "default"),
            account_binding("y", "a-system", "default"),
            account_binding("x", "a-system", "default"),
        ];
        let forwards = detect(&[], &deployments, &bindings, at(0));
        let mut reversed = deployments.clone();
        reversed.reverse();
        let mut bindings_reversed = bindings.clone();
        bindings_reversed.reverse();
        assert_eq!(forwards, detect(&[], &reversed, &bindings_reversed, at(0)));
        assert_eq!(
            forwards.get(&Family::Shims).map(|u| u.evidence.as_str()),
            Some("Deployment a-system/a runs as default, bound by ClusterRoleBinding x")
        );
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
