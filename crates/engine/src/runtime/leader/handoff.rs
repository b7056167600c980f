//! Moving the Lease on purpose, instead of waiting for a leader to die: anyone may ask the holder to yield by
//! annotating the Lease, and an engine can be told to stand aside (hand off) or compete again (take over).
//!
//! The request is an annotation, not a write of `holderIdentity`, so that the holder stays the only one who ends its
//! own term: it stops its work first and only then hands the Lease on. A write of the holder field by anyone else
//! would let two engines act at once.

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, Patch, PatchParams};
use tokio::sync::watch;

use kmm_api::lease::{ANYONE, HANDOFF_ANNOTATION};

/// Whom a holder was asked to yield to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Yield {
    /// Hand the Lease straight to this identity.
    To(String),
    /// Release it; the first candidate to see it free claims it.
    Anyone,
}

/// The hand-off `holder` is asked for on `lease`: none when there is no request or it names the holder itself.
pub fn requested_yield(lease: &Lease, holder: &str) -> Option<Yield> {
    let target = lease
        .metadata
        .annotations
        .as_ref()?
        .get(HANDOFF_ANNOTATION)?
        .trim();
    match target {
        "" => None,
        ANYONE => Some(Yield::Anyone),
        own if own == holder => None,
        other => Some(Yield::To(other.to_owned())),
    }
}

/// Drop the hand-off request from `lease` (it is answered, or moot in a new term).
pub(super) fn clear_request(lease: &mut Lease) {
    if let Some(annotations) = lease.metadata.annotations.as_mut() {
        annotations.remove(HANDOFF_ANNOTATION);
    }
}

/// Ask the holder of the Lease `namespace/name` to yield to `to` (`None`: to anyone). A merge patch of the annotation
/// alone, so it never races the holder's renewals into a conflict it could lose.
pub async fn request_handoff(
    client: kube::Client,
    namespace: &str,
    name: &str,
    to: Option<&str>,
    field_manager: &str,
) -> kube::Result<Lease> {
    let api = Api::<Lease>::namespaced(client, namespace);
    let patch = serde_json::json!({
        "metadata": { "annotations": { HANDOFF_ANNOTATION: to.unwrap_or(ANYONE) } }
    });
    let params = PatchParams {
        field_manager: Some(field_manager.to_owned()),
        ..PatchParams::default()
    };
    api.patch(name, &params, &Patch::Merge(&patch)).await
}

/// Whether an engine seeks the Lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Participation {
    /// Claim the Lease whenever it is free or expired (the default).
    Compete,
    /// Do not claim it; when holding it, finish the work in flight and release it.
    StandAside,
}

/// Tells a running engine to stand aside or compete again; cheap to clone.
#[derive(Clone, Debug)]
pub struct Participate(watch::Sender<Participation>);

impl Participate {
    /// A switch starting at `initial`.
    pub fn new(initial: Participation) -> Self {
        Self(watch::Sender::new(initial))
    }

    /// Stand aside or compete from now on.
    pub fn set(&self, participation: Participation) {
        self.0.send_replace(participation);
    }

    /// What the engine is told now.
    pub fn get(&self) -> Participation {
        *self.0.borrow()
    }

    /// What the election follows.
    pub(super) fn subscribe(&self) -> watch::Receiver<Participation> {
        self.0.subscribe()
    }
}

impl Default for Participate {
    fn default() -> Self {
        Self::new(Participation::Compete)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn annotated(value: Option<&str>) -> Lease {
        Lease {
            metadata: ObjectMeta {
                annotations: value.map(|value| {
                    [(HANDOFF_ANNOTATION.to_owned(), value.to_owned())]
                        .into_iter()
                        .collect()
                }),
                ..ObjectMeta::default()
            },
            spec: None,
        }
    }

    #[test]
    fn a_request_names_another_identity_or_anyone() {
        assert_eq!(
            requested_yield(&annotated(Some("pod-b")), "me"),
            Some(Yield::To("pod-b".to_owned()))
        );
        assert_eq!(
            requested_yield(&annotated(Some(ANYONE)), "me"),
            Some(Yield::Anyone)
        );
    }

    #[test]
    fn no_request_an_empty_one_or_one_naming_the_holder_asks_nothing() {
        assert_eq!(requested_yield(&annotated(None), "me"), None);
        assert_eq!(requested_yield(&annotated(Some(" ")), "me"), None);
        assert_eq!(requested_yield(&annotated(Some("me")), "me"), None);
    }

    #[test]
    fn answering_a_request_removes_it() {
        let mut lease = annotated(Some("pod-b"));
        clear_request(&mut lease);
        assert_eq!(requested_yield(&lease, "me"), None);
    }

    #[test]
    fn the_switch_reports_what_it_was_told() {
        let switch = Participate::default();
        let seen = switch.subscribe();
        assert_eq!(switch.get(), Participation::Compete);
        switch.set(Participation::StandAside);
        assert_eq!(*seen.borrow(), Participation::StandAside);
    }
}
