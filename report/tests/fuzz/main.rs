//! Mutation fuzzing of every file the `mpiover` command reads: per-rank
//! records, job logs, calibration profiles and `mpiover fit` sample files.
//!
//! The seed inputs are files of real runs under Open MPI and MPICH
//! (`report/tests/fixtures/fuzz/`, made by `scripts/fuzz-seeds`). Mutant `i`
//! of a format is drawn from a generator started at (format, `i`), so that
//! any failure is reproduced by its format and index alone
//! (`MPIOVER_FUZZ_ONLY=record:1234`). Each mutant must give a result or one
//! clear error: one line that names the file. A panic, an input over the time
//! or memory limit (`limits`), or any other message is a failure; failing
//! mutants are written to `CARGO_TARGET_TMPDIR/fuzz-failures/`.
//!
//! `MPIOVER_FUZZ_MUTANTS` (default 2000 per format) sets the count,
//! `MPIOVER_FUZZ_FORMATS` (`record,log,profile,fit`) the formats,
//! `MPIOVER_FUZZ_CHECK_EVERY` and `MPIOVER_FUZZ_FIT_EVERY` (default 16 and
//! 4) on which share of the mutants the slow commands run (`profile check`,
//! `fit`'s model fits; the readers run on all); `bench/fuzz.sh` runs a
//! million per format.

mod bytes;
mod cli_pass;
mod joblog;
mod json;
mod limits;
mod regressions;
mod targets;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Instant;

use mpiover_common::rng::Rng;

#[global_allocator]
static ALLOC: limits::Counting = limits::Counting;

/// The formats, in the order of their numbers.
pub const FORMATS: [&str; 4] = ["record", "log", "profile", "fit"];

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fuzz")
}

/// The seed inputs of a format, from both MPIs.
pub fn seeds(format: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for mpi in ["openmpi", "mpich"] {
        let dir = fixtures().join(mpi);
        let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        for p in names {
            let n = p.file_name().unwrap().to_str().unwrap().to_string();
            let of = match format {
                "record" => n.starts_with("rank-") && n.ends_with(".json"),
                "log" => n.ends_with(".mpiover-log"),
                "profile" => n.starts_with("profile"),
                _ => n.starts_with("samples"),
            };
            if of {
                let b = std::fs::read(&p).unwrap();
                out.push((p, b));
            }
        }
    }
    assert!(!out.is_empty(), "no seed inputs of format {format}");
    out
}

/// The largest mutant (bytes): well below the memory limit.
const MAX_MUTANT: usize = 8 << 20;

/// Seed inputs prepared for mutation.
pub struct Corpus {
    pub format: usize,
    raw: Vec<Vec<u8>>,
    trees: Vec<json::J>,
    logs: Vec<joblog::Parts>,
    keys: Vec<Vec<u8>>,
}

impl Corpus {
    pub fn new(format: usize) -> Corpus {
        let raw: Vec<Vec<u8>> = seeds(FORMATS[format]).into_iter().map(|s| s.1).collect();
        let mut trees = Vec::new();
        let mut logs = Vec::new();
        let mut keys = Vec::new();
        match FORMATS[format] {
            "record" | "profile" => {
                for r in &raw {
                    let v: serde_json::Value = serde_json::from_slice(r).unwrap();
                    trees.push(json::J::from_value(&v));
                    json::keys(trees.last().unwrap(), &mut keys);
                }
            }
            "log" => {
                for r in &raw {
                    logs.push(joblog::Parts::of(r));
                }
                keys = ["schema", "run_id", "ranks", "writer"]
                    .map(|k| k.as_bytes().to_vec())
                    .to_vec();
            }
            _ => {}
        }
        Corpus {
            format,
            raw,
            trees,
            logs,
            keys,
        }
    }

    /// Number of seed inputs.
    pub fn seed_inputs(&self) -> usize {
        self.raw.len()
    }

    /// Mutant `index`: one to three changes of seed input `index % n`,
    /// structure-aware or byte-level.
    pub fn mutant(&self, index: u64) -> Vec<u8> {
        let mut rng = Rng::new(index ^ (self.format as u64) << 56);
        let k = index as usize % self.raw.len();
        let other = &self.raw[rng.below(self.raw.len())];
        let mut data = match FORMATS[self.format] {
            "log" if rng.below(4) > 0 => joblog::mutate(&mut rng, &self.logs[k], &self.keys, other),
            "record" | "profile" if rng.below(3) > 0 => {
                let mut t = self.trees[k].clone();
                let donor = &self.trees[rng.below(self.trees.len())];
                for _ in 0..1 + rng.below(3) {
                    json::mutate(&mut rng, &mut t, &self.keys, donor);
                }
                let mut out = Vec::new();
                t.write(&mut out);
                out
            }
            "fit" if rng.below(2) > 0 => lines(&mut rng, &self.raw[k], other),
            _ => self.raw[k].clone(),
        };
        for _ in 0..rng.below(3) {
            bytes::mutate(&mut rng, &mut data, other);
        }
        // The memory limit is meant for what a reader makes of its input,
        // not for the input itself.
        data.truncate(MAX_MUTANT);
        data
    }
}

/// Line-level changes of a sample file: lines lost, doubled, replaced by
/// extreme numbers, or the whole sample repeated (more run-times).
fn lines(rng: &mut Rng, text: &[u8], other: &[u8]) -> Vec<u8> {
    let mut ls: Vec<Vec<u8>> = text.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    for _ in 0..1 + rng.below(4) {
        let i = rng.below(ls.len());
        match rng.below(5) {
            0 => {
                ls.remove(i);
                if ls.is_empty() {
                    ls.push(Vec::new());
                }
            }
            1 => ls.insert(i, ls[i].clone()),
            2 => ls[i] = bytes::TOKENS[rng.below(bytes::TOKENS.len())].into(),
            3 if ls.len() < 2000 => {
                // Up to about 8 times the seed input's run-times: fitting
                // costs with the sample, and a long sample is no harder to
                // read than a short one.
                let all = ls.clone();
                for _ in 0..rng.below(4) {
                    ls.extend(all.iter().cloned());
                }
            }
            _ => ls.extend(other.split(|&b| b == b'\n').map(<[u8]>::to_vec)),
        }
    }
    ls.join(&b'\n')
}

/// How one mutant ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Ok,
    /// One line naming the file.
    CleanError(String),
    Failure(String),
}

/// Judges a command's result: an error must be one line naming `file`.
pub fn judge(r: &anyhow::Result<()>, file: &Path) -> Outcome {
    match r {
        Ok(()) => Outcome::Ok,
        Err(e) => {
            let msg = format!("{e:#}");
            let name = file.display().to_string();
            if msg.contains('\n') {
                Outcome::Failure(format!("an error of several lines: {msg}"))
            } else if !msg.contains(&name) {
                Outcome::Failure(format!("an error that does not name {name}: {msg}"))
            } else {
                Outcome::CleanError(msg)
            }
        }
    }
}

/// The worst of several outcomes.
fn worst(all: Vec<Outcome>) -> Outcome {
    all.iter()
        .find(|o| matches!(o, Outcome::Failure(_)))
        .or_else(|| all.iter().find(|o| matches!(o, Outcome::CleanError(_))))
        .cloned()
        .unwrap_or(Outcome::Ok)
}

/// Runs mutant `index` (or the bytes given) through the format's readers.
pub fn run_one(env: &targets::Env, format: usize, index: u64, data: &[u8]) -> Outcome {
    match FORMATS[format] {
        "record" => {
            let d = env.run_dir_with("rank-000000.json", data);
            judge(
                &targets::report(env, &d, index),
                &d.join("rank-000000.json"),
            )
        }
        "log" => {
            let d = env.run_dir_with("job.mpiover-log", data);
            judge(&targets::report(env, &d, index), &d.join("job.mpiover-log"))
        }
        "profile" => {
            let p = env.file_with("profile.json", data);
            worst(
                targets::profile(env, &p, index, every("MPIOVER_FUZZ_CHECK_EVERY", 16))
                    .iter()
                    .map(|r| judge(r, &p))
                    .collect(),
            )
        }
        _ => {
            let p = env.file_with("samples.txt", data);
            judge(
                &targets::fit(&p, index, every("MPIOVER_FUZZ_FIT_EVERY", 4)),
                &p,
            )
        }
    }
}

/// One mutant in how many gets a slow command (an environment variable).
fn every(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
        .max(1)
}

/// The message of the first panic of a guarded input (the hook keeps it
/// instead of printing it; other panics, the tests' own, print as usual).
static PANIC: Mutex<Option<String>> = Mutex::new(None);
static IN_GUARD: AtomicBool = AtomicBool::new(false);

pub fn quiet_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(install_hook);
}

fn install_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !IN_GUARD.load(Relaxed) {
            return default(info);
        }
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        PANIC
            .lock()
            .unwrap()
            .get_or_insert(format!("panic{at}: {msg}"));
    }));
}

/// One mutant under the limits, a panic caught as a failure.
pub fn guarded_run(env: &targets::Env, format: usize, index: u64, data: &[u8]) -> Outcome {
    *PANIC.lock().unwrap() = None;
    IN_GUARD.store(true, Relaxed);
    let r = limits::guarded(format as u64, index, || {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run_one(env, format, index, data)
        }))
    });
    IN_GUARD.store(false, Relaxed);
    let o = r.unwrap_or_else(|_| {
        Outcome::Failure(PANIC.lock().unwrap().take().unwrap_or("panic".into()))
    });
    // A refused allocation that the reader survived (a fallible one, as
    // reading a file is) is still an input over the limit.
    match limits::take_refused() {
        Some(n) => Outcome::Failure(format!("asked for {n} bytes: over the memory limit")),
        None => o,
    }
}

/// What a format's pass found.
#[derive(Debug, Default)]
pub struct Tally {
    pub ok: u64,
    pub errors: u64,
    pub failures: Vec<(u64, String)>,
    pub seconds: f64,
    pub peak_mib: f64,
    /// The slowest mutant and its seconds.
    pub slowest: (u64, f64),
}

/// A number per environment: tests that run at once get directories of
/// their own.
fn next_env() -> usize {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    N.fetch_add(1, Relaxed)
}

pub fn env_for(format: &str) -> targets::Env {
    let base = std::env::var_os("MPIOVER_FUZZ_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")))
        .join(format!(
            "fuzz-{}-{format}-{}",
            std::process::id(),
            next_env()
        ));
    let good_run = base.join("good-run");
    std::fs::create_dir_all(&good_run).unwrap();
    for (p, b) in seeds("record")
        .into_iter()
        .filter(|(p, _)| p.starts_with(fixtures().join("openmpi")))
    {
        std::fs::write(good_run.join(p.file_name().unwrap()), b).unwrap();
    }
    let profiles = seeds("profile").into_iter().map(|s| s.0).collect();
    targets::Env::new(base.join("work"), good_run, profiles)
}

/// Mutants `from..to` of a format.
pub fn pass(format: usize, from: u64, to: u64) -> Tally {
    limits::start_watchdog();
    quiet_panics();
    let corpus = Corpus::new(format);
    let env = env_for(FORMATS[format]);
    let mut t = Tally::default();
    let start = Instant::now();
    for i in from..to {
        let data = corpus.mutant(i);
        let t0 = Instant::now();
        let outcome = guarded_run(&env, format, i, &data);
        let s = t0.elapsed().as_secs_f64();
        if s > t.slowest.1 {
            t.slowest = (i, s);
        }
        match outcome {
            Outcome::Ok => t.ok += 1,
            Outcome::CleanError(_) => t.errors += 1,
            Outcome::Failure(why) => {
                save_failure(format, i, &data);
                t.failures.push((i, why));
            }
        }
        t.peak_mib = t
            .peak_mib
            .max(limits::take_peak() as f64 / (1 << 20) as f64);
    }
    t.seconds = start.elapsed().as_secs_f64();
    let _ = std::fs::remove_dir_all(env.dir.parent().unwrap());
    t
}

fn save_failure(format: usize, index: u64, data: &[u8]) {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fuzz-failures");
    let _ = std::fs::create_dir_all(&d);
    let _ = std::fs::write(d.join(format!("{}-{index}", FORMATS[format])), data);
}

fn count() -> u64 {
    std::env::var("MPIOVER_FUZZ_MUTANTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

fn chosen() -> Vec<usize> {
    match std::env::var("MPIOVER_FUZZ_FORMATS") {
        Ok(v) => v
            .split(',')
            .map(|f| {
                FORMATS
                    .iter()
                    .position(|n| *n == f.trim())
                    .unwrap_or_else(|| panic!("no format {f:?}; the formats: {FORMATS:?}"))
            })
            .collect(),
        Err(_) => (0..FORMATS.len()).collect(),
    }
}

/// Every seed input reads as a result: the mutants start from good files.
#[test]
fn every_seed_input_reads_without_error() {
    for (f, name) in FORMATS.iter().enumerate() {
        let env = env_for(name);
        let all = seeds(name);
        let n = all.len() as u64;
        for (k, (p, b)) in all.iter().enumerate() {
            // The indices of this seed input's mutants (the profile's merge
            // partner depends on it), over each command variant.
            for index in (0..6).map(|j| k as u64 + j * n) {
                let o = run_one(&env, f, index, b);
                assert_eq!(o, Outcome::Ok, "{} as mutant {index}", p.display());
            }
        }
        let _ = std::fs::remove_dir_all(env.dir.parent().unwrap());
    }
}

/// The mutants of every format: a result or one clear error each.
#[test]
fn every_mutant_gives_a_result_or_one_clear_error() {
    if let Ok(only) = std::env::var("MPIOVER_FUZZ_ONLY") {
        let (f, i) = only
            .split_once(':')
            .expect("MPIOVER_FUZZ_ONLY=format:index");
        let f = FORMATS.iter().position(|n| *n == f).expect("a format");
        let i: u64 = i.parse().expect("an index");
        // Kept for a look, or for a regression test.
        save_failure(f, i, &Corpus::new(f).mutant(i));
        let t = pass(f, i, i + 1);
        assert!(t.failures.is_empty(), "{:?}", t.failures);
        return;
    }
    let n = count();
    let mut failed = Vec::new();
    for f in chosen() {
        let t = pass(f, 0, n);
        // One line per format, parsed by bench/fuzz.sh.
        eprintln!(
            "fuzz {:<8} mutants {n} ok {} errors {} failures {} seconds {:.1} peak_mib {:.1} \
             slowest {}:{} {:.3}s",
            FORMATS[f],
            t.ok,
            t.errors,
            t.failures.len(),
            t.seconds,
            t.peak_mib,
            FORMATS[f],
            t.slowest.0,
            t.slowest.1
        );
        for (i, why) in t.failures.iter().take(20) {
            failed.push(format!("{}:{i}: {why}", FORMATS[f]));
        }
    }
    assert!(
        failed.is_empty(),
        "mutants that broke a reader:\n{}",
        failed.join("\n")
    );
}

/// Every prefix of every seed input (`MPIOVER_FUZZ_TRUNCATE_STEP`: every
/// n-th length, default 17; 1 in bench/fuzz.sh), through the readers: a file
/// cut at any byte is one clear error or, cut at its very end, the result.
#[test]
fn a_seed_input_cut_at_any_length_is_one_clear_error() {
    let step = every("MPIOVER_FUZZ_TRUNCATE_STEP", 17) as usize;
    limits::start_watchdog();
    quiet_panics();
    let mut failed = Vec::new();
    for (f, name) in FORMATS.iter().enumerate() {
        let env = env_for(name);
        let all = seeds(name);
        let mut cuts = 0;
        for (k, (p, b)) in all.iter().enumerate() {
            for len in (0..b.len()).step_by(step) {
                // The mutant index of this seed input (the profile's merge
                // partner depends on it), the fit's reader only.
                let index = k as u64 + all.len() as u64 * (len as u64 + 1);
                cuts += 1;
                match guarded_run(&env, f, index, &b[..len]) {
                    Outcome::Failure(why) => {
                        failed.push(format!("{} cut at {len}: {why}", p.display()))
                    }
                    // A record cut after its last brace, a sample file
                    // after a whole line: still whole.
                    Outcome::Ok | Outcome::CleanError(_) => {}
                }
            }
        }
        eprintln!("fuzz {name:<8} truncations {cuts}");
        let _ = std::fs::remove_dir_all(env.dir.parent().unwrap());
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
