//! The allocator of the `kmm-tui` binary and of this crate's benchmarks: mimalloc rather than the C library's
//! malloc.
//!
//! The API server, the simulation and the engine build and drop JSON trees for every request and watch event, a
//! storm of small, short-lived allocations spread over every thread. Under glibc's malloc that storm took about
//! 40 % of the CPU of a 5,000-node rollout (free-list upkeep, chunk consolidation, lock traffic between its
//! heaps) and left freed memory stranded in per-thread heaps. mimalloc's thread-local free lists serve the same
//! storm for a fraction of that and return freed pages to the system.
//!
//! A library does not choose the allocator of the programs that link it: each executable that wants mimalloc sets
//! [`ALLOCATOR`] as its `#[global_allocator]` itself. `src/main.rs` (the `kmm-tui` binary) and every benchmark in
//! `benches/` do, so what they measure is what the binary does. The test binaries (this crate's, the other
//! crates', the integration tests) run on the system allocator, except a test that measures memory and sets one of
//! its own, and this crate's unit tests, which run on the counting allocator so that its own test checks the count.

/// The allocator a binary sets: mimalloc, counting live bytes too when the `heap-count` feature is on.
#[cfg(not(feature = "heap-count"))]
pub type Allocator = mimalloc::MiMalloc;

/// The allocator a binary sets: mimalloc, counting live bytes too when the `heap-count` feature is on.
#[cfg(feature = "heap-count")]
pub type Allocator = heap::Counted<mimalloc::MiMalloc>;

/// The value to set, e.g. `#[global_allocator] static ALLOCATOR: Allocator = kmm_tui::allocator::ALLOCATOR;`.
#[cfg(not(feature = "heap-count"))]
pub const ALLOCATOR: Allocator = mimalloc::MiMalloc;

/// The value to set, e.g. `#[global_allocator] static ALLOCATOR: Allocator = kmm_tui::allocator::ALLOCATOR;`.
#[cfg(feature = "heap-count")]
pub const ALLOCATOR: Allocator = heap::Counted(mimalloc::MiMalloc);

/// The bytes the program holds in live allocations, counted as they are made and freed: resident memory also
/// holds what the allocator keeps of freed pages, so only this count tells a leak (it grows) from fragmentation
/// after a burst (resident memory stays up, the count falls back). Always compiled, so one `cargo test` checks it;
/// an executable counts only with the `heap-count` feature, which makes [`Allocator`] the counting one: counting
/// costs an atomic add per allocation and free.
pub mod heap {
    use std::alloc::{GlobalAlloc, Layout};
    use std::cell::Cell;
    use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

    /// Counters, so that threads allocating at once rarely share one.
    const SHARDS: usize = 64;

    /// One counter on a cache line of its own.
    #[repr(align(128))]
    struct Shard(AtomicI64);

    static LIVE: [Shard; SHARDS] = [const { Shard(AtomicI64::new(0)) }; SHARDS];
    static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);

    thread_local! {
        static THREAD_SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
    }

    /// This thread's counter (a memory freed by another thread counts there: only the sum means anything).
    fn shard() -> &'static AtomicI64 {
        let index = THREAD_SHARD
            .try_with(|mine| {
                if mine.get() == usize::MAX {
                    mine.set(NEXT_SHARD.fetch_add(1, Ordering::Relaxed) % SHARDS);
                }
                mine.get()
            })
            .unwrap_or(0);
        &LIVE[index].0
    }

    fn count(bytes: i64) {
        shard().fetch_add(bytes, Ordering::Relaxed);
    }

    /// Bytes in live allocations now.
    pub fn live_bytes() -> u64 {
        let sum: i64 = LIVE.iter().map(|s| s.0.load(Ordering::Relaxed)).sum();
        u64::try_from(sum).unwrap_or(0)
    }

    /// An allocator that counts what passes through it.
    pub struct Counted<A>(pub A);

    // SAFETY: every call is passed on unchanged to the inner allocator; only the counters are added.
    unsafe impl<A: GlobalAlloc> GlobalAlloc for Counted<A> {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            // SAFETY: the caller's contract is passed on.
            let block = unsafe { self.0.alloc(layout) };
            if !block.is_null() {
                count(layout.size() as i64);
            }
            block
        }

        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            // SAFETY: the caller's contract is passed on.
            let block = unsafe { self.0.alloc_zeroed(layout) };
            if !block.is_null() {
                count(layout.size() as i64);
            }
            block
        }

        unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
            // SAFETY: the caller's contract is passed on.
            unsafe { self.0.dealloc(block, layout) };
            count(-(layout.size() as i64));
        }

        unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            // SAFETY: the caller's contract is passed on.
            let moved = unsafe { self.0.realloc(block, layout, new_size) };
            if !moved.is_null() {
                count(new_size as i64 - layout.size() as i64);
            }
            moved
        }
    }
}

/// mimalloc's option for how long freed memory is kept before it is handed back to the system, in milliseconds
/// (`mi_option_purge_delay` of the mimalloc this crate builds; the Rust bindings do not name it).
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// The environment variable with which mimalloc's purge delay can still be chosen by hand.
const PURGE_DELAY_VARIABLE: &str = "MIMALLOC_PURGE_DELAY";

/// Have freed memory handed back to the system at once, rather than after mimalloc's default second. A rollout
/// frees and allocates the objects of thousands of pods a second; with a second's delay the freed pages stay
/// resident while new ones are taken, which on 5,000 nodes held about 30 MiB more at the peak for no measurable
/// gain in speed. Call it first thing in `main`, before other threads start: mimalloc's options are not
/// thread-safe to set. `MIMALLOC_PURGE_DELAY` in the environment still wins.
pub fn return_freed_memory_promptly() {
    if std::env::var_os(PURGE_DELAY_VARIABLE).is_none() {
        // SAFETY: setting an option is a plain store into mimalloc's option table; called before other threads.
        unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, 0) };
    }
}

/// Run `work` to its end on a multi-threaded runtime started after [`return_freed_memory_promptly`], as the binary
/// runs: for the benchmarks that hold the cluster and the engine in their own process.
pub fn block_on_as_the_binary<F: Future>(work: F) -> F::Output {
    return_freed_memory_promptly();
    tokio::runtime::Runtime::new()
        .expect("a runtime")
        .block_on(work)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The live-heap count below counts only what passes through the counting allocator.
    #[global_allocator]
    static COUNTED: heap::Counted<mimalloc::MiMalloc> = heap::Counted(mimalloc::MiMalloc);

    #[test]
    fn the_live_heap_counts_what_is_held_until_it_is_freed() {
        // Other tests allocate beside this one: a block of 64 MiB stands out of their noise.
        const BLOCK: usize = 64 << 20;
        let before = heap::live_bytes();
        let mut held: Vec<u8> = Vec::with_capacity(BLOCK);
        held.push(1);
        let holding = heap::live_bytes();
        held.reserve_exact(2 * BLOCK);
        let grown = heap::live_bytes();
        drop(held);
        let after = heap::live_bytes();
        assert!(
            holding >= before + BLOCK as u64 / 2,
            "{before} then {holding}"
        );
        assert!(
            grown >= holding + BLOCK as u64 / 2,
            "{holding} then {grown}"
        );
        assert!(after + BLOCK as u64 <= grown, "{grown} then {after}");
    }

    #[test]
    fn the_purge_delay_is_the_option_set() {
        if std::env::var_os(PURGE_DELAY_VARIABLE).is_some() {
            println!("skipped: {PURGE_DELAY_VARIABLE} is set in the environment");
            return;
        }
        // SAFETY: reading an option.
        let before = unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) };
        assert_eq!(
            before, 1000,
            "the option at this index is mimalloc's purge delay, 1,000 ms by default"
        );
        return_freed_memory_promptly();
        // SAFETY: reading an option.
        assert_eq!(unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) }, 0);
    }
}
