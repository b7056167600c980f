//! The allocator of every program built on this crate: mimalloc rather than the C library's malloc.
//!
//! The API server, the simulation and the engine build and drop JSON trees for every request and watch event, a
//! storm of small, short-lived allocations spread over every thread. Under glibc's malloc that storm took about
//! 40 % of the CPU of a 5,000-node rollout (free-list upkeep, chunk consolidation, lock traffic between its
//! heaps) and left freed memory stranded in per-thread heaps. mimalloc's thread-local free lists serve the same
//! storm for a fraction of that and return freed pages to the system. It is set here, in the library, so the
//! binary, the tests and the benchmarks all measure the same allocator.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
