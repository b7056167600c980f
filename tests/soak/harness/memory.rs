//! Whether a process's resident memory grows, judged from its samples after warm-up by the slope of a robust line
//! fit, not by comparing two windows (which a restart's warm-up or one late spike can tip either way).
//!
//! The rule: the samples of one process are split into segments, one per run of it (the API server restarts; the
//! soak's process runs once), each starting after its warm-up. The slope is the Theil–Sen estimate: the median,
//! over every pair of samples of one segment at least [`MIN_PAIR_GAP`] apart, of the pair's rise over its gap. The
//! median ignores spikes, and pairs never span a restart, so a level that differs between runs (a restarted server
//! reads its store back compactly) is no trend. A process grows when that slope, over the segments' spans added
//! up, adds more than [`BOUND`] of the median level; spans shorter than [`MIN_SPAN`] in all are too short to tell.

use std::time::Duration;

/// How much a segment's fitted line may rise over its span, as a fraction of its median level.
pub const BOUND: f64 = 0.10;

/// Pairs of samples closer than this are left out of the fit: their rise is mostly noise.
pub const MIN_PAIR_GAP: Duration = Duration::from_secs(20);

/// The shortest span after warm-up a segment is judged on.
pub const MIN_SPAN: Duration = Duration::from_secs(120);

/// One sample: when (from any fixed origin) and the resident memory then, in KiB.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    /// When the sample was taken.
    pub at: Duration,
    /// Resident memory then.
    pub kib: u64,
}

/// The fitted trend of one process.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Trend {
    /// The Theil–Sen slope, in KiB per second.
    pub slope: f64,
    /// The median level of its samples, in KiB.
    pub level: f64,
    /// The segments' spans (first sample to last) added up.
    pub span: Duration,
}

impl Trend {
    /// What the fitted slope adds over the span, as a fraction of the level.
    pub fn rise(&self) -> f64 {
        self.slope * self.span.as_secs_f64() / self.level.max(1.0)
    }

    /// Whether the process grows by the rule.
    pub fn grows(&self) -> bool {
        self.rise() > BOUND
    }

    /// The slope in MiB per hour, for the report.
    pub fn mib_per_hour(&self) -> f64 {
        self.slope * 3600.0 / 1024.0
    }
}

/// The trend of the samples of one process, a segment per run (each in time order, after its warm-up); none when
/// the segments span less than [`MIN_SPAN`] in all or no pair of samples is [`MIN_PAIR_GAP`] apart.
pub fn trend(segments: &[Vec<Point>]) -> Option<Trend> {
    let mut span = Duration::ZERO;
    let mut slopes = Vec::new();
    let mut levels = Vec::new();
    for points in segments {
        let (Some(first), Some(last)) = (points.first(), points.last()) else {
            continue;
        };
        span += last.at.saturating_sub(first.at);
        levels.extend(points.iter().map(|p| p.kib as f64));
        for (i, early) in points.iter().enumerate() {
            for late in &points[i + 1..] {
                let gap = late.at.saturating_sub(early.at);
                if gap >= MIN_PAIR_GAP {
                    slopes.push((late.kib as f64 - early.kib as f64) / gap.as_secs_f64());
                }
            }
        }
    }
    if span < MIN_SPAN {
        return None;
    }
    Some(Trend {
        slope: median(&mut slopes)?,
        level: median(&mut levels)?,
        span,
    })
}

fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable_by(f64::total_cmp);
    Some(values[values.len() / 2])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sample every 2 s for `secs`, of `kib(t)`.
    fn series(secs: u64, kib: impl Fn(f64) -> f64) -> Vec<Point> {
        (0..=secs / 2)
            .map(|i| {
                let at = Duration::from_secs(i * 2);
                Point {
                    at,
                    kib: kib(at.as_secs_f64()) as u64,
                }
            })
            .collect()
    }

    #[test]
    fn a_flat_process_with_spikes_does_not_grow() {
        // 60 MiB, with a spike of +20 MiB one sample in ten.
        let points = series(600, |t| {
            if (t as u64 / 2) % 10 == 0 {
                81_920.0
            } else {
                61_440.0
            }
        });
        let trend = trend(&[points]).expect("long enough");
        assert!(!trend.grows(), "{trend:?}");
        assert!(trend.slope.abs() < 1.0, "{trend:?}");
    }

    #[test]
    fn a_steady_leak_grows_and_its_slope_is_measured() {
        // 56 MiB rising by 2 MiB a minute for ten minutes: +20 MiB, a third of the level.
        let points = series(600, |t| 57_344.0 + t * 2048.0 / 60.0);
        let trend = trend(&[points]).expect("long enough");
        assert!(trend.grows(), "{trend:?}");
        assert!((trend.mib_per_hour() - 120.0).abs() < 1.0, "{trend:?}");
    }

    #[test]
    fn a_late_spike_does_not_tip_a_flat_run() {
        // What two windows' medians cannot tell: flat, then the last tenth 40 % higher (a convergence burst).
        let points = series(600, |t| if t > 540.0 { 86_000.0 } else { 61_440.0 });
        let trend = trend(&[points]).expect("long enough");
        assert!(!trend.grows(), "{trend:?}");
    }

    #[test]
    fn too_short_a_segment_is_not_judged() {
        assert_eq!(trend(&[series(100, |_| 1024.0)]), None);
        assert_eq!(trend(&[]), None);
    }

    #[test]
    fn a_restart_that_sits_lower_is_no_trend_but_growth_within_runs_is() {
        // Three runs of 100 s each, every one flat but lower than the last: the level differs, nothing grows.
        let runs: Vec<Vec<Point>> = (0..3u64)
            .map(|run| {
                series(100, |_| 60_000.0 + run as f64 * 8_000.0)
                    .into_iter()
                    .map(|p| Point {
                        at: p.at + Duration::from_secs(run * 200),
                        ..p
                    })
                    .collect()
            })
            .collect();
        let flat = trend(&runs).expect("300 s in all");
        assert!(!flat.grows(), "{flat:?}");
        // The same runs, each rising 5 MiB in its 100 s: 15 MiB over 300 s of a 60 MiB level.
        let rising: Vec<Vec<Point>> = runs
            .iter()
            .map(|points| {
                let start = points[0].at;
                points
                    .iter()
                    .map(|p| Point {
                        kib: 60_000 + ((p.at - start).as_secs_f64() * 51.2) as u64,
                        ..*p
                    })
                    .collect()
            })
            .collect();
        assert!(trend(&rising).expect("300 s in all").grows());
    }
}
