//! Image references must pin what they pull.

use super::FieldViolation;

/// Whether `image` names a tag (`repo:tag`) or a digest (`repo@sha256:...`).
///
/// A colon that belongs to a registry port (`host:5000/repo`) is not a tag.
pub(crate) fn has_tag_or_digest(image: &str) -> bool {
    let last_component = image.rsplit('/').next().unwrap_or(image);
    image.contains('@') || last_component.contains(':')
}

/// A violation of `field` unless `image` carries a tag or digest.
pub(crate) fn require_tag_or_digest(field: String, image: &str) -> Option<FieldViolation> {
    (!has_tag_or_digest(image)).then(|| {
        FieldViolation::new(
            field,
            format!(
                "image \"{image}\" has neither a tag nor a digest; append \":<tag>\" \
                 (e.g. \":$KERNEL_FULL_VERSION\") or \"@sha256:<digest>\""
            ),
        )
    })
}
