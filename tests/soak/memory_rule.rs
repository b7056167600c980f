//! The rule that judges whether the soak's processes grow (`harness/memory.rs`), on series whose answer is known:
//! flat with spikes, a steady leak, a late burst, restarts that sit lower, a slow swing above a steady floor.

use std::time::Duration;

use crate::harness::memory::{Point, trend};

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
        if (t as u64 / 2).is_multiple_of(10) {
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

/// 58 MiB swinging by 12 MiB either way over `period` seconds (from its low), falling back to a floor of 46 MiB
/// once every 30 s (the moment between two bursts), plus `leak` KiB a second.
fn swinging(secs: u64, period: f64, leak: f64) -> Vec<Point> {
    series(secs, |t| {
        if t as u64 % 30 == 10 {
            47_104.0 + leak * t
        } else {
            let phase = std::f64::consts::TAU * t / period - std::f64::consts::FRAC_PI_2;
            59_392.0 + 12_288.0 * phase.sin() + leak * t
        }
    })
}

#[test]
fn a_slow_swing_above_a_steady_floor_is_no_growth() {
    // Five minutes from the swing's low to its high: every sample but the floor's rises (a fit through all samples
    // says +52 %), yet the memory the process falls back to stays where it was.
    let trend = trend(&[swinging(300, 600.0, 0.0)]).expect("long enough");
    assert!(!trend.grows(), "{trend:?}");
    assert!(trend.slope.abs() < 1.0, "{trend:?}");
}

#[test]
fn a_leak_under_the_swings_raises_the_floor_and_grows() {
    // The same swings over a leak of 2 MiB a minute, with the swing falling at the end (a fit through all samples
    // says +8.5 %, under the bound): the floor rises with the leak.
    let trend = trend(&[swinging(300, 240.0, 2048.0 / 60.0)]).expect("long enough");
    assert!(trend.grows(), "{trend:?}");
    assert!((trend.mib_per_hour() - 120.0).abs() < 5.0, "{trend:?}");
}

#[test]
fn too_short_a_segment_is_not_judged() {
    assert_eq!(trend(&[series(200, |_| 1024.0)]), None);
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
