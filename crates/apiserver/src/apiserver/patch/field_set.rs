//! Sets of field paths — the unit of ownership in `metadata.managedFields` — and their `FieldsV1`
//! encoding (`{"f:spec":{"f:replicas":{}}}`).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::json_values::canonical;

/// One step of a field path.
///
/// Keys and values hold the canonical JSON text of what they match, so that equal items always
/// yield equal elements whatever the key order or number spelling in the object.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum PathElement {
    /// A field of a map (`f:name`).
    Field(String),
    /// An item of a map list, by its key fields (`k:{"name":"app"}`).
    Key(String),
    /// An item of a set list, by its value (`v:"finalizer"`).
    Value(String),
    /// An item of a list by position (`i:0`); only ever read from stored managedFields.
    Index(usize),
}

impl PathElement {
    /// The element of a map-list item whose key fields have these values.
    pub(super) fn key(fields: Map<String, Value>) -> Self {
        PathElement::Key(canonical(&Value::Object(fields)).to_string())
    }

    /// The element of a set-list item.
    pub(super) fn value(item: &Value) -> Self {
        PathElement::Value(canonical(item).to_string())
    }

    /// The field this element names, if it names a field.
    pub(super) fn field_name(&self) -> Option<&str> {
        match self {
            PathElement::Field(name) => Some(name),
            _ => None,
        }
    }

    /// The `FieldsV1` spelling of the element.
    fn encode(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(json) => format!("k:{json}"),
            PathElement::Value(json) => format!("v:{json}"),
            PathElement::Index(index) => format!("i:{index}"),
        }
    }

    fn decode(text: &str) -> Result<Self, String> {
        let parse = |json: &str| {
            serde_json::from_str::<Value>(json)
                .map_err(|error| format!("path element {text:?} is not valid JSON: {error}"))
        };
        if let Some(name) = text.strip_prefix("f:") {
            return Ok(PathElement::Field(name.to_owned()));
        }
        if let Some(json) = text.strip_prefix("k:") {
            return match parse(json)? {
                Value::Object(fields) => Ok(PathElement::key(fields)),
                _ => Err(format!(
                    "path element {text:?} must hold a JSON object of key fields"
                )),
            };
        }
        if let Some(json) = text.strip_prefix("v:") {
            return Ok(PathElement::value(&parse(json)?));
        }
        if let Some(index) = text.strip_prefix("i:") {
            return index
                .parse()
                .map(PathElement::Index)
                .map_err(|_| format!("path element {text:?} must hold a list index"));
        }
        Err(format!(
            "path element {text:?} must start with \"f:\", \"k:\", \"v:\" or \"i:\""
        ))
    }

    /// kube-apiserver's notation of the element in messages: `.name`, `[name="app"]`, `[="x"]`, `[0]`.
    fn describe(&self) -> String {
        match self {
            PathElement::Field(name) => format!(".{name}"),
            PathElement::Key(json) => match serde_json::from_str::<Value>(json) {
                Ok(Value::Object(fields)) => {
                    let keys: Vec<String> = fields
                        .iter()
                        .map(|(name, value)| format!("{name}={value}"))
                        .collect();
                    format!("[{}]", keys.join(","))
                }
                _ => format!("[{json}]"),
            },
            PathElement::Value(json) => format!("[={json}]"),
            PathElement::Index(index) => format!("[{index}]"),
        }
    }
}

/// A path in kube-apiserver's notation, e.g. `.spec.template.spec.containers[name="app"].image`.
pub(super) fn describe_path(path: &[PathElement]) -> String {
    path.iter().map(PathElement::describe).collect()
}

/// A set of field paths, stored as a tree. A node is a *member* when its own path is in the set;
/// nodes that are neither members nor lead to members are never kept.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct FieldSet {
    member: bool,
    children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
    pub(super) fn is_empty(&self) -> bool {
        !self.member && self.children.is_empty()
    }

    /// Whether this node's own path is in the set.
    pub(super) fn is_member(&self) -> bool {
        self.member
    }

    pub(super) fn insert(&mut self, path: &[PathElement]) {
        match path.split_first() {
            None => self.member = true,
            Some((first, rest)) => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    /// Whether `path` itself is in the set.
    #[cfg(test)]
    pub(super) fn has(&self, path: &[PathElement]) -> bool {
        self.descend(path).is_some_and(FieldSet::is_member)
    }

    /// The subtree at `path`.
    #[cfg(test)]
    pub(super) fn descend(&self, path: &[PathElement]) -> Option<&FieldSet> {
        match path.split_first() {
            None => Some(self),
            Some((first, rest)) => self.children.get(first)?.descend(rest),
        }
    }

    pub(super) fn child(&self, element: &PathElement) -> Option<&FieldSet> {
        self.children.get(element)
    }

    pub(super) fn children(&self) -> impl Iterator<Item = (&PathElement, &FieldSet)> {
        self.children.iter()
    }

    pub(super) fn union(&self, other: &FieldSet) -> FieldSet {
        let mut children = self.children.clone();
        for (element, theirs) in &other.children {
            let merged = match children.get(element) {
                Some(ours) => ours.union(theirs),
                None => theirs.clone(),
            };
            children.insert(element.clone(), merged);
        }
        FieldSet {
            member: self.member || other.member,
            children,
        }
    }

    pub(super) fn difference(&self, other: &FieldSet) -> FieldSet {
        let children = self
            .children
            .iter()
            .map(|(element, ours)| match other.children.get(element) {
                Some(theirs) => (element.clone(), ours.difference(theirs)),
                None => (element.clone(), ours.clone()),
            })
            .filter(|(_, child)| !child.is_empty())
            .collect();
        FieldSet {
            member: self.member && !other.member,
            children,
        }
    }

    pub(super) fn intersection(&self, other: &FieldSet) -> FieldSet {
        let children = self
            .children
            .iter()
            .filter_map(|(element, ours)| {
                let both = ours.intersection(other.children.get(element)?);
                (!both.is_empty()).then(|| (element.clone(), both))
            })
            .collect();
        FieldSet {
            member: self.member && other.member,
            children,
        }
    }

    /// Every path in the set, parents before children.
    pub(super) fn member_paths(&self) -> Vec<Vec<PathElement>> {
        let mut paths = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut paths);
        paths
    }

    fn collect_paths(&self, prefix: &mut Vec<PathElement>, paths: &mut Vec<Vec<PathElement>>) {
        if self.member {
            paths.push(prefix.clone());
        }
        for (element, child) in &self.children {
            prefix.push(element.clone());
            child.collect_paths(prefix, paths);
            prefix.pop();
        }
    }

    /// The `fieldsV1` value of a managedFields entry.
    pub(super) fn to_fields_v1(&self) -> Value {
        let mut fields = Map::new();
        if self.member && !self.children.is_empty() {
            fields.insert(".".to_owned(), Value::Object(Map::new()));
        }
        for (element, child) in &self.children {
            fields.insert(element.encode(), child.to_fields_v1());
        }
        Value::Object(fields)
    }

    /// Reads a `fieldsV1` value; a node without children is a member, `.` marks a member with
    /// children. The root is the object itself, which nobody owns.
    pub(super) fn from_fields_v1(value: &Value) -> Result<FieldSet, String> {
        let mut set = FieldSet::decode_node(value)?;
        set.member = false;
        Ok(set)
    }

    fn decode_node(value: &Value) -> Result<FieldSet, String> {
        let Value::Object(fields) = value else {
            return Err(format!("fieldsV1 nodes must be JSON objects, got {value}"));
        };
        let mut set = FieldSet::default();
        for (text, child) in fields {
            if text == "." {
                set.member = true;
                continue;
            }
            let mut child = FieldSet::decode_node(child)?;
            if child.children.is_empty() {
                child.member = true;
            }
            set.children.insert(PathElement::decode(text)?, child);
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field(name: &str) -> PathElement {
        PathElement::Field(name.to_owned())
    }

    fn named(name: &str) -> PathElement {
        let mut key = Map::new();
        key.insert("name".to_owned(), Value::from(name));
        PathElement::key(key)
    }

    fn set_of(paths: &[&[PathElement]]) -> FieldSet {
        let mut set = FieldSet::default();
        for path in paths {
            set.insert(path);
        }
        set
    }

    #[test]
    fn round_trips_the_fields_v1_format() {
        let fields_v1 = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}, "f:finalizers": {"v:\"a\"": {}}},
            "f:spec": {
                "f:replicas": {},
                "f:template": {"f:spec": {"f:containers": {
                    "k:{\"name\":\"app\"}": {".": {}, "f:image": {}, "f:name": {}, "f:ports": {
                        "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}
                    }}
                }}}
            },
            "f:status": {"f:old": {"i:0": {}}}
        });
        let set = FieldSet::from_fields_v1(&fields_v1).unwrap();
        assert!(set.has(&[field("spec"), field("replicas")]));
        assert!(set.has(&[field("metadata"), field("labels")]));
        assert!(!set.has(&[field("spec")]));
        assert!(set.has(&[
            field("spec"),
            field("template"),
            field("spec"),
            field("containers"),
            named("app"),
        ]));
        assert_eq!(set.to_fields_v1(), fields_v1);
    }

    #[test]
    fn key_elements_do_not_depend_on_key_order_or_number_spelling() {
        let set = FieldSet::from_fields_v1(&json!({
            "k:{\"protocol\":\"TCP\",\"containerPort\":80.0}": {}
        }))
        .unwrap();
        let mut key = Map::new();
        key.insert("containerPort".to_owned(), json!(80));
        key.insert("protocol".to_owned(), json!("TCP"));
        assert!(set.has(&[PathElement::key(key)]));
    }

    #[test]
    fn rejects_malformed_fields_v1() {
        for bad in [
            json!({"x:spec": {}}),
            json!({"k:[1]": {}}),
            json!({"v:nope": {}}),
            json!({"i:-1": {}}),
            json!({"f:spec": 1}),
            json!([]),
        ] {
            assert!(FieldSet::from_fields_v1(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn set_algebra_prunes_empty_nodes() {
        let replicas: &[PathElement] = &[field("spec"), field("replicas")];
        let image: &[PathElement] = &[
            field("spec"),
            field("containers"),
            named("app"),
            field("image"),
        ];
        let item: &[PathElement] = &[field("spec"), field("containers"), named("app")];
        let a = set_of(&[replicas, image, item]);
        let b = set_of(&[replicas]);
        assert_eq!(a.difference(&b), set_of(&[image, item]));
        assert_eq!(a.intersection(&b), b);
        assert_eq!(b.union(&set_of(&[image])), set_of(&[replicas, image]));
        assert!(a.difference(&a).is_empty());
        assert!(set_of(&[image]).intersection(&set_of(&[item])).is_empty());
        assert_eq!(
            a.member_paths(),
            vec![item.to_vec(), image.to_vec(), replicas.to_vec()]
        );
    }

    #[test]
    fn describes_paths_like_kube_apiserver() {
        let mut port = Map::new();
        port.insert("protocol".to_owned(), json!("TCP"));
        port.insert("containerPort".to_owned(), json!(80));
        let cases = [
            (vec![field("spec"), field("replicas")], ".spec.replicas"),
            (
                vec![
                    field("spec"),
                    field("containers"),
                    named("app"),
                    field("image"),
                ],
                ".spec.containers[name=\"app\"].image",
            ),
            (
                vec![field("ports"), PathElement::key(port)],
                ".ports[containerPort=80,protocol=\"TCP\"]",
            ),
            (
                vec![field("finalizers"), PathElement::value(&json!("a"))],
                ".finalizers[=\"a\"]",
            ),
            (vec![field("args"), PathElement::Index(2)], ".args[2]"),
        ];
        for (path, expected) in cases {
            assert_eq!(describe_path(&path), expected);
        }
    }
}
