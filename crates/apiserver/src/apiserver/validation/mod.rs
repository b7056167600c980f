//! kube-apiserver's validation of built-in kinds, one module per kind (or family of kinds), so an object the
//! embedded cluster accepts is one a real cluster accepts, and one it refuses is refused with the same words.
//!
//! The engine has only ever written to this server; were it laxer than kube-apiserver, an engine bug a real
//! cluster would reject would pass every test here. Each rule names the field as kube-apiserver does, and every
//! problem of an object is reported in one 422.
//!
//! Status writes (`/status`) are not judged by these rules: kube-apiserver validates a status update against the
//! status's own rules only ([`validate_status`], for the kinds whose status has rules a client must keep), and the
//! simulation writes status many times a second.

mod apps;
mod autoscaling;
mod batch;
pub(crate) mod certificates;
mod cluster;
mod config;
mod container;
mod cron;
mod disruption;
mod ephemeral;
mod event;
pub(crate) mod field;
mod lease;
mod meta;
mod networking;
mod pod;
mod pod_claims;
mod port;
mod probe;
mod quantity;
mod rbac;
mod resource;
mod runtime_class;
mod scheduling;
mod service;
mod storage;
mod volumes;

use serde_json::Value;

use super::admission_policy::compile as admission_policy;
use super::defaults;
use super::errors::Cause;
use super::objects;
use super::registry::ResourceType;

/// The causes for refusing `obj`, a built-in object of `rt` after decoding and defaulting; empty when it is
/// valid. `old` is the stored object on updates, for the rules that fix fields once set.
pub(crate) fn validate(rt: &ResourceType, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut causes: Vec<Cause> = old
        .is_none()
        .then(|| objects::check_name(rt, name))
        .flatten()
        .into_iter()
        .collect();
    causes.extend(kind_rules(rt, obj, old).into_causes());
    causes
}

/// The causes for refusing a write of a pod's ephemeral containers (`pods/ephemeralcontainers`), which is judged
/// by their rules alone: nothing else of the pod changes through it.
pub(crate) fn validate_ephemeral_containers(pod: &Value, old: &Value) -> Vec<Cause> {
    ephemeral::update(pod, old).into_causes()
}

/// The causes for refusing a write of `obj`'s status through `/status`, judged by the rules of the status alone
/// (ResourceClaims: allocations and reservations); `old` is the stored object.
pub(crate) fn validate_status(rt: &ResourceType, obj: &Value, old: &Value) -> Vec<Cause> {
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("resource.k8s.io", "resourceclaims") => {
            resource::resource_claim_status(obj, old).into_causes()
        }
        _ => Vec::new(),
    }
}

/// The rules of `rt`'s kind.
fn kind_rules(rt: &ResourceType, obj: &Value, old: Option<&Value>) -> field::Errors {
    match (rt.group.as_str(), rt.plural.as_str(), old) {
        ("", "pods", None) => {
            let mut errors = pod::pod(obj);
            ephemeral::not_on_create(&mut errors, obj);
            errors
        }
        ("", "pods", Some(old)) => pod::pod_update(obj, &defaulted(rt, old)),
        ("", "replicationcontrollers", _) => apps::replication_controller(obj),
        ("", "services", None) => service::service(obj),
        ("", "services", Some(old)) => service::service_update(obj, old),
        ("", "serviceaccounts", _) => config::service_account(obj),
        ("", "configmaps", None) => config::config_map(obj),
        ("", "configmaps", Some(old)) => config::immutable_data(config::config_map(obj), obj, old),
        ("", "secrets", None) => config::secret(obj),
        ("", "secrets", Some(old)) => config::immutable_data(config::secret(obj), obj, old),
        ("", "namespaces", _) => cluster::namespace(obj),
        ("", "nodes", None) => cluster::node(obj),
        ("", "nodes", Some(old)) => cluster::node_update(obj, old),
        ("", "events", _) => event::event(obj, &event::CORE),
        ("events.k8s.io", "events", _) => event::event(obj, &event::EVENTS_V1),
        ("apps", "deployments", old) => selector_fixed(apps::deployment(obj), obj, old),
        ("apps", "replicasets", old) => selector_fixed(apps::replica_set(obj), obj, old),
        ("apps", "daemonsets", old) => selector_fixed(apps::daemon_set(obj), obj, old),
        ("apps", "statefulsets", old) => selector_fixed(apps::stateful_set(obj), obj, old),
        ("batch", "jobs", None) => batch::job(obj),
        ("batch", "jobs", Some(old)) => batch::job_update(obj, &defaulted(rt, old)),
        ("batch", "cronjobs", _) => batch::cron_job(obj),
        ("policy", "poddisruptionbudgets", _) => disruption::pod_disruption_budget(obj),
        ("rbac.authorization.k8s.io", "roles", _) => rbac::role(obj, true),
        ("rbac.authorization.k8s.io", "clusterroles", _) => rbac::role(obj, false),
        ("rbac.authorization.k8s.io", "rolebindings", None) => rbac::binding(obj, true),
        ("rbac.authorization.k8s.io", "rolebindings", Some(old)) => {
            rbac::binding_update(obj, old, true)
        }
        ("rbac.authorization.k8s.io", "clusterrolebindings", None) => rbac::binding(obj, false),
        ("rbac.authorization.k8s.io", "clusterrolebindings", Some(old)) => {
            rbac::binding_update(obj, old, false)
        }
        ("node.k8s.io", "runtimeclasses", None) => runtime_class::runtime_class(obj),
        ("node.k8s.io", "runtimeclasses", Some(old)) => {
            runtime_class::runtime_class_update(obj, old)
        }
        ("coordination.k8s.io", "leases", _) => lease::lease(obj),
        ("certificates.k8s.io", "certificatesigningrequests", _) => {
            certificates::certificate_signing_request(obj)
        }
        ("", "persistentvolumeclaims", _) => storage::persistent_volume_claim(obj),
        ("", "persistentvolumes", _) => storage::persistent_volume(obj),
        ("networking.k8s.io", "ingresses", _) => networking::ingress(obj),
        ("networking.k8s.io", "ingressclasses", _) => networking::ingress_class(obj),
        ("autoscaling", "horizontalpodautoscalers", _) => {
            autoscaling::horizontal_pod_autoscaler(obj)
        }
        ("resource.k8s.io", "deviceclasses", _) => resource::device_class(obj),
        ("resource.k8s.io", "resourceslices", None) => resource::resource_slice(obj),
        ("resource.k8s.io", "resourceslices", Some(old)) => {
            resource::resource_slice_update(obj, old)
        }
        ("resource.k8s.io", "resourceclaims", None) => resource::resource_claim(obj),
        ("resource.k8s.io", "resourceclaims", Some(old)) => {
            resource::immutable_spec(resource::resource_claim(obj), obj, &defaulted(rt, old))
        }
        ("resource.k8s.io", "resourceclaimtemplates", None) => {
            resource::resource_claim_template(obj)
        }
        ("resource.k8s.io", "resourceclaimtemplates", Some(old)) => resource::immutable_spec(
            resource::resource_claim_template(obj),
            obj,
            &defaulted(rt, old),
        ),
        ("admissionregistration.k8s.io", "validatingadmissionpolicies", _) => {
            admission_policy::policy(obj).err().unwrap_or_default()
        }
        ("admissionregistration.k8s.io", "validatingadmissionpolicybindings", _) => {
            admission_policy::binding(obj).err().unwrap_or_default()
        }
        _ => field::Errors::default(),
    }
}

/// A workload's errors, with its selector fixed on update.
fn selector_fixed(errors: field::Errors, obj: &Value, old: Option<&Value>) -> field::Errors {
    match old {
        Some(old) => apps::immutable_selector(errors, obj, old),
        None => errors,
    }
}

/// The stored object with today's defaults, so an object stored before a default existed is compared with an
/// update as if it had always had it.
fn defaulted(rt: &ResourceType, old: &Value) -> Value {
    let mut old = old.clone();
    defaults::apply(rt, &mut old);
    old
}
