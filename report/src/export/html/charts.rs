//! The per-rank heat map of the top sites and the wait matrix.

use std::fmt::Write;

use super::{esc, heat, Ctx};
use crate::model::Metric;
use crate::units::{count, pct, secs};

pub(crate) fn heatmap(o: &mut String, c: &Ctx) {
    let Some(h) = &c.r.detail.heatmap else { return };
    let metric = if h.metric == Metric::Overhead {
        "overhead"
    } else {
        "time"
    };
    let _ = write!(
        o,
        "<h2 id=\"heatmap\">Per-rank {metric} of the top sites</h2>\n<p class=\"meta\">Rows: sites; columns: {}. Darker: more {metric}{}.</p>",
        if h.cols.iter().all(|(a, b)| a == b) {
            "ranks".to_string()
        } else {
            format!("groups of {} ranks (the largest value in the group)", h.cols[0].1 - h.cols[0].0 + 1)
        },
        if metric == "overhead" { "" } else { " (no profile: time in the call)" }
    );
    let max = h
        .values
        .iter()
        .flatten()
        .flatten()
        .copied()
        .fold(0.0, f64::max)
        .max(1e-300);
    let (lw, cw, rh) = (240.0, (720.0 / h.cols.len() as f64).clamp(4.0, 28.0), 18.0);
    let w = lw + cw * h.cols.len() as f64 + 20.0;
    let ht = rh * h.rows.len() as f64 + 40.0;
    let _ = write!(
        o,
        "<div class=\"scroll\"><svg id=\"heat-map\" role=\"img\" aria-label=\"per-rank heat map\" width=\"{w:.0}\" height=\"{ht:.0}\" viewBox=\"0 0 {w:.0} {ht:.0}\">"
    );
    for (ri, (&si, row)) in h.rows.iter().zip(&h.values).enumerate() {
        let s = &c.r.sites[si];
        let y = ri as f64 * rh;
        let _ = write!(
            o,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" font-size=\"11\">{}</text>",
            lw - 6.0,
            y + 13.0,
            esc(&format!("{}. {} {}", s.position, c.loc(s), s.mpi_function))
        );
        for (ci, v) in row.iter().enumerate() {
            let x = lw + ci as f64 * cw;
            let (fill, tip) = match v {
                Some(v) => (heat(v / max), secs(*v)),
                None => ("#f6f8fa".to_string(), "not at this site".into()),
            };
            let (a, b) = h.cols[ci];
            let ranks = if a == b {
                format!("rank {a}")
            } else {
                format!("ranks {a}-{b}")
            };
            let _ = write!(
                o,
                "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{}\" fill=\"{fill}\"><title>{}</title></rect>",
                cw - 1.0,
                rh - 2.0,
                esc(&format!("site {}, {ranks}: {tip}", s.position))
            );
        }
    }
    // Rank axis labels: first, middle, last.
    let y = h.rows.len() as f64 * rh + 14.0;
    let n = h.cols.len();
    for ci in [0, n / 2, n - 1] {
        let _ = write!(
            o,
            "<text x=\"{:.1}\" y=\"{y}\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
            lw + (ci as f64 + 0.5) * cw,
            h.cols[ci].0
        );
    }
    let _ = writeln!(
        o,
        "<text x=\"{:.1}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">rank</text></svg></div>",
        lw + cw * n as f64 / 2.0,
        y + 16.0
    );
}

pub(crate) fn wait_matrix(o: &mut String, c: &Ctx) {
    let wm = &c.r.wait_matrix;
    let _ = writeln!(o, "<h2 id=\"wait-matrix\">Who waited on whom</h2>");
    if wm.cells.is_empty() {
        o.push_str("<p>No point-to-point waits.</p>\n");
        return;
    }
    let world = c.r.run.ranks.max(1);
    let per = world.div_ceil(64);
    let n = world.div_ceil(per) as usize;
    let mut m = vec![0.0f64; n * n];
    for cell in &wm.cells {
        let (i, j) = ((cell.waiter / per) as usize, (cell.peer / per) as usize);
        if i < n && j < n {
            m[i * n + j] += cell.value_s;
        }
    }
    let max = m.iter().copied().fold(0.0, f64::max).max(1e-300);
    let _ = write!(
        o,
        "<p class=\"meta\">Row: the rank that waited; column: the peer it waited on{}. By {}; total {}.</p>",
        if per > 1 { format!(" (groups of {per} ranks)") } else { String::new() },
        if wm.metric == Metric::Overhead {
            "overhead of Late Sender / Late Receiver calls"
        } else {
            "time in point-to-point calls (no profile)"
        },
        secs(wm.total_s)
    );
    let cs = (480.0 / n as f64).clamp(6.0, 36.0);
    let label = |k: usize| -> String {
        let lo = k as u32 * per;
        if per == 1 {
            lo.to_string()
        } else {
            format!("{lo}-{}", (lo + per - 1).min(world - 1))
        }
    };
    // On several hosts, a rank's host beside it: which waits cross hosts.
    let several = c.r.run.hosts.len() > 1 && per == 1;
    let named = |k: usize| -> String {
        let host = several
            .then(|| c.r.ranks.iter().find(|r| r.rank == k as u32))
            .flatten();
        match host {
            Some(r) => format!("{} ({})", label(k), r.host),
            None => label(k),
        }
    };
    // Room on the left for the rows' names (with their hosts), on top for
    // the columns' ranks.
    let off = 40.0;
    let offx = if n <= 16 {
        (0..n)
            .map(|k| named(k).chars().count() as f64 * 6.2 + 8.0)
            .fold(off, f64::max)
    } else {
        off
    };
    let (wd, ht) = (offx + cs * n as f64 + 10.0, off + cs * n as f64 + 10.0);
    let _ = write!(
        o,
        "<div class=\"scroll\"><svg id=\"wait-matrix-svg\" role=\"img\" aria-label=\"wait matrix\" width=\"{wd:.0}\" height=\"{ht:.0}\" viewBox=\"0 0 {wd:.0} {ht:.0}\">"
    );
    for i in 0..n {
        for j in 0..n {
            let v = m[i * n + j];
            if v <= 0.0 {
                continue;
            }
            let _ = write!(
                o,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{}</title></rect>",
                offx + j as f64 * cs,
                off + i as f64 * cs,
                cs - 1.0,
                cs - 1.0,
                heat(v / max),
                esc(&format!("{} waited {} on {}", named(i), secs(v), named(j)))
            );
        }
    }
    let _ = write!(
        o,
        "<rect x=\"{offx:.1}\" y=\"{off}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"none\" stroke=\"#d0d7de\"/>",
        cs * n as f64,
        cs * n as f64
    );
    // Every row and column named when there are few; else the first,
    // middle and last, by their first rank (as the heat map's axis).
    let shown: Vec<usize> = if n <= 16 {
        (0..n).collect()
    } else {
        vec![0, n / 2, n - 1]
    };
    for k in shown {
        let (col, row) = if n <= 16 {
            (label(k), named(k))
        } else {
            let first = (k as u32 * per).to_string();
            (first.clone(), first)
        };
        let _ = write!(
            o,
            "<text x=\"{:.1}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{}</text>\
             <text x=\"{}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\">{}</text>",
            offx + (k as f64 + 0.5) * cs,
            off - 4.0,
            col,
            offx - 4.0,
            off + (k as f64 + 0.5) * cs + 3.0,
            esc(&row)
        );
    }
    let _ = writeln!(
        o,
        "<text x=\"{offx:.1}\" y=\"12\" font-size=\"11\">peer waited on &#8594;</text></svg></div>"
    );
    // The pairs that waited most, as in the text report: on several hosts
    // each rank's host, which shows the waits that cross hosts.
    let hosts = c.r.run.hosts.len() > 1;
    let host_th = if hosts { "<th>Host</th>" } else { "" };
    let _ = write!(
        o,
        "<table id=\"wait-pairs\"><thead><tr><th class=\"n\">Rank</th>{host_th}<th class=\"n\">waited on</th>{host_th}\
         <th class=\"n\">for</th><th class=\"n\">share</th><th class=\"n\">calls</th></tr></thead><tbody>"
    );
    let host = |h: &Option<String>| {
        if hosts {
            format!("<td>{}</td>", esc(h.as_deref().unwrap_or("?")))
        } else {
            String::new()
        }
    };
    for cell in wm.cells.iter().take(10) {
        let _ = write!(
            o,
            "<tr><td class=\"n\">{}</td>{}<td class=\"n\">{}</td>{}<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            cell.waiter,
            host(&cell.waiter_host),
            cell.peer,
            host(&cell.peer_host),
            secs(cell.value_s),
            pct(if wm.total_s > 0.0 { cell.value_s / wm.total_s } else { 0.0 }),
            count(cell.calls)
        );
    }
    o.push_str("</tbody></table>\n");
}
