//! The Common Expression Language (CEL) as Kubernetes evaluates it, once for every part of the project that uses
//! it: the API server's CRD `x-kubernetes-validations` and ValidatingAdmissionPolicies, and the scheduler's DRA
//! device selectors.
//!
//! Expressions compile once ([`Program::compile`]) against the variables their context declares, and evaluate
//! many times over JSON objects bound as CEL maps ([`Activation`]). The library is the one kube-apiserver offers:
//! cel-go's standard functions and macros, the strings extension, Kubernetes' list functions (`isSorted`, `sum`,
//! `min`, `max`, `indexOf`, `lastIndexOf`), `quantity()` and `semver()` with their comparisons. Every evaluation
//! is cost-bounded as kube-apiserver bounds it: a per-expression limit and a per-request [`Budget`], so a hostile
//! rule fails with kube's `operation cancelled: actual cost limit exceeded` instead of burning the server.

mod check;
mod cost;
pub mod device;
mod env;
mod errors;
mod json;
mod lists;
mod program;
mod quantity;
mod semver;
mod values;

pub use cost::{Budget, PER_CALL_LIMIT, RUNTIME_BUDGET};
pub use errors::{CompileError, EvalError};
pub use json::{map_of, to_json};
pub use program::{Activation, Program};

/// A CEL value: what an expression evaluates to, and what a variable holds (admission policies bind one
/// expression's value as another's `variables.<name>`).
pub use cel::Value;

#[cfg(test)]
mod tests;
