//! What the tests of every kmm-tui crate share: waiting for a cluster to converge, driving the console in tmux as a
//! user does, `kmm-tui serve` as a child process, the API server's metrics, and what benchmarks read of a
//! process's CPU and memory. A
//! dev-dependency only; it knows nothing of the crates it tests.

pub mod metrics;
pub mod process;
pub mod serve;
pub mod tmux;
pub mod wait;

pub use wait::{eventually, wait_for};
