//! The options of a log request (`PodLogOptions`), checked as kube-apiserver checks them and applied as the
//! kubelet applies them: which lines (`sinceSeconds` or `sinceTime`, then the last `tailLines`), how each is
//! written (`timestamps`), and from which instance (`previous`).

use jiff::{SignedDuration, Timestamp};

use super::LogLine;
use crate::apiserver::context::RequestContext;
use crate::apiserver::errors::{ApiError, Cause};

/// A log request's options.
#[derive(Debug, Clone)]
pub(super) struct LogOptions {
    /// Keep the stream open for the lines still to come, until the container exits.
    pub follow: bool,
    /// The log of the instance before the current one.
    pub previous: bool,
    /// Most bytes to send, in all.
    pub limit_bytes: Option<usize>,
    timestamps: bool,
    /// Only lines written at or after this instant.
    since: Option<Timestamp>,
    /// Only the last this many lines.
    tail_lines: Option<usize>,
}

impl LogOptions {
    /// The lines of `lines` the options select.
    pub(super) fn selected<'l>(&self, lines: &'l [LogLine]) -> impl Iterator<Item = &'l LogLine> {
        let since = self.since;
        let recent: Vec<&LogLine> = lines
            .iter()
            .filter(|line| match since {
                Some(since) => line
                    .timestamp
                    .parse::<Timestamp>()
                    .is_ok_and(|t| t >= since),
                None => true,
            })
            .collect();
        let skip = self
            .tail_lines
            .map_or(0, |tail| recent.len().saturating_sub(tail));
        recent.into_iter().skip(skip)
    }

    /// One line as the client receives it.
    pub(super) fn format(&self, line: &LogLine) -> String {
        if self.timestamps {
            format!("{} {}\n", line.timestamp, line.text)
        } else {
            format!("{}\n", line.text)
        }
    }
}

/// The options of the request, or kube-apiserver's refusal: 422 naming each bad field, 400 for a value that is not
/// a number or a time at all.
pub(super) fn parse(ctx: &RequestContext) -> Result<LogOptions, ApiError> {
    let query = &ctx.query;
    let tail_lines = query.number("tailLines")?;
    let limit_bytes = query.number("limitBytes")?;
    let since_seconds = query.number("sinceSeconds")?;
    let since_time = query
        .get("sinceTime")
        .map(|t| {
            t.parse::<Timestamp>().map_err(|e| {
                ApiError::bad_request(format!(
                    "invalid value for query parameter sinceTime: {t:?}: {e}"
                ))
            })
        })
        .transpose()?;
    let mut causes = Vec::new();
    let mut invalid = |field: &str, value: i64, must: &str| {
        causes.push(Cause {
            reason: "FieldValueInvalid".into(),
            message: format!("Invalid value: {value}: {must}"),
            field: field.into(),
        });
    };
    if let Some(tail) = tail_lines.filter(|t| *t < 0) {
        invalid("tailLines", tail, "must be greater than or equal to 0");
    }
    if let Some(limit) = limit_bytes.filter(|l| *l < 1) {
        invalid("limitBytes", limit, "must be greater than 0");
    }
    if let Some(seconds) = since_seconds.filter(|s| *s < 1) {
        invalid("sinceSeconds", seconds, "must be greater than 0");
    }
    if since_seconds.is_some() && since_time.is_some() {
        causes.push(Cause {
            reason: "FieldValueForbidden".into(),
            message: "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"
                .into(),
            field: String::new(),
        });
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid("", "PodLogOptions", ctx.name(), causes));
    }
    let since = since_time.or_else(|| {
        since_seconds.map(|seconds| {
            Timestamp::now()
                .checked_sub(SignedDuration::from_secs(seconds))
                .unwrap_or(Timestamp::MIN)
        })
    });
    Ok(LogOptions {
        follow: ctx.query.flag("follow"),
        previous: ctx.query.flag("previous"),
        limit_bytes: limit_bytes.map(|l| l as usize),
        timestamps: ctx.query.flag("timestamps"),
        since,
        tail_lines: tail_lines.map(|t| t as usize),
    })
}
