//! Structural-schema enforcement for custom resources.
//!
//! A CRD version's `openAPIV3Schema` is compiled once into a [`Schema`]; the API
//! server then applies it to every create, update and patch of a custom resource,
//! in kube-apiserver's order:
//!
//! 1. [`Schema::prune`] drops undeclared fields (their paths feed
//!    `fieldValidation=Strict|Warn`),
//! 2. [`Schema::apply_defaults`] drops `null`s the schema forbids and fills defaults,
//! 3. [`Schema::validate`] (or [`Schema::validate_update`]) reports field errors,
//! 4. [`Schema::validate_rules`] runs the CEL rules (`x-kubernetes-validations`, see `cel`).
//!
//! Behaviour and message wording follow apiextensions-apiserver and kube-openapi so
//! that clients see the errors they know. Where this module deliberately differs:
//!
//! - `x-kubernetes-validations` (CEL rules) are enforced without validation
//!   ratcheting and without the static cost estimate (see `cel`).
//! - The summary errors of `anyOf`/`oneOf`/`allOf`/`not` carry the path of the value
//!   they concern (upstream reports them without a field path); for a failed
//!   `anyOf`/`oneOf` the branch with the fewest errors is reported alongside.
//! - Numbers compare by value in `enum` and bounds (`1` equals `1.0`), without the
//!   Go reflection quirks that let `5.5` match an enum value of `5`. A `null` value
//!   matches an `enum` that lists `null`.
//! - Range checks of `format: int32` / `format: float` report at the field's path.
//! - Only some string formats are checked (see `formats`); embedded `metadata` is
//!   kept but not validated; `patternProperties`, `dependencies` and
//!   `additionalItems` (not allowed in structural schemas) are ignored.
//! - Root-level `apiVersion`, `kind` and `metadata` are left to the API server.

mod cel;
mod compile;
mod default;
mod embedded;
mod errors;
mod formats;
mod listtype;
mod pattern;
mod prune;
mod render;
mod validate;

#[cfg(test)]
mod proptests;

use serde_json::Value;

pub(crate) use compile::{ListType, SchemaError};
pub(crate) use errors::{FieldError, FieldErrorKind};

use compile::Node;

/// A compiled `openAPIV3Schema`: cheap to apply to many objects.
#[derive(Debug)]
pub struct Schema {
    root: Node,
    source: Value,
    has_rules: bool,
}

impl Schema {
    /// Compiles an apiextensions.k8s.io/v1 `JSONSchemaProps` value. Fails on keywords
    /// of the wrong JSON kind, unknown types, `$ref`, and patterns that do not compile,
    /// so a broken CRD is rejected when it is stored rather than when it is used.
    pub fn compile(openapi_v3_schema: &Value) -> Result<Schema, SchemaError> {
        let root = compile::compile_node(openapi_v3_schema, "")?;
        Ok(Schema {
            has_rules: cel::has_rules(&root),
            root,
            source: openapi_v3_schema.clone(),
        })
    }

    /// The schema as the CRD declared it, for publishing in OpenAPI documents.
    pub fn source(&self) -> &Value {
        &self.source
    }

    /// Drops `null`s on non-nullable fields that have no default, then applies
    /// `default`s recursively (inside defaulted objects, list items and
    /// `additionalProperties` values too), as the server does when it decodes a
    /// request body, a patched object, or a stored object.
    pub fn apply_defaults(&self, obj: &mut Value) {
        default::apply(&self.root, obj);
    }

    /// Removes fields the schema does not declare and returns their paths (sorted,
    /// e.g. `spec.foo`, `spec.items[0].bar`) for `unknown field "…"` messages.
    pub fn prune(&self, obj: &mut Value) -> Vec<String> {
        prune::prune_root(&self.root, obj)
    }

    /// Validates a whole object; an empty list means valid.
    pub fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errors = self.value_errors(obj);
        errors.extend(self.list_errors(obj));
        errors
    }

    /// Validates an update. Like kube-apiserver, duplicate-item errors of list sets
    /// and maps are only reported when the old object was free of them, so objects
    /// stored before a schema tightened stay updatable.
    pub fn validate_update(&self, obj: &Value, old: &Value) -> Vec<FieldError> {
        let mut errors = self.value_errors(obj);
        if self.list_errors(old).is_empty() {
            errors.extend(self.list_errors(obj));
        }
        errors
    }

    /// Runs the schema's CEL rules (`x-kubernetes-validations`) over an object that passed [`Schema::validate`]
    /// (or has no errors that block them, see [`Schema::blocks_rules`]); `old` is the stored object on updates,
    /// for transition rules. An empty list means every rule holds.
    pub fn validate_rules(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        if !self.has_rules {
            return Vec::new();
        }
        let mut walk = cel::Walk::new();
        walk.visit(&self.root, obj, old, "");
        walk.errors
    }

    /// Whether the schema carries CEL rules.
    pub fn has_rules(&self) -> bool {
        self.has_rules
    }

    /// Whether `errors` keep the CEL rules from running, as in kube-apiserver (a value of the wrong type or not
    /// among the enumerated ones), and the error that says so.
    pub fn blocks_rules(errors: &[FieldError]) -> Option<FieldError> {
        errors
            .iter()
            .any(|e| matches!(e.kind, FieldErrorKind::TypeInvalid | FieldErrorKind::NotSupported))
            .then(|| {
                FieldError::new(
                    "<nil>",
                    FieldErrorKind::Invalid,
                    Some(Value::String("null".into())),
                    "some validation rules were not checked because the object was invalid; correct the \
                     existing errors to complete validation",
                )
            })
    }

    /// List semantics (`x-kubernetes-list-type` and its map keys) of the field at
    /// `path`, given as field names from the root with list positions left out.
    /// `None` when the path leads nowhere or the list is not annotated.
    pub fn list_type_at(&self, path: &[&str]) -> Option<(ListType, Vec<String>)> {
        let mut node = &self.root;
        for name in path {
            while let Some(items) = &node.items {
                node = items;
            }
            node = node.field(name)?;
        }
        node.list_type.map(|t| (t, node.list_map_keys.clone()))
    }

    fn value_errors(&self, obj: &Value) -> Vec<FieldError> {
        let mut errors = Vec::new();
        validate::validate_value(&self.root, obj, "", true, &mut errors);
        if let Value::Object(map) = obj {
            embedded::validate_root(&self.root, map, &mut errors);
        }
        errors
    }

    fn list_errors(&self, obj: &Value) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if let Value::Object(map) = obj {
            listtype::validate_object(&self.root, map, "", &mut errors);
        }
        errors
    }
}

#[cfg(test)]
mod tests;
