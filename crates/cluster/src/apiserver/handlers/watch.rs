//! WATCH: a chunked stream of newline-delimited watch events.
//!
//! Semantics follow kube-apiserver: without a resourceVersion (or with "0") the stream starts with an ADDED event
//! per existing object; from a resourceVersion it replays exactly the events after it, or sends an ERROR event with
//! a 410 `Expired` Status when that history is gone so the client relists; `sendInitialEvents=true` ends the
//! initial state with a bookmark annotated `k8s.io/initial-events-end`; selectors turn changes that move an object
//! into or out of the selection into ADDED and DELETED; bookmarks carry the newest resourceVersion seen; the stream
//! ends after `timeoutSeconds`, when the server shuts down, or when it closes every open watch (the simulation's
//! `closeWatches` fault).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use futures::StreamExt;
use http::{HeaderValue, Response, StatusCode, header};
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use super::RequestContext;
use super::filter::Filter;
use super::read::parse_rv;
use crate::apiserver::errors::ApiError;
use crate::apiserver::request::wants_table;
use crate::apiserver::{ApiServer, ResponseBody, table};
use crate::store::{Event, EventType, Store, StoredObject};

/// How often an idle watch with bookmarks enabled is told the newest resourceVersion.
const BOOKMARK_INTERVAL: Duration = Duration::from_secs(15);
/// The longest a watch stays open when the client sets no timeout (kube-apiserver picks 30–60 minutes).
const DEFAULT_TIMEOUT_SECONDS: i64 = 1800;

/// Start a watch.
pub fn watch(server: &ApiServer, ctx: &RequestContext) -> Result<Response<ResponseBody>, ApiError> {
    let filter = Filter::from_request(ctx)?;
    let timeout = ctx
        .query
        .number("timeoutSeconds")?
        .filter(|t| *t > 0)
        .unwrap_or(DEFAULT_TIMEOUT_SECONDS)
        .min(24 * 3600);
    let send_initial = ctx.query.flag("sendInitialEvents");
    let watcher = Watcher {
        ctx: ctx.clone(),
        filter,
        bookmarks: ctx.query.flag("allowWatchBookmarks"),
        table: wants_table(ctx.accept()),
    };
    let store = server.store().clone();
    let (initial, since) = match ctx.query.get("resourceVersion") {
        None | Some("0") => {
            let (objects, rv) = store.list(&ctx.storage, watcher.filter.namespace());
            (Some(objects), rv)
        }
        Some(_) if send_initial => {
            let (objects, rv) = store.list(&ctx.storage, watcher.filter.namespace());
            (Some(objects), rv)
        }
        Some(rv) => (None, parse_rv(rv)?),
    };
    let (tx, rx) = mpsc::channel::<Bytes>(1024);
    match store.watch_from(since) {
        Ok((backlog, live)) => {
            let end = server.watch_end();
            let open = server.metrics().watch_opened(&ctx.rt.plural);
            tokio::spawn(async move {
                let _open = open;
                watcher
                    .run(
                        &store,
                        tx,
                        initial,
                        send_initial,
                        since,
                        backlog,
                        live,
                        Duration::from_secs(timeout as u64),
                        end,
                    )
                    .await;
            });
        }
        Err(too_old) => {
            let status = ApiError::expired(format!(
                "too old resource version: {} ({})",
                too_old.requested, too_old.oldest
            ))
            .to_status();
            let line = format!("{}\n", json!({ "type": "ERROR", "object": status }));
            let _ = tx.try_send(Bytes::from(line));
        }
    }
    let stream = ReceiverStream::new(rx).map(|b| Ok::<_, Infallible>(Frame::data(b)));
    let mut response = Response::new(StreamBody::new(stream).boxed_unsync());
    *response.status_mut() = StatusCode::OK;
    let content_type = if watcher_table(ctx) {
        "application/json;as=Table;v=v1;g=meta.k8s.io"
    } else {
        "application/json"
    };
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response.headers_mut().insert(
        header::TRANSFER_ENCODING,
        HeaderValue::from_static("chunked"),
    );
    Ok(response)
}

fn watcher_table(ctx: &RequestContext) -> bool {
    wants_table(ctx.accept())
}

struct Watcher {
    ctx: RequestContext,
    filter: Filter,
    bookmarks: bool,
    table: bool,
}

impl Watcher {
    #[allow(clippy::too_many_arguments)]
    async fn run(
        self,
        store: &Store,
        tx: mpsc::Sender<Bytes>,
        initial: Option<Vec<Arc<StoredObject>>>,
        send_initial: bool,
        since: u64,
        backlog: Vec<Arc<Event>>,
        mut live: broadcast::Receiver<Arc<Event>>,
        timeout: Duration,
        end: tokio_util::sync::CancellationToken,
    ) {
        let mut last_rv = since;
        if let Some(objects) = initial {
            for obj in objects.iter().filter(|o| self.filter.selects(o)) {
                if tx.send(self.encode("ADDED", obj)).await.is_err() {
                    return;
                }
            }
            if send_initial && tx.send(self.bookmark(last_rv, true)).await.is_err() {
                return;
            }
        }
        if !self.send_events(&tx, backlog, &mut last_rv).await {
            return;
        }
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut ticker = tokio::time::interval(BOOKMARK_INTERVAL);
        ticker.tick().await;
        loop {
            tokio::select! {
                received = live.recv() => match received {
                    Ok(event) => {
                        if event.rv <= last_rv {
                            continue;
                        }
                        last_rv = event.rv;
                        if let Some(line) = self.event_line(&event)
                            && tx.send(line).await.is_err()
                        {
                            return;
                        }
                    }
                    // Behind the live feed: catch up from the store's history, as kube-apiserver's watchers
                    // read from its watch cache. A watcher behind even the history is closed, and its client
                    // resumes from its last resourceVersion (or relists after `410 Expired`).
                    Err(broadcast::error::RecvError::Lagged(_)) => match store.watch_from(last_rv) {
                        Ok((missed, resumed)) => {
                            live = resumed;
                            if !self.send_events(&tx, missed, &mut last_rv).await {
                                return;
                            }
                        }
                        Err(_) => return,
                    },
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                _ = ticker.tick(), if self.bookmarks => {
                    if tx.send(self.bookmark(last_rv, false)).await.is_err() {
                        return;
                    }
                }
                _ = &mut deadline => {
                    if self.bookmarks {
                        let _ = tx.send(self.bookmark(last_rv, false)).await;
                    }
                    return;
                }
                _ = end.cancelled() => return,
                _ = tx.closed() => return,
            }
        }
    }

    /// Send the lines of `events` this watcher sees, moving `last_rv` past each; false once the client is gone.
    async fn send_events(
        &self,
        tx: &mpsc::Sender<Bytes>,
        events: Vec<Arc<Event>>,
        last_rv: &mut u64,
    ) -> bool {
        for event in events {
            *last_rv = event.rv;
            if let Some(line) = self.event_line(&event)
                && tx.send(line).await.is_err()
            {
                return false;
            }
        }
        true
    }

    /// The line for a store event as this watcher sees it, if it sees it at all.
    fn event_line(&self, event: &Event) -> Option<Bytes> {
        if event.resource != self.ctx.storage {
            return None;
        }
        let now = self.filter.selects(&event.object);
        let before = event
            .previous
            .as_ref()
            .map(|p| self.filter.selects(p))
            .unwrap_or(now);
        let kind = match event.kind {
            EventType::Added => now.then_some("ADDED"),
            EventType::Modified => match (before, now) {
                (true, true) => Some("MODIFIED"),
                (false, true) => Some("ADDED"),
                (true, false) => Some("DELETED"),
                (false, false) => None,
            },
            EventType::Deleted => (before || now).then_some("DELETED"),
        }?;
        Some(self.encode(kind, &event.object))
    }

    fn encode(&self, kind: &str, obj: &StoredObject) -> Bytes {
        let object = if self.table {
            let value = self.ctx.present_value(obj);
            let include = self.ctx.query.get("includeObject").unwrap_or("Metadata");
            let doc = table::to_table(
                &self.ctx.rt.columns,
                &[&value],
                include,
                json!({ "resourceVersion": obj.rv.to_string() }),
                jiff::Timestamp::now(),
            );
            Bytes::from(serde_json::to_vec(&doc).unwrap_or_default())
        } else {
            self.ctx.present(obj)
        };
        let mut out = BytesMut::with_capacity(object.len() + 32);
        out.put_slice(b"{\"type\":\"");
        out.put_slice(kind.as_bytes());
        out.put_slice(b"\",\"object\":");
        out.put_slice(&object);
        out.put_slice(b"}\n");
        out.freeze()
    }

    fn bookmark(&self, rv: u64, initial_events_end: bool) -> Bytes {
        let mut metadata = json!({ "resourceVersion": rv.to_string() });
        if initial_events_end {
            metadata["annotations"] = json!({ "k8s.io/initial-events-end": "true" });
        }
        let object: Value = json!({ "kind": self.ctx.rt.kind, "apiVersion": self.ctx.api_version(), "metadata": metadata });
        Bytes::from(format!(
            "{}\n",
            json!({ "type": "BOOKMARK", "object": object })
        ))
    }
}
