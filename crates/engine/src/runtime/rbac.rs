//! The least privilege the engine runs with on a real cluster, as typed RBAC objects: a ServiceAccount, a
//! ClusterRole with exactly the verbs the reconcilers use, and a Role confined to the one Lease that elects the
//! acting engine. `kmm-tui controller --print-rbac` prints them, so what an administrator grants is what the code
//! needs and no more (no wildcards).

use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;

use crate::runtime::family::Family;
use crate::runtime::leader::LeaseConfig;
use crate::runtime::writes::MANAGER;
use kmm_api::kmm::os_image_kernels;

/// Name of the ServiceAccount, roles and bindings: the engine's own name, so they are easy to find and audit.
pub const ENGINE_ACCOUNT: &str = MANAGER;

/// API group of the KMM kinds.
const KMM_GROUP: &str = "kmm.sigs.x-k8s.io";

/// API group of the ManagedClusterModule kind.
const HUB_GROUP: &str = "hub.kmm.sigs.x-k8s.io";

/// API group of the Shim kind.
const SHIM_GROUP: &str = "runtime.spinkube.dev";

/// Read and follow objects.
const READ: &[&str] = &["get", "list", "watch"];

/// One cluster-wide grant: (API group, resources, verbs).
pub type Rule = (
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
);

/// What every family needs: publishing events on the objects it acts on, and seeing the Leases, Deployments and
/// ClusterRoleBindings that show an upstream operator acting on a family (the engine then leaves that family
/// alone; the bindings tell an administrator's install from a namespace's look-alike). All read-only.
const COMMON_RULES: &[Rule] = &[
    ("events.k8s.io", &["events"], &["create", "patch"]),
    ("coordination.k8s.io", &["leases"], &["list", "watch"]),
    ("apps", &["deployments"], &["list", "watch"]),
    (
        "rbac.authorization.k8s.io",
        &["clusterrolebindings"],
        &["list", "watch"],
    ),
];

/// The grants of one family; the ClusterRole holds those of the families the engine runs.
pub fn family_rules(family: Family) -> &'static [Rule] {
    match family {
        Family::Kmm => KMM_RULES,
        Family::Shims => SHIM_RULES,
        Family::Caches => CACHE_RULES,
        Family::Day0 => DAY0_RULES,
        Family::Hub => HUB_RULES,
    }
}

/// What the hub family does cluster-wide on a hub: its images go through the KMM family's pipeline (whose grants
/// cover the ModuleImagesConfig it writes), so only the fleet's kinds are added.
const HUB_RULES: &[Rule] = &[
    // ManagedClusterModules are the users'; the engine writes their status.
    (HUB_GROUP, &["managedclustermodules"], &["list", "watch"]),
    (HUB_GROUP, &["managedclustermodules/status"], &["patch"]),
    // The MCM controls its works and its ModuleImagesConfig (blockOwnerDeletion).
    (
        HUB_GROUP,
        &["managedclustermodules/finalizers"],
        &["update"],
    ),
    // Which clusters a selector picks, and the kernels they state.
    (
        "cluster.open-cluster-management.io",
        &["managedclusters"],
        &["list", "watch"],
    ),
    // One work per selected cluster, in the cluster's namespace.
    (
        "work.open-cluster-management.io",
        &["manifestworks"],
        &["list", "watch", "create", "update", "delete"],
    ),
    (
        KMM_GROUP,
        &["moduleimagesconfigs"],
        &["get", "list", "watch", "create", "update"],
    ),
];

/// What the KMM family does cluster-wide.
const KMM_RULES: &[Rule] = &[
    // Modules are the users' to create and delete; the engine adds its finalizer and writes status.
    (
        KMM_GROUP,
        &["modules"],
        &["get", "list", "watch", "patch", "update"],
    ),
    // PreflightValidations are the users'; the engine writes their verdicts.
    (KMM_GROUP, &["preflightvalidations"], &["list", "watch"]),
    (KMM_GROUP, &["preflightvalidations/status"], &["patch"]),
    // The engine's own bookkeeping objects, one per Module or per node.
    (
        KMM_GROUP,
        &[
            "moduleimagesconfigs",
            "modulebuildsignconfigs",
            "nodemodulesconfigs",
        ],
        &[
            "get", "list", "watch", "create", "patch", "update", "delete",
        ],
    ),
    (
        KMM_GROUP,
        &[
            "modules/status",
            "moduleimagesconfigs/status",
            "modulebuildsignconfigs/status",
            "nodemodulesconfigs/status",
        ],
        &["get", "patch", "update"],
    ),
    // Owner references with blockOwnerDeletion need update on the owner's finalizers subresource where the
    // OwnerReferencesPermissionEnforcement admission plugin runs: Module → MIC → MBSC → build pods, MIC → pull
    // pods, PreflightValidation → MIC, Node → NMC → worker pods.
    (
        KMM_GROUP,
        &[
            "modules/finalizers",
            "preflightvalidations/finalizers",
            "moduleimagesconfigs/finalizers",
            "modulebuildsignconfigs/finalizers",
            "nodemodulesconfigs/finalizers",
        ],
        &["update"],
    ),
    ("", &["nodes/finalizers"], &["update"]),
    // Worker, pull, build and sign pods.
    (
        "",
        &["pods"],
        &["get", "list", "watch", "create", "patch", "delete"],
    ),
    ("", &["pods/status"], &["get"]),
    // Kernel versions and boot IDs are read from nodes; module readiness is labelled on them.
    ("", &["nodes"], &["get", "list", "watch", "patch"]),
    // Dockerfiles and signing keys are read, never changed.
    ("", &["configmaps", "secrets"], &["get"]),
    // Namespaces holding Modules are labelled so they are not deleted from under them.
    ("", &["namespaces"], &["get", "patch"]),
    // Device plugin and DRA driver DaemonSets, one per Module and module version: followed from a watch cache,
    // created, replaced when the Module changes, deleted with it.
    (
        "apps",
        &["daemonsets"],
        &["list", "watch", "create", "update", "delete"],
    ),
    // The DeviceClasses of DRA Modules: listed by the Module's labels on each pass (no cache, so a cluster without
    // DRA costs nothing), created, patched back when they drift, read when a create finds the name taken, deleted
    // with the Module. ResourceClaims are the users' and the scheduler's: the engine never reads them.
    (
        "resource.k8s.io",
        &["deviceclasses"],
        &["get", "list", "create", "patch", "delete"],
    ),
];

/// What the shim family does cluster-wide.
const SHIM_RULES: &[Rule] = &[
    // Shims are the users' to create and delete; the engine adds its finalizer and writes status.
    (SHIM_GROUP, &["shims"], &["get", "list", "watch", "patch"]),
    (SHIM_GROUP, &["shims/status"], &["patch"]),
    // Installer pods and the RuntimeClass name the Shim as owner with blockOwnerDeletion.
    (SHIM_GROUP, &["shims/finalizers"], &["update"]),
    // Installer and uninstaller pods, listed afresh on every pass and deleted once their outcome is recorded.
    ("", &["pods"], &["list", "watch", "create", "delete"]),
    // Nodes are selected by label and labelled with the shim's state and spec hash.
    ("", &["nodes"], &["list", "watch", "patch"]),
    // The Shim's RuntimeClass: created, kept in sync, replaced when its handler changes, deleted with the Shim.
    (
        "node.k8s.io",
        &["runtimeclasses"],
        &["get", "list", "watch", "create", "patch", "delete"],
    ),
];

/// What the image cache family does cluster-wide.
const CACHE_RULES: &[Rule] = &[
    // Caches are the users'; the engine removes the annotations it acted on and writes status.
    (
        "kubefledged.io",
        &["imagecaches"],
        &["get", "list", "watch", "patch"],
    ),
    (
        "kubefledged.io",
        &["imagecaches/status"],
        &["get", "update"],
    ),
    // Pull and delete pods are owned by their cache (blockOwnerDeletion needs update on its finalizers).
    ("kubefledged.io", &["imagecaches/finalizers"], &["update"]),
    // Finished pull pods leave a few requests per pass, by selector (succeeded ones only), not one DELETE each.
    (
        "",
        &["pods"],
        &[
            "get",
            "list",
            "watch",
            "create",
            "delete",
            "deletecollection",
        ],
    ),
    // Which images each node holds, and which nodes the selectors match.
    ("", &["nodes"], READ),
];

/// What the day-0 family does cluster-wide: it runs the KMM image pipeline for its images when the KMM family does
/// not run, so it holds those grants too.
const DAY0_RULES: &[Rule] = &[
    // One ModuleDay0 per kmm-managed MachineConfig, created and deleted with the label; status written.
    (
        KMM_GROUP,
        &["moduleday0s"],
        &["get", "list", "watch", "create", "delete"],
    ),
    (KMM_GROUP, &["moduleday0s/status"], &["get", "patch"]),
    // ModuleDay0 → MIC owner references with blockOwnerDeletion.
    (KMM_GROUP, &["moduleday0s/finalizers"], &["update"]),
    // The image pipeline: MIC → MBSC → pull, build and sign pods.
    (
        KMM_GROUP,
        &["moduleimagesconfigs", "modulebuildsignconfigs"],
        &[
            "get", "list", "watch", "create", "patch", "update", "delete",
        ],
    ),
    (
        KMM_GROUP,
        &[
            "moduleimagesconfigs/status",
            "modulebuildsignconfigs/status",
        ],
        &["get", "patch", "update"],
    ),
    (
        KMM_GROUP,
        &[
            "moduleimagesconfigs/finalizers",
            "modulebuildsignconfigs/finalizers",
        ],
        &["update"],
    ),
    (
        "",
        &["pods"],
        &["get", "list", "watch", "create", "patch", "delete"],
    ),
    ("", &["pods/status"], &["get"]),
    // Pool membership, OS and kernel of nodes.
    ("", &["nodes"], &["get", "list", "watch"]),
    // Dockerfiles, signing keys and the release's OS image ConfigMap are read, never changed. The one ConfigMap
    // written is the record of the OS images' kernels: created here (creation cannot be limited by name), patched
    // by name only (see `named_rules`).
    ("", &["configmaps"], &["get", "list", "watch", "create"]),
    ("", &["secrets"], &["get"]),
    // The kernel of an OS image is the log of a pod that lists it.
    ("", &["pods/log"], &["get"]),
    // The MachineConfig's osImageURL is the one thing the family writes outside its own objects.
    (
        "machineconfiguration.openshift.io",
        &["machineconfigs"],
        &["get", "list", "watch", "patch"],
    ),
    (
        "machineconfiguration.openshift.io",
        &["machineconfigpools"],
        READ,
    ),
    ("config.openshift.io", &["clusterversions"], READ),
];

/// The RBAC objects that let the engine run under its own ServiceAccount.
#[derive(Clone, Debug)]
pub struct EngineRbac {
    /// The identity the engine runs as, in the Lease's namespace.
    pub service_account: ServiceAccount,
    /// What the reconcilers do cluster-wide.
    pub cluster_role: ClusterRole,
    /// Grants the cluster role to the ServiceAccount.
    pub cluster_role_binding: ClusterRoleBinding,
    /// Leader election on the one Lease, in its namespace only.
    pub role: Role,
    /// Grants the role to the ServiceAccount.
    pub role_binding: RoleBinding,
}

impl EngineRbac {
    /// The objects for an engine running every family, electing its leader on `lease`; the ServiceAccount lives in
    /// the Lease's namespace.
    pub fn new(lease: &LeaseConfig) -> Self {
        Self::for_families(lease, &Family::ALL)
    }

    /// The objects for an engine running `families` only: a controller that runs one family is granted that
    /// family's rules and no more.
    pub fn for_families(lease: &LeaseConfig, families: &[Family]) -> Self {
        Self::for_account(lease, families, &lease.namespace)
    }

    /// The objects for an engine running `families` under the ServiceAccount of `account_namespace` (where its
    /// pods run, which need not be the Lease's namespace): the Lease's Role stays in the Lease's namespace.
    pub fn for_account(lease: &LeaseConfig, families: &[Family], account_namespace: &str) -> Self {
        let mut rules: Vec<PolicyRule> =
            COMMON_RULES.iter().map(|rule| policy_rule(*rule)).collect();
        for family in Family::ALL.iter().filter(|f| families.contains(f)) {
            rules.extend(family_rules(*family).iter().map(|rule| policy_rule(*rule)));
            rules.extend(named_rules(*family));
        }
        let namespace = lease.namespace.as_str();
        let subject = Subject {
            kind: "ServiceAccount".to_owned(),
            name: ENGINE_ACCOUNT.to_owned(),
            namespace: Some(account_namespace.to_owned()),
            ..Subject::default()
        };
        Self {
            service_account: ServiceAccount {
                metadata: meta(Some(account_namespace)),
                ..ServiceAccount::default()
            },
            cluster_role: ClusterRole {
                metadata: meta(None),
                rules: Some(rules),
                ..ClusterRole::default()
            },
            cluster_role_binding: ClusterRoleBinding {
                metadata: meta(None),
                role_ref: role_ref("ClusterRole"),
                subjects: Some(vec![subject.clone()]),
            },
            role: Role {
                metadata: meta(Some(namespace)),
                rules: Some(lease_rules(&lease.name)),
            },
            role_binding: RoleBinding {
                metadata: meta(Some(namespace)),
                role_ref: role_ref("Role"),
                subjects: Some(vec![subject]),
            },
        }
    }

    /// Every object as multi-document YAML, ready for `kubectl apply -f -`.
    pub fn to_yaml(&self) -> String {
        [
            yaml_document(&self.service_account),
            yaml_document(&self.cluster_role),
            yaml_document(&self.cluster_role_binding),
            yaml_document(&self.role),
            yaml_document(&self.role_binding),
        ]
        .concat()
    }
}

/// The grants of one family confined to objects it names: the day-0 family patches the OS image kernel record
/// and no other ConfigMap.
fn named_rules(family: Family) -> Vec<PolicyRule> {
    match family {
        Family::Day0 => vec![PolicyRule {
            resource_names: Some(vec![os_image_kernels::CONFIG_MAP.to_owned()]),
            ..policy_rule(("", &["configmaps"], &["patch"]))
        }],
        Family::Kmm | Family::Shims | Family::Caches | Family::Hub => Vec::new(),
    }
}

/// Leader election needs to create the Lease (creation cannot be limited to a name) and to read and update that one
/// Lease; it follows it with the cluster-wide list and watch of [`COMMON_RULES`].
fn lease_rules(lease_name: &str) -> Vec<PolicyRule> {
    let group = "coordination.k8s.io";
    vec![
        policy_rule((group, &["leases"], &["create"])),
        PolicyRule {
            resource_names: Some(vec![lease_name.to_owned()]),
            ..policy_rule((group, &["leases"], &["get", "update"]))
        },
    ]
}

fn policy_rule((group, resources, verbs): (&str, &[&str], &[&str])) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![group.to_owned()]),
        resources: Some(resources.iter().map(|r| (*r).to_owned()).collect()),
        verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
        ..PolicyRule::default()
    }
}

fn meta(namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(ENGINE_ACCOUNT.to_owned()),
        namespace: namespace.map(str::to_owned),
        ..ObjectMeta::default()
    }
}

fn role_ref(kind: &str) -> RoleRef {
    RoleRef {
        api_group: "rbac.authorization.k8s.io".to_owned(),
        kind: kind.to_owned(),
        name: ENGINE_ACCOUNT.to_owned(),
    }
}

fn yaml_document<T: Serialize>(object: &T) -> String {
    match serde_saphyr::to_string(object) {
        Ok(yaml) => format!("---\n{yaml}"),
        Err(error) => format!("---\n# not printable: {error}\n"),
    }
}

#[cfg(test)]
mod tests {
    use kmm_api::lease::DEFAULT_LEASE_DURATION;

    use super::*;

    /// Every API call the engine makes, as (group, resource, verb, cluster-wide), and the owner references it sets
    /// (update on the owner's `finalizers`). Lease calls are namespaced.
    const ENGINE_CALLS: &[(&str, &str, &str, bool)] = &[
        (KMM_GROUP, "modules", "watch", true),
        (KMM_GROUP, "modules", "patch", true),
        (KMM_GROUP, "modules/status", "patch", true),
        (KMM_GROUP, "modules/finalizers", "update", true),
        (KMM_GROUP, "preflightvalidations", "watch", true),
        (KMM_GROUP, "preflightvalidations/status", "patch", true),
        (KMM_GROUP, "preflightvalidations/finalizers", "update", true),
        (KMM_GROUP, "moduleimagesconfigs/finalizers", "update", true),
        (
            KMM_GROUP,
            "modulebuildsignconfigs/finalizers",
            "update",
            true,
        ),
        (KMM_GROUP, "nodemodulesconfigs/finalizers", "update", true),
        ("", "nodes/finalizers", "update", true),
        (KMM_GROUP, "moduleimagesconfigs", "create", true),
        (KMM_GROUP, "moduleimagesconfigs", "patch", true),
        (KMM_GROUP, "moduleimagesconfigs", "delete", true),
        (KMM_GROUP, "moduleimagesconfigs/status", "patch", true),
        (KMM_GROUP, "modulebuildsignconfigs", "create", true),
        (KMM_GROUP, "modulebuildsignconfigs", "patch", true),
        (KMM_GROUP, "modulebuildsignconfigs", "delete", true),
        (KMM_GROUP, "modulebuildsignconfigs/status", "patch", true),
        (KMM_GROUP, "nodemodulesconfigs", "create", true),
        (KMM_GROUP, "nodemodulesconfigs", "patch", true),
        (KMM_GROUP, "nodemodulesconfigs", "delete", true),
        (KMM_GROUP, "nodemodulesconfigs/status", "patch", true),
        ("", "pods", "create", true),
        ("", "pods", "delete", true),
        ("", "pods", "deletecollection", true),
        ("", "pods", "patch", true),
        ("", "pods", "list", true),
        ("", "pods", "watch", true),
        ("", "pods/status", "get", true),
        ("", "nodes", "watch", true),
        ("", "nodes", "patch", true),
        ("", "configmaps", "get", true),
        ("", "secrets", "get", true),
        ("", "namespaces", "patch", true),
        ("events.k8s.io", "events", "create", true),
        ("events.k8s.io", "events", "patch", true),
        (KMM_GROUP, "moduleday0s", "get", true),
        (KMM_GROUP, "moduleday0s", "list", true),
        (KMM_GROUP, "moduleday0s", "watch", true),
        (KMM_GROUP, "moduleday0s", "create", true),
        (KMM_GROUP, "moduleday0s", "delete", true),
        (KMM_GROUP, "moduleday0s/status", "patch", true),
        (KMM_GROUP, "moduleday0s/finalizers", "update", true),
        ("", "configmaps", "watch", true),
        ("", "configmaps", "create", true),
        ("", "configmaps", "patch", true),
        ("", "pods/log", "get", true),
        (
            "machineconfiguration.openshift.io",
            "machineconfigs",
            "list",
            true,
        ),
        (
            "machineconfiguration.openshift.io",
            "machineconfigs",
            "watch",
            true,
        ),
        (
            "machineconfiguration.openshift.io",
            "machineconfigs",
            "patch",
            true,
        ),
        (
            "machineconfiguration.openshift.io",
            "machineconfigpools",
            "list",
            true,
        ),
        (
            "machineconfiguration.openshift.io",
            "machineconfigpools",
            "watch",
            true,
        ),
        ("config.openshift.io", "clusterversions", "get", true),
        ("config.openshift.io", "clusterversions", "watch", true),
        ("kubefledged.io", "imagecaches", "get", true),
        ("kubefledged.io", "imagecaches", "watch", true),
        ("kubefledged.io", "imagecaches", "patch", true),
        ("kubefledged.io", "imagecaches/status", "update", true),
        ("kubefledged.io", "imagecaches/finalizers", "update", true),
        ("coordination.k8s.io", "leases", "create", false),
        ("coordination.k8s.io", "leases", "get", false),
        ("coordination.k8s.io", "leases", "update", false),
        ("coordination.k8s.io", "leases", "list", true),
        ("coordination.k8s.io", "leases", "watch", true),
        ("apps", "deployments", "list", true),
        ("apps", "deployments", "watch", true),
        (
            "rbac.authorization.k8s.io",
            "clusterrolebindings",
            "list",
            true,
        ),
        (
            "rbac.authorization.k8s.io",
            "clusterrolebindings",
            "watch",
            true,
        ),
        ("apps", "daemonsets", "list", true),
        ("apps", "daemonsets", "watch", true),
        ("apps", "daemonsets", "create", true),
        ("apps", "daemonsets", "update", true),
        ("apps", "daemonsets", "delete", true),
        ("resource.k8s.io", "deviceclasses", "get", true),
        ("resource.k8s.io", "deviceclasses", "list", true),
        ("resource.k8s.io", "deviceclasses", "create", true),
        ("resource.k8s.io", "deviceclasses", "patch", true),
        ("resource.k8s.io", "deviceclasses", "delete", true),
        // The hub family.
        (HUB_GROUP, "managedclustermodules", "list", true),
        (HUB_GROUP, "managedclustermodules", "watch", true),
        (HUB_GROUP, "managedclustermodules/status", "patch", true),
        (
            HUB_GROUP,
            "managedclustermodules/finalizers",
            "update",
            true,
        ),
        (
            "cluster.open-cluster-management.io",
            "managedclusters",
            "list",
            true,
        ),
        (
            "cluster.open-cluster-management.io",
            "managedclusters",
            "watch",
            true,
        ),
        (
            "work.open-cluster-management.io",
            "manifestworks",
            "list",
            true,
        ),
        (
            "work.open-cluster-management.io",
            "manifestworks",
            "watch",
            true,
        ),
        (
            "work.open-cluster-management.io",
            "manifestworks",
            "create",
            true,
        ),
        (
            "work.open-cluster-management.io",
            "manifestworks",
            "update",
            true,
        ),
        (
            "work.open-cluster-management.io",
            "manifestworks",
            "delete",
            true,
        ),
        (SHIM_GROUP, "shims", "get", true),
        (SHIM_GROUP, "shims", "list", true),
        (SHIM_GROUP, "shims", "watch", true),
        (SHIM_GROUP, "shims", "patch", true),
        (SHIM_GROUP, "shims/status", "patch", true),
        (SHIM_GROUP, "shims/finalizers", "update", true),
        ("node.k8s.io", "runtimeclasses", "get", true),
        ("node.k8s.io", "runtimeclasses", "list", true),
        ("node.k8s.io", "runtimeclasses", "watch", true),
        ("node.k8s.io", "runtimeclasses", "create", true),
        ("node.k8s.io", "runtimeclasses", "patch", true),
        ("node.k8s.io", "runtimeclasses", "delete", true),
    ];

    /// The calls of the shim family alone.
    const SHIM_CALLS: &[(&str, &str, &str)] = &[
        (SHIM_GROUP, "shims", "get"),
        (SHIM_GROUP, "shims", "watch"),
        (SHIM_GROUP, "shims", "patch"),
        (SHIM_GROUP, "shims/status", "patch"),
        (SHIM_GROUP, "shims/finalizers", "update"),
        ("", "pods", "list"),
        ("", "pods", "watch"),
        ("", "pods", "create"),
        ("", "pods", "delete"),
        ("", "nodes", "list"),
        ("", "nodes", "watch"),
        ("", "nodes", "patch"),
        ("node.k8s.io", "runtimeclasses", "get"),
        ("node.k8s.io", "runtimeclasses", "create"),
        ("node.k8s.io", "runtimeclasses", "patch"),
        ("node.k8s.io", "runtimeclasses", "delete"),
        ("events.k8s.io", "events", "create"),
    ];

    #[test]
    fn an_engine_running_only_shims_is_granted_the_shim_calls_and_nothing_of_kmm() {
        let lease = LeaseConfig::new("engine-system", "engine-lease", "a", DEFAULT_LEASE_DURATION);
        let rules = EngineRbac::for_families(&lease, &[Family::Shims])
            .cluster_role
            .rules
            .unwrap_or_default();
        for (group, resource, verb) in SHIM_CALLS {
            assert!(
                grants(&rules, group, resource, verb),
                "{verb} {group}/{resource} is not granted"
            );
        }
        assert!(
            !rules
                .iter()
                .any(|r| r.api_groups.iter().flatten().any(|g| g == KMM_GROUP))
        );
        assert!(!grants(&rules, "", "secrets", "get"));
    }

    fn rbac() -> EngineRbac {
        EngineRbac::new(&LeaseConfig::new(
            "engine-system",
            "engine-lease",
            "a",
            DEFAULT_LEASE_DURATION,
        ))
    }

    fn grants(rules: &[PolicyRule], group: &str, resource: &str, verb: &str) -> bool {
        rules.iter().any(|rule| {
            let has = |list: &Option<Vec<String>>, item: &str| {
                list.as_ref().is_some_and(|l| l.iter().any(|x| x == item))
            };
            has(&rule.api_groups, group)
                && has(&rule.resources, resource)
                && rule.verbs.iter().any(|v| v == verb)
        })
    }

    #[test]
    fn every_engine_call_is_granted_where_it_is_made() {
        let rbac = rbac();
        let cluster = rbac.cluster_role.rules.unwrap_or_default();
        let namespaced = rbac.role.rules.unwrap_or_default();
        for (group, resource, verb, cluster_wide) in ENGINE_CALLS {
            let (granting, other) = if *cluster_wide {
                (&cluster, &namespaced)
            } else {
                (&namespaced, &cluster)
            };
            assert!(
                grants(granting, group, resource, verb),
                "{verb} {group}/{resource} is not granted"
            );
            assert!(
                !grants(other, group, resource, verb),
                "{verb} {group}/{resource} is granted in the wrong scope"
            );
        }
    }

    #[test]
    fn nothing_is_granted_that_the_engine_does_not_call() {
        let rbac = rbac();
        let rules = [
            rbac.cluster_role.rules.unwrap_or_default(),
            rbac.role.rules.unwrap_or_default(),
        ]
        .concat();
        for rule in &rules {
            for group in rule.api_groups.iter().flatten() {
                for resource in rule.resources.iter().flatten() {
                    let called = ENGINE_CALLS
                        .iter()
                        .any(|(g, r, _, _)| g == group && r == resource);
                    assert!(called, "{group}/{resource} is granted but never called");
                }
            }
            // Deleting by selector only ever takes the cache's finished pods.
            let only_pods = rule.resources.iter().flatten().all(|r| r == "pods");
            assert!(rule.verbs.iter().all(|verb| {
                [
                    "get", "list", "watch", "create", "patch", "update", "delete",
                ]
                .contains(&verb.as_str())
                    || (verb == "deletecollection" && only_pods)
            }));
        }
    }

    #[test]
    fn the_only_config_map_patched_is_the_os_image_kernel_record() {
        let rules = rbac().cluster_role.rules.unwrap_or_default();
        for rule in rules.iter().filter(|r| {
            r.resources.iter().flatten().any(|x| x == "configmaps")
                && r.verbs.iter().any(|v| v == "patch")
        }) {
            assert_eq!(
                rule.resource_names.as_deref(),
                Some(&[os_image_kernels::CONFIG_MAP.to_owned()][..])
            );
        }
    }

    #[test]
    fn no_wildcards() {
        let yaml = rbac().to_yaml();
        assert!(!yaml.contains('*'), "a wildcard in:\n{yaml}");
    }

    #[test]
    fn lease_access_is_confined_to_the_lease_namespace_and_name() {
        let rbac = rbac();
        assert_eq!(
            rbac.role.metadata.namespace.as_deref(),
            Some("engine-system")
        );
        let rules = rbac.role.rules.unwrap_or_default();
        for rule in &rules {
            let named = rule.resource_names.as_deref() == Some(&["engine-lease".to_owned()][..]);
            // Creation cannot be limited by name; everything else is.
            assert!(named || rule.verbs == ["create"], "unconfined: {rule:?}");
        }
    }

    #[test]
    fn the_bindings_grant_the_roles_to_the_service_account() {
        let rbac = rbac();
        let account = Subject {
            kind: "ServiceAccount".to_owned(),
            name: ENGINE_ACCOUNT.to_owned(),
            namespace: Some("engine-system".to_owned()),
            ..Subject::default()
        };
        assert_eq!(rbac.service_account.metadata.namespace, account.namespace);
        assert_eq!(
            rbac.service_account.metadata.name.as_deref(),
            Some(ENGINE_ACCOUNT)
        );
        assert_eq!(
            rbac.cluster_role_binding.subjects,
            Some(vec![account.clone()])
        );
        assert_eq!(rbac.role_binding.subjects, Some(vec![account]));
        assert_eq!(rbac.cluster_role_binding.role_ref.kind, "ClusterRole");
        assert_eq!(
            rbac.cluster_role_binding.role_ref.name,
            rbac.cluster_role.metadata.name.unwrap_or_default()
        );
        assert_eq!(rbac.role_binding.role_ref.kind, "Role");
        assert_eq!(
            rbac.role_binding.metadata.namespace,
            rbac.role.metadata.namespace
        );
    }

    #[test]
    fn the_yaml_holds_five_typed_documents() {
        let yaml = rbac().to_yaml();
        let kinds: Vec<&str> = yaml
            .lines()
            .filter_map(|line| line.strip_prefix("kind: "))
            .collect();
        assert_eq!(
            kinds,
            [
                "ServiceAccount",
                "ClusterRole",
                "ClusterRoleBinding",
                "Role",
                "RoleBinding"
            ]
        );
        assert_eq!(yaml.matches("---\n").count(), 5);
    }
}
