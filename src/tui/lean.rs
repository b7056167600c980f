//! Objects read from the cluster without their `metadata.managedFields`. The console never shows them, yet on a
//! node they are almost half its JSON and, as a tree of small maps, most of the time and memory it takes to read
//! one: 5,000 nodes spent about 70 % of their parse building managed fields only to drop them. A watched object is
//! read as a [`Lean`] of its type, which passes over that one key without building anything, then unwrapped: the
//! console's lists ([`super::feed`]) and the fleet's node counts ([`super::fleet_feed`]) read every object so.

use std::borrow::Cow;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::DynamicResourceScope;
use kube::runtime::watcher;
use kube::{Api, Resource};
use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, forward_to_deserialize_any};

/// The key in an object's metadata that is passed over.
const SKIPPED: &str = "managedFields";

/// An object of kind `K` read without its managed fields.
#[derive(Clone, Debug)]
pub(crate) struct Lean<K>(K);

/// `api`'s collection, read through [`Lean`].
pub(crate) fn lean<K: Resource<DynamicType = ()>>(api: Api<K>) -> Api<Lean<K>> {
    match api.namespace().map(str::to_owned) {
        Some(namespace) => Api::namespaced_with(api.into_client(), &namespace, &()),
        None => Api::all_with(api.into_client(), &()),
    }
}

/// The watch event of `K` that `event` is.
pub(crate) fn unwrapped<K>(event: watcher::Event<Lean<K>>) -> watcher::Event<K> {
    match event {
        watcher::Event::Apply(Lean(object)) => watcher::Event::Apply(object),
        watcher::Event::Delete(Lean(object)) => watcher::Event::Delete(object),
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitApply(Lean(object)) => watcher::Event::InitApply(object),
        watcher::Event::InitDone => watcher::Event::InitDone,
    }
}

impl<K: Resource<DynamicType = ()>> Resource for Lean<K> {
    type DynamicType = ();
    // Only lists and watches are made through a `Lean`, and their URLs name the namespace.
    type Scope = DynamicResourceScope;

    fn kind(dynamic: &()) -> Cow<'_, str> {
        K::kind(dynamic)
    }

    fn group(dynamic: &()) -> Cow<'_, str> {
        K::group(dynamic)
    }

    fn version(dynamic: &()) -> Cow<'_, str> {
        K::version(dynamic)
    }

    fn plural(dynamic: &()) -> Cow<'_, str> {
        K::plural(dynamic)
    }

    fn meta(&self) -> &ObjectMeta {
        self.0.meta()
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        self.0.meta_mut()
    }
}

impl<'de, K: Deserialize<'de>> Deserialize<'de> for Lean<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        K::deserialize(Layered {
            inner: deserializer,
            layer: Layer::Object,
        })
        .map(Lean)
    }
}

/// Which map a [`Layered`] value is.
#[derive(Clone, Copy, PartialEq)]
enum Layer {
    /// The object: its `metadata` is read as [`Layer::Metadata`].
    Object,
    /// The object's metadata: [`SKIPPED`] is passed over.
    Metadata,
}

/// A value in one of the two layers; every value below them is read as it is.
struct Layered<D> {
    inner: D,
    layer: Layer,
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Layered<D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        let layer = self.layer;
        self.inner
            .deserialize_any(LayeredVisitor { visitor, layer })
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        let layer = self.layer;
        self.inner
            .deserialize_option(LayeredVisitor { visitor, layer })
    }

    // JSON says what each value is: a struct or map is read as whatever it turns out to be.
    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf unit
        unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

/// `visitor`, whose map is read in `layer` and whose `Some` stays in it.
struct LayeredVisitor<V> {
    visitor: V,
    layer: Layer,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for LayeredVisitor<V> {
    type Value = V::Value;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        self.visitor.expecting(formatter)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_map(Entries {
            map,
            layer: self.layer,
            metadata_next: false,
        })
    }

    fn visit_some<D: Deserializer<'de>>(self, inner: D) -> Result<V::Value, D::Error> {
        let layer = self.layer;
        self.visitor.visit_some(Layered { inner, layer })
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.visitor.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.visitor.visit_unit()
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<V::Value, E> {
        self.visitor.visit_bool(value)
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<V::Value, E> {
        self.visitor.visit_i64(value)
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<V::Value, E> {
        self.visitor.visit_u64(value)
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<V::Value, E> {
        self.visitor.visit_f64(value)
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<V::Value, E> {
        self.visitor.visit_str(value)
    }

    fn visit_borrowed_str<E: de::Error>(self, value: &'de str) -> Result<V::Value, E> {
        self.visitor.visit_borrowed_str(value)
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<V::Value, E> {
        self.visitor.visit_string(value)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_seq(seq)
    }
}

/// A map's entries in `layer`.
struct Entries<A> {
    map: A,
    layer: Layer,
    /// Whether the next value is the object's metadata.
    metadata_next: bool,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Entries<A> {
    type Error = A::Error;

    fn next_key_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, A::Error> {
        loop {
            let Some(key) = self.map.next_key::<Key<'de>>()? else {
                return Ok(None);
            };
            if self.layer == Layer::Metadata && key.as_str() == SKIPPED {
                self.map.next_value::<IgnoredAny>()?;
                continue;
            }
            self.metadata_next = self.layer == Layer::Object && key.as_str() == "metadata";
            return match key {
                Key::Borrowed(key) => seed.deserialize(BorrowedStrDeserializer::new(key)),
                Key::Owned(key) => seed.deserialize(StringDeserializer::new(key)),
            }
            .map(Some);
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        if std::mem::take(&mut self.metadata_next) {
            self.map.next_value_seed(AsMetadata(seed))
        } else {
            self.map.next_value_seed(seed)
        }
    }
}

/// `S`, reading the object's metadata.
struct AsMetadata<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for AsMetadata<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, inner: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(Layered {
            inner,
            layer: Layer::Metadata,
        })
    }
}

/// A map key, borrowed from the input where it holds no escapes.
enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl Key<'_> {
    fn as_str(&self) -> &str {
        match self {
            Key::Borrowed(key) => key,
            Key::Owned(key) => key,
        }
    }
}

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// Reads a [`Key`].
struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key<'de>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a map key")
    }

    fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<Key<'de>, E> {
        Ok(Key::Borrowed(key))
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Key<'de>, E> {
        Ok(Key::Owned(key.to_owned()))
    }

    fn visit_string<E: de::Error>(self, key: String) -> Result<Key<'de>, E> {
        Ok(Key::Owned(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Node, Pod};
    use serde_json::json;

    /// A node as a kubelet writes it: managed fields beside labels, status and a label that happens to be named
    /// like the skipped key.
    fn node() -> serde_json::Value {
        json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": "worker-0",
                "resourceVersion": "42",
                "labels": {"managedFields": "kept", "kubernetes.io/hostname": "worker-0"},
                "managedFields": [{
                    "manager": "kubelet",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:status": {"f:conditions": {".": {}, "k:{\"type\":\"Ready\"}": {}}}}
                }],
                "annotations": {"node.alpha.kubernetes.io/ttl": "0"}
            },
            "spec": {"podCIDR": "10.0.0.0/24"},
            "status": {
                "nodeInfo": {"kernelVersion": "5.14.0-362.el9.x86_64"},
                "conditions": [{"type": "Ready", "status": "True"}]
            }
        })
    }

    #[test]
    fn an_object_is_read_whole_but_for_its_managed_fields() {
        let text = node().to_string();
        let Lean(lean) = serde_json::from_str::<Lean<Node>>(&text).expect("a node");
        let mut whole: Node = serde_json::from_str(&text).expect("a node");
        assert!(whole.metadata.managed_fields.is_some());
        whole.metadata.managed_fields = None;
        assert_eq!(lean, whole);
        let labels = lean.metadata.labels.expect("labels");
        assert_eq!(labels["managedFields"], "kept");
    }

    #[test]
    fn keys_with_escapes_and_objects_without_metadata_read_as_they_are() {
        let text = r#"{"metadata":{"name":"p\u0030","man\u0061gedFields":[{"manager":"x"}]},"spec":{"containers":[]}}"#;
        let Lean(pod) = serde_json::from_str::<Lean<Pod>>(text).expect("a pod");
        assert_eq!(pod.metadata.name.as_deref(), Some("p0"));
        assert_eq!(pod.metadata.managed_fields, None);
        let Lean(bare) = serde_json::from_str::<Lean<Pod>>("{}").expect("a pod");
        assert_eq!(bare, Pod::default());
    }

    #[test]
    fn malformed_json_is_still_an_error() {
        for text in [
            r#"{"metadata":{"managedFields":[}}"#,
            r#"{"metadata":7}"#,
            "[]",
        ] {
            assert!(serde_json::from_str::<Lean<Pod>>(text).is_err(), "{text}");
        }
    }

    #[tokio::test]
    async fn the_collection_is_the_same_url() {
        let client = kube::Client::try_from(kube::Config::new(
            "http://127.0.0.1:1".parse().expect("a URL"),
        ))
        .expect("a client");
        let all: Api<Node> = Api::all(client.clone());
        assert_eq!(lean(all).resource_url(), "/api/v1/nodes");
        let namespaced: Api<Pod> = Api::namespaced(client, "kmm");
        assert_eq!(
            lean(namespaced).resource_url(),
            "/api/v1/namespaces/kmm/pods"
        );
    }
}
