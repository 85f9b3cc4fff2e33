//! Fits every model family to the kept samples of calibration profiles and reports, per family,
//! on how many entries the chi-square test accepts it and the distribution of chi2^ / critical
//! value, then which family the selection chooses. Run with
//! `cargo run --release -p mpiover-stats --example real_samples -- DIR_OR_FILES...`
//! (a directory stands for every `*.json` in it). Each entry's `samples` holds the run-times as
//! ticks of `unit_s` above `base_s`, LEB128 varints in base64 (the profile format's
//! `samples` object); the fit uses the profile's timer resolution, as the calibrator does.
use std::path::PathBuf;
use std::time::Instant;

use mpiover_stats::{fit, FitOptions, ModelKind};
use serde_json::Value;

fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let s = s.trim_end_matches('=').as_bytes();
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    for chunk in s.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= val(c)? << (18 - 6 * i);
        }
        out.extend_from_slice(&acc.to_be_bytes()[1..chunk.len()]);
    }
    Some(out)
}

fn varints(bytes: &[u8]) -> Vec<u64> {
    let (mut out, mut v, mut shift) = (Vec::new(), 0u64, 0u32);
    for &b in bytes {
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            out.push(v);
            (v, shift) = (0, 0);
        } else {
            shift += 7;
        }
    }
    out
}

fn times(samples: &Value) -> Option<Vec<f64>> {
    let unit = samples["unit_s"].as_f64()?;
    let base = samples["base_s"].as_f64()?;
    let ticks = varints(&base64_decode(samples["ticks"].as_str()?)?);
    Some(ticks.iter().map(|&v| base + v as f64 * unit).collect())
}

fn quantile(mut v: Vec<f64>, q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1]
}

fn main() {
    let args: Vec<PathBuf> = std::env::args().skip(1).map(PathBuf::from).collect();
    if args.is_empty() {
        eprintln!("usage: real_samples DIR_OR_PROFILE.json... (calibration profiles that keep their samples)");
        std::process::exit(2);
    }
    let roots = args;
    let mut files: Vec<PathBuf> = Vec::new();
    for r in roots {
        match std::fs::read_dir(&r) {
            Ok(d) => files.extend(
                d.filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "json")),
            ),
            Err(_) => files.push(r),
        }
    }
    files.sort();
    let n_kinds = ModelKind::ALL.len();
    let mut accepted = vec![0usize; n_kinds];
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); n_kinds];
    let mut chosen = vec![0usize; n_kinds + 1];
    let mut old_rule_fallback = 0usize;
    let (mut entries, mut failed) = (0usize, 0usize);
    let mut cost = Vec::new();
    let mut sizes = Vec::new();
    for f in &files {
        let Ok(text) = std::fs::read_to_string(f) else {
            eprintln!("cannot read {}", f.display());
            continue;
        };
        let Ok(doc) = serde_json::from_str::<Value>(&text) else {
            eprintln!("not JSON: {}", f.display());
            continue;
        };
        let resolution = doc["environment"]["timer"]["resolution_s"]
            .as_f64()
            .unwrap_or(1e-9)
            .max(1e-9);
        let opts = FitOptions {
            resolution_s: resolution,
            q_max: doc["method"]["q_max"].as_f64().unwrap_or(0.99),
            alpha: doc["method"]["alpha"].as_f64().unwrap_or(0.05),
            ..FitOptions::default()
        };
        for e in doc["entries"].as_array().into_iter().flatten() {
            let Some(v) = times(&e["samples"]) else {
                continue;
            };
            entries += 1;
            let t0 = Instant::now();
            let r = fit(&v, &opts);
            cost.push(t0.elapsed().as_secs_f64());
            let Ok(r) = r else {
                failed += 1;
                continue;
            };
            sizes.push(r.n as f64);
            for (i, k) in ModelKind::ALL.iter().enumerate() {
                if let Some(m) = r.model(*k) {
                    accepted[i] += usize::from(m.accepted);
                    if let Some(c) = m.critical {
                        ratios[i].push(m.chi2 / c);
                    }
                }
            }
            let idx = r
                .chosen
                .and_then(|c| ModelKind::ALL.iter().position(|&k| k == c))
                .unwrap_or(n_kinds);
            chosen[idx] += 1;
            // The rule before these families: Poisson or exponential, else fallback.
            let old = [ModelKind::Poisson, ModelKind::Exponential]
                .iter()
                .any(|&k| r.model(k).is_some_and(|m| m.accepted));
            old_rule_fallback += usize::from(!old);
        }
    }
    let fitted = entries - failed;
    println!(
        "{} files, {entries} entries with samples, {fitted} fitted ({failed} could not be: all \
         equal or one class); N median {:.0}",
        files.len(),
        quantile(sizes, 0.5)
    );
    println!(
        "{:<12} {:>9} {:>9} {:>16} {:>16} {:>9}",
        "family", "accepted", "of", "chi2/crit median", "chi2/crit p90", "chosen"
    );
    for (i, k) in ModelKind::ALL.iter().enumerate() {
        println!(
            "{:<12} {:>9} {:>9} {:>16.2} {:>16.2} {:>9}",
            k.name(),
            accepted[i],
            fitted,
            quantile(ratios[i].clone(), 0.5),
            quantile(ratios[i].clone(), 0.9),
            chosen[i]
        );
    }
    println!(
        "fallback (no family accepted): {} of {fitted}; with Poisson and exponential only: {}",
        chosen[n_kinds], old_rule_fallback
    );
    println!(
        "fit() per entry: median {:.0} us, p90 {:.0} us, max {:.0} us",
        quantile(cost.clone(), 0.5) * 1e6,
        quantile(cost.clone(), 0.9) * 1e6,
        quantile(cost, 1.0) * 1e6
    );
}
