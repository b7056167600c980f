//! Conditions as the engine writes them: one helper that keeps `lastTransitionTime` when the status does not
//! change, so a pass that finds nothing new writes nothing new.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

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

#[cfg(test)]
mod tests {
    use super::*;

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
