//! SHA-256 digests of what the engine's pods are made of: deterministic pod names and change-detecting hashes that
//! stay the same across engine restarts and releases (unlike `std`'s hashers, whose output is not guaranteed).

use sha2::{Digest, Sha256};

/// The SHA-256 of `data`, as 64 lower-case hexadecimal digits.
pub(crate) fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_match_the_published_test_vectors() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
