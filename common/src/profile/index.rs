//! The lookup's structure, built from a profile's entries by
//! `lookup.rs`: one table per (function, role, same host), rows by p, points
//! by bytes, and the bilinear interpolation in (ln p, ln b) between them
//! (`docs/method.md`, "The profile and its lookup"). Nothing here reads the
//! profile's schema, which holds an index as its cache.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::functions::{EventClass, Scope};

/// How a tmax was estimated, as far as the report's significance test needs
/// it: from `n` calibration samples, by a fitted model (`fitted`) or as the
/// empirical quantile. A tmax is an estimate, so a clean call exceeds it with
/// a chance that is itself uncertain (`mpiover_stats::ExceedancePrior`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Basis {
    pub n: u64,
    pub fitted: bool,
    /// The fewest samples the profile's stopping rule asks of an entry
    /// (`method.min_samples`; 0 when not known). An entry with fewer was cut
    /// short by a budget: its tmax is weak.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub min_n: u64,
    /// The clock synchronization of the calibration had a residual larger
    /// than the median call of this collective entry (and than 1 us): its
    /// windows did not start the ranks together, so its durations hold their
    /// skew and its tmax is weak.
    #[serde(default, skip_serializing_if = "is_false")]
    pub skewed: bool,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

fn is_false(v: &bool) -> bool {
    !*v
}

impl Basis {
    /// `n` samples, fitted or not, of unjudged quality.
    pub fn new(n: u64, fitted: bool) -> Basis {
        Basis {
            n,
            fitted,
            min_n: 0,
            skewed: false,
        }
    }

    /// Fewer samples than the stopping rule's minimum, or a skewed clock.
    pub fn is_weak(&self) -> bool {
        self.n < self.min_n || self.skewed
    }

    /// The less certain of two: fewer samples, fitted only if both were,
    /// weak if either was.
    pub fn weaker(self, o: Basis) -> Basis {
        Basis {
            n: self.n.min(o.n),
            fitted: self.fitted && o.fitted,
            min_n: if self.n <= o.n { self.min_n } else { o.min_n },
            skewed: self.skewed || o.skewed,
        }
    }
}

/// Result of a tmax lookup.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lookup {
    pub tmax_s: f64,
    /// How the base points used were estimated (the weakest of them).
    pub basis: Basis,
    /// The point lies outside the measured range in p or bytes; the nearest
    /// edge was used.
    pub out_of_range: bool,
    /// The point is a base point (no interpolation).
    pub exact: bool,
    /// The p rows used (equal when p is a base point or clamped).
    pub p_lo: u32,
    pub p_hi: u32,
}

impl Lookup {
    /// `exact`, `interpolated` or `out of range`.
    pub fn kind(&self) -> &'static str {
        if self.out_of_range {
            "out of range"
        } else if self.exact {
            "exact"
        } else {
            "interpolated"
        }
    }
}

/// A lookup request. `same_host: None` means unknown: then the cross-host
/// entries are used when the profile has both (the larger tmax, so the
/// network's own latency is never reported as overhead).
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    pub function: &'a str,
    pub p: u32,
    pub bytes: u64,
    pub role: Option<&'a str>,
    pub same_host: Option<bool>,
}

/// Whether a function's entries depend on the communicator size.
pub fn is_point_to_point(function: &str) -> bool {
    // A message (or a request) is between two ranks whatever the size of
    // the communicator; collectives are measured per p.
    crate::functions::get(function).is_some_and(|f| f.scope != Scope::Collective)
}

/// Canonical role string: `root`/`nonroot`; a role that names a posting
/// function of the catalogue (what a completion completed), in any case and
/// with or without its prefix (`isend`, `mpi_irecv`), as its C name
/// (`MPI_Isend`); any other role (`exchange`) as written.
pub fn normalize_role(role: &str) -> String {
    let r = role.trim();
    let low = r.to_ascii_lowercase();
    match low.as_str() {
        "root" => "root".into(),
        "nonroot" | "non-root" | "non_root" => "nonroot".into(),
        _ => {
            let base = low.trim_start_matches("mpi_");
            let mut c = base.chars();
            let c_name = match c.next() {
                Some(first) => format!("MPI_{}{}", first.to_ascii_uppercase(), c.as_str()),
                None => return r.to_string(),
            };
            match crate::functions::get(&c_name) {
                Some(f) if f.class == EventClass::Post => f.name.to_string(),
                _ => r.to_string(),
            }
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub(crate) p: u32,
    /// Sorted by bytes (0 mapped to 1), unique.
    pub(crate) bytes: Vec<u64>,
    pub(crate) tmax: Vec<f64>,
    pub(crate) basis: Vec<Basis>,
}

#[derive(Debug, Clone)]
pub(crate) struct Table {
    pub(crate) p2p: bool,
    /// Sorted by p.
    pub(crate) rows: Vec<Row>,
}

/// One row's base points while the index is built: bytes -> (tmax, basis).
pub(crate) type RowPoints = BTreeMap<u64, (f64, Basis)>;

/// (function, role, same_host).
pub(crate) type TableKey = (String, Option<String>, Option<bool>);

/// The lookup structure: one table per (function, role, same_host), rows by p,
/// points by bytes; lookups are two binary searches.
#[derive(Debug, Clone, Default)]
pub struct Index {
    pub(crate) tables: HashMap<TableKey, Table>,
}

pub(crate) fn xb(b: u64) -> f64 {
    (b.max(1) as f64).ln()
}

pub(crate) fn lerp(a: f64, b: f64, t: f64) -> f64 {
    // Convex combination; exact at t = 0 and t = 1, never outside [a, b].
    let v = a + t * (b - a);
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    v.clamp(lo, hi)
}

impl Row {
    /// (value, exact, out_of_range, basis)
    pub(crate) fn at(&self, bytes: u64) -> (f64, bool, bool, Basis) {
        let b = bytes.max(1);
        match self.bytes.binary_search(&b) {
            Ok(i) => (self.tmax[i], true, false, self.basis[i]),
            Err(0) => (self.tmax[0], false, true, self.basis[0]),
            Err(i) if i == self.bytes.len() => (self.tmax[i - 1], false, true, self.basis[i - 1]),
            Err(i) => {
                let (b0, b1) = (self.bytes[i - 1], self.bytes[i]);
                let t = (xb(b) - xb(b0)) / (xb(b1) - xb(b0));
                (
                    lerp(self.tmax[i - 1], self.tmax[i], t),
                    false,
                    false,
                    self.basis[i - 1].weaker(self.basis[i]),
                )
            }
        }
    }
}

impl Table {
    pub(crate) fn at(&self, p: u32, bytes: u64) -> Lookup {
        let rows = &self.rows;
        let one = |r: &Row, oor: bool| {
            let (v, exact, o, basis) = r.at(bytes);
            Lookup {
                tmax_s: v,
                basis,
                out_of_range: o || oor,
                exact: exact && !o && !oor,
                p_lo: r.p,
                p_hi: r.p,
            }
        };
        if self.p2p {
            // p does not matter: the row nearest to p (normally the only one, p = 2).
            let r = rows
                .iter()
                .min_by_key(|r| (r.p as i64 - p as i64).abs())
                .expect("table has rows");
            return one(r, false);
        }
        match rows.binary_search_by_key(&p, |r| r.p) {
            Ok(i) => one(&rows[i], false),
            Err(0) => one(&rows[0], true),
            Err(i) if i == rows.len() => one(&rows[i - 1], true),
            Err(i) => {
                let (r0, r1) = (&rows[i - 1], &rows[i]);
                let (v0, _, o0, n0) = r0.at(bytes);
                let (v1, _, o1, n1) = r1.at(bytes);
                let t = ((p as f64).ln() - (r0.p as f64).ln())
                    / ((r1.p as f64).ln() - (r0.p as f64).ln());
                Lookup {
                    tmax_s: lerp(v0, v1, t),
                    basis: n0.weaker(n1),
                    out_of_range: o0 || o1,
                    exact: false,
                    p_lo: r0.p,
                    p_hi: r1.p,
                }
            }
        }
    }
}

impl Index {
    pub(crate) fn table(
        &self,
        function: &str,
        role: Option<&str>,
        same_host: Option<bool>,
    ) -> Option<&Table> {
        let role = role.map(normalize_role);
        let get = |role: Option<String>, sh: Option<bool>| {
            self.tables.get(&(function.to_string(), role, sh))
        };
        let try_role = |role: Option<String>| match same_host {
            Some(s) => get(role.clone(), Some(s)).or_else(|| get(role, None)),
            None => get(role.clone(), Some(false))
                .or_else(|| get(role.clone(), Some(true)))
                .or_else(|| get(role, None)),
        };
        match role {
            Some(r) => try_role(Some(r)).or_else(|| try_role(None)),
            None => try_role(None),
        }
    }

    pub fn lookup(&self, q: &Query) -> Option<Lookup> {
        self.table(q.function, q.role, q.same_host)
            .map(|t| t.at(q.p, q.bytes))
    }
}
