//! What each format's mutant is given to: the functions the `mpiover`
//! command calls on that file, on the file written where the command would
//! read it, with their output rendered as the command renders it.

use std::path::{Path, PathBuf};

use mpiover_report::analysis::{analyze_dir, Options};
use mpiover_report::export::{export, ExportOptions, ReportFormat};
use mpiover_report::fit::{FitArgs, FitFormat};
use mpiover_report::model::Report;
use mpiover_report::profile_cmd::{run_to, ProfileCmd};
use mpiover_report::tmax::{open_profile, TmaxSource};

/// What the readers are run against: a directory of their own, a good run
/// and a good profile to combine the mutant with.
pub struct Env {
    pub dir: PathBuf,
    pub good_run: PathBuf,
    pub good_profile: PathBuf,
    /// Profiles of other calibrations, to merge a mutant with.
    pub profiles: Vec<PathBuf>,
    tmax: Box<dyn TmaxSource>,
    good_report: Report,
}

fn opts() -> Options {
    Options {
        threads: 1,
        ..Options::default()
    }
}

impl Env {
    pub fn new(dir: PathBuf, good_run: PathBuf, profiles: Vec<PathBuf>) -> Env {
        let good_profile = profiles[0].clone();
        std::fs::create_dir_all(&dir).unwrap();
        let tmax = open_profile(&good_profile, None).unwrap();
        let good_report = analyze_dir(&good_run, None, &opts()).unwrap();
        Env {
            dir,
            good_run,
            good_profile,
            profiles,
            tmax,
            good_report,
        }
    }

    /// A fresh run directory holding only `name` with `bytes`.
    pub fn run_dir_with(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let d = self.dir.join("run");
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(name), bytes).unwrap();
        d
    }

    pub fn file_with(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let p = self.dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }
}

/// `mpiover report` (text and JSON) and `mpiover diff` against a good run,
/// on a run directory; every other mutant with the good profile
/// (`--profile`). A report's JSON must be JSON.
pub fn report(env: &Env, dir: &Path, index: u64) -> anyhow::Result<()> {
    let tmax = (index % 2 == 1).then(|| env.tmax.as_ref());
    let rep = analyze_dir(dir, tmax, &opts())?;
    rendered(&rep);
    let d = mpiover_report::diff::diff(std::slice::from_ref(&env.good_report), &[rep], 0.05);
    mpiover_report::export::diff::text(&d, 30);
    let j = mpiover_report::export::diff::json(&d);
    assert!(
        serde_json::from_slice::<serde_json::Value>(&j).is_ok(),
        "the diff's JSON does not parse"
    );
    Ok(())
}

fn rendered(rep: &Report) {
    let o = ExportOptions {
        top: None,
        color: false,
    };
    export(rep, ReportFormat::Text, &o);
    let j = export(rep, ReportFormat::Json, &o);
    assert!(
        serde_json::from_slice::<serde_json::Value>(&j).is_ok(),
        "the report's JSON does not parse"
    );
}

/// Every `mpiover profile` command that reads one profile, and a report
/// with it; `profile check` (it fits every entry again: slow) on one
/// mutant in `check_every`. A merged profile must load again.
pub fn profile(env: &Env, p: &Path, index: u64, check_every: u64) -> Vec<anyhow::Result<()>> {
    let mut sink = |_: &[u8]| Ok(());
    let path = p.to_path_buf();
    let merged = env.dir.join("merged.json");
    let mut out = vec![
        run_to(
            &ProfileCmd::Show {
                profile: path.clone(),
                function: index.is_multiple_of(3).then(|| "send".into()),
            },
            &mut sink,
        ),
        run_to(
            &ProfileCmd::Lookup {
                profile: path.clone(),
                function: ["MPI_Send", "allreduce"][index as usize % 2].into(),
                p: 2,
                bytes: 1 << (index % 24),
                role: None,
                same_host: None,
                json: index.is_multiple_of(2),
            },
            &mut sink,
        ),
        run_to(
            &ProfileCmd::Merge {
                a: path.clone(),
                // Another calibration than the mutant's seed input (seed
                // input `index % n`), of the other MPI: --force.
                b: env.profiles[(index as usize + 1) % env.profiles.len()].clone(),
                output: merged.clone(),
                force: true,
            },
            &mut sink,
        )
        .map(|()| {
            let again = mpiover_common::profile::Profile::load(&merged);
            assert!(again.is_ok(), "a merged profile does not load: {again:?}");
        }),
        open_profile(p, (index % 4 == 1).then_some(0.95)).and_then(|t| {
            let rep = analyze_dir(&env.good_run, Some(t.as_ref()), &opts())?;
            rendered(&rep);
            Ok(())
        }),
    ];
    if index.is_multiple_of(check_every) {
        out.push(run_to(
            &ProfileCmd::Check {
                profile: path,
                against: index.is_multiple_of(2).then(|| env.good_profile.clone()),
                rel_tol: 0.05,
                json: false,
            },
            &mut sink,
        ));
    }
    out
}

/// `mpiover fit` on a sample file, in text or JSON, on one mutant in
/// `fit_every` (the fit takes milliseconds); its reader alone on the others.
pub fn fit(p: &Path, index: u64, fit_every: u64) -> anyhow::Result<()> {
    if !index.is_multiple_of(fit_every) {
        return mpiover_report::fit::read_sample(&p.display().to_string()).map(|_| ());
    }
    let args = FitArgs {
        file: p.display().to_string(),
        resolution: 1e-9,
        q: 0.99,
        alpha: 0.05,
        bin_width: None,
        format: if index.is_multiple_of(2) {
            FitFormat::Text
        } else {
            FitFormat::Json
        },
        no_refine: false,
        no_tail: index.is_multiple_of(3),
        min_samples: mpiover_stats::FitOptions::default().min_samples,
    };
    mpiover_report::fit::output(&args).map(|_| ())
}
