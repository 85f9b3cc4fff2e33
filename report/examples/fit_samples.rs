//! Writes the kept samples of a profile's entry as an `mpiover fit` sample
//! file (one run-time in seconds per line): real calibration samples, for
//! the fuzz tests' seed inputs (`scripts/fuzz-seeds`).
//!
//!     cargo run --release -p mpiover-report --example fit_samples -- PROFILE N > samples.txt
//!
//! N picks the N-th entry that keeps its samples (from 0).

use mpiover_common::profile::Profile;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path, n] = args.as_slice() else {
        anyhow::bail!("usage: fit_samples PROFILE N");
    };
    let n: usize = n.parse()?;
    let p = Profile::load(path)?;
    let e = p
        .entries
        .iter()
        .filter(|e| e.samples.is_some())
        .nth(n)
        .ok_or_else(|| anyhow::anyhow!("{path}: fewer than {} entries keep samples", n + 1))?;
    let times = e.samples.as_ref().unwrap().times_s()?;
    let mut out = format!(
        "# {} p={} bytes={}: {} samples from {path}\n",
        e.function,
        e.p,
        e.bytes,
        times.len()
    );
    for t in times {
        out += &format!("{t:e}\n");
    }
    mpiover_report::cli::write_out(None, out.as_bytes())
}
