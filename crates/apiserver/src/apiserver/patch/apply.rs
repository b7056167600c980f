//! Server-side apply (`application/apply-patch+yaml`): merges an applied configuration into the
//! live object and moves field ownership in `metadata.managedFields`.

use serde_json::{Map, Value};

use super::field_set::{FieldSet, PathElement, describe_path};
use super::json_values::same_value;
use super::managed_fields::{
    ManagedFields, ManagerEntry, ManagerId, Operation, api_version, without_managed_fields,
    without_server_fields,
};
use super::value_fields::{
    Granularity, applied_field_set, compare, dotted, granularity, item_element,
};
use super::{ApplyError, Conflict, ListTypes};

/// Manager that owns the fields of an object that was never applied, when it first is.
const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// One server-side apply request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ApplyRequest<'a> {
    /// The stored object, `None` when the apply creates it.
    pub live: Option<&'a Value>,
    /// The configuration the client applies (decoded from YAML or JSON).
    pub applied: &'a Value,
    /// The field manager (`fieldManager` query parameter).
    pub manager: &'a str,
    /// Take contested fields from their owners instead of failing (`force=true`).
    pub force: bool,
    /// The subresource applied to (`status`, `scale`), `None` for the main resource.
    pub subresource: Option<&'a str>,
    /// The current time in RFC 3339, recorded in the manager's entry.
    pub now: &'a str,
}

/// Applies `req.applied` as kube-apiserver's server-side apply does and returns the object to store.
///
/// The result is the live object merged with the applied configuration, minus the fields this
/// manager applied before and no longer applies (unless someone else owns them), with
/// `metadata.managedFields` updated. Fields owned by other managers whose values would change are
/// [`ApplyError::Conflicts`] unless `req.force`.
pub(crate) fn server_side_apply(
    req: &ApplyRequest,
    types: &dyn ListTypes,
) -> Result<Value, ApplyError> {
    if !req.applied.is_object() {
        return Err(ApplyError::Invalid(
            "the applied configuration must be an object".to_owned(),
        ));
    }
    if req
        .applied
        .pointer("/metadata/managedFields")
        .is_some_and(|managed| !managed.is_null())
    {
        return Err(ApplyError::Invalid(
            "metadata.managedFields must be nil".to_owned(),
        ));
    }
    let live = req
        .live
        .map(without_managed_fields)
        .unwrap_or_else(|| Value::Object(Map::new()));
    let mut managed = match req.live {
        Some(live_object) => existing_managers(live_object, &live, req.now, types)?,
        None => ManagedFields::default(),
    };
    let applied_fields = applied_field_set(req.applied, types).map_err(ApplyError::Invalid)?;
    let applied_fields = without_server_fields(&applied_fields);
    let applier = ManagerId {
        manager: req.manager.to_owned(),
        operation: Operation::Apply,
        api_version: match api_version(req.applied) {
            version if version.is_empty() => api_version(&live),
            version => version,
        },
        subresource: req.subresource.map(str::to_owned),
    };
    let previous = managed.get(&applier).cloned();

    let merger = ApplyMerger { types };
    let mut merged = merger
        .merge(Some(live.clone()), req.applied, &mut Vec::new())?
        .unwrap_or_else(|| Value::Object(Map::new()));

    let others = managed
        .entries()
        .filter(|entry| !entry.id.same_manager(&applier))
        .fold(FieldSet::default(), |all, entry| all.union(&entry.fields));
    if let Some(previous) = &previous {
        let dropped = previous.fields.difference(&applied_fields);
        let owned = others.union(&applied_fields);
        let mut pruner = Pruner {
            types,
            names: Vec::new(),
        };
        pruner.prune_value(&mut merged, &dropped, Some(&owned));
    }

    let comparison = compare(&live, &merged, types);
    let changed = comparison.modified.union(&comparison.added);
    let conflicts = conflicts_with(&managed, &applier, &changed);
    if !conflicts.is_empty() && !req.force {
        return Err(ApplyError::Conflicts(conflicts));
    }
    for entry in managed
        .entries_mut()
        .filter(|entry| !entry.id.same_manager(&applier))
    {
        entry.fields = entry
            .fields
            .difference(&changed)
            .difference(&comparison.removed);
    }

    let unchanged = previous
        .as_ref()
        .is_some_and(|previous| previous.fields == applied_fields && same_value(&live, &merged));
    let time = match previous {
        Some(previous) if unchanged => previous.time,
        _ => Some(req.now.to_owned()),
    };
    managed.replace(ManagerEntry {
        id: applier,
        time,
        fields: applied_fields,
    });
    managed.write_into(&mut merged);
    Ok(merged)
}

/// The managers of the live object; an object never tracked gets every field owned by
/// `before-first-apply`, as kube-apiserver does on the first apply.
fn existing_managers(
    live_object: &Value,
    live: &Value,
    now: &str,
    types: &dyn ListTypes,
) -> Result<ManagedFields, ApplyError> {
    let mut managed = ManagedFields::of_object(live_object).map_err(|reason| {
        ApplyError::Invalid(format!("failed to decode managed fields: {reason}"))
    })?;
    if managed.is_empty() {
        let existing = compare(&Value::Object(Map::new()), live, types).added;
        managed.replace(ManagerEntry {
            id: ManagerId {
                manager: BEFORE_FIRST_APPLY.to_owned(),
                operation: Operation::Update,
                api_version: api_version(live),
                subresource: None,
            },
            time: Some(now.to_owned()),
            fields: without_server_fields(&existing),
        });
    }
    Ok(managed)
}

/// The fields of other managers that the apply changes.
fn conflicts_with(
    managed: &ManagedFields,
    applier: &ManagerId,
    changed: &FieldSet,
) -> Vec<Conflict> {
    let mut conflicts: Vec<Conflict> = managed
        .entries()
        .filter(|entry| !entry.id.same_manager(applier))
        .flat_map(|entry| {
            let label = entry.label();
            entry
                .fields
                .intersection(changed)
                .member_paths()
                .into_iter()
                .map(move |path| Conflict {
                    manager: entry.id.manager.clone(),
                    field: describe_path(&path),
                    manager_label: label.clone(),
                })
        })
        .collect();
    conflicts.sort_by(|a, b| a.manager_label.cmp(&b.manager_label));
    conflicts
}

/// Merges an applied configuration into a live value.
struct ApplyMerger<'t> {
    types: &'t dyn ListTypes,
}

impl<'v> ApplyMerger<'_> {
    /// The merged value; `None` when the configuration removes the field with `null`.
    fn merge(
        &self,
        live: Option<Value>,
        applied: &'v Value,
        names: &mut Vec<&'v str>,
    ) -> Result<Option<Value>, ApplyError> {
        match applied {
            Value::Null => Ok(None),
            Value::Object(fields) => {
                let mut merged = match live {
                    Some(Value::Object(live)) => live,
                    _ => Map::new(),
                };
                for (name, value) in fields {
                    names.push(name);
                    let live_child = merged.get_mut(name).map(Value::take);
                    let child = self.merge(live_child, value, names);
                    names.pop();
                    match child? {
                        Some(child) => {
                            merged.insert(name.clone(), child);
                        }
                        None => {
                            merged.shift_remove(name);
                        }
                    }
                }
                Ok(Some(Value::Object(merged)))
            }
            Value::Array(items) => match granularity(self.types, names) {
                None => Ok(Some(applied.clone())),
                Some(granularity) => {
                    let live = match live {
                        Some(Value::Array(live)) => live,
                        _ => Vec::new(),
                    };
                    self.merge_list(live, items, &granularity, names)
                        .map(|merged| Some(Value::Array(merged)))
                }
            },
            scalar => Ok(Some(scalar.clone())),
        }
    }

    /// Merges list items by identity. The result follows the applied order; live-only items keep
    /// their place among the live items.
    fn merge_list(
        &self,
        live: Vec<Value>,
        applied: &'v [Value],
        granularity: &Granularity,
        names: &mut Vec<&'v str>,
    ) -> Result<Vec<Value>, ApplyError> {
        let mut applied_elements: Vec<PathElement> = Vec::with_capacity(applied.len());
        for (index, item) in applied.iter().enumerate() {
            let element = item_element(item, granularity, self.types, names).map_err(|reason| {
                ApplyError::Invalid(format!("{}: element {index}: {reason}", dotted(names)))
            })?;
            if applied_elements.contains(&element) {
                return Err(ApplyError::Invalid(format!(
                    "{}: duplicate entries for {}",
                    dotted(names),
                    describe_path(std::slice::from_ref(&element))
                )));
            }
            applied_elements.push(element);
        }
        let live_elements: Vec<Option<PathElement>> = live
            .iter()
            .map(|item| item_element(item, granularity, self.types, names).ok())
            .collect();
        let mut live_items: Vec<Option<Value>> = live.into_iter().map(Some).collect();

        let mut merged = Vec::with_capacity(live_items.len() + applied.len());
        let mut emitted: Vec<&PathElement> = Vec::with_capacity(applied.len());
        let (mut l, mut r) = (0, 0);
        while l < live_items.len() || r < applied.len() {
            if let Some(live_element) = live_elements.get(l) {
                let in_applied = live_element
                    .as_ref()
                    .filter(|element| applied_elements.contains(element));
                match in_applied {
                    None => {
                        merged.extend(live_items[l].take());
                        l += 1;
                        continue;
                    }
                    Some(element) if emitted.contains(&element) => {
                        l += 1;
                        continue;
                    }
                    Some(_) if r >= applied.len() => {
                        merged.extend(live_items[l].take());
                        l += 1;
                        continue;
                    }
                    Some(_) => {}
                }
            }
            let element = &applied_elements[r];
            let live_item = live_elements
                .iter()
                .position(|candidate| candidate.as_ref() == Some(element))
                .and_then(|index| live_items[index].take());
            if let Some(item) = self.merge(live_item, &applied[r], names)? {
                merged.push(item);
            }
            emitted.push(element);
            r += 1;
        }
        Ok(merged)
    }
}

/// Removes the fields a manager stopped applying, sparing what other managers own.
struct Pruner<'t> {
    types: &'t dyn ListTypes,
    names: Vec<String>,
}

impl Pruner<'_> {
    fn prune_value(&mut self, value: &mut Value, dropped: &FieldSet, owned: Option<&FieldSet>) {
        match value {
            Value::Object(fields) => self.prune_map(fields, dropped, owned, &[]),
            Value::Array(items) => self.prune_list(items, dropped, owned),
            _ => {}
        }
    }

    /// Prunes the fields of a map; `keys` are key fields of a list item, which stay with the item.
    fn prune_map(
        &mut self,
        fields: &mut Map<String, Value>,
        dropped: &FieldSet,
        owned: Option<&FieldSet>,
        keys: &[String],
    ) {
        for (element, dropped_child) in dropped.children() {
            let Some(name) = element.field_name() else {
                continue;
            };
            if keys.iter().any(|key| key == name) {
                continue;
            }
            let owned_child = owned.and_then(|owned| owned.child(element));
            let Some(value) = fields.get_mut(name) else {
                continue;
            };
            if dropped_child.is_member() && owned_child.is_none_or(FieldSet::is_empty) {
                fields.shift_remove(name);
                continue;
            }
            let was_filled = is_filled_container(value);
            self.names.push(name.to_owned());
            self.prune_value(value, dropped_child, owned_child);
            self.names.pop();
            let emptied = was_filled && !is_filled_container(value);
            if emptied && !owned_child.is_some_and(FieldSet::is_member) {
                fields.shift_remove(name);
            }
        }
    }

    fn prune_list(&mut self, items: &mut Vec<Value>, dropped: &FieldSet, owned: Option<&FieldSet>) {
        let names: Vec<&str> = self.names.iter().map(String::as_str).collect();
        let Some(granularity) = granularity(self.types, &names) else {
            return;
        };
        let elements: Vec<Option<PathElement>> = items
            .iter()
            .map(|item| item_element(item, &granularity, self.types, &names).ok())
            .collect();
        let keys = match &granularity {
            Granularity::Map(keys) => keys.clone(),
            Granularity::Set => Vec::new(),
        };
        let mut kept = Vec::with_capacity(items.len());
        for (mut item, element) in items.drain(..).zip(elements) {
            let Some((element, dropped_child)) =
                element.and_then(|element| dropped.child(&element).map(|child| (element, child)))
            else {
                kept.push(item);
                continue;
            };
            let owned_child = owned.and_then(|owned| owned.child(&element));
            if dropped_child.is_member() && owned_child.is_none_or(FieldSet::is_empty) {
                continue;
            }
            if let Value::Object(fields) = &mut item {
                self.prune_map(fields, dropped_child, owned_child, &keys);
            }
            kept.push(item);
        }
        *items = kept;
    }
}

fn is_filled_container(value: &Value) -> bool {
    match value {
        Value::Object(fields) => !fields.is_empty(),
        Value::Array(items) => !items.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests;
