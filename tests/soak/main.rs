//! The short soak: the engines, the real `kmm-tui serve` and its simulation under injected faults, with every
//! invariant checked (see `soak/harness`). Small enough to run beside the other tests: 12 nodes, faults for
//! 40 s of real time at time scale 60, with failed pulls retried after 3 s so that retries meet outages, then
//! convergence. `SOAK_SEED=<seed>` reproduces a run; the long form is
//! `cargo bench --bench soak`.

mod harness;
mod memory_rule;

use std::time::Duration;

#[test]
fn engines_keep_every_invariant_and_converge_under_faults() {
    let config = harness::Config {
        seed: 1,
        nodes: 12,
        simulated: Duration::from_secs(40 * 60),
        time_scale: 60.0,
        lease: Duration::from_secs(4),
        mean_gap: Duration::from_secs(2),
        settle: Duration::from_secs(60),
        server_kills: 3,
        max_update: 2,
        long_outages: 0.0,
        cache_retry: Duration::from_secs(3),
        flat_memory: false,
    }
    .overridden(std::iter::empty());
    let failures = harness::run(config).conclude();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
