//! The typed kinds against upstream's CRDs and samples, and the admission rules one table each.

mod samples;
mod schema;
mod validation;
