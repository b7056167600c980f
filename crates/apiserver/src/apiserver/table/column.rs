//! What a table column is: its definition for clients, and how its cell is computed from an object.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::read::age;
use crate::apiserver::jsonpath::{JsonPath, JsonPathError};

/// Why a table could not be described.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TableError {
    /// A printer column's `jsonPath` is not a path the server understands.
    #[error("unrecognized column definition {json_path:?}: {source}")]
    InvalidJsonPath {
        json_path: String,
        #[source]
        source: JsonPathError,
    },
    /// A printer column lacks a required member or has one of the wrong shape.
    #[error("invalid printer column: {0}")]
    InvalidColumn(String),
    /// `includeObject` named something other than `None`, `Metadata` or `Object`.
    #[error(
        "includeObject: Unsupported value: {0:?}: supported values: \"None\", \"Metadata\", \"Object\""
    )]
    UnsupportedIncludeObject(String),
}

/// The type a column declares, which tells clients how to sort and align it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    String,
    Integer,
    Number,
    Boolean,
    /// A timestamp, rendered in cells as a human age (`5m`).
    Date,
}

impl ColumnType {
    /// The name used in `columnDefinitions` and in CRD printer columns.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Integer => "integer",
            Self::Number => "number",
            Self::Boolean => "boolean",
            Self::Date => "date",
        }
    }

    pub(super) fn parse(s: &str) -> Option<Self> {
        [
            Self::String,
            Self::Integer,
            Self::Number,
            Self::Boolean,
            Self::Date,
        ]
        .into_iter()
        .find(|t| t.as_str() == s)
    }
}

/// One column of a table: what clients are told about it, and how its cell is computed for an object.
#[derive(Debug, Clone)]
pub struct Column {
    /// The header (`kubectl` prints it upper-cased).
    pub name: String,
    pub column_type: ColumnType,
    /// A rendering hint; `name` marks the column holding the object's name.
    pub format: String,
    pub description: String,
    /// 0 for columns always shown, higher for those shown only with `-o wide`.
    pub priority: i32,
    pub(super) cell: CellSource,
}

/// How a column's cell is computed.
#[derive(Debug, Clone)]
pub(super) enum CellSource {
    /// The first value a JSONPath reaches, converted according to the column type (printer columns).
    Path(JsonPath),
    /// A printer that reads the whole object (built-in resources).
    Computed(fn(&Value, Timestamp) -> Value),
}

impl Column {
    pub(super) fn computed(
        name: &str,
        column_type: ColumnType,
        priority: i32,
        description: &str,
        printer: fn(&Value, Timestamp) -> Value,
    ) -> Self {
        Self {
            name: name.to_owned(),
            column_type,
            format: String::new(),
            description: description.to_owned(),
            priority,
            cell: CellSource::Computed(printer),
        }
    }

    /// The entry of `columnDefinitions` describing this column.
    pub fn definition(&self) -> Value {
        json!({
            "name": self.name,
            "type": self.column_type.as_str(),
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        })
    }

    /// This column's cell for `object`; `null` when the object has no value for it.
    pub fn cell(&self, object: &Value, now: Timestamp) -> Value {
        match &self.cell {
            CellSource::Path(path) => path
                .first(object)
                .map_or(Value::Null, |v| typed_cell(self.column_type, v, now)),
            CellSource::Computed(printer) => printer(object, now),
        }
    }
}

/// Converts a printer-column value to the cell its column type calls for, or `null` when it does not fit.
fn typed_cell(column_type: ColumnType, value: &Value, now: Timestamp) -> Value {
    match (column_type, value) {
        (_, Value::Null) => Value::Null,
        (ColumnType::String, Value::String(_)) => value.clone(),
        (ColumnType::String, Value::Number(n)) => Value::String(number_text(n)),
        (ColumnType::String, other) => Value::String(other.to_string()),
        (ColumnType::Integer, Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .map_or(Value::Null, Value::from),
        (ColumnType::Number, Value::Number(n)) => n.as_f64().map_or(Value::Null, Value::from),
        (ColumnType::Boolean, Value::Bool(_)) => value.clone(),
        (ColumnType::Date, Value::String(s)) => Value::String(match s.parse::<Timestamp>() {
            Ok(timestamp) => age(Some(timestamp), now),
            Err(_) => "<invalid>".to_owned(),
        }),
        _ => Value::Null,
    }
}

/// Numbers as the server prints them in text: whole numbers without a fractional part.
fn number_text(n: &serde_json::Number) -> String {
    match n.as_f64() {
        Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
        _ => n.to_string(),
    }
}

/// What each row carries besides its cells (the `includeObject` table option).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum IncludeObject {
    /// No object.
    None,
    /// The object's metadata as a `PartialObjectMetadata`, which is what `kubectl get` needs.
    #[default]
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// Reads the query parameter; an empty value means the default, `Metadata`.
    pub(crate) fn parse(s: &str) -> Result<Self, TableError> {
        match s {
            "None" => Ok(Self::None),
            "" | "Metadata" => Ok(Self::Metadata),
            "Object" => Ok(Self::Object),
            other => Err(TableError::UnsupportedIncludeObject(other.to_owned())),
        }
    }

    pub(super) fn row_object(self, object: &Value) -> Value {
        match self {
            Self::None => Value::Null,
            Self::Metadata => json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
            }),
            Self::Object => object.clone(),
        }
    }
}
