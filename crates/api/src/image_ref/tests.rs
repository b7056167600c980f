use proptest::prelude::*;

use super::*;

const SHA: &str = "sha256:7cc4b5aefd1d0cadf8d97d4350462ba51c694ebca145b08d7d41b41acc8db5aa";

/// What a reference reads as: its normalised name, or the reason it is invalid.
fn read(reference: &str) -> Result<String, String> {
    ImageRef::parse(reference)
        .map(|r| r.normalized())
        .map_err(|e| e.reason().to_string())
}

#[test]
fn references_normalise_as_containerd_reads_them() {
    let valid = [
        ("busybox", "docker.io/library/busybox:latest"),
        ("busybox:1.36", "docker.io/library/busybox:1.36"),
        ("library/busybox:1.36", "docker.io/library/busybox:1.36"),
        ("docker.io/busybox:1.36", "docker.io/library/busybox:1.36"),
        (
            "docker.io/library/busybox:1.36",
            "docker.io/library/busybox:1.36",
        ),
        (
            "index.docker.io/busybox",
            "docker.io/library/busybox:latest",
        ),
        ("clux/blog:0.1.0", "docker.io/clux/blog:0.1.0"),
        (
            "quay.io/org/kmod:5.14.0-284.el9_2.x86_64",
            "quay.io/org/kmod:5.14.0-284.el9_2.x86_64",
        ),
        ("quay.io/busybox", "quay.io/busybox:latest"),
        ("localhost/app", "localhost/app:latest"),
        ("localhost:5000/app:v1", "localhost:5000/app:v1"),
        ("registry.local:5000/a/b/c:1", "registry.local:5000/a/b/c:1"),
        ("10.0.0.1:5000/app", "10.0.0.1:5000/app:latest"),
        ("[::1]:5000/app:2", "[::1]:5000/app:2"),
        (
            "Registry.Example.com/app",
            "Registry.Example.com/app:latest",
        ),
        (
            "my-app__x_z/a--b.c:TAG_1.0-rc",
            "docker.io/my-app__x_z/a--b.c:TAG_1.0-rc",
        ),
        (
            &format!("busybox@{SHA}"),
            &format!("docker.io/library/busybox@{SHA}"),
        ),
        (
            &format!("busybox:1.36@{SHA}"),
            &format!("docker.io/library/busybox@{SHA}"),
        ),
        ("a_b.io/app", "a_b.io/app:latest"),
    ];
    for (reference, normalised) in valid {
        assert_eq!(read(reference), Ok(normalised.to_owned()), "{reference}");
    }
    let format = "invalid reference format";
    let invalid = [
        ("", format.to_owned()),
        ("not a valid image!!", format.to_owned()),
        ("busybox!!", format.to_owned()),
        (" busybox", format.to_owned()),
        ("quay.io//app", format.to_owned()),
        ("quay.io/a..b", format.to_owned()),
        ("quay.io/a___b", format.to_owned()),
        ("quay.io/-app", format.to_owned()),
        ("busybox:", format.to_owned()),
        ("busybox:-1", format.to_owned()),
        ("busybox:1:2", format.to_owned()),
        ("busybox@sha256:abc", format.to_owned()),
        ("quay.io:port/app", format.to_owned()),
        (
            "BUSYBOX",
            "invalid reference format: repository name (library/BUSYBOX) must be lowercase"
                .to_owned(),
        ),
        (
            "quay.io/Org/app:1",
            "invalid reference format: repository name (Org/app) must be lowercase".to_owned(),
        ),
        ("A_B/app", "repository name must be lowercase".to_owned()),
        (&format!("busybox:{}", "x".repeat(129)), format.to_owned()),
        (
            &format!("quay.io/{}", "a".repeat(250)),
            "repository name must not be more than 255 characters".to_owned(),
        ),
        (
            &format!("busybox@sha256:{}", "a".repeat(63)),
            "invalid checksum digest length".to_owned(),
        ),
        (
            &format!("busybox@sha256:{}", "A".repeat(64)),
            "invalid checksum digest format".to_owned(),
        ),
        (
            &format!("busybox@md5:{}", "a".repeat(32)),
            "unsupported digest algorithm".to_owned(),
        ),
        (
            &"a".repeat(64),
            format!(
                "invalid repository name ({}), cannot specify 64-byte hexadecimal strings",
                "a".repeat(64)
            ),
        ),
    ];
    for (reference, reason) in invalid {
        assert_eq!(read(reference), Err(reason), "{reference:?}");
    }
}

#[test]
fn the_parts_keep_tag_and_digest() {
    let image = ImageRef::parse(&format!("localhost:5000/app:1.2@{SHA}")).expect("valid");
    assert_eq!(image.domain(), "localhost:5000");
    assert_eq!(image.path(), "app");
    assert_eq!(image.tag(), Some("1.2"));
    assert_eq!(image.digest(), Some(SHA));
    assert_eq!(image.repository(), "localhost:5000/app");
    assert_eq!(image.to_string(), image.normalized());
}

#[test]
fn the_error_is_worded_as_the_kubelet_words_it() {
    let error = ImageRef::parse("not a valid image!!").expect_err("invalid");
    assert_eq!(
        error.to_string(),
        r#"Failed to apply default image tag "not a valid image!!": couldn't parse image reference "not a valid image!!": invalid reference format"#
    );
    assert_eq!(error.reference(), "not a valid image!!");
}

#[test]
fn comparison_keys_match_the_same_image_and_keep_invalid_text() {
    assert_eq!(
        comparison_key("busybox:1.36"),
        comparison_key("docker.io/library/busybox:1.36")
    );
    assert_ne!(
        comparison_key("busybox:1.36"),
        comparison_key("busybox:1.3")
    );
    assert_eq!(comparison_key("Not Valid"), "Not Valid");
}

proptest! {
    #[test]
    fn parsing_never_panics_and_normalising_is_idempotent(reference in "[a-zA-Z0-9./:@_\\-\\[\\] !]{0,80}") {
        if let Ok(image) = ImageRef::parse(&reference) {
            let normalised = image.normalized();
            let again = ImageRef::parse(&normalised).map(|i| i.normalized());
            prop_assert_eq!(again, Ok(normalised));
        }
    }

    #[test]
    fn well_formed_references_parse_and_normalise_idempotently(
        domain in proptest::option::of("[a-z0-9]{1,8}\\.[a-z]{2,3}(:[0-9]{1,5})?"),
        path in "[a-z0-9]{1,6}([._-][a-z0-9]{1,6}){0,2}(/[a-z0-9]{1,6}){0,2}",
        tag in proptest::option::of("[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}"),
        digest in proptest::option::of("[a-f0-9]{64}"),
    ) {
        let mut reference = domain.map(|d| format!("{d}/")).unwrap_or_default() + &path;
        if let Some(tag) = &tag {
            reference = format!("{reference}:{tag}");
        }
        if let Some(digest) = &digest {
            reference = format!("{reference}@sha256:{digest}");
        }
        let image = ImageRef::parse(&reference);
        prop_assert!(image.is_ok(), "{} did not parse: {:?}", reference, image);
        let normalised = image.map(|i| i.normalized()).unwrap_or_default();
        let again = ImageRef::parse(&normalised).map(|i| i.normalized());
        prop_assert_eq!(again, Ok(normalised));
    }
}
