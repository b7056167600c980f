//! Reading cells out of objects the way kubectl's printers do: missing values read as empty, never
//! as an error, so a malformed object still gets a row.

use jiff::Timestamp;
use serde_json::{Map, Value};

use kmm_api::age::human_duration;

pub(super) fn get<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, key| v.get(key))
}

/// A string member, or `""` when absent or not a string.
pub(super) fn text<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    get(value, path).and_then(Value::as_str).unwrap_or_default()
}

pub(super) fn str_cell(value: &Value, path: &[&str]) -> Value {
    Value::String(text(value, path).to_owned())
}

/// An integer member, or 0 when absent.
pub(super) fn int(value: &Value, path: &[&str]) -> i64 {
    get(value, path).and_then(Value::as_i64).unwrap_or(0)
}

pub(super) fn array<'a>(value: &'a Value, path: &[&str]) -> &'a [Value] {
    get(value, path)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

pub(super) fn member_count(value: &Value, key: &str) -> usize {
    value
        .get(key)
        .and_then(Value::as_object)
        .map_or(0, Map::len)
}

pub(super) fn timestamp(value: &Value, path: &[&str]) -> Option<Timestamp> {
    text(value, path).parse().ok()
}

pub(super) fn or_none(s: &str) -> Value {
    Value::String(if s.is_empty() { "<none>" } else { s }.to_owned())
}

pub(super) fn or_unknown(s: &str) -> Value {
    Value::String(if s.is_empty() { "<unknown>" } else { s }.to_owned())
}

/// The status (`True`, `False`, `Unknown`) of the condition of type `kind` in `status.conditions`.
pub(super) fn condition_status<'a>(object: &'a Value, kind: &str) -> Option<&'a str> {
    array(object, &["status", "conditions"])
        .iter()
        .find(|c| text(c, &["type"]) == kind)
        .map(|c| text(c, &["status"]))
}

pub(super) fn condition_true(object: &Value, kind: &str) -> bool {
    condition_status(object, kind) == Some("True")
}

/// `k=v` pairs sorted by key, comma-separated.
pub(super) fn format_labels(labels: Option<&Map<String, Value>>) -> String {
    let mut pairs: Vec<String> = labels
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    pairs.sort();
    pairs.join(",")
}

/// How long ago `then` was, as a human age; `<unknown>` when there is no time (or the zero time).
pub(super) fn age(then: Option<Timestamp>, now: Timestamp) -> String {
    match then {
        Some(then) if then.as_second() > ZERO_TIME_SECONDS => {
            human_duration(now.duration_since(then))
        }
        _ => "<unknown>".to_owned(),
    }
}

/// Seconds since the Unix epoch of `0001-01-01T00:00:00Z`, the zero time Go clients write for unset times.
const ZERO_TIME_SECONDS: i64 = -62_135_596_800;

/// The zero time, which stands for "never" in Kubernetes objects.
pub(super) fn zero_time() -> Timestamp {
    Timestamp::from_second(ZERO_TIME_SECONDS).unwrap_or(Timestamp::MIN)
}
