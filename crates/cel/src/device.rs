//! DRA device selectors (`DeviceClass.spec.selectors[].cel.expression`, or a claim request's), evaluated as
//! kube-scheduler evaluates them over one device of a ResourceSlice.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use cel::Value;
use cel::common::ast::{Expr, IdedExpr, LiteralValue, operators};
use cel::objects::Key;
use k8s_openapi::api::resource::v1::Device;

use crate::cost::{Budget, PER_CALL_LIMIT};
use crate::errors::{CompileError, EvalError};
use crate::json;
use crate::program::{Activation, Program};
use crate::{quantity, semver};

/// A DRA device selector (`DeviceClass.spec.selectors[].cel.expression` or a claim request's), compiled once.
#[derive(Debug)]
pub struct DeviceSelector {
    program: Program,
    /// Domains the expression indexes by literal (`device.attributes["gpu.example.com"]`): a device that
    /// publishes nothing there still has an empty map for them, as in Kubernetes, so `has(...)` answers false.
    domains: BTreeSet<String>,
}

impl DeviceSelector {
    /// Compiles a selector; its one variable is `device`.
    pub fn compile(expression: &str) -> Result<DeviceSelector, CompileError> {
        let program = Program::compile(expression, &["device"])?;
        let mut domains = BTreeSet::new();
        literal_domains(program.expr(), &mut domains);
        Ok(DeviceSelector { program, domains })
    }

    /// Whether `device`, published by `driver`, matches: `device.driver`, `device.attributes["<domain>"].<id>`
    /// (bool, int, string, version), `device.capacity["<domain>"].<id>` (a quantity). A non-bool result or
    /// a runtime error is an Err (kube-scheduler treats the device as not matching and reports the error).
    pub fn matches(&self, driver: &str, device: &Device) -> Result<bool, EvalError> {
        let mut activation = Activation::new();
        activation.bind("device", self.device_value(driver, device)?);
        let mut budget = Budget::with_limits(PER_CALL_LIMIT, PER_CALL_LIMIT);
        self.program.evaluate_bool(&activation, &mut budget)
    }

    fn device_value(&self, driver: &str, device: &Device) -> Result<Value, EvalError> {
        let mut attributes: BTreeMap<String, Vec<(Key, Value)>> = BTreeMap::new();
        let mut capacity: BTreeMap<String, Vec<(Key, Value)>> = BTreeMap::new();
        for domain in &self.domains {
            attributes.insert(domain.clone(), Vec::new());
            capacity.insert(domain.clone(), Vec::new());
        }
        for (name, attribute) in device.attributes.iter().flatten() {
            let value = if let Some(b) = attribute.bool {
                Value::Bool(b)
            } else if let Some(i) = attribute.int {
                Value::Int(i)
            } else if let Some(s) = &attribute.string {
                Value::String(Arc::new(s.clone()))
            } else if let Some(v) = &attribute.version {
                semver::value_of(v)
                    .map_err(|e| EvalError::runtime(format!("attribute {name}: {e}")))?
            } else {
                continue;
            };
            let (domain, id) = qualify(driver, name);
            attributes
                .entry(domain)
                .or_default()
                .push((key(&id), value));
        }
        for (name, cap) in device.capacity.iter().flatten() {
            let value = quantity::value_of(&cap.value.0)
                .map_err(|e| EvalError::runtime(format!("capacity {name}: {e}")))?;
            let (domain, id) = qualify(driver, name);
            capacity.entry(domain).or_default().push((key(&id), value));
        }
        let nest = |domains: BTreeMap<String, Vec<(Key, Value)>>| {
            json::object(
                domains
                    .into_iter()
                    .map(|(domain, ids)| (key(&domain), json::object(ids))),
            )
        };
        Ok(json::object([
            (key("driver"), Value::String(Arc::new(driver.to_string()))),
            (key("attributes"), nest(attributes)),
            (key("capacity"), nest(capacity)),
        ]))
    }
}

/// `gpu.example.com/model` is `model` in domain `gpu.example.com`; a bare `model` is in the driver's domain.
fn qualify(driver: &str, name: &str) -> (String, String) {
    match name.split_once('/') {
        Some((domain, id)) => (domain.to_string(), id.to_string()),
        None => (driver.to_string(), name.to_string()),
    }
}

fn key(name: &str) -> Key {
    Key::String(Arc::new(name.to_string()))
}

/// The string literals `device.attributes[...]` and `device.capacity[...]` are indexed with.
fn literal_domains(expr: &IdedExpr, domains: &mut BTreeSet<String>) {
    if let Expr::Call(call) = &expr.expr {
        if call.func_name == operators::INDEX
            && let [map, index] = call.args.as_slice()
            && let Expr::Select(select) = &map.expr
            && (select.field == "attributes" || select.field == "capacity")
            && matches!(&select.operand.expr, Expr::Ident(name) if name == "device")
            && let Expr::Literal(LiteralValue::String(domain)) = &index.expr
        {
            domains.insert(domain.inner().to_string());
        }
        if let Some(target) = &call.target {
            literal_domains(target, domains);
        }
        for arg in &call.args {
            literal_domains(arg, domains);
        }
        return;
    }
    crate::cost::for_each_child(expr, &mut |child| literal_domains(child, domains));
}
