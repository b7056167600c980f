//! Errors of the patch appliers and of server-side apply, worded so that a client can act on them.

use std::fmt;

/// Why a JSON Patch, merge patch or strategic merge patch could not be applied.
///
/// The API server turns these into `422 Unprocessable Entity` (or `400` for malformed documents);
/// the message names the operation or location that failed so the user can fix the patch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PatchError {
    /// The patch body does not have the shape its patch type requires (for example a JSON Patch
    /// that is not an array of operations, or a strategic merge patch that is not an object).
    #[error("invalid patch document: {0}")]
    InvalidDocument(String),
    /// One operation of a JSON Patch could not be applied; no operation of the patch took effect.
    #[error("json patch operation {index} ({op}) failed at path \"{path}\": {reason}")]
    OperationFailed {
        /// Position of the failing operation in the patch, counted from 0.
        index: usize,
        /// The operation's `op` (`add`, `remove`, ...).
        op: String,
        /// The operation's `path` (or `from`, when that is what failed).
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// A JSON Patch holds more operations than the server applies (kube-apiserver answers 413).
    #[error("The allowed maximum operations in a JSON patch is {limit}, got {count}")]
    TooManyOperations {
        /// Operations in the patch.
        count: usize,
        /// The most the server applies.
        limit: usize,
    },
    /// The `copy` operations of a JSON Patch copy more than the server allows in all: a few self-doubling copies
    /// would otherwise build a document of gigabytes.
    #[error(
        "json patch operation {index} (copy) would copy more than the {limit} bytes a patch may copy in all"
    )]
    TooMuchCopied {
        /// Position of the copy that passed the limit.
        index: usize,
        /// The most bytes a patch may copy.
        limit: usize,
    },
    /// A strategic merge patch could not be applied at a location of the object.
    #[error("strategic merge patch failed at {path}: {reason}")]
    Strategic {
        /// Dotted path of the field being merged, `.` for the object root.
        path: String,
        /// What went wrong, including the offending directive or value.
        reason: String,
    },
}

/// One field that a server-side apply would have taken from another manager.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Conflict {
    /// Name of the manager that owns the field (`manager` of its managedFields entry).
    pub manager: String,
    /// The contested field in kube-apiserver's notation, e.g. `.spec.replicas` or
    /// `.spec.template.spec.containers[name="app"].image`.
    pub field: String,
    /// How kube-apiserver names the owner in messages: the quoted manager name, its subresource,
    /// and for `Update` owners the API version and time, e.g. `"kubectl-edit" using apps/v1 at 2024-05-01T10:00:00Z`.
    pub manager_label: String,
}

/// Why a server-side apply was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ApplyError {
    /// Fields of the applied configuration are owned by other managers with different values;
    /// the request may be retried with `force` to take them over. Maps to `409 Conflict`.
    Conflicts(Vec<Conflict>),
    /// The applied configuration or the stored managedFields cannot be processed. Maps to `422`/`400`.
    Invalid(String),
}

impl fmt::Display for ApplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApplyError::Invalid(message) => f.write_str(message),
            ApplyError::Conflicts(conflicts) => write_conflicts(f, conflicts),
        }
    }
}

impl std::error::Error for ApplyError {}

/// Words the conflicts the way kube-apiserver does, so that tooling matching on the text keeps working.
fn write_conflicts(f: &mut fmt::Formatter<'_>, conflicts: &[Conflict]) -> fmt::Result {
    if let [only] = conflicts {
        return write!(
            f,
            "Apply failed with 1 conflict: conflict with {}: {}",
            only.manager_label, only.field
        );
    }
    let mut labels: Vec<&str> = conflicts.iter().map(|c| c.manager_label.as_str()).collect();
    labels.sort_unstable();
    labels.dedup();
    let mut lines = Vec::new();
    for label in labels {
        lines.push(format!("conflicts with {label}:"));
        for conflict in conflicts.iter().filter(|c| c.manager_label == label) {
            lines.push(format!("- {}", conflict.field));
        }
    }
    write!(
        f,
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}
