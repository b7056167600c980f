//! Where a person finds out that the engine cannot act on an object until they fix something outside it (a grant,
//! a namespace, a refused spec: see [`Error::attention`]): a Warning Event on the object, published once per
//! distinct message rather than on every retry, and, on the kinds a person creates and the console lists, the
//! `Degraded` condition set to the reason and message. Both are where a person already looks: `kubectl describe`,
//! `kubectl get events`, the console's lists and detail panes.
//!
//! Every reconciler ends a pass with [`conclude`] (or [`conclude_with_condition`]): a success ends the object's
//! failing streak, so its next failure is retried fast and told again. The condition is not cleared here: the
//! reconciler's own status, written by its next successful pass, sets `Degraded` from what it finds.

use std::fmt::Debug;

use crate::runtime::events::Record;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Api, Patch};
use kube::runtime::controller::Action;
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::runtime::context::{Attention, Context, Error};
use crate::runtime::failures::ObjectKey;
use crate::runtime::status;
use crate::runtime::writes::patch_params;
use crate::runtime::writes::post_params;
use kmm_api::conditions::DEGRADED;
use kmm_api::day0::ModuleDay0;
use kmm_api::hub::ManagedClusterModule;
use kmm_api::imagecache::{ImageCache, ImageCacheActionStatus, ImageCacheStatus};
use kmm_api::kmm::Module;
use kmm_api::shim::Shim;

/// The longest `action` an Event may carry (the API server's limit).
const ACTION_LIMIT: usize = 128;

/// End a pass over an object whose kind reports no conditions: a success ends its failing streak; a failure a
/// person must act on is published as an Event when it is news.
pub(crate) async fn conclude<K>(context: &Context, object: &K, outcome: &Result<Action, Error>)
where
    K: Resource<DynamicType = ()>,
{
    tell(context, object, outcome).await;
}

/// [`conclude`], and on a failure a person must act on, the object's `Degraded` condition set to it.
pub(crate) async fn conclude_with_condition<K>(
    context: &Context,
    object: &K,
    outcome: &Result<Action, Error>,
) where
    K: Conditioned,
{
    if let Some(attention) = tell(context, object, outcome).await {
        set_degraded(context, object, &attention).await;
    }
}

/// Forget the streak of a success; publish a failure a person must act on when it is news, and return it.
async fn tell<K>(
    context: &Context,
    object: &K,
    outcome: &Result<Action, Error>,
) -> Option<Attention>
where
    K: Resource<DynamicType = ()>,
{
    let key = ObjectKey::of(object);
    let error = match outcome {
        Ok(_) => {
            context.failures.succeeded(&key);
            return None;
        }
        Err(error) => error,
    };
    let attention = error.attention()?;
    if context.failures.tell(&key, &attention.message) {
        let action = truncate(&attention.action, ACTION_LIMIT);
        let event = Record {
            warning: true,
            reason: attention.reason,
            action: &action,
            note: &attention.message,
        };
        if let Err(error) = context
            .recorder
            .publish(&event, &object.object_ref(&()))
            .await
        {
            tracing::debug!(object = %key, %error, "event not published");
        }
    }
    Some(attention)
}

/// `text` cut to at most `limit` bytes, at a character boundary.
fn truncate(text: &str, limit: usize) -> String {
    let mut end = text.len().min(limit);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// Set `Degraded` on `object` to the attention's reason and message, unless it says so already. An object without a
/// status gets the kind's empty one along (its required fields included). The write is guarded by the
/// resourceVersion the pass read; a refusal (the object changed, the grant is what is missing) is left for the next
/// failure to try again.
async fn set_degraded<K: Conditioned>(context: &Context, object: &K, attention: &Attention) {
    let mut conditions = object.conditions().to_vec();
    status::set_condition(
        &mut conditions,
        DEGRADED,
        true,
        attention.reason,
        attention.message.clone(),
        object.meta().generation,
    );
    if conditions == object.conditions() {
        return;
    }
    let mut updated = object.clone();
    updated.set_conditions(conditions);
    let api = K::api(context.client.clone(), object);
    let name = object.name_any();
    let written = match K::STATUS_VERB {
        StatusVerb::Patch => {
            let status = serde_json::to_value(&updated)
                .ok()
                .and_then(|mut value| value.get_mut("status").map(serde_json::Value::take));
            let patch = json!({
                "metadata": {"resourceVersion": object.resource_version()},
                "status": status,
            });
            api.patch_status(&name, &patch_params(), &Patch::Merge(&patch))
                .await
                .map(drop)
        }
        StatusVerb::Update => api
            .replace_status(&name, &post_params(), &updated)
            .await
            .map(drop),
    };
    if let Err(error) = written {
        tracing::debug!(object = %ObjectKey::of(object), %error, "Degraded condition not written");
    }
}

/// How the engine writes a kind's status: with the verb its RBAC grants on `<kind>/status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StatusVerb {
    /// A JSON merge patch of the status.
    Patch,
    /// A replace of the whole status.
    Update,
}

/// A kind a person creates and reads the conditions of, which the engine marks `Degraded` when a person must act.
pub(crate) trait Conditioned:
    Resource<DynamicType = ()> + Clone + Serialize + DeserializeOwned + Debug + Send + Sync + 'static
{
    /// How the engine writes the kind's status.
    const STATUS_VERB: StatusVerb;

    /// The conditions the object reports (none without a status).
    fn conditions(&self) -> &[Condition];

    /// Replace the object's conditions, giving it the kind's empty status if it has none.
    fn set_conditions(&mut self, conditions: Vec<Condition>);

    /// The API of the object's kind, in its namespace when it has one.
    fn api(client: Client, object: &Self) -> Api<Self>;
}

/// The [`Conditioned`] items of a kind whose status has a `Default` and a `conditions` list, and which the engine
/// writes by merge patch.
macro_rules! conditions_in_patched_status {
    () => {
        const STATUS_VERB: StatusVerb = StatusVerb::Patch;

        fn conditions(&self) -> &[Condition] {
            self.status.as_ref().map_or(&[], |s| &s.conditions)
        }

        fn set_conditions(&mut self, conditions: Vec<Condition>) {
            self.status.get_or_insert_with(Default::default).conditions = conditions;
        }
    };
}

impl Conditioned for Module {
    conditions_in_patched_status!();

    fn api(client: Client, object: &Self) -> Api<Self> {
        Api::namespaced(client, &object.namespace().unwrap_or_default())
    }
}

impl Conditioned for ManagedClusterModule {
    conditions_in_patched_status!();

    fn api(client: Client, _object: &Self) -> Api<Self> {
        Api::all(client)
    }
}

impl Conditioned for Shim {
    conditions_in_patched_status!();

    fn api(client: Client, _object: &Self) -> Api<Self> {
        Api::all(client)
    }
}

impl Conditioned for ImageCache {
    // The cache family is granted `update` on the status it replaces whole, not `patch`.
    const STATUS_VERB: StatusVerb = StatusVerb::Update;

    fn conditions(&self) -> &[Condition] {
        self.status.as_ref().map_or(&[], |s| &s.conditions)
    }

    fn set_conditions(&mut self, conditions: Vec<Condition>) {
        // A cache the engine never got to has no outcome yet: upstream's `Unknown`.
        self.status
            .get_or_insert_with(|| ImageCacheStatus {
                status: ImageCacheActionStatus::Unknown,
                reason: String::new(),
                message: String::new(),
                failures: Default::default(),
                start_time: Time(jiff::Timestamp::now()),
                completion_time: None,
                nodes_targeted: None,
                nodes_cached: None,
                nodes: Vec::new(),
                nodes_omitted: None,
                observed_generation: None,
                applied_cache_spec: Vec::new(),
                conditions: Vec::new(),
            })
            .conditions = conditions;
    }

    fn api(client: Client, object: &Self) -> Api<Self> {
        Api::namespaced(client, &object.namespace().unwrap_or_default())
    }
}

impl Conditioned for ModuleDay0 {
    conditions_in_patched_status!();

    fn api(client: Client, object: &Self) -> Api<Self> {
        Api::namespaced(client, &object.namespace().unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_are_cut_to_the_api_limit_on_a_character_boundary() {
        assert_eq!(truncate("short", ACTION_LIMIT), "short");
        let long = "é".repeat(100);
        let cut = truncate(&long, ACTION_LIMIT);
        assert_eq!(cut.len(), ACTION_LIMIT);
        let odd = format!("a{long}");
        assert_eq!(truncate(&odd, ACTION_LIMIT).len(), ACTION_LIMIT - 1);
    }
}
