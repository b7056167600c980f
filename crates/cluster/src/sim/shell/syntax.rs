//! The shell language the simulated `sh` reads.
