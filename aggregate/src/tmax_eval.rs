//! One record entry against tmax: its overhead, the calls over tmax and
//! where tmax came from; what that adds to its site and to the count of
//! tmax lookups.

use mpiover_common::completion::{KeyRef, Missing};
use mpiover_common::profile::Basis;
use mpiover_common::record::Entry;
use serde::{Deserialize, Serialize};

/// tmax of one call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tmax {
    pub s: f64,
    /// The lookup fell outside the profile's measured range.
    pub out_of_range: bool,
    /// How it was estimated, when the source knows (the significance test
    /// then allows for the estimate's own spread).
    pub basis: Option<Basis>,
    /// The rule it was composed by, when it was not measured
    /// (`mpiover_common::completion`).
    pub composed: Option<&'static str>,
}

/// Where a fold asks the tmax of a key when a profile is given to the
/// report (without one, the tmax the record carries is used). The report's
/// profile reader implements it; the job folds without one.
pub trait TmaxLookup {
    /// The key is the record entry's (bytes as recorded, role, and for
    /// completions what they completed).
    fn tmax(&self, k: &KeyRef) -> Result<Tmax, Missing>;
}

/// The tmax lookups of a run, counted per key (entry) and per call.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Lookups {
    /// Aggregation keys that got a tmax, and their calls.
    pub entries: u64,
    pub calls: u64,
    /// Of those, outside the profile's measured range.
    pub out_of_range_entries: u64,
    pub out_of_range_calls: u64,
    /// Keys (and calls) for which the profile had no tmax.
    pub missing_entries: u64,
    pub missing_calls: u64,
}

impl Lookups {
    pub fn merge(&mut self, o: &Lookups) {
        self.entries += o.entries;
        self.calls += o.calls;
        self.out_of_range_entries += o.out_of_range_entries;
        self.out_of_range_calls += o.out_of_range_calls;
        self.missing_entries += o.missing_entries;
        self.missing_calls += o.missing_calls;
    }
}

/// The less certain of two known bases (unknown ones do not count).
pub fn weaker(a: Option<Basis>, b: Option<Basis>) -> Option<Basis> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.weaker(y)),
        (x, y) => x.or(y),
    }
}

/// The figures of one entry once tmax is known.
pub struct EntryEval {
    pub tmax: Option<Tmax>,
    pub overhead: f64,
    pub calls_over: f64,
    /// Why there is no tmax although a profile was used.
    pub missing: Option<String>,
}

/// One entry (histogram in timer units of `unit_s`) against the tmax of
/// `tmax`, else against the tmax and online overhead the record carries.
pub fn evaluate<T: TmaxLookup + ?Sized>(e: &Entry, unit_s: f64, tmax: Option<&T>) -> EntryEval {
    let none = EntryEval {
        tmax: None,
        overhead: 0.0,
        calls_over: 0.0,
        missing: None,
    };
    if e.function == "other" {
        return none;
    }
    match tmax {
        Some(src) => match src.tmax(&KeyRef {
            function: &e.function,
            p: e.p,
            bytes: e.bytes,
            role: e.role.as_deref(),
            completes: e.completes.as_deref(),
            requests: e.requests,
        }) {
            Ok(t) if t.s.is_finite() && t.s >= 0.0 => {
                let ex = e.hist.excess(unit_s, t.s);
                EntryEval {
                    tmax: Some(t),
                    overhead: ex.overhead_s,
                    calls_over: ex.calls_over,
                    missing: None,
                }
            }
            Ok(_) => EntryEval {
                missing: Some("the profile's tmax is not a number".into()),
                ..none
            },
            Err(m) => EntryEval {
                missing: Some(m.to_string()),
                ..none
            },
        },
        None => match e.tmax_s {
            Some(t) if t.is_finite() && t >= 0.0 => {
                let ex = e.hist.excess(unit_s, t);
                EntryEval {
                    tmax: Some(Tmax {
                        s: t,
                        out_of_range: e.tmax_out_of_range,
                        basis: e.tmax_basis,
                        composed: composed_rule(e.tmax_composed.as_deref()),
                    }),
                    overhead: e
                        .overhead_s
                        .filter(|o| o.is_finite())
                        .unwrap_or(ex.overhead_s),
                    calls_over: ex.calls_over,
                    missing: None,
                }
            }
            _ => EntryEval {
                missing: e.tmax_missing.clone(),
                ..none
            },
        },
    }
}

/// A composition rule named in a record, as the catalogue's own string
/// (the report keeps one copy of each rule's wording).
pub fn composed_rule(r: Option<&str>) -> Option<&'static str> {
    let r = r?;
    Some(
        mpiover_common::completion::RULES
            .iter()
            .copied()
            .find(|k| *k == r)
            .unwrap_or("composed from other measurements"),
    )
}

/// One entry's (or merged key's) tmax lookup, counted.
pub fn count_lookup(l: &mut Lookups, ev: &EntryEval, calls: u64, entries: u64) {
    match ev.tmax {
        Some(t) => {
            l.entries += entries;
            l.calls += calls;
            if t.out_of_range {
                l.out_of_range_entries += entries;
                l.out_of_range_calls += calls;
            }
        }
        None => {
            l.missing_entries += entries;
            l.missing_calls += calls;
        }
    }
}
