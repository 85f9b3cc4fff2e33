//! The report in words: sentences about sites, for the summary every format
//! shows, and the methods' lines of the text and HTML reports.
//!
//! Beside the exporters rather than under them because the assembly writes
//! the summary's sentences into the report (every format shows the same
//! words), so both the assembly and the exporters read this module; it reads
//! only the report model.

use crate::model::{
    LateBasis, Lookups, Methods, SiteReport, TimerInfo, ToolCost, CAUSE_OF_OVERHEAD,
    CAUSE_OF_REFERENCE,
};

pub mod paths;
pub mod regions;

/// One sentence about a site for the summary.
pub fn sentence(s: &SiteReport, mpi_time: f64, overhead_known: bool) -> String {
    use crate::units::{count, pct, secs};
    let place = match &s.function {
        Some(f) => format!("{} in {f}()", s.location),
        None => s.location.clone(),
    };
    if overhead_known {
        let ovh = s.overhead_s.unwrap_or(0.0);
        let mut t = format!(
            "{place}: {} lost {} beyond tmax in {} calls ({} of MPI time)",
            s.mpi_function,
            secs(ovh),
            count(s.calls),
            pct(if mpi_time > 0.0 { ovh / mpi_time } else { 0.0 })
        );
        if let Some(w) = &s.wait_state {
            t.push_str(&format!(", {w}"));
            if !s.late_ranks.is_empty() {
                let who: Vec<String> = s.late_ranks.iter().take(3).map(|r| r.to_string()).collect();
                let verb = match s.late_basis {
                    Some(LateBasis::Peer) => "waiting mostly on rank",
                    _ => "late rank",
                };
                t.push_str(&format!(
                    ", {verb}{} {}",
                    if who.len() > 1 { "s" } else { "" },
                    who.join(", ")
                ));
            }
        }
        if !s.significant {
            t.push_str(&format!(" ({})", s.significance));
        }
        t.push('.');
        t
    } else {
        format!(
            "{place}: {} took {} in {} calls ({} of MPI time).",
            s.mpi_function,
            secs(s.time_s),
            count(s.calls),
            pct(s.time_share_of_mpi)
        )
    }
}

/// How sites were tested, in one sentence (the methods block of text and HTML).
/// The wait-state rules: the rendezvous thresholds (within a host and
/// across hosts when they differ) and where they come from; `bytes` shows a
/// size.
pub fn wait_states(m: &Methods, bytes: impl Fn(u64) -> String) -> String {
    let sizes = match m.rendezvous_bytes_cross_host {
        Some(c) => format!(
            "sends of {} or more within a host, of {} or more across hosts",
            bytes(m.rendezvous_bytes),
            bytes(c)
        ),
        None => format!("sends of {} or more", bytes(m.rendezvous_bytes)),
    };
    format!(
        "Scalasca's names; {sizes} are rendezvous ({}), MPI_Ssend always, MPI_Bsend never",
        m.rendezvous_detail
    )
}

/// The methods line's note on the materiality threshold of significance.
fn negligible(min_share: f64) -> String {
    if min_share > 0.0 {
        format!(
            "; a significant site with overhead below {} of the MPI time is marked negligible",
            crate::units::pct(min_share)
        )
    } else {
        String::new()
    }
}

pub fn significance(m: &Methods) -> String {
    format!(
        "q_max {}, alpha {}{}: {}{}",
        m.q_max
            .map(|q| q.to_string())
            .unwrap_or_else(|| "unknown".into()),
        m.alpha,
        m.min_calls
            .map(|c| format!(
                ", at least {c} call{} needed",
                if c == 1 { "" } else { "s" }
            ))
            .unwrap_or_default(),
        m.test,
        negligible(m.min_share)
    ) + &stability(m)
}

/// What a significant site was tested against besides tmax, as a sentence
/// that follows the significance test's (empty when nothing was).
pub fn stability(m: &Methods) -> String {
    let st = &m.stability;
    let mut s = String::new();
    if let Some(l) = st.level.as_ref().filter(|l| l.shifted) {
        s += &format!(
            "; the run's calls were ~{:.1}x slower than calibrated (its fastest tenth against the \
             profile's median, the median over {} keys): a site that tmax x {:.2} clears is \
             `within level shift`",
            l.factor,
            l.keys.iter().filter(|k| k.counted).count(),
            l.factor
        );
    }
    if st.tmax_spread > 1.0 {
        let shift = st
            .level
            .as_ref()
            .filter(|l| l.shifted)
            .map_or(1.0, |l| l.factor);
        s +=
            &format!(
            "; a site that tmax x {:.2} clears (the spread between calibrations{}) is `marginal`: \
             its verdict hangs on the calibration",
            shift * st.tmax_spread,
            if shift > 1.0 { ", on top of the shift" } else { "" }
        );
    }
    s
}

/// The tmax lookups of a run, in one sentence.
pub fn lookups(l: &Lookups) -> String {
    use crate::units::count;
    format!(
        "{} keys ({} calls) with a tmax, {} out of the calibrated range ({} calls), {} without ({} calls)",
        count(l.entries),
        count(l.calls),
        count(l.out_of_range_entries),
        count(l.out_of_range_calls),
        count(l.missing_entries),
        count(l.missing_calls)
    )
}

/// The timer of a run, in one sentence.
pub fn timer(t: &TimerInfo) -> String {
    use crate::units::secs;
    format!(
        "{}, resolution {}, read cost {}",
        t.name,
        secs(t.resolution_s),
        secs(t.cost_s)
    )
}

/// The profiler's own cost, in one sentence.
pub fn tool_cost(t: &ToolCost) -> String {
    use crate::units::{count, pct, secs};
    let python = match t.python_cost_per_call_s {
        Some(c) => format!(
            ", Python sites {} more per call x {} calls from Python",
            secs(c),
            count(t.python_calls)
        ),
        None => String::new(),
    };
    let mut s = format!(
        "{} per call x {} calls{python} = {} ({} of application time)",
        secs(t.cost_per_call_s),
        count(t.calls),
        secs(t.time_s),
        pct(t.share_of_app)
    );
    if let Some(m) = t.log_merge_s {
        s.push_str(&format!(
            "; merging the job log at MPI_Finalize took {} at rank 0",
            secs(m)
        ));
    }
    s
}

/// When a region is named as a site's root cause (the METHODS of text and
/// HTML).
pub fn root_cause_rule() -> String {
    use crate::units::pct;
    format!(
        "a late rank's code since it last met the waiting ranks (a collective, a completed \
         message), up to the call they waited for, against theirs up to the wait (median, per \
         pass); chains of waits followed only through ranks outside the waiting ones; a region \
         named when its passes took at least {} longer than the waiting ranks' in the same code \
         and it explains at least {} of the overhead; causes add up to at most the site's overhead",
        pct(CAUSE_OF_REFERENCE),
        pct(CAUSE_OF_OVERHEAD)
    )
}
