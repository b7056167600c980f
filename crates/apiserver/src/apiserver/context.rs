//! One resource request as the handlers and admission see it: the resource, verb, query, headers and
//! body, and the conversions every handler shares.

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, Method, header};
use serde_json::Value;

use super::errors::ApiError;
use super::registry::ResourceType;
use super::request::{Query, ResourcePath, Verb};
use super::{ApiServer, objects, protobuf};
use super::{conversion, events};
use crate::identity::UserInfo;
use crate::store::ResourceKey;
use crate::store::StoredObject;

/// How unknown fields in a request are treated (`?fieldValidation=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldValidation {
    /// Drop them silently.
    Ignore,
    /// Drop them and say so in `Warning` headers (the server's default).
    Warn,
    /// Reject the request with 400 (kubectl's default).
    Strict,
}

/// The media types a request body holding an object may be sent as.
const BODY_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "application/apply-patch+yaml",
];

/// Everything a handler needs to know about one resource request.
#[derive(Clone)]
pub struct RequestContext {
    /// The resource addressed.
    pub rt: Arc<ResourceType>,
    /// The parsed path.
    pub path: ResourcePath,
    /// The verb.
    pub verb: Verb,
    /// Query parameters.
    pub query: Query,
    /// Request headers.
    pub headers: HeaderMap,
    /// The request body.
    pub body: Bytes,
    /// Where objects of this resource are stored (events.k8s.io events share the core events' storage).
    pub storage: ResourceKey,
    /// Who makes the request (self-reviews and token requests answer about them).
    pub user: UserInfo,
    /// The connection, once switched to another protocol: what `pods/exec` and `attach` speak WebSocket over.
    /// None for in-process requests, which have no connection to hand over.
    pub upgrade: Option<hyper::upgrade::OnUpgrade>,
    /// The listener's hold on the connection the request came on: a session that outlives the request (exec,
    /// attach) keeps it, so its socket still counts against the connection cap. None for in-process requests.
    pub connection: Option<kmm_listener::Connection>,
}

impl RequestContext {
    /// Resolve the resource and verb of a request, or fail with 404/405.
    pub fn new(
        server: &ApiServer,
        user: &UserInfo,
        method: &Method,
        path: ResourcePath,
        query: Query,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<Self, ApiError> {
        let rt = server
            .registry()
            .get(&path.group, &path.plural)
            .filter(|rt| rt.serves(&path.version))
            .ok_or_else(|| ApiError::no_route(&format!("{} {}", path.group, path.plural)))?;
        if path.namespace.is_some() && !rt.namespaced {
            return Err(ApiError::no_route(&rt.plural));
        }
        if rt.namespaced && path.namespace.is_none() && path.name.is_some() {
            return Err(ApiError::no_route(&format!(
                "{}/{}",
                rt.plural,
                path.name.as_deref().unwrap_or("")
            )));
        }
        let verb = Verb::of(method, path.name.is_some(), &query)?;
        if path.subresource.is_none() && !rt.verbs.contains(&verb.as_str()) {
            return Err(ApiError::method_not_allowed(verb.as_str(), &rt.plural));
        }
        let storage = events::storage_key(&rt);
        Ok(Self {
            rt,
            path,
            verb,
            query,
            headers: headers.clone(),
            body,
            storage,
            user: user.clone(),
            upgrade: None,
            connection: None,
        })
    }

    /// The namespace of the request (`""` for cluster-scoped resources).
    pub fn namespace(&self) -> &str {
        self.path.namespace.as_deref().unwrap_or("")
    }

    /// The object name from the URL (`""` for collection requests).
    pub fn name(&self) -> &str {
        self.path.name.as_deref().unwrap_or("")
    }

    /// `apiVersion` of objects in responses.
    pub fn api_version(&self) -> String {
        self.rt.api_version(&self.path.version)
    }

    /// Whether the request is a dry run (`?dryRun=All`): everything happens except the write.
    pub fn dry_run(&self) -> bool {
        self.query.get("dryRun").is_some()
    }

    /// The field manager recorded in managedFields.
    pub fn manager(&self) -> String {
        objects::field_manager(self.query.get("fieldManager"), self.user_agent())
    }

    /// The `User-Agent` header, which names the client in managedFields and in the metrics.
    pub fn user_agent(&self) -> Option<&str> {
        self.headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
    }

    /// How to treat unknown fields.
    pub fn field_validation(&self) -> Result<FieldValidation, ApiError> {
        match self.query.get("fieldValidation") {
            None | Some("Warn") => Ok(FieldValidation::Warn),
            Some("Ignore") => Ok(FieldValidation::Ignore),
            Some("Strict") => Ok(FieldValidation::Strict),
            Some(other) => Err(ApiError::bad_request(format!(
                "fieldValidation must be one of \"Ignore\", \"Warn\" or \"Strict\", got {other:?}"
            ))),
        }
    }

    /// The `Accept` header.
    pub fn accept(&self) -> Option<&str> {
        self.headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
    }

    /// The body parsed as JSON (or YAML, which kubectl and users may send), required to be an object. A body sent
    /// as another media type (`text/plain`) is refused with 415, as kube-apiserver does; without a `Content-Type`
    /// it is read as JSON.
    pub fn body_object(&self) -> Result<Value, ApiError> {
        let media_type = self
            .headers
            .get(header::CONTENT_TYPE)
            .map(|v| v.to_str().unwrap_or("?"))
            .map(|v| {
                v.split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase()
            });
        match media_type.as_deref() {
            None | Some("") => {}
            Some(t) if BODY_TYPES.contains(&t) => {}
            Some(other) => {
                return Err(ApiError::unsupported_media_type(
                    other,
                    &BODY_TYPES.join(", "),
                ));
            }
        }
        parse_object(&self.body)
    }

    /// An object as the client should see it: stored bytes when nothing differs, converted otherwise.
    pub fn present(&self, obj: &StoredObject) -> Bytes {
        match self.presented_value(obj) {
            Some(value) => Bytes::from(serde_json::to_vec(&value).unwrap_or_default()),
            None => obj.json.clone(),
        }
    }

    /// The converted form of an object when the requested version or kind differs from storage.
    pub fn presented_value(&self, obj: &StoredObject) -> Option<Value> {
        if self.storage != self.rt.key() {
            return Some(events::from_storage(&self.rt, &obj.to_value()));
        }
        if self.path.version != self.rt.storage_version {
            return Some(conversion::from_storage(
                &self.rt,
                &self.path.version,
                obj.to_value(),
            ));
        }
        None
    }

    /// An object written through this request, in the form it is stored in.
    pub fn to_storage(&self, obj: Value) -> Value {
        events::to_storage(
            &self.rt,
            conversion::to_storage(&self.rt, &self.path.version, obj),
        )
    }

    /// The object as the client sees it, as a JSON value.
    pub fn present_value(&self, obj: &StoredObject) -> Value {
        self.presented_value(obj).unwrap_or_else(|| obj.to_value())
    }
}

/// Parse a request body (JSON, YAML as kubectl's apply-patch+yaml sends, or the protobuf envelope kubectl's typed
/// clients send) into a JSON object.
pub(crate) fn parse_object(body: &[u8]) -> Result<Value, ApiError> {
    if protobuf::is_protobuf(body) {
        return protobuf::decode_body(body);
    }
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request(
            "the request body is empty; send the object as JSON or YAML",
        ));
    }
    let value: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(json_error) => {
            let text = std::str::from_utf8(body)
                .map_err(|_| ApiError::bad_request("the request body is not UTF-8 text"))?;
            serde_saphyr::from_str(text)
                .map_err(|yaml_error| ApiError::bad_request(format!("the request body is neither valid JSON ({json_error}) nor valid YAML ({yaml_error})")))?
        }
    };
    if !value.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    Ok(value)
}
