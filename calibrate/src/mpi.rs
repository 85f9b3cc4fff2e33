//! Thin wrappers over the `PMPI_*` entry points the calibrator needs.
//!
//! Only `PMPI_*` is called, never `MPI_*`: with `libmpiover.so` preloaded the
//! numbers are the same as without it. MPI's default error handler
//! (`MPI_ERRORS_ARE_FATAL`) aborts the job on any error, so return codes are
//! not checked here.
//!
//! A raw handle is a pointer under Open MPI: a stale or made-up one is read
//! as memory, not caught as an MPI error. So the safe functions take
//! [`Comm`], whose only ways in are [`init`], [`split`] and the `unsafe`
//! [`Comm::from_raw`]; requests live inside the functions that complete
//! them. Buffers are borrowed from a slice or a local for the whole call; a
//! nonblocking call's buffer stays borrowed until [`wait_sleepy`] has
//! completed its request.

use std::ffi::{c_int, c_void};
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mpiover_mpisys as ffi;
use mpiover_mpisys::consts as c;

/// A communicator the library handed out, valid while MPI is initialized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Comm(ffi::MPI_Comm);

impl Comm {
    /// # Safety
    /// `raw` is a communicator the library handed out (`MPI_COMM_WORLD`,
    /// `MPI_COMM_SELF` or one it returned), not `MPI_COMM_NULL`, and it is
    /// neither freed nor MPI finalized while this value or a copy is used.
    pub unsafe fn from_raw(raw: ffi::MPI_Comm) -> Comm {
        Comm(raw)
    }

    /// The handle, for a raw `PMPI_*` call.
    pub fn as_raw(self) -> ffi::MPI_Comm {
        self.0
    }
}

/// A request of one of this module's nonblocking calls, completed by
/// [`wait_sleepy`] before the call's buffer is released.
struct Request(ffi::MPI_Request);

impl Request {
    /// `MPI_REQUEST_NULL`, for a nonblocking call to overwrite.
    fn null() -> Request {
        Request(c::request_null())
    }
}

static INITIALIZED: AtomicBool = AtomicBool::new(false);

/// `MPI_Init`; returns `MPI_COMM_WORLD`. Panics when called twice: MPI may
/// be initialized once per process.
pub fn init() -> Comm {
    assert!(
        !INITIALIZED.swap(true, Ordering::SeqCst),
        "MPI initialized twice"
    );
    // SAFETY: MPI_Init accepts null argc/argv (MPI-2 and later); the flag
    // above makes this the process's only call.
    unsafe { ffi::PMPI_Init(ptr::null_mut(), ptr::null_mut()) };
    // SAFETY: MPI is initialized (above); MPI_COMM_WORLD is never freed, and
    // `finalize`'s contract keeps it from being used after MPI ends.
    unsafe { Comm::from_raw(c::comm_world()) }
}

/// `MPI_Finalize`.
///
/// # Safety
/// No MPI call follows, through this module or a [`Comm`] or otherwise:
/// every communicator is invalid from here on.
pub unsafe fn finalize() {
    // SAFETY: takes no arguments; the caller makes it the last MPI call.
    unsafe { ffi::PMPI_Finalize() };
}

pub fn rank(comm: Comm) -> i32 {
    let mut r = 0;
    // SAFETY: `comm` is live (`Comm`'s invariant); `r` is a
    // live local written once by the call.
    unsafe { ffi::PMPI_Comm_rank(comm.0, &mut r) };
    r
}

pub fn size(comm: Comm) -> i32 {
    let mut s = 0;
    // SAFETY: `comm` is live (`Comm`'s invariant); `s` is a
    // live local written once by the call.
    unsafe { ffi::PMPI_Comm_size(comm.0, &mut s) };
    s
}

/// `MPI_Comm_split`; `None` for the ranks that passed `color = None`.
pub fn split(comm: Comm, color: Option<i32>, key: i32) -> Option<Comm> {
    let mut out: ffi::MPI_Comm = c::comm_null();
    let color = color.unwrap_or_else(c::undefined);
    // SAFETY: `comm` is a live communicator (its invariant) and `out` a live
    // local that the call writes (MPI_COMM_NULL for MPI_UNDEFINED).
    unsafe { ffi::PMPI_Comm_split(comm.0, color, key, &mut out) };
    if out == c::comm_null() {
        None
    } else {
        // SAFETY: a communicator the library just returned, not null
        // (checked); the calibrator never frees one, and MPI outlives it by
        // `finalize`'s contract.
        Some(unsafe { Comm::from_raw(out) })
    }
}

pub fn barrier(comm: Comm) {
    // SAFETY: a live communicator (`Comm`'s invariant) is the only argument.
    unsafe { ffi::PMPI_Barrier(comm.0) };
}

pub fn send_bytes(buf: &[u8], dest: i32, tag: i32, comm: Comm) {
    // SAFETY: the call reads `buf.len()` bytes from `buf`, borrowed for the
    // whole blocking send.
    unsafe {
        ffi::PMPI_Send(
            buf.as_ptr() as *const c_void,
            buf.len() as c_int,
            c::byte(),
            dest,
            tag,
            comm.0,
        )
    };
}

pub fn send_f64s(buf: &[f64], dest: i32, tag: i32, comm: Comm) {
    // SAFETY: the call reads `buf.len()` doubles from `buf`, borrowed for
    // the whole blocking send.
    unsafe {
        ffi::PMPI_Send(
            buf.as_ptr() as *const c_void,
            buf.len() as c_int,
            c::double(),
            dest,
            tag,
            comm.0,
        )
    };
}

pub fn recv_f64s(buf: &mut [f64], src: i32, tag: i32, comm: Comm) {
    // SAFETY: the call writes at most `buf.len()` doubles into `buf`, which
    // is borrowed mutably for the whole blocking receive (a longer message is
    // an MPI error, fatal, not an overrun).
    unsafe {
        ffi::PMPI_Recv(
            buf.as_mut_ptr() as *mut c_void,
            buf.len() as c_int,
            c::double(),
            src,
            tag,
            comm.0,
            c::status_ignore(),
        )
    };
}

pub fn bcast_f64s(buf: &mut [f64], root: i32, comm: Comm) {
    // SAFETY: `buf.len()` doubles are read (root) or written (others) in
    // `buf`, borrowed mutably for the whole blocking call.
    unsafe {
        ffi::PMPI_Bcast(
            buf.as_mut_ptr() as *mut c_void,
            buf.len() as c_int,
            c::double(),
            root,
            comm.0,
        )
    };
}

pub fn bcast_bytes(buf: &mut [u8], root: i32, comm: Comm) {
    // SAFETY: `buf.len()` bytes are read (root) or written (others) in
    // `buf`, borrowed mutably for the whole blocking call.
    unsafe {
        ffi::PMPI_Bcast(
            buf.as_mut_ptr() as *mut c_void,
            buf.len() as c_int,
            c::byte(),
            root,
            comm.0,
        )
    };
}

/// Element-wise MAX of `buf` over the ranks of `comm`, result on `root`.
pub fn reduce_max_u8(buf: &[u8], out: &mut [u8], root: i32, comm: Comm) {
    // The root's result buffer must hold as many elements as are sent, or
    // the library would write past `out`.
    assert!(rank(comm) != root || out.len() >= buf.len());
    // SAFETY: `buf.len()` bytes are read from `buf` and, on the root only,
    // written to `out`, which holds at least that many (asserted above);
    // both are borrowed for the whole blocking call.
    unsafe {
        ffi::PMPI_Reduce(
            buf.as_ptr() as *const c_void,
            out.as_mut_ptr() as *mut c_void,
            buf.len() as c_int,
            c::uint8_t(),
            c::op_max(),
            root,
            comm.0,
        )
    };
}

pub fn allreduce_max_f64(v: f64, comm: Comm) -> f64 {
    let mut out = 0.0f64;
    // SAFETY: one double is read from `v` and written to `out`, two live
    // locals of this frame.
    unsafe {
        ffi::PMPI_Allreduce(
            &v as *const f64 as *const c_void,
            &mut out as *mut f64 as *mut c_void,
            1,
            c::double(),
            c::op_max(),
            comm.0,
        )
    };
    out
}

pub fn gather_f64s(send: &[f64], recv: &mut [f64], root: i32, comm: Comm) {
    // The root receives `send.len()` elements from each rank.
    assert!(rank(comm) != root || recv.len() >= send.len() * size(comm) as usize);
    // SAFETY: `send` is read; on the root `recv` is written and holds a
    // block per rank (asserted above); other ranks' `recv` is not touched.
    // Both are borrowed for the whole blocking call.
    unsafe {
        ffi::PMPI_Gather(
            send.as_ptr() as *const c_void,
            send.len() as c_int,
            c::double(),
            recv.as_mut_ptr() as *mut c_void,
            send.len() as c_int,
            c::double(),
            root,
            comm.0,
        )
    };
}

pub fn gather_bytes(send: &[u8], recv: &mut [u8], root: i32, comm: Comm) {
    // The root receives `send.len()` elements from each rank.
    assert!(rank(comm) != root || recv.len() >= send.len() * size(comm) as usize);
    // SAFETY: `send` is read; on the root `recv` is written and holds a
    // block per rank (asserted above); other ranks' `recv` is not touched.
    // Both are borrowed for the whole blocking call.
    unsafe {
        ffi::PMPI_Gather(
            send.as_ptr() as *const c_void,
            send.len() as c_int,
            c::byte(),
            recv.as_mut_ptr() as *mut c_void,
            send.len() as c_int,
            c::byte(),
            root,
            comm.0,
        )
    };
}

/// Wait for a request without spinning: test, then sleep briefly. Used where
/// a rank only waits for its turn, so that it leaves the CPU to the ranks that
/// are measuring (this machine may be oversubscribed).
fn wait_sleepy(req: &mut Request) {
    let mut flag: c_int = 0;
    let mut nap_us = 50u64;
    loop {
        // SAFETY: `req` holds an active request of this module's calls (or
        // MPI_REQUEST_NULL, which tests complete) borrowed mutably; `flag`
        // is a live local; the status is the library's STATUS_IGNORE.
        unsafe { ffi::PMPI_Test(&mut req.0, &mut flag, c::status_ignore()) };
        if flag != 0 {
            return;
        }
        // Short naps first (a turn often comes quickly), then doubling up to
        // 10 ms: a waiting rank that wakes every millisecond takes the core
        // of a measuring rank that often when ranks outnumber cores (a
        // preempted window each time); 10 ms costs at most that much per job.
        std::thread::sleep(Duration::from_micros(nap_us));
        nap_us = (nap_us * 2).min(10_000);
    }
}

/// `MPI_Ibcast` + [`wait_sleepy`].
pub fn bcast_bytes_sleepy(buf: &mut [u8], root: i32, comm: Comm) {
    let mut req = Request::null();
    // SAFETY: `buf` stays mutably borrowed until `wait_sleepy` below has
    // completed the request, so the library never touches it after return.
    unsafe {
        ffi::PMPI_Ibcast(
            buf.as_mut_ptr() as *mut c_void,
            buf.len() as c_int,
            c::byte(),
            root,
            comm.0,
            &mut req.0,
        )
    };
    wait_sleepy(&mut req);
}

/// `MPI_Irecv` + [`wait_sleepy`].
pub fn recv_bytes_sleepy(buf: &mut [u8], src: i32, tag: i32, comm: Comm) {
    let mut req = Request::null();
    // SAFETY: `buf` stays mutably borrowed until `wait_sleepy` below has
    // completed the request; at most `buf.len()` bytes are written.
    unsafe {
        ffi::PMPI_Irecv(
            buf.as_mut_ptr() as *mut c_void,
            buf.len() as c_int,
            c::byte(),
            src,
            tag,
            comm.0,
            &mut req.0,
        )
    };
    wait_sleepy(&mut req);
}

/// `MPI_Ibarrier` + [`wait_sleepy`].
pub fn barrier_sleepy(comm: Comm) {
    let mut req = Request::null();
    // SAFETY: no buffer; `req` is a live local completed below.
    unsafe { ffi::PMPI_Ibarrier(comm.0, &mut req.0) };
    wait_sleepy(&mut req);
}

pub fn processor_name() -> String {
    let mut buf = vec![0 as std::ffi::c_char; c::max_processor_name() as usize + 1];
    let mut len: c_int = 0;
    // SAFETY: `buf` holds MPI_MAX_PROCESSOR_NAME + 1 chars, the most the
    // call writes; `len` is a live local.
    unsafe { ffi::PMPI_Get_processor_name(buf.as_mut_ptr(), &mut len) };
    let bytes: Vec<u8> = buf[..len.max(0) as usize]
        .iter()
        .map(|&b| b as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

pub fn library_version() -> String {
    let mut buf = vec![0 as std::ffi::c_char; c::max_library_version_string() as usize + 1];
    let mut len: c_int = 0;
    // SAFETY: `buf` holds MPI_MAX_LIBRARY_VERSION_STRING + 1 chars, the most
    // the call writes (this process runs the library it was built against,
    // calibrate links it directly); `len` is a live local.
    unsafe { ffi::PMPI_Get_library_version(buf.as_mut_ptr(), &mut len) };
    let bytes: Vec<u8> = buf[..len.max(0) as usize]
        .iter()
        .take_while(|&&b| b != 0)
        .map(|&b| b as u8)
        .collect();
    String::from_utf8_lossy(&bytes).trim().to_string()
}

/// Gather a fixed-width string from every rank of `comm` to `root`.
pub fn gather_strings(s: &str, width: usize, root: i32, comm: Comm) -> Vec<String> {
    let mut send = vec![0u8; width];
    let b = s.as_bytes();
    let n = b.len().min(width - 1);
    send[..n].copy_from_slice(&b[..n]);
    let p = size(comm) as usize;
    let mut recv = vec![0u8; if rank(comm) == root { width * p } else { width }];
    gather_bytes(&send, &mut recv, root, comm);
    if rank(comm) != root {
        return Vec::new();
    }
    recv.chunks(width)
        .map(|c| {
            let end = c.iter().position(|&x| x == 0).unwrap_or(c.len());
            String::from_utf8_lossy(&c[..end]).into_owned()
        })
        .collect()
}
