//! Columns of custom resources: Name, then the CRD version's `additionalPrinterColumns`.

use serde_json::Value;

use super::column::{CellSource, Column, ColumnType, TableError};
use super::common::{AGE_DESCRIPTION, name_column};
use crate::apiserver::jsonpath::JsonPath;

/// Columns for a custom resource: Name, then the CRD version's `additionalPrinterColumns`, or Age when
/// it declares none.
pub(crate) fn crd_columns(additional_printer_columns: &[Value]) -> Result<Vec<Column>, TableError> {
    let mut columns = vec![name_column()];
    if additional_printer_columns.is_empty() {
        columns.push(
            path_column("Age", ColumnType::Date, ".metadata.creationTimestamp")?
                .described(AGE_DESCRIPTION),
        );
        return Ok(columns);
    }
    for definition in additional_printer_columns {
        columns.push(printer_column(definition)?);
    }
    Ok(columns)
}

impl Column {
    fn described(mut self, description: &str) -> Self {
        self.description = description.to_owned();
        self
    }
}

fn path_column(name: &str, column_type: ColumnType, json_path: &str) -> Result<Column, TableError> {
    let path = JsonPath::parse(json_path).map_err(|source| TableError::InvalidJsonPath {
        json_path: json_path.to_owned(),
        source,
    })?;
    Ok(Column {
        name: name.to_owned(),
        column_type,
        format: String::new(),
        description: format!("The value at {json_path}"),
        priority: 0,
        cell: CellSource::Path(path),
    })
}

/// One `additionalPrinterColumns` entry: `{name, type, jsonPath, format?, description?, priority?}`.
fn printer_column(definition: &Value) -> Result<Column, TableError> {
    let member = |key: &str| definition.get(key).and_then(Value::as_str);
    let name = member("name")
        .ok_or_else(|| TableError::InvalidColumn(format!("no name in {definition}")))?;
    let declared_type = member("type").unwrap_or_default();
    let column_type = ColumnType::parse(declared_type).ok_or_else(|| {
        TableError::InvalidColumn(format!(
            "column {name:?} has unsupported type {declared_type:?}"
        ))
    })?;
    let json_path = member("jsonPath")
        .or_else(|| member("JSONPath"))
        .ok_or_else(|| TableError::InvalidColumn(format!("column {name:?} has no jsonPath")))?;
    let mut column = path_column(name, column_type, json_path)?;
    if let Some(description) = member("description").filter(|d| !d.is_empty()) {
        column.description = description.to_owned();
    }
    column.format = member("format").unwrap_or_default().to_owned();
    column.priority = definition
        .get("priority")
        .and_then(Value::as_i64)
        .and_then(|p| i32::try_from(p).ok())
        .unwrap_or(0);
    Ok(column)
}
