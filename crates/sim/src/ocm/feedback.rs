//! What a work agent reads back from an applied object for the hub: the feedback rules of a ManifestWork's
//! `manifestConfigs`, evaluated on the object as the spoke holds it.
//!
//! `WellKnownStatus` reads the status fields OCM knows for Deployments, DaemonSets, Jobs and Pods, and (for the KMM
//! hub) a Module's kmod loader counts; `JSONPaths` reads each path from the object's root (`.status.readyReplicas`),
//! as OCM's agent evaluates it. A path that finds
//! nothing is left out and the rule counts as incomplete, as OCM's agent reports it.

use kmm_api::kmm;
use kmm_api::ocm::work::{FeedbackRule, FeedbackType, FeedbackValue, FieldValue};
use kmm_apiserver::apiserver::jsonpath::JsonPath;
use serde_json::Value;

/// The values the rules read, and whether every value they asked for was found (with what was missing).
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Feedback {
    /// The values read, in rule order.
    pub(crate) values: Vec<FeedbackValue>,
    /// What the rules asked for and the object lacks, or a path that cannot be read.
    pub(crate) missing: Vec<String>,
}

/// The well-known status fields of a kind: the name the feedback gives each, and its path under `status`.
fn well_known(group: &str, kind: &str) -> &'static [(&'static str, &'static str)] {
    match (group, kind) {
        ("apps", "Deployment") => &[
            ("ReadyReplicas", ".readyReplicas"),
            ("Replicas", ".replicas"),
            ("AvailableReplicas", ".availableReplicas"),
        ],
        ("apps", "DaemonSet") => &[
            ("NumberReady", ".numberReady"),
            ("DesiredNumberScheduled", ".desiredNumberScheduled"),
            ("NumberAvailable", ".numberAvailable"),
            ("UpdatedNumberScheduled", ".updatedNumberScheduled"),
        ],
        ("batch", "Job") => &[("JobSucceeded", ".succeeded")],
        ("", "Pod") => &[("PodPhase", ".phase")],
        (kmm::GROUP, "Module") => &[
            (
                "NodesMatchingSelectorNumber",
                ".moduleLoader.nodesMatchingSelectorNumber",
            ),
            ("DesiredNumber", ".moduleLoader.desiredNumber"),
            ("AvailableNumber", ".moduleLoader.availableNumber"),
        ],
        _ => &[],
    }
}

/// Evaluate `rules` on `object` (of API group `group` and kind `kind`).
pub(crate) fn evaluate(
    rules: &[FeedbackRule],
    group: &str,
    kind: &str,
    object: &Value,
) -> Feedback {
    let status = object.get("status").unwrap_or(&Value::Null);
    let mut feedback = Feedback::default();
    for rule in rules {
        match rule.type_ {
            FeedbackType::WellKnownStatus => {
                let fields = well_known(group, kind);
                if fields.is_empty() {
                    feedback
                        .missing
                        .push(format!("no well-known status for {kind}"));
                }
                for (name, path) in fields {
                    read(&mut feedback, name, path, status, WellKnown::Counts);
                }
            }
            FeedbackType::JsonPaths => {
                for path in &rule.json_paths {
                    read(&mut feedback, &path.name, &path.path, object, WellKnown::No);
                }
            }
        }
    }
    feedback
}

/// Whether a missing value is a count the object's controller leaves out while it is zero.
#[derive(Clone, Copy, PartialEq)]
enum WellKnown {
    Counts,
    No,
}

/// Read `path` from `from` (the object's status for well-known fields, the object for JSONPaths).
fn read(feedback: &mut Feedback, name: &str, path: &str, from: &Value, well_known: WellKnown) {
    let parsed = match JsonPath::parse(path) {
        Ok(parsed) => parsed,
        Err(error) => {
            feedback.missing.push(format!("{name}: {error}"));
            return;
        }
    };
    let found = parsed.find(from);
    let value = match found.as_slice() {
        [] => None,
        [one] => FieldValue::from_json(one),
        many => FieldValue::from_json(&Value::Array(
            many.iter().map(|value| (*value).clone()).collect(),
        )),
    };
    match value {
        Some(field_value) => feedback.values.push(FeedbackValue {
            name: name.to_owned(),
            field_value,
        }),
        // Controllers omit zero counts (`omitempty`), so an absent count of a status that exists reads as zero.
        None if well_known == WellKnown::Counts && !from.is_null() && path != ".phase" => {
            feedback.values.push(FeedbackValue {
                name: name.to_owned(),
                field_value: FieldValue::from_json(&Value::from(0)).unwrap_or_default(),
            });
        }
        None => feedback.missing.push(format!("{name}: nothing at {path}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kmm_api::ocm::work::{JsonPath as RulePath, ValueType};
    use serde_json::json;

    fn rule(type_: FeedbackType, paths: &[(&str, &str)]) -> FeedbackRule {
        FeedbackRule {
            type_,
            json_paths: paths
                .iter()
                .map(|(name, path)| RulePath {
                    name: (*name).to_owned(),
                    path: (*path).to_owned(),
                    version: None,
                })
                .collect(),
        }
    }

    fn value<'a>(feedback: &'a Feedback, name: &str) -> Option<&'a FieldValue> {
        feedback
            .values
            .iter()
            .find(|value| value.name == name)
            .map(|value| &value.field_value)
    }

    #[test]
    fn a_deployment_reports_its_replica_counts() {
        let deployment = json!({"status": {"replicas": 3, "readyReplicas": 2}});
        let feedback = evaluate(
            &[rule(FeedbackType::WellKnownStatus, &[])],
            "apps",
            "Deployment",
            &deployment,
        );
        assert_eq!(
            value(&feedback, "Replicas").and_then(|v| v.integer),
            Some(3)
        );
        assert_eq!(
            value(&feedback, "ReadyReplicas").and_then(|v| v.integer),
            Some(2)
        );
        assert_eq!(
            value(&feedback, "AvailableReplicas").and_then(|v| v.integer),
            Some(0),
            "a count the controller leaves out is zero"
        );
        assert!(feedback.missing.is_empty(), "{:?}", feedback.missing);
    }

    #[test]
    fn a_module_reports_its_loader_counts() {
        let module = json!({"status": {"moduleLoader": {"nodesMatchingSelectorNumber": 4, "desiredNumber": 4, "availableNumber": 1}}});
        let feedback = evaluate(
            &[rule(FeedbackType::WellKnownStatus, &[])],
            kmm::GROUP,
            "Module",
            &module,
        );
        assert_eq!(
            value(&feedback, "DesiredNumber").and_then(|v| v.integer),
            Some(4)
        );
        assert_eq!(
            value(&feedback, "AvailableNumber").and_then(|v| v.integer),
            Some(1)
        );
    }

    #[test]
    fn json_paths_read_from_the_object_with_their_types() {
        let object =
            json!({"status": {"phase": "Running", "ready": true, "ports": [80, 443], "count": 7}});
        let feedback = evaluate(
            &[rule(
                FeedbackType::JsonPaths,
                &[
                    ("phase", ".status.phase"),
                    ("ready", ".status.ready"),
                    ("ports", ".status.ports"),
                    ("count", ".status.count"),
                    ("absent", ".status.nothing"),
                ],
            )],
            "",
            "ConfigMap",
            &object,
        );
        assert_eq!(
            value(&feedback, "phase").and_then(|v| v.string.as_deref()),
            Some("Running")
        );
        assert_eq!(
            value(&feedback, "ready").and_then(|v| v.boolean),
            Some(true)
        );
        let ports = value(&feedback, "ports").expect("the array is read");
        assert_eq!(ports.type_, ValueType::JsonRaw);
        assert_eq!(ports.json_raw.as_deref(), Some("[80,443]"));
        assert_eq!(value(&feedback, "count").and_then(|v| v.integer), Some(7));
        assert_eq!(
            feedback.missing,
            vec!["absent: nothing at .status.nothing".to_owned()]
        );
    }

    #[test]
    fn a_kind_without_well_known_fields_says_so() {
        let feedback = evaluate(
            &[rule(FeedbackType::WellKnownStatus, &[])],
            "",
            "ConfigMap",
            &json!({"data": {}}),
        );
        assert!(feedback.values.is_empty());
        assert_eq!(
            feedback.missing,
            vec!["no well-known status for ConfigMap".to_owned()]
        );
    }
}
