//! `mpiover diff` in each format: text (aligned, for the terminal), JSON
//! (`mpiover-diff/1`), CSV.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::diff::{DiffReport, DiffTest, Side};
use crate::model::RankedBy;
use crate::units::{count, secs};

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
    let runs = |r: &crate::diff::DiffRun| match r.dirs.len() {
        0 | 1 => r.dir.clone(),
        n => format!("{} runs ({} ...), means", n, r.dir),
    };
    let _ = writeln!(o, "mpiover diff: A = {}  B = {}", runs(&d.a), runs(&d.b));
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
    let _ = writeln!(o, "  {}", verdict_rule(d));
    let by_ovh = d.compared_by == RankedBy::Overhead;
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
    rows[0].push("q".into());
    let f = |s: &Option<Side>, g: &dyn Fn(&Side) -> String| s.as_ref().map_or("-".to_string(), g);
    for s in d.sites.iter().take(top) {
        let mut r = vec![
            s.status.to_string(),
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
        r.push(s.q_value.map_or_else(|| "-".into(), q_value));
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

/// A q-value in two digits: fixed down to 0.01, in powers of ten below.
fn q_value(q: f64) -> String {
    if q >= 0.01 {
        format!("{q:.2}")
    } else {
        format!("{q:.1e}")
    }
}

/// When a site is `better` or `worse`, in one sentence.
fn verdict_rule(d: &DiffReport) -> String {
    let m = &d.method;
    let runs = if m.runs_a >= 2 && m.runs_b >= 2 {
        format!(
            ", every run of one side beyond every run of the other ({} vs {} runs)",
            m.runs_a, m.runs_b
        )
    } else {
        " (one run on a side: nothing shows the machine's run-to-run variation; give several \
         runs a side, A1 A2 -- B1 B2)"
            .to_string()
    };
    let test = match m.test {
        DiffTest::RankSumCallDurations => format!("the rank-sum test on call durations{runs}"),
    };
    format!(
        "better/worse: q <= {} by {test}, and a change of at least {:.0} % of the site and {:.0} % \
         of the MPI time",
        m.alpha,
        100.0 * m.min_change_of_site,
        100.0 * m.min_change_of_mpi
    )
}

pub fn json(d: &DiffReport) -> Vec<u8> {
    let mut v = serde_json::to_vec_pretty(d).expect("a diff serializes");
    v.push(b'\n');
    v
}

pub fn csv(d: &DiffReport) -> Vec<u8> {
    const HEADER: &[&str] = &[
        "status",
        "mpi_function",
        "file",
        "line",
        "function",
        "location",
        "calls_a",
        "calls_b",
        "time_a_s",
        "time_b_s",
        "delta_time_s",
        "overhead_a_s",
        "overhead_b_s",
        "delta_overhead_s",
        "p_value",
        "q_value",
        "min_change_s",
        "runs_overlap",
    ];
    let opt = |v: Option<String>| v.unwrap_or_default();
    let rows = d.sites.iter().map(|s| {
        [
            s.status.to_string(),
            s.mpi_function.clone(),
            s.file.clone().unwrap_or_default(),
            opt(s.line.map(|l| l.to_string())),
            s.function.clone().unwrap_or_default(),
            s.location.clone(),
            opt(s.a.as_ref().map(|x| x.calls.to_string())),
            opt(s.b.as_ref().map(|x| x.calls.to_string())),
            opt(s.a.as_ref().map(|x| x.time_s.to_string())),
            opt(s.b.as_ref().map(|x| x.time_s.to_string())),
            s.delta_time_s.to_string(),
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
            opt(s.p_value.map(|v| v.to_string())),
            opt(s.q_value.map(|v| v.to_string())),
            s.min_change_s.to_string(),
            opt(s.runs_overlap.map(|v| v.to_string())),
        ]
    });
    super::csv::write_rows(HEADER, rows)
}
