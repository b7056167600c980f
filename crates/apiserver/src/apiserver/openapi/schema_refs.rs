//! Where an OpenAPI v3 document keeps its schemas: the one path every part of the document generation agrees on,
//! kept apart so the schema generators and their post-processing can share it without depending on each other.

/// Where OpenAPI v3 documents keep their schemas, as `$ref`s name them.
pub(super) const V3_PREFIX: &str = "#/components/schemas/";
