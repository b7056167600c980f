//! Everything the in-cluster controller needs, as the objects `kmm-tui install` prints or applies and
//! `kmm-tui uninstall` removes: the CRDs, a Namespace, the engine's ServiceAccount with its least-privilege RBAC,
//! a Deployment of `kmm-tui controller` whose replicas elect the acting engine on the same Lease the console's
//! foreground engine uses, the Service in front of their metrics endpoints and, on clusters running the Prometheus
//! Operator, a ServiceMonitor that has Prometheus scrape them.

mod cluster;

use serde::Serialize;
use serde_json::{Value, json};

use kmm_engine::runtime::rbac::{ENGINE_ACCOUNT, EngineRbac};
use kmm_engine::{Family, LeaseConfig};

pub use cluster::{FIELD_MANAGER, apply, crd_contents, delete, serves_service_monitors};

pub use kmm_api::IMAGE_REPOSITORY;

/// Namespace the controller is installed in unless told otherwise.
pub const DEFAULT_NAMESPACE: &str = "kmm-tui-system";

/// Name of the controller's Deployment.
pub const DEPLOYMENT_NAME: &str = "kmm-tui-controller";

/// Port of the controller's health endpoint in its pods.
pub const HEALTH_PORT: u16 = 8081;

/// Port of the controller's metrics endpoint in its pods and on the metrics Service.
pub const METRICS_PORT: u16 = 8080;

/// Name of the Service in front of the controller pods' metrics endpoints.
pub const METRICS_SERVICE: &str = "kmm-tui-controller-metrics";

/// Labels of the controller's Deployment and pods: `app.kubernetes.io/name=kmm-tui`,
/// `app.kubernetes.io/component=controller`.
pub const POD_LABELS: [(&str, &str); 2] = [
    ("app.kubernetes.io/name", "kmm-tui"),
    ("app.kubernetes.io/component", "controller"),
];

/// Namespaces every cluster has: the controller may live in one, but install never creates or deletes them.
const CLUSTER_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

/// The image of this very version of kmm-tui.
pub fn default_image() -> String {
    format!("{IMAGE_REPOSITORY}:{}", env!("CARGO_PKG_VERSION"))
}

/// What to install.
#[derive(Clone, Debug)]
pub struct InstallOptions {
    /// Namespace of the Deployment and its ServiceAccount.
    pub namespace: String,
    /// Image the controller pods run.
    pub image: String,
    /// Families the controller runs (and is granted RBAC for).
    pub families: Vec<Family>,
    /// The Lease that elects the acting engine (its identity is unused: each pod's is its name).
    pub lease: LeaseConfig,
    /// Controller pods: one acts, the others stand by.
    pub replicas: i32,
    /// Also a ServiceMonitor for the Prometheus Operator: set when the cluster serves `monitoring.coreos.com`.
    pub service_monitor: bool,
}

/// Every object, in the order they can be applied: CRDs, Namespace, RBAC, Deployment.
pub fn manifests(options: &InstallOptions) -> Vec<Value> {
    let mut objects: Vec<Value> = kmm_api::crds::all().iter().map(to_value).collect();
    if !CLUSTER_NAMESPACES.contains(&options.namespace.as_str()) {
        objects.push(json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": options.namespace, "labels": labels()},
        }));
    }
    let rbac = EngineRbac::for_account(&options.lease, &options.families, &options.namespace);
    objects.extend([
        typed(&rbac.service_account, "v1", "ServiceAccount"),
        typed(
            &rbac.cluster_role,
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
        ),
        typed(
            &rbac.cluster_role_binding,
            "rbac.authorization.k8s.io/v1",
            "ClusterRoleBinding",
        ),
        typed(&rbac.role, "rbac.authorization.k8s.io/v1", "Role"),
        typed(
            &rbac.role_binding,
            "rbac.authorization.k8s.io/v1",
            "RoleBinding",
        ),
    ]);
    objects.push(deployment(options));
    objects.push(metrics_service(options));
    if options.service_monitor {
        objects.push(service_monitor(options));
    }
    objects
}

/// The Service in front of every controller pod's metrics endpoint, standby ones too: a standby reports
/// `leader_election_master_status 0`, which is how an alert tells a missing leader from a quiet one.
fn metrics_service(options: &InstallOptions) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": METRICS_SERVICE,
            "namespace": options.namespace,
            "labels": labels(),
        },
        "spec": {
            "selector": labels(),
            "ports": [{"name": "metrics", "port": METRICS_PORT, "targetPort": "metrics", "protocol": "TCP"}],
        },
    })
}

/// The Prometheus Operator's ServiceMonitor for [`metrics_service`].
fn service_monitor(options: &InstallOptions) -> Value {
    json!({
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {
            "name": METRICS_SERVICE,
            "namespace": options.namespace,
            "labels": labels(),
        },
        "spec": {
            "selector": {"matchLabels": labels()},
            "endpoints": [{"port": "metrics", "path": "/metrics", "interval": "30s"}],
        },
    })
}

/// The objects as multi-document YAML, for `kubectl apply -f -`.
pub fn to_yaml(objects: &[Value]) -> String {
    objects
        .iter()
        .map(|object| match serde_saphyr::to_string(object) {
            Ok(yaml) => format!("---\n{yaml}"),
            Err(error) => format!("---\n# not printable: {error}\n"),
        })
        .collect()
}

/// What `uninstall` deletes, in the order to delete them: the Deployment first (its engines stop), the CRDs last
/// and only with `include_crds`. Each is reduced to what identifies it.
pub fn removals(options: &InstallOptions, include_crds: bool) -> Vec<Value> {
    let all = manifests(options);
    let crds = kmm_api::crds::all().len();
    let (definitions, rest) = all.split_at(crds);
    let mut objects: Vec<Value> = rest.iter().rev().map(identity).collect();
    if include_crds {
        objects.extend(definitions.iter().map(identity));
    }
    objects
}

fn identity(object: &Value) -> Value {
    let mut metadata = json!({ "name": object["metadata"]["name"] });
    if let Some(namespace) = object["metadata"].get("namespace") {
        metadata["namespace"] = namespace.clone();
    }
    json!({
        "apiVersion": object["apiVersion"],
        "kind": object["kind"],
        "metadata": metadata,
    })
}

fn to_value<T: Serialize>(object: &T) -> Value {
    serde_json::to_value(object).unwrap_or(Value::Null)
}

/// A typed object with its `apiVersion` and `kind` first, as kubectl wants them.
fn typed<T: Serialize>(object: &T, api_version: &str, kind: &str) -> Value {
    let mut value = json!({ "apiVersion": api_version, "kind": kind });
    if let (Some(out), Value::Object(fields)) = (value.as_object_mut(), to_value(object)) {
        out.extend(fields);
    }
    value
}

fn labels() -> Value {
    POD_LABELS
        .iter()
        .map(|(key, value)| ((*key).to_owned(), json!(value)))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// The controller's Deployment: `replicas` pods of `kmm-tui controller` electing the acting engine on the Lease,
/// each with its pod name as identity (downward API), probed on its health endpoint, unprivileged and read-only.
fn deployment(options: &InstallOptions) -> Value {
    let families: Vec<&str> = options.families.iter().map(|f| f.as_str()).collect();
    let lease = &options.lease;
    let args = [
        "controller".to_owned(),
        format!("--lease-namespace={}", lease.namespace),
        format!("--lease-name={}", lease.name),
        "--identity=$(POD_NAME)".to_owned(),
        format!("--lease-duration={}", lease.lease_duration.as_secs().max(1)),
        format!("--families={}", families.join(",")),
        format!("--health-listen=0.0.0.0:{HEALTH_PORT}"),
        format!("--metrics-listen=0.0.0.0:{METRICS_PORT}"),
    ];
    let probe = |path: &str, period: u32, failures: u32| {
        json!({
            "httpGet": {"path": path, "port": "health"},
            "periodSeconds": period,
            "failureThreshold": failures,
        })
    };
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": DEPLOYMENT_NAME,
            "namespace": options.namespace,
            "labels": labels(),
        },
        "spec": {
            "replicas": options.replicas,
            "selector": {"matchLabels": labels()},
            "template": {
                "metadata": {"labels": labels()},
                "spec": {
                    "serviceAccountName": ENGINE_ACCOUNT,
                    "securityContext": {
                        "runAsNonRoot": true,
                        "runAsUser": 65532,
                        "runAsGroup": 65532,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [{
                        "name": "controller",
                        "image": options.image,
                        "args": args,
                        "env": [{
                            "name": "POD_NAME",
                            "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}},
                        }],
                        "ports": [
                            {"name": "health", "containerPort": HEALTH_PORT, "protocol": "TCP"},
                            {"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"},
                        ],
                        "livenessProbe": probe("/healthz", 10, 3),
                        "readinessProbe": probe("/readyz", 5, 3),
                        "resources": {
                            "requests": {"cpu": "50m", "memory": "64Mi"},
                            "limits": {"memory": "256Mi"},
                        },
                        "securityContext": {
                            "allowPrivilegeEscalation": false,
                            "readOnlyRootFilesystem": true,
                            "runAsNonRoot": true,
                            "capabilities": {"drop": ["ALL"]},
                        },
                    }],
                },
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kmm_api::lease::DEFAULT_LEASE_NAMESPACE;

    fn options(namespace: &str) -> InstallOptions {
        InstallOptions {
            namespace: namespace.to_owned(),
            image: default_image(),
            families: Family::ALL.to_vec(),
            lease: LeaseConfig::with_defaults("unused"),
            replicas: 2,
            service_monitor: false,
        }
    }

    fn kinds(objects: &[Value]) -> Vec<String> {
        objects
            .iter()
            .map(|o| o["kind"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    #[test]
    fn the_manifest_holds_crds_namespace_rbac_and_a_hardened_deployment() {
        let objects = manifests(&options(DEFAULT_NAMESPACE));
        let crds = kmm_api::crds::all().len();
        assert!(
            kinds(&objects[..crds])
                .iter()
                .all(|k| k == "CustomResourceDefinition")
        );
        assert_eq!(
            kinds(&objects[crds..]),
            [
                "Namespace",
                "ServiceAccount",
                "ClusterRole",
                "ClusterRoleBinding",
                "Role",
                "RoleBinding",
                "Deployment",
                "Service"
            ]
        );
        let binding = &objects[crds + 3];
        assert_eq!(binding["subjects"][0]["namespace"], DEFAULT_NAMESPACE);
        let role = &objects[crds + 4];
        assert_eq!(role["metadata"]["namespace"], DEFAULT_LEASE_NAMESPACE);
        let deployment = &objects[objects.len() - 2];
        let pod = &deployment["spec"]["template"]["spec"];
        assert_eq!(deployment["spec"]["replicas"], 2);
        assert_eq!(pod["serviceAccountName"], ENGINE_ACCOUNT);
        let container = &pod["containers"][0];
        let security = &container["securityContext"];
        assert_eq!(security["readOnlyRootFilesystem"], true);
        assert_eq!(security["allowPrivilegeEscalation"], false);
        assert_eq!(security["capabilities"]["drop"], json!(["ALL"]));
        assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
        let args: Vec<&str> = container["args"]
            .as_array()
            .expect("args")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(args[0], "controller");
        assert!(args.contains(&"--identity=$(POD_NAME)"));
        assert!(args.contains(&"--lease-name=kmm-tui-engine"));
        assert!(args.contains(&"--families=kmm,shims,caches,day0,hub"));
        assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
        assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
        assert!(args.contains(&"--metrics-listen=0.0.0.0:8080"));
        let service = objects.last().expect("a service");
        assert_eq!(service["spec"]["selector"], labels());
        assert_eq!(service["spec"]["ports"][0]["targetPort"], "metrics");
        assert_eq!(container["ports"][1]["name"], "metrics");
    }

    #[test]
    fn a_service_monitor_follows_the_service_when_the_cluster_runs_the_prometheus_operator() {
        let mut with_operator = options(DEFAULT_NAMESPACE);
        with_operator.service_monitor = true;
        let objects = manifests(&with_operator);
        let monitor = objects.last().expect("a service monitor");
        assert_eq!(monitor["kind"], "ServiceMonitor");
        assert_eq!(monitor["spec"]["selector"]["matchLabels"], labels());
        assert_eq!(monitor["spec"]["endpoints"][0]["port"], "metrics");
        assert_eq!(
            kinds(&removals(&with_operator, false))
                .first()
                .map(String::as_str),
            Some("ServiceMonitor")
        );
    }

    #[test]
    fn a_cluster_namespace_is_neither_created_nor_removed() {
        let objects = manifests(&options("kube-system"));
        assert!(!kinds(&objects).contains(&"Namespace".to_owned()));
        let removed = removals(&options("kube-system"), false);
        assert_eq!(kinds(&removed).first().map(String::as_str), Some("Service"));
        assert!(!kinds(&removed).contains(&"Namespace".to_owned()));
        assert!(!kinds(&removed).contains(&"CustomResourceDefinition".to_owned()));
    }

    #[test]
    fn crds_are_removed_last_and_only_when_asked() {
        let removed = removals(&options(DEFAULT_NAMESPACE), true);
        assert_eq!(
            kinds(&removed).last().map(String::as_str),
            Some("CustomResourceDefinition")
        );
        assert_eq!(removed[0]["metadata"]["namespace"], DEFAULT_NAMESPACE);
    }
}
