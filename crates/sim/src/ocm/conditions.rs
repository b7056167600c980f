//! Setting a condition as OCM's agents do: its transition time moves only when its status changes.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// A condition to set: type, status, reason, message.
pub(crate) struct Wanted<'a> {
    /// Condition type.
    pub(crate) type_: &'a str,
    /// `True`, `False` or `Unknown`.
    pub(crate) status: &'a str,
    /// Why, in one CamelCase word.
    pub(crate) reason: &'a str,
    /// Why, for a person.
    pub(crate) message: String,
    /// The generation it answers, when it answers one.
    pub(crate) observed_generation: Option<i64>,
}

/// Put `wanted` into `conditions`, keeping the old transition time when the status stays the same.
pub(crate) fn set(conditions: &mut Vec<Condition>, wanted: Wanted<'_>) {
    let now = Time(jiff::Timestamp::now());
    let existing = conditions.iter_mut().find(|c| c.type_ == wanted.type_);
    let condition = Condition {
        type_: wanted.type_.to_owned(),
        status: wanted.status.to_owned(),
        reason: wanted.reason.to_owned(),
        message: wanted.message,
        observed_generation: wanted.observed_generation,
        last_transition_time: match &existing {
            Some(old) if old.status == wanted.status => old.last_transition_time.clone(),
            _ => now,
        },
    };
    match existing {
        Some(old) => *old = condition,
        None => conditions.push(condition),
    }
}

/// `conditions` equal apart from transition times: whether a write would change what a reader sees.
pub(crate) fn same(a: &[Condition], b: &[Condition]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(a, b)| {
            a.type_ == b.type_
                && a.status == b.status
                && a.reason == b.reason
                && a.message == b.message
                && a.observed_generation == b.observed_generation
        })
}
