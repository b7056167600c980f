//! Identifiers a real node makes up — machine IDs, container IDs, image digests — derived from names so that they
//! stay the same for the same thing (across restarts of the simulation too) without being stored.

use std::hash::{DefaultHasher, Hash, Hasher};

/// `len` lowercase hex digits determined by `parts`.
pub(super) fn hex(parts: &[&str], len: usize) -> String {
    let mut out = String::with_capacity(len + 16);
    let mut round: u64 = 0;
    while out.len() < len {
        let mut hasher = DefaultHasher::new();
        round.hash(&mut hasher);
        parts.hash(&mut hasher);
        out.push_str(&format!("{:016x}", hasher.finish()));
        round += 1;
    }
    out.truncate(len);
    out
}

/// A UUID (8-4-4-4-12 hex) determined by `parts`.
pub(super) fn uuid(parts: &[&str]) -> String {
    let h = hex(parts, 32);
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// The digest reference (`repository@sha256:…`) a runtime reports as a container's imageID: the registry's
/// `digest` of the image, or one made up from its name for an image the registry does not list (kmm-tui's own).
pub(super) fn image_digest(image: &str, digest: Option<&str>) -> String {
    let repository = match image.rsplit_once('@') {
        Some((repository, _)) => repository,
        None => {
            let last_slash = image.rfind('/').map_or(0, |i| i + 1);
            match image[last_slash..].rfind(':') {
                Some(colon) => &image[..last_slash + colon],
                None => image,
            }
        }
    };
    match digest {
        Some(digest) => format!("{repository}@{digest}"),
        None => format!("{repository}@sha256:{}", hex(&["image", image], 64)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_shaped_like_the_real_ones() {
        assert_eq!(hex(&["a"], 64), hex(&["a"], 64));
        assert_ne!(hex(&["a"], 64), hex(&["b"], 64));
        assert_eq!(hex(&["a"], 64).len(), 64);
        assert_eq!(uuid(&["n"]).len(), 36);
        assert!(
            image_digest("quay.io/org/kmod:5.14", None).starts_with("quay.io/org/kmod@sha256:")
        );
        assert!(
            image_digest("localhost:5000/kmod", None).starts_with("localhost:5000/kmod@sha256:")
        );
        assert_eq!(
            image_digest("quay.io/org/kmod:5.14", Some("sha256:abc")),
            "quay.io/org/kmod@sha256:abc"
        );
    }
}
