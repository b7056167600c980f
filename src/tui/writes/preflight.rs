//! Planning a kernel upgrade: the console's PreflightValidation moves to the kernel the user picked (or is created
//! for it), and `B` turns its `pushBuiltImage` on.
//!
//! - **Validate** writes `spec.kernelVersion` with `pushBuiltImage: false`: a new kernel starts with a check that
//!   proves images exist and that missing ones build, without pushing anything to the Modules' registries. A
//!   PreflightValidation that does not exist is created (a 409 because someone created it meanwhile is retried as
//!   an update).
//! - **Build** sets `pushBuiltImage: true`, guarded by the resourceVersion it read and only while the kernel is the
//!   one the user saw: the engine then builds (and signs) again every image that can be built, and pushes it.

use kube::Client;
use kube::api::{Api, Patch, PostParams};
use serde_json::json;

use super::FIELD_MANAGER;
use super::WriteError;
use super::errors::from_kube;
use super::params;
use super::retry::{Attempt, retrying};
use crate::tui::target::Target;
use kmm_api::errors::is_not_found;
use kmm_api::kmm::{PreflightValidation, PreflightValidationSpec};

/// Validate every Module against `kernel` through `preflight`, creating it when `create` says it is missing.
pub async fn validate(
    client: &Client,
    preflight: &Target,
    kernel: &str,
) -> Result<String, WriteError> {
    let api: &Api<PreflightValidation> = &Api::all(client.clone());
    retrying(preflight, move || async move {
        let spec = json!({"spec": {"kernelVersion": kernel, "pushBuiltImage": false}});
        match api.get_opt(&preflight.name).await.map_err(Attempt::from)? {
            Some(_) => {
                api.patch(&preflight.name, &params(), &Patch::Merge(&spec))
                    .await
                    .map_err(Attempt::from)?;
                Ok(format!(
                    "{preflight} now validates every Module against {kernel}"
                ))
            }
            None => {
                let object = PreflightValidation::new(
                    &preflight.name,
                    PreflightValidationSpec {
                        kernel_version: kernel.to_owned(),
                        push_built_image: false,
                    },
                );
                let post = PostParams {
                    field_manager: Some(FIELD_MANAGER.to_owned()),
                    ..PostParams::default()
                };
                api.create(&post, &object).await.map_err(Attempt::from)?;
                Ok(format!(
                    "Created {preflight}: every Module is validated against {kernel}"
                ))
            }
        }
    })
    .await
}

/// Have `preflight` push the images it builds for `kernel`.
pub async fn push_built_images(
    client: &Client,
    preflight: &Target,
    kernel: &str,
) -> Result<String, WriteError> {
    let api: &Api<PreflightValidation> = &Api::all(client.clone());
    retrying(preflight, move || async move {
        let current = match api.get(&preflight.name).await {
            Ok(current) => current,
            Err(error) if is_not_found(&error) => {
                return Err(Attempt::Failed(from_kube(&error, preflight)));
            }
            Err(error) => return Err(Attempt::from(error)),
        };
        if current.spec.kernel_version.trim() != kernel {
            return Err(Attempt::Failed(WriteError::local(format!(
                "{preflight} validates {} now, not {kernel}; nothing was changed",
                current.spec.kernel_version
            ))));
        }
        if current.spec.push_built_image {
            return Ok(format!("{preflight} builds and pushes the images already"));
        }
        let patch = json!({
            "metadata": {"resourceVersion": current.metadata.resource_version},
            "spec": {"pushBuiltImage": true},
        });
        api.patch(&preflight.name, &params(), &Patch::Merge(&patch))
            .await
            .map_err(Attempt::from)?;
        Ok(format!(
            "{preflight} builds and pushes the missing images for {kernel}"
        ))
    })
    .await
}
