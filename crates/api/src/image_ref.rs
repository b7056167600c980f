//! Image references read the way the kubelet and containerd read them, so that every layer agrees on when two
//! names are the same image and on which names are no image at all.
//!
//! The grammar is the reference grammar of the OCI distribution tools: an optional domain (host names, IPv4 or
//! bracketed IPv6 addresses, an optional port), a path of lowercase alphanumeric components joined by `/` (inside a
//! component, runs of letters and digits are joined by `.`, `_`, `__` or dashes), an optional tag (a word
//! character, then up to 127 word characters, dots and dashes) and an optional digest (`algorithm:hex`).
//!
//! Normalisation is containerd's: a reference whose first component is not a domain (no `.` or `:`, not
//! `localhost`, all lowercase) lives on `docker.io`; a one-component Docker Hub path gains `library/`; no tag and no
//! digest means `:latest`; a reference with both a tag and a digest resolves by its digest alone (the tag is kept
//! in the parsed [`ImageRef`] but not in [`ImageRef::normalized`], as containerd stores and reports the image).

use std::fmt;

/// Docker Hub, where references without a domain live.
const DEFAULT_DOMAIN: &str = "docker.io";
/// Docker Hub's old name, read as [`DEFAULT_DOMAIN`].
const LEGACY_DEFAULT_DOMAIN: &str = "index.docker.io";
/// The namespace of Docker Hub's official images.
const OFFICIAL_PREFIX: &str = "library/";
/// The tag of a reference that names none.
const DEFAULT_TAG: &str = "latest";
/// Longest repository name (domain and path) the grammar accepts.
const NAME_MAX_LEN: usize = 255;
/// Longest tag the grammar accepts.
const TAG_MAX_LEN: usize = 128;
/// Digest algorithms the runtime can verify, with the length of their hex encoding.
const DIGEST_ALGORITHMS: [(&str, usize); 3] = [("sha256", 64), ("sha384", 96), ("sha512", 128)];

/// A parsed, valid image reference: what a runtime pulls when a container names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ImageRef {
    domain: String,
    path: String,
    tag: Option<String>,
    digest: Option<String>,
}

impl ImageRef {
    /// Read `reference` as the kubelet does before it asks the runtime for the image; the error is what the
    /// kubelet reports for a container whose image is no reference.
    pub fn parse(reference: &str) -> Result<Self, InvalidImageRef> {
        let invalid = |reason| InvalidImageRef {
            reference: reference.to_owned(),
            reason,
        };
        if is_hex_identifier(reference) {
            return Err(invalid(InvalidReason::HexIdentifier(reference.to_owned())));
        }
        let (domain, remainder) = split_domain(reference);
        let remote = remainder.split(':').next().unwrap_or_default();
        if remote.to_lowercase() != remote {
            return Err(invalid(InvalidReason::UppercaseRepository(
                remote.to_owned(),
            )));
        }
        let joined = format!("{domain}/{remainder}");
        let Some(parts) = Parts::of(&joined) else {
            let reason = if Parts::of(&joined.to_lowercase()).is_some() {
                InvalidReason::UppercaseName
            } else {
                InvalidReason::Format
            };
            return Err(invalid(reason));
        };
        if parts.name_len > NAME_MAX_LEN {
            return Err(invalid(InvalidReason::NameTooLong));
        }
        if let Some(digest) = parts.digest {
            check_digest(digest).map_err(invalid)?;
        }
        Ok(Self {
            domain: parts.domain.to_owned(),
            path: parts.path.to_owned(),
            tag: parts.tag.map(str::to_owned),
            digest: parts.digest.map(str::to_owned),
        })
    }

    /// The registry host (with its port): `docker.io` for Docker Hub. Empty only for the rare reference whose
    /// first component reads as a path component but not as a host (such as `a_b.io/app`).
    pub fn domain(&self) -> &str {
        &self.domain
    }

    /// The repository path inside the registry, `library/busybox` for Docker Hub's `busybox`.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The tag the reference names, if any (also when it names a digest too).
    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    /// The digest (`sha256:…`) the reference names, if any.
    pub fn digest(&self) -> Option<&str> {
        self.digest.as_deref()
    }

    /// The repository, domain and path, without tag or digest: what every tag of an image shares.
    pub fn repository(&self) -> String {
        if self.domain.is_empty() {
            self.path.clone()
        } else {
            format!("{}/{}", self.domain, self.path)
        }
    }

    /// The full name containerd stores and reports the image under: the repository with the digest when there
    /// is one, else with the tag (`latest` when none is named).
    pub fn normalized(&self) -> String {
        let repository = self.repository();
        match (&self.digest, &self.tag) {
            (Some(digest), _) => format!("{repository}@{digest}"),
            (None, Some(tag)) => format!("{repository}:{tag}"),
            (None, None) => format!("{repository}:{DEFAULT_TAG}"),
        }
    }
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.normalized())
    }
}

/// The name stores, caches and registries compare images by: the [normalised](ImageRef::normalized) reference,
/// or `reference` unchanged when it does not parse. No runtime ever pulls an unparsable reference, so keeping it
/// as written only ever matches itself.
pub fn comparison_key(reference: &str) -> String {
    ImageRef::parse(reference).map_or_else(|_| reference.to_owned(), |r| r.normalized())
}

/// A container image that is no reference, worded as the kubelet words it in the container's waiting state
/// (reason `InvalidImageName`) and in its `InspectFailed` event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidImageRef {
    reference: String,
    reason: InvalidReason,
}

impl InvalidImageRef {
    /// The reference as it was written.
    pub fn reference(&self) -> &str {
        &self.reference
    }

    /// Which rule it breaks.
    pub fn reason(&self) -> &InvalidReason {
        &self.reason
    }
}

impl fmt::Display for InvalidImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let reference = &self.reference;
        write!(
            f,
            "Failed to apply default image tag {reference:?}: couldn't parse image reference {reference:?}: {}",
            self.reason
        )
    }
}

impl std::error::Error for InvalidImageRef {}

/// The rule a reference breaks; each displays as the reference grammar's own error text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InvalidReason {
    /// It does not follow the grammar.
    Format,
    /// The repository path (given) has uppercase letters.
    UppercaseRepository(String),
    /// It would follow the grammar in lowercase.
    UppercaseName,
    /// It is a bare 64-digit image ID (given), not a name.
    HexIdentifier(String),
    /// The repository name is longer than 255 characters.
    NameTooLong,
    /// The digest is malformed.
    DigestFormat,
    /// The digest's hex part has the wrong length for its algorithm.
    DigestLength,
    /// The digest's algorithm is unknown.
    DigestUnsupported,
}

impl fmt::Display for InvalidReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Format => f.write_str("invalid reference format"),
            Self::UppercaseRepository(remote) => write!(
                f,
                "invalid reference format: repository name ({remote}) must be lowercase"
            ),
            Self::UppercaseName => f.write_str("repository name must be lowercase"),
            Self::HexIdentifier(id) => write!(
                f,
                "invalid repository name ({id}), cannot specify 64-byte hexadecimal strings"
            ),
            Self::NameTooLong => write!(
                f,
                "repository name must not be more than {NAME_MAX_LEN} characters"
            ),
            Self::DigestFormat => f.write_str("invalid checksum digest format"),
            Self::DigestLength => f.write_str("invalid checksum digest length"),
            Self::DigestUnsupported => f.write_str("unsupported digest algorithm"),
        }
    }
}

/// The pieces of a fully qualified reference that follows the grammar.
struct Parts<'a> {
    domain: &'a str,
    path: &'a str,
    /// Length of the name (domain, `/` and path) as written.
    name_len: usize,
    tag: Option<&'a str>,
    digest: Option<&'a str>,
}

impl<'a> Parts<'a> {
    /// Split `reference` along the grammar, or `None` when it does not follow it.
    fn of(reference: &'a str) -> Option<Self> {
        let (name_and_tag, digest) = match reference.split_once('@') {
            Some((name, digest)) => (name, Some(digest)),
            None => (reference, None),
        };
        if digest.is_some_and(|d| !is_digest_shape(d)) {
            return None;
        }
        let last_slash = name_and_tag.rfind('/').map_or(0, |i| i + 1);
        let (name, tag) = match name_and_tag[last_slash..].rfind(':') {
            Some(colon) => (
                &name_and_tag[..last_slash + colon],
                Some(&name_and_tag[last_slash + colon + 1..]),
            ),
            None => (name_and_tag, None),
        };
        if tag.is_some_and(|t| !is_tag(t)) {
            return None;
        }
        let (domain, path) = match name.split_once('/') {
            Some((first, rest)) if is_path(rest) && is_domain(first) => (first, rest),
            _ if is_path(name) => ("", name),
            _ => return None,
        };
        Some(Self {
            domain,
            path,
            name_len: name.len(),
            tag,
            digest,
        })
    }
}

/// Split off the domain as the runtime does: the first component is a domain when it has a `.` or `:`, is
/// `localhost`, or has uppercase letters (which no path may have); otherwise the reference is on Docker Hub,
/// where one-component paths are official images.
fn split_domain(reference: &str) -> (&str, String) {
    let (domain, remainder) = match reference.split_once('/') {
        Some((first, rest))
            if first.contains(['.', ':'])
                || first == "localhost"
                || first.to_lowercase() != first =>
        {
            (first, rest)
        }
        _ => (DEFAULT_DOMAIN, reference),
    };
    let domain = if domain == LEGACY_DEFAULT_DOMAIN {
        DEFAULT_DOMAIN
    } else {
        domain
    };
    if domain == DEFAULT_DOMAIN && !remainder.contains('/') {
        (domain, format!("{OFFICIAL_PREFIX}{remainder}"))
    } else {
        (domain, remainder.to_owned())
    }
}

/// Whether `text` is a bare image ID: 64 lowercase hex digits.
fn is_hex_identifier(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A host name, IPv4 address or bracketed IPv6 address, with an optional `:port`.
fn is_domain(text: &str) -> bool {
    let (host, port) = if text.starts_with('[') {
        let end = text.find(']').map_or(text.len(), |i| i + 1);
        let (host, after) = text.split_at(end);
        (host, (!after.is_empty()).then_some(after))
    } else {
        match text.find(':') {
            Some(i) => (&text[..i], Some(&text[i..])),
            None => (text, None),
        }
    };
    let port_ok = port.is_none_or(|p| {
        p.strip_prefix(':')
            .is_some_and(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
    });
    let host_ok = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(address) => {
            !address.is_empty() && address.bytes().all(|b| b.is_ascii_hexdigit() || b == b':')
        }
        None => host.split('.').all(is_domain_component),
    };
    host_ok && port_ok
}

/// One label of a host name: letters and digits, with dashes inside but not at either end.
fn is_domain_component(label: &str) -> bool {
    !label.is_empty()
        && label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && !label.starts_with('-')
        && !label.ends_with('-')
}

/// Path components joined by `/`.
fn is_path(text: &str) -> bool {
    text.split('/').all(is_path_component)
}

/// Runs of lowercase letters and digits joined by one `.`, one `_`, `__`, or one or more dashes.
fn is_path_component(component: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    component.starts_with(alnum)
        && component.ends_with(alnum)
        && component.split(alnum).all(|separator| {
            matches!(separator, "" | "." | "_" | "__") || separator.bytes().all(|b| b == b'-')
        })
}

/// A word character, then up to 127 word characters, dots and dashes.
fn is_tag(tag: &str) -> bool {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    tag.len() <= TAG_MAX_LEN
        && tag.bytes().next().is_some_and(word)
        && tag.bytes().all(|b| word(b) || b == b'.' || b == b'-')
}

/// The digest's shape in the reference grammar: an algorithm (letter-led alphanumeric parts joined by `-`, `_`,
/// `+` or `.`), a colon, at least 32 hex digits.
fn is_digest_shape(digest: &str) -> bool {
    let Some((algorithm, hex)) = digest.split_once(':') else {
        return false;
    };
    let algorithm_ok = algorithm.split(['-', '_', '+', '.']).all(|part| {
        part.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
            && part.bytes().all(|b| b.is_ascii_alphanumeric())
    });
    algorithm_ok && hex.len() >= 32 && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Check a digest of the right shape as the runtime does before it trusts it: a known algorithm with a lowercase
/// hex encoding of that algorithm's length.
fn check_digest(digest: &str) -> Result<(), InvalidReason> {
    let (algorithm, hex) = digest.split_once(':').unwrap_or((digest, ""));
    let Some((_, len)) = DIGEST_ALGORITHMS
        .iter()
        .find(|(name, _)| *name == algorithm)
    else {
        let registered_shape = algorithm.split(['.', '+', '_', '-']).all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        });
        return Err(if registered_shape {
            InvalidReason::DigestUnsupported
        } else {
            InvalidReason::DigestFormat
        });
    };
    if hex.len() != *len {
        return Err(InvalidReason::DigestLength);
    }
    if !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(InvalidReason::DigestFormat);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
