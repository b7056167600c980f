//! The key the store files objects under: a resource's group and plural, whatever version a client speaks. It
//! lives with the store so the store stands on its own; the API server's registry maps resources to these keys.

use std::sync::Arc;

/// Identifies a resource in the store independently of its version (`apps/deployments`, `/pods`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourceKey(pub Arc<str>);

impl ResourceKey {
    /// Build the key from group and plural.
    pub fn new(group: &str, plural: &str) -> Self {
        Self(Arc::from(format!("{group}/{plural}")))
    }

    /// The API group part.
    pub fn group(&self) -> &str {
        self.0.split_once('/').map(|(g, _)| g).unwrap_or("")
    }

    /// The plural resource part.
    pub fn plural(&self) -> &str {
        self.0.split_once('/').map(|(_, p)| p).unwrap_or(&self.0)
    }
}

impl std::fmt::Display for ResourceKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
