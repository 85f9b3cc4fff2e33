//! The summary printed when the job ends.

use std::path::Path;
use std::time::Duration;

use mpiover_report::analysis::{analyze_dir, Options};
use mpiover_report::model::Report;
use mpiover_report::units::{pct, secs};

use crate::record_cmd::preload::LIB_NAME;

/// Analyses the run directory and renders a short summary. Never fails: a
/// problem with the records becomes a line of the summary.
pub(crate) fn summary(out: &Path, profile: Option<&Path>, code: i32, elapsed: Duration) -> String {
    let mut s = String::new();
    s += &format!(
        "\nmpiover: the job exited with {code} after {}; records in {}\n",
        secs(elapsed.as_secs_f64()),
        out.display()
    );
    let opts = Options {
        detail_sites: 0,
        ..Options::default()
    };
    let mut report = match analyze_dir(out, None, &opts) {
        Ok(r) => r,
        Err(e) => {
            s += &format!(
                "mpiover: no report: {e}\n  (no records: did the program call MPI_Init? \
                 Is {LIB_NAME} built for the MPI the program uses?)\n"
            );
            return s;
        }
    };
    let mut reanalysed = false;
    // Records made without online overhead (an interposer without profile
    // support, or a profile it rejected): re-analyse against the profile.
    if report.summary.overhead_s.is_none() {
        if let Some(p) = profile {
            match mpiover_report::tmax::open_profile(p, None)
                .and_then(|t| Ok(analyze_dir(out, Some(t.as_ref()), &opts)?))
            {
                Ok(r) => {
                    report = r;
                    reanalysed = true;
                }
                Err(e) => {
                    s += &format!(
                        "mpiover: the records hold no overhead and re-analysis failed: {e:#}\n"
                    )
                }
            }
        }
    }
    s += &render(&report);
    // A command to paste: this mpiover as the shell finds it, paths quoted.
    use mpiover_common::suggest::{program, quote};
    let mut again = format!(
        "{} report {}",
        program("mpiover"),
        quote(&out.to_string_lossy())
    );
    if reanalysed {
        if let Some(p) = profile {
            again += &format!(" --profile {}", quote(&p.to_string_lossy()));
        }
    }
    s += &format!("Full report: {again}   (-f html -o report.html for charts)\n");
    s
}

/// The summary block of a report: totals, the worst sites in one sentence
/// each (the report's own summary), warnings.
pub fn render(r: &Report) -> String {
    let sm = &r.summary;
    let mut s = String::new();
    s += &format!(
        "  ranks {} of {}   application {} (longest rank {})   MPI {} ({} of application; \
         start-up and shut-down {} on top)\n",
        r.run.ranks_present,
        r.run.ranks,
        secs(sm.app_time_s),
        secs(sm.app_wall_s),
        secs(sm.mpi_time_s),
        pct(if sm.app_time_s > 0.0 {
            sm.mpi_time_s / sm.app_time_s
        } else {
            0.0
        }),
        secs(sm.startup_s + sm.shutdown_s),
    );
    match sm.overhead_s {
        Some(o) => {
            s += &format!(
                "  overhead {} ({} of MPI time, {} of application); {} of {} sites significant\n",
                secs(o),
                pct(sm.overhead_share_of_mpi.unwrap_or(0.0)),
                pct(sm.overhead_share_of_app.unwrap_or(0.0)),
                sm.significant_sites,
                sm.sites
            );
        }
        None => {
            s += "  overhead unknown without a profile (calibrate with mpiover-calibrate, record \
                  with --profile): sites ranked by time\n";
        }
    }
    for (i, w) in sm.worst.iter().enumerate() {
        s += &format!("  {}. {w}\n", i + 1);
    }
    for w in r.warnings.iter().take(5) {
        s += &format!("  warning: {w}\n");
    }
    if r.warnings.len() > 5 {
        s += &format!("  ... and {} more warnings\n", r.warnings.len() - 5);
    }
    s
}
