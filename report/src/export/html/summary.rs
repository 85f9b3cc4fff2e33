//! The top of the page: the summary and the bar chart of the top sites.

use std::fmt::Write;

use super::{esc, Ctx};
use crate::model::SiteReport;
use crate::units::{count, pct, secs};

pub(crate) fn summary(o: &mut String, c: &Ctx) {
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
        if s.marginal_sites > 0 {
            format!("significant sites ({} marginal)", s.marginal_sites)
        } else {
            "significant sites".into()
        },
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

pub(crate) fn bar_chart(o: &mut String, c: &Ctx, n: usize) {
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
        let label = format!("{}. {} {}", s.position, c.loc(s), s.mpi_function);
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
