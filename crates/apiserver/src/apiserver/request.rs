//! Turning an HTTP request into what it asks of the API: which endpoint, resource, object and options.

use http::Method;

use super::errors::ApiError;

/// Every endpoint the server answers.
#[derive(Debug, Clone, PartialEq)]
pub enum Endpoint {
    /// `/version`.
    Version,
    /// `/healthz`, `/livez`, `/readyz`.
    Health,
    /// `/metrics`: request counters and store sizes in the Prometheus text format.
    Metrics,
    /// `/api`: the core group's versions.
    CoreVersions,
    /// `/apis`: every group.
    Groups,
    /// `/apis/{group}`.
    Group(String),
    /// `/api/v1` or `/apis/{group}/{version}`: the resources of one group version.
    Resources { group: String, version: String },
    /// `/openapi/v2`: the one OpenAPI v2 document.
    OpenApiV2,
    /// `/openapi/v3`: the index of group-version documents.
    OpenApiIndex,
    /// `/openapi/v3/api/v1` or `/openapi/v3/apis/{group}/{version}`.
    OpenApiGroupVersion { group: String, version: String },
    /// Anything under a resource.
    Resource(ResourcePath),
}

/// A path that names a resource, optionally one object and a subresource.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourcePath {
    /// API group (empty for core).
    pub group: String,
    /// API version requested.
    pub version: String,
    /// Namespace from the URL (`/namespaces/{ns}/...`), if any.
    pub namespace: Option<String>,
    /// Plural resource name.
    pub plural: String,
    /// Object name, if the path names one object.
    pub name: Option<String>,
    /// Subresource (`status`, `log`, `binding`, `finalize`, ...).
    pub subresource: Option<String>,
}

/// Parse a URL path. `is_namespaced` tells whether a plural names a namespaced resource in the group, which
/// resolves `/api/v1/namespaces/{x}/{y}` (a namespaced list, or a namespace subresource).
pub(crate) fn parse_path(
    path: &str,
    is_namespaced: impl Fn(&str, &str) -> bool,
) -> Result<Endpoint, ApiError> {
    let segments: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let segments: Vec<String> = segments.iter().map(|s| percent_decode(s)).collect();
    let s: Vec<&str> = segments.iter().map(String::as_str).collect();
    let endpoint = match s.as_slice() {
        ["version"] => Endpoint::Version,
        ["healthz" | "livez" | "readyz", ..] => Endpoint::Health,
        ["metrics"] => Endpoint::Metrics,
        ["api"] => Endpoint::CoreVersions,
        ["apis"] => Endpoint::Groups,
        ["apis", group] => Endpoint::Group(group.to_string()),
        ["api", version] => Endpoint::Resources {
            group: String::new(),
            version: version.to_string(),
        },
        ["apis", group, version] => Endpoint::Resources {
            group: group.to_string(),
            version: version.to_string(),
        },
        ["openapi", "v2"] => Endpoint::OpenApiV2,
        ["openapi", "v3"] => Endpoint::OpenApiIndex,
        ["openapi", "v3", "api", version] => Endpoint::OpenApiGroupVersion {
            group: String::new(),
            version: version.to_string(),
        },
        ["openapi", "v3", "apis", group, version] => Endpoint::OpenApiGroupVersion {
            group: group.to_string(),
            version: version.to_string(),
        },
        ["api", version, rest @ ..] => Endpoint::Resource(
            resource_path("", version, rest, &is_namespaced)
                .ok_or_else(|| ApiError::no_route(path))?,
        ),
        ["apis", group, version, rest @ ..] => Endpoint::Resource(
            resource_path(group, version, rest, &is_namespaced)
                .ok_or_else(|| ApiError::no_route(path))?,
        ),
        _ => return Err(ApiError::no_route(path)),
    };
    Ok(endpoint)
}

fn resource_path(
    group: &str,
    version: &str,
    rest: &[&str],
    is_namespaced: &impl Fn(&str, &str) -> bool,
) -> Option<ResourcePath> {
    let make = |namespace: Option<&str>, plural: &str, name: Option<&str>, sub: Option<&str>| {
        ResourcePath {
            group: group.to_string(),
            version: version.to_string(),
            namespace: namespace.map(str::to_string),
            plural: plural.to_string(),
            name: name.map(str::to_string),
            subresource: sub.map(str::to_string),
        }
    };
    match rest {
        ["namespaces", ns, plural, tail @ ..] if is_namespaced(group, plural) => match tail {
            [] => Some(make(Some(ns), plural, None, None)),
            [name] => Some(make(Some(ns), plural, Some(name), None)),
            [name, sub] => Some(make(Some(ns), plural, Some(name), Some(sub))),
            _ => None,
        },
        [plural] => Some(make(None, plural, None, None)),
        [plural, name] => Some(make(None, plural, Some(name), None)),
        [plural, name, sub] => Some(make(None, plural, Some(name), Some(sub))),
        _ => None,
    }
}

/// Decode `%XX` escapes in one path segment (names never contain them, but clients may escape `:` and the like).
fn percent_decode(segment: &str) -> String {
    percent_encoding::percent_decode_str(segment)
        .decode_utf8_lossy()
        .into_owned()
}

/// Parsed query string; repeated keys keep the last value for [`Query::get`], as Go's `url.Values.Get` returns the
/// first — both are unusual for clients to send, and the last wins here. [`Query::all`] reads a key that is meant to
/// repeat (`command` of `pods/exec`).
#[derive(Debug, Default, Clone)]
pub struct Query(Vec<(String, String)>);

impl Query {
    /// Parse `a=b&c=d` with `+` and `%XX` decoding.
    pub fn parse(query: Option<&str>) -> Self {
        let pairs = form_urlencoded::parse(query.unwrap_or("").as_bytes());
        Self(pairs.into_owned().collect())
    }

    /// A parameter's value, if present and non-empty.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }

    /// Every value of a repeated parameter, in order.
    pub fn all(&self, key: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// A boolean parameter, read as kube-apiserver reads one: present with any value but `0` or `false` (in any
    /// case) is true, an empty value included, so the Python client's `watch=True` watches; absent is false.
    pub fn flag(&self, key: &str) -> bool {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .is_some_and(|(_, v)| v != "0" && !v.eq_ignore_ascii_case("false"))
    }

    /// A numeric parameter; a present but malformed value is a 400.
    pub fn number(&self, key: &str) -> Result<Option<i64>, ApiError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| {
                ApiError::bad_request(format!(
                    "invalid value for query parameter {key}: {v:?} is not a number"
                ))
            }),
        }
    }
}

/// What the request wants to do, from method and query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// GET of one object.
    Get,
    /// GET of a collection.
    List,
    /// GET with `watch=true`.
    Watch,
    /// POST.
    Create,
    /// PUT.
    Update,
    /// PATCH.
    Patch,
    /// DELETE of one object.
    Delete,
    /// DELETE of a collection.
    DeleteCollection,
}

impl Verb {
    /// Derive the verb, or fail with 405 for methods the API does not use.
    pub fn of(method: &Method, has_name: bool, query: &Query) -> Result<Verb, ApiError> {
        Ok(match (method.as_str(), has_name) {
            ("GET", _) if query.flag("watch") => Verb::Watch,
            ("GET", true) => Verb::Get,
            ("GET", false) => Verb::List,
            ("POST", _) => Verb::Create,
            ("PUT", true) => Verb::Update,
            ("PATCH", true) => Verb::Patch,
            ("DELETE", true) => Verb::Delete,
            ("DELETE", false) => Verb::DeleteCollection,
            (m, _) => return Err(ApiError::method_not_allowed(m, "")),
        })
    }

    /// The verb's name as discovery and RBAC spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
        }
    }
}

/// Whether the client asked for a `meta.k8s.io` Table (kubectl get) instead of plain objects.
pub(crate) fn wants_table(accept: Option<&str>) -> bool {
    accept.is_some_and(|a| {
        a.split(',')
            .any(|part| part.contains("as=Table") && part.contains("g=meta.k8s.io"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn namespaced(_: &str, plural: &str) -> bool {
        matches!(plural, "pods" | "configmaps")
    }

    #[test]
    fn paths_resolve_to_endpoints() {
        let p = |s: &str| parse_path(s, namespaced).unwrap();
        assert_eq!(p("/version"), Endpoint::Version);
        assert_eq!(p("/metrics"), Endpoint::Metrics);
        assert_eq!(p("/apis/apps"), Endpoint::Group("apps".into()));
        assert_eq!(
            p("/api/v1"),
            Endpoint::Resources {
                group: "".into(),
                version: "v1".into()
            }
        );
        let Endpoint::Resource(r) = p("/api/v1/namespaces/default/pods/web/log") else {
            panic!()
        };
        assert_eq!(
            (
                r.namespace.as_deref(),
                r.plural.as_str(),
                r.name.as_deref(),
                r.subresource.as_deref()
            ),
            (Some("default"), "pods", Some("web"), Some("log"))
        );
        let Endpoint::Resource(r) = p("/api/v1/namespaces/default/status") else {
            panic!()
        };
        assert_eq!(
            (
                r.namespace,
                r.plural.as_str(),
                r.name.as_deref(),
                r.subresource.as_deref()
            ),
            (None, "namespaces", Some("default"), Some("status"))
        );
        let Endpoint::Resource(r) = p("/api/v1/namespaces/kube-system") else {
            panic!()
        };
        assert_eq!(
            (r.plural.as_str(), r.name.as_deref()),
            ("namespaces", Some("kube-system"))
        );
        let Endpoint::Resource(r) =
            p("/apis/kmm.sigs.x-k8s.io/v1beta1/nodemodulesconfigs/worker-1")
        else {
            panic!()
        };
        assert_eq!(
            (r.group.as_str(), r.plural.as_str(), r.name.as_deref()),
            ("kmm.sigs.x-k8s.io", "nodemodulesconfigs", Some("worker-1"))
        );
        assert!(parse_path("/nope", namespaced).is_err());
        assert!(parse_path("/api/v1/a/b/c/d", namespaced).is_err());
    }

    #[test]
    fn query_decodes_selectors() {
        let q = Query::parse(Some(
            "labelSelector=app%3Dweb%2Ctier+in+%28a%2Cb%29&watch=1&limit=5",
        ));
        assert_eq!(q.get("labelSelector"), Some("app=web,tier in (a,b)"));
        assert!(q.flag("watch"));
        assert_eq!(q.number("limit").unwrap(), Some(5));
        assert!(Query::parse(Some("limit=x")).number("limit").is_err());
    }

    #[test]
    fn table_accept_header_is_recognised() {
        assert!(wants_table(Some(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
        )));
        assert!(!wants_table(Some("application/json")));
        assert!(!wants_table(None));
    }
}
