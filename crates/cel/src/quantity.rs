//! Kubernetes' quantity library: `quantity("1.5Gi")`, `isQuantity(s)` and the methods on a quantity
//! (`isLessThan`, `isGreaterThan`, `compareTo`, `asInteger`, `asApproximateFloat`, `isInteger`, `sign`, `add`,
//! `sub`), beside the semver methods of the same names, which share their overloads.

use std::cmp::Ordering;
use std::sync::Arc;

use cel::common::functions::Function;
use cel::common::value::CowVal;
use cel::objects::Opaque;
use cel::{ExecutionError, Value};

use crate::semver::{self, Version};
use crate::values::{self, Args};

/// The global functions that take a string.
pub(crate) const GLOBALS: &[(&str, Function)] =
    &[("quantity", quantity), ("isQuantity", is_quantity)];

/// The methods without arguments (on a quantity or a version).
pub(crate) const MEMBERS: &[(&str, Function)] = &[
    ("asInteger", as_integer),
    ("asApproximateFloat", as_approximate_float),
    ("isInteger", is_integer),
    ("sign", sign),
    ("major", semver::major),
    ("minor", semver::minor),
    ("patch", semver::patch),
];

/// The methods with one argument (on a quantity or a version).
pub(crate) const MEMBERS_WITH_ARG: &[(&str, Function)] = &[
    ("isLessThan", is_less_than),
    ("isGreaterThan", is_greater_than),
    ("compareTo", compare_to),
    ("add", add),
    ("sub", sub),
];

/// An exact quantity: `mantissa × 10^scale`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Quantity {
    mantissa: i128,
    scale: i32,
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Quantity) -> bool {
        self.cmp_to(other) == Ordering::Equal
    }
}

impl Eq for Quantity {}

impl Opaque for Quantity {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Quantity"
    }
}

impl Quantity {
    /// Parses Kubernetes' quantity syntax: a signed decimal number, then a binary (`Ki`...`Ei`), decimal
    /// (`n`, `u`, `m`, `k`, `M`...`E`) or exponent (`e3`) suffix.
    pub(crate) fn parse(text: &str) -> Result<Quantity, String> {
        let invalid = || {
            format!(
                "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {text:?}"
            )
        };
        let (negative, rest) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        let number_end = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(number_end);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
            return Err(invalid());
        }
        let digits = format!("{whole}{fraction}");
        let digits = digits.trim_start_matches('0');
        if digits.len() > 36 {
            return Err(format!("quantity {text:?} is too large"));
        }
        let mut mantissa: i128 = if digits.is_empty() {
            0
        } else {
            digits.parse().map_err(|_| invalid())?
        };
        let mut scale = -i32::try_from(fraction.len()).map_err(|_| invalid())?;
        let binary = |power: u32| 1024_i128.checked_pow(power);
        let multiplier = match suffix {
            "" => None,
            "Ki" => binary(1),
            "Mi" => binary(2),
            "Gi" => binary(3),
            "Ti" => binary(4),
            "Pi" => binary(5),
            "Ei" => binary(6),
            _ => {
                scale += match suffix {
                    "n" => -9,
                    "u" => -6,
                    "m" => -3,
                    "k" => 3,
                    "M" => 6,
                    "G" => 9,
                    "T" => 12,
                    "P" => 15,
                    "E" => 18,
                    _ => {
                        let exponent = suffix.strip_prefix(['e', 'E']).ok_or_else(invalid)?;
                        let exponent: i32 = exponent.parse().map_err(|_| invalid())?;
                        if exponent.abs() > 100 {
                            return Err(format!("quantity {text:?} is too large"));
                        }
                        exponent
                    }
                };
                None
            }
        };
        if let Some(multiplier) = multiplier {
            mantissa = mantissa
                .checked_mul(multiplier)
                .ok_or_else(|| format!("quantity {text:?} is too large"))?;
        }
        if negative {
            mantissa = -mantissa;
        }
        Ok(Quantity { mantissa, scale })
    }

    /// The mantissa at a smaller scale, when it fits.
    fn at_scale(self, scale: i32) -> Option<i128> {
        let shift = u32::try_from(self.scale - scale).ok()?;
        self.mantissa.checked_mul(10_i128.checked_pow(shift)?)
    }

    fn as_f64(self) -> f64 {
        self.mantissa as f64 * 10_f64.powi(self.scale)
    }

    pub(crate) fn cmp_to(&self, other: &Quantity) -> Ordering {
        let scale = self.scale.min(other.scale);
        match (self.at_scale(scale), other.at_scale(scale)) {
            (Some(a), Some(b)) => a.cmp(&b),
            _ => self
                .as_f64()
                .partial_cmp(&other.as_f64())
                .unwrap_or(Ordering::Equal),
        }
    }

    fn integer(self) -> Option<i64> {
        if self.scale >= 0 {
            return i64::try_from(self.at_scale(0)?).ok();
        }
        let divisor = 10_i128.checked_pow(u32::try_from(-self.scale).ok()?)?;
        if self.mantissa % divisor != 0 {
            return None;
        }
        i64::try_from(self.mantissa / divisor).ok()
    }

    fn combine(self, other: Quantity, negate: bool) -> Option<Quantity> {
        let scale = self.scale.min(other.scale);
        let b = other.at_scale(scale)?;
        let b = if negate { b.checked_neg()? } else { b };
        Some(Quantity {
            mantissa: self.at_scale(scale)?.checked_add(b)?,
            scale,
        })
    }
}

fn quantity_value(q: Quantity) -> Value {
    Value::Opaque(Arc::new(q))
}

/// Argument `i` as a quantity, if it is one.
fn as_quantity(value: &Value) -> Option<Quantity> {
    match value {
        Value::Opaque(o) => o.downcast_ref::<Quantity>().copied(),
        _ => None,
    }
}

fn no_overload(function: &str, args: &Args<'_, '_>) -> ExecutionError {
    let types = (0..args.len())
        .map(|i| {
            values::arg(args, i)
                .map_or("unknown", |v| describe(&v))
                .to_string()
        })
        .collect();
    ExecutionError::no_such_member_overload(function, types)
}

fn describe(value: &Value) -> &'static str {
    match value {
        Value::Opaque(o) if o.downcast_ref::<Quantity>().is_some() => "kubernetes.Quantity",
        Value::Opaque(o) if o.downcast_ref::<Version>().is_some() => "kubernetes.Semver",
        other => values::type_name(other),
    }
}

/// `quantity(string)`.
fn quantity<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let text = values::string_arg(&args, 0)?;
    let q = Quantity::parse(&text).map_err(|e| ExecutionError::function_error("quantity", e))?;
    values::out(quantity_value(q))
}

/// `isQuantity(string)`.
fn is_quantity<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let text = values::string_arg(&args, 0)?;
    values::out(Value::Bool(Quantity::parse(&text).is_ok()))
}

/// How the receiver compares with the argument: two quantities (or a quantity and an integer), or two versions.
fn ordering(function: &str, args: &Args<'_, '_>) -> Result<Ordering, ExecutionError> {
    let this = values::arg(args, 0)?;
    let other = values::arg(args, 1)?;
    if let Some(a) = as_quantity(&this) {
        let b = match &other {
            Value::Int(i) => Some(Quantity {
                mantissa: i128::from(*i),
                scale: 0,
            }),
            other => as_quantity(other),
        };
        if let Some(b) = b {
            return Ok(a.cmp_to(&b));
        }
    }
    if let (Some(a), Some(b)) = (semver::as_version(&this), semver::as_version(&other)) {
        return Ok(a.precedence(&b));
    }
    Err(no_overload(function, args))
}

fn is_less_than<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    values::out(Value::Bool(
        ordering("isLessThan", &args)? == Ordering::Less,
    ))
}

fn is_greater_than<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    values::out(Value::Bool(
        ordering("isGreaterThan", &args)? == Ordering::Greater,
    ))
}

fn compare_to<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let n = match ordering("compareTo", &args)? {
        Ordering::Less => -1,
        Ordering::Equal => 0,
        Ordering::Greater => 1,
    };
    values::out(Value::Int(n))
}

fn receiver(function: &str, args: &Args<'_, '_>) -> Result<Quantity, ExecutionError> {
    as_quantity(&values::arg(args, 0)?).ok_or_else(|| no_overload(function, args))
}

fn as_integer<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let q = receiver("asInteger", &args)?;
    let i = q.integer().ok_or_else(|| {
        ExecutionError::function_error("asInteger", "cannot convert value to integer")
    })?;
    values::out(Value::Int(i))
}

fn as_approximate_float<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    values::out(Value::Float(
        receiver("asApproximateFloat", &args)?.as_f64(),
    ))
}

fn is_integer<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    values::out(Value::Bool(
        receiver("isInteger", &args)?.integer().is_some(),
    ))
}

fn sign<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    values::out(Value::Int(receiver("sign", &args)?.mantissa.signum() as i64))
}

fn arithmetic<'b, 'v>(
    function: &str,
    args: Args<'b, 'v>,
    negate: bool,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let a = receiver(function, &args)?;
    let b = match values::arg(&args, 1)? {
        Value::Int(i) => Quantity {
            mantissa: i128::from(i),
            scale: 0,
        },
        other => as_quantity(&other).ok_or_else(|| no_overload(function, &args))?,
    };
    let sum = a
        .combine(b, negate)
        .ok_or_else(|| ExecutionError::function_error(function, "quantity overflow"))?;
    values::out(quantity_value(sum))
}

fn add<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    arithmetic("add", args, false)
}

fn sub<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    arithmetic("sub", args, true)
}

/// The quantity a DRA capacity publishes, as a CEL value.
pub(crate) fn value_of(text: &str) -> Result<Value, String> {
    Quantity::parse(text).map(quantity_value)
}
