//! The long soak: 50 nodes, faults for four hours of simulated time (12 minutes at time scale 20), everything the
//! short soak (`cargo test --test soak`) checks, and resident memory that must stay flat within 10 % after warm-up
//! (judged over at least 5 minutes: see `tests/soak/harness/memory.rs`). See `tests/soak/harness` for what runs
//! and what is checked.
//!
//! `cargo bench --features heap-count --bench soak -- --seed 7` (`--duration`, `--nodes`, `--time-scale`,
//! `--server-kills 1` to kill the API server too; or `SOAK_SEED`, `SOAK_DURATION`, `SOAK_NODES`, `SOAK_TIME_SCALE`);
//! exits 1 when the run fails, printing the seed that reproduces it. The `heap-count` feature has the allocator
//! count live bytes, which is what the verdict on this process rests on.
//!
//! Where memory went: a restart of the API server used to parse the whole watch history it reads back (32 MiB of
//! JSON, about ten times that as trees) before keeping it serialised, so each of the server's runs peaked at 330 to
//! 490 MiB and the runs after a restart sat 10 to 40 MiB higher than the first: over 4 hours the same seeds grew
//! +18.9 % (seed 7) and +9.9 % (seed 11). Each history row is now kept serialised as it is read; three 4-hour runs
//! (seeds 7, 11 and 3, release, beside other builds) then injected 156 to 181 faults with no invariant violated,
//! converged 1 to 19 s after the last fault, and held the API server within −2.9 % to +5.9 % after warm-up
//! (peaks 175 to 187 MiB).
//!
//! Later trees failed the memory check on the API server while using less memory. Seed 7, 4 h: +16 % and +14.8 %
//! (peaks 169 and 174 MiB) once stored objects were copied into allocations of their own size, +10.9 % (peak 161
//! MiB) once the simulation watched pods and nodes once and the store kept Nodes serialised only. A restarted
//! server reads its store back compactly and sits lower for a minute or two than one that has been writing; with
//! nine restarts, the early window is mostly such minutes and the late one falls in the last, longest run, which
//! spans the final convergence. With the server never killed (`--server-kills 0`, the tree of the +16 % runs) the
//! same seed held within +3.4 %, between 145 and 173 MiB for 12 minutes: no growth without bound, but a check that
//! cannot yet tell a restart's warm-up from growth. Once the simulated kubelets kept fingerprints of what they last
//! wrote: +11.0 % with ten runs of the server (peak 155 MiB), +5.9 % with `--server-kills 0` (peak 150 MiB).

/// The binary's allocator (`kmm_tui::allocator`): what is measured is what `kmm-tui` does.
#[global_allocator]
static ALLOCATOR: kmm_tui::allocator::Allocator = kmm_tui::allocator::ALLOCATOR;

#[path = "../tests/soak/harness/mod.rs"]
mod soak;

use std::time::Duration;

use kmm_engine::imagecache;

fn main() {
    kmm_tui::allocator::return_freed_memory_promptly();
    let config = soak::Config {
        seed: 7,
        nodes: 50,
        simulated: Duration::from_secs(4 * 3600),
        time_scale: 20.0,
        lease: Duration::from_secs(5),
        mean_gap: Duration::from_secs(4),
        settle: Duration::from_secs(180),
        server_kills: 0,
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
