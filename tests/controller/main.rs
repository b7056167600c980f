//! `kmm-tui controller` as a process against `kmm-tui serve`: leader election between processes, and how a
//! signalled controller winds down. These tests time elections and shutdowns on the wall clock, so they run one at
//! a time and in a binary of their own, away from tests that would slow them.

mod leader;
#[path = "../support/serve_process.rs"]
mod serve_process;
mod shutdown;

/// Held by each test for its whole run: one controller scenario at a time.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
