//! What the user may do on the connected cluster, asked once per context with SelfSubjectAccessReviews, so actions
//! the user may not perform are shown as unavailable instead of failing after a confirmation.
//!
//! Every question goes out at once. A question the cluster cannot answer (no authorization API, the network
//! away, no answer within [`PATIENCE`]) leaves its capability unknown, and an unknown capability is offered: the
//! write itself then says what the server thinks.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::Client;
use kube::api::{Api, PostParams};

use super::data::Kind;
use super::writes::images::image_generations_served;
use super::writes::resources::api_resource;

/// How long the review waits for the cluster before leaving every capability unknown.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// A write the console may offer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Capability {
    /// Bump image generations (patch ModuleImagesConfigs, or Modules on upstream CRDs).
    Rebuild,
    /// Start fresh pull checks (patch ModuleImagesConfig status).
    Recheck,
    /// Ask the cache engine to pull again or purge (patch ImageCaches: annotations).
    CacheWork,
    /// Delete objects of a kind.
    Delete(Kind),
    /// Update objects of a kind.
    Edit(Kind),
    /// Steer a Shim's rollout: approve a batch, pause, resume, retry (patch Shims).
    SteerShim,
    /// Validate Modules against a kernel and have the validation push what it builds (patch
    /// PreflightValidations).
    Preflight,
}

/// The answers of one context's access reviews.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccessReport {
    /// The context the answers are for.
    pub context: String,
    /// Allowed or not, per capability; a capability missing here is not known (yet) and is offered.
    pub allowed: BTreeMap<Capability, bool>,
}

/// One question to the authorizer: may I `verb` `kind` (its `subresource`)?
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Question {
    verb: &'static str,
    kind: Kind,
    subresource: Option<&'static str>,
}

/// Ask the cluster what the user may do, cluster-wide.
pub async fn review(client: &Client, context: &str) -> AccessReport {
    review_in(client, context, None).await
}

/// Ask the cluster what the user may do in `namespace` (or cluster-wide): a user whose rights stop at one
/// namespace is asked about that namespace, where a cluster-wide question would answer no.
pub async fn review_in(client: &Client, context: &str, namespace: Option<&str>) -> AccessReport {
    let answers = tokio::time::timeout(PATIENCE, answers(client, namespace))
        .await
        .unwrap_or_default();
    AccessReport {
        context: context.to_owned(),
        allowed: answers,
    }
}

async fn answers(client: &Client, namespace: Option<&str>) -> BTreeMap<Capability, bool> {
    let upstream_crds = image_generations_served(client).await == Some(false);
    let questions = questions(upstream_crds);
    let asked = questions
        .iter()
        .map(|(_, question)| ask(client, *question, namespace));
    let replies = futures::future::join_all(asked).await;
    questions
        .into_iter()
        .zip(replies)
        .filter_map(|((capability, _), reply)| Some((capability, reply?)))
        .collect()
}

/// Each capability and the question that decides it.
fn questions(upstream_crds: bool) -> Vec<(Capability, Question)> {
    let question = |verb, kind, subresource| Question {
        verb,
        kind,
        subresource,
    };
    let rebuild = if upstream_crds {
        question("patch", Kind::Module, None)
    } else {
        question("patch", Kind::ModuleImagesConfig, None)
    };
    let mut questions = vec![
        (Capability::Rebuild, rebuild),
        (
            Capability::Recheck,
            question("patch", Kind::ModuleImagesConfig, Some("status")),
        ),
        (Capability::SteerShim, question("patch", Kind::Shim, None)),
        (
            Capability::Preflight,
            question("patch", Kind::PreflightValidation, None),
        ),
        (
            Capability::CacheWork,
            question("patch", Kind::ImageCache, None),
        ),
    ];
    for kind in Kind::ALL {
        questions.push((Capability::Delete(kind), question("delete", kind, None)));
        questions.push((Capability::Edit(kind), question("update", kind, None)));
    }
    questions
}

/// The authorizer's answer, or `None` when there is none.
async fn ask(client: &Client, question: Question, namespace: Option<&str>) -> Option<bool> {
    let resource = api_resource(question.kind);
    let cluster_scoped = matches!(
        question.kind,
        Kind::Node
            | Kind::NodeModulesConfig
            | Kind::Shim
            | Kind::MachineConfigPool
            | Kind::MachineConfig
            | Kind::PreflightValidation
            | Kind::ResourceSlice
    );
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                group: Some(resource.group),
                resource: Some(resource.plural),
                subresource: question.subresource.map(str::to_owned),
                verb: Some(question.verb.to_owned()),
                namespace: namespace.filter(|_| !cluster_scoped).map(str::to_owned),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    let reviews: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    match reviews.create(&PostParams::default(), &review).await {
        Ok(answered) => answered.status.map(|status| status.allowed),
        Err(error) => {
            tracing::debug!(%error, ?question, "access review unanswered; the action stays offered");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_capability_is_asked_once() {
        let questions = questions(false);
        let capabilities: std::collections::BTreeSet<Capability> =
            questions.iter().map(|(c, _)| *c).collect();
        assert_eq!(capabilities.len(), questions.len());
        assert_eq!(questions.len(), 5 + 2 * Kind::ALL.len());
        let recheck = questions
            .iter()
            .find(|(c, _)| *c == Capability::Recheck)
            .map(|(_, q)| *q);
        assert_eq!(
            recheck,
            Some(Question {
                verb: "patch",
                kind: Kind::ModuleImagesConfig,
                subresource: Some("status")
            })
        );
    }

    #[test]
    fn rebuild_asks_about_modules_on_upstream_crds() {
        let rebuild = |upstream| {
            questions(upstream)
                .into_iter()
                .find(|(c, _)| *c == Capability::Rebuild)
                .map(|(_, q)| q.kind)
        };
        assert_eq!(rebuild(false), Some(Kind::ModuleImagesConfig));
        assert_eq!(rebuild(true), Some(Kind::Module));
    }

    #[tokio::test]
    async fn an_unreachable_cluster_leaves_everything_unknown() {
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("a URL"));
        let client = Client::try_from(config).expect("a client");
        let report = review(&client, "nowhere").await;
        assert_eq!(report.context, "nowhere");
        assert!(report.allowed.is_empty(), "{:?}", report.allowed);
    }
}
