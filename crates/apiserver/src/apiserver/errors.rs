//! API errors rendered as `metav1.Status`, the only error shape Kubernetes clients understand.
//!
//! kube-rs, client-go and kubectl all decode the body of a non-2xx response as a `Status` and branch on its `reason`
//! and `code` (a watcher relists on 410 `Expired`, a controller retries on 409 `Conflict`, kubectl prints `message`).
//! Every failure path of the server therefore ends in an [`ApiError`].

use serde_json::{Value, json};

use crate::store::CommitError;

/// One field-level problem, reported in `status.details.causes` so clients can point at the offending field.
#[derive(Debug, Clone, PartialEq)]
pub struct Cause {
    /// Machine-readable reason, e.g. `FieldValueRequired`, `FieldValueInvalid`, `FieldManagerConflict`.
    pub reason: String,
    /// Human-readable explanation of what is wrong and, where possible, how to fix it.
    pub message: String,
    /// Path of the field, e.g. `spec.kernelMappings[0].regexp`.
    pub field: String,
}

/// A failed request: HTTP code, `Status.reason`, a message and the object it concerns.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// HTTP status code; also written into `Status.code`.
    pub code: u16,
    /// `Status.reason` (`NotFound`, `AlreadyExists`, `Conflict`, `Invalid`, `BadRequest`, `Expired`, ...).
    pub reason: &'static str,
    /// What went wrong, worded as kube-apiserver words it so users recognise it.
    pub message: String,
    /// The object's group, kind and name, when the error is about one object.
    pub details: Option<Box<Details>>,
}

/// `Status.details`: which object the error is about and its field-level causes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Details {
    /// Object name (may be empty for collection-level errors).
    pub name: String,
    /// API group of the object (empty for the core group).
    pub group: String,
    /// Plural resource name, as kube-apiserver reports it in `details.kind`.
    pub kind: String,
    /// Field-level causes, for `Invalid` and apply conflicts.
    pub causes: Vec<Cause>,
    /// How long the client should wait before trying again, for errors that time will mend (a resourceVersion
    /// not reached yet, a request refused to share the server fairly); sent as the `Retry-After` header too.
    pub retry_after_seconds: Option<u64>,
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    fn with_details(mut self, group: &str, resource: &str, name: &str) -> Self {
        self.details = Some(Box::new(Details {
            name: name.to_string(),
            group: group.to_string(),
            kind: resource.to_string(),
            ..Details::default()
        }));
        self
    }

    /// 400: the request itself cannot be understood (malformed body, bad parameter).
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 401: no or wrong bearer token.
    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    /// 403: the request is understood but not allowed (e.g. creating in a terminating namespace).
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(403, "Forbidden", message)
    }

    /// A write a ValidatingAdmissionPolicy denied: `deployments.apps "web" is forbidden: <why>`, with the status
    /// reason and code of the validation's `reason` (422 `Invalid` when it names none) and the message as the one
    /// cause, as kube-apiserver answers.
    pub fn policy_denied(
        group: &str,
        resource: &str,
        name: &str,
        reason: Option<&str>,
        why: &str,
    ) -> Self {
        let (code, reason) = match reason {
            Some("Unauthorized") => (401, "Unauthorized"),
            Some("Forbidden") => (403, "Forbidden"),
            Some("RequestEntityTooLarge") => (413, "RequestEntityTooLarge"),
            _ => (422, "Invalid"),
        };
        let subject = if name.is_empty() {
            qualified(group, resource)
        } else {
            format!("{} \"{name}\"", qualified(group, resource))
        };
        let mut err = Self::new(code, reason, format!("{subject} is forbidden: {why}"))
            .with_details(group, resource, name);
        if let Some(details) = err.details.as_mut() {
            details.causes = vec![Cause {
                reason: String::new(),
                message: why.to_string(),
                field: String::new(),
            }];
        }
        err
    }

    /// 403 from authorization: `pods "web" is forbidden: <why>` (the name left out for collections), with the
    /// object in `details` as kube-apiserver reports it.
    pub fn forbidden_object(group: &str, resource: &str, name: &str, why: &str) -> Self {
        let subject = if name.is_empty() {
            qualified(group, resource)
        } else {
            format!("{} \"{name}\"", qualified(group, resource))
        };
        Self::new(403, "Forbidden", format!("{subject} is forbidden: {why}"))
            .with_details(group, resource, name)
    }

    /// 404 for a path that names no resource at all. It carries `details`, empty as kube-apiserver's: clients read
    /// the details of every NotFound (kubectl debug tells a cluster without ephemeral containers by them) and
    /// some fail on none.
    pub fn no_route(path: &str) -> Self {
        let mut err = Self::new(
            404,
            "NotFound",
            format!("the server could not find the requested resource ({path})"),
        );
        err.details = Some(Box::default());
        err
    }

    /// 404 for an object that does not exist.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(group, resource)),
        )
        .with_details(group, resource, name)
    }

    /// 405: the resource exists but does not support the verb.
    pub fn method_not_allowed(verb: &str, resource: &str) -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            format!(
                "the server does not allow this method on the requested resource ({verb} {resource})"
            ),
        )
    }

    /// 409 on create of an existing name.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(group, resource)),
        )
        .with_details(group, resource, name)
    }

    /// 409 on an update whose resourceVersion (or uid precondition) is stale.
    pub fn conflict(group: &str, resource: &str, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                qualified(group, resource)
            ),
        )
        .with_details(group, resource, name)
    }

    /// The standard optimistic-concurrency conflict.
    pub fn stale(group: &str, resource: &str, name: &str) -> Self {
        Self::conflict(
            group,
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 409 for server-side apply conflicts, with one cause per conflicting field.
    pub fn apply_conflict(
        group: &str,
        resource: &str,
        name: &str,
        message: String,
        causes: Vec<Cause>,
    ) -> Self {
        let mut err = Self::new(409, "Conflict", message).with_details(group, resource, name);
        if let Some(details) = err.details.as_mut() {
            details.causes = causes;
        }
        err
    }

    /// 410: a watch or list asked for history that has been compacted; clients must relist.
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 504: a list or watch asked for a resourceVersion the store has not reached (after waiting briefly for it),
    /// worded as kube-apiserver words it so clients that retry on its `ResourceVersionTooLarge` cause do.
    pub fn too_large_resource_version(requested: u64, current: u64) -> Self {
        let mut err = Self::new(
            504,
            "Timeout",
            format!("Timeout: Too large resource version: {requested}, current: {current}"),
        );
        err.details = Some(Box::new(Details {
            causes: vec![Cause {
                reason: "ResourceVersionTooLarge".into(),
                message: "Too large resource version".into(),
                field: String::new(),
            }],
            retry_after_seconds: Some(1),
            ..Details::default()
        }));
        err
    }

    /// 413: the body, the patch or the object it makes is larger than the server accepts; `why` says which limit.
    pub fn too_large(why: impl std::fmt::Display) -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: {why}"),
        )
    }

    /// The error of a commit that did not happen for another reason than a conflict (which each caller words
    /// itself): 413 for an object over the store's limit, 500 for a failure of the store.
    pub fn commit_failed(error: CommitError) -> Self {
        match error {
            CommitError::TooLarge { .. } => Self::too_large(error),
            other => Self::internal(other.to_string()),
        }
    }

    /// 429: the client holds as much as the server serves to one client (or to all) at once; `message` says which
    /// limit, and the client is told to retry after `retry_after_seconds`.
    pub fn too_many_requests(message: impl Into<String>, retry_after_seconds: u64) -> Self {
        let mut err = Self::new(429, "TooManyRequests", message);
        err.details = Some(Box::new(Details {
            retry_after_seconds: Some(retry_after_seconds),
            ..Details::default()
        }));
        err
    }

    /// The `Retry-After` a response to this error carries, if any.
    pub fn retry_after_seconds(&self) -> Option<u64> {
        self.details.as_ref().and_then(|d| d.retry_after_seconds)
    }

    /// 406: every media type the client accepts for the response is one the server does not write.
    pub fn not_acceptable(accepted: &str) -> Self {
        Self::new(
            406,
            "NotAcceptable",
            format!("only the following media types are accepted: {accepted}"),
        )
    }

    /// 415: a body in a media type the endpoint does not accept; `accepted` lists what it does accept.
    pub fn unsupported_media_type(content_type: &str, accepted: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format ({content_type:?}) - accepted media types include: {accepted}"
            ),
        )
    }

    /// 422 for a request that is well-formed but cannot be carried out (e.g. a failing JSON patch `test`).
    pub fn unprocessable(message: impl Into<String>) -> Self {
        Self::new(422, "Invalid", message)
    }

    /// 422: the object fails validation; `causes` say which fields and why.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<Cause>) -> Self {
        let summary = causes
            .iter()
            .map(|c| {
                if c.field.is_empty() {
                    c.message.clone()
                } else {
                    format!("{}: {}", c.field, c.message)
                }
            })
            .collect::<Vec<_>>();
        let message = format!(
            "{} \"{name}\" is invalid: {}",
            qualified_kind(group, kind),
            match summary.len() {
                1 => summary[0].clone(),
                _ => format!("[{}]", summary.join(", ")),
            }
        );
        // kube-apiserver names the kind (not the resource) in the details of an Invalid error, and kubectl prints it.
        let mut err = Self::new(422, "Invalid", message).with_details(group, kind, name);
        if let Some(details) = err.details.as_mut() {
            details.causes = causes;
        }
        err
    }

    /// 500: an internal failure (e.g. the durable store could not write). Never used for bad input.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    /// 503: the server is shutting down or not ready.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(503, "ServiceUnavailable", message)
    }

    /// The `metav1.Status` document for this error, its fields in the order kube-apiserver writes them (`code`
    /// last, after `details`), empty `details` fields left out as Go's `omitempty` leaves them: some clients
    /// compare error bodies as text.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        });
        if let Some(d) = &self.details {
            let mut details = serde_json::Map::new();
            for (key, value) in [("name", &d.name), ("group", &d.group), ("kind", &d.kind)] {
                if !value.is_empty() {
                    details.insert(key.into(), json!(value));
                }
            }
            if !d.causes.is_empty() {
                let causes = d
                    .causes
                    .iter()
                    .map(|c| {
                        let mut cause = json!({ "reason": c.reason, "message": c.message });
                        if c.reason.is_empty()
                            && let Some(fields) = cause.as_object_mut()
                        {
                            fields.remove("reason");
                        }
                        if !c.field.is_empty() {
                            cause["field"] = json!(c.field);
                        }
                        cause
                    })
                    .collect();
                details.insert("causes".into(), Value::Array(causes));
            }
            if let Some(seconds) = d.retry_after_seconds {
                details.insert("retryAfterSeconds".into(), json!(seconds));
            }
            status["details"] = Value::Object(details);
        }
        status["code"] = json!(self.code);
        status
    }

    /// The body of an error response: the Status as JSON and a newline, byte for byte what kube-apiserver's
    /// encoder writes.
    pub fn to_body(&self) -> Vec<u8> {
        let mut body = serde_json::to_vec(&self.to_status()).unwrap_or_default();
        body.push(b'\n');
        body
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for ApiError {}

/// `resource.group` as kube-apiserver prints it in messages (`pods`, `deployments.apps`).
fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

/// `Kind.group` as kube-apiserver prints it in validation messages (`Pod`, `Module.kmm.sigs.x-k8s.io`).
fn qualified_kind(group: &str, kind: &str) -> String {
    if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    }
}
