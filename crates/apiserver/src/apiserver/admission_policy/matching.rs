//! Which requests a policy or binding applies to: resource rules (group, version, resource and subresource,
//! operation, scope, names), `excludeResourceRules`, and the namespace and object label selectors.

use serde_json::{Map, Value, json};

use super::super::context::RequestContext;
use super::compile::{Matching, ResourceRule};

/// One write, as policies see it.
pub(super) struct Request<'a> {
    ctx: &'a RequestContext,
    operation: &'static str,
    name: &'a str,
    labels: Option<&'a Map<String, Value>>,
    old_labels: Option<&'a Map<String, Value>>,
}

fn labels(obj: &Value) -> Option<&Map<String, Value>> {
    obj.pointer("/metadata/labels").and_then(Value::as_object)
}

impl<'a> Request<'a> {
    pub(super) fn of(
        ctx: &'a RequestContext,
        obj: &'a Value,
        old: Option<&'a Value>,
    ) -> Request<'a> {
        Request {
            ctx,
            operation: if old.is_some() { "UPDATE" } else { "CREATE" },
            name: obj
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or(ctx.name()),
            labels: labels(obj),
            old_labels: old.and_then(labels),
        }
    }

    /// Whether a policy's `matchConstraints` take the request: one of its rules does, none of its exclusions.
    pub(super) fn matches(&self, m: &Matching, namespace: Option<&Value>) -> bool {
        m.rules.iter().any(|r| self.rule_matches(r)) && self.rest_matches(m, namespace)
    }

    /// Whether a binding's `matchResources` take the request: without rules of its own, it narrows by its
    /// selectors and exclusions only.
    pub(super) fn matches_binding(&self, m: &Matching, namespace: Option<&Value>) -> bool {
        (m.rules.is_empty() || m.rules.iter().any(|r| self.rule_matches(r)))
            && self.rest_matches(m, namespace)
    }

    fn rest_matches(&self, m: &Matching, namespace: Option<&Value>) -> bool {
        if m.exclude.iter().any(|r| self.rule_matches(r)) {
            return false;
        }
        if let Some(selector) = &m.object_selector
            && !selector.matches(self.labels)
            && !(self.old_labels.is_some() && selector.matches(self.old_labels))
        {
            return false;
        }
        if let Some(selector) = &m.namespace_selector {
            let rt = &self.ctx.rt;
            let namespace_labels = if rt.group.is_empty() && rt.plural == "namespaces" {
                self.labels
            } else if rt.namespaced {
                namespace.and_then(labels)
            } else {
                // Cluster-scoped objects are not in a namespace: the selector does not narrow them.
                return true;
            };
            if !selector.matches(namespace_labels) {
                return false;
            }
        }
        true
    }

    fn rule_matches(&self, rule: &ResourceRule) -> bool {
        let rt = &self.ctx.rt;
        let any = |list: &[String], value: &str| list.iter().any(|x| x == "*" || x == value);
        let subresource = self.ctx.path.subresource.as_deref();
        let resource = rule.resources.iter().any(|r| match r.split_once('/') {
            _ if r == "*/*" => true,
            None => (r == "*" || *r == rt.plural) && subresource.is_none(),
            Some((res, sub)) => {
                (res == "*" || res == rt.plural)
                    && subresource.is_some_and(|s| sub == "*" || sub == s)
            }
        });
        let scope = match rule.scope.as_str() {
            "Cluster" => !rt.namespaced,
            "Namespaced" => rt.namespaced,
            _ => true,
        };
        any(&rule.operations, self.operation)
            && any(&rule.groups, &rt.group)
            && any(&rule.versions, &self.ctx.path.version)
            && resource
            && scope
            && (rule.names.is_empty() || rule.names.iter().any(|n| n == self.name))
    }

    /// `request`, as expressions read it.
    pub(super) fn to_json(&self) -> Value {
        let rt = &self.ctx.rt;
        let version = &self.ctx.path.version;
        let kind = json!({"group": rt.group, "version": version, "kind": rt.kind});
        let resource = json!({"group": rt.group, "version": version, "resource": rt.plural});
        let mut request = json!({
            "kind": kind,
            "resource": resource,
            "requestKind": kind,
            "requestResource": resource,
            "name": self.name,
            "namespace": if rt.namespaced { self.ctx.namespace() } else { "" },
            "operation": self.operation,
            "userInfo": {"username": self.ctx.user.name, "groups": self.ctx.user.groups},
            "dryRun": self.ctx.dry_run(),
        });
        if let Some(sub) = &self.ctx.path.subresource {
            request["subResource"] = json!(sub);
            request["requestSubResource"] = json!(sub);
        }
        request
    }
}
