//! Whether a process's resident memory grows, judged from its samples after warm-up by the slope of a robust line
//! fit through its floor, not by comparing two windows (which a restart's warm-up or one late spike can tip either
//! way).
//!
//! The rule: the samples of one process are split into segments, one per run of it (the API server restarts; the
//! soak's process runs once), each starting after its warm-up. Each segment is cut into windows of
//! [`FLOOR_WINDOW`], and each window gives one point: its lowest sample. Resident memory swings by a third of its
//! level within seconds as relists, catch-up passes and checks allocate and free; a leak raises the floor those
//! swings fall back to, a burst does not. The slope is the Theil–Sen estimate over the floors: the median, over
//! every pair of floors of one segment at least [`MIN_PAIR_GAP`] apart, of the pair's rise over its gap. The median
//! ignores a few odd windows, and pairs never span a restart, so a level that differs between runs (a restarted
//! server reads its store back compactly) is no trend. A process grows when that slope, over the segments' spans
//! added up, adds more than [`BOUND`] of the median level of all its samples; spans shorter than [`MIN_SPAN`] in
//! all are too short to tell.

use std::time::Duration;

/// How much a segment's fitted line may rise over its span, as a fraction of its median level.
pub(crate) const BOUND: f64 = 0.10;

/// Pairs of samples closer than this are left out of the fit: their rise is mostly noise.
pub(crate) const MIN_PAIR_GAP: Duration = Duration::from_secs(20);

/// The shortest span after warm-up the segments are judged on, added up. The swings are a third of the level, so
/// over a shorter span the floor of a window or two tips the slope past the bound either way.
pub(crate) const MIN_SPAN: Duration = Duration::from_secs(300);

/// How long a window is whose lowest sample stands for it: long enough to hold a moment between two bursts.
pub(crate) const FLOOR_WINDOW: Duration = Duration::from_secs(30);

/// One sample: when (from any fixed origin) and the resident memory then, in KiB.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Point {
    /// When the sample was taken.
    pub at: Duration,
    /// Resident memory then.
    pub kib: u64,
}

/// The fitted trend of one process.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Trend {
    /// The Theil–Sen slope, in KiB per second.
    pub slope: f64,
    /// The median level of its samples, in KiB.
    pub level: f64,
    /// The segments' spans (first sample to last) added up.
    pub span: Duration,
}

impl Trend {
    /// What the fitted slope adds over the span, as a fraction of the level.
    pub(crate) fn rise(&self) -> f64 {
        self.slope * self.span.as_secs_f64() / self.level.max(1.0)
    }

    /// Whether the process grows by the rule.
    pub(crate) fn grows(&self) -> bool {
        self.rise() > BOUND
    }

    /// The slope in MiB per hour, for the report.
    pub(crate) fn mib_per_hour(&self) -> f64 {
        self.slope * 3600.0 / 1024.0
    }
}

/// The trend of the samples of one process, a segment per run (each in time order, after its warm-up); none when
/// the segments span less than [`MIN_SPAN`] in all or no pair of floors is [`MIN_PAIR_GAP`] apart.
pub(crate) fn trend(segments: &[Vec<Point>]) -> Option<Trend> {
    let mut span = Duration::ZERO;
    let mut slopes = Vec::new();
    let mut levels = Vec::new();
    for points in segments {
        let (Some(first), Some(last)) = (points.first(), points.last()) else {
            continue;
        };
        span += last.at.saturating_sub(first.at);
        levels.extend(points.iter().map(|p| p.kib as f64));
        let floors = floors(points);
        for (i, early) in floors.iter().enumerate() {
            for late in &floors[i + 1..] {
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

/// The lowest sample of each [`FLOOR_WINDOW`] of a segment, from its first sample on; a last window that reaches
/// less than half-way is left out (with fewer samples its floor would sit higher).
fn floors(points: &[Point]) -> Vec<Point> {
    let Some(start) = points.first().map(|p| p.at) else {
        return Vec::new();
    };
    let offset = |p: &Point| (p.at - start).as_secs_f64() / FLOOR_WINDOW.as_secs_f64();
    let mut floors: Vec<Point> = points
        .chunk_by(|a, b| offset(a).floor() == offset(b).floor())
        .filter_map(|window| window.iter().min_by_key(|p| p.kib).copied())
        .collect();
    if let Some(last) = points.last()
        && floors.len() > 1
        && offset(last).fract() < 0.5
    {
        floors.pop();
    }
    floors
}

fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable_by(f64::total_cmp);
    Some(values[values.len() / 2])
}
