//! The merged job log's payload: the aggregate of some ranks of one job,
//! folded by every rank from its record at `MPI_Finalize` and merged over
//! MPI up a tree, so that the job writes what the report would compute from
//! its records, and the report reads one aggregate instead of every rank's
//! record (`docs/log-format.md`, "The payload").
//!
//! A rank folds its record exactly as the report folds it when no profile
//! is given: with the tmax and the online overhead the record carries, and
//! the eager limit of the profile the run used (else what the library
//! states, else the default). [`Aggregate::merge`] is the operation the
//! report's workers use to combine their parts, and its sums are exact and
//! independent of the order, so the report on a merged log equals the
//! report on the per-rank records of the same run. What it cannot do is
//! apply another profile or eager limit to what is kept per rank: per-rank
//! histograms are not kept (that is what makes the log small), so that
//! needs the per-rank records (`MPIOVER_FORMAT=both` keeps both).
//!
//! Memory: a rank holds the aggregate of its subtree, whose per-rank rows
//! (one per rank and site, and per waiter and peer) grow with the subtree,
//! so only the ranks near the root of the tree hold rows of many ranks.
//!
//! **Format.** zstd(MessagePack map, named fields) of [`JobAggregate`];
//! field order is layout. Version 1 stated no version; version
//! [`PAYLOAD_VERSION`] (2, which adds the regions) puts `version` first in
//! the map, so that a reader tells it from the first bytes and refuses a
//! version it does not read with [`PayloadError::Version`] before anything
//! else is read. This crate reads both (a version 1 payload has no regions).

use std::io::Read;

use mpiover_common::profile::MpiTValue;
use mpiover_common::record::Record;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::aggregate::Aggregate;
use crate::bounded::Bounds;
use crate::eager_limit::{eager_limit, EagerLimit, RendezvousSource, Thresholds};
use crate::exact_sum::Fx;
use crate::site_totals::site_eval;
use crate::tmax_eval::{count_lookup, evaluate, Lookups, TmaxLookup};
use crate::wait_state::entry_wait_state;

/// The payload's format version, which this crate writes (and reads, with
/// version 1).
pub const PAYLOAD_VERSION: u64 = 3;

/// Why a payload could not be written or read.
#[derive(Debug, Error)]
pub enum PayloadError {
    #[error("MessagePack: {0}")]
    Pack(#[from] rmp_serde::encode::Error),
    #[error("zstd: {0}")]
    Zstd(std::io::Error),
    #[error("not a merged aggregate ({0})")]
    Unpack(#[from] rmp_serde::decode::Error),
    #[error(
        "the merged aggregate is in format version {found}, this mpiover reads version \
         {PAYLOAD_VERSION}, 2 and 1: report it with the mpiover that recorded the run"
    )]
    Version { found: String },
}

/// The aggregate of some ranks of one job.
#[derive(Debug, Serialize, Deserialize)]
pub struct JobAggregate {
    /// [`PAYLOAD_VERSION`]; absent (1) in the first format.
    #[serde(default = "first_version")]
    version: u64,
    agg: Aggregate,
    /// What the lowest rank held decides the eager limit, as the first
    /// record does for the report on per-rank records.
    lowest: Lowest,
    /// The job's ranks (version 3): what the bounded per-rank detail is
    /// laid out over (`crate::bounded`).
    #[serde(default)]
    world: u32,
    /// How much per-rank detail this rank keeps when it bounds a merge:
    /// its own setting, not sent (every rank of a job reads the same).
    #[serde(skip)]
    bounds: Bounds,
}

fn first_version() -> u64 {
    1
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Lowest {
    rank: u32,
    /// The eager limit the folding used: the same-host threshold, where it
    /// came from and that in words (the payload's first layout).
    rendezvous: (u64, RendezvousSource, String),
    /// The threshold across hosts it used, when it had one (absent in
    /// payloads written before it was applied).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rendezvous_cross_host: Option<u64>,
    /// What the MPI library stated (`MPI_T`): the eager limit when a profile
    /// given to the report does not measure one.
    mpi_t: Option<MpiTValue>,
}

impl JobAggregate {
    /// One rank's record, folded without a profile given (with the tmax it
    /// carries) and with the eager limit `rdv`, keeping its keys.
    pub fn of_record(rec: &Record, rdv: EagerLimit) -> JobAggregate {
        let mut agg = Aggregate::new(true);
        agg.want_keys = true;
        agg.add_record::<dyn TmaxLookup>(rec, None, rdv.0);
        JobAggregate {
            version: PAYLOAD_VERSION,
            agg,
            lowest: Lowest {
                rank: rec.rank,
                rendezvous_cross_host: rdv.0.cross_host,
                rendezvous: (rdv.0.same_host, rdv.1, rdv.2),
                mpi_t: rec.eager_limit.clone(),
            },
            world: rec.ranks,
            bounds: Bounds::DEFAULT,
        }
    }

    /// [`JobAggregate::of_record`] in the job, as the report folds a record
    /// without a profile given, where the profile is loaded already:
    /// `profile_limit` is its measured eager limit (the report loads the
    /// profile the record names to ask the same), so that no rank reads the
    /// profile again at `MPI_Finalize`.
    pub fn of_record_in_job(
        rec: &Record,
        profile_limit: Option<(u64, Option<u64>)>,
    ) -> JobAggregate {
        let recorded = profile_limit.filter(|_| rec.profile.is_some());
        let rdv = eager_limit(None, recorded, rec.eager_limit.as_ref());
        JobAggregate::of_record(rec, rdv)
    }

    /// Adds another part of the job (ranks of another subtree).
    pub fn merge(&mut self, o: JobAggregate) {
        if o.lowest.rank < self.lowest.rank {
            self.lowest = o.lowest;
        }
        self.world = self.world.max(o.world);
        self.agg.merge(o.agg);
        self.agg.bound(self.world, &self.bounds);
    }

    /// A job's aggregate made whole elsewhere (the synthetic job logs of
    /// the scale benchmark): `agg` bounded over `world` ranks, and what
    /// its lowest rank states of the eager limit.
    pub fn from_parts(
        mut agg: Aggregate,
        world: u32,
        lowest_rank: u32,
        rdv: EagerLimit,
    ) -> JobAggregate {
        agg.bound(world, &Bounds::DEFAULT);
        JobAggregate {
            version: PAYLOAD_VERSION,
            agg,
            lowest: Lowest {
                rank: lowest_rank,
                rendezvous_cross_host: rdv.0.cross_host,
                rendezvous: (rdv.0.same_host, rdv.1, rdv.2),
                mpi_t: None,
            },
            world,
            bounds: Bounds::DEFAULT,
        }
    }

    /// Bounds the merges into this part by `b` rather than the default.
    pub fn set_bounds(&mut self, b: Bounds) {
        self.bounds = b;
    }

    /// The ranks of the job.
    pub fn world(&self) -> u32 {
        self.world
    }

    /// The ranks it holds, with how each record was finished.
    pub fn ranks(&self) -> impl Iterator<Item = (u32, &str)> {
        self.agg.ranks.iter().map(|r| (r.rank, &*r.finished))
    }

    /// States a rank's time merging the job log (the report's tool cost).
    pub fn set_merge_s(&mut self, rank: u32, s: f64) {
        if let Some(r) = self.agg.ranks.iter_mut().find(|r| r.rank == rank) {
            r.merge_s = Some(s);
        }
    }

    /// The payload: MessagePack (named fields, as the record frames),
    /// compressed with zstd.
    pub fn encode(&self) -> Result<Vec<u8>, PayloadError> {
        let packed = rmp_serde::to_vec_named(self)?;
        zstd::bulk::compress(&packed, 3).map_err(PayloadError::Zstd)
    }

    pub fn decode(bytes: &[u8]) -> Result<JobAggregate, PayloadError> {
        JobAggregate::read(bytes)
    }

    /// [`JobAggregate::decode`] from a reader: neither the compressed nor the
    /// decompressed bytes are ever all in memory.
    pub fn read(r: impl Read) -> Result<JobAggregate, PayloadError> {
        let mut z = zstd::stream::read::Decoder::new(r).map_err(PayloadError::Zstd)?;
        let mut head = Vec::with_capacity(VERSION_HEAD);
        (&mut z)
            .take(VERSION_HEAD as u64)
            .read_to_end(&mut head)
            // As the MessagePack reader says it when the first read fails.
            .map_err(|e| PayloadError::Unpack(rmp_serde::decode::Error::InvalidMarkerRead(e)))?;
        let readable = |v: &Option<u64>| matches!(v, Some(1) | Some(2) | Some(PAYLOAD_VERSION));
        if let Some(found) = stated_version(&head).filter(|v| !readable(v)) {
            let found = found.map_or("(unreadable)".into(), |v| v.to_string());
            return Err(PayloadError::Version { found });
        }
        let body = std::io::Cursor::new(head).chain(z);
        let mut a: JobAggregate =
            rmp_serde::from_read(std::io::BufReader::with_capacity(1 << 20, body))?;
        a.agg.want_dist = true;
        a.version = PAYLOAD_VERSION;
        Ok(a)
    }

    /// The sites evaluated again against `tmax` (a profile given to the
    /// report) and the eager limit `rdv`, from the merged keys: overhead,
    /// calls over tmax, wait states, the tmax lookups. What is kept per rank
    /// (the per-rank spread, the wait matrix, the late peers) keeps the
    /// run's own tmax; false when the log has no keys to do it with.
    pub fn reevaluate<T: TmaxLookup + ?Sized>(
        &mut self,
        tmax: Option<&T>,
        rdv: Thresholds,
    ) -> bool {
        let agg = &mut self.agg;
        if agg.keys.is_empty() && !agg.sites.is_empty() {
            return false;
        }
        for acc in agg.sites.values_mut() {
            acc.overhead = Fx::default();
            acc.tmax_sum = Fx::default();
            acc.calls_over = Fx::default();
            acc.calls_with_tmax = 0;
            acc.out_of_range_calls = 0;
            acc.tmax_min = f64::INFINITY;
            acc.tmax_max = 0.0;
            acc.basis = None;
            acc.states.clear();
            acc.composed.clear();
            acc.missing.clear();
        }
        agg.lookups = Lookups::default();
        // The sums are fixed point: the map's order does not matter.
        let keys = agg.keys.iter().chain(&agg.keys_cross_host);
        for ((site, function, _, bytes, role, completes, requests), k) in keys {
            let e = &k.entry;
            let ev = evaluate(e, k.unit_s, tmax);
            count_lookup(&mut agg.lookups, &ev, e.count, k.entries);
            let state = entry_wait_state(
                function,
                *bytes,
                role.as_deref(),
                completes.as_deref(),
                *requests,
                rdv.for_peer(e.cross_host),
            );
            if let Some(acc) = agg.sites.get_mut(site) {
                site_eval(acc, &ev, e.count, state);
            }
        }
        true
    }

    /// The eager limit of a report given `--eager-limit` (`option`) or a
    /// profile that measures one (`measured`), as the report decides it
    /// for per-rank records: the option, the profile's measurement, else
    /// what the library stated.
    pub fn rendezvous_given(
        &self,
        option: Option<u64>,
        measured: Option<(u64, Option<u64>)>,
    ) -> EagerLimit {
        eager_limit(option, measured, self.lowest.mpi_t.as_ref())
    }

    /// The aggregate, and the eager limit it was folded with.
    pub fn into_parts(self) -> (Aggregate, EagerLimit) {
        let (same_host, source, detail) = self.lowest.rendezvous;
        let t = Thresholds {
            same_host,
            cross_host: self.lowest.rendezvous_cross_host,
        };
        (self.agg, (t, source, detail))
    }
}

/// Bytes of decompressed payload enough to tell its version: a map header
/// (at most 5 bytes), the key `version` (8) and a u64 (9).
const VERSION_HEAD: usize = 32;

/// The version a payload states, from its first bytes: None when its map's
/// first key is not `version` (version 1, the first format, states none);
/// Some(None) when the value is not an unsigned integer.
fn stated_version(head: &[u8]) -> Option<Option<u64>> {
    let map_header = match head.first()? {
        0x80..=0x8f => 1,
        0xde => 3,
        0xdf => 5,
        _ => return None,
    };
    let rest = head.get(map_header..)?;
    let value = rest.strip_prefix(b"\xa7version")?;
    let be = |n: usize| -> Option<u64> {
        let b = value.get(1..1 + n)?;
        Some(b.iter().fold(0u64, |v, &x| (v << 8) | u64::from(x)))
    };
    Some(match *value.first()? {
        v @ 0x00..=0x7f => Some(u64::from(v)),
        0xcc => be(1),
        0xcd => be(2),
        0xce => be(4),
        0xcf => be(8),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use mpiover_common::functions::WaitState;
    use mpiover_common::histogram::Histogram;
    use mpiover_common::record::{Entry, Site};

    use super::*;

    fn site(id: u32, line: u32) -> Site {
        Site {
            id,
            address: format!("0x{:x}", 0x1000 + id),
            module: Some("/bin/app".into()),
            build_id: None,
            offset: Some(format!("0x{:x}", 0x100 + id)),
            function: Some("main".into()),
            symbol: None,
            file: Some("app.c".into()),
            line: Some(line),
            inlined_into: Vec::new(),
            note: None,
            native: None,
            language: None,
        }
    }

    fn entry(site: u32, function: &str, peer: Option<i32>, ns: u64) -> Entry {
        let mut hist = Histogram::default();
        for _ in 0..4 {
            hist.record(ns);
        }
        Entry {
            site,
            function: function.into(),
            p: 2,
            bytes: 8,
            peer,
            cross_host: None,
            role: None,
            completes: None,
            post_site: None,
            requests: None,
            completed_at: None,
            count: 4,
            sum_s: 4.0 * ns as f64 * 1e-9,
            min_s: ns as f64 * 1e-9,
            max_s: ns as f64 * 1e-9,
            tmax_s: Some(500e-9),
            overhead_s: None,
            tmax_out_of_range: false,
            tmax_basis: None,
            tmax_composed: None,
            tmax_missing: None,
            hist,
        }
    }

    /// One rank of two: a receive from the other rank and an allreduce.
    fn record(rank: u32) -> Record {
        let mut rec = Record {
            run_id: "run".into(),
            rank,
            ranks: 2,
            finished: "MPI_Finalize".into(),
            ..Record::default()
        };
        rec.timer.unit_s = 1e-9;
        rec.sites = vec![site(0, 10), site(1, 20)];
        rec.entries = vec![
            entry(
                0,
                "MPI_Recv",
                Some(1 - rank as i32),
                800 + 100 * u64::from(rank),
            ),
            entry(1, "MPI_Allreduce", None, 300),
        ];
        rec
    }

    /// Rank 0 of two hosts' job: 16 KiB `MPI_Send`s of 20 ms each (tmax
    /// 500 ns), to rank 1 on its host at line 10 and to rank 2 on the other
    /// at line 20.
    fn sends_within_and_across_hosts() -> Record {
        let mut rec = record(0);
        rec.ranks = 3;
        let send = |site, peer, cross| {
            let mut e = entry(site, "MPI_Send", Some(peer), 20_000_000);
            (e.bytes, e.cross_host) = (16 * 1024, Some(cross));
            e
        };
        rec.entries = vec![send(0, 1, false), send(1, 2, true)];
        rec
    }

    /// The wait state of the most overhead at the site of `line`.
    fn state_at(agg: &Aggregate, line: u32) -> Option<WaitState> {
        let acc = agg
            .sites
            .iter()
            .find(|(k, _)| matches!(k.loc, crate::Loc::Line(_, l) if l == line))
            .map(|(_, a)| a)
            .expect("site");
        let (state, ovh) = acc
            .states
            .iter()
            .max_by(|a, b| a.1.get().total_cmp(&b.1.get()))
            .expect("states");
        assert!(ovh.get() > 0.07, "{line}: {}", ovh.get());
        *state
    }

    /// A send between the two eager limits is rendezvous on its host and
    /// eager across hosts, folded from the record and evaluated again from
    /// the merged keys alike; where the record does not say whose host the
    /// peer is on, the smaller limit applies.
    #[test]
    fn a_send_between_the_limits_is_eager_across_hosts_only() {
        let rdv = Thresholds {
            same_host: 4097,
            cross_host: Some(65481),
        };
        let rec = sends_within_and_across_hosts();
        let mut job = JobAggregate::of_record_in_job(&rec, None);
        job.lowest.rendezvous_cross_host = rdv.cross_host;
        job.lowest.rendezvous.0 = rdv.same_host;
        let mut agg = Aggregate::new(false);
        agg.add_record::<dyn TmaxLookup>(&rec, None, rdv);
        assert_eq!(state_at(&agg, 10), Some(WaitState::LateReceiver));
        assert_eq!(state_at(&agg, 20), None);
        let mut back = JobAggregate::decode(&job.encode().unwrap()).unwrap();
        assert!(back.reevaluate::<dyn TmaxLookup>(None, rdv));
        let (agg, t) = back.into_parts();
        assert_eq!(t.0, rdv);
        assert_eq!(state_at(&agg, 10), Some(WaitState::LateReceiver));
        assert_eq!(state_at(&agg, 20), None);
        // Not known: the smaller (same-host) limit, rendezvous.
        let mut unknown = rec.clone();
        for e in &mut unknown.entries {
            e.cross_host = None;
        }
        let mut agg = Aggregate::new(false);
        agg.add_record::<dyn TmaxLookup>(&unknown, None, rdv);
        assert_eq!(state_at(&agg, 20), Some(WaitState::LateReceiver));
    }

    fn decompressed(payload: &[u8]) -> Vec<u8> {
        zstd::stream::decode_all(payload).unwrap()
    }

    #[test]
    fn parts_merge_through_their_encoding() {
        let mut job = JobAggregate::of_record_in_job(&record(1), None);
        let zero = JobAggregate::of_record_in_job(&record(0), Some((4096, None)));
        job.merge(JobAggregate::decode(&zero.encode().unwrap()).unwrap());
        job.set_merge_s(0, 0.5);
        let back = JobAggregate::decode(&job.encode().unwrap()).unwrap();
        let mut ranks: Vec<(u32, String)> = back.ranks().map(|(r, f)| (r, f.into())).collect();
        ranks.sort();
        assert_eq!(
            ranks,
            [(0, "MPI_Finalize".into()), (1, "MPI_Finalize".into())]
        );
        let (agg, rdv) = back.into_parts();
        assert_eq!(agg.sites.len(), 2);
        assert_eq!(agg.sites.values().map(|s| s.calls).sum::<u64>(), 16);
        assert_eq!(agg.wait.len(), 2);
        assert_eq!(
            agg.ranks.iter().find(|r| r.rank == 0).unwrap().merge_s,
            Some(0.5)
        );
        // Rank 0 is the lowest: its eager limit (no profile recorded, so
        // the default) is the job's.
        assert_eq!(rdv.1, crate::RendezvousSource::Default);
    }

    /// Version 2 states its version first; version 1 stated none (its
    /// bytes are those of the first merged logs) and is still read.
    #[test]
    fn version_2_states_its_version_and_version_1_is_read() {
        let payload = JobAggregate::of_record_in_job(&record(0), None)
            .encode()
            .unwrap();
        let raw = decompressed(&payload);
        assert_eq!(raw[0], 0x84, "a map of four fields");
        assert_eq!(stated_version(&raw), Some(Some(3)));
        let v1 = zstd::bulk::compress(&unstated(&raw), 3).unwrap();
        let back = JobAggregate::decode(&v1).expect("version 1 read");
        assert_eq!(back.ranks().count(), 1);
    }

    /// `raw` (a version 2 payload) without its `version` field: a version 1
    /// payload.
    fn unstated(raw: &[u8]) -> Vec<u8> {
        let mut b = vec![0x83];
        b.extend_from_slice(&raw[1 + 8 + 1..]);
        b
    }

    /// `raw` (a version 2 payload) stating `version` instead.
    fn stating(raw: &[u8], version: &[u8]) -> Vec<u8> {
        let mut b = vec![0x84];
        b.extend_from_slice(b"\xa7version");
        b.extend_from_slice(version);
        b.extend_from_slice(&unstated(raw)[1..]);
        zstd::bulk::compress(&b, 3).unwrap()
    }

    #[test]
    fn another_version_is_refused_before_it_is_read() {
        let raw = decompressed(
            &JobAggregate::of_record_in_job(&record(0), None)
                .encode()
                .unwrap(),
        );
        assert!(JobAggregate::decode(&stating(&raw, &[0x01])).is_ok());
        assert!(JobAggregate::decode(&stating(&raw, &[0x02])).is_ok());
        assert!(JobAggregate::decode(&stating(&raw, &[0x03])).is_ok());
        for (v, found) in [
            (&[0x04][..], "4"),
            (&[0xce, 0x00, 0x01, 0x00, 0x00][..], "65536"),
            (&[0xa1, b'2'][..], "(unreadable)"),
        ] {
            match JobAggregate::decode(&stating(&raw, v)) {
                Err(e @ PayloadError::Version { .. }) => {
                    let m = e.to_string();
                    assert!(m.contains(&format!("format version {found},")), "{m}");
                    assert!(m.contains("reads version 3, 2 and 1"), "{m}");
                }
                other => panic!("{found}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_damaged_payload_is_an_error_not_a_panic() {
        let good = JobAggregate::of_record_in_job(&record(0), None)
            .encode()
            .unwrap();
        for i in 0..good.len() {
            let mut b = good.clone();
            b[i] ^= 0xa5;
            let _ = JobAggregate::decode(&b);
        }
        assert!(JobAggregate::decode(&good[..good.len() / 2]).is_err());
        assert!(JobAggregate::decode(&[]).is_err());
    }

    /// The preload library folds its own record at `MPI_Finalize`: an entry
    /// whose site is not in the record is left out, not a panic.
    #[test]
    fn an_entry_without_its_site_is_left_out() {
        let mut rec = record(0);
        rec.entries[0].site = 7;
        rec.entries[1].post_site = Some(9);
        rec.entries[1].completed_at = Some(9);
        let (agg, _) = JobAggregate::of_record_in_job(&rec, None).into_parts();
        assert_eq!(agg.sites.len(), 1);
        assert_eq!(agg.ranks[0].event_time, rec.entries[1].sum_s);
    }
}
