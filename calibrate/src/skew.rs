//! The test-only skew of the calibrator's clock
//! (`MPIOVER_CALIBRATE_TEST_CLOCK_SKEW`, see the `clock` module docs): whom
//! it names and how a skewed clock reads.

use mpiover_common::settings::Var;

/// A test-only skew of one rank's clock (module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Skew {
    pub offset: f64,
    pub drift: f64,
    /// The drift changes sign every this many seconds (0: never).
    pub flip_s: f64,
}

impl Skew {
    /// The skewed reading of real time `t`.
    #[inline(always)]
    pub(crate) fn read(&self, t: f64) -> f64 {
        if self.flip_s > 0.0 {
            let k = (t / self.flip_s).floor();
            let r = t - k * self.flip_s;
            let w = if (k as i64) % 2 == 0 {
                r
            } else {
                self.flip_s - r
            };
            t + self.offset + self.drift * w
        } else {
            t + self.offset + self.drift * t
        }
    }
}

/// Whom an entry of the skew setting names.
#[derive(Debug, Clone, PartialEq)]
pub enum SkewTarget {
    Rank(i32),
    Host(String),
}

/// The skew of world rank `rank` on `host`: its own entry, else its host's.
pub fn skew_for(entries: &[(SkewTarget, Skew)], rank: i32, host: &str) -> Option<Skew> {
    let of =
        |want: &dyn Fn(&SkewTarget) -> bool| entries.iter().find(|(t, _)| want(t)).map(|(_, s)| *s);
    of(&|t| *t == SkewTarget::Rank(rank))
        .or_else(|| of(&|t| matches!(t, SkewTarget::Host(h) if h == host)))
}

/// Parse the skew setting: comma-separated `rank:offset_s:drift` and
/// `host=NAME:offset_s:drift` entries, each with an optional `:flip_s`.
pub fn parse_skew(v: &str) -> Result<Vec<(SkewTarget, Skew)>, String> {
    let err = |e: &str| {
        format!(
            "{}=\"{v}\": \"{e}\" is not rank:offset_s:drift[:flip_s] or \
             host=NAME:offset_s:drift[:flip_s] (e.g. 1:0.25:1e-4,host=node2:0.005:3e-5)",
            Var::CalibrateTestClockSkew.name()
        )
    };
    let mut out = Vec::new();
    for e in v.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let parts: Vec<&str> = e.split(':').map(str::trim).collect();
        if !(3..=4).contains(&parts.len()) {
            return Err(err(e));
        }
        let target = match parts[0].strip_prefix("host=") {
            Some(h) if !h.is_empty() => SkewTarget::Host(h.to_string()),
            Some(_) => return Err(err(e)),
            None => SkewTarget::Rank(parts[0].parse::<i32>().map_err(|_| err(e))?),
        };
        let num = |s: &str| s.parse::<f64>().ok().filter(|x| x.is_finite());
        let offset = num(parts[1]).ok_or_else(|| err(e))?;
        let drift = num(parts[2]).filter(|d| *d > -0.5).ok_or_else(|| err(e))?;
        let flip_s = match parts.get(3) {
            Some(f) => num(f).filter(|f| *f > 0.0).ok_or_else(|| err(e))?,
            None => 0.0,
        };
        out.push((
            target,
            Skew {
                offset,
                drift,
                flip_s,
            },
        ));
    }
    if out.is_empty() {
        return Err(err(v));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skew_parsing() {
        let one = |o, d| Skew {
            offset: o,
            drift: d,
            flip_s: 0.0,
        };
        assert_eq!(
            parse_skew("1:0.25:1e-4").unwrap(),
            [(SkewTarget::Rank(1), one(0.25, 1e-4))]
        );
        let v = parse_skew("host=node2:0.005:3e-5, 3:0:1e-3:2").unwrap();
        assert_eq!(v[0], (SkewTarget::Host("node2".into()), one(0.005, 3e-5)));
        assert_eq!(v[1].1.flip_s, 2.0);
        assert!(parse_skew("1:0.25").is_err());
        assert!(parse_skew("x:0:0").is_err());
        assert!(parse_skew("host=:0:0").is_err());
        assert!(parse_skew("1:0:0:0").is_err());
        assert!(parse_skew("1:0:1e-4,oops").is_err());
        // A rank's own entry wins over its host's; other hosts: none.
        assert_eq!(skew_for(&v, 2, "node2"), Some(one(0.005, 3e-5)));
        assert_eq!(skew_for(&v, 3, "node2").map(|s| s.drift), Some(1e-3));
        assert_eq!(skew_for(&v, 0, "node1"), None);
    }

    #[test]
    fn flipping_drift_is_a_triangle_wave() {
        let s = Skew {
            offset: 1.0,
            drift: 1e-3,
            flip_s: 2.0,
        };
        assert!((s.read(101.0) - (101.0 + 1.0 + 1e-3)).abs() < 1e-12);
        // 101 = 50 * 2 + 1: an even period, rising; 103 = 51 * 2 + 1: falling.
        assert!((s.read(103.5) - (103.5 + 1.0 + 1e-3 * 0.5)).abs() < 1e-12);
    }
}
