//! What a stored object keeps allocated, under an allocator that behaves like mimalloc (the allocator of the
//! kmm-tui binary) where it matters: a reallocation that shrinks a block by at most half leaves the block as it is,
//! so `shrink_to_fit` and `into_boxed_slice` free nothing. A store that relied on them paid up to twice the JSON of
//! every object it holds. This binary has its own global allocator, so it holds only these tests.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use kmm_apiserver::store::ResourceKey;
use kmm_apiserver::store::Store;
use serde_json::json;

/// The system allocator, keeping a block in place when it shrinks by at most half, and counting the bytes of the
/// blocks alive (as they really are, not as asked for). The size a block really has sits just before it.
struct KeepsShrunkBlocks;

static LIVE: AtomicUsize = AtomicUsize::new(0);

impl KeepsShrunkBlocks {
    /// How far a block starts into what the system allocated for it: room for its size, keeping its alignment.
    fn offset(align: usize) -> usize {
        align.max(16)
    }

    fn outer(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size + Self::offset(align), Self::offset(align))
            .expect("a valid layout")
    }

    /// The size a block was allocated with.
    unsafe fn block_size(ptr: *mut u8) -> usize {
        unsafe { ptr.sub(size_of::<usize>()).cast::<usize>().read() }
    }
}

unsafe impl GlobalAlloc for KeepsShrunkBlocks {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let base = unsafe { System.alloc(Self::outer(layout.size(), layout.align())) };
        if base.is_null() {
            return base;
        }
        let ptr = unsafe { base.add(Self::offset(layout.align())) };
        unsafe {
            ptr.sub(size_of::<usize>())
                .cast::<usize>()
                .write(layout.size())
        };
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let size = unsafe { Self::block_size(ptr) };
        LIVE.fetch_sub(size, Ordering::Relaxed);
        let base = unsafe { ptr.sub(Self::offset(layout.align())) };
        unsafe { System.dealloc(base, Self::outer(size, layout.align())) };
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let size = unsafe { Self::block_size(ptr) };
        if new_size <= size && new_size >= size / 2 {
            return ptr;
        }
        let new_layout = Layout::from_size_align(new_size, layout.align()).expect("a valid layout");
        let moved = unsafe { self.alloc(new_layout) };
        if !moved.is_null() {
            unsafe { std::ptr::copy_nonoverlapping(ptr, moved, size.min(new_size)) };
            unsafe { self.dealloc(ptr, layout) };
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: KeepsShrunkBlocks = KeepsShrunkBlocks;

/// An Event of about 1.2 KB, as the simulated kubelet records them and the API server stores them (with the
/// kubelet's managedFields).
fn event(index: usize) -> serde_json::Value {
    let fields = json!({"f:count": {}, "f:firstTimestamp": {}, "f:involvedObject": {}, "f:lastTimestamp": {},
        "f:message": {}, "f:reason": {}, "f:reportingComponent": {}, "f:reportingInstance": {},
        "f:source": {"f:component": {}, "f:host": {}}, "f:type": {}});
    json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": format!("cache-0123456789-p{index}.18ebfc34ed868e37"), "namespace": "bench",
            "managedFields": [{"manager": "kubelet", "operation": "Update", "apiVersion": "v1",
                "time": "2026-11-27T19:03:00Z", "fieldsType": "FieldsV1", "fieldsV1": fields}]},
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": format!("cache-0123456789-p{index}"),
            "namespace": "bench", "fieldPath": "spec.containers{imagepuller}",
            "uid": "55d50888-d8fc-4756-aafd-b35d3f851174", "resourceVersion": "18791"},
        "reason": "Pulled",
        "message": "Successfully pulled image \"registry.bench/cache/ml-runtime:3.2\" in 2.1s (2.1s including waiting). Image size: 209715200 bytes.",
        "source": {"component": "kubelet", "host": "worker-1105"},
        "reportingComponent": "kubelet", "reportingInstance": "worker-1105",
        "firstTimestamp": "2026-11-27T19:03:00Z", "lastTimestamp": "2026-11-27T19:03:00Z",
        "count": 1, "type": "Normal",
    })
}

#[test]
fn a_stored_event_keeps_little_more_than_its_json() {
    const EVENTS: usize = 500;
    let store = Store::in_memory(10);
    let events = ResourceKey::new("", "events");
    // The first writes grow the store's maps; count the ones after.
    for index in 0..EVENTS {
        store.put(&events, None, event(index)).expect("written");
    }
    let before = LIVE.load(Ordering::Relaxed);
    let mut json = 0;
    for index in EVENTS..2 * EVENTS {
        json += store
            .put(&events, None, event(index))
            .expect("written")
            .json
            .len();
    }
    let kept = LIVE.load(Ordering::Relaxed) - before;
    let (per_event, json_per_event) = (kept / EVENTS, json / EVENTS);
    // Besides its JSON an Event keeps its key and a few small allocations, and a copy of its key in each of the
    // store's two indexes of Events (by kind and by reporter), under 700 bytes in all; JSON written into a vector
    // that grew by doubling and kept as it is would add up to as much again as the JSON.
    assert!(
        per_event < json_per_event + json_per_event * 3 / 4,
        "{per_event} bytes kept per Event of {json_per_event} bytes of JSON"
    );
}
