//! The long soak: 50 nodes, faults for two hours of simulated time, everything the short soak (`cargo test --test
//! soak`) checks, and resident memory that must stay flat within 10 % after warm-up. See `tests/soak/harness` for
//! what runs and what is checked.
//!
//! `cargo bench --bench soak -- --seed 7 --duration 2h --nodes 50 --time-scale 20` (or `SOAK_SEED`, `SOAK_DURATION`,
//! `SOAK_NODES`, `SOAK_TIME_SCALE`); exits 1 when the run fails, printing the seed that reproduces it.

#[path = "../tests/soak/harness/mod.rs"]
mod soak;

use std::time::Duration;

use kmm_engine::imagecache;

fn main() {
    let config = soak::Config {
        seed: 7,
        nodes: 50,
        simulated: Duration::from_secs(2 * 3600),
        time_scale: 20.0,
        lease: Duration::from_secs(5),
        mean_gap: Duration::from_secs(4),
        settle: Duration::from_secs(180),
        server_kills: 1,
        max_update: 3,
        long_outages: 0.2,
        cache_retry: imagecache::DEFAULT_FIRST_RETRY,
        flat_memory: true,
    }
    .overridden(std::env::args().skip(1));
    if !soak::run(config).conclude().is_empty() {
        std::process::exit(1);
    }
}
