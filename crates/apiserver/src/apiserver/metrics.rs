//! `/metrics`: what the API server is asked and holds, in the Prometheus (OpenMetrics) text format, so a client's
//! load on the server — a console's watches against another console's polling — can be measured from the server.
//!
//! Counting happens on every request, so it stays cheap: counters and histograms are atomics inside label families
//! that take only a shared read lock once a label set exists, and the client label is drawn from a bounded set.
//! What the store holds is read only when someone scrapes.

use std::collections::HashSet;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::store::Store;

/// The content type of a scrape.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// How many distinct client names are counted separately; later ones are counted as `other`.
const MAX_CLIENTS: usize = 32;

/// Labels of `apiserver_request_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    verb: &'static str,
    resource: Arc<str>,
    code: u16,
    client: Arc<str>,
}

/// Labels of `apiserver_request_duration_seconds`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DurationLabels {
    verb: &'static str,
    resource: Arc<str>,
}

/// Labels of the counts of objects sent to each client: what a console or an engine takes in, apart from what the
/// server holds, so a test can tell a client that follows only its own objects from one that follows everything.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SentLabels {
    resource: Arc<str>,
    client: Arc<str>,
}

/// Labels of the per-resource gauges.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResourceLabels {
    resource: Arc<str>,
}

fn duration_histogram() -> Histogram {
    // 1 ms to about 16 s, doubling.
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

/// What one request was, for counting.
#[derive(Debug, Clone)]
pub struct RequestSample<'a> {
    /// kube-apiserver's verb label: `GET`, `LIST`, `WATCH`, `POST`, `PUT`, `PATCH`, `APPLY`, `DELETE`, ...
    pub verb: &'static str,
    /// The resource (with its subresource, `pods/log`), or `""` for paths outside the resource tree.
    pub resource: &'a str,
    /// The response's status code.
    pub code: u16,
    /// The `User-Agent` header, if any.
    pub user_agent: Option<&'a str>,
    /// Time until the response (for watches and log streams: until the stream began).
    pub elapsed: Duration,
}

/// The server's counters. Cloning shares them.
#[derive(Clone)]
pub struct ApiMetrics {
    requests: Family<RequestLabels, Counter>,
    durations: Family<DurationLabels, Histogram, fn() -> Histogram>,
    watches: Family<ResourceLabels, Gauge>,
    watch_events: Family<SentLabels, Counter>,
    list_objects: Family<SentLabels, Counter>,
    list_evaluated: Family<ResourceLabels, Counter>,
    clients: Arc<RwLock<HashSet<Arc<str>>>>,
}

impl Default for ApiMetrics {
    fn default() -> Self {
        Self {
            requests: Family::default(),
            durations: Family::new_with_constructor(duration_histogram),
            watches: Family::default(),
            watch_events: Family::default(),
            list_objects: Family::default(),
            list_evaluated: Family::default(),
            clients: Arc::default(),
        }
    }
}

impl ApiMetrics {
    /// Count one answered request.
    pub fn record(&self, sample: &RequestSample<'_>) {
        let resource: Arc<str> = Arc::from(sample.resource);
        let client = self.client(sample.user_agent);
        self.requests
            .get_or_create(&RequestLabels {
                verb: sample.verb,
                resource: resource.clone(),
                code: sample.code,
                client,
            })
            .inc();
        self.durations
            .get_or_create(&DurationLabels {
                verb: sample.verb,
                resource,
            })
            .observe(sample.elapsed.as_secs_f64());
    }

    /// Count an open watch on `resource` until the returned guard is dropped.
    pub fn watch_opened(&self, resource: &str) -> OpenWatch {
        let gauge = self.watches.get_or_create_owned(&ResourceLabels {
            resource: Arc::from(resource),
        });
        gauge.inc();
        OpenWatch(gauge)
    }

    /// The count of objects sent on `resource`'s watches to the client of `user_agent`: a watch takes it when it
    /// starts and counts each ADDED, MODIFIED and DELETED it sends (not bookmarks), so what every event costs a
    /// client is not looked up again per event.
    pub fn watch_events(&self, resource: &str, user_agent: Option<&str>) -> Counter {
        self.watch_events
            .get_or_create_owned(&self.sent_labels(resource, user_agent))
    }

    /// Count `objects` returned by one LIST (one page) of `resource` to the client of `user_agent`.
    pub fn list_returned(&self, resource: &str, user_agent: Option<&str>, objects: usize) {
        self.list_objects
            .get_or_create(&self.sent_labels(resource, user_agent))
            .inc_by(u64::try_from(objects).unwrap_or(u64::MAX));
    }

    /// Count `objects` a LIST of `resource` tested against its selectors: every object of the resource (or of the
    /// namespace asked for), unless an index of a selected field took only the matching ones.
    pub fn list_evaluated(&self, resource: &str, objects: usize) {
        self.list_evaluated
            .get_or_create(&ResourceLabels {
                resource: Arc::from(resource),
            })
            .inc_by(u64::try_from(objects).unwrap_or(u64::MAX));
    }

    fn sent_labels(&self, resource: &str, user_agent: Option<&str>) -> SentLabels {
        SentLabels {
            resource: Arc::from(resource),
            client: self.client(user_agent),
        }
    }

    /// The client label of a user agent: its product token (`kubectl` of `kubectl/v1.34.0 (linux/amd64) ...`),
    /// one of at most [`MAX_CLIENTS`] names.
    fn client(&self, user_agent: Option<&str>) -> Arc<str> {
        let name = product_token(user_agent);
        {
            let known = self.clients.read().unwrap_or_else(|p| p.into_inner());
            if let Some(existing) = known.get(name.as_str()) {
                return existing.clone();
            }
        }
        let mut known = self.clients.write().unwrap_or_else(|p| p.into_inner());
        if let Some(existing) = known.get(name.as_str()) {
            return existing.clone();
        }
        if known.len() >= MAX_CLIENTS {
            return Arc::from("other");
        }
        let name: Arc<str> = Arc::from(name);
        known.insert(name.clone());
        name
    }

    /// The scrape: request counters, durations and open watches, and what `store` holds right now.
    pub fn encode(&self, store: &Store) -> String {
        let mut registry = Registry::default();
        registry.register(
            "apiserver_request",
            "Requests answered, by verb, resource, status code and client (the user agent's product name)",
            self.requests.clone(),
        );
        registry.register(
            "apiserver_request_duration_seconds",
            "Time to answer a request (to the start of the stream for watches and logs), by verb and resource",
            self.durations.clone(),
        );
        registry.register(
            "apiserver_registered_watchers",
            "Watches open now, by resource",
            self.watches.clone(),
        );
        registry.register(
            "apiserver_watch_events",
            "Objects sent on watches (added, modified, deleted; not bookmarks), by resource and client",
            self.watch_events.clone(),
        );
        registry.register(
            "apiserver_storage_list_returned_objects",
            "Objects returned by LIST requests, by resource and client",
            self.list_objects.clone(),
        );
        registry.register(
            "apiserver_storage_list_evaluated_objects",
            "Objects LIST requests tested against their selectors, by resource",
            self.list_evaluated.clone(),
        );
        let usage = store.usage();
        let objects = Family::<ResourceLabels, Gauge>::default();
        let bytes = Family::<ResourceLabels, Gauge>::default();
        for resource in &usage.resources {
            let labels = ResourceLabels {
                resource: Arc::from(resource.resource.to_string()),
            };
            objects
                .get_or_create(&labels)
                .set(i64::try_from(resource.objects).unwrap_or(i64::MAX));
            bytes
                .get_or_create(&labels)
                .set(i64::try_from(resource.bytes).unwrap_or(i64::MAX));
        }
        registry.register(
            "apiserver_storage_objects",
            "Objects stored, by resource (group/plural)",
            objects,
        );
        registry.register(
            "apiserver_storage_size_bytes",
            "Bytes of stored JSON, by resource (group/plural)",
            bytes,
        );
        let history = Gauge::<i64>::default();
        history.set(i64::try_from(usage.history).unwrap_or(i64::MAX));
        registry.register(
            "apiserver_watch_history_events",
            "Events kept for watches to resume from",
            history,
        );
        let history_bytes = Gauge::<i64>::default();
        history_bytes.set(i64::try_from(usage.history_bytes).unwrap_or(i64::MAX));
        registry.register(
            "apiserver_watch_history_size_bytes",
            "Bytes of stored JSON the events kept for watches carry",
            history_bytes,
        );
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry)
            .expect("writing to a String cannot fail");
        text
    }
}

/// Keeps a watch counted as open; dropping it (when the watch ends) stops counting it.
pub struct OpenWatch(Gauge);

impl Drop for OpenWatch {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// The first product token of a user agent, restricted to the characters a label value reads well with.
fn product_token(user_agent: Option<&str>) -> String {
    let token: String = user_agent
        .unwrap_or("")
        .split(['/', ' '])
        .next()
        .unwrap_or("")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .take(40)
        .collect();
    if token.is_empty() {
        "unknown".to_string()
    } else {
        token
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_are_named_by_their_product_token() {
        assert_eq!(
            product_token(Some("kubectl/v1.34.0 (linux/amd64) kubernetes/abc")),
            "kubectl"
        );
        assert_eq!(product_token(Some("kmm-tui/0.1.0")), "kmm-tui");
        assert_eq!(product_token(Some("curl/8.5.0")), "curl");
        assert_eq!(product_token(None), "unknown");
        assert_eq!(product_token(Some("<script>")), "script");
    }

    #[test]
    fn client_names_are_bounded() {
        let metrics = ApiMetrics::default();
        for i in 0..MAX_CLIENTS {
            assert_eq!(&*metrics.client(Some(&format!("c{i}/1"))), format!("c{i}"));
        }
        assert_eq!(&*metrics.client(Some("late/1")), "other");
        assert_eq!(&*metrics.client(Some("c0/2")), "c0");
    }

    #[test]
    fn a_scrape_shows_counts_durations_watches_and_storage() {
        let metrics = ApiMetrics::default();
        let sample = RequestSample {
            verb: "LIST",
            resource: "pods",
            code: 200,
            user_agent: Some("kubectl/v1.34.0"),
            elapsed: Duration::from_millis(3),
        };
        metrics.record(&sample);
        metrics.record(&sample);
        let watch = metrics.watch_opened("pods");
        let sent = metrics.watch_events("events", Some("kmm-tui/0.1.0"));
        sent.inc();
        sent.inc();
        metrics.list_returned("events", Some("kubectl/v1.34.0"), 500);
        metrics.list_returned("events", Some("kubectl/v1.34.0"), 7);
        let store = Store::in_memory(100);
        let text = metrics.encode(&store);
        assert!(
            text.contains(
                r#"apiserver_request_total{verb="LIST",resource="pods",code="200",client="kubectl"} 2"#
            ),
            "{text}"
        );
        assert!(
            text.contains(
                r#"apiserver_request_duration_seconds_count{verb="LIST",resource="pods"} 2"#
            ),
            "{text}"
        );
        assert!(
            text.contains(r#"apiserver_registered_watchers{resource="pods"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"apiserver_watch_events_total{resource="events",client="kmm-tui"} 2"#),
            "{text}"
        );
        assert!(
            text.contains(
                r#"apiserver_storage_list_returned_objects_total{resource="events",client="kubectl"} 507"#
            ),
            "{text}"
        );
        assert!(text.contains("apiserver_watch_history_events 0"), "{text}");
        assert!(
            text.contains("apiserver_watch_history_size_bytes 0"),
            "{text}"
        );
        drop(watch);
        assert!(
            metrics
                .encode(&store)
                .contains(r#"apiserver_registered_watchers{resource="pods"} 0"#)
        );
    }
}
