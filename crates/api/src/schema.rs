//! Schema fragments that derive macros cannot express on their own.
//!
//! k8s-openapi describes `LocalObjectReference` with a required `name` and `metav1.Condition`
//! without its validation keywords, while the upstream CRDs default `name` to `""`, mark the
//! reference atomic and validate condition fields. These functions produce the upstream shapes so
//! that the API server treats our objects exactly as it treats upstream ones.

use schemars::{Schema, SchemaGenerator, json_schema};

/// Schema of a reference to an object in the same namespace, as upstream CRDs render it.
pub(crate) fn local_object_reference(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "A reference to an object in the same namespace.",
        "type": "object",
        "properties": {
            "name": {
                "description": "Name of the referent.",
                "type": "string",
                "default": ""
            }
        },
        "x-kubernetes-map-type": "atomic"
    })
}

/// Schema of a list of same-namespace references (pull secrets, build secrets).
pub(crate) fn local_object_reference_list(generator: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "items": local_object_reference(generator)
    })
}

/// Schema of `status.conditions`: standard `metav1.Condition` entries keyed by `type`.
pub(crate) fn conditions(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "Conditions say why the object is, or is not, in its desired state.",
        "type": "array",
        "items": {
            "description": "One aspect of the current state of this object.",
            "type": "object",
            "required": ["lastTransitionTime", "message", "reason", "status", "type"],
            "properties": {
                "lastTransitionTime": {"type": "string", "format": "date-time"},
                "message": {"type": "string", "maxLength": 32768},
                "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
                "reason": {
                    "type": "string",
                    "maxLength": 1024,
                    "minLength": 1,
                    "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
                },
                "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
                "type": {
                    "type": "string",
                    "maxLength": 316,
                    "pattern": "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
                }
            }
        },
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"]
    })
}

/// Schema of an opaque JSON object whose fields the API server must keep as they are.
pub(crate) fn preserved_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true
    })
}
