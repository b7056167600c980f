//! Reading a request's `Accept` header: the media ranges a client will take, most preferred first.
//!
//! Clients name the form they want beside the media type: `as=Table` (kubectl get), `as=PartialObjectMetadata`
//! (metadata-only clients), `as=APIGroupDiscoveryList` (aggregated discovery), each with the group (`g`) and version
//! (`v`) of that form, and usually end the list with plain `application/json` as a fallback. The server answers with
//! the first range it can write, as kube-apiserver does, and with `406 Not Acceptable` when it can write none.

use super::errors::ApiError;

/// One media range of an `Accept` header, e.g. `application/json;as=Table;v=v1;g=meta.k8s.io`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MediaRange {
    media_type: String,
    parameters: Vec<(String, String)>,
}

impl MediaRange {
    /// Parse one range; the media type and parameter names are case-insensitive, values are kept as sent.
    fn parse(text: &str) -> Option<Self> {
        let mut parts = text.split(';');
        let media_type = parts.next()?.trim().to_ascii_lowercase();
        if media_type.is_empty() {
            return None;
        }
        let parameters = parts
            .filter_map(|p| p.split_once('='))
            .map(|(name, value)| {
                (
                    name.trim().to_ascii_lowercase(),
                    value.trim().trim_matches('"').to_string(),
                )
            })
            .collect();
        Some(Self {
            media_type,
            parameters,
        })
    }

    /// A parameter's value.
    pub(crate) fn parameter(&self, name: &str) -> Option<&str> {
        self.parameters
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the server can answer this range with JSON: `application/json` itself, YAML (which a JSON
    /// document is), or a wildcard.
    pub(crate) fn takes_json(&self) -> bool {
        matches!(
            self.media_type.as_str(),
            "application/json" | "application/yaml" | "application/*" | "*/*"
        )
    }

    /// The form asked for with `as=` together with its group and version, if any: `(kind, group, version)`.
    pub(crate) fn conversion(&self) -> Option<(&str, &str, &str)> {
        Some((
            self.parameter("as")?,
            self.parameter("g").unwrap_or(""),
            self.parameter("v").unwrap_or(""),
        ))
    }

    /// The preference the client gives this range (`q`, 1 when absent).
    fn quality(&self) -> f32 {
        self.parameter("q")
            .and_then(|q| q.parse().ok())
            .unwrap_or(1.0)
    }
}

/// The ranges of an `Accept` header in the order the client prefers them: by `q`, then as written. Ranges with
/// `q=0` are refused by the client and left out.
pub(crate) fn media_ranges(accept: &str) -> Vec<MediaRange> {
    let mut ranges: Vec<MediaRange> = accept
        .split(',')
        .filter_map(MediaRange::parse)
        .filter(|r| r.quality() > 0.0)
        .collect();
    ranges.sort_by(|a, b| b.quality().total_cmp(&a.quality()));
    ranges
}

/// What the client's most preferred range that `choose` accepts asks for. Without an `Accept` header (or an empty
/// one) the answer is `default`; when no range is acceptable, 406 naming `offered`, the media types the endpoint
/// writes.
pub(crate) fn negotiate<T>(
    accept: Option<&str>,
    default: T,
    offered: &str,
    choose: impl Fn(&MediaRange) -> Option<T>,
) -> Result<T, ApiError> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Ok(default);
    };
    media_ranges(accept)
        .iter()
        .find_map(choose)
        .ok_or_else(|| ApiError::not_acceptable(offered))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_keep_their_parameters_and_order() {
        let ranges = media_ranges(
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList, Application/JSON",
        );
        assert_eq!(ranges.len(), 2);
        assert_eq!(
            ranges[0].conversion(),
            Some(("APIGroupDiscoveryList", "apidiscovery.k8s.io", "v2"))
        );
        assert_eq!(ranges[1].media_type, "application/json");
        assert_eq!(ranges[1].conversion(), None);
    }

    #[test]
    fn quality_reorders_and_zero_refuses() {
        let ranges = media_ranges("text/plain;q=0.5, application/yaml, application/json;q=0");
        let types: Vec<&str> = ranges.iter().map(|r| r.media_type.as_str()).collect();
        assert_eq!(types, ["application/yaml", "text/plain"]);
    }

    #[test]
    fn nothing_acceptable_is_406() {
        let json = |r: &MediaRange| r.takes_json().then_some(());
        assert!(negotiate(None, (), "application/json", json).is_ok());
        assert!(negotiate(Some("*/*"), (), "application/json", json).is_ok());
        let err = negotiate(Some("text/html"), (), "application/json", json).unwrap_err();
        assert_eq!(err.code, 406);
    }
}
