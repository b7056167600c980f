//! What kube-apiserver's type check refuses at compile time and cel-rust would only find at run time: a call of a
//! function the environment does not declare, and a reference to a variable the context does not bind.

use std::collections::BTreeSet;

use cel::common::ast::{EntryExpr, Expr, IdedExpr};

use crate::env::FUNCTIONS;
use crate::errors::CompileError;

/// Names an expression may use as identifiers without declaring them: type names and function namespaces.
const BUILTIN_IDENTS: &[&str] = &[
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "list",
    "map",
    "null_type",
    "type",
    "dyn",
    "optional",
    "strings",
    "lists",
];

/// The variables `expr` references, or why it does not compile against `declared`.
pub(crate) fn check(expr: &IdedExpr, declared: &[&str]) -> Result<BTreeSet<String>, CompileError> {
    let mut checker = Checker {
        declared,
        bound: Vec::new(),
        referenced: BTreeSet::new(),
    };
    checker.visit(expr)?;
    Ok(checker.referenced)
}

struct Checker<'a> {
    declared: &'a [&'a str],
    bound: Vec<String>,
    referenced: BTreeSet<String>,
}

impl Checker<'_> {
    fn visit(&mut self, expr: &IdedExpr) -> Result<(), CompileError> {
        match &expr.expr {
            Expr::Ident(name) => self.ident(name),
            Expr::Call(call) => {
                let namespaced = match call.target.as_deref().map(|t| &t.expr) {
                    Some(Expr::Ident(ns))
                        if ns == "optional" || ns == "strings" || ns == "lists" =>
                    {
                        Some(format!("{ns}.{}", call.func_name))
                    }
                    _ => None,
                };
                let operator = call.func_name.starts_with(['_', '@', '!', '-']);
                let known = |name: &str| FUNCTIONS.contains(&name);
                if !operator && !known(&call.func_name) && !namespaced.as_deref().is_some_and(known)
                {
                    return Err(CompileError::new(format!(
                        "undeclared reference to '{}' (in container '')",
                        call.func_name
                    )));
                }
                if let Some(target) = &call.target
                    && namespaced.is_none()
                {
                    self.visit(target)?;
                }
                call.args.iter().try_for_each(|arg| self.visit(arg))
            }
            Expr::Comprehension(c) => {
                self.visit(&c.iter_range)?;
                self.visit(&c.accu_init)?;
                self.bound.push(c.accu_var.clone());
                self.visit(&c.result)?;
                self.bound.push(c.iter_var.clone());
                let body = self
                    .visit(&c.loop_cond)
                    .and_then(|()| self.visit(&c.loop_step));
                self.bound.truncate(self.bound.len() - 2);
                body
            }
            Expr::List(list) => list.elements.iter().try_for_each(|e| self.visit(e)),
            Expr::Map(map) => map.entries.iter().try_for_each(|e| self.entry(&e.expr)),
            Expr::Struct(s) => s.entries.iter().try_for_each(|e| self.entry(&e.expr)),
            Expr::Select(select) => self.visit(&select.operand),
            Expr::Literal(_) | Expr::Unspecified => Ok(()),
        }
    }

    fn entry(&mut self, entry: &EntryExpr) -> Result<(), CompileError> {
        match entry {
            EntryExpr::MapEntry(e) => {
                self.visit(&e.key)?;
                self.visit(&e.value)
            }
            EntryExpr::StructField(f) => self.visit(&f.value),
        }
    }

    fn ident(&mut self, name: &str) -> Result<(), CompileError> {
        if self.bound.iter().any(|b| b == name) || BUILTIN_IDENTS.contains(&name) {
            return Ok(());
        }
        if self.declared.contains(&name) {
            self.referenced.insert(name.to_string());
            return Ok(());
        }
        Err(CompileError::new(format!(
            "undeclared reference to '{name}' (in container '')"
        )))
    }
}
