//! The two ways a CEL expression fails, worded for the person who wrote it.

use std::fmt;

/// Why an expression does not compile (parse error, unknown function, undeclared variable), worded for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileError {
    message: String,
}

impl CompileError {
    pub(crate) fn new(message: impl Into<String>) -> CompileError {
        CompileError {
            message: message.into(),
        }
    }
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CompileError {}

/// What stopped an evaluation: the caller words each differently (kube-apiserver stops running further rules
/// once a cost limit is hit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EvalErrorKind {
    /// No such key, wrong type, overflow and the like.
    Runtime,
    /// The expression alone spent more than the per-call limit.
    CostLimit,
    /// The request's budget ran out before the expression finished.
    BudgetExhausted,
}

/// Why an evaluation failed (no such key, wrong type, cost limit exceeded), worded for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalError {
    kind: EvalErrorKind,
    message: String,
}

impl EvalError {
    pub(crate) fn runtime(message: impl Into<String>) -> EvalError {
        EvalError {
            kind: EvalErrorKind::Runtime,
            message: message.into(),
        }
    }

    pub(crate) fn cost_limit() -> EvalError {
        EvalError {
            kind: EvalErrorKind::CostLimit,
            message: "operation cancelled: actual cost limit exceeded".to_string(),
        }
    }

    pub(crate) fn budget_exhausted() -> EvalError {
        EvalError {
            kind: EvalErrorKind::BudgetExhausted,
            message: "validation failed due to running out of cost budget, no further validation rules will be run"
                .to_string(),
        }
    }

    /// Whether the expression exceeded the per-call cost limit (kube-apiserver then runs no further rules).
    pub fn is_cost_limit(&self) -> bool {
        self.kind == EvalErrorKind::CostLimit
    }

    /// Whether the request's cost budget ran out (kube-apiserver then runs no further rules).
    pub fn is_budget_exhausted(&self) -> bool {
        self.kind == EvalErrorKind::BudgetExhausted
    }
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for EvalError {}
