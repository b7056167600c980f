//! How long ago something happened, printed the way `kubectl` prints ages.
//!
//! The API server's tables and the console both show ages; one formatter keeps them reading the
//! same (`45s`, `3m20s`, `5h10m`, `3d4h`, `2y30d`), so a person comparing the console with
//! `kubectl get` sees the same text for the same object.

use jiff::SignedDuration;

/// A duration with two or three significant figures (`45s`, `3m20s`, `25m`, `5h10m`, `3d4h`, `400d`,
/// `2y30d`), rounding down as kube-apiserver does for ages. Times up to a second in the future count as
/// now; further in the future, as `<invalid>`.
pub fn human_duration(duration: SignedDuration) -> String {
    let seconds = duration.as_secs();
    if seconds < -1 {
        return "<invalid>".to_owned();
    }
    if seconds < 0 {
        return "0s".to_owned();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        return with_remainder(minutes, "m", seconds % 60, "s");
    }
    if minutes < 3 * 60 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        return with_remainder(hours, "h", minutes % 60, "m");
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    let days = hours / 24;
    if hours < 24 * 8 {
        return with_remainder(days, "d", hours % 24, "h");
    }
    if hours < 24 * 365 * 2 {
        return format!("{days}d");
    }
    if hours < 24 * 365 * 8 {
        return with_remainder(days / 365, "y", days % 365, "d");
    }
    format!("{}y", days / 365)
}

fn with_remainder(whole: i64, unit: &str, remainder: i64, remainder_unit: &str) -> String {
    if remainder == 0 {
        format!("{whole}{unit}")
    } else {
        format!("{whole}{unit}{remainder}{remainder_unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations_round_like_the_server() {
        let cases = [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (45, "45s"),
            (119, "119s"),
            (120, "2m"),
            (200, "3m20s"),
            (599, "9m59s"),
            (600, "10m"),
            (179 * 60 + 59, "179m"),
            (3 * 3600, "3h"),
            (5 * 3600 + 10 * 60 + 30, "5h10m"),
            (8 * 3600 + 59 * 60, "8h"),
            (47 * 3600, "47h"),
            (48 * 3600, "2d"),
            (3 * 86400 + 4 * 3600, "3d4h"),
            (8 * 86400 + 5 * 3600, "8d"),
            (400 * 86400, "400d"),
            (2 * 365 * 86400 + 30 * 86400, "2y30d"),
            (3 * 365 * 86400, "3y"),
            (9 * 365 * 86400 + 100 * 86400, "9y"),
        ];
        for (seconds, expected) in cases {
            assert_eq!(
                human_duration(SignedDuration::from_secs(seconds)),
                expected,
                "{seconds}s"
            );
        }
        assert_eq!(human_duration(SignedDuration::from_millis(-1500)), "0s");
        assert_eq!(
            human_duration(SignedDuration::from_millis(-2500)),
            "<invalid>"
        );
    }
}
