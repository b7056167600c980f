//! kmm-tui as its users and their clusters run it: the binary as a process (the console in tmux, `serve`), kubectl
//! against the embedded cluster, crashes and restarts, and the hand-off to the controllers `install` puts in the
//! cluster. Hostile clients, the soak and the `controller` processes have binaries of their own: they load the
//! machine, or time what they do on the wall clock, in ways the other tests must not disturb.
// Test helpers outside `#[test]` functions unwrap too: a failed step fails the test.
#![allow(clippy::unwrap_used)]

mod bad_edit;
mod console;
mod console_handoff;
mod console_shims;
mod crash;
mod fleet;
mod handoff_install;
mod kubectl;
mod manual;
mod screen;
mod serve;
#[path = "../support/serve_process.rs"]
mod serve_process;
mod upstream_dra;
