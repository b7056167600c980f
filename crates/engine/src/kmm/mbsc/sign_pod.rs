//! The sign pod: kaniko building a generated Dockerfile that copies the unsigned image's module tree into the
//! signing image, runs `sign-file` on each file to sign with the key and certificate secrets, and copies the signed
//! files back over the unsigned image.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    DownwardAPIVolumeFile, DownwardAPIVolumeSource, ObjectFieldSelector, Pod, Volume, VolumeMount,
};
use kube::ResourceExt;

use super::kaniko::{self, PodParts};
use crate::runtime::context::Error;
use kmm_api::kmm::labels;
use kmm_api::kmm::{BuildSignAction, ModuleBuildSignConfig, ModuleBuildSignImage, Sign};

/// Where the key secret is mounted.
const KEY_DIR: &str = "/run/secrets/key";

/// Where the certificate secret is mounted.
const CERT_DIR: &str = "/run/secrets/cert";

/// Where the signing stage keeps the module tree while it signs it.
const SIGN_ROOT: &str = "/signroot";

/// The keys and files of one sign: the images involved and the key and certificate file names inside their
/// secrets (`key` or `key.pem`, `cert` or `cert.pem`).
pub(super) struct Signing<'a> {
    /// The image holding `sign-file`.
    pub signer_image: &'a str,
    /// The private key's file name in the key secret.
    pub key_file: &'a str,
    /// The certificate's file name in the certificate secret.
    pub cert_file: &'a str,
}

/// The image whose modules are signed: the entry's own image when it is also built, else `sign.unsignedImage`.
pub(super) fn unsigned_image<'e>(
    entry: &'e ModuleBuildSignImage,
    sign: &'e Sign,
) -> Result<&'e str, Error> {
    if entry.spec.build.is_some() {
        return Ok(&entry.spec.image);
    }
    sign.unsigned_image
        .as_deref()
        .filter(|image| !image.is_empty())
        .ok_or_else(|| {
            Error::Invalid(format!(
                "image {} has a sign section without unsignedImage and no build section to produce it",
                entry.spec.image
            ))
        })
}

/// The Dockerfile that signs `files` (paths or shell globs under `dir_name`) of `unsigned`.
pub(super) fn dockerfile(
    entry: &ModuleBuildSignImage,
    sign: &Sign,
    signing: &Signing,
) -> Result<String, Error> {
    let image = &entry.spec.image;
    let unsigned = word(image, "unsigned image", unsigned_image(entry, sign)?)?;
    let signer = word(image, "signing image", signing.signer_image)?;
    let dir = word(image, "dirName", entry.spec.dir_name.trim_end_matches('/'))?;
    let key = format!("{KEY_DIR}/{}", signing.key_file);
    let cert = format!("{CERT_DIR}/{}", signing.cert_file);
    if sign.files_to_sign.is_empty() {
        return Err(Error::Invalid(format!(
            "image {image} has a sign section without filesToSign"
        )));
    }
    let mut text = format!(
        "FROM {unsigned} AS source\n\nFROM {signer} AS signimage\nUSER 0\nCOPY --from=source {dir} {SIGN_ROOT}{dir}\n"
    );
    for file in &sign.files_to_sign {
        let file = word(image, "file to sign", file)?;
        if !file.starts_with(&format!("{dir}/")) {
            return Err(Error::Invalid(format!(
                "image {image}: file to sign {file} is not under dirName {}",
                entry.spec.dir_name
            )));
        }
        text.push_str(&format!(
            "RUN for file in {SIGN_ROOT}{file}; do sign-file sha256 {key} {cert} \"$file\"; done\n"
        ));
    }
    text.push_str(&format!(
        "\nFROM source\nCOPY --from=signimage {SIGN_ROOT}{dir} {dir}\n"
    ));
    Ok(text)
}

/// A value written into the Dockerfile as one word: no spaces or control characters that would change its
/// structure.
fn word<'w>(image: &str, what: &str, value: &'w str) -> Result<&'w str, Error> {
    if value.is_empty() || value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(Error::Invalid(format!(
            "image {image}: {what} {value:?} is empty or holds spaces or control characters"
        )));
    }
    Ok(value)
}

/// The pod signing `entry`'s image, with `dockerfile` kept in its `dockerfile` annotation and mounted from there.
pub(super) fn sign_pod(
    mbsc: &ModuleBuildSignConfig,
    entry: &ModuleBuildSignImage,
    sign: &Sign,
    builder_image: &str,
    dockerfile: String,
) -> Result<Pod, Error> {
    let mut args = kaniko::workspace_args();
    args.extend(kaniko::destination_args(
        &entry.spec.image,
        mbsc.spec.push_built_image,
        entry.spec.registry_tls.as_ref(),
    ));
    args.extend(kaniko::pull_args(sign.unsigned_image_registry_tls.as_ref()));
    let volumes = vec![
        dockerfile_volume(),
        kaniko::secret_mount("signing-key", &sign.key_secret.name, None, KEY_DIR),
        kaniko::secret_mount("signing-cert", &sign.cert_secret.name, None, CERT_DIR),
    ];
    kaniko::pod(
        mbsc,
        entry,
        PodParts {
            name: kaniko::pod_name(
                &mbsc.name_any(),
                BuildSignAction::SignImage,
                &entry.spec.kernel_version,
            ),
            builder_image: builder_image.to_owned(),
            args,
            annotations: BTreeMap::from([(labels::DOCKERFILE.to_owned(), dockerfile)]),
            volumes,
            node_selector: BTreeMap::new(),
        },
    )
}

/// The pod's `dockerfile` annotation as `/workspace/Dockerfile`.
fn dockerfile_volume() -> (Volume, VolumeMount) {
    (
        Volume {
            name: "dockerfile".to_owned(),
            downward_api: Some(DownwardAPIVolumeSource {
                items: Some(vec![DownwardAPIVolumeFile {
                    path: "Dockerfile".to_owned(),
                    field_ref: Some(ObjectFieldSelector {
                        field_path: format!("metadata.annotations['{}']", labels::DOCKERFILE),
                        ..Default::default()
                    }),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        },
        VolumeMount {
            name: "dockerfile".to_owned(),
            mount_path: kaniko::WORKSPACE.to_owned(),
            read_only: Some(true),
            ..Default::default()
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(build: bool) -> (ModuleBuildSignImage, Sign) {
        let mut value = serde_json::json!({
            "image": "quay.io/acme/kmod:5.14",
            "kernelVersion": "5.14.0",
            "action": "SignImage",
        });
        if build {
            value["build"] = serde_json::json!({"dockerfileConfigMap": {"name": "df"}});
        }
        let sign = serde_json::from_value(serde_json::json!({
            "unsignedImage": "quay.io/acme/kmod:unsigned",
            "keySecret": {"name": "key"},
            "certSecret": {"name": "cert"},
            "filesToSign": ["/opt/lib/modules/5.14.0/kmod.ko", "/opt/lib/modules/5.14.0/extra/*.ko"],
        }))
        .expect("sign");
        (serde_json::from_value(value).expect("entry"), sign)
    }

    const SIGNING: Signing = Signing {
        signer_image: "signer:1",
        key_file: "key.pem",
        cert_file: "cert",
    };

    #[test]
    fn the_dockerfile_signs_every_file_of_the_unsigned_image() {
        let (entry, sign) = entry(false);
        let text = dockerfile(&entry, &sign, &SIGNING).expect("dockerfile");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "FROM quay.io/acme/kmod:unsigned AS source");
        assert!(lines.contains(&"FROM signer:1 AS signimage"));
        assert!(lines.contains(&"COPY --from=source /opt /signroot/opt"));
        assert!(lines.contains(
            &"RUN for file in /signroot/opt/lib/modules/5.14.0/extra/*.ko; do sign-file sha256 /run/secrets/key/key.pem /run/secrets/cert/cert \"$file\"; done"
        ));
        assert_eq!(
            &lines[lines.len() - 2..],
            ["FROM source", "COPY --from=signimage /signroot/opt /opt"]
        );
    }

    #[test]
    fn a_built_image_is_signed_from_itself() {
        let (entry, sign) = entry(true);
        let text = dockerfile(&entry, &sign, &SIGNING).expect("dockerfile");
        assert!(text.starts_with("FROM quay.io/acme/kmod:5.14 AS source\n"));
    }

    #[test]
    fn files_outside_dir_name_or_breaking_the_dockerfile_are_refused() {
        let (entry, mut sign) = entry(false);
        sign.files_to_sign = vec!["/lib/modules/kmod.ko".into()];
        assert!(dockerfile(&entry, &sign, &SIGNING).is_err());
        sign.files_to_sign = vec!["/opt/kmod.ko\nRUN rm -rf /".into()];
        assert!(dockerfile(&entry, &sign, &SIGNING).is_err());
        sign.files_to_sign.clear();
        assert!(dockerfile(&entry, &sign, &SIGNING).is_err());
        sign.files_to_sign = vec!["/opt/kmod.ko".into()];
        sign.unsigned_image = None;
        assert!(dockerfile(&entry, &sign, &SIGNING).is_err());
    }
}
