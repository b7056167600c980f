//! Metadata-only answers (`Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1`): GET, PATCH and
//! each WATCH event answer `meta.k8s.io` `PartialObjectMetadata` (only `apiVersion`, `kind` and `metadata`), LIST a
//! `PartialObjectMetadataList`. Garbage collectors, metadata informers and kube-rs's `*_metadata` calls ask for
//! these to keep only what they read, whatever the kind.

use bytes::Bytes;
use http::{HeaderValue, Response, header};
use http_body_util::BodyExt;
use serde_json::{Value, json};

use super::{RequestContext, read, write};
use crate::apiserver::errors::ApiError;
use crate::apiserver::negotiation::{self, MediaRange};
use crate::apiserver::request::Verb;
use crate::apiserver::{ApiServer, ResponseBody, full};

/// The group of the metadata-only kinds (and of `Table`).
const GROUP: &str = "meta.k8s.io";

/// The media types a resource answers with, for a 406's message.
const OFFERED: &str = "application/json, application/yaml, application/json;as=Table;v=v1;g=meta.k8s.io, application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io, application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io";

/// A metadata-only answer a client asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PartialMetadata {
    /// `PartialObjectMetadataList` rather than `PartialObjectMetadata`.
    list: bool,
    /// The `meta.k8s.io` version (`v1` or `v1beta1`).
    version: &'static str,
}

/// Which form a request's `Accept` header prefers among those a resource is served in: Some for metadata only,
/// None for whole objects or a Table (which the handlers recognise themselves). 406 when the client accepts none
/// of them, for instance an `as=` kind the server does not convert to.
pub(super) fn requested(ctx: &RequestContext) -> Result<Option<PartialMetadata>, ApiError> {
    let applies = matches!(
        (ctx.path.subresource.as_deref(), ctx.verb),
        (None, Verb::Get | Verb::List | Verb::Watch | Verb::Patch) | (Some("status"), Verb::Watch)
    );
    if !applies {
        return Ok(None);
    }
    negotiation::negotiate(ctx.accept(), None, OFFERED, of_range)
}

fn of_range(range: &MediaRange) -> Option<Option<PartialMetadata>> {
    if !range.takes_json() {
        return None;
    }
    let Some((kind, group, version)) = range.conversion() else {
        return Some(None);
    };
    let version = match version {
        "v1" => "v1",
        "v1beta1" => "v1beta1",
        _ => return None,
    };
    match (kind, group) {
        ("Table", GROUP) => Some(None),
        ("PartialObjectMetadata", GROUP) => Some(Some(PartialMetadata {
            list: false,
            version,
        })),
        ("PartialObjectMetadataList", GROUP) => Some(Some(PartialMetadata {
            list: true,
            version,
        })),
        _ => None,
    }
}

impl PartialMetadata {
    /// The `apiVersion` of the metadata-only kinds.
    fn api_version(self) -> String {
        format!("{GROUP}/{}", self.version)
    }

    /// An object reduced to its type and metadata.
    pub(super) fn object(self, object: &Value) -> Value {
        json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": self.api_version(),
            "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
        })
    }

    /// A list reduced to its metadata and its items' metadata.
    fn list(self, list: &Value) -> Value {
        let items: Vec<Value> = list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|item| self.object(item))
            .collect();
        json!({
            "kind": "PartialObjectMetadataList",
            "apiVersion": self.api_version(),
            "metadata": list.get("metadata").cloned().unwrap_or_else(|| json!({})),
            "items": items,
        })
    }

    /// 406 for a form that does not fit the answer: a list asked for as one object, or one object as a list.
    fn check_fits(self, is_list: bool) -> Result<(), ApiError> {
        if self.list == is_list {
            return Ok(());
        }
        let fitting = if is_list {
            "PartialObjectMetadataList"
        } else {
            "PartialObjectMetadata"
        };
        Err(ApiError::not_acceptable(&format!(
            "application/json, application/json;as={fitting};v={};g={GROUP}",
            self.version
        )))
    }

    fn content_type(self) -> String {
        let kind = if self.list {
            "PartialObjectMetadataList"
        } else {
            "PartialObjectMetadata"
        };
        format!("application/json;as={kind};g={GROUP};v={}", self.version)
    }
}

/// GET, LIST or PATCH answered with metadata only: the request is served as usual and its answer reduced. Errors
/// are answered unchanged, as `Status`.
pub(super) async fn serve(
    server: &ApiServer,
    ctx: &RequestContext,
    form: PartialMetadata,
) -> Result<Response<ResponseBody>, ApiError> {
    let is_list = ctx.verb == Verb::List;
    form.check_fits(is_list)?;
    let response = match ctx.verb {
        Verb::Get => read::get(server, ctx)?,
        Verb::List => read::list(server, ctx).await?,
        _ => write::patch(server, ctx)?,
    };
    if !response.status().is_success() {
        return Ok(response);
    }
    let (mut parts, body) = response.into_parts();
    let bytes = body
        .collect()
        .await
        .map(|collected| collected.to_bytes())
        .unwrap_or_default();
    let whole: Value = serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::internal(format!("the answer to reduce is not JSON: {e}")))?;
    let reduced = if is_list {
        form.list(&whole)
    } else {
        form.object(&whole)
    };
    if let Ok(value) = HeaderValue::from_str(&form.content_type()) {
        parts.headers.insert(header::CONTENT_TYPE, value);
    }
    parts.headers.remove(header::CONTENT_LENGTH);
    let body = Bytes::from(serde_json::to_vec(&reduced).unwrap_or_default());
    Ok(Response::from_parts(parts, full(body)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(accept: &str) -> Result<Option<PartialMetadata>, u16> {
        negotiation::negotiate(Some(accept), None, OFFERED, of_range).map_err(|e| e.code)
    }

    #[test]
    fn the_first_acceptable_form_wins() {
        let single = Some(PartialMetadata {
            list: false,
            version: "v1",
        });
        assert_eq!(
            form("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"),
            Ok(single)
        );
        assert_eq!(
            form(
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
            ),
            Ok(None)
        );
        assert_eq!(
            form(
                "application/json;as=Unknown;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1"
            ),
            Ok(Some(PartialMetadata {
                list: true,
                version: "v1beta1"
            }))
        );
        assert_eq!(
            form("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v9"),
            Err(406)
        );
        assert_eq!(form("application/json;as=Pod;g=;v=v1"), Err(406));
        assert_eq!(form("application/json"), Ok(None));
    }

    #[test]
    fn only_type_and_metadata_remain() {
        let form = PartialMetadata {
            list: false,
            version: "v1",
        };
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}});
        assert_eq!(
            form.object(&pod),
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": {"name": "p"}})
        );
    }
}
