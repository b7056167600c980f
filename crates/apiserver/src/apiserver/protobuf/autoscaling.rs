//! The protobuf messages of `autoscaling/v1` HorizontalPodAutoscalers, which the bundled descriptor set predates,
//! declared here field for field as the upstream `generated.proto` numbers them: `kubectl autoscale` sends the
//! autoscaler it creates in this encoding and never falls back to JSON.

use prost_reflect::prost_types::FileDescriptorProto;
use prost_reflect::prost_types::field_descriptor_proto::Type;

use super::declare::{message, of_message, repeated, scalar};

/// The package the messages are declared in, as [`super::message_for`] names the group's package.
const PACKAGE: &str = "api.autoscaling.v1";

/// The descriptor file of the messages, importing the file that declares `meta.v1` (`meta_file`).
pub(super) fn file(meta_file: &str) -> FileDescriptorProto {
    let meta = |name: &str| format!(".apimachinery.pkg.apis.meta.v1.{name}");
    let own = |name: &str| format!(".{PACKAGE}.{name}");
    FileDescriptorProto {
        name: Some("api/autoscaling/v1/generated.proto".to_owned()),
        package: Some(PACKAGE.to_owned()),
        dependency: vec![meta_file.to_owned()],
        syntax: Some("proto2".to_owned()),
        message_type: vec![
            message(
                "CrossVersionObjectReference",
                vec![
                    scalar("kind", 1, Type::String),
                    scalar("name", 2, Type::String),
                    scalar("apiVersion", 3, Type::String),
                ],
            ),
            message(
                "HorizontalPodAutoscaler",
                vec![
                    of_message("metadata", 1, &meta("ObjectMeta")),
                    of_message("spec", 2, &own("HorizontalPodAutoscalerSpec")),
                    of_message("status", 3, &own("HorizontalPodAutoscalerStatus")),
                ],
            ),
            message(
                "HorizontalPodAutoscalerList",
                vec![
                    of_message("metadata", 1, &meta("ListMeta")),
                    repeated(of_message("items", 2, &own("HorizontalPodAutoscaler"))),
                ],
            ),
            message(
                "HorizontalPodAutoscalerSpec",
                vec![
                    of_message("scaleTargetRef", 1, &own("CrossVersionObjectReference")),
                    scalar("minReplicas", 2, Type::Int32),
                    scalar("maxReplicas", 3, Type::Int32),
                    scalar("targetCPUUtilizationPercentage", 4, Type::Int32),
                ],
            ),
            message(
                "HorizontalPodAutoscalerStatus",
                vec![
                    scalar("observedGeneration", 1, Type::Int64),
                    of_message("lastScaleTime", 2, &meta("Time")),
                    scalar("currentReplicas", 3, Type::Int32),
                    scalar("desiredReplicas", 4, Type::Int32),
                    scalar("currentCPUUtilizationPercentage", 5, Type::Int32),
                ],
            ),
        ],
        ..FileDescriptorProto::default()
    }
}
