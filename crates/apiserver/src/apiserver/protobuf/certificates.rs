//! The protobuf messages of `certificates.k8s.io/v1` CertificateSigningRequests, which the bundled descriptor set
//! predates, declared here field for field as the upstream `generated.proto` numbers them: `kubectl certificate
//! approve` sends the request it approves in this encoding and never falls back to JSON.

use prost_reflect::prost_types::field_descriptor_proto::Type;
use prost_reflect::prost_types::{DescriptorProto, FileDescriptorProto, MessageOptions};

use super::declare::{message, of_message, repeated, scalar};

/// The package the messages are declared in, as [`super::message_for`] names the group's package.
const PACKAGE: &str = "api.certificates.v1";

/// The descriptor file of the messages, importing the file that declares `meta.v1` (`meta_file`).
pub(super) fn file(meta_file: &str) -> FileDescriptorProto {
    let meta = |name: &str| format!(".apimachinery.pkg.apis.meta.v1.{name}");
    let own = |name: &str| format!(".{PACKAGE}.{name}");
    let mut spec = message(
        "CertificateSigningRequestSpec",
        vec![
            scalar("request", 1, Type::Bytes),
            scalar("signerName", 7, Type::String),
            scalar("expirationSeconds", 8, Type::Int32),
            repeated(scalar("usages", 5, Type::String)),
            scalar("username", 2, Type::String),
            scalar("uid", 3, Type::String),
            repeated(scalar("groups", 4, Type::String)),
            repeated(of_message(
                "extra",
                6,
                &own("CertificateSigningRequestSpec.ExtraEntry"),
            )),
        ],
    );
    spec.nested_type.push(DescriptorProto {
        options: Some(MessageOptions {
            map_entry: Some(true),
            ..MessageOptions::default()
        }),
        ..message(
            "ExtraEntry",
            vec![
                scalar("key", 1, Type::String),
                of_message("value", 2, &own("ExtraValue")),
            ],
        )
    });
    FileDescriptorProto {
        name: Some("api/certificates/v1/generated.proto".to_owned()),
        package: Some(PACKAGE.to_owned()),
        dependency: vec![meta_file.to_owned()],
        syntax: Some("proto2".to_owned()),
        message_type: vec![
            message(
                "CertificateSigningRequest",
                vec![
                    of_message("metadata", 1, &meta("ObjectMeta")),
                    of_message("spec", 2, &own("CertificateSigningRequestSpec")),
                    of_message("status", 3, &own("CertificateSigningRequestStatus")),
                ],
            ),
            message(
                "CertificateSigningRequestCondition",
                vec![
                    scalar("type", 1, Type::String),
                    scalar("status", 6, Type::String),
                    scalar("reason", 2, Type::String),
                    scalar("message", 3, Type::String),
                    of_message("lastUpdateTime", 4, &meta("Time")),
                    of_message("lastTransitionTime", 5, &meta("Time")),
                ],
            ),
            message(
                "CertificateSigningRequestList",
                vec![
                    of_message("metadata", 1, &meta("ListMeta")),
                    repeated(of_message("items", 2, &own("CertificateSigningRequest"))),
                ],
            ),
            spec,
            message(
                "CertificateSigningRequestStatus",
                vec![
                    repeated(of_message(
                        "conditions",
                        1,
                        &own("CertificateSigningRequestCondition"),
                    )),
                    scalar("certificate", 2, Type::Bytes),
                ],
            ),
            message(
                "ExtraValue",
                vec![repeated(scalar("items", 1, Type::String))],
            ),
        ],
        ..FileDescriptorProto::default()
    }
}
