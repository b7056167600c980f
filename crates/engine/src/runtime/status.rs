//! Conditions as the engine writes them: one helper that keeps `lastTransitionTime` when the status does not
//! change, so a pass that finds nothing new writes nothing new; and the merge patch that turns a stored status
//! into a new one, fields the new one leaves out included.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use serde_json::{Map, Value};

/// Set condition `type_` in `conditions`, keeping its transition time when its status is unchanged.
pub fn set_condition(
    conditions: &mut Vec<Condition>,
    type_: &str,
    status: bool,
    reason: &str,
    message: impl Into<String>,
    observed_generation: Option<i64>,
) {
    let status = if status { "True" } else { "False" }.to_owned();
    let message = message.into();
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(existing) => {
            if existing.status != status {
                existing.last_transition_time = Time(jiff::Timestamp::now());
                existing.status = status;
            }
            existing.reason = reason.to_owned();
            existing.message = message;
            existing.observed_generation = observed_generation;
        }
        None => conditions.push(Condition {
            type_: type_.to_owned(),
            status,
            reason: reason.to_owned(),
            message,
            observed_generation,
            last_transition_time: Time(jiff::Timestamp::now()),
        }),
    }
}

/// The JSON merge patch (RFC 7386) that turns `old` into `new`: a field `new` leaves out is written as null at any
/// depth, so a status whose serialisation omits a default (a `false` flag, an absent option) clears what the stored
/// status still says instead of leaving it behind. Arrays and scalars are replaced whole.
pub fn merge_patch(old: &Value, new: &Value) -> Value {
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => {
            let mut patch = Map::new();
            for (key, value) in new {
                let changed = match old.get(key) {
                    Some(before) => merge_patch(before, value),
                    None => value.clone(),
                };
                patch.insert(key.clone(), changed);
            }
            for key in old.keys().filter(|key| !new.contains_key(*key)) {
                patch.insert(key.clone(), Value::Null);
            }
            Value::Object(patch)
        }
        _ => new.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_patch_clears_nested_fields_the_new_value_leaves_out() {
        let old = serde_json::json!({"rollout": {"batch": 3, "awaitingApproval": true}, "nodes": 6, "gone": [1]});
        let new = serde_json::json!({"rollout": {"batch": 3}, "nodes": 6});
        assert_eq!(
            merge_patch(&old, &new),
            serde_json::json!({"rollout": {"batch": 3, "awaitingApproval": null}, "nodes": 6, "gone": null})
        );
    }

    #[test]
    fn transition_time_moves_only_when_status_changes() {
        let mut conditions = Vec::new();
        set_condition(&mut conditions, "Ready", false, "Waiting", "a", Some(1));
        let first = conditions[0].last_transition_time.clone();
        set_condition(
            &mut conditions,
            "Ready",
            false,
            "StillWaiting",
            "b",
            Some(2),
        );
        assert_eq!(conditions[0].last_transition_time, first);
        assert_eq!(conditions[0].reason, "StillWaiting");
        set_condition(&mut conditions, "Ready", true, "Done", "c", Some(2));
        assert_eq!(conditions.len(), 1);
        assert_eq!(conditions[0].status, "True");
    }
}
