//! The five-field cron schedule a CronJob runs on, checked the way the CronJob controller's parser reads it, so a
//! schedule that would never fire is refused when it is written rather than ignored later.

/// Minute, hour, day of month, month, day of week: their bounds and the names a field may use.
const FIELDS: [(&str, u32, u32, &[&str]); 5] = [
    ("minute", 0, 59, &[]),
    ("hour", 0, 23, &[]),
    ("day of month", 1, 31, &[]),
    (
        "month",
        1,
        12,
        &[
            "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
        ],
    ),
    (
        "day of week",
        0,
        6,
        &["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
    ),
];

const DESCRIPTORS: &[&str] = &[
    "@yearly",
    "@annually",
    "@monthly",
    "@weekly",
    "@daily",
    "@midnight",
    "@hourly",
];

/// Why `schedule` is not a schedule, or None.
pub(super) fn schedule_error(schedule: &str) -> Option<String> {
    if schedule.contains("TZ") {
        return Some("cannot use TZ or CRON_TZ in schedule, use timeZone field instead".into());
    }
    if let Some(descriptor) = schedule.strip_prefix('@') {
        let known = DESCRIPTORS.contains(&schedule) || descriptor.starts_with("every ");
        return (!known).then(|| format!("unrecognized descriptor: {schedule}"));
    }
    let parts: Vec<&str> = schedule.split_whitespace().collect();
    if parts.len() != FIELDS.len() {
        return Some(format!(
            "expected exactly 5 fields, found {}: [{}]",
            parts.len(),
            parts.join(" ")
        ));
    }
    parts
        .iter()
        .zip(FIELDS)
        .find_map(|(part, (what, low, high, names))| field_error(part, what, low, high, names))
}

fn field_error(field: &str, what: &str, low: u32, high: u32, names: &[&str]) -> Option<String> {
    let value = |text: &str| -> Option<u32> {
        let lower = text.to_ascii_lowercase();
        match names.iter().position(|n| *n == lower) {
            Some(i) => Some(i as u32 + low),
            None => text.parse().ok(),
        }
    };
    for part in field.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((range, step)) => (range, Some(step)),
            None => (part, None),
        };
        if let Some(step) = step
            && step.parse::<u32>().map_or(true, |s| s == 0)
        {
            return Some(format!(
                "failed to parse int from {step}: invalid step in {what}"
            ));
        }
        if matches!(range, "*" | "?") {
            continue;
        }
        let (start, end) = range.split_once('-').unwrap_or((range, range));
        let (Some(start), Some(end)) = (value(start), value(end)) else {
            return Some(format!("failed to parse int from {range}: invalid {what}"));
        };
        if start < low {
            return Some(format!(
                "beginning of range ({start}) below minimum ({low}): {part}"
            ));
        }
        if end > high {
            return Some(format!(
                "end of range ({end}) above maximum ({high}): {part}"
            ));
        }
        if start > end {
            return Some(format!(
                "beginning of range ({start}) beyond end of range ({end}): {part}"
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::schedule_error;

    #[test]
    fn schedules_the_controller_can_run_pass() {
        for good in [
            "*/5 * * * *",
            "0 3 * * MON-FRI",
            "15,45 1-5 1 jan *",
            "@hourly",
            "@every 1h",
        ] {
            assert_eq!(schedule_error(good), None, "{good}");
        }
        for bad in [
            "bad",
            "* * * *",
            "70 * * * *",
            "* * * * 9",
            "*/0 * * * *",
            "@sometimes",
            "TZ=UTC 0 * * * *",
        ] {
            assert!(schedule_error(bad).is_some(), "{bad}");
        }
    }
}
