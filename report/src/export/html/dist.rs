//! A site's call times as a histogram on a log axis, against tmax.
//!
//! The chart keeps each kind of mark in a place of its own so that none can
//! cover another: the tmax label in a band above the plot (bars never reach
//! it), turned towards the side with room; the count axis's name along the
//! left edge; tick labels under the axis, thinned where they would touch.

use std::fmt::Write;

use crate::model::Dist;
use crate::units::{count, secs};

use super::esc;

/// Width, height, left margin, bottom margin, label band on top.
const W: f64 = 520.0;
const H: f64 = 180.0;
const PAD_L: f64 = 30.0;
const PAD_R: f64 = 12.0;
const PAD_B: f64 = 30.0;
const BAND: f64 = 22.0;

/// Width of `text` at `size` px in the page's sans-serif font, generously
/// (digits and lower case average about 0.55 em).
fn text_w(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.62
}

/// Tick values on a log axis from `lo` to `hi` (seconds, `lo < hi`): decades
/// when the range spans a few of them, else ever finer round values in each
/// decade, whichever first gives three ticks; the two ends when even the
/// finest give fewer (a range narrower than about a factor of 1.2).
pub(crate) fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    const STEPS: [&[f64]; 5] = [
        &[1.0],
        &[1.0, 3.0],
        &[1.0, 2.0, 5.0],
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
        &[
            1.0, 1.2, 1.4, 1.6, 1.8, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0,
        ],
    ];
    let (k0, k1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    for steps in STEPS {
        let ticks: Vec<f64> = (k0..=k1)
            .flat_map(|k| steps.iter().map(move |m| m * 10f64.powi(k)))
            // Within the range, up to rounding of the powers of ten.
            .filter(|&t| t >= lo * (1.0 - 1e-9) && t <= hi * (1.0 + 1e-9))
            .collect();
        if ticks.len() >= 3 {
            return ticks;
        }
    }
    vec![lo, hi]
}

pub(crate) fn dist_svg(o: &mut String, d: &Dist, id: usize) {
    let (y0, y1) = (BAND, H - PAD_B);
    // The axis spans the calls and tmax, so that a tmax beyond every call
    // is drawn too.
    let mut lo = d.edges[0];
    let mut hi = d.edges[d.edges.len() - 1];
    for t in [d.tmax_min_s, d.tmax_mean_s, d.tmax_max_s]
        .into_iter()
        .flatten()
    {
        if t.is_finite() && t > 0.0 {
            lo = lo.min(t);
            hi = hi.max(t);
        }
    }
    let hi = hi.max(lo * (1.0 + 1e-9));
    let (llo, lhi) = (lo.ln(), hi.ln());
    let x = |t: f64| PAD_L + (t.max(lo).ln() - llo) / (lhi - llo) * (W - PAD_L - PAD_R);
    let maxc = d.counts.iter().copied().max().unwrap_or(1).max(1) as f64;
    let y = |cnt: f64| y1 - (cnt / maxc).sqrt() * (y1 - y0);
    let _ = write!(
        o,
        "<svg class=\"dist\" id=\"dist-{id}\" role=\"img\" aria-label=\"call times\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\">"
    );
    if let (Some(a), Some(b)) = (d.tmax_min_s, d.tmax_max_s) {
        let (xa, xb) = (x(a), x(b));
        let _ = write!(
            o,
            "<rect class=\"band\" x=\"{xa:.1}\" y=\"{y0}\" width=\"{:.1}\" height=\"{}\" fill=\"#ffebe9\"/>",
            (xb - xa).max(1.0),
            y1 - y0
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
            "<rect class=\"bar\" x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{} - {}: {} calls</title></rect>",
            y(cnt as f64),
            (x1 - x0 - 0.5).max(0.8),
            y1 - y(cnt as f64),
            if over { "#cf222e" } else { "#0969da" },
            secs(d.edges[i]),
            secs(d.edges[i + 1]),
            count(cnt)
        );
    }
    tmax_mark(o, d.tmax_mean_s.map(|t| (t, x(t))));
    let _ = write!(
        o,
        "<line class=\"axis\" x1=\"{PAD_L}\" x2=\"{}\" y1=\"{y1}\" y2=\"{y1}\" stroke=\"#57606a\"/>",
        W - PAD_R
    );
    ticks(o, lo, hi, &x);
    let _ = write!(
        o,
        "<text class=\"label\" x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\">call time (log)</text>\
         <text class=\"label\" transform=\"translate(12 {:.1}) rotate(-90)\" font-size=\"10\" text-anchor=\"middle\">calls (sqrt)</text></svg>",
        W - PAD_R,
        H - 2.0,
        (y0 + y1) / 2.0
    );
}

/// The dashed tmax line through the plot and its label in the band above,
/// right of the line where it fits, else left of it; without tmax, a note
/// in the band saying so.
fn tmax_mark(o: &mut String, t: Option<(f64, f64)>) {
    let Some((t, xt)) = t else {
        let _ = write!(
            o,
            "<text class=\"tmax-label\" x=\"{PAD_L}\" y=\"15\" font-size=\"11\" fill=\"#57606a\">no tmax for these calls</text>"
        );
        return;
    };
    let label = format!("tmax {}", secs(t));
    let lw = text_w(&label, 11.0);
    let (lx, anchor) = if xt + 4.0 + lw <= W - 2.0 {
        (xt + 4.0, "start")
    } else {
        ((xt - 4.0).max(lw + 2.0), "end")
    };
    let _ = write!(
        o,
        "<line class=\"tmax\" x1=\"{xt:.1}\" x2=\"{xt:.1}\" y1=\"{}\" y2=\"{}\" stroke=\"#a50f15\" stroke-width=\"2\" stroke-dasharray=\"4 2\"/>\
         <text class=\"tmax-label\" x=\"{lx:.1}\" y=\"15\" font-size=\"11\" text-anchor=\"{anchor}\" fill=\"#a50f15\">{}</text>",
        BAND - 4.0,
        H - PAD_B,
        esc(&label)
    );
}

/// Tick marks under the axis, each labelled unless its label would touch
/// the one before or run past the edges.
fn ticks(o: &mut String, lo: f64, hi: f64, x: &dyn Fn(f64) -> f64) {
    let y1 = H - PAD_B;
    let mut right_of_last = f64::NEG_INFINITY;
    for t in log_ticks(lo, hi) {
        let xt = x(t);
        let _ = write!(
            o,
            "<line class=\"tick-mark\" x1=\"{xt:.1}\" x2=\"{xt:.1}\" y1=\"{y1}\" y2=\"{}\" stroke=\"#57606a\"/>",
            y1 + 4.0
        );
        let label = secs(t);
        let lw = text_w(&label, 10.0);
        // Centred under its tick, or at the ends of the axis ending or
        // starting there, so that no label is cut at the chart's edge.
        let (left, anchor) = if xt - lw / 2.0 < 1.0 {
            (xt, "start")
        } else if xt + lw / 2.0 > W - 1.0 {
            (xt - lw, "end")
        } else {
            (xt - lw / 2.0, "middle")
        };
        if left < right_of_last + 6.0 {
            continue;
        }
        right_of_last = left + lw;
        let _ = write!(
            o,
            "<text class=\"tick\" x=\"{xt:.1}\" y=\"{}\" font-size=\"10\" text-anchor=\"{anchor}\">{}</text>",
            y1 + 15.0,
            esc(&label)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::log_ticks;

    #[test]
    fn every_range_gets_at_least_two_ticks_inside_it() {
        for (lo, hi) in [
            (1e-6, 1e-2),
            (2e-6, 9e-6),
            (3.1e-6, 4.2e-6),
            (1.5e-3, 1.6e-3),
            (1e-6, 2.24e-6),
            (7e-7, 1.1e-6),
        ] {
            let t = log_ticks(lo, hi);
            assert!(t.len() >= 2, "{lo} {hi}: {t:?}");
            assert!(
                t.iter().all(|&v| v >= lo * 0.999 && v <= hi * 1.001),
                "{t:?}"
            );
            assert!(t.windows(2).all(|w| w[0] < w[1]), "{t:?}");
        }
        assert_eq!(log_ticks(1e-6, 1e-2).len(), 5, "decades");
        assert_eq!(log_ticks(2e-6, 9e-6).len(), 8, "every multiple");
        assert_eq!(log_ticks(1e-6, 2.24e-6).len(), 6, "finer");
    }
}
