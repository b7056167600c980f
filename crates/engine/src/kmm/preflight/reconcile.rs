//! One pass over a PreflightValidation: a verdict per Module, the checks no Module needs removed, and the verdicts
//! written to `status.modules` (sorted by namespace and name; `lastTransitionTime` moves only when a Module's
//! `verificationStatus` does). A Module reaching a final verdict is also told as an Event.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::api::{Api, Patch};
use kube::runtime::controller::Action;
use serde_json::json;

use super::PreflightContext;
use super::checks;
use super::verdict::Verdict;
use crate::kmm::kernel;
use crate::runtime::attention;
use crate::runtime::context::{Context, Error, KubeResultExt};
use crate::runtime::writes::patch_params;
use kmm_api::kmm::{
    PreflightModuleStatus, PreflightValidation, PreflightVerdict, VerificationStage,
    VerificationStatus,
};

/// One pass; a failure a person must act on is told on the PreflightValidation.
pub(super) async fn reconcile(
    preflight: Arc<PreflightValidation>,
    context: Arc<PreflightContext>,
) -> Result<Action, Error> {
    let outcome = pass(&preflight, &context).await;
    attention::conclude(&context.engine, preflight.as_ref(), &outcome).await;
    outcome
}

async fn pass(
    preflight: &PreflightValidation,
    context: &PreflightContext,
) -> Result<Action, Error> {
    let engine = &context.engine;
    if preflight.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let kernel = preflight.spec.kernel_version.trim();
    if kernel.is_empty() {
        return Err(Error::Invalid(format!(
            "PreflightValidation {} names no kernelVersion",
            preflight.name_any()
        )));
    }
    if !context.modules_listed.wait().await {
        return Ok(Action::await_change());
    }
    let mut verdicts = BTreeMap::new();
    let mut kept = BTreeSet::new();
    for module in context.modules.state() {
        if module.metadata.deletion_timestamp.is_some() {
            continue;
        }
        // A Module without a module loader loads no kernel module: the kernel does not concern it.
        let Some(loader) = &module.spec.module_loader else {
            continue;
        };
        let namespace = module.namespace().unwrap_or_default();
        let name = module.name_any();
        let container = &loader.container;
        let verdict = match kernel::resolve(container, kernel, &name, &namespace) {
            Err(error) => Verdict::bad_mapping(&error.to_string()),
            Ok(None) => Verdict::no_mapping(kernel),
            Ok(Some(resolved)) => {
                kept.insert((namespace.clone(), checks::mic_name(&name)));
                checks::verify(engine, preflight, &module, container, &resolved).await?
            }
        };
        verdicts.insert((namespace, name), verdict);
    }
    checks::remove_unneeded(engine, preflight, &kept).await?;
    let recorded = preflight
        .status
        .as_ref()
        .map(|s| s.modules.as_slice())
        .unwrap_or_default();
    let modules = new_statuses(recorded, &verdicts);
    if modules != recorded {
        announce(engine, preflight, recorded, &modules).await;
        Api::<PreflightValidation>::all(engine.client.clone())
            .patch_status(
                &preflight.name_any(),
                &patch_params(),
                &Patch::Merge(json!({"status": {"modules": modules}})),
            )
            .await
            .doing(|| {
                format!(
                    "writing the status of PreflightValidation {}",
                    preflight.name_any()
                )
            })?;
    }
    Ok(engine.resync())
}

/// The status entries of `verdicts`, keeping each recorded `lastTransitionTime` whose status did not change.
fn new_statuses(
    recorded: &[PreflightModuleStatus],
    verdicts: &BTreeMap<(String, String), Verdict>,
) -> Vec<PreflightModuleStatus> {
    verdicts
        .iter()
        .map(|((namespace, name), verdict)| {
            let before = recorded
                .iter()
                .find(|s| &s.namespace == namespace && &s.name == name);
            let last_transition_time = before
                .filter(|s| s.verdict.verification_status == verdict.status)
                .map(|s| s.verdict.last_transition_time.clone())
                .unwrap_or_else(|| Time(jiff::Timestamp::now()));
            PreflightModuleStatus {
                namespace: namespace.clone(),
                name: name.clone(),
                verdict: PreflightVerdict {
                    verification_status: verdict.status,
                    status_reason: Some(verdict.reason.clone()),
                    verification_stage: if verdict.done() {
                        VerificationStage::Done
                    } else {
                        VerificationStage::Image
                    },
                    last_transition_time,
                },
            }
        })
        .collect()
}

/// An Event per Module whose verdict became final: `ModuleVerified`, or `ModuleVerificationFailed` (a warning).
async fn announce(
    context: &Context,
    preflight: &PreflightValidation,
    recorded: &[PreflightModuleStatus],
    modules: &[PreflightModuleStatus],
) {
    for module in modules {
        let status = module.verdict.verification_status;
        let unchanged = recorded.iter().any(|r| {
            r.namespace == module.namespace
                && r.name == module.name
                && r.verdict.verification_status == status
        });
        if unchanged || status == VerificationStatus::InProgress {
            continue;
        }
        let (warning, reason) = match status {
            VerificationStatus::Success => (false, "ModuleVerified"),
            _ => (true, "ModuleVerificationFailed"),
        };
        let note = format!(
            "Module {}/{} on kernel {}: {}",
            module.namespace,
            module.name,
            preflight.spec.kernel_version,
            module.verdict.status_reason.as_deref().unwrap_or_default()
        );
        context.event(preflight, warning, reason, note).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(status: VerificationStatus, reason: &str) -> Verdict {
        Verdict {
            status,
            reason: reason.into(),
        }
    }

    #[test]
    fn transition_times_move_only_with_the_status() {
        let key = ("ns".to_owned(), "m".to_owned());
        let first = new_statuses(
            &[],
            &BTreeMap::from([(
                key.clone(),
                verdict(VerificationStatus::InProgress, "checking"),
            )]),
        );
        let mut old = first.clone();
        old[0].verdict.last_transition_time =
            Time("2026-01-01T00:00:00Z".parse().expect("a timestamp"));
        let building = new_statuses(
            &old,
            &BTreeMap::from([(
                key.clone(),
                verdict(VerificationStatus::InProgress, "building"),
            )]),
        );
        assert_eq!(
            building[0].verdict.last_transition_time,
            old[0].verdict.last_transition_time
        );
        assert_eq!(
            building[0].verdict.verification_stage,
            VerificationStage::Image
        );
        let done = new_statuses(
            &old,
            &BTreeMap::from([(
                key,
                verdict(VerificationStatus::Success, "verified image exists"),
            )]),
        );
        assert_ne!(
            done[0].verdict.last_transition_time,
            old[0].verdict.last_transition_time
        );
        assert_eq!(done[0].verdict.verification_stage, VerificationStage::Done);
    }
}
