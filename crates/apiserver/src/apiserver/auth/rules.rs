//! RBAC policy rules and the request attributes they are matched against, with kube-apiserver's matching rules:
//! `*` in any list, `*/<subresource>` resources, resource names, and `nonResourceURLs` with a trailing `*`.

use k8s_openapi::api::rbac::v1::PolicyRule;

/// What a request asks to do, in the terms RBAC rules are written in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attributes {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`, `impersonate`, ...
    pub verb: String,
    /// The resource or path acted on.
    pub target: Target,
}

/// A resource request or a non-resource path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Something under `/api` or `/apis/<group>`.
    Resource(ResourceAttributes),
    /// Any other path (`/version`, `/healthz`, `/metrics`, discovery).
    Path(String),
}

/// The resource part of a request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceAttributes {
    /// API group (`""` for core).
    pub group: String,
    /// Plural resource.
    pub resource: String,
    /// Subresource (`status`, `log`, `token`), empty for none.
    pub subresource: String,
    /// Namespace, empty for cluster-scoped requests and requests across namespaces.
    pub namespace: String,
    /// Object name, empty for collections.
    pub name: String,
}

impl Attributes {
    /// A resource request.
    pub fn resource(verb: &str, resource: ResourceAttributes) -> Self {
        Self {
            verb: verb.to_owned(),
            target: Target::Resource(resource),
        }
    }

    /// A non-resource request.
    pub fn path(verb: &str, path: &str) -> Self {
        Self {
            verb: verb.to_owned(),
            target: Target::Path(path.to_owned()),
        }
    }

    /// The namespace the request is confined to; RoleBindings grant nothing outside theirs.
    pub fn namespace(&self) -> &str {
        match &self.target {
            Target::Resource(r) => &r.namespace,
            Target::Path(_) => "",
        }
    }
}

/// One compiled policy rule.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rule {
    /// Verbs, or `*`.
    pub verbs: Vec<String>,
    /// API groups, or `*`.
    pub api_groups: Vec<String>,
    /// Resources (`pods`, `pods/log`, `*/status`, `*`).
    pub resources: Vec<String>,
    /// Object names; empty allows any.
    pub resource_names: Vec<String>,
    /// Non-resource paths (`/healthz`, `/apis/*`, `*`).
    pub non_resource_urls: Vec<String>,
}

const ALL: &str = "*";

impl From<&PolicyRule> for Rule {
    fn from(rule: &PolicyRule) -> Self {
        let list = |v: &Option<Vec<String>>| v.clone().unwrap_or_default();
        Self {
            verbs: rule.verbs.clone(),
            api_groups: list(&rule.api_groups),
            resources: list(&rule.resources),
            resource_names: list(&rule.resource_names),
            non_resource_urls: list(&rule.non_resource_urls),
        }
    }
}

impl Rule {
    /// Whether the rule allows the request.
    pub fn allows(&self, attributes: &Attributes) -> bool {
        if !has(&self.verbs, &attributes.verb) {
            return false;
        }
        match &attributes.target {
            Target::Resource(r) => {
                has(&self.api_groups, &r.group)
                    && self.resource_matches(r)
                    && (self.resource_names.is_empty()
                        || (!r.name.is_empty() && self.resource_names.contains(&r.name)))
            }
            Target::Path(path) => self
                .non_resource_urls
                .iter()
                .any(|url| url_covers(url, path)),
        }
    }

    fn resource_matches(&self, r: &ResourceAttributes) -> bool {
        if r.subresource.is_empty() {
            resource_covers(&self.resources, &r.resource)
        } else {
            resource_covers(
                &self.resources,
                &format!("{}/{}", r.resource, r.subresource),
            )
        }
    }
}

/// Whether `list` (verbs or API groups of a rule) holds `wanted`, itself or by `*`. A wanted `*` is held only by
/// a `*`.
pub(super) fn has(list: &[String], wanted: &str) -> bool {
    list.iter().any(|v| v == ALL || v == wanted)
}

/// Whether a rule's `resources` cover `resource` (`pods`, `pods/log`): by name, by `*`, or by `*/log` for any
/// resource's `log`.
pub(super) fn resource_covers(resources: &[String], resource: &str) -> bool {
    let subresource = resource.split_once('/').map(|(_, sub)| sub);
    resources.iter().any(|rule| {
        rule == ALL
            || rule == resource
            || subresource.is_some_and(|sub| rule.strip_prefix("*/") == Some(sub))
    })
}

/// Whether a rule's non-resource URL covers `path`: equal, or a prefix of it when the rule ends in `*`.
pub(super) fn url_covers(rule: &str, path: &str) -> bool {
    match rule.strip_suffix('*') {
        Some(prefix) => path.starts_with(prefix),
        None => rule == path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str], names: &[&str]) -> Rule {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect();
        Rule {
            verbs: v(verbs),
            api_groups: v(groups),
            resources: v(resources),
            resource_names: v(names),
            non_resource_urls: Vec::new(),
        }
    }

    fn pods(verb: &str, sub: &str, name: &str) -> Attributes {
        Attributes::resource(
            verb,
            ResourceAttributes {
                resource: "pods".into(),
                subresource: sub.into(),
                namespace: "default".into(),
                name: name.into(),
                ..Default::default()
            },
        )
    }

    #[test]
    fn verbs_are_distinct_unless_starred() {
        let get = rule(&["get"], &[""], &["pods"], &[]);
        assert!(get.allows(&pods("get", "", "a")));
        assert!(!get.allows(&pods("list", "", "")));
        assert!(!get.allows(&pods("watch", "", "")));
        assert!(rule(&["*"], &[""], &["pods"], &[]).allows(&pods("deletecollection", "", "")));
    }

    #[test]
    fn subresources_need_their_own_grant() {
        let pods_only = rule(&["get"], &[""], &["pods"], &[]);
        assert!(!pods_only.allows(&pods("get", "log", "a")));
        assert!(rule(&["get"], &[""], &["pods/log"], &[]).allows(&pods("get", "log", "a")));
        assert!(rule(&["get"], &[""], &["*/log"], &[]).allows(&pods("get", "log", "a")));
        assert!(!rule(&["get"], &[""], &["*/status"], &[]).allows(&pods("get", "log", "a")));
        assert!(rule(&["get"], &["*"], &["*"], &[]).allows(&pods("get", "log", "a")));
    }

    #[test]
    fn groups_must_match() {
        assert!(!rule(&["get"], &["apps"], &["pods"], &[]).allows(&pods("get", "", "a")));
    }

    #[test]
    fn resource_names_limit_named_requests_only() {
        let named = rule(&["get", "list"], &[""], &["pods"], &["a"]);
        assert!(named.allows(&pods("get", "", "a")));
        assert!(!named.allows(&pods("get", "", "b")));
        assert!(!named.allows(&pods("list", "", "")));
    }

    #[test]
    fn non_resource_urls_match_exactly_or_by_prefix() {
        let mut r = rule(&["get"], &[], &[], &[]);
        r.non_resource_urls = vec!["/metrics".into(), "/apis/*".into()];
        assert!(r.allows(&Attributes::path("get", "/metrics")));
        assert!(r.allows(&Attributes::path("get", "/apis/apps/v1")));
        assert!(!r.allows(&Attributes::path("get", "/version")));
        assert!(!r.allows(&Attributes::path("post", "/metrics")));
        assert!(!r.allows(&pods("get", "", "a")));
    }
}
