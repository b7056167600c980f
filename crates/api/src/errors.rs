//! How the API server says "not there" and "someone else wrote first", read the same way by the engine, the console
//! and the simulation: each decides what such an answer means for it (gone is fine for a delete, a lost race is
//! retried), so the test of the answer lives here once.

/// Whether a kube error is the API server's 404: the object is not there (any more).
pub fn is_not_found(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 404)
}

/// Whether a kube error is the API server's 409, `AlreadyExists` or `Conflict`: another writer got there first.
pub fn is_conflict(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 409)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(code: u16) -> kube::Error {
        kube::Error::Api(Box::new(
            kube::core::Status::failure("answer", "Answer").with_code(code),
        ))
    }

    #[test]
    fn answers_are_told_apart_by_their_code() {
        assert!(is_not_found(&answer(404)));
        assert!(!is_not_found(&answer(409)));
        assert!(is_conflict(&answer(409)));
        assert!(!is_conflict(&answer(404)));
        assert!(!is_conflict(&answer(500)));
    }
}
