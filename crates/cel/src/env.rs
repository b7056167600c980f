//! The one CEL environment every expression compiles and runs in: cel-go's standard library and macros, the
//! strings and lists extensions, Kubernetes' list, quantity and semver libraries, and the cost meter's hook.

use std::sync::{Arc, LazyLock};

use cel::common::types::{DYN_TYPE, LIST_TYPE, STRING_TYPE};
use cel::{DeclarationError, Env, extensions};

use crate::cost;
use crate::lists;
use crate::quantity;
use crate::semver;

static ENV: LazyLock<Result<Arc<Env>, String>> =
    LazyLock::new(|| build().map(Arc::new).map_err(|e| e.to_string()));

/// The shared environment, or why it could not be built.
pub(crate) fn env() -> Result<Arc<Env>, String> {
    ENV.clone()
}

fn build() -> Result<Env, DeclarationError> {
    let mut env = Env::stdlib();
    env.add_extension(extensions::strings)?;
    env.add_extension(extensions::lists)?;
    env.add_overload(
        cost::COST_FUNCTION,
        "kmm_cost",
        vec![DYN_TYPE, DYN_TYPE],
        cost::cost_function,
    )?;
    for (name, id, function) in lists::MEMBERS {
        env.add_member_overload(name, id, LIST_TYPE, vec![], *function)?;
    }
    for (name, id, function) in lists::MEMBERS_WITH_ARG {
        env.add_member_overload(name, id, LIST_TYPE, vec![DYN_TYPE], *function)?;
    }
    for (name, function) in quantity::GLOBALS.iter().chain(semver::GLOBALS) {
        env.add_overload(name, name, vec![STRING_TYPE], *function)?;
    }
    for (name, function) in semver::GLOBALS_WITH_FLAG {
        env.add_overload(
            name,
            &format!("{name}_normalize"),
            vec![STRING_TYPE, DYN_TYPE],
            *function,
        )?;
    }
    // Quantities and versions are opaque values: one overload per method, which takes either.
    for (name, function) in quantity::MEMBERS {
        env.add_member_overload(
            name,
            &format!("opaque.{name}()"),
            DYN_TYPE,
            vec![],
            *function,
        )?;
    }
    for (name, function) in quantity::MEMBERS_WITH_ARG {
        env.add_member_overload(
            name,
            &format!("opaque.{name}(dyn)"),
            DYN_TYPE,
            vec![DYN_TYPE],
            *function,
        )?;
    }
    Ok(env)
}

/// Every function name an expression may call, beside operators: an unknown name is a compile error, as
/// kube-apiserver's type check makes it.
pub(crate) const FUNCTIONS: &[&str] = &[
    // The standard library.
    "size",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "type",
    "dyn",
    "matches",
    "contains",
    "startsWith",
    "endsWith",
    "hasValue",
    "value",
    "or",
    "orValue",
    "optional.of",
    "optional.none",
    "optional.ofNonZeroValue",
    // The strings extension.
    "charAt",
    "indexOf",
    "lastIndexOf",
    "join",
    "lowerAscii",
    "upperAscii",
    "trim",
    "replace",
    "split",
    "substring",
    "format",
    "strings.quote",
    "reverse",
    // The lists extension.
    "slice",
    "flatten",
    "distinct",
    "sort",
    "lists.range",
    "@sortByAssociatedKeys",
    // Kubernetes' lists library.
    "isSorted",
    "sum",
    "min",
    "max",
    // Kubernetes' quantity library.
    "quantity",
    "isQuantity",
    "isLessThan",
    "isGreaterThan",
    "compareTo",
    "asInteger",
    "asApproximateFloat",
    "isInteger",
    "sign",
    "add",
    "sub",
    // Kubernetes' semver library.
    "semver",
    "isSemver",
    "major",
    "minor",
    "patch",
];
