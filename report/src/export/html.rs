//! HTML: one self-contained file (inline CSS, SVG and a little JS; nothing
//! fetched from the network) with the summary, a bar chart of the top sites,
//! a per-rank heat map, the wait matrix, and for each top site the
//! distribution of its call times against tmax and its source lines.

use std::fmt::Write;

use super::{negligible, short_paths, ExportOptions};
use crate::model::{
    Dist, Metric, ProfileSource, RankedBy, Report, Significance, SiteReport, WaitState,
};
use crate::units::{bytes, count, pct, secs};

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// White to dark red for t in [0, 1].
fn heat(t: f64) -> String {
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let (a, b) = ((255.0, 245.0, 240.0), (165.0, 15.0, 21.0));
    let m = |x: f64, y: f64| (x + (y - x) * t).round() as u8;
    format!("#{:02x}{:02x}{:02x}", m(a.0, b.0), m(a.1, b.1), m(a.2, b.2))
}

const CSS: &str = r#"
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1f2328;background:#fff}
main{max-width:1200px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #d0d7de;padding-bottom:.2em}
h3{font-size:1em;margin:1.4em 0 .4em}
.meta{color:#57606a;font-size:.9em}.meta code{font-size:1em}
.cards{display:flex;gap:12px;flex-wrap:wrap;margin:12px 0}
.card{border:1px solid #d0d7de;border-radius:6px;padding:10px 14px;min-width:170px}
.card .v{font-size:1.5em;font-weight:600}.card .l{color:#57606a;font-size:.85em}
.card.bad .v{color:#a50f15}
ol.worst li{margin:.3em 0}
table{border-collapse:collapse;font-size:.85em;margin:8px 0}
th,td{padding:3px 8px;border-bottom:1px solid #eaeef2;text-align:left;white-space:nowrap}
th{background:#f6f8fa;position:sticky;top:0;cursor:pointer;user-select:none}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
tr.sig td.ovh{color:#a50f15;font-weight:600}
.tag{display:inline-block;padding:0 6px;border-radius:10px;font-size:.85em;background:#eaeef2}
.tag.sig{background:#ffebe9;color:#a50f15}.tag.few{background:#fff8c5}
.scroll{overflow-x:auto}
svg text{font-family:inherit}
pre.src{background:#f6f8fa;padding:8px;border-radius:6px;font-size:.85em;overflow-x:auto}
pre.src .hl{background:#ffebe9;display:block;font-weight:600}
.site{border-top:1px solid #eaeef2;padding-top:6px}
.grid2{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:16px;align-items:start}
@media(max-width:900px){.grid2{grid-template-columns:1fr}}
.warn{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:6px 10px;margin:4px 0}
dl.methods{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;font-size:.9em}
dl.methods dt{color:#57606a}
"#;

/// Sorts a table by the clicked column (numbers by data-v when present).
const JS: &str = r#"
(function(){
  document.querySelectorAll('table.sortable').forEach(function(t){
    var ths=t.querySelectorAll('thead th');
    ths.forEach(function(th,i){
      th.addEventListener('click',function(){
        var tb=t.tBodies[0];var rows=Array.prototype.slice.call(tb.rows);
        var asc=th.getAttribute('data-asc')!=='1';
        ths.forEach(function(x){x.removeAttribute('data-asc');});
        if(asc){th.setAttribute('data-asc','1');}
        rows.sort(function(a,b){
          var x=a.cells[i],y=b.cells[i];
          var vx=x.getAttribute('data-v'),vy=y.getAttribute('data-v');
          var c;
          if(vx!==null&&vy!==null){c=parseFloat(vx)-parseFloat(vy);}else{c=x.textContent.localeCompare(y.textContent);}
          return asc?c:-c;
        });
        rows.forEach(function(r){tb.appendChild(r);});
      });
    });
  });
  document.documentElement.setAttribute('data-ready','1');
})();
"#;

struct Ctx<'a> {
    r: &'a Report,
    ovh: bool,
    shorts: std::collections::HashMap<String, String>,
}

impl Ctx<'_> {
    fn loc(&self, s: &SiteReport) -> String {
        match (&s.file, s.line) {
            (Some(f), Some(l)) => format!(
                "{}:{l}",
                self.shorts.get(f).map_or(f.as_str(), |x| x.as_str())
            ),
            (Some(f), None) => self.shorts.get(f).cloned().unwrap_or_else(|| f.clone()),
            _ => s.location.clone(),
        }
    }
    fn value(&self, s: &SiteReport) -> f64 {
        if self.ovh {
            s.overhead_s.unwrap_or(0.0)
        } else {
            s.time_s
        }
    }
}

pub fn export(r: &Report, opts: &ExportOptions) -> Vec<u8> {
    let c = Ctx {
        r,
        ovh: r.summary.ranked_by == RankedBy::Overhead,
        shorts: short_paths(r.sites.iter().filter_map(|s| s.file.as_deref())),
    };
    let top = opts.top.unwrap_or(20).min(r.sites.len());
    let mut o = String::new();
    let title = format!(
        "mpiover report: {}",
        r.run.command.first().map(String::as_str).unwrap_or("run")
    );
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{}</title><style>{CSS}</style></head><body><main>\n",
        esc(&title)
    );
    header(&mut o, &c);
    summary(&mut o, &c);
    bar_chart(&mut o, &c, top.min(15));
    sites_table(&mut o, &c, top);
    heatmap(&mut o, &c);
    wait_matrix(&mut o, &c);
    site_details(&mut o, &c, top.min(10));
    ranks_table(&mut o, &c);
    methods(&mut o, &c);
    let _ = write!(o, "<script>{JS}</script>\n</main></body></html>\n");
    o.into_bytes()
}

fn header(o: &mut String, c: &Ctx) {
    let r = c.r;
    let _ = write!(
        o,
        "<h1>Where does <code>{}</code> waste time in MPI?</h1>\n<p class=\"meta\">Run <code>{}</code> \
         &middot; {} &middot; {} on {} host{} &middot; {}</p>\n",
        esc(&r.run.command.join(" ")),
        esc(&r.run.dir),
        esc(r.run.mpi_library.split(',').next().unwrap_or("")),
        if r.run.ranks_present == r.run.ranks {
            format!("{} ranks", r.run.ranks)
        } else {
            format!("{} of {} ranks", r.run.ranks_present, r.run.ranks)
        },
        r.run.hosts.len(),
        if r.run.hosts.len() == 1 { "" } else { "s" },
        esc(&r.generator)
    );
    for w in &r.warnings {
        let _ = writeln!(o, "<div class=\"warn\">{}</div>", esc(w));
    }
}

fn summary(o: &mut String, c: &Ctx) {
    let s = &c.r.summary;
    o.push_str("<section id=\"summary\"><div class=\"cards\">");
    let card = |o: &mut String, cls: &str, v: String, l: String| {
        let _ = write!(
            o,
            "<div class=\"card {cls}\"><div class=\"v\">{}</div><div class=\"l\">{}</div></div>",
            esc(&v),
            esc(&l)
        );
    };
    card(
        o,
        "",
        secs(s.app_time_s),
        format!(
            "application time (sum over ranks; longest {})",
            secs(s.app_wall_s)
        ),
    );
    card(
        o,
        "",
        secs(s.mpi_time_s),
        format!(
            "MPI time ({} of application; start-up and shut-down, {}, not included)",
            pct(if s.app_time_s > 0.0 {
                s.mpi_time_s / s.app_time_s
            } else {
                0.0
            }),
            secs(s.startup_s + s.shutdown_s)
        ),
    );
    match s.overhead_s {
        Some(ov) => card(
            o,
            "bad",
            secs(ov),
            format!(
                "overhead ({} of MPI, {} of application)",
                pct(s.overhead_share_of_mpi.unwrap_or(0.0)),
                pct(s.overhead_share_of_app.unwrap_or(0.0))
            ),
        ),
        None => card(o, "", "unknown".into(), "overhead: no profile".into()),
    }
    card(
        o,
        "",
        format!("{} / {}", s.significant_sites, s.sites),
        "significant sites".into(),
    );
    o.push_str("</div>");
    if !s.worst.is_empty() {
        let _ = write!(
            o,
            "<h3>{}</h3><ol class=\"worst\">",
            if c.ovh { "Worst lines" } else { "Most time" }
        );
        for w in &s.worst {
            let _ = write!(o, "<li>{}</li>", esc(w));
        }
        o.push_str("</ol>");
    }
    if let Some(h) = &c.r.methods.hint {
        let _ = write!(o, "<p class=\"warn\">{}</p>", esc(h));
    }
    o.push_str("</section>\n");
}

fn bar_chart(o: &mut String, c: &Ctx, n: usize) {
    let sites: Vec<&SiteReport> = c.r.sites.iter().take(n).collect();
    let _ = writeln!(
        o,
        "<h2 id=\"bars\">Top sites by {}</h2>",
        if c.ovh { "overhead" } else { "time" }
    );
    if sites.is_empty() {
        o.push_str("<p>No sites.</p>");
        return;
    }
    let max = sites
        .iter()
        .map(|s| c.value(s))
        .fold(0.0, f64::max)
        .max(1e-300);
    let (label_w, bar_w, row_h) = (330.0, 560.0, 24.0);
    let h = row_h * sites.len() as f64 + 10.0;
    let _ = write!(
        o,
        "<div class=\"scroll\"><svg id=\"bar-chart\" role=\"img\" aria-label=\"top sites\" width=\"{}\" height=\"{h}\" viewBox=\"0 0 {} {h}\">",
        label_w + bar_w + 100.0,
        label_w + bar_w + 100.0
    );
    for (i, s) in sites.iter().enumerate() {
        let y = i as f64 * row_h + 4.0;
        let v = c.value(s);
        let w = (v / max * bar_w).max(1.0);
        let fill = if s.significant {
            "#cf222e"
        } else if c.ovh {
            "#8c959f"
        } else {
            "#0969da"
        };
        let label = format!("{}. {} {}", s.rank, c.loc(s), s.mpi_function);
        let tip = format!(
            "{} in {} — {} calls, time {}, overhead {}{}",
            s.mpi_function,
            c.loc(s),
            count(s.calls),
            secs(s.time_s),
            s.overhead_s.map(secs).unwrap_or_else(|| "unknown".into()),
            s.wait_state
                .as_ref()
                .map(|w| format!(", {w}"))
                .unwrap_or_default()
        );
        let _ = write!(
            o,
            "<g><title>{}</title><text x=\"{}\" y=\"{}\" text-anchor=\"end\" font-size=\"12\">{}</text>\
             <rect x=\"{label_w}\" y=\"{y}\" width=\"{w:.1}\" height=\"{}\" fill=\"{fill}\"/>\
             <text x=\"{:.1}\" y=\"{}\" font-size=\"12\">{}</text></g>",
            esc(&tip),
            label_w - 8.0,
            y + 14.0,
            esc(&label),
            row_h - 6.0,
            label_w + w + 6.0,
            y + 14.0,
            esc(&secs(v))
        );
    }
    o.push_str("</svg></div>\n");
    if c.ovh {
        o.push_str("<p class=\"meta\">Red: significant (calls over tmax well above chance); grey: not significant.</p>\n");
    }
}

fn opt_secs(v: Option<f64>) -> String {
    v.map(secs).unwrap_or_else(|| "-".into())
}

fn sites_table(o: &mut String, c: &Ctx, n: usize) {
    let _ = write!(
        o,
        "<h2 id=\"sites\">Sites <span class=\"meta\">(ranked by {}; {} of {}; click a header to sort)</span></h2>\n\
         <div class=\"scroll\"><table class=\"sortable\" id=\"sites-table\"><thead><tr>\
         <th class=\"n\">#</th><th>Location</th><th>Function</th><th>MPI call</th><th class=\"n\">Calls</th>\
         <th class=\"n\">Time</th><th class=\"n\">Bytes</th><th class=\"n\">Sum tmax</th><th class=\"n\">Overhead</th>\
         <th class=\"n\">% MPI</th><th class=\"n\">% app</th>\
         <th class=\"n\">&gt; tmax</th><th>Significance</th><th>Wait state</th><th>Late ranks</th>\
         <th class=\"n\">{}</th><th class=\"n\">Worst rank</th></tr></thead><tbody>",
        c.r.summary.ranked_by,
        n,
        c.r.sites.len(),
        // Per rank: the overhead's spread when it is known, else the time's.
        if c.ovh {
            "Rank overhead min / med / max"
        } else {
            "Rank time min / med / max"
        }
    );
    for s in c.r.sites.iter().take(n) {
        let sig_cls = match s.significance {
            Significance::Significant => "tag sig",
            Significance::TooFewCalls => "tag few",
            _ => "tag",
        };
        let p = &s.per_rank;
        let spread = if c.ovh {
            (
                opt_secs(p.overhead_min_s),
                opt_secs(p.overhead_median_s),
                opt_secs(p.overhead_max_s),
            )
        } else {
            (
                secs(p.time_min_s),
                secs(p.time_median_s),
                secs(p.time_max_s),
            )
        };
        let _ = write!(
            o,
            "<tr class=\"{}\"><td class=\"n\" data-v=\"{}\">{}</td><td title=\"{}\">{}</td><td>{}</td><td>{}</td>\
             <td class=\"n\" data-v=\"{}\">{}</td><td class=\"n\" data-v=\"{}\">{}</td><td class=\"n\" data-v=\"{}\">{}</td>\
             <td class=\"n\" data-v=\"{}\">{}</td>\
             <td class=\"n ovh\" data-v=\"{}\">{}</td><td class=\"n\" data-v=\"{}\">{}</td><td class=\"n\" data-v=\"{}\">{}</td>\
             <td class=\"n\" data-v=\"{}\">{}</td>\
             <td><span class=\"{sig_cls}\">{}</span></td><td>{}</td><td>{}</td><td class=\"n\">{} / {} / {}</td>\
             <td class=\"n\">{}</td></tr>",
            if s.significant { "sig" } else { "" },
            s.rank,
            s.rank,
            esc(&s.location),
            esc(&c.loc(s)),
            esc(s.function.as_deref().unwrap_or("-")),
            esc(&s.mpi_function),
            s.calls,
            count(s.calls),
            s.time_s,
            secs(s.time_s),
            s.bytes,
            bytes(s.bytes),
            s.tmax_s.unwrap_or(-1.0),
            opt_secs(s.tmax_s),
            s.overhead_s.unwrap_or(-1.0),
            opt_secs(s.overhead_s),
            s.share_of_mpi_time.unwrap_or(-1.0),
            s.share_of_mpi_time.map(pct).unwrap_or_else(|| "-".into()),
            s.share_of_app_time.unwrap_or(-1.0),
            s.share_of_app_time.map(pct).unwrap_or_else(|| "-".into()),
            s.exceed_fraction.unwrap_or(-1.0),
            s.exceed_fraction.map(pct).unwrap_or_else(|| "-".into()),
            esc(s.significance.as_str()),
            esc(s.wait_state.map_or("-", WaitState::as_str)),
            esc(&if s.late_ranks.is_empty() {
                "-".to_string()
            } else {
                s.late_ranks.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ")
            }),
            spread.0,
            spread.1,
            spread.2,
            if c.ovh && p.overhead_max_s.is_none() {
                "-".to_string()
            } else {
                p.worst_rank.to_string()
            }
        );
    }
    o.push_str("</tbody></table></div>\n");
}

fn heatmap(o: &mut String, c: &Ctx) {
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
            esc(&format!("{}. {} {}", s.rank, c.loc(s), s.mpi_function))
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
                esc(&format!("site {}, {ranks}: {tip}", s.rank))
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

fn wait_matrix(o: &mut String, c: &Ctx) {
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
    let off = 40.0;
    let size = off + cs * n as f64 + 10.0;
    let _ = write!(
        o,
        "<div class=\"scroll\"><svg id=\"wait-matrix-svg\" role=\"img\" aria-label=\"wait matrix\" width=\"{size:.0}\" height=\"{size:.0}\" viewBox=\"0 0 {size:.0} {size:.0}\">"
    );
    let label = |k: usize| -> String {
        let lo = k as u32 * per;
        if per == 1 {
            lo.to_string()
        } else {
            format!("{lo}-{}", (lo + per - 1).min(world - 1))
        }
    };
    for i in 0..n {
        for j in 0..n {
            let v = m[i * n + j];
            if v <= 0.0 {
                continue;
            }
            let _ = write!(
                o,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{}</title></rect>",
                off + j as f64 * cs,
                off + i as f64 * cs,
                cs - 1.0,
                cs - 1.0,
                heat(v / max),
                esc(&format!("{} waited {} on {}", label(i), secs(v), label(j)))
            );
        }
    }
    let _ = write!(
        o,
        "<rect x=\"{off}\" y=\"{off}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"none\" stroke=\"#d0d7de\"/>",
        cs * n as f64,
        cs * n as f64
    );
    if n <= 16 {
        for k in 0..n {
            let _ = write!(
                o,
                "<text x=\"{:.1}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{}</text>\
                 <text x=\"{}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\">{}</text>",
                off + (k as f64 + 0.5) * cs,
                off - 4.0,
                label(k),
                off - 4.0,
                off + (k as f64 + 0.5) * cs + 3.0,
                label(k)
            );
        }
    }
    let _ = writeln!(
        o,
        "<text x=\"{off}\" y=\"12\" font-size=\"11\">peer waited on &#8594;</text></svg></div>"
    );
    o.push_str("<table><thead><tr><th class=\"n\">Rank</th><th class=\"n\">waited on</th><th class=\"n\">for</th><th class=\"n\">calls</th></tr></thead><tbody>");
    for cell in wm.cells.iter().take(10) {
        let _ = write!(
            o,
            "<tr><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            cell.waiter,
            cell.peer,
            secs(cell.value_s),
            count(cell.calls)
        );
    }
    o.push_str("</tbody></table>\n");
}

fn dist_svg(o: &mut String, d: &Dist, id: usize) {
    let (w, h, pad_l, pad_b) = (520.0, 170.0, 44.0, 30.0);
    let lo = d.edges[0].ln();
    let hi = d.edges[d.edges.len() - 1].ln().max(lo + 1e-9);
    let x = |t: f64| pad_l + (t.max(d.edges[0]).ln() - lo) / (hi - lo) * (w - pad_l - 10.0);
    let maxc = d.counts.iter().copied().max().unwrap_or(1).max(1) as f64;
    let y = |cnt: f64| (h - pad_b) - (cnt / maxc).sqrt() * (h - pad_b - 10.0);
    let _ = write!(
        o,
        "<svg class=\"dist\" id=\"dist-{id}\" role=\"img\" aria-label=\"call times\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\">"
    );
    if let (Some(a), Some(b)) = (d.tmax_min_s, d.tmax_max_s) {
        let (xa, xb) = (x(a), x(b));
        let _ = write!(
            o,
            "<rect x=\"{xa:.1}\" y=\"4\" width=\"{:.1}\" height=\"{}\" fill=\"#ffebe9\"/>",
            (xb - xa).max(1.0),
            h - pad_b - 4.0
        );
    }
    for (i, &cnt) in d.counts.iter().enumerate() {
        if cnt == 0 {
            continue;
        }
        let (x0, x1) = (x(d.edges[i]), x(d.edges[i + 1]));
        let over = d.tmax_mean_s.is_some_and(|t| d.edges[i] >= t);
        let _ = write!(
            o,
            "<rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{} - {}: {} calls</title></rect>",
            y(cnt as f64),
            (x1 - x0 - 0.5).max(0.8),
            (h - pad_b) - y(cnt as f64),
            if over { "#cf222e" } else { "#0969da" },
            secs(d.edges[i]),
            secs(d.edges[i + 1]),
            count(cnt)
        );
    }
    if let Some(t) = d.tmax_mean_s {
        let xt = x(t);
        let _ = write!(
            o,
            "<line x1=\"{xt:.1}\" x2=\"{xt:.1}\" y1=\"4\" y2=\"{}\" stroke=\"#a50f15\" stroke-width=\"2\" stroke-dasharray=\"4 2\"/>\
             <text x=\"{:.1}\" y=\"14\" font-size=\"11\" fill=\"#a50f15\">tmax {}</text>",
            h - pad_b,
            xt + 4.0,
            esc(&secs(t))
        );
    }
    let _ = write!(
        o,
        "<line x1=\"{pad_l}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"#57606a\"/>",
        w - 10.0,
        h - pad_b,
        h - pad_b
    );
    // Decade ticks.
    let mut t = 10f64.powf(d.edges[0].log10().ceil());
    while t <= d.edges[d.edges.len() - 1] {
        let xt = x(t);
        let _ = write!(
            o,
            "<line x1=\"{xt:.1}\" x2=\"{xt:.1}\" y1=\"{}\" y2=\"{}\" stroke=\"#57606a\"/>\
             <text x=\"{xt:.1}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
            h - pad_b,
            h - pad_b + 4.0,
            h - pad_b + 15.0,
            esc(&secs(t))
        );
        t *= 10.0;
    }
    let _ = write!(
        o,
        "<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\">call time (log)</text>\
         <text x=\"4\" y=\"12\" font-size=\"10\">calls (sqrt)</text></svg>",
        w - 10.0,
        h - 2.0
    );
}

fn site_details(o: &mut String, c: &Ctx, n: usize) {
    if n == 0 {
        return;
    }
    o.push_str("<h2 id=\"details\">Top sites in detail</h2>\n<p class=\"meta\">Call times (log scale); red bars are above the mean tmax (dashed line), the shaded band spans tmax over the calls' sizes.</p>\n");
    for (i, s) in c.r.sites.iter().take(n).enumerate() {
        let _ = write!(
            o,
            "<div class=\"site\" id=\"site-{}\"><h3>{}. {} in <code>{}</code> at <code>{}</code></h3><p class=\"meta\">{} calls, time {}, overhead {}, {} over tmax, {}{}{}</p><div class=\"grid2\"><div>",
            s.rank,
            s.rank,
            esc(&s.mpi_function),
            esc(s.function.as_deref().unwrap_or("?")),
            esc(&s.location),
            count(s.calls),
            secs(s.time_s),
            s.overhead_s.map(secs).unwrap_or_else(|| "unknown".into()),
            match (s.exceed_fraction, s.expected_exceed_fraction) {
                (Some(x), Some(e)) => format!("{} (chance: {})", pct(x), pct(e)),
                (Some(x), None) => pct(x),
                _ => "-".into(),
            },
            esc(s.significance.as_str()),
            s.wait_state
                .map(|w| format!(", {}", esc(w.as_str())))
                .unwrap_or_default(),
            if s.late_ranks.is_empty() {
                String::new()
            } else {
                format!(
                    ", late ranks {}",
                    s.late_ranks.iter().take(8).map(|x| x.to_string()).collect::<Vec<_>>().join(", ")
                )
            }
        );
        match c.r.detail.dists.get(i).and_then(|d| d.as_ref()) {
            Some(d) => dist_svg(o, d, s.rank),
            None => o.push_str("<p>No distribution.</p>"),
        }
        o.push_str("</div><div>");
        match c.r.detail.sources.get(i).and_then(|d| d.as_ref()) {
            Some(src) => {
                let _ = write!(o, "<pre class=\"src\" title=\"{}\">", esc(&src.path));
                for (ln, text) in &src.lines {
                    let line = format!("{ln:>5}  {}", esc(text));
                    if *ln == src.highlight {
                        let _ = write!(o, "<span class=\"hl\">{line}</span>");
                    } else {
                        let _ = writeln!(o, "{line}");
                    }
                }
                o.push_str("</pre>");
            }
            None => {
                let _ = write!(
                    o,
                    "<p class=\"meta\">Source {} not readable here.</p>",
                    esc(s.file.as_deref().unwrap_or(&s.location))
                );
            }
        }
        if !s.inlined_into.is_empty() {
            let _ = write!(
                o,
                "<p class=\"meta\">Inlined into: {}</p>",
                esc(&s.inlined_into.join(" ← "))
            );
        }
        if !s.posted_at.is_empty() {
            let _ = write!(
                o,
                "<p class=\"meta\">Completes {} posted at {}</p>",
                esc(&s.completes.join(", ")),
                esc(&s.posted_at.join(", "))
            );
        }
        if !s.waited_for.is_empty() {
            let who: Vec<String> = s
                .waited_for
                .iter()
                .map(|w| {
                    format!(
                        "rank {}{} ({})",
                        w.peer,
                        w.posted_at
                            .as_ref()
                            .map(|a| format!(", posted at {a}"))
                            .unwrap_or_default(),
                        crate::units::secs(w.overhead_s)
                    )
                })
                .collect();
            let _ = write!(
                o,
                "<p class=\"meta\">Waited for: {}</p>",
                esc(&who.join("; "))
            );
        }
        if !s.completed_at.is_empty() {
            let _ = write!(
                o,
                "<p class=\"meta\">Completed at {}</p>",
                esc(&s.completed_at.join(", "))
            );
        }
        for rule in &s.tmax_composed {
            let _ = write!(o, "<p class=\"meta\">tmax composed: {}</p>", esc(rule));
        }
        for why in &s.tmax_missing {
            let _ = write!(o, "<p class=\"meta\">No tmax: {}</p>", esc(why));
        }
        o.push_str("</div></div></div>\n");
    }
}

fn ranks_table(o: &mut String, c: &Ctx) {
    let r = c.r;
    let mut rows: Vec<&crate::model::RankReport> = r.ranks.iter().collect();
    let all = rows.len() <= 64;
    if !all {
        rows.sort_by(|a, b| {
            let k = |x: &crate::model::RankReport| x.overhead_s.unwrap_or(x.mpi_time_s);
            k(b).total_cmp(&k(a)).then(a.rank.cmp(&b.rank))
        });
        rows.truncate(32);
    }
    let _ = write!(
        o,
        "<h2 id=\"ranks\">Ranks <span class=\"meta\">({})</span></h2><div class=\"scroll\"><table class=\"sortable\"><thead><tr>\
         <th class=\"n\">Rank</th><th>Host</th><th class=\"n\">App time</th><th class=\"n\">MPI time</th><th class=\"n\">MPI %</th>\
         <th class=\"n\">Overhead</th><th class=\"n\">Tool cost</th><th>Record</th></tr></thead><tbody>",
        if all {
            "all".to_string()
        } else {
            format!("the {} with the most {} of {}", rows.len(), if c.ovh { "overhead" } else { "MPI time" }, r.ranks.len())
        }
    );
    for k in rows {
        let _ = write!(
            o,
            "<tr><td class=\"n\" data-v=\"{}\">{}</td><td>{}</td><td class=\"n\" data-v=\"{}\">{}</td><td class=\"n\" data-v=\"{}\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\" data-v=\"{}\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            k.rank,
            k.rank,
            esc(&k.host),
            k.app_time_s,
            secs(k.app_time_s),
            k.mpi_time_s,
            secs(k.mpi_time_s),
            pct(if k.app_time_s > 0.0 { k.mpi_time_s / k.app_time_s } else { 0.0 }),
            k.overhead_s.unwrap_or(-1.0),
            k.overhead_s.map(secs).unwrap_or_else(|| "-".into()),
            secs(k.tool_time_s),
            esc(&k.finished)
        );
    }
    o.push_str("</tbody></table></div>\n");
}

fn methods(o: &mut String, c: &Ctx) {
    let m = &c.r.methods;
    o.push_str("<h2 id=\"methods\">Methods</h2><dl class=\"methods\">");
    let mut item = |k: &str, v: String| {
        let _ = write!(o, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(&v));
    };
    item(
        "Profile",
        match &m.profile {
            Some(p) => format!(
                "{} ({}; {})",
                p.path,
                if p.source == ProfileSource::Record {
                    "tmax recorded online"
                } else {
                    "re-analysed from the histograms"
                },
                match p.matched {
                    Some(true) => "environment matches the run",
                    Some(false) => "environment does NOT match the run",
                    None => "environment not checked",
                }
            ),
            None => "none".into(),
        },
    );
    item(
        "Overhead",
        "sum over calls of max(0, t - tmax), from the recorded histograms (1 % buckets)".into(),
    );
    item(
        "Significance",
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
        ),
    );
    item(
        "Wait states",
        format!(
            "Scalasca's names; sends of {} or more are rendezvous ({}), MPI_Ssend always, MPI_Bsend never",
            bytes(m.rendezvous_bytes),
            m.rendezvous_detail
        ),
    );
    let l = &m.lookups;
    item(
        "tmax lookups",
        format!(
            "{} keys ({} calls) with a tmax, {} out of the calibrated range ({} calls), {} without ({} calls)",
            count(l.entries),
            count(l.calls),
            count(l.out_of_range_entries),
            count(l.out_of_range_calls),
            count(l.missing_entries),
            count(l.missing_calls)
        ),
    );
    item(
        "Timer",
        format!(
            "{}, resolution {}, read cost {}",
            m.timer.name,
            secs(m.timer.resolution_s),
            secs(m.timer.cost_s)
        ),
    );
    item(
        "Tool cost",
        format!(
            "{} per call x {} calls = {} ({} of application time)",
            secs(m.tool.cost_per_call_s),
            count(m.tool.calls),
            secs(m.tool.time_s),
            pct(m.tool.share_of_app)
        ),
    );
    item(
        "Folded keys",
        format!(
            "{} keys, {} calls",
            count(m.folded_keys),
            count(m.folded_calls)
        ),
    );
    item("Call-site depth", m.depth.to_string());
    if let Some(h) = &m.hint {
        item("Note", h.clone());
    }
    o.push_str("</dl>\n");
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes_and_colours() {
        assert_eq!(
            super::esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(super::heat(0.0), "#fff5f0");
        assert_eq!(super::heat(1.0), "#a50f15");
    }
}
