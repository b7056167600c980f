//! The version gate: DRA is served (`resource.k8s.io/v1`) from Kubernetes 1.34, so on an older cluster a DRA Module
//! deploys nothing and says why, in a condition and a Warning Event, as upstream refuses such a Module. The DRA
//! reconciler decides, the Module reconciler (which writes the Module's conditions) says so; both read the cluster's
//! `/version` on each pass of a DRA Module, so an upgraded cluster is noticed at the next resync.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use crate::runtime::context::{Context, Error, KubeResultExt};
use crate::runtime::status::set_condition;
use kmm_api::kmm::Module;
use kmm_api::kmm::dra::{
    DRA_SUPPORTED, DRA_SUPPORTED_REASON, DRA_UNSUPPORTED_REASON, KubernetesVersion,
};

/// The cluster's Kubernetes release, from its `/version`.
pub(crate) async fn cluster_version(client: &kube::Client) -> Result<KubernetesVersion, Error> {
    let info = client
        .apiserver_version()
        .await
        .doing(|| "reading the cluster's version".to_owned())?;
    KubernetesVersion::parse(&info.major, &info.minor).map_err(Error::Invalid)
}

/// Set the Module's [`DRA_SUPPORTED`] condition for a cluster running `version`; returns whether the conditions
/// changed.
fn set_gate_condition(
    conditions: &mut Vec<Condition>,
    version: KubernetesVersion,
    generation: Option<i64>,
) -> bool {
    let before = conditions.clone();
    if version.supports_dra() {
        set_condition(
            conditions,
            DRA_SUPPORTED,
            true,
            DRA_SUPPORTED_REASON,
            format!("the cluster runs {version}, which serves resource.k8s.io/v1"),
            generation,
        );
    } else {
        set_condition(
            conditions,
            DRA_SUPPORTED,
            false,
            DRA_UNSUPPORTED_REASON,
            version.unsupported_message(),
            generation,
        );
    }
    *conditions != before
}

/// Set the gate condition of a Module that asks for a DRA driver on a cluster running `version`, or take it off one
/// that does not ask (`None`). The Module reconciler calls this, as the one writer of the Module's conditions.
pub(crate) fn apply(
    conditions: &mut Vec<Condition>,
    version: Option<KubernetesVersion>,
    generation: Option<i64>,
) {
    match version {
        Some(version) => {
            set_gate_condition(conditions, version, generation);
        }
        None => conditions.retain(|c| c.type_ != DRA_SUPPORTED),
    }
}

/// Tell a Warning Event when the conditions newly refuse the Module's DRA driver.
pub(crate) async fn announce(
    engine: &Context,
    module: &Module,
    before: &[Condition],
    after: &[Condition],
) {
    let refusal = |conditions: &[Condition]| {
        conditions
            .iter()
            .find(|c| c.type_ == DRA_SUPPORTED && c.status == "False")
            .map(|c| c.message.clone())
    };
    if let (None, Some(message)) = (refusal(before), refusal(after)) {
        engine
            .event(module, true, DRA_UNSUPPORTED_REASON, message)
            .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(minor: u32) -> KubernetesVersion {
        KubernetesVersion { major: 1, minor }
    }

    #[test]
    fn an_old_cluster_refuses_the_driver_and_says_which_version_it_runs() {
        let mut conditions = Vec::new();
        assert!(set_gate_condition(&mut conditions, version(33), Some(4)));
        let condition = &conditions[0];
        assert_eq!(
            (
                condition.type_.as_str(),
                condition.status.as_str(),
                condition.reason.as_str()
            ),
            ("DRASupported", "False", "DRAUnsupported")
        );
        assert_eq!(
            condition.message,
            "DRA needs Kubernetes 1.34 or later; this cluster runs 1.33"
        );
        assert_eq!(condition.observed_generation, Some(4));
        // The same answer again is no news: nothing to write, no second Event.
        assert!(!set_gate_condition(&mut conditions, version(33), Some(4)));
    }

    #[test]
    fn a_module_without_a_driver_loses_the_condition() {
        let mut conditions = Vec::new();
        apply(&mut conditions, Some(version(33)), None);
        assert_eq!(conditions.len(), 1);
        apply(&mut conditions, None, None);
        assert!(conditions.is_empty());
    }

    #[test]
    fn an_upgraded_cluster_turns_the_condition_true() {
        let mut conditions = Vec::new();
        set_gate_condition(&mut conditions, version(33), None);
        assert!(set_gate_condition(&mut conditions, version(34), None));
        assert_eq!(conditions.len(), 1);
        assert_eq!(conditions[0].status, "True");
        assert_eq!(conditions[0].reason, "Supported");
    }
}
