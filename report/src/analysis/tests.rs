//! Tests of the analysis on records made in memory.

use std::path::Path;

use mpiover_aggregate::RankSite;
use mpiover_common::completion::KeyRef;
use mpiover_common::functions::WaitState;
use mpiover_common::record::Record;
use mpiover_common::run::{RankInfo, RunCheck, RunSummary};

use super::{Options, DEFAULT_TMAX_SPREAD};
use crate::analysis::late::late_by_arrival;
use crate::analysis::load::analyze_records;
use crate::model::{LateBasis, Metric, ProfileSource, Report, Significance, SiteReport};
use crate::synth::{self, fixture_tmax, Times};
use crate::tmax::{FnTmax, Tmax, TmaxSource};

fn summary_of(records: &[Record]) -> RunSummary {
    let mut c = RunCheck::new();
    for r in records {
        c.add(RankInfo::of(Path::new("x"), r)).unwrap();
    }
    c.finish().unwrap()
}

fn report(records: &[Record], tmax: Option<&dyn TmaxSource>) -> Report {
    analyze_records(
        "run",
        records,
        summary_of(records),
        tmax,
        &Options::default(),
    )
}

fn site<'a>(r: &'a Report, loc_end: &str, mpi: &str) -> &'a SiteReport {
    r.sites
        .iter()
        .find(|s| s.location.ends_with(loc_end) && s.mpi_function == mpi)
        .unwrap_or_else(|| panic!("no site {loc_end} {mpi}"))
}

/// The fixture's machine, as a profile: the tmax the fixture recorded.
struct FixtureProfile(f64);

impl TmaxSource for FixtureProfile {
    fn tmax(&self, k: &KeyRef) -> Result<Tmax, mpiover_common::completion::Missing> {
        let (base_s, noise_s) = match k.function {
            "MPI_Recv" => (5e-6, 1e-6),
            "MPI_Isend" => (1e-6, 0.2e-6),
            "MPI_Wait" => (250e-6, 20e-6),
            "MPI_Allreduce" => (10e-6, 2e-6),
            "MPI_Bcast" => (20e-6, 4e-6),
            "MPI_Send" => (3e-6, 0.5e-6),
            _ => return Err(mpiover_common::completion::Missing("not in the fixture")),
        };
        let t = Times {
            base_s,
            noise_s,
            delay_s: 0.0,
        };
        Ok(Tmax {
            s: fixture_tmax(t),
            out_of_range: false,
            basis: None,
            composed: None,
        })
    }
    fn name(&self) -> String {
        "mock.json".into()
    }
    fn q_max(&self) -> Option<f64> {
        Some(self.0)
    }
}

fn fixture_profile(q_max: f64) -> FixtureProfile {
    FixtureProfile(q_max)
}

fn check_fixture_attribution(r: &Report) {
    assert_eq!(r.summary.ranked_by.as_str(), "overhead");
    let recv = site(r, "halo.c:42", "MPI_Recv");
    // Rank 2 waits 2 ms in each of its 200 receives from rank 1.
    let o = recv.overhead_s.unwrap();
    assert!((o - 0.4).abs() < 0.04, "{o}");
    assert_eq!(recv.wait_state.map(WaitState::as_str), Some("Late Sender"));
    assert_eq!(recv.late_ranks, vec![1]);
    assert_eq!(recv.late_basis.map(LateBasis::as_str), Some("peer"));
    assert!(recv.significant);
    assert_eq!(recv.per_rank.worst_rank, 2);
    let wait = site(r, "halo.c:57", "MPI_Wait");
    let o = wait.overhead_s.unwrap();
    assert!((o - 0.1).abs() < 0.01, "{o}");
    assert_eq!(
        wait.wait_state.map(WaitState::as_str),
        Some("Late Receiver")
    );
    assert_eq!(wait.late_ranks, vec![3]);
    assert_eq!(
        wait.posted_at,
        vec!["/home/user/halo/halo.c:55".to_string()]
    );
    assert_eq!(wait.completes, vec!["MPI_Isend".to_string()]);
    let ar = site(r, "solver.c:88", "MPI_Allreduce");
    // Ranks 1-3 wait 300 us in each of 500 calls.
    let o = ar.overhead_s.unwrap();
    assert!((o - 0.45).abs() < 0.045, "{o}");
    assert_eq!(ar.wait_state.map(WaitState::as_str), Some("Wait at NxN"));
    assert_eq!(ar.late_ranks, vec![0]);
    assert_eq!(ar.late_basis.map(LateBasis::as_str), Some("arrival"));
    assert!(ar.significant);
    for (l, f) in [
        ("io.c:10", "MPI_Bcast"),
        ("libhelper.so+0x1a2b", "MPI_Send"),
    ] {
        let s = site(r, l, f);
        assert!(!s.significant, "{l}");
        assert_eq!(s.significance.as_str(), "not significant");
        assert!(s.late_ranks.is_empty());
        let ex = s.exceed_fraction.unwrap();
        assert!((0.03..0.2).contains(&ex), "{l}: {ex}");
    }
    assert_eq!(r.summary.significant_sites, 3);
    assert_eq!(r.sites[0].mpi_function, "MPI_Allreduce");
    assert_eq!(r.summary.worst.len(), 3);
    // Wait matrix: rank 2 waited on rank 1 most.
    let c = &r.wait_matrix.cells[0];
    assert_eq!((c.waiter, c.peer), (2, 1));
    assert_eq!(r.wait_matrix.metric, Metric::Overhead);
}

#[test]
fn online_overhead_is_attributed() {
    let r = report(&synth::fixture_run(true), None);
    check_fixture_attribution(&r);
    let p = r.methods.profile.as_ref().unwrap();
    assert_eq!(p.source, ProfileSource::Record);
    assert_eq!(p.matched, Some(true));
    assert_eq!(r.methods.q_max, Some(0.9));
}

/// A significant site whose overhead is a small share of the MPI time is
/// "negligible", not flagged; with `min_share` 0 the test alone decides.
#[test]
fn small_significant_sites_are_negligible() {
    let records = synth::fixture_run(true);
    let base = report(&records, None);
    let mpi = base.summary.mpi_time_s;
    let flagged: Vec<&SiteReport> = base.sites.iter().filter(|s| s.significant).collect();
    assert!(flagged.len() >= 2, "{}", flagged.len());
    // A threshold between the smallest and the largest flagged overhead.
    let (lo, hi) = flagged.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), s| {
        let o = s.overhead_s.unwrap();
        (lo.min(o), hi.max(o))
    });
    let min_share = (lo + hi) / 2.0 / mpi;
    let opts = Options {
        min_share,
        ..Options::default()
    };
    let r = analyze_records("run", &records, summary_of(&records), None, &opts);
    assert_eq!(r.methods.min_share, min_share);
    for s in &flagged {
        let t = site(&r, &s.location, &s.mpi_function);
        let big = s.overhead_s.unwrap() >= min_share * mpi;
        assert_eq!(t.significant, big, "{}", s.location);
        if big {
            assert_eq!(t.late_ranks, s.late_ranks);
        } else {
            assert_eq!(t.significance.as_str(), "negligible");
            assert!(t.late_ranks.is_empty(), "{}", s.location);
            assert_eq!(t.p_value, s.p_value, "the test itself is unchanged");
        }
    }
    let zero = Options {
        min_share: 0.0,
        ..Options::default()
    };
    let z = analyze_records("run", &records, summary_of(&records), None, &zero);
    let flagged_zero = z.sites.iter().filter(|s| s.significant).count();
    assert!(flagged_zero >= flagged.len());
}

#[test]
fn reanalysis_against_a_profile_matches_online() {
    let online = report(&synth::fixture_run(true), None);
    let prof = fixture_profile(0.9);
    // Records without online tmax, re-analysed from the histograms.
    let re = report(&synth::fixture_run(false), Some(&prof));
    check_fixture_attribution(&re);
    assert_eq!(
        re.methods.profile.as_ref().unwrap().source,
        ProfileSource::Option
    );
    for s in &online.sites {
        let t = re
            .sites
            .iter()
            .find(|x| x.location == s.location && x.mpi_function == s.mpi_function)
            .unwrap();
        match (s.overhead_s, t.overhead_s) {
            (Some(a), Some(b)) => assert!(
                (a - b).abs() <= 0.01 * a + 1e-6,
                "{}: {a} vs {b}",
                s.location
            ),
            (a, b) => assert_eq!(a.is_none(), b.is_none()),
        }
    }
}

/// The fixture's machine with the receives' tmax just under rank 2's 2 ms
/// waits: every one of those exceeds tmax, none exceeds 1.5 times it.
fn tmax_near_the_waits(k: &KeyRef) -> Option<(f64, bool)> {
    if k.function == "MPI_Recv" {
        return Some((1.9e-3, false));
    }
    fixture_profile(0.99).tmax(k).ok().map(|t| (t.s, false))
}

#[test]
fn waits_just_above_tmax_are_marginal() {
    let prof = FnTmax {
        name: "near.json".into(),
        q_max: Some(0.99),
        f: |function: &str, p: u32, bytes: u64, role: Option<&str>| {
            tmax_near_the_waits(&KeyRef {
                function,
                p,
                bytes,
                role,
                completes: None,
                requests: None,
            })
        },
    };
    let records = synth::fixture_run(false);
    let r = report(&records, Some(&prof));
    let recv = site(&r, "halo.c:42", "MPI_Recv");
    assert_eq!(recv.significance, Significance::Marginal, "{recv:?}");
    assert!(!recv.significant && recv.late_ranks.is_empty());
    let m = recv.margin.as_ref().expect("a margin");
    assert_eq!(m.factor, DEFAULT_TMAX_SPREAD);
    assert!(m.calls_over_tmax < 1.0 && m.overhead_s < 1e-6, "{m:?}");
    assert!(r.summary.marginal_sites >= 1);
    assert_eq!(r.methods.stability.tmax_spread, DEFAULT_TMAX_SPREAD);
    // Without the check the same site is significant.
    let off = Options {
        tmax_spread: 1.0,
        ..Options::default()
    };
    let r = analyze_records("run", &records, summary_of(&records), Some(&prof), &off);
    let recv = site(&r, "halo.c:42", "MPI_Recv");
    assert_eq!(recv.significance, Significance::Significant);
    assert!(recv.margin.is_none());
}

#[test]
fn a_larger_tmax_leaves_no_significant_site() {
    let prof = FnTmax {
        name: "slow.json".into(),
        q_max: Some(0.99),
        f: |_: &str, _: u32, _: u64, _: Option<&str>| Some((1.0, true)),
    };
    let r = report(&synth::fixture_run(false), Some(&prof));
    assert_eq!(r.summary.overhead_s, Some(0.0));
    assert_eq!(r.summary.significant_sites, 0);
    assert!(r
        .sites
        .iter()
        .all(|s| s.wait_state.is_none() && s.late_ranks.is_empty()));
    assert!(r.methods.lookups.out_of_range_calls > 0);
    assert!(r
        .warnings
        .iter()
        .any(|w| w.contains("outside the profile's measured range")));
}

#[test]
fn without_a_profile_sites_are_ranked_by_time() {
    let r = report(&synth::fixture_run(false), None);
    assert_eq!(r.summary.ranked_by.as_str(), "time");
    assert!(r.summary.overhead_s.is_none());
    assert!(r.methods.hint.as_ref().unwrap().contains("--profile"));
    assert!(r.sites.windows(2).all(|w| w[0].time_s >= w[1].time_s));
    assert!(r
        .sites
        .iter()
        .all(|s| s.overhead_s.is_none() && s.wait_state.is_none() && !s.significant));
    assert_eq!(r.wait_matrix.metric, Metric::Time);
    // The figures of the first report format.
    let s = site(&r, "halo.c:42", "MPI_Recv");
    assert_eq!(s.calls, 800);
    assert_eq!(s.bytes, 800 * 8);
    assert_eq!(s.per_rank.time_max_rank, 2);
    assert_eq!(s.file.as_deref(), Some("/home/user/halo/halo.c"));
    assert_eq!(s.line, Some(42));
    assert_eq!(s.function.as_deref(), Some("exchange"));
    assert_eq!(r.ranks.len(), 4);
    let total: f64 = r.ranks.iter().map(|k| k.mpi_time_s).sum();
    assert!((total - r.summary.mpi_time_s).abs() < 1e-12);
}

/// A slow `MPI_Init_thread` (227 ms in one real run) is start-up, on its
/// own line: it is not MPI time, and no %MPI is a share of it.
#[test]
fn startup_and_shutdown_are_not_mpi_time() {
    let mut recs = synth::fixture_run(false);
    for r in &mut recs {
        r.mpi_time_s += 5.0 + 0.5;
        r.functions.push(mpiover_common::record::FunctionTotal {
            function: "MPI_Init_thread".into(),
            calls: 1,
            time_s: 5.0,
        });
        r.functions.push(mpiover_common::record::FunctionTotal {
            function: "MPI_Finalize".into(),
            calls: 1,
            time_s: 0.5,
        });
    }
    let plain = report(&synth::fixture_run(false), None);
    let r = report(&recs, None);
    let n = recs.len() as f64;
    // The fixture's own MPI_Init (10 ms a rank) is start-up too.
    assert!(
        (r.summary.startup_s - n * 5.01).abs() < 1e-9,
        "{}",
        r.summary.startup_s
    );
    assert!((r.summary.shutdown_s - n * 0.5).abs() < 1e-9);
    assert!((r.summary.mpi_time_s - plain.summary.mpi_time_s).abs() < 1e-9);
    let total: f64 = r.ranks.iter().map(|k| k.mpi_time_s).sum();
    assert!((total - r.summary.mpi_time_s).abs() < 1e-9);
    let (a, b) = (
        site(&r, "halo.c:42", "MPI_Recv"),
        site(&plain, "halo.c:42", "MPI_Recv"),
    );
    assert!((a.time_share_of_mpi - b.time_share_of_mpi).abs() < 1e-12);
    // The text report's own line for it: `export::text`'s tests.
}

#[test]
fn sites_match_by_location_not_address() {
    // Two ranks, different addresses (ASLR), same line; an unresolved
    // site at the same module offset; a third line that differs.
    let mut recs = Vec::new();
    for r in 0..2u32 {
        let mut rec = synth::empty_record("aslr", r, 2, "h");
        let mut a = synth::site(0, "a.c", 10, "f");
        a.address = format!("0x{:x}", 0x5000 + r * 0x1000);
        let mut u = synth::site(1, "x", 0, "");
        u.file = None;
        u.line = None;
        u.function = None;
        u.module = Some("/lib/libx.so".into());
        u.offset = Some("0x40".into());
        u.address = format!("0x{:x}", 0x7000 + r * 0x1000);
        let b = synth::site(2, "a.c", 11 + r, "f");
        rec.sites = vec![a, u, b];
        let mut rng = mpiover_common::rng::Rng::new(r as u64);
        for (sid, f) in [
            (0, "MPI_Recv"),
            (1, "MPI_Recv"),
            (2, "MPI_Recv"),
            (0, "MPI_Barrier"),
        ] {
            synth::push_entry(
                &mut rec,
                &mut rng,
                synth::EntrySpec {
                    site: sid,
                    function: f,
                    p: 2,
                    bytes: 8,
                    peer: Some(1 - r as i32),
                    role: None,
                    completes: None,
                    post_site: None,
                    count: 10,
                    times: Times {
                        base_s: 1e-6,
                        noise_s: 1e-7,
                        delay_s: 0.0,
                    },
                    tmax_s: 2e-6,
                },
                false,
                100,
            );
        }
        recs.push(rec);
    }
    let r = report(&recs, None);
    let locs: Vec<(String, String, u32)> = r
        .sites
        .iter()
        .map(|s| (s.location.clone(), s.mpi_function.clone(), s.per_rank.ranks))
        .collect();
    assert_eq!(r.sites.len(), 5, "{locs:?}");
    assert_eq!(site(&r, "a.c:10", "MPI_Recv").per_rank.ranks, 2);
    assert_eq!(site(&r, "a.c:10", "MPI_Barrier").per_rank.ranks, 2);
    assert_eq!(site(&r, "libx.so+0x40", "MPI_Recv").per_rank.ranks, 2);
    assert_eq!(site(&r, "a.c:11", "MPI_Recv").per_rank.ranks, 1);
    assert_eq!(site(&r, "a.c:12", "MPI_Recv").per_rank.ranks, 1);
}

#[test]
fn late_ranks_by_arrival() {
    let rows: Vec<RankSite> = (0..8)
        .map(|r| RankSite {
            rank: r,
            calls: 10,
            time: if r == 5 {
                0.01
            } else if r == 2 {
                0.4
            } else {
                1.0
            },
            overhead: None,
            root: r == 0,
        })
        .collect();
    let late = late_by_arrival(&rows, None, false);
    assert_eq!(late.iter().map(|l| l.0).collect::<Vec<_>>(), vec![5, 2]);
    // Balanced: nobody is late.
    let flat: Vec<RankSite> = rows
        .iter()
        .map(|r| RankSite {
            time: 1.0 + 0.001 * r.rank as f64,
            ..*r
        })
        .collect();
    assert!(late_by_arrival(&flat, None, false).is_empty());
    // Different call counts at the same time per call: nobody is late.
    let counts: Vec<RankSite> = rows
        .iter()
        .map(|r| RankSite {
            calls: 10 + 100 * r.rank as u64,
            time: 1e-3 * (10 + 100 * r.rank) as f64,
            ..*r
        })
        .collect();
    assert!(late_by_arrival(&counts, None, false).is_empty());
    // One very slow rank (noise) does not make everybody late.
    let mut noisy: Vec<RankSite> = (0..64)
        .map(|r| RankSite {
            rank: r,
            calls: 100,
            time: 1.0 + 1e-3 * (r % 7) as f64,
            overhead: None,
            root: false,
        })
        .collect();
    noisy[9].time = 0.2;
    noisy[40].time = 9.0;
    let late = late_by_arrival(&noisy, None, false);
    assert_eq!(late.iter().map(|l| l.0).collect::<Vec<_>>(), vec![9]);
    // Roots are left out for Early Reduce.
    assert_eq!(
        late_by_arrival(&rows, None, true)
            .iter()
            .map(|l| l.0)
            .collect::<Vec<_>>(),
        vec![5, 2]
    );
}

#[test]
fn too_few_calls_are_marked() {
    let mut recs = Vec::new();
    let mut rec = synth::empty_record("few", 0, 1, "h");
    rec.sites = vec![synth::site(0, "a.c", 1, "f")];
    rec.profile = Some(mpiover_common::record::ProfileUse {
        path: "p".into(),
        matched: true,
        q_max: Some(0.5),
        note: None,
    });
    let mut rng = mpiover_common::rng::Rng::new(3);
    synth::push_entry(
        &mut rec,
        &mut rng,
        synth::EntrySpec {
            site: 0,
            function: "MPI_Recv",
            p: 1,
            bytes: 8,
            peer: Some(0),
            role: None,
            completes: None,
            post_site: None,
            count: 3,
            times: Times {
                base_s: 1e-3,
                noise_s: 1e-6,
                delay_s: 0.0,
            },
            tmax_s: 1e-6,
        },
        true,
        100,
    );
    recs.push(rec);
    let r = report(&recs, None);
    assert_eq!(r.sites[0].significance.as_str(), "too few calls");
    assert_eq!(r.methods.min_calls, Some(5));
}
