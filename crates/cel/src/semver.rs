//! Kubernetes' semver library: `semver("1.2.3")`, `isSemver(s)` (each with an optional `normalize` flag that
//! accepts a `v` prefix, missing minor or patch and leading zeros), and `major()`, `minor()`, `patch()`; the
//! comparisons (`isLessThan`, `isGreaterThan`, `compareTo`) are shared with quantities. DRA publishes `version`
//! device attributes as such values.

use std::cmp::Ordering;
use std::sync::Arc;

use cel::common::functions::Function;
use cel::common::value::CowVal;
use cel::objects::Opaque;
use cel::{ExecutionError, Value};

use crate::values::{self, Args};

/// The global functions that take a string.
pub(crate) const GLOBALS: &[(&str, Function)] = &[("semver", semver), ("isSemver", is_semver)];

/// The global functions that take a string and the `normalize` flag.
pub(crate) const GLOBALS_WITH_FLAG: &[(&str, Function)] = &[
    ("semver", semver_normalized),
    ("isSemver", is_semver_normalized),
];

/// A semantic version; build metadata does not take part in comparisons.
#[derive(Debug, Clone)]
pub(crate) struct Version {
    major: u64,
    minor: u64,
    patch: u64,
    pre: Vec<String>,
}

impl PartialEq for Version {
    fn eq(&self, other: &Version) -> bool {
        self.precedence(other) == Ordering::Equal
    }
}

impl Eq for Version {}

impl Opaque for Version {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Semver"
    }
}

impl Version {
    /// Parses `MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]`; with `normalize`, also `v1`, `1.2` and `01.002.3`.
    pub(crate) fn parse(text: &str, normalize: bool) -> Result<Version, String> {
        let mut rest = text;
        if normalize {
            rest = rest.strip_prefix('v').unwrap_or(rest);
        }
        let (rest, _build) = rest.split_once('+').unwrap_or((rest, ""));
        let (core, pre) = match rest.split_once('-') {
            Some((core, pre)) => (core, Some(pre)),
            None => (rest, None),
        };
        let mut parts: Vec<&str> = core.split('.').collect();
        if normalize {
            while parts.len() < 3 {
                parts.push("0");
            }
        }
        if parts.len() != 3 {
            return Err("No Major.Minor.Patch elements found".to_string());
        }
        let number = |part: &str, name: &str| -> Result<u64, String> {
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!(
                    "Invalid character(s) found in {name} number {part:?}"
                ));
            }
            if !normalize && part.len() > 1 && part.starts_with('0') {
                return Err(format!(
                    "{name} number must not contain leading zeroes {part:?}"
                ));
            }
            part.parse()
                .map_err(|_| format!("{name} number {part:?} is too large"))
        };
        let pre = match pre {
            None => Vec::new(),
            Some(pre) => {
                let ids: Vec<String> = pre.split('.').map(str::to_string).collect();
                if ids.iter().any(|id| {
                    id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                }) {
                    return Err(format!("Invalid prerelease {pre:?}"));
                }
                ids
            }
        };
        Ok(Version {
            major: number(parts[0], "Major")?,
            minor: number(parts[1], "Minor")?,
            patch: number(parts[2], "Patch")?,
            pre,
        })
    }

    /// Semantic-versioning precedence: numbers, then a release above its pre-releases, then identifiers.
    pub(crate) fn precedence(&self, other: &Version) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(other.major, other.minor, other.patch))
            .then_with(|| match (self.pre.is_empty(), other.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => {
                    for (a, b) in self.pre.iter().zip(&other.pre) {
                        let order = match (a.parse::<u64>(), b.parse::<u64>()) {
                            (Ok(x), Ok(y)) => x.cmp(&y),
                            (Ok(_), Err(_)) => Ordering::Less,
                            (Err(_), Ok(_)) => Ordering::Greater,
                            (Err(_), Err(_)) => a.cmp(b),
                        };
                        if order != Ordering::Equal {
                            return order;
                        }
                    }
                    self.pre.len().cmp(&other.pre.len())
                }
            })
    }
}

/// The value if it is a version.
pub(crate) fn as_version(value: &Value) -> Option<Version> {
    match value {
        Value::Opaque(o) => o.downcast_ref::<Version>().cloned(),
        _ => None,
    }
}

/// A version as a CEL value.
pub(crate) fn value_of(text: &str) -> Result<Value, String> {
    Version::parse(text, false).map(|v| Value::Opaque(Arc::new(v)))
}

fn flag(args: &Args<'_, '_>) -> Result<bool, ExecutionError> {
    match values::arg(args, 1)? {
        Value::Bool(b) => Ok(b),
        other => Err(values::unexpected(&other, "bool")),
    }
}

fn parse_arg(
    args: &Args<'_, '_>,
    normalize: bool,
) -> Result<Result<Version, String>, ExecutionError> {
    let text = values::string_arg(args, 0)?;
    Ok(Version::parse(&text, normalize))
}

fn make<'b, 'v>(args: &Args<'b, 'v>, normalize: bool) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let version =
        parse_arg(args, normalize)?.map_err(|e| ExecutionError::function_error("semver", e))?;
    values::out(Value::Opaque(Arc::new(version)))
}

fn semver<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    make(&args, false)
}

fn semver_normalized<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let normalize = flag(&args)?;
    make(&args, normalize)
}

fn is_semver<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    values::out(Value::Bool(parse_arg(&args, false)?.is_ok()))
}

fn is_semver_normalized<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let normalize = flag(&args)?;
    values::out(Value::Bool(parse_arg(&args, normalize)?.is_ok()))
}

fn part<'b, 'v>(
    args: Args<'b, 'v>,
    function: &str,
    pick: fn(&Version) -> u64,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let this = values::arg(&args, 0)?;
    let version = as_version(&this).ok_or_else(|| {
        ExecutionError::no_such_member_overload(
            function,
            vec![values::type_name(&this).to_string()],
        )
    })?;
    values::out(Value::Int(
        i64::try_from(pick(&version)).unwrap_or(i64::MAX),
    ))
}

/// `major()`.
pub(crate) fn major<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    part(args, "major", |v| v.major)
}

/// `minor()`.
pub(crate) fn minor<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    part(args, "minor", |v| v.minor)
}

/// `patch()`.
pub(crate) fn patch<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    part(args, "patch", |v| v.patch)
}
