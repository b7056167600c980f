//! How the API server says "not there" and "someone else wrote first", read the same way by the engine, the console
//! and the simulation: each decides what such an answer means for it (gone is fine for a delete, a lost race is
//! retried), so the test of the answer lives here once.
//!
//! The rules read the API server's [`Status`] wherever a caller holds one: a `Status` itself, or an error whose
//! direct cause is one (the client's `kube::Error::Api`). Taking any error rather than the client's own type keeps
//! this crate free of the client (TLS, hyper), and callers pass the error they have unchanged.

use std::error::Error;

use kube_core::Status;

/// The status code of the API server's "not found".
const NOT_FOUND: u16 = 404;

/// The status code of the API server's `AlreadyExists` and `Conflict`.
const CONFLICT: u16 = 409;

/// The API server's answer `error` carries: `error` itself when it is a [`Status`], else its direct cause when that
/// is one. Only the direct cause: an error that merely happened while handling a 404 is not a 404.
pub fn api_status<'a>(error: &'a (dyn Error + 'static)) -> Option<&'a Status> {
    let as_status = |error: &'a (dyn Error + 'static)| {
        error
            .downcast_ref::<Status>()
            .or_else(|| error.downcast_ref::<Box<Status>>().map(|boxed| &**boxed))
    };
    as_status(error).or_else(|| error.source().and_then(as_status))
}

/// Whether an error is the API server's 404: the object is not there (any more).
pub fn is_not_found(error: &(dyn Error + 'static)) -> bool {
    api_status(error).is_some_and(|status| status.code == NOT_FOUND)
}

/// Whether an error is the API server's 409, `AlreadyExists` or `Conflict`: another writer got there first.
pub fn is_conflict(error: &(dyn Error + 'static)) -> bool {
    api_status(error).is_some_and(|status| status.code == CONFLICT)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16) -> Status {
        Status::failure("answer", "Answer").with_code(code)
    }

    /// The answer as the client hands it to the engine and the console.
    fn answer(code: u16) -> kube::Error {
        kube::Error::Api(Box::new(status(code)))
    }

    #[test]
    fn answers_are_told_apart_by_their_code() {
        assert!(is_not_found(&answer(404)));
        assert!(!is_not_found(&answer(409)));
        assert!(is_conflict(&answer(409)));
        assert!(!is_conflict(&answer(404)));
        assert!(!is_conflict(&answer(500)));
    }

    #[test]
    fn a_status_is_read_as_the_error_that_carries_it() {
        assert!(is_not_found(&status(404)));
        assert!(is_conflict(&status(409)));
        assert!(!is_conflict(&status(404)));
    }

    #[test]
    fn errors_that_are_no_answer_of_the_api_server_are_neither() {
        let refused = kube::Error::Service(std::io::Error::other("connection refused").into());
        assert!(api_status(&refused).is_none());
        assert!(!is_not_found(&refused) && !is_conflict(&refused));
    }
}
