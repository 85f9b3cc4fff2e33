//! The interposer's own heap: every Rust allocation of `libmpiover.so` comes
//! from pages it maps itself, never from the program's `malloc`.
//!
//! Why: a preloaded tool that allocates from the application's heap changes
//! where the application's own allocations land. Start-up buffers freed again
//! leave holes that the program's next small allocations fill, so objects the
//! program expects to be close together end up scattered. Nothing in the MPI
//! standard promises a layout, but libraries depend on it in practice: Open
//! MPI's `osc/rdma` merges dynamic-window attachments that share pages and
//! allows only `osc_rdma_max_attach` (64) regions, so MPICH's
//! `rma/linked_list_bench_lock_shr_nocheck` (250 tiny `MPI_Alloc_mem`
//! elements attached per rank) failed with `MPI_ERR_RMA_ATTACH` under the
//! preload and passed without it. That failure was mostly `MPI_T`'s
//! initialization at `MPI_Init` (now at finalize); this heap keeps the rest
//! of the tool's allocations (58 KB and 11 extra holes at start-up, then
//! every new key or histogram bin during the run) out of the program's heap,
//! which then differs from the program alone by under 1 KB after `MPI_Init`
//! (`interpose/README.md`, "The program's heap stays the program's").
//!
//! The allocator is Doug Lea's malloc (the `dlmalloc` crate) over anonymous
//! `mmap`s, behind one process-wide mutex. The hot path allocates rarely (a
//! new thread, a key's table growing, a histogram's new bin, more request
//! slots; all bounded by the key cap), so the lock is taken at start-up, on
//! those growths and at the end, and is uncontended in practice.

/// The allocator of every Rust allocation in this library.
#[global_allocator]
static HEAP: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

/// Makes the heap usable in the child of a `fork` made while another thread
/// held its lock (programs that call `system()` or spawn helpers): the lock
/// is taken before the fork and released on both sides. Called once, from
/// the library's load-time constructor, before the tool allocates.
pub fn protect_fork() {
    // SAFETY: called from the single load-time constructor, so at most once
    // (the crate registers its fork handlers per call) and before this
    // library's first allocation.
    unsafe { dlmalloc::enable_alloc_after_fork() };
}
