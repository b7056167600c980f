//! ImageCache rules: the upstream kube-fledged webhook's.

use std::collections::BTreeSet;

use super::{FieldPath, FieldViolation};
use crate::imagecache::ImageCache;

/// Violations of an ImageCache on create.
pub fn validate_image_cache(cache: &ImageCache) -> Vec<FieldViolation> {
    let mut violations = Vec::new();
    for (list_index, list) in cache.spec.cache_spec.iter().enumerate() {
        let images = "spec.cacheSpec".index(list_index).child("images");
        if list.images.is_empty() {
            violations.push(FieldViolation::new(
                images.clone(),
                "list at least one image, or remove this entry of cacheSpec",
            ));
        }
        let mut seen = BTreeSet::new();
        for (index, image) in list.images.iter().enumerate() {
            if !seen.insert(image.as_str()) {
                violations.push(FieldViolation::new(
                    images.index(index),
                    format!("\"{image}\" is already in this list; remove the duplicate"),
                ));
            }
        }
    }
    violations
}

/// Violations of an ImageCache on update. Upstream tracks nodes per list by position, so the
/// number of lists and each list's node selector are fixed once created.
pub fn validate_image_cache_update(old: &ImageCache, new: &ImageCache) -> Vec<FieldViolation> {
    if old.spec == new.spec {
        return Vec::new();
    }
    let mut violations = validate_image_cache(new);
    let (old_lists, new_lists) = (&old.spec.cache_spec, &new.spec.cache_spec);
    if old_lists.len() != new_lists.len() {
        violations.push(FieldViolation::new(
            "spec.cacheSpec",
            format!(
                "the number of lists cannot change (was {}, now {}); edit the images of existing \
                 lists, or create another ImageCache",
                old_lists.len(),
                new_lists.len()
            ),
        ));
        return violations;
    }
    for (index, (before, after)) in old_lists.iter().zip(new_lists).enumerate() {
        let selector = |list: &crate::imagecache::CacheSpecImages| {
            list.node_selector.clone().unwrap_or_default()
        };
        if selector(before) != selector(after) {
            violations.push(FieldViolation::new(
                "spec.cacheSpec".index(index).child("nodeSelector"),
                "a list's nodeSelector cannot change; restore it, or create another ImageCache \
                 for the other nodes",
            ));
        }
    }
    violations
}
