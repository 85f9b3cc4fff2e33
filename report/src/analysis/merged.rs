//! The merged job log: the report's own aggregate, folded by every rank from
//! its record at `MPI_Finalize` and merged over MPI up a tree, so that the
//! job writes what the report would compute from its records, and the report
//! reads one aggregate instead of every rank's record.
//!
//! A rank folds its record exactly as [`analyze_dir`] folds it when no profile
//! is given: with the tmax and the online overhead the record carries, and
//! the eager limit of the profile the run used (else what the library states,
//! else the default). [`Agg::merge`] is the operation the report's workers
//! use to combine their parts, and its sums are exact and independent of the
//! order, so the report on a merged log equals the report on the per-rank
//! records of the same run. What it cannot do is apply another profile or
//! eager limit: per-rank histograms are not kept (that is what makes the
//! log small), so `--profile` and `--eager-limit` need the per-rank records
//! (`MPIOVER_FORMAT=both` keeps both).
//!
//! Memory: a rank holds the aggregate of its subtree, whose per-rank rows
//! (one per rank and site, and per waiter and peer) grow with the subtree,
//! so only the ranks near the root of the tree hold rows of many ranks.

use serde::{Deserialize, Serialize};

use super::fold::{count_lookup, site_eval};
use super::*;

/// The aggregate of some ranks of one job.
#[derive(Debug, Serialize, Deserialize)]
pub struct JobAgg {
    agg: Agg,
    /// What the lowest rank held decides the eager limit, as the first
    /// record does for the report on per-rank records.
    lowest: Lowest,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Lowest {
    rank: u32,
    /// The eager limit the folding used.
    rendezvous: (u64, RendezvousSource, String),
    /// What the MPI library stated (`MPI_T`): the eager limit when a profile
    /// given to the report does not measure one.
    mpi_t: Option<MpiTValue>,
}

impl JobAgg {
    /// One rank's record, folded as `mpiover report` folds it without a
    /// profile given.
    pub fn of_record(rec: &Record) -> JobAgg {
        JobAgg::fold(rec, rendezvous_of(&Options::default(), None, Some(rec)))
    }

    /// [`JobAgg::of_record`] in the job, where the profile is loaded
    /// already: `profile_limit` is its measured eager limit (the report loads
    /// the profile the record names to ask the same), so that no rank reads
    /// the profile again at `MPI_Finalize`.
    pub fn of_record_in_job(rec: &Record, profile_limit: Option<u64>) -> JobAgg {
        let recorded = profile_limit.filter(|_| rec.profile.is_some());
        JobAgg::fold(
            rec,
            rendezvous(
                &Options::default(),
                None,
                recorded,
                rec.eager_limit.as_ref(),
            ),
        )
    }

    fn fold(rec: &Record, rdv: (u64, RendezvousSource, String)) -> JobAgg {
        let mut agg = Agg::new(true);
        agg.want_keys = true;
        agg.add_record(rec, None, rdv.0);
        JobAgg {
            agg,
            lowest: Lowest {
                rank: rec.rank,
                rendezvous: rdv,
                mpi_t: rec.eager_limit.clone(),
            },
        }
    }

    /// Adds another part of the job (ranks of another subtree).
    pub fn merge(&mut self, o: JobAgg) {
        if o.lowest.rank < self.lowest.rank {
            self.lowest = o.lowest;
        }
        self.agg.merge(o.agg);
    }

    /// The ranks it holds, with how each record was finished.
    pub fn ranks(&self) -> impl Iterator<Item = (u32, &str)> {
        self.agg.ranks.iter().map(|r| (r.rank, r.finished.as_str()))
    }

    /// States a rank's time merging the job log (the report's tool cost).
    pub fn set_merge_s(&mut self, rank: u32, s: f64) {
        if let Some(r) = self.agg.ranks.iter_mut().find(|r| r.rank == rank) {
            r.merge_s = Some(s);
        }
    }

    /// MessagePack (named fields, as the record frames), compressed with zstd.
    pub fn encode(&self) -> Result<Vec<u8>, String> {
        let packed = rmp_serde::to_vec_named(self).map_err(|e| format!("MessagePack: {e}"))?;
        zstd::bulk::compress(&packed, 3).map_err(|e| format!("zstd: {e}"))
    }

    pub fn decode(bytes: &[u8]) -> Result<JobAgg, String> {
        JobAgg::read(bytes)
    }

    /// [`JobAgg::decode`] from a reader: neither the compressed nor the
    /// decompressed bytes are ever all in memory.
    pub fn read(r: impl std::io::Read) -> Result<JobAgg, String> {
        let z = zstd::stream::read::Decoder::new(r).map_err(|e| format!("zstd: {e}"))?;
        let mut a: JobAgg = rmp_serde::from_read(std::io::BufReader::with_capacity(1 << 20, z))
            .map_err(|e| format!("not a merged aggregate ({e})"))?;
        a.agg.want_dist = true;
        Ok(a)
    }

    /// The sites evaluated again against `tmax` (a profile given to the
    /// report) and the eager limit `rdv`, from the merged keys: overhead,
    /// calls over tmax, wait states, the tmax lookups. What is kept per rank
    /// (the per-rank spread, the wait matrix, the late peers) keeps the
    /// run's own tmax; false when the log has no keys to do it with.
    pub(crate) fn reevaluate(&mut self, tmax: Option<&dyn TmaxSource>, rdv: u64) -> bool {
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
        for ((site, function, _, bytes, role, completes, requests), k) in &agg.keys {
            let e = &k.entry;
            let ev = evaluate(e, k.unit_s, tmax);
            count_lookup(&mut agg.lookups, &ev, e.count, k.entries);
            let state = entry_wait_state(
                function,
                *bytes,
                role.as_deref(),
                completes.as_deref(),
                *requests,
                rdv,
            );
            if let Some(acc) = agg.sites.get_mut(site) {
                site_eval(acc, &ev, e.count, state);
            }
        }
        true
    }

    /// The eager limit of a report given `--eager-limit` or a profile, as
    /// [`rendezvous_of`] decides it for per-rank records: the option, the
    /// profile's measurement, else what the library stated.
    pub(crate) fn rendezvous_given(
        &self,
        opts: &Options,
        tmax: Option<&dyn TmaxSource>,
    ) -> (u64, RendezvousSource, String) {
        rendezvous(opts, tmax, None, self.lowest.mpi_t.as_ref())
    }

    pub(crate) fn into_parts(self) -> (Agg, (u64, RendezvousSource, String)) {
        (self.agg, self.lowest.rendezvous)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth;

    fn summary_of(records: &[Record]) -> RunSummary {
        let mut c = RunCheck::new();
        for r in records {
            c.add(RankInfo::of(Path::new("x"), r)).unwrap();
        }
        c.finish().unwrap()
    }

    /// Records of several ranks folded in the job, each part through its
    /// encoding, merged up a tree in another order than the ranks': the
    /// report equals the report on the records themselves.
    #[test]
    fn a_merged_aggregate_reports_like_its_records() {
        for online in [true, false] {
            let mut records = synth::fixture_run(online);
            let n = records.len() as u32;
            let extra: Vec<Record> = (0..5)
                .map(|i| {
                    let mut r = synth::scale_record(n + i, n + 5, 12, 7 + u64::from(i));
                    r.run_id = records[0].run_id.clone();
                    r
                })
                .collect();
            records.extend(extra);
            for r in &mut records {
                r.ranks = n + 5;
            }
            let opts = Options::default();
            let direct = analyze_records("run", &records, summary_of(&records), None, &opts);
            let mut parts: Vec<JobAgg> = records
                .iter()
                .rev()
                .map(|r| JobAgg::decode(&JobAgg::of_record(r).encode().unwrap()).unwrap())
                .collect();
            while parts.len() > 1 {
                let b = parts.pop().unwrap();
                let mut a = parts.pop().unwrap();
                a.merge(JobAgg::decode(&b.encode().unwrap()).unwrap());
                parts.insert(0, a);
            }
            let (agg, rdv) = parts.pop().unwrap().into_parts();
            let merged =
                super::super::assemble::finish(agg, summary_of(&records), "run", None, &opts, rdv);
            assert_eq!(
                serde_json::to_value(&merged).unwrap(),
                serde_json::to_value(&direct).unwrap(),
                "online {online}"
            );
        }
    }

    /// Records without online overhead, given a profile at report time:
    /// the merged log's sites, evaluated again from its merged keys, carry
    /// the overhead, calls over tmax and wait state of the per-rank path.
    #[test]
    fn merged_keys_evaluate_the_sites_against_another_profile() {
        // The library states an eager limit that the profile given does not
        // measure: the report on either path falls back to it.
        let mut records = synth::fixture_run(false);
        for r in &mut records {
            r.eager_limit = Some(MpiTValue {
                cvar: "btl_x_eager_limit".into(),
                bytes: 4095,
            });
        }
        let prof = crate::tmax::FnTmax {
            name: "p.json".into(),
            q_max: Some(0.9),
            f: |f: &str, _p: u32, _b: u64, _r: Option<&str>| {
                let (base_s, noise_s) = match f {
                    "MPI_Recv" => (5e-6, 1e-6),
                    "MPI_Wait" => (250e-6, 20e-6),
                    "MPI_Allreduce" => (10e-6, 2e-6),
                    "MPI_Bcast" => (20e-6, 4e-6),
                    "MPI_Send" => (3e-6, 0.5e-6),
                    _ => return None,
                };
                let t = synth::Times {
                    base_s,
                    noise_s,
                    delay_s: 0.0,
                };
                Some((synth::fixture_tmax(t), false))
            },
        };
        let opts = Options::default();
        let direct = analyze_records("run", &records, summary_of(&records), Some(&prof), &opts);
        let mut job = records
            .iter()
            .map(|r| JobAgg::decode(&JobAgg::of_record(r).encode().unwrap()).unwrap())
            .reduce(|mut a, b| {
                a.merge(b);
                a
            })
            .unwrap();
        let rdv = job.rendezvous_given(&opts, Some(&prof));
        assert!(job.reevaluate(Some(&prof), rdv.0));
        let (agg, _) = job.into_parts();
        let merged = super::super::assemble::finish(
            agg,
            summary_of(&records),
            "run",
            Some(&prof),
            &opts,
            rdv,
        );
        assert_eq!(merged.sites.len(), direct.sites.len());
        assert_eq!(
            (
                merged.methods.rendezvous_bytes,
                &merged.methods.rendezvous_source
            ),
            (
                direct.methods.rendezvous_bytes,
                &direct.methods.rendezvous_source
            )
        );
        assert_eq!(direct.methods.rendezvous_bytes, 4096);
        assert!(direct
            .sites
            .iter()
            .any(|s| s.overhead_s.unwrap_or(0.0) > 0.0));
        for d in &direct.sites {
            let m = merged
                .sites
                .iter()
                .find(|m| m.location == d.location && m.mpi_function == d.mpi_function)
                .unwrap_or_else(|| panic!("no {} in the merged report", d.location));
            let close = |a: Option<f64>, b: Option<f64>| match (a, b) {
                (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * a.abs().max(1e-12),
                (a, b) => a.is_none() && b.is_none(),
            };
            assert!(
                close(d.overhead_s, m.overhead_s),
                "{}: {:?} vs {:?}",
                d.location,
                d.overhead_s,
                m.overhead_s
            );
            assert_eq!(d.wait_state, m.wait_state, "{}", d.location);
            assert_eq!(d.significant, m.significant, "{}", d.location);
        }
        assert_eq!(
            serde_json::to_value(&merged.methods.lookups).unwrap(),
            serde_json::to_value(&direct.methods.lookups).unwrap()
        );
    }

    #[test]
    fn a_damaged_aggregate_is_an_error_not_a_panic() {
        let rec = synth::scale_record(0, 1, 5, 1);
        let good = JobAgg::of_record(&rec).encode().unwrap();
        for i in (0..good.len()).step_by(5) {
            let mut b = good.clone();
            b[i] ^= 0xa5;
            let _ = JobAgg::decode(&b);
        }
        assert!(JobAgg::decode(&good[..good.len() / 2]).is_err());
    }
}
