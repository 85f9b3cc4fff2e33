//! Writes synthetic run records for tests and the scale benchmark.
//!
//! ```text
//! cargo run --release -p mpiover-report --features synth --example gen_records -- DIR [--ranks N] [--sites S] [--seed X]
//! cargo run --release -p mpiover-report --features synth --example gen_records -- --fixture online|noprofile DIR
//! ```
//! The scale mode writes `ranks` records of `sites` sites each (default 4096 x
//! 200), in parallel; the fixture mode writes the 4-rank test fixture.

use std::path::PathBuf;

use mpiover_common::record::rank_file_name;
use mpiover_report::synth;

fn main() {
    if let Err(e) = run() {
        eprintln!("gen_records: error: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let (mut dir, mut ranks, mut sites, mut seed, mut fixture, mut log) =
        (None, 4096u32, 200u32, 1u64, None, false);
    while let Some(a) = args.next() {
        let mut val = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--ranks" => {
                ranks = val("--ranks")?
                    .parse()
                    .map_err(|e| format!("--ranks: {e}"))?
            }
            "--sites" => {
                sites = val("--sites")?
                    .parse()
                    .map_err(|e| format!("--sites: {e}"))?
            }
            "--seed" => seed = val("--seed")?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--fixture" => fixture = Some(val("--fixture")?),
            "--log" => log = true,
            _ if dir.is_none() => dir = Some(PathBuf::from(a)),
            _ => return Err(format!("unexpected argument {a}")),
        }
    }
    let dir = dir.ok_or(
        "usage: gen_records DIR [--ranks N] [--sites S] [--seed X] [--log] | --fixture online|noprofile DIR",
    )?;
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let write = |rec: &mpiover_common::record::Record| -> Result<(), String> {
        let p = dir.join(rank_file_name(rec.rank));
        let bytes = serde_json::to_vec(rec).map_err(|e| e.to_string())?;
        std::fs::write(&p, bytes).map_err(|e| format!("{}: {e}", p.display()))
    };
    if let Some(f) = fixture {
        let online = match f.as_str() {
            "online" => true,
            "noprofile" => false,
            _ => return Err(format!("unknown fixture {f}")),
        };
        for rec in synth::fixture_run(online) {
            write(&rec)?;
        }
        return Ok(());
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    if log {
        return write_log(&dir, ranks, sites, seed, threads);
    }
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let write = &write;
                s.spawn(move || -> Result<(), String> {
                    let mut r = t;
                    while r < ranks {
                        write(&synth::scale_record(r, ranks, sites, seed))?;
                        r += threads;
                    }
                    Ok(())
                })
            })
            .collect();
        hs.into_iter().try_for_each(|h| h.join().unwrap())
    })
}

/// The job as one merged job log, made directly (`synth::write_scale_log`).
fn write_log(
    dir: &std::path::Path,
    ranks: u32,
    sites: u32,
    seed: u64,
    threads: u32,
) -> Result<(), String> {
    let t0 = std::time::Instant::now();
    let bytes = synth::write_scale_log(dir, ranks, sites, seed, threads)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    eprintln!(
        "gen_records: {ranks} ranks x {sites} sites: log of {} MB written in {:.1} s",
        bytes / 1_000_000,
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}
