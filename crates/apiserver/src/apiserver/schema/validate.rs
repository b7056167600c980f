//! OpenAPI value validation with kube-openapi's semantics and message wording.
//!
//! Every keyword applies to the values of its kind only (string rules to strings,
//! number rules to numbers, ...), whatever `type` says, and a type mismatch does not
//! stop the other checks: that is how the real validator reports several errors for
//! one bad field. Error paths are kube-openapi's "names": dotted properties, `[i]`
//! for list items and `.key` for `additionalProperties` entries.

use serde_json::{Map, Number, Value};

use super::compile::{Additional, JsonType, Node, NumberFormat};
use super::errors::{FieldError, FieldErrorKind};
use super::render;

/// Fields the API server validates itself at the root of a resource.
pub(crate) const ROOT_META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// Validates `value` against `node`, appending errors to `errors`.
pub(crate) fn validate_value(
    node: &Node,
    value: &Value,
    name: &str,
    is_root: bool,
    errors: &mut Vec<FieldError>,
) {
    if value.is_null() {
        check_type(node, value, name, errors);
        check_enum(node, value, name, errors);
        return;
    }
    check_type(node, value, name, errors);
    check_combinators(node, value, name, errors);
    match value {
        Value::String(s) => {
            check_string(node, s, name, errors);
            check_format(node, s, name, errors);
        }
        Value::Number(n) => check_number(node, n, name, errors),
        Value::Array(items) => check_array(node, items, name, errors),
        _ => {}
    }
    check_enum(node, value, name, errors);
    if let Value::Object(map) = value {
        check_object(node, map, name, is_root, errors);
    }
}

/// The field path a kube-openapi name becomes (`.key` at the root loses its dot).
fn field_path(name: &str) -> &str {
    name.strip_prefix('.').unwrap_or(name)
}

fn property_name(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

/// Floats that convert to `i64` without overflow: [-2^63, 2^63).
const I64_RANGE: std::ops::Range<f64> = i64::MIN as f64..-(i64::MIN as f64);

/// A JSON number the way Go's unstructured decoding holds it.
#[derive(Clone, Copy)]
enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    fn of(n: &Number) -> Num {
        match n.as_i64() {
            Some(i) => Num::Int(i),
            None => Num::Float(n.as_f64().unwrap_or(f64::NAN)),
        }
    }

    fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }
}

/// Whether a float counts as a JSON integer for an `integer` schema, like go-openapi's
/// `IsFloat64AJSONInteger`: within ±(2^53-1) and integral up to a 1e-9 relative error.
pub(crate) fn is_json_integer(f: f64) -> bool {
    const MAX_SAFE: f64 = 9_007_199_254_740_991.0;
    if !f.is_finite() || f.abs() > MAX_SAFE {
        return false;
    }
    let rounded = f.round();
    if f == rounded {
        return true;
    }
    rounded != 0.0 && (f - rounded).abs() < 1e-9 * rounded.abs()
}

/// JSON type name and Go format the validator infers from a value.
fn inferred_type(value: &Value) -> (JsonType, &'static str) {
    match value {
        Value::Bool(_) => (JsonType::Boolean, ""),
        Value::Number(n) if n.as_i64().is_some() => (JsonType::Integer, "int64"),
        Value::Number(_) => (JsonType::Number, "float64"),
        Value::String(_) => (JsonType::String, ""),
        Value::Array(_) => (JsonType::Array, ""),
        // Null is handled before inference; objects share the "object" name.
        Value::Object(_) | Value::Null => (JsonType::Object, ""),
    }
}

fn type_name(t: JsonType) -> &'static str {
    match t {
        JsonType::Object => "object",
        JsonType::Array => "array",
        JsonType::String => "string",
        JsonType::Integer => "integer",
        JsonType::Number => "number",
        JsonType::Boolean => "boolean",
    }
}

fn type_error(name: &str, expected: &str, found: &str) -> FieldError {
    FieldError::new(
        field_path(name),
        FieldErrorKind::TypeInvalid,
        Some(Value::String(found.to_string())),
        format!(
            "{name} in body must be of type {expected}: {}",
            render::go_quote(found)
        ),
    )
}

fn check_type(node: &Node, value: &Value, name: &str, errors: &mut Vec<FieldError>) {
    let types = node.type_names();
    if types.is_none() && node.format.is_none() {
        return;
    }
    if value.is_null() {
        if let Some(types) = types
            && !node.nullable
        {
            errors.push(type_error(name, types, "null"));
        }
        return;
    }
    let (found, go_format) = inferred_type(value);
    let float_as_integer = found == JsonType::Number
        && node.allows_type(JsonType::Integer)
        && value.as_f64().is_some_and(is_json_integer);
    let integer_as_number = found == JsonType::Integer && node.allows_type(JsonType::Number);
    let compatible = node.allows_type(found) || float_as_integer || integer_as_number;
    let stringish = matches!(value, Value::String(_) | Value::Array(_));
    if let Some(format) = &node.format {
        if !stringish && !compatible && go_format != format {
            errors.push(type_error(name, format, go_format));
            return;
        }
        let numeric = node.allows_type(JsonType::Integer) || node.allows_type(JsonType::Number);
        if !numeric && stringish {
            return;
        }
    }
    if let Some(types) = types
        && !compatible
    {
        errors.push(type_error(name, types, type_name(found)));
    }
}

fn check_combinators(node: &Node, value: &Value, name: &str, errors: &mut Vec<FieldError>) {
    let summary = |detail: String| {
        FieldError::new(
            field_path(name),
            FieldErrorKind::Invalid,
            Some(Value::String(String::new())),
            detail,
        )
    };
    let quoted = render::go_quote(name);
    let run = |branch: &Node| {
        let mut branch_errors = Vec::new();
        validate_value(branch, value, name, false, &mut branch_errors);
        branch_errors
    };

    if !node.any_of.is_empty() {
        let results: Vec<Vec<FieldError>> = node.any_of.iter().map(run).collect();
        if !results.iter().any(Vec::is_empty) {
            errors.push(summary(format!(
                "{quoted} must validate at least one schema (anyOf)"
            )));
            errors.extend(closest_failure(results));
        }
    }
    if !node.one_of.is_empty() {
        let results: Vec<Vec<FieldError>> = node.one_of.iter().map(run).collect();
        let valid = results.iter().filter(|r| r.is_empty()).count();
        if valid != 1 {
            let found = if valid == 0 {
                "Found none valid".to_string()
            } else {
                format!("Found {valid} valid alternatives")
            };
            errors.push(summary(format!(
                "{quoted} must validate one and only one schema (oneOf). {found}"
            )));
            if valid == 0 {
                errors.extend(closest_failure(results));
            }
        }
    }
    if !node.all_of.is_empty() {
        let mut valid = 0;
        for branch in &node.all_of {
            let branch_errors = run(branch);
            if branch_errors.is_empty() {
                valid += 1;
            }
            errors.extend(branch_errors);
        }
        if valid != node.all_of.len() {
            let none = if valid == 0 { ". None validated" } else { "" };
            errors.push(summary(format!(
                "{quoted} must validate all the schemas (allOf){none}"
            )));
        }
    }
    if let Some(not) = &node.not
        && run(not).is_empty()
    {
        errors.push(summary(format!(
            "{quoted} must not validate the schema (not)"
        )));
    }
}

/// The failing branch that came closest to validating (fewest errors, first on ties).
fn closest_failure(results: Vec<Vec<FieldError>>) -> Vec<FieldError> {
    results.into_iter().min_by_key(Vec::len).unwrap_or_default()
}

fn check_string(node: &Node, s: &str, name: &str, errors: &mut Vec<FieldError>) {
    let invalid = |detail: String| {
        FieldError::new(
            field_path(name),
            FieldErrorKind::Invalid,
            Some(Value::String(s.to_string())),
            detail,
        )
    };
    let length = s.chars().count() as u64;
    if let Some(max) = node.max_length
        && length > max
    {
        let unit = if max == 1 { "byte" } else { "bytes" };
        errors.push(FieldError::new(
            field_path(name),
            FieldErrorKind::TooLong,
            Some(Value::String(s.to_string())),
            format!("may not be more than {max} {unit}"),
        ));
        return;
    }
    if let Some(min) = node.min_length
        && length < min
    {
        errors.push(invalid(format!(
            "{name} in body should be at least {min} chars long"
        )));
        return;
    }
    if let Some((pattern, regex)) = &node.pattern
        && !regex.is_match(s)
    {
        errors.push(invalid(format!("{name} in body should match '{pattern}'")));
    }
}

fn check_format(node: &Node, s: &str, name: &str, errors: &mut Vec<FieldError>) {
    if let (Some(format), Some(checker)) = (&node.format, node.string_format)
        && !checker.accepts(s)
    {
        errors.push(FieldError::new(
            field_path(name),
            FieldErrorKind::TypeInvalid,
            Some(Value::String(s.to_string())),
            format!(
                "{name} in body must be of type {format}: {}",
                render::go_quote(s)
            ),
        ));
    }
}

fn check_number(node: &Node, n: &Number, name: &str, errors: &mut Vec<FieldError>) {
    let num = Num::of(n);
    let invalid = |detail: String| {
        FieldError::new(
            field_path(name),
            FieldErrorKind::Invalid,
            Some(Value::Number(n.clone())),
            detail,
        )
    };
    if let Some(detail) = range_error(node, num, name) {
        errors.push(invalid(detail));
    }
    if let Some(factor) = node.multiple_of
        && !is_multiple(num, factor)
    {
        errors.push(invalid(format!(
            "{name} in body should be a multiple of {}",
            bound(num, factor)
        )));
    }
    let f = num.as_f64();
    if let Some(min) = node.minimum {
        if node.exclusive_minimum && f <= min {
            errors.push(invalid(format!(
                "{name} in body should be greater than {}",
                bound(num, min)
            )));
        } else if f < min {
            errors.push(invalid(format!(
                "{name} in body should be greater than or equal to {}",
                bound(num, min)
            )));
        }
    }
    if let Some(max) = node.maximum {
        if node.exclusive_maximum && f >= max {
            errors.push(invalid(format!(
                "{name} in body should be less than {}",
                bound(num, max)
            )));
        } else if f > max {
            errors.push(invalid(format!(
                "{name} in body should be less than or equal to {}",
                bound(num, max)
            )));
        }
    }
}

/// A schema bound as the message prints it: as an integer next to integer data.
fn bound(num: Num, limit: f64) -> String {
    match num {
        Num::Int(_) if limit.fract() == 0.0 && I64_RANGE.contains(&limit) => {
            (limit as i64).to_string()
        }
        _ => render::float_v(limit),
    }
}

fn is_multiple(num: Num, factor: f64) -> bool {
    if let Num::Int(i) = num
        && factor.fract() == 0.0
        && (1.0..I64_RANGE.end).contains(&factor)
    {
        return i % (factor as i64) == 0;
    }
    let f = num.as_f64();
    let quotient = if factor < 1.0 {
        1.0 / factor * f
    } else {
        f / factor
    };
    is_json_integer(quotient)
}

/// Whether the value fits the declared numeric type and format (`int32`, `float`).
fn range_error(node: &Node, num: Num, name: &str) -> Option<String> {
    if node.int_or_string {
        return None;
    }
    let format = node.number_format;
    let fits = match (node.declared_type?, format) {
        (JsonType::Integer, Some(NumberFormat::Int32)) => match num {
            Num::Int(i) => i32::try_from(i).is_ok(),
            Num::Float(f) => f.fract() == 0.0 && (i32::MIN as f64..=i32::MAX as f64).contains(&f),
        },
        (JsonType::Integer, _) => match num {
            Num::Int(_) => true,
            Num::Float(f) => f.fract() == 0.0 && I64_RANGE.contains(&f),
        },
        (JsonType::Number, Some(NumberFormat::Float)) => (num.as_f64() as f32).is_finite(),
        _ => true,
    };
    if fits {
        return None;
    }
    let type_name = if node.declared_type == Some(JsonType::Integer) {
        "integer"
    } else {
        "number"
    };
    Some(match format {
        Some(format) => format!(
            "Checked value must be of type {type_name} with format {} in {name}",
            format.name()
        ),
        None => format!("Checked value must be of type {type_name} (default format) in {name}"),
    })
}

fn check_array(node: &Node, items: &[Value], name: &str, errors: &mut Vec<FieldError>) {
    if let Some(item_schema) = &node.items {
        for (i, item) in items.iter().enumerate() {
            validate_value(item_schema, item, &format!("{name}[{i}]"), false, errors);
        }
    }
    let len = items.len() as u64;
    if let Some(min) = node.min_items
        && len < min
    {
        errors.push(FieldError::new(
            field_path(name),
            FieldErrorKind::Invalid,
            Some(Value::from(len)),
            format!("{name} in body should have at least {min} items"),
        ));
    }
    if let Some(max) = node.max_items
        && len > max
    {
        errors.push(too_many(name, len, max));
    }
    if node.unique_items {
        let rendered: Vec<String> = items.iter().map(render::go_json).collect();
        let has_duplicate = rendered
            .iter()
            .enumerate()
            .any(|(i, r)| rendered[..i].contains(r));
        if has_duplicate {
            errors.push(FieldError::new(
                field_path(name),
                FieldErrorKind::Invalid,
                Some(Value::String(String::new())),
                format!("{name} in body shouldn't contain duplicates"),
            ));
        }
    }
}

fn too_many(name: &str, actual: u64, max: u64) -> FieldError {
    let unit = if max == 1 { "item" } else { "items" };
    FieldError::new(
        field_path(name),
        FieldErrorKind::TooMany,
        Some(Value::from(actual)),
        format!("must have at most {max} {unit}"),
    )
}

fn check_enum(node: &Node, value: &Value, name: &str, errors: &mut Vec<FieldError>) {
    let Some(allowed) = node.enumeration.as_ref().filter(|e| !e.is_empty()) else {
        return;
    };
    if allowed.iter().any(|candidate| json_equal(candidate, value)) {
        return;
    }
    let supported: Vec<String> = allowed
        .iter()
        .map(|v| match v {
            Value::String(s) => render::go_quote(s),
            other => render::go_quote(&render::go_json(other)),
        })
        .collect();
    errors.push(FieldError::new(
        field_path(name),
        FieldErrorKind::NotSupported,
        Some(value.clone()),
        format!("supported values: {}", supported.join(", ")),
    ));
}

/// JSON equality where numbers compare by value (`1` equals `1.0`).
pub(crate) fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

fn check_object(
    node: &Node,
    map: &Map<String, Value>,
    name: &str,
    is_root: bool,
    errors: &mut Vec<FieldError>,
) {
    let count = map.len() as u64;
    if let Some(min) = node.min_properties
        && count < min
    {
        errors.push(FieldError::new(
            field_path(name),
            FieldErrorKind::Invalid,
            Some(Value::from(count)),
            format!("{name} in body should have at least {min} properties"),
        ));
    }
    if let Some(max) = node.max_properties
        && count > max
    {
        errors.push(too_many(name, count, max));
    }
    let skipped = |key: &str| is_root && ROOT_META_FIELDS.contains(&key);
    let extra_keys = map
        .iter()
        .filter(|(key, _)| node.property(key).is_none() && !skipped(key));
    match node.additional() {
        Additional::Bool(false) => {
            for (key, _) in extra_keys {
                errors.push(FieldError::new(
                    field_path(name),
                    FieldErrorKind::Invalid,
                    Some(Value::String(key.clone())),
                    format!("{name}.{key} in body is a forbidden property"),
                ));
            }
        }
        Additional::Schema(schema) => {
            for (key, v) in extra_keys {
                validate_value(schema, v, &format!("{name}.{key}"), false, errors);
            }
        }
        Additional::Bool(true) | Additional::Absent => {}
    }
    for (key, child) in &node.properties {
        if skipped(key) {
            continue;
        }
        if let Some(v) = map.get(key) {
            validate_value(child, v, &property_name(name, key), false, errors);
        }
    }
    for key in &node.required {
        if !map.contains_key(key) {
            errors.push(FieldError::new(
                field_path(&format!("{name}.{key}")),
                FieldErrorKind::Required,
                None,
                "",
            ));
        }
    }
}
