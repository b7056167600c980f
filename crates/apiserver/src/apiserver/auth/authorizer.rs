//! The RBAC authorizer: every request's attributes checked against the Roles and ClusterRoles bound to the user.
//!
//! Bindings are compiled once into an index by subject (user name or group), each entry carrying the rules of
//! its role and the namespace it is confined to. The index is rebuilt only after an RBAC object changes: the
//! authorizer follows the store's event stream and, before answering, drains what arrived since it last looked, so
//! a binding written before a request is always in force for it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::rbac::v1::{PolicyRule, RoleRef, Subject};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use tokio::sync::broadcast::error::TryRecvError;

use super::rules::{Attributes, Rule, Target};
use crate::apiserver::errors::ApiError;
use crate::identity::{UserInfo, service_account_user};
use crate::store::ResourceKey;
use crate::store::{FeedReceiver, Store};

/// The API group of RBAC objects.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// The answer to one question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Allowed, and by what (as kube-apiserver's reason says).
    Allow(String),
    /// No rule allows it.
    Deny,
}

impl Decision {
    /// Whether the request may go ahead.
    pub fn allowed(&self) -> bool {
        matches!(self, Decision::Allow(_))
    }
}

/// The rules one binding grants, and where.
#[derive(Debug, Clone)]
struct Grant {
    /// The namespace of a RoleBinding; None for a ClusterRoleBinding, which grants everywhere.
    namespace: Option<String>,
    /// The rules of the bound role.
    rules: Arc<Vec<Rule>>,
    /// What granted it, for the review's reason.
    source: Arc<str>,
}

/// Every binding, compiled and indexed by subject.
#[derive(Debug, Default)]
struct Index {
    by_user: HashMap<String, Vec<Grant>>,
    by_group: HashMap<String, Vec<Grant>>,
}

impl Index {
    fn build(store: &Store) -> Self {
        let cluster_roles: HashMap<String, Arc<Vec<Rule>>> =
            objects::<RoleObject>(store, "clusterroles")
                .into_iter()
                .map(|role| {
                    let rules = role.rules.iter().flatten().map(Rule::from).collect();
                    (role.metadata.name.unwrap_or_default(), Arc::new(rules))
                })
                .collect();
        let roles: HashMap<(String, String), Arc<Vec<Rule>>> =
            objects::<RoleObject>(store, "roles")
                .into_iter()
                .map(|role| {
                    let rules = role.rules.iter().flatten().map(Rule::from).collect();
                    let key = (
                        role.metadata.namespace.unwrap_or_default(),
                        role.metadata.name.unwrap_or_default(),
                    );
                    (key, Arc::new(rules))
                })
                .collect();
        let mut index = Index::default();
        for binding in objects::<BindingObject>(store, "clusterrolebindings") {
            if binding.role_ref.kind != "ClusterRole" {
                continue;
            }
            let Some(rules) = cluster_roles.get(&binding.role_ref.name) else {
                continue;
            };
            let source: Arc<str> = Arc::from(format!(
                "ClusterRoleBinding \"{}\" of ClusterRole \"{}\"",
                binding.metadata.name.as_deref().unwrap_or(""),
                binding.role_ref.name
            ));
            for subject in binding.subjects.iter().flatten() {
                index.add(subject, "", None, rules, &source);
            }
        }
        for binding in objects::<BindingObject>(store, "rolebindings") {
            let namespace = binding.metadata.namespace.clone().unwrap_or_default();
            let rules = match binding.role_ref.kind.as_str() {
                "ClusterRole" => cluster_roles.get(&binding.role_ref.name),
                "Role" => roles.get(&(namespace.clone(), binding.role_ref.name.clone())),
                _ => None,
            };
            let Some(rules) = rules else {
                continue;
            };
            let source: Arc<str> = Arc::from(format!(
                "RoleBinding \"{}/{}\" of {} \"{}\"",
                namespace,
                binding.metadata.name.as_deref().unwrap_or(""),
                binding.role_ref.kind,
                binding.role_ref.name
            ));
            for subject in binding.subjects.iter().flatten() {
                index.add(subject, &namespace, Some(&namespace), rules, &source);
            }
        }
        index
    }

    fn add(
        &mut self,
        subject: &Subject,
        binding_namespace: &str,
        scope: Option<&str>,
        rules: &Arc<Vec<Rule>>,
        source: &Arc<str>,
    ) {
        let grant = Grant {
            namespace: scope.map(str::to_owned),
            rules: rules.clone(),
            source: source.clone(),
        };
        match subject.kind.as_str() {
            "User" => self
                .by_user
                .entry(subject.name.clone())
                .or_default()
                .push(grant),
            "Group" => self
                .by_group
                .entry(subject.name.clone())
                .or_default()
                .push(grant),
            "ServiceAccount" => {
                let namespace = subject
                    .namespace
                    .as_deref()
                    .filter(|ns| !ns.is_empty())
                    .unwrap_or(binding_namespace);
                self.by_user
                    .entry(service_account_user(namespace, &subject.name))
                    .or_default()
                    .push(grant);
            }
            _ => {}
        }
    }

    /// Every grant that applies to `user` in `namespace` (cluster-wide grants apply everywhere).
    fn grants<'a>(
        &'a self,
        user: &'a UserInfo,
        namespace: &'a str,
    ) -> impl Iterator<Item = (&'a Grant, &'a str)> {
        let by_user = self
            .by_user
            .get(&user.name)
            .into_iter()
            .flatten()
            .map(move |g| (g, "User"));
        let by_group = user
            .groups
            .iter()
            .filter_map(|g| self.by_group.get(g))
            .flatten()
            .map(|g| (g, "Group"));
        by_user
            .chain(by_group)
            .filter(move |(grant, _)| match &grant.namespace {
                None => true,
                Some(ns) => !namespace.is_empty() && ns == namespace,
            })
    }
}

/// The metadata the index needs; managedFields, labels and the rest are never decoded.
#[derive(Deserialize)]
struct Meta {
    name: Option<String>,
    namespace: Option<String>,
}

/// A Role or ClusterRole, as far as the index reads it.
#[derive(Deserialize)]
struct RoleObject {
    metadata: Meta,
    rules: Option<Vec<PolicyRule>>,
}

/// A RoleBinding or ClusterRoleBinding, as far as the index reads it.
#[derive(Deserialize)]
struct BindingObject {
    metadata: Meta,
    #[serde(rename = "roleRef")]
    role_ref: RoleRef,
    subjects: Option<Vec<Subject>>,
}

fn objects<T: DeserializeOwned>(store: &Store, plural: &str) -> Vec<T> {
    let key = ResourceKey::new(RBAC_GROUP, plural);
    store
        .list(&key, None)
        .0
        .into_iter()
        .filter_map(|obj| match T::deserialize(&*obj.value()) {
            Ok(typed) => Some(typed),
            Err(e) => {
                tracing::warn!(plural, name = obj.name(), "RBAC object cannot be read: {e}");
                None
            }
        })
        .collect()
}

struct Cache {
    /// The store's events since the index was last checked; None (never in practice: watching from the current
    /// resourceVersion cannot be too old) means the index is rebuilt for every request, slower but still right.
    events: Option<FeedReceiver>,
    index: Option<Arc<Index>>,
}

/// Authorizes requests against the RBAC objects in the store.
pub struct Authorizer {
    store: Arc<Store>,
    cache: Mutex<Cache>,
}

impl Authorizer {
    /// An authorizer over `store`, following its changes from now on.
    pub fn new(store: Arc<Store>) -> Self {
        let events = store
            .watch_from(store.current_rv())
            .map(|(_, events)| events)
            .ok();
        Self {
            store,
            cache: Mutex::new(Cache {
                events,
                index: None,
            }),
        }
    }

    fn index(&self) -> Arc<Index> {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let mut stale = cache.index.is_none() || cache.events.is_none();
        if let Some(events) = cache.events.as_mut() {
            loop {
                match events.try_recv() {
                    Ok(event) => stale |= is_rbac(&event.resource),
                    Err(TryRecvError::Lagged(_)) => stale = true,
                    Err(TryRecvError::Empty | TryRecvError::Closed) => break,
                }
            }
        }
        if stale {
            cache.index = Some(Arc::new(Index::build(&self.store)));
        }
        cache.index.clone().unwrap_or_default()
    }

    /// May `user` do what `attributes` say?
    pub fn authorize(&self, user: &UserInfo, attributes: &Attributes) -> Decision {
        if user.is_master() {
            return Decision::Allow(format!(
                "User \"{}\" is in group \"system:masters\"",
                user.name
            ));
        }
        let index = self.index();
        index
            .grants(user, attributes.namespace())
            .find(|(grant, _)| grant.rules.iter().any(|rule| rule.allows(attributes)))
            .map(|(grant, subject_kind)| {
                let subject = if subject_kind == "User" {
                    format!("User \"{}\"", user.name)
                } else {
                    "a group of the user".to_owned()
                };
                Decision::Allow(format!("RBAC: allowed by {} to {subject}", grant.source))
            })
            .unwrap_or(Decision::Deny)
    }

    /// Authorize, or the 403 kube-apiserver would answer.
    pub fn check(&self, user: &UserInfo, attributes: &Attributes) -> Result<(), ApiError> {
        match self.authorize(user, attributes) {
            Decision::Allow(_) => Ok(()),
            Decision::Deny => Err(forbidden(user, attributes)),
        }
    }

    /// The rules that apply to `user` in `namespace` (cluster-wide ones included), for SelfSubjectRulesReview.
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> Vec<Rule> {
        let index = self.index();
        let mut rules: Vec<Rule> = Vec::new();
        for (grant, _) in index.grants(user, namespace) {
            for rule in grant.rules.iter() {
                if !rules.contains(rule) {
                    rules.push(rule.clone());
                }
            }
        }
        rules
    }
}

fn is_rbac(resource: &ResourceKey) -> bool {
    resource.group() == RBAC_GROUP
}

/// The 403 for a denied request, worded as kube-apiserver words it.
pub fn forbidden(user: &UserInfo, attributes: &Attributes) -> ApiError {
    match &attributes.target {
        Target::Path(path) => ApiError::forbidden(format!(
            "forbidden: User \"{}\" cannot {} path \"{path}\"",
            user.name, attributes.verb
        )),
        Target::Resource(r) => {
            let resource = if r.subresource.is_empty() {
                r.resource.clone()
            } else {
                format!("{}/{}", r.resource, r.subresource)
            };
            let scope = if r.namespace.is_empty() {
                "at the cluster scope".to_owned()
            } else {
                format!("in the namespace \"{}\"", r.namespace)
            };
            let why = format!(
                "User \"{}\" cannot {} resource \"{resource}\" in API group \"{}\" {scope}",
                user.name, attributes.verb, r.group
            );
            ApiError::forbidden_object(&r.group, &r.resource, &r.name, &why)
        }
    }
}
