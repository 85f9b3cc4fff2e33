//! `mpiover diff RUN_A RUN_B`: the same sites in two runs, matched by
//! (file:line or module+offset, enclosing function, MPI function), and what
//! got better or worse in overhead and time.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::{Deserialize, Serialize};

use crate::model::{Report, SiteReport, WaitState};
use crate::units::{count, secs};

pub const DIFF_SCHEMA: &str = "mpiover-diff/1";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DiffReport {
    pub schema: String,
    pub a: DiffRun,
    pub b: DiffRun,
    /// `overhead` when both runs have overhead, else `time`.
    pub compared_by: String,
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
    pub status: String,
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
fn status(a: f64, b: f64) -> &'static str {
    let d = b - a;
    if d.abs() <= (0.05 * a.abs().max(b.abs())).max(1e-6) {
        "same"
    } else if d > 0.0 {
        "worse"
    } else {
        "better"
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
                (Some(_), None) => "gone",
                (None, Some(_)) => "new",
                _ => status(metric(sa), metric(sb)),
            };
            let ovh = |s: Option<&SiteReport>| s.and_then(|s| s.overhead_s);
            DiffSite {
                mpi_function: any.mpi_function.clone(),
                file: any.file.clone(),
                line: any.line,
                function: any.function.clone(),
                location: any.location.clone(),
                status: st.into(),
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
        compared_by: if by_ovh { "overhead" } else { "time" }.into(),
        sites,
    }
}

fn signed(s: f64) -> String {
    if s > 0.0 {
        format!("+{}", secs(s))
    } else if s < 0.0 {
        format!("-{}", secs(-s))
    } else {
        "0".into()
    }
}

pub fn text(d: &DiffReport, top: usize) -> Vec<u8> {
    let mut o = String::new();
    let _ = writeln!(o, "mpiover diff: A = {}  B = {}", d.a.dir, d.b.dir);
    let line = |o: &mut String, name: &str, a: Option<f64>, b: Option<f64>| {
        let _ = match (a, b) {
            (Some(a), Some(b)) => writeln!(
                o,
                "  {name:<17} {:>9} -> {:>9}  ({})",
                secs(a),
                secs(b),
                signed(b - a)
            ),
            _ => writeln!(o, "  {name:<17} unknown (a run has no profile)"),
        };
    };
    line(
        &mut o,
        "Application time",
        Some(d.a.app_time_s),
        Some(d.b.app_time_s),
    );
    line(
        &mut o,
        "MPI time",
        Some(d.a.mpi_time_s),
        Some(d.b.mpi_time_s),
    );
    line(&mut o, "Overhead", d.a.overhead_s, d.b.overhead_s);
    if d.a.ranks != d.b.ranks {
        let _ = writeln!(o, "  note: A has {} ranks, B has {}", d.a.ranks, d.b.ranks);
    }
    let mut n: BTreeMap<&str, usize> = BTreeMap::new();
    for s in &d.sites {
        *n.entry(s.status.as_str()).or_default() += 1;
    }
    let counts: Vec<String> = n.iter().map(|(k, v)| format!("{v} {k}")).collect();
    let _ = writeln!(
        o,
        "\nSITES  (by change in {}; {})",
        d.compared_by,
        counts.join(", ")
    );
    let by_ovh = d.compared_by == "overhead";
    let mut rows: Vec<Vec<String>> = vec![vec![
        "Status".into(),
        "Location".into(),
        "Function".into(),
        "MPI call".into(),
        "Calls A".into(),
        "Calls B".into(),
        "Time A".into(),
        "Time B".into(),
        "Change".into(),
    ]];
    if by_ovh {
        rows[0].extend(["Overhead A".into(), "Overhead B".into(), "Change".into()]);
    }
    let f = |s: &Option<Side>, g: &dyn Fn(&Side) -> String| s.as_ref().map_or("-".to_string(), g);
    for s in d.sites.iter().take(top) {
        let mut r = vec![
            s.status.clone(),
            s.location.clone(),
            s.function.clone().unwrap_or_else(|| "-".into()),
            s.mpi_function.clone(),
            f(&s.a, &|x| count(x.calls)),
            f(&s.b, &|x| count(x.calls)),
            f(&s.a, &|x| secs(x.time_s)),
            f(&s.b, &|x| secs(x.time_s)),
            signed(s.delta_time_s),
        ];
        if by_ovh {
            r.extend([
                f(&s.a, &|x| {
                    x.overhead_s.map(secs).unwrap_or_else(|| "-".into())
                }),
                f(&s.b, &|x| {
                    x.overhead_s.map(secs).unwrap_or_else(|| "-".into())
                }),
                s.delta_overhead_s.map(signed).unwrap_or_else(|| "-".into()),
            ]);
        }
        rows.push(r);
    }
    let ncol = rows[0].len();
    let w: Vec<usize> = (0..ncol)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    for r in &rows {
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let fill = " ".repeat(w[i] - c.chars().count());
                if i < 4 {
                    format!("{c}{fill}")
                } else {
                    format!("{fill}{c}")
                }
            })
            .collect();
        let _ = writeln!(o, "  {}", cells.join("  ").trim_end());
    }
    o.into_bytes()
}

pub fn json(d: &DiffReport) -> Vec<u8> {
    let mut v = serde_json::to_vec_pretty(d).expect("a diff serializes");
    v.push(b'\n');
    v
}

pub fn csv(d: &DiffReport) -> Vec<u8> {
    let mut o = String::from(
        "status,mpi_function,file,line,function,location,calls_a,calls_b,time_a_s,time_b_s,delta_time_s,overhead_a_s,overhead_b_s,delta_overhead_s\n",
    );
    let q = |s: &str| {
        if s.contains([',', '"', '\n']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    let opt = |v: Option<String>| v.unwrap_or_default();
    for s in &d.sites {
        let _ = writeln!(
            o,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            s.status,
            q(&s.mpi_function),
            q(s.file.as_deref().unwrap_or("")),
            opt(s.line.map(|l| l.to_string())),
            q(s.function.as_deref().unwrap_or("")),
            q(&s.location),
            opt(s.a.as_ref().map(|x| x.calls.to_string())),
            opt(s.b.as_ref().map(|x| x.calls.to_string())),
            opt(s.a.as_ref().map(|x| x.time_s.to_string())),
            opt(s.b.as_ref().map(|x| x.time_s.to_string())),
            s.delta_time_s,
            opt(s
                .a
                .as_ref()
                .and_then(|x| x.overhead_s)
                .map(|v| v.to_string())),
            opt(s
                .b
                .as_ref()
                .and_then(|x| x.overhead_s)
                .map(|v| v.to_string())),
            opt(s.delta_overhead_s.map(|v| v.to_string())),
        );
    }
    o.into_bytes()
}
