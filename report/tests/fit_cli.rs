//! `mpiover fit` end to end: the built binary on files and standard input.
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_mpiover");

/// A small deterministic generator (64-bit LCG, top 53 bits) so that the inputs are fixed.
struct Lcg(u64);
impl Lcg {
    fn uniform(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    /// Poisson by inversion of the CDF.
    fn poisson(&mut self, lambda: f64) -> u64 {
        let u = self.uniform();
        let (mut k, mut p) = (0u64, (-lambda).exp());
        let mut cdf = p;
        while u > cdf && k < 1000 {
            k += 1;
            p *= lambda / k as f64;
            cdf += p;
        }
        k
    }
}

/// 10 us floor plus Poisson(1.5) ticks of 1 ns, one per line, as text.
fn poisson_text(n: usize, seed: u64) -> String {
    let mut g = Lcg(seed);
    (0..n)
        .map(|_| format!("{:e}\n", (10_000 + g.poisson(1.5)) as f64 * 1e-9))
        .collect()
}

/// 10 us floor plus exponential errors of mean 1 us, on a 1 ns timer.
fn exponential_text(n: usize, seed: u64) -> String {
    let mut g = Lcg(seed);
    (0..n)
        .map(|_| {
            format!(
                "{:e}\n",
                (10_000.0 + (-1000.0 * g.uniform().ln()).floor()) * 1e-9
            )
        })
        .collect()
}

/// A file in the temporary directory (name unique to this process), removed when dropped.
struct TempFile(PathBuf);

impl std::ops::Deref for TempFile {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn temp_file(name: &str, content: &str) -> TempFile {
    let p = std::env::temp_dir().join(format!("mpiover-fit-cli-{}-{name}", std::process::id()));
    std::fs::write(&p, content).unwrap();
    TempFile(p)
}

fn run(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(BIN)
        .arg("fit")
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run mpiover");
    if let Some(text) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
    child.wait_with_output().unwrap()
}

fn ok_stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}, stderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// Exit code 2, nothing on stdout, exactly one line on stderr that contains `want`.
fn assert_user_error(out: &Output, want: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert!(
        out.stdout.is_empty(),
        "stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("mpiover: error: "), "{err}");
    assert!(err.contains(want), "expected {want:?} in {err}");
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_str(&ok_stdout(out)).expect("valid JSON")
}

#[test]
fn json_has_the_keys_of_the_issue() {
    let f = temp_file("poisson.txt", &poisson_text(1000, 1));
    let v = json(&run(&[f.to_str().unwrap(), "--format", "json"], None));
    for key in [
        "n",
        "min_s",
        "bin_width_s",
        "chosen",
        "tmax_s",
        "fallback",
        "models",
        "bin_rule",
        "fallback_ci",
        "ci_level",
        "fallback_ci_coverage",
        "fallback_ci_nominal",
    ] {
        assert!(v.get(key).is_some(), "missing {key}: {v}");
    }
    assert_eq!(v["n"], 1000);
    assert_eq!(v["chosen"], "poisson");
    assert_eq!(v["fallback"], false);
    assert_eq!(v["bin_width_s"], 1e-9);
    assert_eq!(v["file"], f.to_str().unwrap());
    let models = v["models"].as_array().unwrap();
    // Every family, in the order of ModelKind::ALL, each with all its parameters.
    let names: Vec<&str> = models.iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "poisson",
            "exponential",
            "negbinomial",
            "lognormal",
            "mixture"
        ]
    );
    for m in models {
        for key in [
            "name",
            "lambda",
            "params",
            "param_names",
            "param_units",
            "log_likelihood",
            "aic",
            "bic",
            "chi2",
            "df",
            "critical",
            "accepted",
        ] {
            assert!(m.get(key).is_some(), "missing models[].{key}: {m}");
        }
        let params = m["params"].as_array().unwrap();
        assert_eq!(params.len(), m["param_names"].as_array().unwrap().len());
        assert_eq!(params[0], m["lambda"], "lambda is the first parameter: {m}");
    }
    assert_eq!(models[2]["param_names"], serde_json::json!(["mean", "r"]));
    assert_eq!(models[4]["params"].as_array().unwrap().len(), 3);
    // Poisson lambda in classes (about 1.5), exponential lambda in 1/s (about 1/(1.5 ns)).
    assert_eq!(models[0]["name"], "poisson");
    assert_eq!(models[0]["lambda_unit"], "classes");
    let lp = models[0]["lambda"].as_f64().unwrap();
    assert!((lp - 1.5).abs() < 0.2, "{lp}");
    assert_eq!(models[0]["accepted"], true);
    assert_eq!(models[1]["name"], "exponential");
    assert_eq!(models[1]["lambda_unit"], "1/s");
    let le = models[1]["lambda"].as_f64().unwrap();
    assert!(le > 1e8 && le < 1e10, "{le}");
    let tmax = v["tmax_s"].as_f64().unwrap();
    assert!(tmax > 10e-6 && tmax < 10.02e-6, "{tmax}");
}

#[test]
fn exponential_errors_choose_the_exponential_model() {
    let f = temp_file("exp.txt", &exponential_text(1000, 2));
    let v = json(&run(&[f.to_str().unwrap(), "--format=json"], None));
    assert_eq!(v["chosen"], "exponential");
    let le = v["models"][1]["lambda"].as_f64().unwrap();
    assert!(
        (le - 1e6).abs() < 0.15e6,
        "lambda {le} 1/s for a mean of 1 us"
    );
    assert_eq!(v["bin_rule"], "freedman_diaconis");
    // The text describes the exponential as such (lambda in 1/s, its continuous quantile).
    let out = ok_stdout(&run(&[f.to_str().unwrap()], None));
    assert!(
        out.contains("the 99% quantile of the exponential model is -ln(1 - 0.99) / lambda"),
        "{out}"
    );
    let row = out
        .lines()
        .find(|l| l.trim_start().starts_with("exponential"))
        .unwrap_or_default();
    assert!(row.contains(" 1/s (mean "), "{row}");
}

#[test]
fn text_explains_the_decision() {
    let f = temp_file("text.txt", &poisson_text(500, 3));
    let out = ok_stdout(&run(&[f.to_str().unwrap()], None));
    assert!(
        out.starts_with(&format!("mpiover fit: 500 run-times from {}", f.display())),
        "{out}"
    );
    assert!(
        out.contains("Decision: the poisson model fits the errors"),
        "{out}"
    );
    assert!(out.contains("tmax = "), "{out}");
    assert!(out.contains("of the calls take at most tmax"), "{out}");
}

#[test]
fn text_snapshot() {
    let f = temp_file("snap.txt", &poisson_text(300, 4));
    let out = ok_stdout(&run(&[f.to_str().unwrap()], None));
    let out = out.replace(f.to_str().unwrap(), "FILE");
    let want = "\
mpiover fit: 300 run-times from FILE
  fastest 10.000 us, slowest 10.006 us; errors e = t - fastest binned in classes of w = 1.0000 ns (timer resolution 1.0000 ns)
  bin width: one timer tick (the Freedman-Diaconis width 2 IQR n^-1/3 is below the resolution); highest class 6, mean class 1.423

  model        parameters                                             chi2   df   critical  p-value        BIC  verdict
  poisson      1.4233 classes (mean 1.4233 ns)                        2.42    3       7.81   0.4900      910.1  accepted
  exponential  5.3214e8 1/s (mean 1.8792 ns)                         75.17    6      12.59  <0.0001      991.2  rejected
  negbinomial  mean 1.423 classes, r 275.8 (mean 1.4233 ns)           2.41    2       5.99   0.2997      915.8  accepted
  lognormal    median 1.6239 ns, sigma 0.6093 (mean 1.9551 ns)        8.09    3       7.81   0.0442      924.4  rejected
  mixture      1.423 classes + <0.01% tail                            2.42    1       3.84   0.1198      921.5  accepted

Decision: the poisson model fits the errors (chi-square 2.42 <= 7.81 at alpha = 0.05) with the lowest BIC of the accepted models; tmax is its 0.99 quantile.
tmax = 10.005 us = fastest + 5.0000 ns: the 99% quantile of the Poisson model is class 5 (errors up to 5.0000 ns).
Under these conditions 99% of the calls take at most tmax; time beyond tmax counts as overhead.
";
    assert_eq!(out, want, "\n--- got ---\n{out}");
}

#[test]
fn stdin_comments_and_blank_lines() {
    let data = poisson_text(400, 5);
    let a = json(&run(&["-", "--format", "json"], Some(&data)));
    assert_eq!(a["file"], "<stdin>");
    let commented: String = data
        .lines()
        .enumerate()
        .map(|(i, l)| match i % 50 {
            0 => format!("# block {i}\n\n{l}   # a comment\n"),
            _ => format!("  {l}\n"),
        })
        .collect();
    let f = temp_file("commented.txt", &commented);
    let b = json(&run(&[f.to_str().unwrap(), "--format", "json"], None));
    assert_eq!(a["tmax_s"], b["tmax_s"]);
    assert_eq!(a["models"], b["models"]);
}

#[test]
fn options_reach_the_fit() {
    let f = temp_file("opts.txt", &exponential_text(600, 6));
    let v = json(&run(
        &[
            f.to_str().unwrap(),
            "--format",
            "json",
            "--q",
            "0.9",
            "--alpha",
            "0.01",
            "--bin-width",
            "2e-7",
            "--resolution",
            "1e-8",
            "--no-refine",
        ],
        None,
    ));
    assert_eq!(v["q_max"], 0.9);
    assert_eq!(v["alpha"], 0.01);
    assert_eq!(v["bin_width_s"], 2e-7);
    assert_eq!(v["resolution_s"], 1e-8);
    assert_eq!(v["bin_rule"], "user");
    assert!(v["models"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m["refined"] == false));
}

/// 1,000 run-times in two modes 2 us apart, each a 10 us (or 12 us) floor plus exponential
/// errors of mean 50 ns in whole nanoseconds.
fn bimodal_text() -> String {
    let mut text = String::new();
    let mut g = Lcg(7);
    for i in 0..1000 {
        let mode = if i % 2 == 0 { 0.0 } else { 2000.0 };
        let e = (-50.0 * g.uniform().ln()).floor();
        text.push_str(&format!("{:e}\n", (10_000.0 + mode + e) * 1e-9));
    }
    text
}

#[test]
fn bimodal_sample_falls_back_with_a_ci() {
    let text = bimodal_text();
    let f = temp_file("bimodal.txt", &text);
    let f = f.to_str().unwrap();
    let out = ok_stdout(&run(&[f, "--no-tail"], None));
    assert!(out.contains("Decision: no model fits the errors"), "{out}");
    assert!(out.contains("95% confidence interval"), "{out}");
    assert!(out.contains("(exact coverage "), "{out}");
    let v = json(&run(&[f, "--format", "json", "--no-tail"], None));
    assert_eq!(v["fallback"], true);
    assert!(v["chosen"].is_null());
    assert_eq!(v["fallback_ci"].as_array().unwrap().len(), 2);
    assert_eq!(v["ci_level"], 0.95);
    assert_eq!(v["fallback_ci_nominal"], true);
    let cov = v["fallback_ci_coverage"].as_f64().unwrap();
    assert!((0.94..1.0).contains(&cov), "{cov}");
}

/// Two modes, 200 run-times: the fallback at the calibration's usual sample size, where no
/// 95 % interval of the 0.99 quantile exists. The widest interval, [x_(195), x_(200)], comes
/// with its exact coverage 1 - P(A >= 6) - 0.99^200 = 0.8500 (A ~ Binomial(200, 0.01) values
/// above the quantile; the upper end alone misses with probability 0.99^200 = 0.134).
#[test]
fn fallback_at_n_200_states_the_coverage_of_its_interval() {
    let mut g = Lcg(17);
    let times: Vec<f64> = (0..200)
        .map(|i| {
            let mode = if i % 2 == 0 { 0.0 } else { 2000.0 };
            (10_000.0 + mode + (-50.0 * g.uniform().ln()).floor()) * 1e-9
        })
        .collect();
    let text: String = times.iter().map(|t| format!("{t:e}\n")).collect();
    let f = temp_file("bimodal200.txt", &text);
    let v = json(&run(
        &[f.to_str().unwrap(), "--format", "json", "--no-tail"],
        None,
    ));
    assert_eq!(v["fallback"], true);
    assert_eq!(v["n"], 200);
    assert_eq!(v["fallback_ci_nominal"], false);
    let cov = v["fallback_ci_coverage"].as_f64().unwrap();
    assert!((cov - 0.8500).abs() < 5e-5, "{cov}");
    assert!(cov < 1.0 - 0.99f64.powi(200));
    // The ends are the 195th value and the maximum (times as parsed back from the text).
    let mut sorted: Vec<f64> = text.lines().map(|l| l.parse().unwrap()).collect();
    sorted.sort_by(f64::total_cmp);
    let ci = v["fallback_ci"].as_array().unwrap();
    assert_eq!(ci[0].as_f64().unwrap(), sorted[194]);
    assert_eq!(ci[1].as_f64().unwrap(), sorted[199]);
    let out = ok_stdout(&run(&[f.to_str().unwrap(), "--no-tail"], None));
    assert!(out.contains("Decision: no model fits the errors"), "{out}");
    assert!(
        out.contains("a 95% confidence interval is not available at n = 200"),
        "{out}"
    );
    assert!(out.contains("has 85.0% coverage"), "{out}");
    assert!(!out.contains(", 95% confidence interval "), "{out}");
}

#[test]
fn bad_lines_are_errors_with_file_and_line() {
    let good = poisson_text(100, 8);
    for (bad, want) in [
        ("1.2.3", ":4: cannot read \"1.2.3\" as a time in seconds"),
        ("12 us", ":4: cannot read \"12 us\""),
        ("-1e-6", ":4: negative time -1e-6"),
        ("NaN", ":4: \"NaN\" is not a finite number"),
        ("inf", ":4: \"inf\" is not a finite number"),
    ] {
        let text = good
            .lines()
            .take(2)
            .map(|l| format!("{l}\n"))
            .collect::<String>()
            + "# comment\n"
            + bad
            + "\n"
            + &good;
        let f = temp_file("bad.txt", &text);
        let out = run(&[f.to_str().unwrap()], None);
        assert_user_error(&out, &format!("{}{want}", f.display()));
        // Same from standard input.
        assert_user_error(&run(&["-"], Some(&text)), &format!("<stdin>{want}"));
    }
}

#[test]
fn degenerate_samples_are_errors() {
    let f = temp_file("empty.txt", "# nothing here\n\n");
    assert_user_error(
        &run(&[f.to_str().unwrap()], None),
        "too few samples: 0 given, at least 50",
    );
    let f = temp_file("few.txt", &poisson_text(10, 9));
    assert_user_error(
        &run(&[f.to_str().unwrap()], None),
        "too few samples: 10 given, at least 50",
    );
    let f = temp_file("equal.txt", &"1e-6\n".repeat(100));
    assert_user_error(
        &run(&[f.to_str().unwrap()], None),
        "all 100 run-times are equal",
    );
    let f = temp_file("oneclass.txt", &poisson_text(100, 10));
    assert_user_error(
        &run(&[f.to_str().unwrap(), "--bin-width", "1e-3"], None),
        "all 100 errors fall into class 0",
    );
    assert_user_error(
        &run(&["/nonexistent/times.txt"], None),
        "cannot read /nonexistent/times.txt",
    );
}

#[test]
fn bad_options_are_errors() {
    let f = temp_file("opt.txt", &poisson_text(100, 11));
    let p = f.to_str().unwrap();
    for (args, want) in [
        (
            vec![p, "--resolution", "0"],
            "invalid --resolution: timer resolution must be a positive",
        ),
        (vec![p, "--resolution=-1e-9"], "invalid --resolution"),
        (
            vec![p, "--q", "0.5"],
            "invalid --q: q_max must satisfy 0.8 <= q_max < 1, got 0.5",
        ),
        (vec![p, "--q", "1"], "invalid --q"),
        (vec![p, "--alpha", "1.5"], "invalid --alpha"),
        (
            vec![p, "--bin-width", "1e-12"],
            "invalid --bin-width: bin width 1e-12 s is below the timer resolution",
        ),
    ] {
        assert_user_error(&run(&args, None), want);
    }
    // clap's own errors also exit with 2.
    let out = run(&[p, "--format", "xml"], None);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&[p, "--resolution", "abc"], None);
    assert_eq!(out.status.code(), Some(2));
}

/// The bimodal sample of `bimodal_sample_falls_back_with_a_ci`: no body family fits its two
/// modes, but the errors above the lower one are exponential (mean 50 ns) from 2 us on, so the
/// tail model fits and its tmax is the true 0.99 quantile: P(T > x) = 0.5 e^(-(x - 12 us) /
/// 50 ns) = 0.01 at x = 12 us + 50 ln 50 ns = 12.196 us.
#[test]
fn bimodal_sample_with_an_exponential_upper_mode_gets_a_tail_model() {
    let text = bimodal_text();
    let f = temp_file("bimodal-tail.txt", &text);
    let v = json(&run(&[f.to_str().unwrap(), "--format", "json"], None));
    assert_eq!(v["fallback"], false);
    assert!(v["chosen"].is_null());
    assert_eq!(v["tail"]["accepted"], true);
    let tmax = v["tmax_s"].as_f64().unwrap();
    let truth = (12_000.0 + 50.0 * 50f64.ln()) * 1e-9;
    assert!(
        (tmax - truth).abs() < 25e-9,
        "tmax {tmax:e} s against the true 0.99 quantile {truth:e} s"
    );
    let out = ok_stdout(&run(&[f.to_str().unwrap()], None));
    assert!(out.contains("a generalized Pareto tail fits"), "{out}");
}
