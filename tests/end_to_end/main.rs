//! kmm-tui as its users and their clusters run it: the binary as a process (the console in tmux, `serve`,
//! `controller`), kubectl against the embedded cluster, crashes and restarts, and the hand-off to the controllers
//! `install` puts in the cluster. Hostile clients and the soak have binaries of their own: they load the machine
//! and the process in ways the timings here must not feel.

mod console;
mod console_handoff;
mod console_shims;
mod controller_leader;
mod controller_shutdown;
mod crash;
mod handoff_install;
mod kubectl;
mod screen;
mod serve;
#[path = "../support/serve_process.rs"]
mod serve_process;
