//! tmax of any call, completions included: which profile entries a record
//! key is looked up under, and how a completion's tmax is composed from what
//! it completed.
//!
//! A blocking call or a collective is one measured base point (its own
//! function, p, per-rank bytes and role). A completion (`MPI_Wait*`,
//! `MPI_Test*`) takes as long as the requests it completes, so its key
//! carries what it completed ([`Requests`]) and the rule below picks the
//! measurement that matches it. The rule is written out for users in
//! `docs/completions.md`; keep the two in step.
//!
//! | completed | tmax | kind |
//! |---|---|---|
//! | nothing (failed `MPI_Test*`, all requests null) | `MPI_Wait` of an eager 1-byte `MPI_Isend`: one progress poll | composed |
//! | one point-to-point request | `MPI_Wait` with role = the posting function (`MPI_Irecv`, ...) at its bytes | measured |
//! | r receives and s sends, r + s >= 2 | `MPI_Waitall` role `exchange` at k = max(r, s) neighbours, bytes = mean message | measured when r = s, else composed (an exchange of k neighbours: at least as much work) |
//! | the same, profile without exchange entries | r x `MPI_Wait`(`MPI_Irecv`) + s x `MPI_Wait`(`MPI_Isend`) | composed |
//! | n requests of one non-blocking collective | n x its blocking twin (`MPI_Iallreduce` as `MPI_Allreduce`) at p and bytes | composed |
//! | anything else (collectives mixed with messages, requests the tool did not see posted) | none: the reason is reported | |
//!
//! `MPI_Issend` requests are looked up as a blocking `MPI_Ssend` (the wait
//! includes the receiver's acknowledgement), `MPI_Ibsend` / `MPI_Irsend` as
//! `MPI_Isend` when the profile has no entry of their own; persistent requests
//! as their non-blocking twins (`MPI_Recv_init` as `MPI_Irecv`).

use serde::{Deserialize, Serialize};

use crate::functions::{get, profile_bytes, profile_key, SendMode};
use crate::profile::{Lookup, Profile};

/// The rules by which a tmax is composed, as the record and report name them.
pub const RULE_POLL: &str =
    "completed nothing: one progress poll, as the wait of an eager 1-byte MPI_Isend";
pub const RULE_SSEND: &str = "a synchronous send's wait, as a blocking MPI_Ssend";
pub const RULE_ISEND: &str = "a buffered or ready send's wait, as an MPI_Isend's";
pub const RULE_COLL: &str =
    "a non-blocking collective's completion, as its blocking twin (times the requests completed)";
pub const RULE_UNEVEN: &str =
    "an exchange of k = max(receives, sends) neighbours (at least the work completed)";
pub const RULE_SUM: &str =
    "the sum of single-request waits (the profile has no exchange entries: calibrate again)";
pub const RULES: &[&str] = &[
    RULE_POLL,
    RULE_SSEND,
    RULE_ISEND,
    RULE_COLL,
    RULE_UNEVEN,
    RULE_SUM,
];

/// What one completion call completed. Requests that MPI skips (null,
/// inactive persistent, to or from `MPI_PROC_NULL`) are not counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Requests {
    /// Requests the call completed.
    pub n: u32,
    /// Of them, point-to-point receives.
    pub recv: u32,
    /// Of them, point-to-point sends. `n - recv - send` are requests of
    /// non-blocking collectives or requests the tool did not see posted.
    pub send: u32,
}

impl Requests {
    /// Completed requests that are neither point-to-point receives nor sends.
    pub fn other(&self) -> u32 {
        self.n.saturating_sub(self.recv.saturating_add(self.send))
    }
}

/// A record key as far as its tmax is concerned.
#[derive(Debug, Clone, Copy)]
pub struct KeyRef<'a> {
    pub function: &'a str,
    pub p: u32,
    /// What the rank moved in one call (the record's `bytes`).
    pub bytes: u64,
    pub role: Option<&'a str>,
    /// Completions: the completed requests' function when all were of one.
    pub completes: Option<&'a str>,
    /// Completions: what they completed (absent in older records).
    pub requests: Option<Requests>,
}

/// A tmax found for a key.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Resolved {
    /// tmax of one call; `basis`, `out_of_range` and `exact` as of the
    /// least certain base point used.
    pub lookup: Lookup,
    /// `None`: one measured base point (or interpolated between measured
    /// ones). `Some(rule)`: composed from other measurements by that rule.
    pub composed: Option<&'static str>,
}

/// Why a key has no tmax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Missing(pub &'static str);

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// Whether `function` is a completion (`MPI_Wait*`, `MPI_Test*`).
pub fn is_completion(function: &str) -> bool {
    get(function).is_some_and(|f| f.completion.is_some())
}

/// The blocking twin of a non-blocking collective (`MPI_Iallreduce` ->
/// `MPI_Allreduce`), if `f` is one.
pub fn blocking_twin(f: &str) -> Option<&'static str> {
    get(f).filter(|f| f.posts_collective())?.blocking
}

const NO_ENTRY: Missing = Missing("the profile has no entry for this function");

fn scaled(mut l: Lookup, times: f64) -> Lookup {
    l.tmax_s *= times;
    l
}

/// The larger of two lookups, flags of both kept.
fn larger(a: Lookup, b: Lookup) -> Lookup {
    let mut m = if b.tmax_s > a.tmax_s { b } else { a };
    m.out_of_range = a.out_of_range || b.out_of_range;
    m.exact = a.exact && b.exact;
    m.basis = a.basis.weaker(b.basis);
    m
}

/// The sum of two lookups, flags of both kept.
fn sum(a: Lookup, b: Lookup) -> Lookup {
    let mut m = larger(a, b);
    m.tmax_s = a.tmax_s + b.tmax_s;
    m
}

/// The single-request wait of a point-to-point request posted by `posted`.
fn single_wait(prof: &Profile, posted: &str, bytes: u64) -> Result<Resolved, Missing> {
    let (_, twin, _) = profile_key("MPI_Wait", None, Some(posted), 2, bytes);
    let twin = twin.unwrap_or(posted);
    if let Some(l) = prof.tmax("MPI_Wait", 2, bytes, Some(twin)).filter(|_| {
        // Only the two kinds the calibration measures have their own table;
        // the lookup would otherwise fall back to any role silently.
        matches!(twin, "MPI_Isend" | "MPI_Irecv")
    }) {
        return Ok(Resolved {
            lookup: l,
            composed: None,
        });
    }
    let posted = get(twin);
    match posted.and_then(|f| f.mode) {
        // The synchronous send's own completion waits for the receiver as
        // the blocking one does.
        Some(SendMode::Synchronous) => prof
            .tmax(
                posted.and_then(|f| f.blocking).unwrap_or("MPI_Ssend"),
                2,
                bytes,
                None,
            )
            .map(|l| Resolved {
                lookup: l,
                composed: Some(RULE_SSEND),
            })
            .ok_or(NO_ENTRY),
        // Buffered and ready sends complete like the standard one or sooner.
        Some(SendMode::Buffered | SendMode::Ready) => prof
            .tmax("MPI_Wait", 2, bytes, Some("MPI_Isend"))
            .map(|l| Resolved {
                lookup: l,
                composed: Some(RULE_ISEND),
            })
            .ok_or(NO_ENTRY),
        Some(SendMode::Standard) | None => Err(Missing(
            "the profile has no single-request wait for this kind of request",
        )),
    }
}

/// tmax of one call of the key `k`.
pub fn resolve(prof: &Profile, k: &KeyRef) -> Result<Resolved, Missing> {
    let plain = |function: &str, role: Option<&str>, completes: Option<&str>| {
        let (f, r, b) = profile_key(function, role, completes, k.p, k.bytes);
        prof.tmax(f, k.p, b, r)
            .map(|lookup| Resolved {
                lookup,
                composed: None,
            })
            .ok_or(NO_ENTRY)
    };
    let Some(req) = k.requests.filter(|_| is_completion(k.function)) else {
        return plain(k.function, k.role, k.completes);
    };
    if req.n == 0 {
        return prof
            .tmax("MPI_Wait", 2, 1, Some("MPI_Isend"))
            .map(|l| Resolved {
                lookup: l,
                composed: Some(RULE_POLL),
            })
            .ok_or(Missing("the profile has no MPI_Wait entries"));
    }
    if req.other() > 0 {
        if req.other() == req.n {
            if let Some(twin) = k.completes.and_then(blocking_twin) {
                let per = k.bytes / req.n as u64;
                let at = |role: Option<&str>| {
                    prof.tmax(twin, k.p, profile_bytes(twin, role, k.p, per), role)
                };
                let l = match (at(None), at(Some("root")), at(Some("nonroot"))) {
                    (Some(l), _, _) => l,
                    (None, Some(a), Some(b)) => larger(a, b),
                    (None, a, b) => a.or(b).ok_or(NO_ENTRY)?,
                };
                return Ok(Resolved {
                    lookup: scaled(l, req.n as f64),
                    composed: Some(RULE_COLL),
                });
            }
        }
        return Err(Missing(
            "it completed requests of non-blocking collectives mixed with others, or requests \
             the tool did not see posted",
        ));
    }
    if req.n == 1 {
        let posted = k.completes.unwrap_or(if req.recv == 1 {
            "MPI_Irecv"
        } else {
            "MPI_Isend"
        });
        return single_wait(prof, posted, k.bytes);
    }
    // Several point-to-point requests: an exchange of k neighbours.
    let per = k.bytes / req.n as u64;
    let kk = req.recv.max(req.send);
    if let Some(l) = prof.tmax("MPI_Waitall", kk, per, Some("exchange")) {
        return Ok(Resolved {
            lookup: l,
            composed: (req.recv != req.send).then_some(RULE_UNEVEN),
        });
    }
    let part = |posted: &str, times: u32| -> Result<Option<Lookup>, Missing> {
        if times == 0 {
            return Ok(None);
        }
        let r = single_wait(prof, posted, per)?;
        Ok(Some(scaled(r.lookup, times as f64)))
    };
    let l = match (part("MPI_Irecv", req.recv)?, part("MPI_Isend", req.send)?) {
        (Some(a), Some(b)) => sum(a, b),
        (a, b) => a.or(b).ok_or(NO_ENTRY)?,
    };
    Ok(Resolved {
        lookup: l,
        composed: Some(RULE_SUM),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{Environment, Method, ProfileEntry};

    fn entry(function: &str, role: Option<&str>, p: u32, bytes: u64, tmax: f64) -> ProfileEntry {
        let mut e: ProfileEntry = serde_json::from_value(serde_json::json!({
            "function": function, "p": p, "bytes": bytes, "role": role,
            "n": 400, "n_invalid": 0, "min_s": tmax / 2.0, "median_s": tmax / 1.5,
            "tmax_s": tmax, "accepted": true, "fallback": false
        }))
        .expect("entry json");
        e.tmax_s = tmax;
        e
    }

    fn profile(exchange: bool) -> Profile {
        let mut p = Profile::new(Environment::default(), Method::default());
        for b in [1u64, 1000, 100_000] {
            let s = b as f64 * 1e-9;
            p.push_entry(entry("MPI_Wait", Some("MPI_Isend"), 2, b, 1e-6 + s));
            p.push_entry(entry("MPI_Wait", Some("MPI_Irecv"), 2, b, 2e-6 + s));
            p.push_entry(entry("MPI_Ssend", None, 2, b, 5e-6 + s));
            p.push_entry(entry("MPI_Allreduce", None, 4, b, 10e-6 + s));
            p.push_entry(entry("MPI_Bcast", Some("root"), 4, b, 3e-6 + s));
            p.push_entry(entry("MPI_Bcast", Some("nonroot"), 4, b, 4e-6 + s));
            if exchange {
                for k in [1u32, 2, 6, 26] {
                    p.push_entry(entry(
                        "MPI_Waitall",
                        Some("exchange"),
                        k,
                        b,
                        k as f64 * 3e-6 + s,
                    ));
                }
            }
        }
        p
    }

    fn key<'a>(
        function: &'a str,
        completes: Option<&'a str>,
        n: u32,
        recv: u32,
        send: u32,
        bytes: u64,
    ) -> KeyRef<'a> {
        KeyRef {
            function,
            p: 2,
            bytes,
            role: None,
            completes,
            requests: Some(Requests { n, recv, send }),
        }
    }

    #[test]
    fn a_symmetric_exchange_is_measured_at_its_neighbour_count() {
        let p = profile(true);
        // 6 receives + 6 sends of 1000 bytes: k = 6, mean message 1000.
        let r = resolve(&p, &key("MPI_Waitall", None, 12, 6, 6, 12_000)).unwrap();
        assert_eq!(r.composed, None);
        assert!((r.lookup.tmax_s - (18e-6 + 1e-6)).abs() < 1e-12, "{r:?}");
        assert!(!r.lookup.out_of_range);
    }

    #[test]
    fn an_uneven_exchange_is_composed_from_the_larger_side() {
        let p = profile(true);
        let r = resolve(&p, &key("MPI_Waitall", Some("MPI_Isend"), 6, 0, 6, 6)).unwrap();
        assert!(r.composed.is_some());
        assert!((r.lookup.tmax_s - (18e-6 + 1e-9)).abs() < 1e-12, "{r:?}");
        // Past the largest measured k: flagged, never extrapolated.
        let r = resolve(&p, &key("MPI_Waitall", None, 64, 32, 32, 64)).unwrap();
        assert!(r.lookup.out_of_range);
    }

    #[test]
    fn without_exchange_entries_single_waits_are_summed() {
        let p = profile(false);
        let r = resolve(&p, &key("MPI_Waitall", None, 3, 2, 1, 3000)).unwrap();
        assert!(r.composed.unwrap().contains("sum"));
        let want = 2.0 * (2e-6 + 1e-6) + (1e-6 + 1e-6);
        assert!((r.lookup.tmax_s - want).abs() < 1e-12, "{r:?}");
    }

    #[test]
    fn one_request_is_the_measured_single_wait() {
        let p = profile(true);
        let r = resolve(&p, &key("MPI_Waitany", Some("MPI_Irecv"), 1, 1, 0, 1000)).unwrap();
        assert_eq!(r.composed, None);
        assert!((r.lookup.tmax_s - 3e-6).abs() < 1e-12);
        let r = resolve(&p, &key("MPI_Wait", Some("MPI_Recv_init"), 1, 1, 0, 1000)).unwrap();
        assert!((r.lookup.tmax_s - 3e-6).abs() < 1e-12);
        let r = resolve(&p, &key("MPI_Wait", Some("MPI_Issend"), 1, 0, 1, 1000)).unwrap();
        assert!(r.composed.unwrap().contains("MPI_Ssend"));
        assert!((r.lookup.tmax_s - 6e-6).abs() < 1e-12);
    }

    #[test]
    fn nothing_completed_is_one_poll() {
        let p = profile(true);
        let r = resolve(&p, &key("MPI_Test", None, 0, 0, 0, 0)).unwrap();
        assert!(r.composed.unwrap().contains("nothing"));
        assert!((r.lookup.tmax_s - (1e-6 + 1e-9)).abs() < 1e-12);
    }

    #[test]
    fn non_blocking_collectives_use_their_blocking_twin() {
        let p = profile(true);
        let mut k = key("MPI_Wait", Some("MPI_Iallreduce"), 1, 0, 0, 1000);
        k.p = 4;
        let r = resolve(&p, &k).unwrap();
        assert!(r.composed.is_some());
        assert!((r.lookup.tmax_s - 11e-6).abs() < 1e-12, "{r:?}");
        // Rooted: the larger of root and non-root.
        k.completes = Some("MPI_Ibcast");
        let r = resolve(&p, &k).unwrap();
        assert!((r.lookup.tmax_s - 5e-6).abs() < 1e-12, "{r:?}");
        assert_eq!(blocking_twin("MPI_Isend"), None);
        assert_eq!(blocking_twin("MPI_Ibarrier"), Some("MPI_Barrier"));
    }

    #[test]
    fn unknown_requests_say_why() {
        let p = profile(true);
        let e = resolve(&p, &key("MPI_Waitall", None, 3, 1, 1, 10)).unwrap_err();
        assert!(e.0.contains("did not see posted"), "{e}");
    }

    #[test]
    fn older_records_without_requests_keep_the_old_key() {
        let p = profile(true);
        let mut k = key("MPI_Wait", Some("MPI_Irecv"), 1, 1, 0, 1000);
        k.requests = None;
        assert!((resolve(&p, &k).unwrap().lookup.tmax_s - 3e-6).abs() < 1e-12);
        let k = KeyRef {
            function: "MPI_Allreduce",
            p: 4,
            bytes: 1000,
            role: None,
            completes: None,
            requests: None,
        };
        assert!((resolve(&p, &k).unwrap().lookup.tmax_s - 11e-6).abs() < 1e-12);
    }
}
