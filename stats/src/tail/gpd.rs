//! The generalized Pareto distribution (GPD) of the exceedances y = e - u > 0 over a threshold
//! u, and its maximum-likelihood fit.
//!
//! P(Y > y) = (1 + xi y / sigma)^(-1/xi) for xi != 0 (support y < -sigma/xi when xi < 0),
//! exp(-y / sigma) for xi = 0; sigma > 0 is the scale, xi the shape (Pickands 1975,
//! "Statistical inference using extreme order statistics", Ann. Statist. 3: 119-131: the
//! exceedances of almost any distribution over a high threshold tend to a GPD).
//!
//! **Fit.** The log-likelihood of k exceedances is
//! ln L = -k ln sigma - (1 + 1/xi) sum ln(1 + xi y_i / sigma). With theta = xi / sigma the
//! likelihood equation for xi has the closed form xi(theta) = (1/k) sum ln(1 + theta y_i), so the
//! profile log-likelihood is one-dimensional (Grimshaw 1993, "Computing maximum likelihood
//! estimates for the generalized Pareto distribution", Technometrics 35: 185-191):
//! ln L(theta) = -k (ln(xi(theta) / theta) + 1 + xi(theta)), theta in (-1/max y, inf).
//! It is maximized over s = theta max(y) = e^t - 1 on a grid of t and then by golden-section
//! search between the grid point's neighbours. The shape is kept within [`XI_MIN`, `XI_MAX`]:
//! below -1/2 the maximum-likelihood estimator loses its regularity (below -1 the likelihood is
//! unbounded), and delays heavier than xi = 1.5 (infinite variance) are not a calibration's
//! error but a fault of the machine that should stay visible as such.

/// Smallest shape the fit accepts (see the module docs).
pub const XI_MIN: f64 = -0.5;
/// Largest shape the fit accepts.
pub const XI_MAX: f64 = 1.5;
/// |xi| below this is the exponential limit (xi = 0).
const XI_ZERO: f64 = 1e-9;

/// A GPD: shape `xi`, scale `sigma` (in the unit of the data).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gpd {
    pub xi: f64,
    pub sigma: f64,
}

impl Gpd {
    /// P(Y <= y).
    pub fn cdf(&self, y: f64) -> f64 {
        if y <= 0.0 {
            return 0.0;
        }
        let z = y / self.sigma;
        if self.xi.abs() < XI_ZERO {
            return -(-z).exp_m1();
        }
        let base = 1.0 + self.xi * z;
        if base <= 0.0 {
            return 1.0; // beyond the end of a bounded (xi < 0) tail
        }
        1.0 - (-base.ln() / self.xi).exp()
    }

    /// The y with P(Y > y) = `p` (0 < p <= 1).
    pub fn upper_quantile(&self, p: f64) -> f64 {
        let p = p.clamp(f64::MIN_POSITIVE, 1.0);
        if self.xi.abs() < XI_ZERO {
            return -self.sigma * p.ln();
        }
        self.sigma * (-self.xi * p.ln()).exp_m1() / self.xi
    }

    /// Draws from the GPD by inversion of `u` in [0, 1).
    pub fn from_uniform(&self, u: f64) -> f64 {
        self.upper_quantile(1.0 - u)
    }
}

/// ln L(theta) of the exceedances `y` (all > 0) and the xi it implies; None outside the
/// admissible shapes.
fn profile(y: &[f64], theta: f64, ymean: f64, ymax: f64) -> Option<(f64, Gpd)> {
    let k = y.len() as f64;
    if (theta * ymax).abs() < 1e-12 {
        // The exponential limit.
        return Some((
            -k * (ymean.ln() + 1.0),
            Gpd {
                xi: 0.0,
                sigma: ymean,
            },
        ));
    }
    let xi = y.iter().map(|&v| (theta * v).ln_1p()).sum::<f64>() / k;
    let sigma = xi / theta;
    if !(xi.is_finite() && sigma.is_finite() && sigma > 0.0 && (XI_MIN..=XI_MAX).contains(&xi)) {
        return None;
    }
    Some((-k * (sigma.ln() + 1.0 + xi), Gpd { xi, sigma }))
}

/// Maximum-likelihood GPD of the exceedances `y` (each > 0, at least two distinct values);
/// None when there are too few or no admissible shape.
pub fn fit_mle(y: &[f64]) -> Option<Gpd> {
    if y.len() < 2 || y.iter().any(|&v| !(v.is_finite() && v > 0.0)) {
        return None;
    }
    let ymean = y.iter().sum::<f64>() / y.len() as f64;
    let ymax = y.iter().fold(0.0f64, |a, &b| a.max(b));
    let at = |t: f64| profile(y, t.exp_m1() / ymax, ymean, ymax);
    let ll = |t: f64| at(t).map_or(f64::NEG_INFINITY, |(l, _)| l);
    // The grid: t from -12 (theta just above -1/max y) to 8 (xi far above XI_MAX for any data).
    const STEPS: usize = 80;
    let (lo, hi) = (-12.0, 8.0);
    let step = (hi - lo) / STEPS as f64;
    let mut best = (f64::NEG_INFINITY, 0.0);
    for i in 0..=STEPS {
        let t = lo + step * i as f64;
        let l = ll(t);
        if l > best.0 {
            best = (l, t);
        }
    }
    if !best.0.is_finite() {
        return None;
    }
    // Golden-section search between the best point's neighbours (the profile is unimodal there
    // for the samples met in practice; a worse value than the grid's best is never taken).
    let (mut a, mut b) = (best.1 - step, best.1 + step);
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let (mut c, mut d) = (b - g * (b - a), a + g * (b - a));
    let (mut fc, mut fd) = (ll(c), ll(d));
    for _ in 0..40 {
        if fc >= fd {
            b = d;
            d = c;
            fd = fc;
            c = b - g * (b - a);
            fc = ll(c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + g * (b - a);
            fd = ll(d);
        }
    }
    let t = if fc.max(fd) > best.0 {
        if fc >= fd {
            c
        } else {
            d
        }
    } else {
        best.1
    };
    // A maximum on the heavy edge of the admissible shapes is no maximum of the likelihood:
    // the data ask for a tail heavier than the fit allows, and a quantile extrapolated from the
    // edge would be arbitrary, so there is no fit. (On the light edge the shape is kept: with
    // 20-30 excesses the estimate of a light tail often runs to -1/2, its known small-sample
    // bias, and a shorter tail there errs towards the sample's own quantile, which step 4 of
    // the tail rule checks.)
    at(t).map(|(_, g)| g).filter(|g| g.xi < XI_MAX - 1e-3)
}

/// Anderson-Darling statistic A^2 of `y` against `g`:
/// A^2 = -k - (1/k) sum_i (2i - 1) (ln z_(i) + ln(1 - z_(k+1-i))), z = F(y) sorted.
pub fn anderson_darling(y: &[f64], g: &Gpd) -> f64 {
    let mut z: Vec<f64> = y
        .iter()
        .map(|&v| g.cdf(v).clamp(1e-12, 1.0 - 1e-12))
        .collect();
    z.sort_unstable_by(f64::total_cmp);
    let k = z.len();
    let s: f64 = (0..k)
        .map(|i| (2 * i + 1) as f64 * (z[i].ln() + (1.0 - z[k - 1 - i]).ln()))
        .sum();
    -(k as f64) - s / k as f64
}
