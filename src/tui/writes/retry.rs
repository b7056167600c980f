//! Writes computed from what was read: each carries the resourceVersion it read, so a writer that changed the
//! object in between (usually the engine) makes the API server answer 409, and the write is read and computed
//! again, a few times at most, instead of overwriting that change or failing at once.

use std::future::Future;

use super::WriteError;
use super::errors::from_kube;
use crate::tui::target::Target;
use kmm_api::errors::is_conflict;

/// How many times a write is recomputed after another writer changed the object in between.
const ATTEMPTS: usize = 5;

/// Why one attempt of a write stopped.
pub(super) enum Attempt {
    /// The API server (or the network) failed it; a 409 is retried.
    Kube(kube::Error),
    /// It cannot succeed as asked: give up with this.
    Failed(WriteError),
}

impl From<kube::Error> for Attempt {
    fn from(error: kube::Error) -> Attempt {
        Attempt::Kube(error)
    }
}

/// Run `attempt` until it does not end in a 409, at most [`ATTEMPTS`] times.
pub(super) async fn retrying<T, F, Fut>(target: &Target, mut attempt: F) -> Result<T, WriteError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Attempt>>,
{
    for _ in 1..ATTEMPTS {
        match attempt().await {
            Err(Attempt::Kube(error)) if is_conflict(&error) => {
                tracing::debug!(%target, "changed on the server meanwhile; writing again");
            }
            other => return other.map_err(|stop| failure(stop, target)),
        }
    }
    attempt().await.map_err(|stop| match stop {
        Attempt::Kube(error) if is_conflict(&error) => WriteError {
            message: format!("{target} kept changing on the server; try again"),
            ..from_kube(&error, target)
        },
        other => failure(other, target),
    })
}

fn failure(stop: Attempt, target: &Target) -> WriteError {
    match stop {
        Attempt::Kube(error) => from_kube(&error, target),
        Attempt::Failed(error) => error,
    }
}
