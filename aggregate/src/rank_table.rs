//! The ranks' rows of a merged job log as columns (payload version 3): one
//! fixed-width row of numbers per rank, and the strings (host, command,
//! library, ...) once each in tables the rows index. A million ranks are
//! then some 150 MB of rows read without a string allocated per rank,
//! where MessagePack maps with named fields were three times that and most
//! of the report's time. A reader still takes the list of maps of the
//! earlier versions.

use std::sync::Arc;

use serde::de::{Error, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::rank_totals::{ProfileRow, RankAcc};
use crate::HashMap;

/// Bytes of one rank's row (`docs/log-format.md`, "Layout").
const ROW: usize = 4 + 15 * 8 + 4 + 8 * 4;

/// The tables the rows index, and the rows.
#[derive(Serialize, Deserialize)]
struct Columns {
    strings: Vec<Arc<str>>,
    lists: Vec<Arc<[String]>>,
    profiles: Vec<Arc<ProfileRow>>,
    rows: ByteRows,
}

struct ByteRows(Vec<u8>);

impl Serialize for ByteRows {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for ByteRows {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ByteRows;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a byte string of rank rows")
            }
            fn visit_bytes<E: Error>(self, b: &[u8]) -> Result<ByteRows, E> {
                Ok(ByteRows(b.to_vec()))
            }
            fn visit_byte_buf<E: Error>(self, b: Vec<u8>) -> Result<ByteRows, E> {
                Ok(ByteRows(b))
            }
        }
        d.deserialize_bytes(V)
    }
}

/// Index of each distinct value, in order of first use.
struct Table<T: ?Sized> {
    index: HashMap<*const T, u32>,
    values: Vec<Arc<T>>,
}

impl<T: ?Sized + PartialEq> Table<T> {
    fn new() -> Self {
        Table {
            index: HashMap::default(),
            values: Vec::new(),
        }
    }

    /// Shared values are found by address; equal ones that are not shared
    /// by comparing them with the last few values added (rows of one host
    /// or command come together).
    fn id(&mut self, v: &Arc<T>) -> u32 {
        if let Some(&i) = self.index.get(&Arc::as_ptr(v)) {
            return i;
        }
        let n = self.values.len();
        let found = (n.saturating_sub(8)..n).find(|&i| *self.values[i] == **v);
        let i = found.unwrap_or_else(|| {
            self.values.push(v.clone());
            n
        }) as u32;
        self.index.insert(Arc::as_ptr(v), i);
        i
    }
}

fn f64_or_nan(v: Option<f64>) -> f64 {
    v.unwrap_or(f64::NAN)
}

fn nan_none(v: f64) -> Option<f64> {
    (!v.is_nan()).then_some(v)
}

pub(crate) fn serialize<S: Serializer>(ranks: &[RankAcc], s: S) -> Result<S::Ok, S::Error> {
    let (mut strings, mut lists, mut profiles) = (Table::new(), Table::new(), Table::new());
    let mut rows = Vec::with_capacity(ranks.len() * ROW);
    for r in ranks {
        let mut put = |b: &[u8]| rows.extend_from_slice(b);
        put(&r.rank.to_le_bytes());
        for v in [
            r.app_time,
            r.mpi_time,
            r.startup,
            r.shutdown,
            r.event_time,
            f64_or_nan(r.overhead),
            r.cost_per_call,
            f64_or_nan(r.merge_s),
            f64_or_nan(r.py_cost),
            r.start,
            r.end,
            r.timer_resolution,
            r.timer_cost,
        ] {
            put(&v.to_le_bytes());
        }
        put(&r.calls.to_le_bytes());
        put(&r.py_calls.to_le_bytes());
        put(&r.depth.to_le_bytes());
        let ids = [
            strings.id(&r.host),
            strings.id(&r.finished),
            strings.id(&r.mpi_library),
            strings.id(&r.thread_level),
            strings.id(&r.timer_name),
            lists.id(&r.command),
            lists.id(&r.warnings),
            r.profile.as_ref().map_or(u32::MAX, |p| profiles.id(p)),
        ];
        for id in ids {
            put(&id.to_le_bytes());
        }
    }
    Columns {
        strings: strings.values,
        lists: lists.values,
        profiles: profiles.values,
        rows: ByteRows(rows),
    }
    .serialize(s)
}

fn rows_of<E: Error>(c: Columns) -> Result<Vec<RankAcc>, E> {
    if !c.rows.0.len().is_multiple_of(ROW) {
        return Err(E::custom(format!(
            "{} bytes of rank rows are not whole {ROW}-byte rows",
            c.rows.0.len()
        )));
    }
    let bad = |what: &str, i: u32| {
        E::custom(format!(
            "a rank row names {what} {i}, of which there are fewer"
        ))
    };
    c.rows
        .0
        .chunks_exact(ROW)
        .map(|b| {
            let u32_at =
                |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or_default());
            let u64_at =
                |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default());
            let f = |i: usize| f64::from_bits(u64_at(4 + 8 * i));
            let id = |i: usize| u32_at(4 + 15 * 8 + 4 + 4 * i);
            let s = |i: usize| {
                let n = id(i);
                c.strings
                    .get(n as usize)
                    .cloned()
                    .ok_or_else(|| bad("string", n))
            };
            let l = |i: usize| {
                let n = id(i);
                c.lists
                    .get(n as usize)
                    .cloned()
                    .ok_or_else(|| bad("list", n))
            };
            let profile = match id(7) {
                u32::MAX => None,
                n => Some(
                    c.profiles
                        .get(n as usize)
                        .cloned()
                        .ok_or_else(|| bad("profile", n))?,
                ),
            };
            Ok(RankAcc {
                rank: u32_at(0),
                app_time: f(0),
                mpi_time: f(1),
                startup: f(2),
                shutdown: f(3),
                event_time: f(4),
                overhead: nan_none(f(5)),
                cost_per_call: f(6),
                merge_s: nan_none(f(7)),
                py_cost: nan_none(f(8)),
                start: f(9),
                end: f(10),
                timer_resolution: f(11),
                timer_cost: f(12),
                calls: u64_at(4 + 13 * 8),
                py_calls: u64_at(4 + 14 * 8),
                depth: u32_at(4 + 15 * 8),
                host: s(0)?,
                finished: s(1)?,
                mpi_library: s(2)?,
                thread_level: s(3)?,
                timer_name: s(4)?,
                command: l(5)?,
                warnings: l(6)?,
                profile,
            })
        })
        .collect()
}

pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<RankAcc>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Vec<RankAcc>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("the ranks' rows (columns, or a list of maps before version 3)")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<RankAcc>, A::Error> {
            // Believe no length the input states: grow with what is there.
            let mut v = Vec::new();
            while let Some(r) = seq.next_element()? {
                v.push(r);
            }
            Ok(v)
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Vec<RankAcc>, A::Error> {
            let c = Columns::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
            rows_of(c)
        }
    }
    d.deserialize_any(V)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank(rank: u32, host: &Arc<str>) -> RankAcc {
        RankAcc {
            rank,
            host: host.clone(),
            app_time: 10.0 + f64::from(rank),
            mpi_time: 1.0,
            startup: 0.1,
            shutdown: 0.2,
            event_time: 0.9,
            overhead: rank.is_multiple_of(2).then_some(0.5),
            calls: 77,
            cost_per_call: 4e-8,
            merge_s: (rank == 0).then_some(0.01),
            py_cost: None,
            py_calls: 0,
            finished: "finalize".into(),
            command: vec!["./app".to_string()].into(),
            mpi_library: "Open MPI".into(),
            thread_level: "single".into(),
            start: 1.0,
            end: 11.0,
            timer_name: "rdtsc".into(),
            timer_resolution: 1e-9,
            timer_cost: 2e-8,
            depth: 1,
            profile: (rank == 1).then(|| Arc::new(("p.json".into(), true, Some(0.9), None))),
            warnings: Vec::new().into(),
        }
    }

    #[derive(Serialize, Deserialize)]
    struct Holder {
        #[serde(with = "super")]
        ranks: Vec<RankAcc>,
    }

    #[derive(Serialize)]
    struct Maps {
        ranks: Vec<RankAcc>,
    }

    #[test]
    fn rows_read_back_as_written_and_the_maps_of_version_2_are_read() {
        let (a, b): (Arc<str>, Arc<str>) = ("node0".into(), "node1".into());
        let ranks: Vec<RankAcc> = (0..5)
            .map(|r| rank(r, if r < 3 { &a } else { &b }))
            .collect();
        let bytes = rmp_serde::to_vec_named(&Holder {
            ranks: ranks.clone(),
        })
        .unwrap();
        let back: Holder = rmp_serde::from_slice(&bytes).unwrap();
        assert_eq!(format!("{:?}", back.ranks), format!("{ranks:?}"));
        // One string per distinct value, shared by the rows read.
        assert!(Arc::ptr_eq(&back.ranks[0].host, &back.ranks[2].host));
        let v2 = rmp_serde::to_vec_named(&Maps {
            ranks: ranks.clone(),
        })
        .unwrap();
        let back: Holder = rmp_serde::from_slice(&v2).unwrap();
        assert_eq!(format!("{:?}", back.ranks), format!("{ranks:?}"));
    }

    #[test]
    fn a_row_naming_a_string_not_there_is_an_error() {
        let ranks = vec![rank(0, &"h".into())];
        let mut bytes = rmp_serde::to_vec_named(&Holder { ranks }).unwrap();
        // The last id of the row (its profile, none) is u32::MAX; the one
        // before it, the warnings list, made 200.
        let n = bytes.len();
        bytes[n - 8] = 200;
        assert!(rmp_serde::from_slice::<Holder>(&bytes).is_err());
    }
}
