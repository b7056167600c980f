//! Kubernetes' list library: `isSorted()`, `sum()`, `min()`, `max()`, `indexOf(x)`, `lastIndexOf(x)`. Each
//! charges the list's length to the cost meter, as kube-apiserver charges them.

use std::cmp::Ordering;

use cel::common::functions::Function;
use cel::common::value::CowVal;
use cel::{ExecutionError, Value};

use crate::cost;
use crate::values::{self, Args};

/// The functions without arguments, with their overload ids.
pub(crate) const MEMBERS: &[(&str, &str, Function)] = &[
    ("isSorted", "list.isSorted()", is_sorted),
    ("sum", "list.sum()", sum),
    ("min", "list.min()", min),
    ("max", "list.max()", max),
];

/// The functions that take one argument, with their overload ids.
pub(crate) const MEMBERS_WITH_ARG: &[(&str, &str, Function)] = &[
    ("indexOf", "list.indexOf(dyn)", index_of),
    ("lastIndexOf", "list.lastIndexOf(dyn)", last_index_of),
];

fn receiver(args: &Args<'_, '_>) -> Result<std::sync::Arc<Vec<Value>>, ExecutionError> {
    let items = values::list_arg(args, 0)?;
    cost::charge(items.len() as u64)?;
    Ok(items)
}

fn is_sorted<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let items = receiver(&args)?;
    for pair in items.windows(2) {
        if values::compare(&pair[0], &pair[1])? == Ordering::Greater {
            return values::out(Value::Bool(false));
        }
    }
    values::out(Value::Bool(true))
}

fn sum<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let items = receiver(&args)?;
    let mut total = match items.first() {
        None | Some(Value::Int(_)) => Value::Int(0),
        Some(Value::UInt(_)) => Value::UInt(0),
        Some(Value::Float(_)) => Value::Float(0.0),
        Some(other) => return Err(values::unexpected(other, "list of numbers")),
    };
    for item in items.iter() {
        total = match (&total, item) {
            (Value::Int(a), Value::Int(b)) => {
                Value::Int(a.checked_add(*b).ok_or_else(|| overflow(item))?)
            }
            (Value::UInt(a), Value::UInt(b)) => {
                Value::UInt(a.checked_add(*b).ok_or_else(|| overflow(item))?)
            }
            (Value::Float(a), Value::Float(b)) => Value::Float(a + b),
            _ => return Err(values::unexpected(item, values::type_name(&total))),
        };
    }
    values::out(total)
}

fn overflow(item: &Value) -> ExecutionError {
    ExecutionError::Overflow("sum", item.clone(), item.clone())
}

fn extreme(args: &Args<'_, '_>, function: &str, keep: Ordering) -> Result<Value, ExecutionError> {
    let items = receiver(args)?;
    let mut iter = items.iter();
    let Some(mut best) = iter.next() else {
        return Err(ExecutionError::function_error(
            function,
            format!("{function} called on empty list"),
        ));
    };
    for item in iter {
        if values::compare(item, best)? == keep {
            best = item;
        }
    }
    Ok(best.clone())
}

fn min<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    values::out(extreme(&args, "min", Ordering::Less)?)
}

fn max<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    values::out(extreme(&args, "max", Ordering::Greater)?)
}

fn position(args: &Args<'_, '_>, last: bool) -> Result<Value, ExecutionError> {
    let items = receiver(args)?;
    let wanted = values::arg(args, 1)?;
    let found = if last {
        items.iter().rposition(|item| *item == wanted)
    } else {
        items.iter().position(|item| *item == wanted)
    };
    Ok(Value::Int(
        found.map_or(-1, |i| i64::try_from(i).unwrap_or(i64::MAX)),
    ))
}

fn index_of<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    values::out(position(&args, false)?)
}

fn last_index_of<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    values::out(position(&args, true)?)
}
