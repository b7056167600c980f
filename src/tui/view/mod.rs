//! View models: the rows each pane shows, computed from [`ClusterData`](super::data::ClusterData) by pure functions.
//! They are rebuilt when data changes, never while drawing, so a frame only slices rows that already exist.

pub mod cache_detail;
pub mod cache_images;
pub mod caches;
pub mod consequences;
pub mod day0;
pub mod day0_detail;
pub mod devices;
pub mod engine;
pub mod events;
pub mod images;
pub mod module_detail;
pub mod modules;
pub mod nodes;
pub mod preflight;
pub mod shim_detail;
pub mod shims;
pub mod summary;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use kmm_api::age::human_duration;

/// How healthy a row is; panes colour rows by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Health {
    /// Where it should be.
    Ok,
    /// Work is under way.
    Progressing,
    /// Not where it should be, and waiting on something (an image, a node).
    Warning,
    /// Failed; needs a person.
    Error,
    /// Nothing reported yet.
    Unknown,
}

/// The condition of `type_` among `conditions`.
pub fn condition<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|condition| condition.type_ == type_)
}

/// How long ago `from` was, as kubectl prints ages (`45s`, `3m20s`, `5h10m`, `3d4h`); `-` when
/// the object carries no time.
pub fn age(from: Option<jiff::Timestamp>, now: jiff::Timestamp) -> String {
    match from {
        Some(from) => human_duration(now.duration_since(from)),
        None => "-".to_owned(),
    }
}

/// Whether `needle` (already lower-case) appears in any of `fields`, ignoring case: the `/` filter's rule.
pub fn matches_filter(needle: &str, fields: &[&str]) -> bool {
    needle.is_empty()
        || fields
            .iter()
            .any(|field| field.to_lowercase().contains(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_like_kubectl() {
        let now = jiff::Timestamp::from_second(1_000_000).expect("valid");
        let ago = |s: i64| Some(jiff::Timestamp::from_second(1_000_000 - s).expect("valid"));
        assert_eq!(age(ago(5), now), "5s");
        assert_eq!(age(ago(600), now), "10m");
        assert_eq!(age(ago(5 * 3600), now), "5h");
        assert_eq!(age(ago(3 * 86400), now), "3d");
        assert_eq!(age(None, now), "-");
        assert_eq!(age(ago(200), now), "3m20s");
        assert_eq!(age(ago(5 * 3600 + 600), now), "5h10m");
        assert_eq!(age(ago(3 * 86400 + 4 * 3600), now), "3d4h");
    }

    #[test]
    fn the_filter_ignores_case_and_matches_any_field() {
        assert!(matches_filter("accel", &["kmm-demo", "Acme-Accel"]));
        assert!(!matches_filter("nvme", &["kmm-demo", "acme-accel"]));
        assert!(matches_filter("", &[]));
    }
}
