//! The job log's merge at `MPI_Finalize`, simulated in one process: every
//! rank's part of a synthetic job (`synth::Job`), encoded, sent (as bytes)
//! to its parent in the interposer's binomial tree, decoded and merged
//! there with the interposer's own code (`JobAggregate::merge`), up to
//! rank 0. Prints the bytes each level of the tree sends and rank 0's
//! peak heap while it merges its children's parts.
//!
//! ```text
//! cargo run --release -p mpiover-report --features synth --example merge_sim -- [--ranks N] [--sites S]
//! ```
//!
//! Subtrees are computed depth first (the process holds one path of the
//! tree), rank 0's children on all cores; then rank 0's own merge runs
//! alone, so that the heap it reaches is its own: its part, the frame
//! being merged and the frames still waiting (which a real rank 0 has not
//! received yet; they are counted apart).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

use mpiover_aggregate::tree::children;
use mpiover_aggregate::JobAggregate;
use mpiover_report::synth::Job;

/// The system allocator, counting the bytes live and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; the
// counters are only arithmetic on the sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let n = LIVE.fetch_add(l.size(), Relaxed) + l.size();
        PEAK.fetch_max(n, Relaxed);
        // SAFETY: the caller's layout, as GlobalAlloc::alloc requires.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Relaxed);
        // SAFETY: `p` was allocated by `alloc` above with this layout.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static A: Counting = Counting;

/// Bytes sent per level of the tree (level k: subtrees of 2^k ranks).
#[derive(Default, Clone, Copy)]
struct Level {
    frames: u64,
    bytes: u64,
    max: u64,
}

struct Sim<'a> {
    job: &'a Job,
    p: usize,
    levels: Mutex<Vec<Level>>,
}

impl Sim<'_> {
    /// The frame rank `r` sends its parent: its subtree merged.
    fn subtree(&self, r: usize, size: usize) -> Vec<u8> {
        let mut part = self.job.part(r as u32, r as u32 + 1);
        for (c, n) in children(r, self.p) {
            let frame = self.subtree(c, n);
            part.merge(JobAggregate::decode(&frame).expect("a frame just encoded"));
        }
        let bytes = part.encode().expect("encodable");
        let k = size.trailing_zeros() as usize;
        let mut l = self.levels.lock().unwrap_or_else(|e| e.into_inner());
        let lv = &mut l[k.min(31)];
        lv.frames += 1;
        lv.bytes += bytes.len() as u64;
        lv.max = lv.max.max(bytes.len() as u64);
        bytes
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut ranks, mut sites) = (1u32 << 20, 20u32);
    while let Some(a) = args.next() {
        let v = args.next().and_then(|v| v.parse().ok());
        match (a.as_str(), v) {
            ("--ranks", Some(v)) => ranks = v,
            ("--sites", Some(v)) => sites = v,
            _ => {
                eprintln!("usage: merge_sim [--ranks N] [--sites S]");
                std::process::exit(2);
            }
        }
    }
    let t0 = std::time::Instant::now();
    let job = Job::new(ranks, sites, 1);
    let p = ranks as usize;
    let sim = Sim {
        job: &job,
        p,
        levels: Mutex::new(vec![Level::default(); 32]),
    };
    // Rank 0's children's subtrees, largest first, over the cores.
    let kids = children(0, p);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = AtomicUsize::new(0);
    let frames: Mutex<Vec<(usize, Vec<u8>)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = kids.len().wrapping_sub(1 + next.fetch_add(1, Relaxed));
                let Some(&(c, n)) = kids.get(i) else { break };
                let f = sim.subtree(c, n);
                frames
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((c, f));
            });
        }
    });
    let mut frames = frames.into_inner().unwrap_or_else(|e| e.into_inner());
    frames.sort_by_key(|f| f.0);
    let waiting: usize = frames.iter().map(|f| f.1.capacity()).sum();
    // Rank 0 alone from here: its part, then each child's frame in order.
    let before = LIVE.load(Relaxed);
    PEAK.store(before, Relaxed);
    let mut root = job.part(0, 1);
    for (_, f) in frames.drain(..) {
        root.merge(JobAggregate::decode(&f).expect("a frame just encoded"));
    }
    let payload = root.encode().expect("encodable");
    let peak = PEAK
        .load(Relaxed)
        .saturating_sub(before.saturating_sub(waiting));
    let held = root.ranks().count();
    println!(
        "merge_sim: {ranks} ranks x {sites} sites, binomial tree of {} levels, {:.1} s",
        kids.len(),
        t0.elapsed().as_secs_f64()
    );
    println!("level  frames  bytes sent (total)  largest frame");
    for (k, l) in sim
        .levels
        .into_inner()
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        if l.frames > 0 {
            println!("{k:>5}  {:>6}  {:>18}  {:>13}", l.frames, l.bytes, l.max);
        }
    }
    println!(
        "rank 0: peak heap {:.1} MiB while merging (its part, the frames received, {:.1} MiB of \
         frames the simulation holds for it); log payload {:.1} MiB for {held} ranks",
        peak as f64 / (1 << 20) as f64,
        waiting as f64 / (1 << 20) as f64,
        payload.len() as f64 / (1 << 20) as f64
    );
}
