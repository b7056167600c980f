//! DeviceClasses: the selectors and configuration every claim of the class inherits.

use serde_json::Value;

use super::super::field::{Errors, items};
use super::super::meta;
use super::common;

/// A DeviceClass.
pub(crate) fn device_class(obj: &Value) -> Errors {
    let mut errors = meta::object_meta(obj.get("metadata"), "metadata");
    let Some(spec) = obj.get("spec") else {
        return errors;
    };
    common::selectors(&mut errors, items(spec, "selectors"), "spec.selectors");
    common::configs(&mut errors, items(spec, "config"), "spec.config");
    errors
}
