//! A compiled expression and the variables it evaluates over.

use std::collections::BTreeSet;
use std::sync::Arc;

use cel::common::ast::IdedExpr;
use cel::common::value::Val;
use cel::{Context, Env, ExecutionError, Value};

use crate::check;
use crate::cost::{self, Budget};
use crate::env;
use crate::errors::{CompileError, EvalError};
use crate::json;

/// The longest expression accepted, as kube-apiserver bounds a rule's source.
const MAX_SOURCE_BYTES: usize = 100_000;

/// An expression compiled once, evaluated many times.
#[derive(Debug)]
pub struct Program {
    source: String,
    expr: IdedExpr,
    base_cost: u64,
    references: BTreeSet<String>,
}

/// The variables one evaluation sees.
#[derive(Debug, Default, Clone)]
pub struct Activation {
    variables: Vec<(String, Value)>,
}

impl Activation {
    /// No variables yet.
    pub fn new() -> Activation {
        Activation::default()
    }

    /// Binds `name` to a JSON value: objects are maps with field selection, as Kubernetes binds `self`.
    pub fn bind_json(&mut self, name: &str, value: &serde_json::Value) -> &mut Activation {
        self.bind(name, json::to_value(value))
    }

    /// Binds `name` to a CEL value (another expression's result).
    pub fn bind(&mut self, name: &str, value: Value) -> &mut Activation {
        self.variables.retain(|(n, _)| n != name);
        self.variables.push((name.to_string(), value));
        self
    }

    /// Whether `name` is bound.
    pub fn has(&self, name: &str) -> bool {
        self.variables.iter().any(|(n, _)| n == name)
    }
}

impl Program {
    /// Compiles `source`, which may reference the variables `declared` (beside the ones its macros bind).
    pub fn compile(source: &str, declared: &[&str]) -> Result<Program, CompileError> {
        if source.len() > MAX_SOURCE_BYTES {
            return Err(CompileError::new(format!(
                "expression is longer than {MAX_SOURCE_BYTES} bytes"
            )));
        }
        let env = env::env().map_err(CompileError::new)?;
        let mut expr = env
            .parser()
            .parse(source)
            .map_err(|e| CompileError::new(e.to_string()))?;
        let references = check::check(&expr, declared)?;
        let base_cost = cost::nodes(&expr);
        let mut next_id = cost::max_id(&expr);
        cost::instrument(&mut expr, &mut next_id);
        Ok(Program {
            source: source.to_string(),
            expr,
            base_cost,
            references,
        })
    }

    /// The parsed expression (its cost hooks included).
    pub(crate) fn expr(&self) -> &IdedExpr {
        &self.expr
    }

    /// The expression as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether the expression references the declared variable `name` (a CRD rule that reads `oldSelf` is a
    /// transition rule).
    pub fn references(&self, name: &str) -> bool {
        self.references.contains(name)
    }

    /// Evaluates over `activation`, spending from `budget`.
    pub fn evaluate(
        &self,
        activation: &Activation,
        budget: &mut Budget,
    ) -> Result<Value, EvalError> {
        let env = env::env().map_err(EvalError::runtime)?;
        let limit = budget.per_call().min(budget.remaining());
        if self.base_cost > limit {
            budget.spend(self.base_cost);
            return Err(if self.base_cost > budget.per_call() {
                EvalError::cost_limit()
            } else {
                EvalError::budget_exhausted()
            });
        }
        let mut ctx = Context::with_env(Arc::<Env>::clone(&env));
        for (name, value) in &activation.variables {
            let val: Box<dyn Val> =
                Box::<dyn Val>::try_from(value.clone()).map_err(|e| runtime(&e))?;
            ctx.add_variable_as_val(name.as_str(), val);
        }
        cost::start(self.base_cost, limit);
        let result = Value::resolve(&self.expr, &ctx);
        let (used, exceeded) = cost::finish();
        budget.spend(used);
        if exceeded {
            return Err(if used > budget.per_call() {
                EvalError::cost_limit()
            } else {
                EvalError::budget_exhausted()
            });
        }
        result.map_err(|e| runtime(&e))
    }

    /// Evaluates to a bool; another type is an error.
    pub fn evaluate_bool(
        &self,
        activation: &Activation,
        budget: &mut Budget,
    ) -> Result<bool, EvalError> {
        match self.evaluate(activation, budget)? {
            Value::Bool(b) => Ok(b),
            other => Err(EvalError::runtime(format!(
                "expected a bool, got {}",
                crate::values::type_name(&other)
            ))),
        }
    }

    /// Evaluates to a string; another type is an error.
    pub fn evaluate_string(
        &self,
        activation: &Activation,
        budget: &mut Budget,
    ) -> Result<String, EvalError> {
        match self.evaluate(activation, budget)? {
            Value::String(s) => Ok(s.as_ref().clone()),
            other => Err(EvalError::runtime(format!(
                "expected a string, got {}",
                crate::values::type_name(&other)
            ))),
        }
    }
}

/// An interpreter error as Kubernetes words it (`no such key: x`).
fn runtime(error: &ExecutionError) -> EvalError {
    EvalError::runtime(match error {
        ExecutionError::NoSuchKey(key) => format!("no such key: {key}"),
        ExecutionError::FunctionError { function, message } if function == "cost" => {
            message.clone()
        }
        ExecutionError::FunctionError { message, .. } => message.clone(),
        other => other.to_string(),
    })
}
