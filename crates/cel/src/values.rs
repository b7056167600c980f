//! The glue between cel-rust's overload signature (values behind `dyn Val`) and the library functions here,
//! which work on plain [`Value`]s.

use std::cmp::Ordering;
use std::sync::Arc;

use cel::common::value::{CowVal, Val};
use cel::{ExecutionError, Value};

/// The library functions' shape: the receiver first, then the arguments.
pub(crate) type Args<'b, 'v> = Vec<CowVal<'b, 'v>>;

/// Argument `i` as a plain value.
pub(crate) fn arg(args: &Args<'_, '_>, i: usize) -> Result<Value, ExecutionError> {
    let val = args
        .get(i)
        .ok_or_else(|| ExecutionError::invalid_argument_count(i + 1, args.len()))?;
    Value::try_from(val.as_ref())
}

/// Argument `i` as a list.
pub(crate) fn list_arg(args: &Args<'_, '_>, i: usize) -> Result<Arc<Vec<Value>>, ExecutionError> {
    match arg(args, i)? {
        Value::List(items) => Ok(items),
        other => Err(unexpected(&other, "list")),
    }
}

/// Argument `i` as a string.
pub(crate) fn string_arg(args: &Args<'_, '_>, i: usize) -> Result<Arc<String>, ExecutionError> {
    match arg(args, i)? {
        Value::String(s) => Ok(s),
        other => Err(unexpected(&other, "string")),
    }
}

/// A value handed back to the interpreter.
pub(crate) fn out<'b, 'v>(value: Value) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let boxed: Box<dyn Val> = Box::<dyn Val>::try_from(value)?;
    Ok(CowVal::Owned(boxed))
}

/// The CEL type name of a value, for error messages.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::List(_) => "list",
        Value::Map(_) => "map",
        Value::Function(..) => "function",
        Value::Int(_) => "int",
        Value::UInt(_) => "uint",
        Value::Float(_) => "double",
        Value::String(_) => "string",
        Value::Bytes(_) => "bytes",
        Value::Bool(_) => "bool",
        Value::Opaque(_) => "opaque",
        Value::Struct(_) => "struct",
        Value::Null => "null_type",
    }
}

/// A wrong argument type.
pub(crate) fn unexpected(value: &Value, want: &str) -> ExecutionError {
    ExecutionError::UnexpectedType {
        got: type_name(value).to_string(),
        want: want.to_string(),
    }
}

/// How two values order, for the list functions: numbers across types, strings, booleans.
pub(crate) fn compare(a: &Value, b: &Value) -> Result<Ordering, ExecutionError> {
    a.partial_cmp(b)
        .ok_or_else(|| ExecutionError::ValuesNotComparable(a.clone(), b.clone()))
}
