//! Every key's entries of all ranks, merged without their peer: kept only
//! when folding for a merged job log, so that the report can evaluate the
//! sites of the log against another profile or eager limit.

use mpiover_common::completion::Requests;
use mpiover_common::record::Entry;
use serde::{Deserialize, Serialize};

use crate::site_key::SiteKey;
use crate::HashMap;

/// What makes a key's tmax and wait state, at a site: (site, MPI function,
/// p, bytes, role, completed function, requests completed).
pub type KeyId = (
    SiteKey,
    String,
    u32,
    u64,
    Option<String>,
    Option<String>,
    Option<Requests>,
);

/// One key's entries of all ranks, merged: the histogram in the timer unit
/// of the lowest rank (the ranks' units differ by their clocks' calibration,
/// parts per million), and how many entries were merged (the report counts
/// tmax lookups per entry).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KeyAcc {
    pub rank: u32,
    pub unit_s: f64,
    pub entries: u64,
    pub entry: Entry,
}

impl KeyAcc {
    /// One rank's entry of the key, without what only that rank has (its
    /// peer and the sites of its posts and completions).
    pub(crate) fn of_entry(e: &Entry, unit_s: f64, rank: u32) -> KeyAcc {
        let mut entry = e.clone();
        (entry.site, entry.peer, entry.post_site, entry.completed_at) = (0, None, None, None);
        KeyAcc {
            rank,
            unit_s,
            entries: 1,
            entry,
        }
    }

    pub fn merge(&mut self, mut o: KeyAcc) {
        if o.rank < self.rank {
            std::mem::swap(self, &mut o);
        }
        let (a, b) = (&mut self.entry, &o.entry);
        a.count += b.count;
        a.sum_s += b.sum_s;
        a.min_s = a.min_s.min(b.min_s);
        a.max_s = a.max_s.max(b.max_s);
        a.overhead_s = match (a.overhead_s, b.overhead_s) {
            (Some(x), Some(y)) => Some(x + y),
            (x, y) => x.or(y),
        };
        a.tmax_out_of_range |= b.tmax_out_of_range;
        a.hist.merge(&b.hist);
        self.entries += o.entries;
    }
}

/// The id of an entry's key at its site.
pub(crate) fn key_id(site: &SiteKey, e: &Entry) -> KeyId {
    (
        site.clone(),
        e.function.clone(),
        e.p,
        e.bytes,
        e.role.clone(),
        e.completes.clone(),
        e.requests,
    )
}

/// Adds `k` to the key `id` of `keys`.
pub(crate) fn merge_key(keys: &mut HashMap<KeyId, KeyAcc>, id: KeyId, k: KeyAcc) {
    match keys.entry(id) {
        std::collections::hash_map::Entry::Occupied(mut o) => o.get_mut().merge(k),
        std::collections::hash_map::Entry::Vacant(v) => {
            v.insert(k);
        }
    }
}

/// A map serialized as a list of pairs (its keys are not strings).
pub(crate) mod pairs {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::HashMap;

    pub(crate) fn serialize<K: Serialize, V: Serialize, S: Serializer>(
        m: &HashMap<K, V>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(m.iter())
    }

    pub(crate) fn deserialize<'de, K, V, D>(d: D) -> Result<HashMap<K, V>, D::Error>
    where
        K: Deserialize<'de> + Eq + std::hash::Hash,
        V: Deserialize<'de>,
        D: Deserializer<'de>,
    {
        Ok(Vec::<(K, V)>::deserialize(d)?.into_iter().collect())
    }
}
