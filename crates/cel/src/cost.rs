//! Cost bounds, as kube-apiserver sets them: every evaluation may spend at most [`PER_CALL_LIMIT`] units and a
//! request at most its [`Budget`].
//!
//! kube-apiserver counts cel-go's interpreter steps. cel-rust has no such counter, so compiling instruments the
//! expression instead: every comprehension (`all`, `exists`, `map`, `filter`, ...) charges, on each iteration,
//! the size of its loop body in expression nodes, through a call to [`COST_FUNCTION`] that no CEL source can name.
//! Those are the only loops CEL has, so a nested `all` over big lists reaches the limit after about as many steps
//! as kube-apiserver would take, and the charge that crosses the limit fails the loop at once: the evaluation ends
//! without visiting the rest.

use std::cell::Cell;

use cel::ExecutionError;
use cel::common::ast::{
    CallExpr, EntryExpr, Expr, IdedEntryExpr, IdedExpr, LiteralValue, operators,
};
use cel::common::types::CelInt;
use cel::common::value::CowVal;

/// The most one expression may spend, kube-apiserver's `PerCallLimit`.
pub const PER_CALL_LIMIT: u64 = 1_000_000;

/// What all the rules of one request may spend together, kube-apiserver's `RuntimeCELCostBudget`.
pub const RUNTIME_BUDGET: u64 = 10_000_000;

/// The function the instrumented expressions call to charge a loop iteration: `@` keeps it out of CEL source.
pub(crate) const COST_FUNCTION: &str = "@kmm_cost";

/// What is left of a request's cost budget, spent by each evaluation in turn.
#[derive(Debug, Clone)]
pub struct Budget {
    remaining: u64,
    per_call: u64,
}

impl Budget {
    /// A budget of `total` units, each evaluation limited to [`PER_CALL_LIMIT`].
    pub fn new(total: u64) -> Budget {
        Budget::with_limits(total, PER_CALL_LIMIT)
    }

    /// A budget of `total` units, each evaluation limited to `per_call` (a test's small limits).
    pub fn with_limits(total: u64, per_call: u64) -> Budget {
        Budget {
            remaining: total,
            per_call,
        }
    }

    /// What is left.
    pub fn remaining(&self) -> u64 {
        self.remaining
    }

    pub(crate) fn per_call(&self) -> u64 {
        self.per_call
    }

    pub(crate) fn spend(&mut self, units: u64) {
        self.remaining = self.remaining.saturating_sub(units);
    }
}

impl Default for Budget {
    /// One request's budget, kube-apiserver's.
    fn default() -> Budget {
        Budget::new(RUNTIME_BUDGET)
    }
}

/// The running evaluation's spending, per thread: an evaluation runs to its end on the thread that started it.
#[derive(Clone, Copy)]
struct Meter {
    used: u64,
    limit: u64,
    exceeded: bool,
}

thread_local! {
    static METER: Cell<Meter> = const { Cell::new(Meter { used: 0, limit: u64::MAX, exceeded: false }) };
}

/// Starts metering an evaluation that may spend `limit`, having spent `base` already.
pub(crate) fn start(base: u64, limit: u64) {
    METER.with(|m| {
        m.set(Meter {
            used: base,
            limit,
            exceeded: base > limit,
        })
    });
}

/// Ends metering: what the evaluation spent and whether it went over its limit.
pub(crate) fn finish() -> (u64, bool) {
    METER.with(|m| {
        let meter = m.get();
        m.set(Meter {
            used: 0,
            limit: u64::MAX,
            exceeded: false,
        });
        (meter.used, meter.exceeded)
    })
}

/// Charges `units` to the running evaluation; fails once it is over its limit.
pub(crate) fn charge(units: u64) -> Result<(), ExecutionError> {
    METER.with(|m| {
        let mut meter = m.get();
        meter.used = meter.used.saturating_add(units);
        if meter.used > meter.limit {
            meter.exceeded = true;
        }
        m.set(meter);
        if meter.exceeded {
            Err(ExecutionError::function_error(
                "cost",
                "operation cancelled: actual cost limit exceeded",
            ))
        } else {
            Ok(())
        }
    })
}

/// `@kmm_cost(value, units)`: charges `units` and yields `value`.
pub(crate) fn cost_function<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let units = args
        .get(1)
        .and_then(|units| units.downcast_ref::<CelInt>())
        .map_or(1, |units| u64::try_from(*units.inner()).unwrap_or(1));
    charge(units)?;
    args.into_iter()
        .next()
        .ok_or_else(|| ExecutionError::invalid_argument_count(2, 0))
}

/// How many nodes `expr` has: the static part of its cost.
pub(crate) fn nodes(expr: &IdedExpr) -> u64 {
    let mut count = 1;
    for_each_child(expr, &mut |child| count += nodes(child));
    count
}

pub(crate) fn for_each_child(expr: &IdedExpr, visit: &mut dyn FnMut(&IdedExpr)) {
    match &expr.expr {
        Expr::Call(call) => {
            if let Some(target) = &call.target {
                visit(target);
            }
            for arg in &call.args {
                visit(arg);
            }
        }
        Expr::Comprehension(c) => {
            for child in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ] {
                visit(child);
            }
        }
        Expr::List(list) => {
            for element in &list.elements {
                visit(element);
            }
        }
        Expr::Map(map) => {
            for entry in &map.entries {
                entry_children(entry, &mut *visit);
            }
        }
        Expr::Struct(s) => {
            for entry in &s.entries {
                entry_children(entry, &mut *visit);
            }
        }
        Expr::Select(select) => visit(&select.operand),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

fn entry_children(entry: &IdedEntryExpr, visit: &mut dyn FnMut(&IdedExpr)) {
    match &entry.expr {
        EntryExpr::MapEntry(e) => {
            visit(&e.key);
            visit(&e.value);
        }
        EntryExpr::StructField(f) => visit(&f.value),
    }
}

/// Makes every comprehension of `expr` charge its loop body's size on each iteration.
pub(crate) fn instrument(expr: &mut IdedExpr, next_id: &mut u64) {
    match &mut expr.expr {
        Expr::Call(call) => {
            if let Some(target) = &mut call.target {
                instrument(target, next_id);
            }
            for arg in &mut call.args {
                instrument(arg, next_id);
            }
        }
        Expr::Comprehension(c) => {
            let c = &mut **c;
            for child in [
                &mut c.iter_range,
                &mut c.accu_init,
                &mut c.loop_cond,
                &mut c.loop_step,
                &mut c.result,
            ] {
                instrument(child, next_id);
            }
            let units = nodes(&c.loop_step) + nodes(&c.loop_cond);
            let accu = c.accu_var.clone();
            // cel-rust runs `map` and `filter` (`@result + [e]`, maybe under a guard) on a fast path that needs a
            // literal loop condition: there the charge goes into the appended element or the guard instead.
            let slot = match append_slot(&mut c.loop_step, &accu) {
                Some(slot) => slot,
                None => &mut c.loop_cond,
            };
            wrap(slot, units, next_id);
        }
        Expr::List(list) => {
            for element in &mut list.elements {
                instrument(element, next_id);
            }
        }
        Expr::Map(map) => {
            for entry in &mut map.entries {
                instrument_entry(entry, next_id);
            }
        }
        Expr::Struct(s) => {
            for entry in &mut s.entries {
                instrument_entry(entry, next_id);
            }
        }
        Expr::Select(select) => instrument(&mut select.operand, next_id),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

fn instrument_entry(entry: &mut IdedEntryExpr, next_id: &mut u64) {
    match &mut entry.expr {
        EntryExpr::MapEntry(e) => {
            instrument(&mut e.key, next_id);
            instrument(&mut e.value, next_id);
        }
        EntryExpr::StructField(f) => instrument(&mut f.value, next_id),
    }
}

/// In a `map`/`filter` loop step, the expression evaluated once per iteration that may carry the charge: the
/// appended element of `@result + [e]`, or the guard of `g ? @result + [e] : @result`.
fn append_slot<'e>(step: &'e mut IdedExpr, accu: &str) -> Option<&'e mut IdedExpr> {
    let is_accu = |e: &IdedExpr| matches!(&e.expr, Expr::Ident(name) if name == accu);
    let appends = |e: &IdedExpr| match &e.expr {
        Expr::Call(call) if call.func_name == operators::ADD && call.target.is_none() => {
            matches!(call.args.as_slice(), [lhs, rhs] if is_accu(lhs)
                && matches!(&rhs.expr, Expr::List(l) if l.elements.len() == 1))
        }
        _ => false,
    };
    if appends(step) {
        let Expr::Call(call) = &mut step.expr else {
            return None;
        };
        let Expr::List(list) = &mut call.args.get_mut(1)?.expr else {
            return None;
        };
        return list.elements.first_mut();
    }
    let guarded = match &step.expr {
        Expr::Call(call) if call.func_name == operators::CONDITIONAL && call.target.is_none() => {
            matches!(call.args.as_slice(), [_, then, otherwise] if appends(then) && is_accu(otherwise))
        }
        _ => false,
    };
    if guarded {
        let Expr::Call(call) = &mut step.expr else {
            return None;
        };
        return call.args.first_mut();
    }
    None
}

fn wrap(slot: &mut IdedExpr, units: u64, next_id: &mut u64) {
    let inner = std::mem::take(slot);
    let units = i64::try_from(units).unwrap_or(i64::MAX);
    *next_id += 2;
    *slot = IdedExpr {
        id: *next_id - 1,
        expr: Expr::Call(CallExpr {
            func_name: COST_FUNCTION.to_string(),
            target: None,
            args: vec![
                inner,
                IdedExpr {
                    id: *next_id,
                    expr: Expr::Literal(LiteralValue::Int(CelInt::from(units))),
                },
            ],
        }),
    };
}

/// The largest node id in `expr`, so added nodes get fresh ones.
pub(crate) fn max_id(expr: &IdedExpr) -> u64 {
    let mut max = expr.id;
    for_each_child(expr, &mut |child| max = max.max(max_id(child)));
    max
}
