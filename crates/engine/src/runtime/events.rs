//! The engine's Event recorder: each distinct thing it says about an object is its own `events.k8s.io` Event, and
//! only an exact repeat (same object, type, reason and note) bumps the `series` of the Event that said it first.
//!
//! A recorder that folds every Event of one reason into one series keeps only the first note, so "batch 1 started"
//! would stand for batches 2 and 3 too; an object's Events are its history (`kubectl get events`, the console's
//! detail views), and a history that drops what happened is no history. Repeats of the very same note are still
//! one Event with a count, so a pass that says the same thing again does not flood the list.

use std::collections::HashMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};

use tokio::sync::Mutex;

/// How long an Event is remembered for a repeat to join its series: past it, a repeat is a new Event (as
/// client-go's and kube-rs's recorders do).
const REMEMBERED: Duration = Duration::from_secs(6 * 60);

/// One thing the engine says about an object.
pub struct Record<'a> {
    /// Warning (a person may have to act) or Normal.
    pub warning: bool,
    /// Why, in PascalCase (`BatchStarted`).
    pub reason: &'a str,
    /// What the engine did or failed to do, in PascalCase; the reason when nothing more specific fits.
    pub action: &'a str,
    /// What happened, for a person.
    pub note: &'a str,
}

/// What makes two Events the same: the object, and everything a person reads.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct SeriesKey {
    regarding: (
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
    ),
    warning: bool,
    reason: String,
    note: String,
}

/// Publishes Events as `controller` (with `instance` telling engines apart), remembering recent ones for series.
pub struct Recorder {
    client: Client,
    controller: String,
    instance: String,
    recent: Mutex<HashMap<SeriesKey, Event>>,
}

impl Recorder {
    /// A recorder reporting as `controller`, instance `instance` (the controller's name when none is given).
    pub fn new(client: Client, controller: &str, instance: Option<String>) -> Self {
        Self {
            client,
            controller: controller.to_owned(),
            instance: instance.unwrap_or_else(|| controller.to_owned()),
            recent: Mutex::default(),
        }
    }

    /// Publish `record` about `regarding`: a new Event, or the next count of the series of the same note.
    pub async fn publish(
        &self,
        record: &Record<'_>,
        regarding: &ObjectReference,
    ) -> Result<(), kube::Error> {
        let now = jiff::Timestamp::now();
        let key = SeriesKey {
            regarding: (
                regarding.kind.clone(),
                regarding.namespace.clone(),
                regarding.name.clone(),
                regarding.uid.clone(),
            ),
            warning: record.warning,
            reason: record.reason.to_owned(),
            note: record.note.to_owned(),
        };
        let earlier = {
            let mut recent = self.recent.lock().await;
            recent.retain(|_, event| {
                last_seen(event)
                    .is_some_and(|seen| now.duration_since(seen).unsigned_abs() < REMEMBERED)
            });
            recent.get(&key).cloned()
        };
        let namespace = regarding.namespace.as_deref().unwrap_or("default");
        let api: Api<Event> = Api::namespaced(self.client.clone(), namespace);
        let repeated = match earlier {
            Some(mut event) => {
                event.series = Some(EventSeries {
                    count: event.series.as_ref().map_or(2, |s| s.count + 1),
                    last_observed_time: MicroTime(now),
                });
                let patch = serde_json::json!({"series": event.series});
                match api
                    .patch(
                        &event.name_any(),
                        &PatchParams::default(),
                        &Patch::Merge(&patch),
                    )
                    .await
                {
                    Ok(_) => Some(event),
                    // Expired (or deleted) meanwhile: the repeat starts a new Event.
                    Err(kube::Error::Api(status)) if status.code == 404 => None,
                    Err(error) => return Err(error),
                }
            }
            None => None,
        };
        let event = match repeated {
            Some(event) => event,
            None => {
                api.create(&PostParams::default(), &self.event(record, regarding, now))
                    .await?
            }
        };
        self.recent.lock().await.insert(key, event);
        Ok(())
    }

    /// A new Event saying `record` about `regarding`, named after the object and the time (unique per recorder).
    fn event(
        &self,
        record: &Record<'_>,
        regarding: &ObjectReference,
        now: jiff::Timestamp,
    ) -> Event {
        let object = regarding.name.as_deref().unwrap_or(&self.controller);
        Event {
            metadata: ObjectMeta {
                name: Some(format!("{object}.{:x}", now.as_nanosecond())),
                namespace: regarding.namespace.clone(),
                ..ObjectMeta::default()
            },
            event_time: Some(MicroTime(now)),
            type_: Some(if record.warning { "Warning" } else { "Normal" }.to_owned()),
            reason: Some(record.reason.to_owned()),
            action: Some(record.action.to_owned()),
            note: Some(record.note.to_owned()),
            regarding: Some(regarding.clone()),
            reporting_controller: Some(self.controller.clone()),
            reporting_instance: Some(self.instance.clone()),
            ..Event::default()
        }
    }
}

/// When an Event was last seen: its series' last observation, else its time.
fn last_seen(event: &Event) -> Option<jiff::Timestamp> {
    event
        .series
        .as_ref()
        .map(|s| s.last_observed_time.0)
        .or_else(|| event.event_time.as_ref().map(|t| t.0))
}
