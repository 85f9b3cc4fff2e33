//! `mpiover fit FILE`: fit the error models (the overhead paper's Poisson and exponential, and
//! the negative binomial, log-normal and body + tail mixture) to a sample of run-times and
//! print tmax, with the reasons: every family with its parameters, chi-square test and BIC,
//! the one chosen (lowest BIC among those the test accepts). The statistics are in
//! `mpiover_stats`.
//!
//! Input: one run-time in seconds per line; blank lines and `#` comments (whole lines or the
//! rest of a line) are ignored; `-` reads standard input. A line that is not a number, or is
//! NaN, infinite or negative, is an error that names the file and the line.
use std::io::Read;

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use mpiover_stats::{fit, FitOptions, FitResult, ModelFit, ModelKind, StatsError, Verdict};
use serde::Serialize;

#[derive(Debug, Args)]
pub struct FitArgs {
    /// File with one run-time in seconds per line (`-` for stdin); blank lines and `#`
    /// comments are ignored.
    pub file: String,
    /// Timer resolution in seconds: bins are never narrower than this.
    #[arg(long, value_name = "SECONDS", default_value_t = 1e-9)]
    pub resolution: f64,
    /// q_max, the quantile of the error distribution that defines tmax (0.8 <= q < 1).
    #[arg(long, value_name = "Q", default_value_t = 0.99)]
    pub q: f64,
    /// Significance level of the chi-square test.
    #[arg(long, value_name = "ALPHA", default_value_t = 0.05)]
    pub alpha: f64,
    /// Bin width in seconds (default: chosen from the sample's spread, in whole timer ticks).
    #[arg(long, value_name = "SECONDS")]
    pub bin_width: Option<f64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = FitFormat::Text)]
    pub format: FitFormat,
    /// Keep the maximum-likelihood lambda of the Poisson and exponential models (skip the
    /// refinement of the overhead paper eq. 10).
    #[arg(long)]
    pub no_refine: bool,
    /// Do not fit a generalized Pareto tail where every body model is rejected: tmax is then
    /// the empirical quantile, as the calibration computed it before tail models.
    #[arg(long)]
    pub no_tail: bool,
    /// Smallest number of run-times accepted.
    #[arg(long, value_name = "N", default_value_t = FitOptions::default().min_samples)]
    pub min_samples: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FitFormat {
    Text,
    Json,
}

/// The JSON document: the input's name and the whole fit.
#[derive(Serialize)]
struct JsonOut<'a> {
    file: &'a str,
    #[serde(flatten)]
    fit: &'a FitResult,
}

pub fn run(args: &FitArgs) -> anyhow::Result<()> {
    let out = output(args)?;
    crate::cli::write_out(None, out.as_bytes())
}

/// What [`run`] prints (the fuzz tests run it on bad sample files).
pub fn output(args: &FitArgs) -> anyhow::Result<String> {
    let opts = FitOptions {
        resolution_s: args.resolution,
        bin_width_s: args.bin_width,
        q_max: args.q,
        alpha: args.alpha,
        refine: !args.no_refine,
        tail: !args.no_tail,
        min_samples: args.min_samples,
        ..FitOptions::default()
    };
    // Check the options before reading anything, and name the flag that is wrong.
    if let Err(e) = opts.validate() {
        let flag = match e {
            StatsError::BadResolution(_) => "--resolution",
            StatsError::BadQuantile(_) => "--q",
            StatsError::BadAlpha(_) => "--alpha",
            StatsError::BadBinWidth(_) | StatsError::BinWidthBelowResolution { .. } => {
                "--bin-width"
            }
            _ => "option",
        };
        bail!("invalid {flag}: {e}");
    }
    let (name, sample) = read_sample(&args.file)?;
    let result = fit(&sample, &opts).with_context(|| format!("cannot fit {name}"))?;
    let out = match args.format {
        FitFormat::Json => {
            let mut s = serde_json::to_string_pretty(&JsonOut {
                file: &name,
                fit: &result,
            })?;
            s.push('\n');
            s
        }
        FitFormat::Text => render_text(&name, &result),
    };
    Ok(out)
}

/// The sample file's run-times (`-`: standard input), and its name for
/// messages: the reader of [`run`], without the fit.
pub fn read_sample(file: &str) -> anyhow::Result<(String, Vec<f64>)> {
    let (name, text) = read_input(file)?;
    let sample = parse_times(&name, &text)?;
    Ok((name, sample))
}

/// Reads the whole input; invalid UTF-8 is kept (lossily) so that the bad line gets a number.
fn read_input(file: &str) -> anyhow::Result<(String, String)> {
    let mut bytes = Vec::new();
    if file == "-" {
        std::io::stdin()
            .read_to_end(&mut bytes)
            .context("cannot read standard input")?;
        Ok((
            "<stdin>".to_string(),
            String::from_utf8_lossy(&bytes).into_owned(),
        ))
    } else {
        std::fs::File::open(file)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .with_context(|| format!("cannot read {file}"))?;
        Ok((
            file.to_string(),
            String::from_utf8_lossy(&bytes).into_owned(),
        ))
    }
}

/// One run-time per line; `#` starts a comment; blank lines are skipped.
fn parse_times(name: &str, text: &str) -> anyhow::Result<Vec<f64>> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        let content = line.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let v: f64 = match content.parse() {
            Ok(v) => v,
            Err(_) => bail!("{name}:{lineno}: cannot read {content:?} as a time in seconds"),
        };
        if !v.is_finite() {
            bail!("{name}:{lineno}: {content:?} is not a finite number of seconds");
        }
        if v < 0.0 {
            bail!("{name}:{lineno}: negative time {content}: a run-time cannot be negative");
        }
        out.push(v);
    }
    Ok(out)
}

/// Seconds with a readable unit and 4-5 significant digits.
fn human(s: f64) -> String {
    human_at(s, 0.0)
}

/// Seconds with a readable unit, 4-5 significant digits, and at least enough decimals to show
/// one `resolution_s` (so that tmax and the fastest time differ visibly by their error).
fn human_at(s: f64, resolution_s: f64) -> String {
    let a = s.abs();
    let (scale, unit) = if a == 0.0 {
        return "0 s".to_string();
    } else if a >= 1.0 {
        (1.0, "s")
    } else if a >= 1e-3 {
        (1e3, "ms")
    } else if a >= 1e-6 {
        (1e6, "us")
    } else if a >= 1e-9 {
        (1e9, "ns")
    } else {
        return format!("{s:.3e} s");
    };
    let v = s * scale;
    let sig: usize = if v.abs() >= 100.0 {
        2
    } else if v.abs() >= 10.0 {
        3
    } else {
        4
    };
    let res = resolution_s * scale;
    let needed = if res > 0.0 && res.is_finite() {
        (-res.log10() - 1e-9).ceil().clamp(0.0, 9.0) as usize
    } else {
        0
    };
    let digits = sig.max(needed);
    format!("{v:.digits$} {unit}")
}

/// The model's parameters with their units and the mean error they imply. An exhaustive
/// match on the model kind (not on its name), so that a new model fails to compile here
/// instead of being described as one of the others.
fn params_text(m: &ModelFit, bin_width_s: f64) -> String {
    let p = |i: usize| m.params.get(i).copied().unwrap_or(f64::NAN);
    let mean = human(m.mean_error_s);
    match m.kind {
        ModelKind::Poisson => format!(
            "{:.4} classes (mean {})",
            m.lambda,
            human(m.lambda * bin_width_s)
        ),
        ModelKind::Exponential => {
            format!("{:.4e} 1/s (mean {})", m.lambda, human(1.0 / m.lambda))
        }
        ModelKind::NegBinomial => {
            format!(
                "mean {} classes, r {} (mean {mean})",
                sig4(p(0)),
                sig4(p(1))
            )
        }
        ModelKind::LogNormal => {
            format!("median {}, sigma {} (mean {mean})", human(p(0)), sig4(p(1)))
        }
        // An empty tail (the likelihood is flat in its mean, which then says nothing) is
        // shown as such.
        ModelKind::Mixture if p(2) < 1e-4 => {
            format!("{} classes + <0.01% tail", sig4(p(0)))
        }
        ModelKind::Mixture => format!(
            "{} classes + {}% tail of mean {}",
            sig4(p(0)),
            sig4(100.0 * p(2)),
            human(1.0 / p(1))
        ),
    }
}

/// A number with 4 significant digits, in scientific notation outside 1e-3..1e5.
fn sig4(x: f64) -> String {
    let a = x.abs();
    if x == 0.0 || !x.is_finite() {
        format!("{x}")
    } else if (1e-3..1e5).contains(&a) {
        let decimals = (3 - a.log10().floor() as i32).max(0) as usize;
        format!("{x:.decimals$}")
    } else {
        format!("{x:.3e}")
    }
}

fn percent(q: f64) -> String {
    let p = format!("{:.4}", q * 100.0);
    let p = p.trim_end_matches('0').trim_end_matches('.');
    format!("{p}%")
}

/// The fallback's interval in words: at its level, or, when n is too small for one, the widest
/// interval with its exact coverage, so that it is never read as a 95 % interval.
fn fallback_ci_text(r: &FitResult) -> String {
    let Some((lo, hi)) = r.fallback_ci else {
        return String::new();
    };
    let (lo, hi) = (human_at(lo, r.resolution_s), human_at(hi, r.resolution_s));
    let level = percent(r.ci_level);
    match (r.fallback_ci_nominal, r.fallback_ci_coverage) {
        (Some(false), Some(c)) => format!(
            "; a {level} confidence interval is not available at n = {}: the widest interval \
             the sample gives, {lo} .. {hi} (up to the slowest run-time), has {:.1}% coverage",
            r.n,
            100.0 * c
        ),
        (_, Some(c)) => {
            format!(
                ", {level} confidence interval {lo} .. {hi} (exact coverage {:.1}%)",
                100.0 * c
            )
        }
        (_, None) => format!(", {level} confidence interval {lo} .. {hi}"),
    }
}

fn render_text(name: &str, r: &FitResult) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(s, "mpiover fit: {} run-times from {name}", r.n);
    let _ = writeln!(
        s,
        "  fastest {}, slowest {}; errors e = t - fastest binned in classes of w = {} \
         (timer resolution {})",
        human_at(r.min_s, r.resolution_s),
        human_at(r.max_s, r.resolution_s),
        human(r.bin_width_s),
        human(r.resolution_s)
    );
    let _ = writeln!(
        s,
        "  bin width: {}; highest class {}, mean class {:.3}",
        r.bin_rule.describe(),
        r.max_class,
        r.mean_class
    );
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "  {:<12} {:<48} {:>10} {:>4} {:>10} {:>8} {:>10}  verdict",
        "model", "parameters", "chi2", "df", "critical", "p-value", "BIC"
    );
    for m in &r.models {
        let verdict = match m.verdict {
            Verdict::Accepted => "accepted",
            Verdict::Rejected => "rejected",
            Verdict::Untestable => "untestable",
        };
        let crit = m
            .critical
            .map_or_else(|| "-".to_string(), |c| format!("{c:.2}"));
        let p = match m.p_value {
            None => "-".to_string(),
            Some(p) if p < 1e-4 => "<0.0001".to_string(),
            Some(p) => format!("{p:.4}"),
        };
        let _ = writeln!(
            s,
            "  {:<12} {:<48} {:>10.2} {:>4} {:>10} {:>8} {:>10.1}  {verdict}{}",
            m.kind,
            params_text(m, r.bin_width_s),
            m.chi2,
            m.df,
            crit,
            p,
            m.bic,
            if m.refined {
                " (lambda refined, eq. 10)"
            } else {
                ""
            }
        );
    }
    if let Some(t) = &r.tail {
        let _ = writeln!(
            s,
            "  {:<12} {:<48} {:>10} {:>4} {:>10} {:>8.4} {:>10}  {}",
            "tail (GPD)",
            format!(
                "xi {:.3}, sigma {}, {} above {}",
                t.xi,
                human(t.sigma_s),
                t.exceedances,
                human(t.threshold_s)
            ),
            format!("A2 {:.3}", t.a2),
            "",
            "",
            t.p_value,
            "",
            if t.accepted { "accepted" } else { "rejected" }
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "Decision: {}.", r.decision());
    let pct = percent(r.q_max);
    match r.chosen_kind().and_then(|k| r.model(k)) {
        Some(m) => {
            // Exhaustive over the kinds: each model explains its own quantile.
            let how = match m.kind {
                ModelKind::Poisson => format!(
                    "the {pct} quantile of the Poisson model is class {} (errors up to {})",
                    m.quantile_class,
                    human(m.terr_max_s)
                ),
                ModelKind::Exponential => format!(
                    "the {pct} quantile of the exponential model is -ln(1 - {}) / lambda = {}",
                    r.q_max,
                    human(m.terr_max_s)
                ),
                ModelKind::NegBinomial => format!(
                    "the {pct} quantile of the negative binomial model is class {} (errors up to {})",
                    m.quantile_class,
                    human(m.terr_max_s)
                ),
                ModelKind::LogNormal => format!(
                    "the {pct} quantile of the log-normal model is median e^(sigma z_{}) = {}",
                    r.q_max,
                    human(m.terr_max_s)
                ),
                ModelKind::Mixture => format!(
                    "the {pct} quantile of the body + tail mixture is class {} (errors up to {})",
                    m.quantile_class,
                    human(m.terr_max_s)
                ),
            };
            let _ = writeln!(
                s,
                "tmax = {} = fastest + {}: {how}.",
                human_at(r.tmax_s, r.resolution_s),
                human(r.terr_max_s)
            );
        }
        None if !r.fallback => {
            let _ = writeln!(
                s,
                "tmax = {} = fastest + {}: the threshold plus the generalized Pareto quantile \
                 that the errors exceed with probability 1 - {} (docs/method.md, \
                 \"A tail model where no body fits\").",
                human_at(r.tmax_s, r.resolution_s),
                human(r.terr_max_s),
                r.q_max
            );
        }
        None => {
            let ci = fallback_ci_text(r);
            let _ = writeln!(
                s,
                "tmax = {} = the {pct} quantile of the measured run-times{ci}.",
                human_at(r.tmax_s, r.resolution_s)
            );
        }
    }
    let _ = writeln!(
        s,
        "Under these conditions {pct} of the calls take at most tmax; time beyond tmax counts as overhead."
    );
    for note in &r.notes {
        let _ = writeln!(s, "Note: {note}.");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_comments_blank_lines_and_numbers() {
        let v = parse_times("f", "# header\n1e-6\n\n  2.5e-6  # inline\n3e-6\r\n").unwrap();
        assert_eq!(v, vec![1e-6, 2.5e-6, 3e-6]);
    }

    #[test]
    fn bad_lines_name_file_and_line() {
        let e = parse_times("t.txt", "1e-6\n# c\nabc\n")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "t.txt:3: cannot read \"abc\" as a time in seconds");
        let e = parse_times("t.txt", "1e-6\n-2e-6\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("t.txt:2: negative time -2e-6"), "{e}");
        for bad in ["NaN", "inf", "-inf"] {
            let e = parse_times("t.txt", &format!("1\n2\n{bad}\n"))
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("t.txt:3: "), "{e}");
        }
    }

    #[test]
    fn human_units() {
        assert_eq!(human(0.0), "0 s");
        assert_eq!(human(1.5), "1.5000 s");
        assert_eq!(human(12.3456e-6), "12.346 us");
        assert_eq!(human(999e-9), "999.00 ns");
        assert_eq!(human(1e-9), "1.0000 ns");
        assert_eq!(human(2e-12), "2.000e-12 s");
        assert_eq!(human_at(12.3456789e-6, 1e-9), "12.346 us");
        assert_eq!(human_at(12.3456789e-6, 1e-10), "12.3457 us");
        assert_eq!(human_at(1.234567891, 1e-9), "1.234567891 s");
        assert_eq!(human_at(1e-6, 3.3e-8), "1.0000 us");
        assert_eq!(percent(0.99), "99%");
        assert_eq!(percent(0.995), "99.5%");
        assert_eq!(sig4(275.81074), "275.8");
        assert_eq!(sig4(1.0), "1.000");
        assert_eq!(sig4(0.0012345), "0.001234");
        assert_eq!(sig4(1.2e-12), "1.200e-12");
        assert_eq!(sig4(123_456.0), "1.235e5");
    }
}
