//! What went wrong with a write, in words for the footer: the API server's `Status` (403, 404, 409, 422 with its
//! field-level causes) or the network's failure.

use kube::core::Status;

use super::{FieldError, WriteError};
use crate::tui::target::Target;
use crate::tui::worded::Why;

/// A write on `target` failed with `error`.
pub fn from_kube(error: &kube::Error, target: &Target) -> WriteError {
    match error {
        kube::Error::Api(status) => from_status(status, target),
        kube::Error::HyperError(_) | kube::Error::Service(_) => WriteError::local(format!(
            "cannot reach the cluster: {}",
            Why::of(error, None)
        )),
        other => WriteError::local(format!("{target}: {}", Why::of(other, None))),
    }
}

/// The API server refused a write on `target` with `status`.
pub fn from_status(status: &Status, target: &Target) -> WriteError {
    let said = status.message.trim();
    let said = if said.is_empty() {
        status.reason.as_str()
    } else {
        said
    };
    let message = match status.code {
        403 => format!("not permitted: {said}"),
        404 => format!("{target} does not exist (any more)"),
        409 => format!("{target} changed on the server meanwhile: {said}"),
        422 => format!("the server rejected {target}: {said}"),
        0 => format!("{target}: {said}"),
        code => format!("{target}: {said} (HTTP {code})"),
    };
    let fields = status
        .details
        .iter()
        .flat_map(|details| &details.causes)
        .map(|cause| FieldError::new(cause.field.clone(), cause.message.clone()))
        .collect();
    WriteError {
        message,
        fields,
        code: (status.code != 0).then_some(status.code),
    }
}

#[cfg(test)]
mod tests {
    use kube::core::response::{StatusCause, StatusDetails};

    use super::*;
    use crate::tui::data::Kind;

    fn module() -> Target {
        Target::namespaced(Kind::Module, "acme", "acme-accel")
    }

    fn status(code: u16, reason: &str, message: &str) -> Status {
        Status::failure(message, reason).with_code(code)
    }

    #[test]
    fn forbidden_says_not_permitted_with_the_servers_words() {
        let error = from_kube(
            &kube::Error::Api(Box::new(status(
                403,
                "Forbidden",
                "modules.kmm.sigs.x-k8s.io \"acme-accel\" is forbidden: User \"dev\" cannot update",
            ))),
            &module(),
        );
        assert!(
            error
                .message
                .starts_with("not permitted: modules.kmm.sigs.x-k8s.io"),
            "{}",
            error.message
        );
        assert_eq!(error.code, Some(403));
    }

    #[test]
    fn not_found_and_conflict_name_the_object() {
        let missing = from_status(&status(404, "NotFound", "not found"), &module());
        assert_eq!(
            missing.message,
            "Module acme/acme-accel does not exist (any more)"
        );
        let conflict = from_status(
            &status(409, "Conflict", "the object has been modified"),
            &module(),
        );
        assert!(
            conflict
                .message
                .contains("Module acme/acme-accel changed on the server")
        );
        assert_eq!(conflict.code, Some(409));
    }

    #[test]
    fn invalid_keeps_every_field_cause() {
        let invalid = status(
            422,
            "Invalid",
            "Module.kmm.sigs.x-k8s.io \"acme-accel\" is invalid",
        )
        .with_details(StatusDetails {
            name: "acme-accel".into(),
            group: "kmm.sigs.x-k8s.io".into(),
            kind: "Module".into(),
            uid: String::new(),
            causes: vec![
                StatusCause {
                    reason: "FieldValueInvalid".into(),
                    message: "Invalid value: \"([\": not a regular expression".into(),
                    field: "spec.moduleLoader.container.kernelMappings[0].regexp".into(),
                },
                StatusCause {
                    reason: "FieldValueRequired".into(),
                    message: "Required value".into(),
                    field: "spec.selector".into(),
                },
            ],
            retry_after_seconds: 0,
        });
        let error = from_status(&invalid, &module());
        assert!(
            error
                .message
                .starts_with("the server rejected Module acme/acme-accel")
        );
        assert_eq!(
            error.fields,
            [
                FieldError::new(
                    "spec.moduleLoader.container.kernelMappings[0].regexp",
                    "Invalid value: \"([\": not a regular expression"
                ),
                FieldError::new("spec.selector", "Required value"),
            ]
        );
        assert_eq!(error.code, Some(422));
    }

    #[test]
    fn a_status_without_a_message_falls_back_to_its_reason() {
        let error = from_status(&status(500, "InternalError", ""), &module());
        assert_eq!(
            error.message,
            "Module acme/acme-accel: InternalError (HTTP 500)"
        );
    }

    #[tokio::test]
    async fn an_unreachable_cluster_says_so() {
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("a URL"));
        let client = kube::Client::try_from(config).expect("a client");
        let api: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(client);
        let error = api.get("any").await.expect_err("nothing listens on port 9");
        let mapped = from_kube(&error, &Target::cluster(Kind::Node, "any"));
        assert!(
            mapped.message.starts_with("cannot reach the cluster: "),
            "{}",
            mapped.message
        );
        assert_eq!(mapped.code, None);
        assert!(!kmm_api::errors::is_not_found(&error) && !kmm_api::errors::is_conflict(&error));
    }
}
