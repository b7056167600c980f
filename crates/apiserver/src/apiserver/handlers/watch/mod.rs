//! WATCH: a chunked stream of newline-delimited watch events.
//!
//! Semantics follow kube-apiserver: without a resourceVersion (or with "0") the stream starts with an ADDED event
//! per existing object; from a resourceVersion it replays exactly the events after it, or sends an ERROR event with
//! a 410 `Expired` Status when that history is gone so the client relists; `sendInitialEvents=true` ends the
//! initial state with a bookmark annotated `k8s.io/initial-events-end`; selectors turn changes that move an object
//! into or out of the selection into ADDED and DELETED; bookmarks carry the newest resourceVersion seen; the stream
//! ends after `timeoutSeconds`, when the server shuts down, or when it closes every open watch (the simulation's
//! `closeWatches` fault). A watch from a resourceVersion the store has not reached waits briefly for it and is
//! otherwise refused with `504 Timeout`, as kube-apiserver refuses it.
//!
//! Each watch reads the store's live feed from its own cursor and queues its lines in a buffer bounded in bytes
//! ([`outbound`]). A client that stops reading fills that buffer; once the writes since the watch started no
//! longer fit in the feed while it waits, the watch is closed, as kube-apiserver closes a watcher that does not
//! keep up, and the client resumes from its last resourceVersion (or relists after `410 Expired`). So a watcher
//! keeps alive at most its buffer and one batch of events, however large the writes and however long it stays
//! connected.

mod outbound;

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use futures::StreamExt;
use http::{HeaderValue, Response, StatusCode, header};
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use prometheus_client::metrics::counter::Counter;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::TryRecvError;
use tokio_util::sync::CancellationToken;

use super::RequestContext;
use super::filter::Filter;
use super::partial_metadata::{self, PartialMetadata};
use super::read::{caught_up, parse_rv};
use crate::apiserver::errors::ApiError;
use crate::apiserver::request::wants_table;
use crate::apiserver::{ApiServer, ResponseBody, table};
use crate::store::{Event, EventType, FeedReceiver, Store, StoredObject};
use outbound::{Outbound, WATCH_BUFFER_BYTES};

/// How often an idle watch with bookmarks enabled is told the newest resourceVersion.
const BOOKMARK_INTERVAL: Duration = Duration::from_secs(15);
/// The longest a watch stays open when the client sets no timeout (kube-apiserver picks 30–60 minutes).
const DEFAULT_TIMEOUT_SECONDS: i64 = 1800;

/// Start a watch.
pub(super) async fn watch(
    server: &ApiServer,
    ctx: &RequestContext,
) -> Result<Response<ResponseBody>, ApiError> {
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
        metadata_only: partial_metadata::requested(ctx)?,
        sent: server
            .metrics()
            .watch_events(&ctx.rt.plural, ctx.user_agent()),
    };
    let store = server.store().clone();
    let requested = match ctx.query.get("resourceVersion") {
        None | Some("0" | "") => None,
        Some(rv) => Some(parse_rv(rv)?),
    };
    if let Some(rv) = requested {
        caught_up(&store, rv).await?;
    }
    let (initial, since) = match requested {
        Some(rv) if !send_initial => (None, rv),
        _ => {
            let (objects, rv) = store.list(&ctx.storage, watcher.filter.namespace());
            (Some(objects), rv)
        }
    };
    let (out, lines) = outbound::outbound(WATCH_BUFFER_BYTES);
    match store.events_after(since, 0) {
        Ok(_) => {
            let end = server.watch_end();
            let open = server.metrics().watch_opened(&ctx.rt.plural);
            let started = store.current_rv();
            let feed = store.feed_from(since);
            let source = Source {
                initial: initial.map(VecDeque::from).unwrap_or_default(),
                initial_end: send_initial,
                batch: VecDeque::new(),
                feed,
                last_rv: since,
            };
            tokio::spawn(async move {
                let _open = open;
                watcher
                    .run(
                        &store,
                        out,
                        source,
                        started,
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
            out.try_send(Bytes::from(line));
        }
    }
    let stream = lines.map(|b| Ok::<_, Infallible>(Frame::data(b)));
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
    /// Each event's object reduced to its metadata, when the client asked for that.
    metadata_only: Option<PartialMetadata>,
    /// The count of objects this client was sent on watches of the resource.
    sent: Counter,
}

/// Where a watch's next line comes from: the initial objects, then the end of the initial events, then the
/// store's events after `last_rv` (from the live feed, or from the history in bounded batches when the feed no
/// longer holds them).
struct Source {
    initial: VecDeque<Arc<StoredObject>>,
    initial_end: bool,
    batch: VecDeque<Arc<Event>>,
    feed: FeedReceiver,
    last_rv: u64,
}

/// The watch cannot go on: it fell behind the store's history, or the store is gone.
struct Closed;

/// What woke a watch up.
enum Woken {
    /// Its pending line was queued (false: the client is gone).
    Sent(bool),
    /// The store published a newer event (false: the store is gone).
    Published(bool),
    /// Time for a bookmark.
    Bookmark,
    /// The watch is over: timed out, the server is stopping, or the client left.
    Ended { timed_out: bool },
}

impl Watcher {
    async fn run(
        self,
        store: &Store,
        out: Outbound,
        mut source: Source,
        started: u64,
        timeout: Duration,
        end: CancellationToken,
    ) {
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut ticker = tokio::time::interval(BOOKMARK_INTERVAL);
        ticker.tick().await;
        let mut pending: Option<Bytes> = None;
        loop {
            while pending.is_none() {
                match self.next_line(store, &mut source) {
                    Ok(Some(line)) => pending = line,
                    Ok(None) => break,
                    // Behind even the history: closed, and the client resumes (or relists after `410 Expired`).
                    Err(Closed) => return,
                }
            }
            let sending = pending.clone().unwrap_or_default();
            let woken = tokio::select! {
                sent = out.send(sending), if pending.is_some() => Woken::Sent(sent),
                alive = source.feed.changed() => Woken::Published(alive),
                _ = ticker.tick(), if self.bookmarks => Woken::Bookmark,
                _ = &mut deadline => Woken::Ended { timed_out: true },
                _ = end.cancelled() => Woken::Ended { timed_out: false },
                _ = out.closed() => Woken::Ended { timed_out: false },
            };
            match woken {
                Woken::Sent(true) => pending = None,
                Woken::Sent(false) | Woken::Published(false) => return,
                // The client is not reading and the writes since the watch started (or since the last event it
                // was given) no longer fit in the feed: close the watch rather than hold on to what it missed.
                Woken::Published(true) => {
                    if pending.is_some() && source.feed.dropped_after(source.last_rv.max(started)) {
                        return;
                    }
                }
                Woken::Bookmark => {
                    if pending.is_none() {
                        pending = Some(self.bookmark(source.last_rv, false));
                    }
                }
                Woken::Ended { timed_out } => {
                    if timed_out && self.bookmarks {
                        out.try_send(self.bookmark(source.last_rv, false));
                    }
                    return;
                }
            }
        }
    }

    /// The next line of the watch, `Some(None)` for an event this watch does not see, `None` when there is nothing
    /// to send until the store publishes more; fails when the watch has fallen behind the history.
    fn next_line(
        &self,
        store: &Store,
        source: &mut Source,
    ) -> Result<Option<Option<Bytes>>, Closed> {
        if let Some(object) = source.initial.pop_front() {
            return Ok(Some(
                self.filter
                    .selects(&object)
                    .then(|| self.encode("ADDED", &object)),
            ));
        }
        if std::mem::take(&mut source.initial_end) {
            return Ok(Some(Some(self.bookmark(source.last_rv, true))));
        }
        if let Some(event) = source.batch.pop_front() {
            source.last_rv = event.rv;
            return Ok(Some(self.event_line(&event)));
        }
        source.feed.seek(source.last_rv);
        match source.feed.try_recv() {
            Ok(event) => {
                source.last_rv = event.rv;
                Ok(Some(self.event_line(&event)))
            }
            Err(TryRecvError::Empty) => Ok(None),
            Err(TryRecvError::Closed) => Err(Closed),
            // The feed no longer holds the next events: read them from the history, a bounded batch at a time.
            Err(TryRecvError::Lagged(_)) => {
                let batch = store
                    .events_after(source.last_rv, WATCH_BUFFER_BYTES)
                    .map_err(|_| Closed)?;
                if batch.is_empty() {
                    return Err(Closed);
                }
                source.batch = batch.into();
                Ok(Some(None))
            }
        }
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

    /// The line of one object event, counted as sent.
    fn encode(&self, kind: &str, obj: &StoredObject) -> Bytes {
        self.sent.inc();
        let object = if let Some(form) = self.metadata_only {
            let reduced = form.object(&self.ctx.present_value(obj));
            Bytes::from(serde_json::to_vec(&reduced).unwrap_or_default())
        } else if self.table {
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
        let mut object: Value = json!({ "kind": self.ctx.rt.kind, "apiVersion": self.ctx.api_version(), "metadata": metadata });
        if let Some(form) = self.metadata_only {
            object = form.object(&object);
        }
        Bytes::from(format!(
            "{}\n",
            json!({ "type": "BOOKMARK", "object": object })
        ))
    }
}
