//! The two small optimizers the fits need, written out rather than taken from `argmin` because
//! each runs inside every [`crate::fit()`] call (about 4 fits every 25 samples of a calibration):
//! a direct loop over a fixed-size array costs a few nanoseconds per step, where a generic
//! executor with its state bookkeeping costs microseconds.
//!
//! * [`brent_root`]: Brent's root finder (bisection, secant and inverse quadratic
//!   interpolation; Brent 1973, "Algorithms for Minimization without Derivatives", ch. 4),
//!   for the one-dimensional score equation of the negative binomial.
//! * [`nelder_mead`]: the Nelder-Mead simplex (Nelder & Mead 1965, with the standard
//!   coefficients 1, 2, 1/2, 1/2), for the two-parameter binned log-normal likelihood, which
//!   has no closed form. Parameters are passed on an unconstrained scale (log sigma), so the
//!   simplex never leaves the parameter space.

/// Root of `f` in [a, b], where f(a) and f(b) have opposite signs (or one is 0), to an absolute
/// tolerance `tol` in x, in at most `max_iter` steps. Returns the best point found.
pub(crate) fn brent_root(
    f: impl Fn(f64) -> f64,
    mut a: f64,
    mut b: f64,
    tol: f64,
    max_iter: usize,
) -> f64 {
    let (mut fa, mut fb) = (f(a), f(b));
    if fa == 0.0 {
        return a;
    }
    if fb == 0.0 || fa.signum() == fb.signum() || !(fa.is_finite() && fb.is_finite()) {
        return b;
    }
    let (mut c, mut fc) = (a, fa);
    let mut d = b - a;
    let mut e = d;
    for _ in 0..max_iter {
        if fb.signum() == fc.signum() {
            c = a;
            fc = fa;
            d = b - a;
            e = d;
        }
        if fc.abs() < fb.abs() {
            a = b;
            b = c;
            c = a;
            fa = fb;
            fb = fc;
            fc = fa;
        }
        let tol1 = 2.0 * f64::EPSILON * b.abs() + 0.5 * tol;
        let xm = 0.5 * (c - b);
        if xm.abs() <= tol1 || fb == 0.0 {
            return b;
        }
        if e.abs() >= tol1 && fa.abs() > fb.abs() {
            // Inverse quadratic interpolation (secant when only two points differ).
            let s = fb / fa;
            let (mut p, mut q);
            if a == c {
                p = 2.0 * xm * s;
                q = 1.0 - s;
            } else {
                let qq = fa / fc;
                let r = fb / fc;
                p = s * (2.0 * xm * qq * (qq - r) - (b - a) * (r - 1.0));
                q = (qq - 1.0) * (r - 1.0) * (s - 1.0);
            }
            if p > 0.0 {
                q = -q;
            }
            p = p.abs();
            if 2.0 * p < (3.0 * xm * q - (tol1 * q).abs()).min((e * q).abs()) {
                e = d;
                d = p / q;
            } else {
                d = xm;
                e = d;
            }
        } else {
            d = xm;
            e = d;
        }
        a = b;
        fa = fb;
        b += if d.abs() > tol1 { d } else { tol1.copysign(xm) };
        fb = f(b);
        if !fb.is_finite() {
            return a;
        }
    }
    b
}

/// Minimizes `f` from `start` with initial steps `step` along each axis, until the values at
/// the simplex's vertices agree within `ftol` (absolute) or after `max_evals` evaluations.
/// Returns the best vertex and its value. Non-finite values count as +infinity, so a start
/// with a finite value never ends on a non-finite one.
pub(crate) fn nelder_mead<const D: usize>(
    f: impl Fn(&[f64; D]) -> f64,
    start: [f64; D],
    step: [f64; D],
    ftol: f64,
    max_evals: usize,
) -> ([f64; D], f64) {
    let g = |x: &[f64; D]| {
        let v = f(x);
        if v.is_nan() {
            f64::INFINITY
        } else {
            v
        }
    };
    // D + 1 vertices; const generic arithmetic is not stable, so a Vec.
    let mut simplex: Vec<([f64; D], f64)> = Vec::with_capacity(D + 1);
    simplex.push((start, g(&start)));
    for i in 0..D {
        let mut x = start;
        x[i] += step[i];
        simplex.push((x, g(&x)));
    }
    let mut evals = D + 1;
    let lerp = |a: &[f64; D], b: &[f64; D], t: f64| {
        let mut r = [0.0; D];
        for i in 0..D {
            r[i] = a[i] + t * (b[i] - a[i]);
        }
        r
    };
    while evals < max_evals {
        simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
        let (best, worst) = (simplex[0].1, simplex[D].1);
        if (worst - best).abs() <= ftol {
            break;
        }
        let mut centroid = [0.0; D];
        for (x, _) in &simplex[..D] {
            for i in 0..D {
                centroid[i] += x[i] / D as f64;
            }
        }
        let xw = simplex[D].0;
        // Reflection x_r = c + (c - x_w).
        let xr = lerp(&centroid, &xw, -1.0);
        let fr = g(&xr);
        evals += 1;
        if fr < best {
            let xe = lerp(&centroid, &xw, -2.0);
            let fe = g(&xe);
            evals += 1;
            simplex[D] = if fe < fr { (xe, fe) } else { (xr, fr) };
        } else if fr < simplex[D - 1].1 {
            simplex[D] = (xr, fr);
        } else {
            // Contraction, outside or inside.
            let (xc, fc) = if fr < worst {
                let x = lerp(&centroid, &xw, -0.5);
                (x, g(&x))
            } else {
                let x = lerp(&centroid, &xw, 0.5);
                (x, g(&x))
            };
            evals += 1;
            if fc < fr.min(worst) {
                simplex[D] = (xc, fc);
            } else {
                // Shrink towards the best vertex.
                let x0 = simplex[0].0;
                for v in simplex.iter_mut().skip(1) {
                    let x = lerp(&x0, &v.0, 0.5);
                    *v = (x, g(&x));
                }
                evals += D;
            }
        }
    }
    simplex
        .into_iter()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or((start, f64::INFINITY))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brent_finds_roots() {
        let r = brent_root(|x| x * x - 2.0, 0.0, 2.0, 1e-14, 100);
        assert!((r - 2f64.sqrt()).abs() < 1e-13, "{r}");
        let r = brent_root(|x| (x - 0.3).powi(3), -5.0, 7.0, 1e-12, 200);
        assert!((r - 0.3).abs() < 1e-4, "{r}");
        // No sign change: the end point.
        assert_eq!(brent_root(|x| x * x + 1.0, -1.0, 1.0, 1e-12, 100), 1.0);
    }

    #[test]
    fn nelder_mead_minimizes_rosenbrock() {
        let f = |x: &[f64; 2]| (1.0 - x[0]).powi(2) + 100.0 * (x[1] - x[0] * x[0]).powi(2);
        let (x, v) = nelder_mead(f, [-1.2, 1.0], [0.5, 0.5], 1e-16, 2000);
        assert!(v < 1e-9, "{v}");
        assert!(
            (x[0] - 1.0).abs() < 1e-3 && (x[1] - 1.0).abs() < 1e-3,
            "{x:?}"
        );
        // Non-finite values are avoided.
        let (x, v) = nelder_mead(
            |x: &[f64; 1]| {
                if x[0] < 0.0 {
                    f64::NAN
                } else {
                    (x[0] - 2.0).powi(2)
                }
            },
            [1.0],
            [0.5],
            1e-14,
            500,
        );
        assert!(v < 1e-10 && (x[0] - 2.0).abs() < 1e-4, "{x:?} {v}");
    }
}
