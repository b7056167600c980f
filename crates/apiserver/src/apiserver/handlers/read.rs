//! GET of one object and LIST of a collection (selectors, pagination, Table output).

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use bytes::{BufMut, Bytes, BytesMut};
use http::{Response, StatusCode};
use serde_json::{Value, json};

use super::RequestContext;
use super::filter::Filter;
use crate::apiserver::errors::ApiError;
use crate::apiserver::list_snapshots::SnapshotKey;
use crate::apiserver::request::wants_table;
use crate::apiserver::{ApiServer, ResponseBody, bytes_response, json_response, table};
use crate::store::{Store, StoredObject};

/// How long a list or watch from a resourceVersion the store has not reached waits for it before the server
/// answers `504 Timeout` (kube-apiserver waits about as long for its watch cache).
const FUTURE_VERSION_PATIENCE: Duration = Duration::from_secs(3);

/// GET one object (also `/status`, which returns the whole object as on a real server).
pub(super) fn get(
    server: &ApiServer,
    ctx: &RequestContext,
) -> Result<Response<ResponseBody>, ApiError> {
    let obj = server
        .store()
        .get(&ctx.storage, ctx.namespace(), ctx.name())
        .ok_or_else(|| ApiError::not_found(&ctx.rt.group, &ctx.rt.plural, ctx.name()))?;
    if wants_table(ctx.accept()) {
        let value = ctx.present_value(&obj);
        let meta = json!({ "resourceVersion": obj.rv.to_string() });
        return Ok(table_response(ctx, &[&value], meta));
    }
    Ok(bytes_response(
        StatusCode::OK,
        ctx.present(&obj),
        "application/json",
    ))
}

/// A continue token: the snapshot's resourceVersion and the last key returned.
struct ContinueToken {
    rv: u64,
    after: (String, String),
}

impl ContinueToken {
    fn encode(&self) -> String {
        let raw = json!({ "rv": self.rv, "ns": self.after.0, "name": self.after.1 }).to_string();
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
    }

    fn decode(token: &str) -> Result<Self, ApiError> {
        let invalid = || {
            ApiError::bad_request(format!(
                "continue key is not valid: {token:?}; start the list again without it"
            ))
        };
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token)
            .map_err(|_| invalid())?;
        let v: Value = serde_json::from_slice(&raw).map_err(|_| invalid())?;
        let rv = v.get("rv").and_then(Value::as_u64).ok_or_else(invalid)?;
        let ns = v
            .get("ns")
            .and_then(Value::as_str)
            .ok_or_else(invalid)?
            .to_string();
        let name = v
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(invalid)?
            .to_string();
        Ok(Self {
            rv,
            after: (ns, name),
        })
    }
}

/// How a list's snapshot names the label key the store's index selected its first page by, beside the fields.
const LABEL_KEY: &str = "metadata.labels";

/// LIST a collection.
pub(super) async fn list(
    server: &ApiServer,
    ctx: &RequestContext,
) -> Result<Response<ResponseBody>, ApiError> {
    let filter = Filter::from_request(ctx)?;
    if let Some(rv) = ctx.query.get("resourceVersion")
        && !rv.is_empty()
        && ctx.query.get("continue").is_none()
    {
        caught_up(server.store(), parse_rv(rv)?).await?;
    }
    let limit = ctx
        .query
        .number("limit")?
        .filter(|l| *l > 0)
        .map(|l| l as usize);
    let token = ctx
        .query
        .get("continue")
        .map(ContinueToken::decode)
        .transpose()?;
    let store = server.store();
    let snapshots = &server.inner().list_snapshots;
    let snapshot_key = |rv: u64, indexed: Option<(&str, &str)>| SnapshotKey {
        resource: ctx.storage.clone(),
        namespace: filter.namespace().map(str::to_owned),
        rv,
        indexed: indexed.map(|(field, value)| (field.to_owned(), value.to_owned())),
    };
    // The fields and label keys the store's index may have selected the first page by, and none.
    let candidates: Vec<Option<(&str, &str)>> = std::iter::once(None)
        .chain(filter.field_equalities().map(Some))
        .chain(filter.required_labels().map(|key| Some((LABEL_KEY, key))))
        .collect();
    let (all, rv, indexed) = match (
        &token,
        ctx.query.get("resourceVersionMatch"),
        ctx.query.get("resourceVersion"),
    ) {
        (Some(t), _, _) => {
            let kept = candidates.iter().find_map(|indexed| {
                let objects = snapshots.get(&snapshot_key(t.rv, *indexed))?;
                Some((objects, *indexed))
            });
            match kept {
                Some((objects, indexed)) => (objects, t.rv, indexed),
                None => (
                    Arc::new(snapshot_at(server, ctx, &filter, t.rv)?),
                    t.rv,
                    None,
                ),
            }
        }
        (None, Some("Exact"), Some(rv)) => {
            let rv = parse_rv(rv)?;
            (Arc::new(snapshot_at(server, ctx, &filter, rv)?), rv, None)
        }
        _ => {
            let by_index = filter.field_equalities().find_map(|(field, value)| {
                let (objects, rv) =
                    store.list_by_field(&ctx.storage, filter.namespace(), field, value)?;
                Some((objects, rv, Some((field, value))))
            });
            // Of the required label keys the index holds, the one the fewest objects hold.
            let by_label = || {
                filter
                    .required_labels()
                    .filter_map(|key| {
                        let (objects, rv) =
                            store.list_by_label(&ctx.storage, filter.namespace(), key)?;
                        Some((objects, rv, Some((LABEL_KEY, key))))
                    })
                    .min_by_key(|(objects, _, _)| objects.len())
            };
            let (objects, rv, indexed) = by_index.or_else(by_label).unwrap_or_else(|| {
                let (objects, rv) = store.list(&ctx.storage, filter.namespace());
                (objects, rv, None)
            });
            (Arc::new(objects), rv, indexed)
        }
    };
    let start = match &token {
        Some(t) => all.partition_point(|o| {
            (o.namespace(), o.name()) <= (t.after.0.as_str(), t.after.1.as_str())
        }),
        None => 0,
    };
    let mut items: Vec<Arc<StoredObject>> = Vec::new();
    let mut next = None;
    let mut evaluated = 0;
    for obj in &all[start..] {
        evaluated += 1;
        if !filter.selects(obj) {
            continue;
        }
        if limit.is_some_and(|l| items.len() == l) {
            let last = items
                .last()
                .map(|o| (o.namespace().to_string(), o.name().to_string()))
                .unwrap_or_default();
            next = Some(ContinueToken { rv, after: last }.encode());
            break;
        }
        items.push(obj.clone());
    }
    // The first page of a list read in pages keeps what it cut, for the pages after it; the last lets it go.
    match (&token, &next) {
        (None, Some(_)) => snapshots.keep(snapshot_key(rv, indexed), all.clone()),
        (Some(_), None) => snapshots.forget(&snapshot_key(rv, indexed)),
        _ => {}
    }
    let metrics = server.metrics();
    metrics.list_evaluated(&ctx.rt.plural, evaluated);
    metrics.list_returned(&ctx.rt.plural, ctx.user_agent(), items.len());
    let mut meta = json!({ "resourceVersion": rv.to_string() });
    if let Some(next) = &next {
        meta["continue"] = json!(next);
    }
    if wants_table(ctx.accept()) {
        let values: Vec<Value> = items.iter().map(|o| ctx.present_value(o)).collect();
        let refs: Vec<&Value> = values.iter().collect();
        return Ok(table_response(ctx, &refs, meta));
    }
    Ok(bytes_response(
        StatusCode::OK,
        list_body(ctx, &items, &meta),
        "application/json",
    ))
}

fn snapshot_at(
    server: &ApiServer,
    ctx: &RequestContext,
    filter: &Filter,
    rv: u64,
) -> Result<Vec<Arc<StoredObject>>, ApiError> {
    server.store().list_at(&ctx.storage, filter.namespace(), rv).map_err(|e| {
        ApiError::expired(format!(
            "The provided continue parameter is too old to display a consistent list result ({e}). You can start a new list without the continue parameter."
        ))
    })
}

/// Wait briefly until the store has reached `rv`, which a list or watch from a resourceVersion not yet written asks
/// for; `504 Timeout` (`ResourceVersionTooLarge`) when it does not, as kube-apiserver answers, rather than serving
/// an older state or a watch that would skip what comes before `rv`.
pub(super) async fn caught_up(store: &Store, rv: u64) -> Result<(), ApiError> {
    if rv <= store.current_rv() {
        return Ok(());
    }
    store
        .reached(rv, FUTURE_VERSION_PATIENCE)
        .await
        .map_err(|current| ApiError::too_large_resource_version(rv, current))
}

/// Parse a resourceVersion parameter.
pub(super) fn parse_rv(rv: &str) -> Result<u64, ApiError> {
    rv.parse()
        .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv:?}")))
}

/// `{"kind":"XList",...,"items":[...]}` assembled from the stored bytes without re-serialising the objects.
fn list_body(ctx: &RequestContext, items: &[Arc<StoredObject>], meta: &Value) -> Bytes {
    let head =
        json!({ "kind": ctx.rt.list_kind(), "apiVersion": ctx.api_version(), "metadata": meta })
            .to_string();
    let size: usize = items.iter().map(|o| o.json.len() + 1).sum::<usize>() + head.len() + 16;
    let mut out = BytesMut::with_capacity(size);
    out.put_slice(&head.as_bytes()[..head.len() - 1]);
    out.put_slice(b",\"items\":[");
    for (i, obj) in items.iter().enumerate() {
        if i > 0 {
            out.put_u8(b',');
        }
        out.put_slice(&ctx.present(obj));
    }
    out.put_slice(b"]}");
    out.freeze()
}

/// A `meta.k8s.io/v1` Table of objects, for kubectl's human-readable output.
pub(super) fn table_response(
    ctx: &RequestContext,
    objects: &[&Value],
    meta: Value,
) -> Response<ResponseBody> {
    let include = ctx.query.get("includeObject").unwrap_or("Metadata");
    let doc = table::to_table(
        &ctx.rt.columns,
        objects,
        include,
        meta,
        jiff::Timestamp::now(),
    );
    let mut response = json_response(StatusCode::OK, &doc);
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json;as=Table;v=v1;g=meta.k8s.io"),
    );
    response
}
