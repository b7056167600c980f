//! Turns an `openAPIV3Schema` JSON value into a tree of [`Node`]s.
//!
//! Everything that can be decided once per CRD version is decided here: regexes are
//! compiled, unsupported formats are dropped (as kube-apiserver strips them), and
//! property lookups get an index. Applying the tree to objects then never fails.

use std::collections::HashMap;

use regex::Regex;
use serde_json::{Map, Value};

use super::cel::{self, Rule};
use super::formats::StringFormat;
use super::pattern;

/// Why an `openAPIV3Schema` could not be compiled.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SchemaError {
    /// A keyword holds a JSON value of the wrong kind (e.g. `minLength: "3"`).
    #[error("{location}: {keyword} must be {expected}")]
    Malformed {
        /// JSON-pointer style location of the schema node.
        location: String,
        /// The offending keyword.
        keyword: String,
        /// What the keyword should have held.
        expected: &'static str,
    },
    /// `pattern` is not a regular expression the engine accepts.
    #[error("{location}: pattern {pattern:?} does not compile: {reason}")]
    InvalidPattern {
        /// JSON-pointer style location of the schema node.
        location: String,
        /// The pattern as written in the schema.
        pattern: String,
        /// The regex engine's explanation.
        reason: String,
    },
    /// A keyword combination the API server rejects or that cannot be enforced.
    #[error("{location}: {message}")]
    Unsupported {
        /// JSON-pointer style location of the schema node.
        location: String,
        /// What is wrong.
        message: String,
    },
}

/// The JSON types a schema can declare with `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JsonType {
    Object,
    Array,
    String,
    Integer,
    Number,
    Boolean,
}

impl JsonType {
    fn parse(name: &str) -> Option<JsonType> {
        Some(match name {
            "object" => JsonType::Object,
            "array" => JsonType::Array,
            "string" => JsonType::String,
            "integer" => JsonType::Integer,
            "number" => JsonType::Number,
            "boolean" => JsonType::Boolean,
            _ => return None,
        })
    }
}

/// Numeric formats that constrain the range of a value (`int32`, `float`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NumberFormat {
    Int32,
    Int64,
    Float,
    Double,
}

impl NumberFormat {
    pub(crate) fn name(self) -> &'static str {
        match self {
            NumberFormat::Int32 => "int32",
            NumberFormat::Int64 => "int64",
            NumberFormat::Float => "float",
            NumberFormat::Double => "double",
        }
    }
}

/// How an object treats keys that are not in `properties`.
#[derive(Debug)]
pub(crate) enum Additional {
    /// No `additionalProperties`: unknown keys are pruned, not validated.
    Absent,
    /// `additionalProperties: true|false`: keys are kept by pruning; `false` makes
    /// validation reject them.
    Bool(bool),
    /// `additionalProperties: {schema}`: every extra key holds a value of that schema.
    Schema(Box<Node>),
}

/// `x-kubernetes-list-type` of an array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListType {
    /// The list is replaced as a whole by merges.
    Atomic,
    /// Items are unique scalars (or unique compound values).
    Set,
    /// Items are objects identified by `x-kubernetes-list-map-keys`.
    Map,
}

/// One compiled schema node.
#[derive(Debug, Default)]
pub(crate) struct Node {
    pub(crate) declared_type: Option<JsonType>,
    pub(crate) int_or_string: bool,
    pub(crate) nullable: bool,
    /// Format name as written, kept only when kube-apiserver would keep it.
    pub(crate) format: Option<String>,
    pub(crate) string_format: Option<StringFormat>,
    pub(crate) number_format: Option<NumberFormat>,
    pub(crate) enumeration: Option<Vec<Value>>,
    pub(crate) default: Option<Value>,

    pub(crate) maximum: Option<f64>,
    pub(crate) exclusive_maximum: bool,
    pub(crate) minimum: Option<f64>,
    pub(crate) exclusive_minimum: bool,
    pub(crate) multiple_of: Option<f64>,

    pub(crate) max_length: Option<u64>,
    pub(crate) min_length: Option<u64>,
    pub(crate) pattern: Option<(String, Regex)>,

    pub(crate) items: Option<Box<Node>>,
    pub(crate) max_items: Option<u64>,
    pub(crate) min_items: Option<u64>,
    pub(crate) unique_items: bool,
    pub(crate) list_type: Option<ListType>,
    pub(crate) list_map_keys: Vec<String>,

    pub(crate) properties: Vec<(String, Node)>,
    property_index: HashMap<String, usize>,
    pub(crate) additional: Option<Additional>,
    pub(crate) required: Vec<String>,
    pub(crate) max_properties: Option<u64>,
    pub(crate) min_properties: Option<u64>,

    pub(crate) all_of: Vec<Node>,
    pub(crate) any_of: Vec<Node>,
    pub(crate) one_of: Vec<Node>,
    pub(crate) not: Option<Box<Node>>,

    pub(crate) preserve_unknown_fields: bool,
    pub(crate) embedded_resource: bool,

    /// `x-kubernetes-validations`, compiled.
    pub(crate) rules: Vec<Rule>,
}

impl Node {
    /// Schema of the declared property `name`.
    pub(crate) fn property(&self, name: &str) -> Option<&Node> {
        self.property_index
            .get(name)
            .and_then(|&i| self.properties.get(i))
            .map(|(_, node)| node)
    }

    /// How keys outside `properties` are treated.
    pub(crate) fn additional(&self) -> &Additional {
        self.additional.as_ref().unwrap_or(&Additional::Absent)
    }

    /// Schema of extra keys, when `additionalProperties` is a schema.
    pub(crate) fn additional_schema(&self) -> Option<&Node> {
        match self.additional() {
            Additional::Schema(node) => Some(node),
            _ => None,
        }
    }

    /// Schema for the value under `key`: the declared property, else the
    /// `additionalProperties` schema.
    pub(crate) fn field(&self, key: &str) -> Option<&Node> {
        self.property(key).or_else(|| self.additional_schema())
    }

    /// The type list as kube-openapi spells it in messages (`integer,string`).
    pub(crate) fn type_names(&self) -> Option<&'static str> {
        if self.int_or_string {
            return Some("integer,string");
        }
        self.declared_type.map(|t| match t {
            JsonType::Object => "object",
            JsonType::Array => "array",
            JsonType::String => "string",
            JsonType::Integer => "integer",
            JsonType::Number => "number",
            JsonType::Boolean => "boolean",
        })
    }

    /// Whether the declared types include `t`.
    pub(crate) fn allows_type(&self, t: JsonType) -> bool {
        if self.int_or_string {
            return matches!(t, JsonType::Integer | JsonType::String);
        }
        self.declared_type == Some(t)
    }
}

/// Compiles the root `openAPIV3Schema`.
pub(crate) fn compile_node(schema: &Value, location: &str) -> Result<Node, SchemaError> {
    let Some(map) = schema.as_object() else {
        return Err(malformed(location, "schema", "an object"));
    };
    let reader = Reader { map, location };
    let mut node = Node {
        declared_type: reader.declared_type()?,
        int_or_string: reader.bool("x-kubernetes-int-or-string")?,
        nullable: reader.bool("nullable")?,
        enumeration: reader.array("enum")?.cloned(),
        default: map.get("default").cloned(),
        maximum: reader.number("maximum")?,
        exclusive_maximum: reader.bool("exclusiveMaximum")?,
        minimum: reader.number("minimum")?,
        exclusive_minimum: reader.bool("exclusiveMinimum")?,
        multiple_of: reader.number("multipleOf")?,
        max_length: reader.count("maxLength")?,
        min_length: reader.count("minLength")?,
        max_items: reader.count("maxItems")?,
        min_items: reader.count("minItems")?,
        unique_items: reader.bool("uniqueItems")?,
        max_properties: reader.count("maxProperties")?,
        min_properties: reader.count("minProperties")?,
        required: reader.strings("required")?,
        list_map_keys: reader.strings("x-kubernetes-list-map-keys")?,
        preserve_unknown_fields: reader.bool("x-kubernetes-preserve-unknown-fields")?,
        embedded_resource: reader.bool("x-kubernetes-embedded-resource")?,
        ..Node::default()
    };
    if node.multiple_of.is_some_and(|m| m <= 0.0) {
        return Err(unsupported(location, "multipleOf must be greater than 0"));
    }
    if map.contains_key("$ref") {
        return Err(unsupported(location, "$ref is not supported"));
    }
    node.list_type = reader.list_type()?;
    compile_format(&mut node, &reader)?;
    if let Some(pattern) = reader.string("pattern")? {
        let regex = pattern::compile(pattern).map_err(|reason| SchemaError::InvalidPattern {
            location: location.to_string(),
            pattern: pattern.to_string(),
            reason,
        })?;
        node.pattern = Some((pattern.to_string(), regex));
    }
    compile_children(&mut node, map, location)?;
    node.rules = cel::compile_rules(map, location)?;
    Ok(node)
}

fn compile_format(node: &mut Node, reader: &Reader<'_>) -> Result<(), SchemaError> {
    let Some(format) = reader.string("format")? else {
        return Ok(());
    };
    // kube-apiserver drops formats it does not support for the declared type, so
    // they are neither checked nor mentioned in type errors.
    let kept = match (node.int_or_string, node.declared_type) {
        (true, _) | (false, None | Some(JsonType::String)) => {
            node.string_format = StringFormat::parse(format);
            node.string_format.is_some()
        }
        (false, Some(JsonType::Integer)) => {
            node.number_format = match format {
                "int32" => Some(NumberFormat::Int32),
                "int64" => Some(NumberFormat::Int64),
                _ => None,
            };
            node.number_format.is_some()
        }
        (false, Some(JsonType::Number)) => {
            node.number_format = match format {
                "float" => Some(NumberFormat::Float),
                "double" => Some(NumberFormat::Double),
                _ => None,
            };
            node.number_format.is_some()
        }
        _ => false,
    };
    if kept {
        node.format = Some(format.to_string());
    }
    Ok(())
}

fn compile_children(
    node: &mut Node,
    map: &Map<String, Value>,
    location: &str,
) -> Result<(), SchemaError> {
    if let Some(properties) = map.get("properties") {
        let Some(properties) = properties.as_object() else {
            return Err(malformed(location, "properties", "an object"));
        };
        for (name, schema) in properties {
            let child = compile_node(schema, &format!("{location}/properties/{name}"))?;
            node.property_index
                .insert(name.clone(), node.properties.len());
            node.properties.push((name.clone(), child));
        }
    }
    node.additional = match map.get("additionalProperties") {
        None => None,
        Some(Value::Bool(allowed)) => Some(Additional::Bool(*allowed)),
        Some(schema) => Some(Additional::Schema(Box::new(compile_node(
            schema,
            &format!("{location}/additionalProperties"),
        )?))),
    };
    node.items = match map.get("items") {
        None => None,
        Some(Value::Array(_)) => {
            return Err(unsupported(
                location,
                "items must be a schema, not an array",
            ));
        }
        Some(schema) => Some(Box::new(compile_node(
            schema,
            &format!("{location}/items"),
        )?)),
    };
    node.all_of = compile_list(map, "allOf", location)?;
    node.any_of = compile_list(map, "anyOf", location)?;
    node.one_of = compile_list(map, "oneOf", location)?;
    node.not = match map.get("not") {
        None => None,
        Some(schema) => Some(Box::new(compile_node(schema, &format!("{location}/not"))?)),
    };
    Ok(())
}

fn compile_list(
    map: &Map<String, Value>,
    keyword: &str,
    location: &str,
) -> Result<Vec<Node>, SchemaError> {
    let Some(value) = map.get(keyword) else {
        return Ok(Vec::new());
    };
    let Some(schemas) = value.as_array() else {
        return Err(malformed(location, keyword, "an array of schemas"));
    };
    schemas
        .iter()
        .enumerate()
        .map(|(i, schema)| compile_node(schema, &format!("{location}/{keyword}/{i}")))
        .collect()
}

/// Typed access to the keywords of one schema node.
struct Reader<'a> {
    map: &'a Map<String, Value>,
    location: &'a str,
}

impl Reader<'_> {
    fn err(&self, keyword: &str, expected: &'static str) -> SchemaError {
        malformed(self.location, keyword, expected)
    }

    fn bool(&self, keyword: &str) -> Result<bool, SchemaError> {
        match self.map.get(keyword) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(self.err(keyword, "a boolean")),
        }
    }

    fn number(&self, keyword: &str) -> Result<Option<f64>, SchemaError> {
        match self.map.get(keyword) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => n
                .as_f64()
                .map(Some)
                .ok_or_else(|| self.err(keyword, "a number")),
            Some(_) => Err(self.err(keyword, "a number")),
        }
    }

    fn count(&self, keyword: &str) -> Result<Option<u64>, SchemaError> {
        match self.map.get(keyword) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => n
                .as_u64()
                .map(Some)
                .ok_or_else(|| self.err(keyword, "a non-negative integer")),
            Some(_) => Err(self.err(keyword, "a non-negative integer")),
        }
    }

    fn string(&self, keyword: &str) -> Result<Option<&str>, SchemaError> {
        match self.map.get(keyword) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.err(keyword, "a string")),
        }
    }

    fn array(&self, keyword: &str) -> Result<Option<&Vec<Value>>, SchemaError> {
        match self.map.get(keyword) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) => Ok(Some(items)),
            Some(_) => Err(self.err(keyword, "an array")),
        }
    }

    fn strings(&self, keyword: &str) -> Result<Vec<String>, SchemaError> {
        let Some(items) = self.array(keyword)? else {
            return Ok(Vec::new());
        };
        items
            .iter()
            .map(|item| {
                item.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| self.err(keyword, "an array of strings"))
            })
            .collect()
    }

    fn declared_type(&self) -> Result<Option<JsonType>, SchemaError> {
        match self.string("type")? {
            None | Some("") => Ok(None),
            Some(name) => JsonType::parse(name)
                .map(Some)
                .ok_or_else(|| unsupported(self.location, &format!("unknown type {name:?}"))),
        }
    }

    fn list_type(&self) -> Result<Option<ListType>, SchemaError> {
        Ok(match self.string("x-kubernetes-list-type")? {
            None => None,
            Some("atomic") => Some(ListType::Atomic),
            Some("set") => Some(ListType::Set),
            Some("map") => Some(ListType::Map),
            Some(other) => {
                return Err(unsupported(
                    self.location,
                    &format!("unknown x-kubernetes-list-type {other:?}"),
                ));
            }
        })
    }
}

fn malformed(location: &str, keyword: &str, expected: &'static str) -> SchemaError {
    SchemaError::Malformed {
        location: display_location(location),
        keyword: keyword.to_string(),
        expected,
    }
}

fn unsupported(location: &str, message: &str) -> SchemaError {
    SchemaError::Unsupported {
        location: display_location(location),
        message: message.to_string(),
    }
}

fn display_location(location: &str) -> String {
    if location.is_empty() {
        "/".to_string()
    } else {
        location.to_string()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn malformed_keywords_are_reported_with_their_location() {
        let cases = [
            (
                json!({"properties": {"a": {"minLength": "3"}}}),
                "/properties/a: minLength must be a non-negative integer",
            ),
            (
                json!({"properties": {"a": {"minLength": -1}}}),
                "/properties/a: minLength must be a non-negative integer",
            ),
            (json!({"required": "a"}), "/: required must be an array"),
            (json!({"type": "float"}), "/: unknown type \"float\""),
            (
                json!({"type": "array", "items": [{"type": "string"}]}),
                "/: items must be a schema, not an array",
            ),
            (
                json!({"multipleOf": 0}),
                "/: multipleOf must be greater than 0",
            ),
            (
                json!({"type": "array", "x-kubernetes-list-type": "bag"}),
                "/: unknown x-kubernetes-list-type \"bag\"",
            ),
            (json!("string"), "/: schema must be an object"),
        ];
        for (schema, expected) in cases {
            let err = compile_node(&schema, "").expect_err("schema should be rejected");
            assert_eq!(err.to_string(), expected, "schema {schema}");
        }
    }

    #[test]
    fn invalid_pattern_is_a_compile_error() {
        let schema = json!({"properties": {"spec": {"properties": {"re": {"type": "string", "pattern": "a(b"}}}}});
        match compile_node(&schema, "") {
            Err(SchemaError::InvalidPattern {
                location, pattern, ..
            }) => {
                assert_eq!(location, "/properties/spec/properties/re");
                assert_eq!(pattern, "a(b");
            }
            other => panic!("expected InvalidPattern, got {other:?}"),
        }
    }

    #[test]
    fn unsupported_formats_are_dropped_like_the_api_server_does() {
        let cases = [
            (
                json!({"type": "string", "format": "date-time"}),
                Some("date-time"),
            ),
            (json!({"type": "string", "format": "my-format"}), None),
            (json!({"type": "integer", "format": "int32"}), Some("int32")),
            (json!({"type": "integer", "format": "date"}), None),
            (json!({"type": "number", "format": "float"}), Some("float")),
            (json!({"type": "boolean", "format": "byte"}), None),
            (json!({"format": "uuid"}), Some("uuid")),
        ];
        for (schema, kept) in cases {
            let node = compile_node(&schema, "").expect("compiles");
            assert_eq!(node.format.as_deref(), kept, "schema {schema}");
        }
    }
}
