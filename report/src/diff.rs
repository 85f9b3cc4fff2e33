//! `mpiover diff RUN_A RUN_B`: the same sites in two runs, matched by
//! (file:line or module+offset, enclosing function, MPI function), and what
//! got better or worse in overhead and time.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::{DiffStatus, RankedBy, Report, SiteReport, WaitState};

pub const DIFF_SCHEMA: &str = "mpiover-diff/1";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DiffReport {
    pub schema: String,
    pub a: DiffRun,
    pub b: DiffRun,
    /// `overhead` when both runs have overhead, else `time`.
    pub compared_by: RankedBy,
    pub sites: Vec<DiffSite>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DiffRun {
    pub dir: String,
    pub ranks: u32,
    pub command: Vec<String>,
    pub app_time_s: f64,
    pub mpi_time_s: f64,
    pub overhead_s: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Side {
    pub calls: u64,
    pub time_s: f64,
    pub overhead_s: Option<f64>,
    pub wait_state: Option<WaitState>,
    pub significant: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DiffSite {
    pub mpi_function: String,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub function: Option<String>,
    pub location: String,
    /// `worse`, `better`, `same`, `new` (only in B) or `gone` (only in A).
    pub status: DiffStatus,
    pub a: Option<Side>,
    pub b: Option<Side>,
    /// B - A.
    pub delta_time_s: f64,
    pub delta_overhead_s: Option<f64>,
    pub delta_calls: i64,
}

fn side(s: &SiteReport) -> Side {
    Side {
        calls: s.calls,
        time_s: s.time_s,
        overhead_s: s.overhead_s,
        wait_state: s.wait_state,
        significant: s.significant,
    }
}

fn run(r: &Report) -> DiffRun {
    DiffRun {
        dir: r.run.dir.clone(),
        ranks: r.run.ranks,
        command: r.run.command.clone(),
        app_time_s: r.summary.app_time_s,
        mpi_time_s: r.summary.mpi_time_s,
        overhead_s: r.summary.overhead_s,
    }
}

/// A change counts when it exceeds 5 % of the larger value and 1 us.
fn status(a: f64, b: f64) -> DiffStatus {
    let d = b - a;
    if d.abs() <= (0.05 * a.abs().max(b.abs())).max(1e-6) {
        DiffStatus::Same
    } else if d > 0.0 {
        DiffStatus::Worse
    } else {
        DiffStatus::Better
    }
}

pub fn diff(a: &Report, b: &Report) -> DiffReport {
    let by_ovh = a.summary.overhead_s.is_some() && b.summary.overhead_s.is_some();
    type Key = (String, Option<String>, String);
    let key = |s: &SiteReport| -> Key {
        (
            s.location.clone(),
            s.function.clone(),
            s.mpi_function.clone(),
        )
    };
    let mut m: BTreeMap<Key, (Option<&SiteReport>, Option<&SiteReport>)> = BTreeMap::new();
    for s in &a.sites {
        m.entry(key(s)).or_default().0 = Some(s);
    }
    for s in &b.sites {
        m.entry(key(s)).or_default().1 = Some(s);
    }
    let metric = |s: Option<&SiteReport>| -> f64 {
        s.map_or(0.0, |s| {
            if by_ovh {
                s.overhead_s.unwrap_or(0.0)
            } else {
                s.time_s
            }
        })
    };
    let mut sites: Vec<DiffSite> = m
        .into_iter()
        .map(|(_, (sa, sb))| {
            let any = sa.or(sb).expect("one side exists");
            let st = match (sa, sb) {
                (Some(_), None) => DiffStatus::Gone,
                (None, Some(_)) => DiffStatus::New,
                _ => status(metric(sa), metric(sb)),
            };
            let ovh = |s: Option<&SiteReport>| s.and_then(|s| s.overhead_s);
            DiffSite {
                mpi_function: any.mpi_function.clone(),
                file: any.file.clone(),
                line: any.line,
                function: any.function.clone(),
                location: any.location.clone(),
                status: st,
                a: sa.map(side),
                b: sb.map(side),
                delta_time_s: sb.map_or(0.0, |s| s.time_s) - sa.map_or(0.0, |s| s.time_s),
                delta_overhead_s: by_ovh.then(|| ovh(sb).unwrap_or(0.0) - ovh(sa).unwrap_or(0.0)),
                delta_calls: sb.map_or(0, |s| s.calls as i64) - sa.map_or(0, |s| s.calls as i64),
            }
        })
        .collect();
    let d = |s: &DiffSite| {
        if by_ovh {
            s.delta_overhead_s.unwrap_or(0.0)
        } else {
            s.delta_time_s
        }
    };
    sites.sort_by(|x, y| {
        d(y).abs()
            .total_cmp(&d(x).abs())
            .then_with(|| x.location.cmp(&y.location))
            .then_with(|| x.mpi_function.cmp(&y.mpi_function))
    });
    DiffReport {
        schema: DIFF_SCHEMA.into(),
        a: run(a),
        b: run(b),
        compared_by: if by_ovh {
            RankedBy::Overhead
        } else {
            RankedBy::Time
        },
        sites,
    }
}
