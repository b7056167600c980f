//! SHA-256 digests of what the engine's pods are made of: deterministic pod names and change-detecting hashes that
//! stay the same across engine restarts and releases (unlike `std`'s hashers, whose output is not guaranteed).

use rustls::crypto::hash::Hash;
use rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256;

/// The SHA-256 implementation of the TLS stack the project already links: the transcript hash of a TLS 1.3 suite.
/// The match is evaluated at compile time, so the suite's kind is checked when building, never at run time.
const SHA256: &dyn Hash = match TLS13_AES_128_GCM_SHA256.tls13() {
    Some(suite) => suite.common.hash_provider,
    None => panic!("TLS13_AES_128_GCM_SHA256 is a TLS 1.3 suite"),
};

/// The SHA-256 of `data`, as 64 lower-case hexadecimal digits.
pub fn sha256_hex(data: &[u8]) -> String {
    SHA256
        .hash(data)
        .as_ref()
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
