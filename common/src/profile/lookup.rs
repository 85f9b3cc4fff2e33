//! tmax at any (function, p, bytes, role): the index built from a profile's
//! entries, with each point's basis judged against the profile's method
//! (`docs/method.md`, "The profile and its lookup").

use std::collections::{BTreeMap, HashMap};

use crate::functions::Scope;
use crate::profile::fit_model::FitModel;
use crate::profile::index::{
    is_point_to_point, normalize_role, Basis, Index, Lookup, Query, Row, RowPoints, Table, TableKey,
};
use crate::profile::schema::{Method, Profile, ProfileEntry, SyncMethod};

/// Clock synchronization residuals below this are its own noise (rdtsc
/// ping-pongs on one node give tens of nanoseconds).
const SKEW_FLOOR_S: f64 = 1e-6;

impl Basis {
    /// The basis of an entry as such, its quality not judged.
    ///
    /// `fitted` (the tight null of `ExceedancePrior::from_model`) only for
    /// the one-parameter families (Poisson and exponential), whose tail
    /// quantile moves with one rate estimated from every sample. The larger
    /// families' q_max quantile rests on a tail weight or shape estimated
    /// from the few samples out there (a mixture's 2 % tail is 8 of 400),
    /// about as uncertain as the empirical quantile: their entries take the
    /// empirical quantile's null. (With the tight null, MPICH's clean
    /// 2-rank halo was flagged in two test processes of three.)
    pub fn of(e: &ProfileEntry) -> Basis {
        let one_parameter = e.model.and_then(FitModel::body_params) == Some(1);
        Basis::new(e.n, !e.fallback && one_parameter)
    }

    /// The basis of an entry of a profile measured with `method`: with the
    /// facts of its quality (see [`Basis::is_weak`]).
    pub fn judged(e: &ProfileEntry, method: &Method) -> Basis {
        let residual = method.clock_sync.as_ref().map_or(0.0, |c| {
            c.ranks.iter().map(|r| r.residual_s).fold(0.0, f64::max)
        });
        // Only a collective's duration depends on when the other ranks
        // started (a point-to-point entry's partner is timed with it); a
        // residual under a microsecond is the synchronization's own noise.
        let collective =
            crate::functions::get(&e.function).is_some_and(|f| f.scope == Scope::Collective);
        Basis {
            min_n: method.min_samples,
            skewed: method.sync == SyncMethod::Window
                && collective
                && residual > e.median_s.max(SKEW_FLOOR_S),
            ..Basis::of(e)
        }
    }
}

impl Index {
    pub fn new(entries: &[ProfileEntry], method: &Method) -> Index {
        let mut points: HashMap<TableKey, BTreeMap<u32, RowPoints>> = HashMap::new();
        for e in entries {
            let role = e.role.as_deref().map(normalize_role);
            let k = (e.function.clone(), role, e.same_host);
            let row = points.entry(k).or_default().entry(e.p).or_default();
            // b = 0 and b = 1 are the same point; keep the larger tmax.
            let basis = Basis::judged(e, method);
            let slot = row.entry(e.bytes.max(1)).or_insert((e.tmax_s, basis));
            *slot = (slot.0.max(e.tmax_s), slot.1.weaker(basis));
        }
        let tables = points
            .into_iter()
            .map(|(k, rows)| {
                // An exchange's p is its neighbour count: it matters like a
                // collective's communicator size.
                let p2p = is_point_to_point(&k.0) && k.1.as_deref() != Some("exchange");
                let rows = rows
                    .into_iter()
                    .map(|(p, pts)| Row {
                        p,
                        bytes: pts.keys().copied().collect(),
                        tmax: pts.values().map(|v| v.0).collect(),
                        basis: pts.values().map(|v| v.1).collect(),
                    })
                    .collect();
                (k, Table { p2p, rows })
            })
            .collect();
        Index { tables }
    }
}

impl Profile {
    /// The lookup index, built on first use.
    pub fn index(&self) -> &Index {
        self.index
            .get_or_init(|| Index::new(&self.entries, &self.method))
    }

    /// tmax of one call of `function` on a communicator of `p` ranks moving
    /// `bytes` (per-rank block), `role` for rooted collectives (`root`,
    /// `nonroot`) and for `MPI_Wait` (the completed request's function).
    /// `None` when the profile has no entry for the function (and role).
    pub fn tmax(&self, function: &str, p: u32, bytes: u64, role: Option<&str>) -> Option<Lookup> {
        self.index().lookup(&Query {
            function,
            p,
            bytes,
            role,
            same_host: None,
        })
    }

    pub fn tmax_query(&self, q: &Query) -> Option<Lookup> {
        self.index().lookup(q)
    }
}
