//! What the acting engine has been doing lately, published on its Lease at every renewal, so a console shows it for
//! the engine wherever it runs (this console, another console, a pod) without reaching that engine's metrics
//! endpoint: the console already watches the Lease, and the engine already writes it every few seconds, so this
//! costs no request, no grant and no network path of its own.
//!
//! Per family: passes in the last minute and over the window (up to [`WINDOW`] since the term began), failures over
//! the window, the objects waiting for a pass and how long the oldest has waited (see [`super::queue`]).

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use serde::{Deserialize, Serialize};

use kmm_api::lease::ACTIVITY_ANNOTATION;

/// The longest stretch the activity covers, and the one an engine must have held the Lease for to be called
/// stalled: long enough that a quiet spell between passes is not mistaken for a stall.
pub const WINDOW: Duration = Duration::from_secs(300);

/// What the holder did lately, per family.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Activity {
    /// Seconds the counts cover: since the term began, at most [`WINDOW`].
    pub window_seconds: u64,
    /// Per family name (`kmm`, `shims`, `caches`, `day0`).
    pub families: BTreeMap<String, FamilyActivity>,
}

/// What one family's reconcilers did lately.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FamilyActivity {
    /// Passes that ended in the last minute.
    pub last_minute: u64,
    /// Passes that ended over the window.
    pub reconciles: u64,
    /// Passes that failed over the window.
    pub errors: u64,
    /// Objects waiting for a pass now.
    pub waiting: u64,
    /// Seconds the object waiting longest has waited.
    pub oldest_waiting_seconds: u64,
}

impl Activity {
    /// The activity published on `lease`, if any and readable.
    pub fn of(lease: &Lease) -> Option<Activity> {
        let text = lease
            .metadata
            .annotations
            .as_ref()?
            .get(ACTIVITY_ANNOTATION)?;
        serde_json::from_str(text).ok()
    }

    /// The annotation's value.
    pub fn to_annotation(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// How many objects wait on an engine that finished no pass over a whole [`WINDOW`]; `None` when it is not
    /// stalled.
    pub fn stalled(&self) -> Option<u64> {
        let reconciles: u64 = self.families.values().map(|f| f.reconciles).sum();
        let waiting: u64 = self.families.values().map(|f| f.waiting).sum();
        (self.window_seconds >= WINDOW.as_secs() && reconciles == 0 && waiting > 0)
            .then_some(waiting)
    }
}

/// Put `activity` on `lease`.
pub fn annotate(lease: &mut Lease, activity: &Activity) {
    lease
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(ACTIVITY_ANNOTATION.to_owned(), activity.to_annotation());
}

/// Take the activity off `lease`: it belongs to the holder that wrote it, not the next.
pub fn clear(lease: &mut Lease) {
    if let Some(annotations) = lease.metadata.annotations.as_mut() {
        annotations.remove(ACTIVITY_ANNOTATION);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn activity(window: u64, reconciles: u64, waiting: u64) -> Activity {
        Activity {
            window_seconds: window,
            families: [(
                "kmm".to_owned(),
                FamilyActivity {
                    reconciles,
                    waiting,
                    ..FamilyActivity::default()
                },
            )]
            .into(),
        }
    }

    #[test]
    fn an_engine_is_stalled_only_after_a_whole_window_without_passes_while_objects_wait() {
        assert_eq!(activity(300, 0, 4).stalled(), Some(4));
        assert_eq!(activity(120, 0, 4).stalled(), None);
        assert_eq!(activity(300, 1, 4).stalled(), None);
        assert_eq!(activity(300, 0, 0).stalled(), None);
    }

    #[test]
    fn the_annotation_round_trips_and_bad_values_are_ignored() {
        let mut lease = Lease::default();
        let written = activity(300, 7, 2);
        annotate(&mut lease, &written);
        assert_eq!(Activity::of(&lease), Some(written));
        lease
            .metadata
            .annotations
            .as_mut()
            .expect("annotated")
            .insert(ACTIVITY_ANNOTATION.to_owned(), "{not json".to_owned());
        assert_eq!(Activity::of(&lease), None);
        clear(&mut lease);
        assert_eq!(Activity::of(&lease), None);
    }
}
