//! A reference to one object the console can show, edit or delete, in the words the user reads in confirmations.

use std::fmt;

use super::data::Kind;

/// One object: its kind, namespace (none for cluster-scoped kinds) and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Target {
    /// What it is.
    pub kind: Kind,
    /// Its namespace; `None` for Nodes and NodeModulesConfigs.
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
}

impl Target {
    /// A namespaced object.
    pub fn namespaced(kind: Kind, namespace: &str, name: &str) -> Target {
        Target {
            kind,
            namespace: Some(namespace.to_owned()),
            name: name.to_owned(),
        }
    }

    /// A cluster-scoped object.
    pub fn cluster(kind: Kind, name: &str) -> Target {
        Target {
            kind,
            namespace: None,
            name: name.to_owned(),
        }
    }

    /// `namespace/name`, or the name alone for cluster-scoped objects.
    pub fn path(&self) -> String {
        match &self.namespace {
            Some(namespace) => format!("{namespace}/{}", self.name),
            None => self.name.clone(),
        }
    }
}

impl fmt::Display for Target {
    /// `Module kmm-demo/acme-accel`, as confirmations and messages name it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind, self.path())
    }
}
