//! The PATCH flavours of the embedded API server and the field ownership behind server-side apply.
//!
//! Every function works on `serde_json::Value` objects the way kube-apiserver treats them:
//!
//! * [`merge_patch`] — JSON merge patch (RFC 7386).
//! * [`json_patch`] — JSON Patch (RFC 6902), all six operations, all or nothing.
//! * [`strategic_merge_patch`] — Kubernetes' strategic merge patch, with list semantics taken from
//!   a [`ListTypes`] (for built-in kinds, [`builtin_list_types`]).
//! * [`server_side_apply`] and [`track_update`] — server-side apply and the bookkeeping of
//!   `metadata.managedFields` for every other write.
//!
//! # Strategic merge patch
//!
//! Implemented as kube-apiserver applies it: maps merge recursively and `null` deletes a key;
//! lists of maps with a merge key merge item by item (matching items merge, new items are added,
//! order follows the patch and then the live list); primitive lists with the merge strategy
//! become the union; atomic lists are replaced. Directives: `$patch: replace | delete` in maps,
//! `$patch: replace | delete` items in lists (`merge` is refused, as upstream does),
//! `$deleteFromPrimitiveList/<field>`, `$setElementOrder/<field>` (with upstream's order check)
//! and `$retainKeys`. Where kube-apiserver would copy a patch value verbatim into the object
//! (a field absent from the original), the value is merged into an empty value instead, so that
//! directives and `null`s never leak into stored objects. A [`ListKind::Map`] with several keys
//! merges by its first key, which is the `patchMergeKey` of every built-in list.
//!
//! # Field ownership (server-side apply)
//!
//! Implemented:
//!
//! * `managedFields` entries in the real `FieldsV1` format (`f:`, `k:{...}`, `v:...`, `i:`, `.`)
//!   with `manager`, `operation` (`Apply`/`Update`), `apiVersion`, `time`, `fieldsType` and
//!   `subresource`; entries are identified as upstream does (manager, operation, subresource,
//!   and the API version for `Update`), sorted `Apply` first then by time, and dropped when empty.
//! * The applied configuration's field set: every leaf, every item of set and map lists, empty
//!   maps, empty lists and explicit `null`s; `apiVersion`, `kind` and the server-owned metadata
//!   (`name`, `namespace`, `uid`, `resourceVersion`, `generation`, `creationTimestamp`,
//!   `selfLink`, `clusterName`, `managedFields`) are never owned by anyone.
//! * Conflicts: a field of the new set owned by another manager whose value the apply would
//!   change is a conflict ([`ApplyError::Conflicts`], worded like kube-apiserver), unless `force`,
//!   in which case the other manager loses it. Equal values are shared.
//! * Fields the manager applied before and no longer applies are removed from the object unless
//!   another manager owns them (or something beneath them); key fields of surviving list items
//!   are kept, and maps or lists left empty by the removal disappear.
//! * Merging: maps recursively, map lists by key (key fields absent from an item take their
//!   [`ListTypes::key_default`]), set lists as a union, atomic lists and scalars replaced, `null`
//!   removes the field; list order follows the applied configuration with live-only items kept
//!   in place. Duplicate keys or items without keys in the applied configuration are refused.
//! * Objects without managedFields: apply first records every existing field as owned by the
//!   `Update` manager `before-first-apply`; updates of such objects are not tracked (upstream
//!   starts tracking on create or on the first apply), and a write that sends an empty
//!   `managedFields` list resets the tracking.
//! * Non-apply writes ([`track_update`]) own the fields they added or changed (including maps
//!   and list items they created, marked `.`), take them from other managers and remove removed
//!   fields from everyone; writes through a subresource keep the stored managedFields.
//!
//! Not implemented:
//!
//! * Schemas beyond list semantics: every map is treated as a struct, so intermediate maps are
//!   only owned when created by an `Update`; atomic maps (`x-kubernetes-map-type: atomic`) and
//!   the defaulting of fields other than list keys are unknown here.
//! * Version conversion: ownership is recorded under the object's own `apiVersion` and compared
//!   as is, whatever API version earlier managers used.
//! * The cap of ten `Update` managers (upstream folds older ones into `ancient-changes`) and the
//!   upgrade of `kubectl.kubernetes.io/last-applied-configuration` annotations into ownership.
//! * Resetting fields owned through the other endpoint (status through the main resource and the
//!   reverse): the API server strips those before calling in here.

mod apply;
mod builtin_list_types;
mod error;
mod field_set;
mod json;
mod json_values;
mod managed_fields;
mod merge;
mod strategic;
mod update;
mod value_fields;

#[cfg(test)]
mod test_support;

use serde_json::Value;

pub(crate) use apply::{ApplyRequest, server_side_apply};
pub(crate) use builtin_list_types::builtin_list_types;
pub(crate) use error::{ApplyError, Conflict, PatchError};
pub(crate) use json::json_patch;
pub(crate) use merge::merge_patch;
pub(crate) use strategic::strategic_merge_patch;
pub(crate) use update::track_update;

/// How a list at a given field path merges.
///
/// This is the union of strategic merge patch's `patchStrategy`/`patchMergeKey` and server-side
/// apply's `x-kubernetes-list-type`/`x-kubernetes-list-map-keys`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ListKind {
    /// The list is one value: patches and applies replace it whole.
    Atomic,
    /// The list is a set of scalars: patches and applies add to it (`patchStrategy: merge` on a
    /// primitive list, `x-kubernetes-list-type: set`).
    Set,
    /// The list is a map of objects identified by these key fields (the first one is the
    /// strategic merge patch's `patchMergeKey`).
    Map(Vec<String>),
}

/// Answers list semantics for a field path: the field names from the object root with list
/// positions omitted, e.g. `["spec","template","spec","containers","ports"]`.
pub(crate) trait ListTypes: Send + Sync {
    /// How the list at `path` merges.
    fn list_kind(&self, path: &[&str]) -> ListKind;

    /// The value a key field of the map list at `path` takes when an item omits it, as
    /// Kubernetes defaults a container port's `protocol` to `TCP`; `None` when the key is required.
    fn key_default(&self, _path: &[&str], _key: &str) -> Option<Value> {
        None
    }
}
