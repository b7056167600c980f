//! Building blocks for declaring, field for field, the messages of API groups the bundled descriptor set predates.

use prost_reflect::prost_types::field_descriptor_proto::{Label, Type};
use prost_reflect::prost_types::{DescriptorProto, FieldDescriptorProto};

/// A message of `field`s.
pub(super) fn message(name: &str, field: Vec<FieldDescriptorProto>) -> DescriptorProto {
    DescriptorProto {
        name: Some(name.to_owned()),
        field,
        ..DescriptorProto::default()
    }
}

/// An optional scalar field; its JSON name is its name, as in every Kubernetes message.
pub(super) fn scalar(name: &str, number: i32, kind: Type) -> FieldDescriptorProto {
    FieldDescriptorProto {
        name: Some(name.to_owned()),
        json_name: Some(name.to_owned()),
        number: Some(number),
        label: Some(Label::Optional as i32),
        r#type: Some(kind as i32),
        ..FieldDescriptorProto::default()
    }
}

/// An optional field of the message `type_name` (fully qualified, with its leading dot).
pub(super) fn of_message(name: &str, number: i32, type_name: &str) -> FieldDescriptorProto {
    FieldDescriptorProto {
        type_name: Some(type_name.to_owned()),
        ..scalar(name, number, Type::Message)
    }
}

/// The same field, repeated.
pub(super) fn repeated(field: FieldDescriptorProto) -> FieldDescriptorProto {
    FieldDescriptorProto {
        label: Some(Label::Repeated as i32),
        ..field
    }
}
