//! Names of the installer pods the shim engine creates: one per node, Shim and operation, so two passes never start
//! two installers for one node.

use crate::runtime::digest::sha256_hex;
use kmm_api::shim::names::Operation;

/// The longest object name that is also a valid label value.
const NAME_MAX: usize = 63;

/// Name of the pod doing `operation` for `shim` on `node`: `<node>-<shim>-<operation>`, as upstream names its Jobs.
/// A name longer than 63 characters is cut and ends in a digest of the full name, so that two long node names
/// sharing a prefix never share a pod.
pub(super) fn pod_name(node: &str, shim: &str, operation: Operation) -> String {
    let full = format!("{node}-{shim}-{}", operation.as_str());
    if full.len() <= NAME_MAX {
        return full;
    }
    let digest = &sha256_hex(full.as_bytes())[..10];
    let mut head: String = full.chars().take(NAME_MAX - digest.len() - 1).collect();
    while head.ends_with(|c: char| !c.is_ascii_alphanumeric()) {
        head.pop();
    }
    format!("{head}-{digest}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_are_kept_and_long_ones_cut_to_distinct_valid_names() {
        assert_eq!(
            pod_name("worker-b-2", "spin-v2", Operation::Install),
            "worker-b-2-spin-v2-install"
        );
        let long_a = pod_name(
            &format!("{}a", "n-".repeat(40)),
            "spin-v2",
            Operation::Install,
        );
        let long_b = pod_name(
            &format!("{}b", "n-".repeat(40)),
            "spin-v2",
            Operation::Install,
        );
        for name in [&long_a, &long_b] {
            assert!(name.len() <= NAME_MAX, "{name}");
            assert!(name.starts_with(|c: char| c.is_ascii_alphanumeric()));
            assert!(name.ends_with(|c: char| c.is_ascii_alphanumeric()));
            assert!(!name.contains("--"), "{name}");
        }
        assert_ne!(long_a, long_b);
    }
}
