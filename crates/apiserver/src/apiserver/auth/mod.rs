//! Authentication and authorization, in one place for every transport: the HTTPS listener and in-process clients
//! presenting a bearer token go through [`Auth::authenticate`]; the in-process client without a token is the
//! administrator. Every request, however it arrived, is then authorized by RBAC ([`authorizer`]).

pub mod authorizer;
pub mod coverage;
pub mod credentials;
pub mod escalation;
/// Kept here as well as at the crate root, where it lives so the TLS layer can name users without depending on the
/// API server.
pub use crate::identity;
pub mod roles;
pub mod rules;
pub mod tokens;

use http::{HeaderMap, Method, header};
use subtle::ConstantTimeEq;

use super::errors::ApiError;
use super::request::{Endpoint, Query, Verb};
use crate::identity::{
    PresentedCertificate, UserInfo, parse_service_account, service_account_user,
};
use crate::store::ResourceKey;
use crate::store::Store;
use authorizer::Authorizer;
use credentials::Credentials;
use rules::{Attributes, ResourceAttributes};
use tokens::{Binding, Claims, Reference, TokenSigner};

/// A token issued to a ServiceAccount, and what it says.
#[derive(Debug, Clone)]
pub struct IssuedToken {
    /// The bearer token (a compact JWT).
    pub token: String,
    /// Its claims: subject, audiences, expiry.
    pub claims: Claims,
}

/// The holder of a valid bearer token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenHolder {
    /// Who holds it.
    pub user: UserInfo,
    /// The uid of the ServiceAccount it is bound to, for a ServiceAccount's token.
    pub uid: Option<String>,
    /// The audiences it is meant for; None when it is meant for any.
    pub audiences: Option<Vec<String>>,
}

impl TokenHolder {
    fn any_audience(user: UserInfo) -> Self {
        Self {
            user,
            uid: None,
            audiences: None,
        }
    }

    /// Whether the token is meant for `audience`.
    pub fn serves(&self, audience: &str) -> bool {
        self.audiences
            .as_ref()
            .is_none_or(|audiences| audiences.iter().any(|a| a == audience))
    }
}

/// The header naming the user a request is made as, for those allowed to impersonate.
pub const IMPERSONATE_USER: &str = "impersonate-user";

/// The header (repeated) naming the groups of the impersonated user.
pub const IMPERSONATE_GROUP: &str = "impersonate-group";

/// The server's credentials and its authorizer.
pub struct Auth {
    admin_token: String,
    viewer_token: String,
    signer: TokenSigner,
    authorizer: Authorizer,
}

impl Auth {
    /// The tokens and signing key of `credentials` (those a state directory keeps across restarts); the
    /// authorizer follows `store`.
    pub fn with_credentials(store: std::sync::Arc<Store>, credentials: &Credentials) -> Self {
        let signer = match credentials.signing_key() {
            Ok(key) => TokenSigner::from_key(&key),
            // Loaded credentials are checked before they get here; a key that is not one signs nothing anyone holds.
            Err(_) => TokenSigner::random(),
        };
        Self {
            admin_token: credentials.admin_token.clone(),
            viewer_token: credentials.viewer_token.clone(),
            signer,
            authorizer: Authorizer::new(store),
        }
    }

    /// The bearer token of the administrator (group `system:masters`).
    pub fn admin_token(&self) -> &str {
        &self.admin_token
    }

    /// The bearer token of the viewer (bound to the `view` ClusterRole).
    pub fn viewer_token(&self) -> &str {
        &self.viewer_token
    }

    /// The RBAC authorizer.
    pub fn authorizer(&self) -> &Authorizer {
        &self.authorizer
    }

    /// Issue a token for the ServiceAccount `namespace/name`, valid for `lifetime` seconds and bound to the
    /// account's uid: what a TokenRequest answers, and what in-process code running as a ServiceAccount (a
    /// simulated in-cluster controller) presents through [`crate::client_with_token`]. 404 when the
    /// account does not exist.
    pub fn issue_token(
        &self,
        store: &Store,
        namespace: &str,
        name: &str,
        lifetime: i64,
        audiences: Vec<String>,
    ) -> Result<IssuedToken, ApiError> {
        let key = ResourceKey::new("", "serviceaccounts");
        let account = store
            .get(&key, namespace, name)
            .ok_or_else(|| ApiError::not_found("", "serviceaccounts", name))?;
        let uid = account
            .value()
            .pointer("/metadata/uid")
            .and_then(|u| u.as_str())
            .unwrap_or("")
            .to_owned();
        let audiences = if audiences.is_empty() {
            vec![tokens::ISSUER.to_owned()]
        } else {
            audiences
        };
        let now = jiff::Timestamp::now().as_second();
        let claims = Claims {
            iss: tokens::ISSUER.to_owned(),
            sub: service_account_user(namespace, name),
            aud: audiences,
            iat: now,
            nbf: now,
            exp: now + lifetime,
            kubernetes: Binding {
                namespace: namespace.to_owned(),
                serviceaccount: Reference {
                    name: name.to_owned(),
                    uid,
                },
            },
        };
        Ok(IssuedToken {
            token: self.signer.sign(&claims),
            claims,
        })
    }

    /// Who makes a request: the holder of its connection's trusted client `certificate`, else whoever presents
    /// its bearer token (an untrusted certificate is passed over, as kube-apiserver tries its authenticators in
    /// turn); 401 when neither authenticates anyone.
    pub fn authenticate(
        &self,
        headers: &HeaderMap,
        certificate: Option<&PresentedCertificate>,
        store: &Store,
    ) -> Result<UserInfo, ApiError> {
        match certificate {
            Some(PresentedCertificate::Trusted(user)) => return Ok(user.clone()),
            Some(PresentedCertificate::Untrusted(why)) => {
                tracing::debug!("a client certificate was refused: {why}");
            }
            None => {}
        }
        let token = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer)
            .ok_or_else(ApiError::unauthorized)?;
        match self.token_holder(token, store) {
            Ok(holder) if holder.serves(tokens::ISSUER) => Ok(holder.user),
            Ok(holder) => {
                tracing::debug!(account = %holder.user.name, "a token meant for another audience was refused");
                Err(ApiError::unauthorized())
            }
            Err(why) => {
                tracing::debug!("a bearer token was refused: {why}");
                Err(ApiError::unauthorized())
            }
        }
    }

    /// Who holds `token`, and for which audiences it is meant: what a TokenReview answers. The administrator's and
    /// viewer's tokens are meant for any audience; a ServiceAccount token for those it was issued for, and only
    /// while its account (by uid) exists. Why not, when it authenticates no one.
    pub fn token_holder(&self, token: &str, store: &Store) -> Result<TokenHolder, String> {
        if same_secret(token, &self.admin_token) {
            return Ok(TokenHolder::any_audience(UserInfo::admin()));
        }
        if same_secret(token, &self.viewer_token) {
            return Ok(TokenHolder::any_audience(UserInfo::viewer()));
        }
        let claims = self
            .signer
            .verify(token, jiff::Timestamp::now().as_second())
            .map_err(|e| e.to_string())?;
        let binding = &claims.kubernetes;
        let key = ResourceKey::new("", "serviceaccounts");
        let account = store.get(&key, &binding.namespace, &binding.serviceaccount.name);
        let uid = account.as_ref().and_then(|a| {
            a.value()
                .pointer("/metadata/uid")
                .and_then(|u| u.as_str())
                .map(str::to_owned)
        });
        if uid.as_deref() != Some(binding.serviceaccount.uid.as_str()) {
            return Err(format!(
                "the ServiceAccount of {} no longer exists",
                claims.sub
            ));
        }
        Ok(TokenHolder {
            user: UserInfo::service_account(&binding.namespace, &binding.serviceaccount.name),
            uid: Some(binding.serviceaccount.uid.clone()),
            audiences: Some(claims.aud.clone()),
        })
    }

    /// The user the request is made as: `user` itself, or whom its impersonation headers name when `user` may
    /// impersonate them (verb `impersonate` on `users`, `groups` or `serviceaccounts`).
    /// A header that is not text is refused (400) rather than ignored: ignoring it would run the request as the
    /// caller, who asked to be someone else.
    pub fn impersonate(&self, user: UserInfo, headers: &HeaderMap) -> Result<UserInfo, ApiError> {
        let target = headers
            .get(IMPERSONATE_USER)
            .map(|v| header_text(IMPERSONATE_USER, v))
            .transpose()?
            .filter(|v| !v.is_empty());
        let groups: Vec<String> = headers
            .get_all(IMPERSONATE_GROUP)
            .iter()
            .map(|v| header_text(IMPERSONATE_GROUP, v).map(str::to_owned))
            .collect::<Result<_, _>>()?;
        let Some(target) = target else {
            if groups.is_empty() {
                return Ok(user);
            }
            return Err(ApiError::bad_request(format!(
                "requested {groups:?} without impersonating a user"
            )));
        };
        let ask = |resource: &str, namespace: &str, name: &str| {
            let attributes = Attributes::resource(
                "impersonate",
                ResourceAttributes {
                    resource: resource.to_owned(),
                    namespace: namespace.to_owned(),
                    name: name.to_owned(),
                    ..ResourceAttributes::default()
                },
            );
            self.authorizer.check(&user, &attributes)
        };
        let account = parse_service_account(target);
        match account {
            Some((namespace, name)) => ask("serviceaccounts", namespace, name)?,
            None => ask("users", "", target)?,
        }
        for group in &groups {
            ask("groups", "", group)?;
        }
        Ok(match account {
            Some((namespace, name)) if groups.is_empty() => {
                UserInfo::service_account(namespace, name)
            }
            _ => UserInfo::named(target, groups),
        })
    }
}

/// The text of header `name`'s `value`: 400 when it is not printable ASCII.
fn header_text<'a>(name: &str, value: &'a http::HeaderValue) -> Result<&'a str, ApiError> {
    value.to_str().map_err(|_| {
        ApiError::bad_request(format!("the {name} header is not printable ASCII text"))
    })
}

/// The attributes RBAC checks for a request to `endpoint`.
pub fn request_attributes(
    method: &Method,
    path: &str,
    endpoint: &Endpoint,
    query: &Query,
) -> Result<Attributes, ApiError> {
    let Endpoint::Resource(resource) = endpoint else {
        return Ok(Attributes::path(&method.as_str().to_lowercase(), path));
    };
    let verb = Verb::of(method, resource.name.is_some(), query)?;
    let mut name = resource.name.clone().unwrap_or_default();
    if name.is_empty()
        && matches!(verb, Verb::List | Verb::Watch)
        && let Some(selected) = query
            .get("fieldSelector")
            .and_then(|s| s.strip_prefix("metadata.name="))
            .filter(|n| !n.contains(','))
    {
        name = selected.to_owned();
    }
    // A request naming a namespace (`/api/v1/namespaces/x`, and its subresources) is made in that namespace.
    let namespace = match (&resource.namespace, &resource.name) {
        (Some(ns), _) => ns.clone(),
        (None, Some(own)) if resource.group.is_empty() && resource.plural == "namespaces" => {
            own.clone()
        }
        _ => String::new(),
    };
    // A WebSocket exec, attach or port-forward is a GET, yet it is authorized as `create`, as kube-apiserver does:
    // a reader of pods must not be able to run commands in them.
    let streams = matches!(
        resource.subresource.as_deref(),
        Some("exec" | "attach" | "portforward")
    );
    let verb = if streams && resource.group.is_empty() && resource.plural == "pods" {
        "create"
    } else {
        verb.as_str()
    };
    Ok(Attributes::resource(
        verb,
        ResourceAttributes {
            group: resource.group.clone(),
            resource: resource.plural.clone(),
            subresource: resource.subresource.clone().unwrap_or_default(),
            namespace,
            name,
        },
    ))
}

/// The token of an `Authorization: Bearer <token>` header.
fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Compare secrets without leaking how much of them matched through timing.
fn same_secret(presented: &str, expected: &str) -> bool {
    presented.as_bytes().ct_eq(expected.as_bytes()).into()
}

/// A random bearer token (256 bits, URL-safe).
pub fn random_token() -> String {
    use base64::Engine;
    use rand::RngCore;
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::request::parse_path;
    use rules::Target;

    fn attributes(method: Method, uri: &str) -> Attributes {
        let uri: http::Uri = uri.parse().unwrap();
        let endpoint = parse_path(uri.path(), |_, plural| plural == "pods").unwrap();
        request_attributes(&method, uri.path(), &endpoint, &Query::parse(uri.query())).unwrap()
    }

    fn resource(a: &Attributes) -> &ResourceAttributes {
        match &a.target {
            Target::Resource(r) => r,
            Target::Path(p) => panic!("a path: {p}"),
        }
    }

    #[test]
    fn verbs_follow_method_and_query() {
        let list = attributes(Method::GET, "/api/v1/namespaces/default/pods");
        assert_eq!(list.verb, "list");
        assert_eq!(resource(&list).namespace, "default");
        let watch = attributes(
            Method::GET,
            "/api/v1/namespaces/default/pods?watch=true&fieldSelector=metadata.name%3Dweb",
        );
        assert_eq!(
            (watch.verb.as_str(), resource(&watch).name.as_str()),
            ("watch", "web")
        );
        let log = attributes(Method::GET, "/api/v1/namespaces/default/pods/web/log");
        assert_eq!(
            (log.verb.as_str(), resource(&log).subresource.as_str()),
            ("get", "log")
        );
        let exec = attributes(
            Method::GET,
            "/api/v1/namespaces/default/pods/web/exec?command=ls",
        );
        assert_eq!(
            (exec.verb.as_str(), resource(&exec).subresource.as_str()),
            ("create", "exec")
        );
        let all = attributes(Method::DELETE, "/api/v1/namespaces/default/pods");
        assert_eq!(all.verb, "deletecollection");
        let discovery = attributes(Method::GET, "/apis");
        assert_eq!(discovery, Attributes::path("get", "/apis"));
    }

    #[test]
    fn only_bearer_tokens_are_read() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("bearer abc "), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer "), None);
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "abcd"));
    }
}
