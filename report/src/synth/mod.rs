//! Synthetic run records: the fixtures of the tests and the records of the
//! scale benchmark (`cargo run --release -p mpiover-report --features synth
//! --example gen_records -- DIR`). Deterministic for a given seed. Behind the
//! `synth` feature: the command has no use for it.

use mpiover_common::histogram::{bucket_bounds, Bucket, Histogram};
use mpiover_common::profile::Basis;
use mpiover_common::record::*;
use mpiover_common::rng::Rng;

mod job;
mod scale;
pub use job::{scale_job, write_scale_log, Job};
pub use scale::scale_record;

/// Call times of one aggregation key: `base + Exp(noise) + delay` seconds.
#[derive(Debug, Clone, Copy)]
pub struct Times {
    pub base_s: f64,
    pub noise_s: f64,
    pub delay_s: f64,
}

/// Histogram and totals of `count` call times, in timer units of `unit_s`.
/// At most `max_samples` times are drawn; the histogram is scaled up to
/// `count` (keeping every bucket's sum inside its bounds). With a `tmax_s`,
/// also returns the exact online overhead of the drawn times, scaled alike.
pub struct Drawn {
    pub hist: Histogram,
    pub count: u64,
    pub sum_s: f64,
    pub min_s: f64,
    pub max_s: f64,
    pub overhead_s: f64,
}

pub fn draw(
    rng: &mut Rng,
    t: Times,
    count: u64,
    unit_s: f64,
    tmax_s: Option<f64>,
    max_samples: u64,
) -> Drawn {
    let n = count.min(max_samples).max(1);
    let mut h = Histogram::default();
    let mut overhead = 0.0;
    for _ in 0..n {
        let s = t.base_s + rng.exp(t.noise_s) + t.delay_s;
        let v = (s / unit_s).round().max(1.0) as u64;
        h.record(v);
        if let Some(tm) = tmax_s {
            overhead += (v as f64 * unit_s - tm).max(0.0);
        }
    }
    let mut hist = if n == count {
        h
    } else {
        // Scale to `count` calls.
        let f = count as f64 / n as f64;
        let mut buckets = Vec::with_capacity(h.buckets.len());
        let mut total = 0u64;
        for (i, b) in h.buckets.iter().enumerate() {
            let c = if i + 1 == h.buckets.len() {
                count.saturating_sub(total)
            } else {
                ((b.count() as f64 * f).round() as u64).min(count - total)
            };
            total += c;
            if c == 0 {
                continue;
            }
            let (lo, hi) = bucket_bounds(b.index());
            let mean = b.sum() as f64 / b.count() as f64;
            let sum = ((mean * c as f64).round() as u64).clamp(c * lo, c * (hi - 1).max(lo));
            buckets.push(Bucket(b.0, c, sum));
        }
        overhead *= f;
        Histogram { buckets }
    };
    if hist.buckets.is_empty() {
        hist.record(1);
    }
    let count = hist.count();
    let sum: u64 = hist.buckets.iter().map(|b| b.sum()).sum();
    let first = hist.buckets.first().unwrap();
    let last = hist.buckets.last().unwrap();
    Drawn {
        count,
        sum_s: sum as f64 * unit_s,
        min_s: bucket_bounds(first.index()).0 as f64 * unit_s,
        max_s: (bucket_bounds(last.index()).1 - 1) as f64 * unit_s,
        overhead_s: overhead,
        hist,
    }
}

/// A record with no sites or entries; fill them in.
pub fn empty_record(run_id: &str, rank: u32, ranks: u32, host: &str) -> Record {
    Record {
        schema: RECORD_SCHEMA.into(),
        run_id: run_id.into(),
        rank,
        ranks,
        host: host.into(),
        pid: 1000 + rank,
        mpi_library:
            "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022"
                .into(),
        thread_level: "single".into(),
        command: vec!["./halo".into(), "-n".into(), "100".into()],
        start_unix_s: 1_767_225_600.0,
        end_unix_s: 1_767_225_610.0,
        app_time_s: 10.0,
        mpi_time_s: 0.0,
        finished: "finalize".into(),
        timer: Timer {
            name: "rdtsc".into(),
            unit_s: 1e-9,
            resolution_s: 1e-9,
            cost_s: 2.7e-8,
        },
        tool: Tool {
            version: "0.1.0".into(),
            cost_per_call_s: 4e-8,
            calls: 0,
            depth: 1,
            max_keys: 4096,
            merge_s: None,
            python: None,
        },
        profile: None,
        sites: Vec::new(),
        functions: Vec::new(),
        entries: Vec::new(),
        folded: Folded::default(),
        warnings: Vec::new(),
        eager_limit: None,
        regions: Vec::new(),
        regions_folded: Default::default(),
    }
}

/// A resolved site.
pub fn site(id: u32, file: &str, line: u32, function: &str) -> Site {
    Site {
        id,
        address: format!("0x{:x}", 0x5555_5555_0000u64 + id as u64 * 0x40),
        module: Some("/home/user/halo/halo".into()),
        build_id: Some("3f2a9c".into()),
        offset: Some(format!("0x{:x}", 0x1000 + id * 0x40)),
        function: Some(function.into()),
        symbol: None,
        file: Some(file.into()),
        line: Some(line),
        inlined_into: Vec::new(),
        note: None,
        native: None,
        language: None,
    }
}

/// Parameters of one entry to add to a record.
pub struct EntrySpec<'a> {
    pub site: u32,
    pub function: &'a str,
    pub p: u32,
    pub bytes: u64,
    pub peer: Option<i32>,
    pub role: Option<&'a str>,
    pub completes: Option<&'a str>,
    pub post_site: Option<u32>,
    pub count: u64,
    pub times: Times,
    /// tmax of one call, written into the entry when `online` is set.
    pub tmax_s: f64,
}

/// Draws an entry's times and appends it to `rec`.
pub fn push_entry(
    rec: &mut Record,
    rng: &mut Rng,
    spec: EntrySpec,
    online: bool,
    max_samples: u64,
) {
    let d = draw(
        rng,
        spec.times,
        spec.count,
        rec.timer.unit_s,
        Some(spec.tmax_s),
        max_samples,
    );
    rec.mpi_time_s += d.sum_s;
    rec.tool.calls += d.count;
    rec.entries.push(Entry {
        site: spec.site,
        function: spec.function.into(),
        p: spec.p,
        bytes: spec.bytes,
        peer: spec.peer,
        cross_host: None,
        role: spec.role.map(str::to_string),
        completes: spec.completes.map(str::to_string),
        post_site: spec.post_site,
        requests: None,
        completed_at: None,
        count: d.count,
        sum_s: d.sum_s,
        min_s: d.min_s,
        max_s: d.max_s,
        tmax_s: online.then_some(spec.tmax_s),
        overhead_s: online.then_some(d.overhead_s),
        tmax_out_of_range: false,
        // As a calibration of 1000 samples would say: the report's test then
        // allows for tmax's own spread (beta-binomial null).
        tmax_basis: online.then_some(Basis::new(1000, false)),
        tmax_composed: None,
        tmax_missing: None,
        hist: d.hist,
    });
}

/// tmax of the fixture's machine: the 0.9 quantile of `base + Exp(noise)`.
pub fn fixture_tmax(t: Times) -> f64 {
    t.base_s + t.noise_s * 10f64.ln()
}

/// The fixture run: 4 ranks on 2 hosts with known waits.
///
/// - `halo.c:42 exchange()` `MPI_Recv` from the left neighbour: rank 1 sends
///   late, so rank 2 waits 2 ms per call (Late Sender, late rank 1).
/// - `halo.c:57 exchange()` `MPI_Wait` on a 1 MiB `MPI_Isend` posted at
///   `halo.c:55` to the right neighbour: rank 3 receives late, so rank 2 waits
///   1 ms per call (Late Receiver, late rank 3).
/// - `solver.c:88 solve()` `MPI_Allreduce`: rank 0 arrives 300 us late, the
///   others wait (Wait at NxN, late rank 0).
/// - `io.c:10 main()` `MPI_Bcast` and an unresolved `MPI_Send` in
///   `libhelper.so`: clean.
/// - a few folded calls.
///
/// `online`: entries carry tmax and overhead as if recorded with a profile.
pub fn fixture_run(online: bool) -> Vec<Record> {
    let ranks = 4u32;
    (0..ranks)
        .map(|r| fixture_record(r, ranks, online))
        .collect()
}

/// Rank `r`'s record of the fixture run.
fn fixture_record(r: u32, ranks: u32, online: bool) -> Record {
    let mut rng = Rng::new(42 + r as u64);
    let host = if r < 2 { "node0" } else { "node1" };
    let mut rec = empty_record("fixture-run-1", r, ranks, host);
    rec.app_time_s = 2.0 + 0.01 * r as f64;
    rec.end_unix_s = rec.start_unix_s + rec.app_time_s;
    if online {
        rec.profile = Some(ProfileUse {
            path: "/profiles/node.json".into(),
            matched: true,
            q_max: Some(0.9),
            note: None,
        });
    }
    rec.sites = fixture_sites(r);
    for s in fixture_entries(r, ranks) {
        // Folded calls have no key to look tmax up with.
        let is_other = s.function == "other";
        push_entry(&mut rec, &mut rng, s, online, 100_000);
        if is_other {
            let e = rec.entries.last_mut().unwrap();
            e.tmax_s = None;
            e.overhead_s = None;
        }
    }
    rec.folded = Folded { keys: 2, calls: 10 };
    rec.mpi_time_s += 0.01; // MPI_Init and friends
    rec.tool.calls += 20;
    rec.functions = vec![FunctionTotal {
        function: "MPI_Init".into(),
        calls: 1,
        time_s: 0.01,
    }];
    if r == 3 {
        rec.warnings
            .push("MPIOVER_DEPTH=1 but a frame was missing; used the direct caller".into());
    }
    rec
}

/// A site without debug information: only where the address is, if that.
fn unresolved_site(id: u32, address: String, module: Option<&str>, offset: Option<&str>) -> Site {
    Site {
        id,
        address,
        module: module.map(str::to_string),
        build_id: None,
        offset: offset.map(str::to_string),
        function: None,
        symbol: None,
        file: None,
        line: None,
        inlined_into: Vec::new(),
        note: None,
        native: None,
        language: None,
    }
}

/// The fixture's sites, as rank `r` resolved them (the shared library is
/// loaded at another address on each rank).
fn fixture_sites(r: u32) -> Vec<Site> {
    vec![
        site(0, "/home/user/halo/halo.c", 42, "exchange"),
        site(1, "/home/user/halo/halo.c", 57, "exchange"),
        site(2, "/home/user/halo/solver.c", 88, "solve"),
        site(3, "/home/user/halo/io.c", 10, "main"),
        unresolved_site(
            4,
            format!("0x7f00{:08x}", 0x1a2b + r * 0x10000),
            Some("/opt/helper/lib/libhelper.so"),
            Some("0x1a2b"),
        ),
        site(5, "/home/user/halo/halo.c", 55, "exchange"),
        unresolved_site(6, "0x0".into(), None, None),
    ]
}

/// Rank `r`'s entries: the waits of the fixture (see [`fixture_run`]) put
/// into its call times.
fn fixture_entries(r: u32, ranks: u32) -> [EntrySpec<'static>; 7] {
    let left = ((r + ranks - 1) % ranks) as i32;
    let right = ((r + 1) % ranks) as i32;
    let t = |base_s: f64, noise_s: f64| Times {
        base_s,
        noise_s,
        delay_s: 0.0,
    };
    let (small, big, coll) = (t(5e-6, 1e-6), t(250e-6, 20e-6), t(10e-6, 2e-6));
    let (bcast, send, post) = (t(20e-6, 4e-6), t(3e-6, 0.5e-6), t(1e-6, 0.2e-6));
    let recv = Times {
        delay_s: if left == 1 { 2e-3 } else { 0.0 },
        ..small
    };
    let wait = Times {
        delay_s: if right == 3 { 1e-3 } else { 0.0 },
        ..big
    };
    let allred = Times {
        delay_s: if r == 0 { 0.0 } else { 300e-6 },
        ..coll
    };
    // tmax is the machine's: `fixture_tmax` leaves the waits' delay out.
    let spec =
        |site: u32, function: &'static str, bytes: u64, count: u64, times: Times| EntrySpec {
            site,
            function,
            p: 4,
            bytes,
            peer: None,
            role: None,
            completes: None,
            post_site: None,
            count,
            times,
            tmax_s: fixture_tmax(times),
        };
    [
        EntrySpec {
            peer: Some(left),
            ..spec(0, "MPI_Recv", 8, 200, recv)
        },
        EntrySpec {
            peer: Some(right),
            ..spec(5, "MPI_Isend", 1 << 20, 100, post)
        },
        EntrySpec {
            peer: Some(right),
            completes: Some("MPI_Isend"),
            post_site: Some(5),
            ..spec(1, "MPI_Wait", 1 << 20, 100, wait)
        },
        EntrySpec {
            ..spec(2, "MPI_Allreduce", 8, 500, allred)
        },
        EntrySpec {
            role: Some(if r == 0 { "root" } else { "nonroot" }),
            ..spec(3, "MPI_Bcast", 4096, 50, bcast)
        },
        EntrySpec {
            peer: Some(right),
            ..spec(4, "MPI_Send", 16, 300, send)
        },
        // Folded calls: no tmax (the draw is made as if 0).
        EntrySpec {
            tmax_s: 0.0,
            ..spec(6, "other", 0, 10, send)
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drawn_histograms_are_valid_and_scaled() {
        let mut rng = Rng::new(1);
        let t = Times {
            base_s: 5e-6,
            noise_s: 1e-6,
            delay_s: 0.0,
        };
        let d = draw(&mut rng, t, 10_000, 1e-9, Some(6e-6), 300);
        assert!(d.hist.is_valid());
        assert_eq!(d.count, 10_000);
        assert!(
            (d.sum_s / d.count as f64 - 6e-6).abs() < 0.3e-6,
            "{}",
            d.sum_s
        );
        let ex = d.hist.excess(1e-9, fixture_tmax(t));
        assert!(
            (ex.calls_over / 10_000.0 - 0.1).abs() < 0.05,
            "{}",
            ex.calls_over
        );
    }

    #[test]
    fn fixture_records_pass_the_checks() {
        for online in [false, true] {
            for r in fixture_run(online) {
                mpiover_common::run::check_record(std::path::Path::new("x"), &r).unwrap();
            }
        }
        let r = scale_record(3, 16, 50, 7);
        mpiover_common::run::check_record(std::path::Path::new("x"), &r).unwrap();
    }
}
