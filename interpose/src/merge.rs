//! The merged job log, made over MPI at `MPI_Finalize` (`MPIOVER_FORMAT=log`).
//!
//! Before `PMPI_Finalize`, with recording off, every rank folds its record into
//! the aggregate the report folds records into ([`JobAggregate`]: per site its
//! totals, a distribution, the overhead by wait state, one row per rank; per
//! rank its times; per waiter and peer the wait matrix), and the aggregates are
//! merged up a binomial tree on a private duplicate of `MPI_COMM_WORLD`: each
//! rank receives its children's (one at a time), merges them into its own and
//! sends the result to its parent, in ceil(log2 P) levels. Rank 0 writes the
//! job's aggregate as one `mpiover-log/2` file. Errors return instead of
//! aborting (`MPI_ERRORS_RETURN` on the duplicate); a last `MPI_Allreduce`
//! tells every rank whether the log was written, and when it was not, each
//! writes its own `rank-NNNNNN.json` as without a log.

use std::os::raw::{c_int, c_void};
use std::path::Path;

use mpiover_aggregate::{Bounds, JobAggregate};
use mpiover_common::record::Record;
use mpiover_common::run::joblog::{LogHeader, LogWriter, LOG_FILE_NAME, MERGED_LOG_SCHEMA};
use mpiover_mpisys::consts;
use mpiover_mpisys::*;

use crate::merge_tree::{children, parent, Comm};
use crate::run::RunInfo;

/// Merges this rank's record into the job log; true when the log was
/// written (the same answer on every rank). Collective over
/// `MPI_COMM_WORLD`; called by every rank at `MPI_Finalize`. The record's
/// sites (return addresses `addrs`) come unresolved: they are resolved
/// once for the job where possible (`merge_sites`), the rest by
/// `resolve_rest` (given which are done), so that `rec` is resolved on
/// return whatever happened.
pub fn into_job_log(
    info: &RunInfo,
    dir: &Path,
    rec: &mut Record,
    addrs: &[crate::rt::SiteRef],
    resolve_rest: &mut dyn FnMut(&mut Record, &[bool]),
) -> bool {
    let t0 = crate::timer::mono_ns();
    let (me, p) = (info.head.rank as usize, info.head.ranks as usize);
    let mut dup: MPI_Comm = consts::comm_null();
    // A private copy of MPI_COMM_WORLD made by a split, not MPI_Comm_dup:
    // a dup would run the copy callbacks of every attribute the program
    // put on MPI_COMM_WORLD, and the program would see them run.
    // SAFETY: MPI is initialized and not finalized (we are inside the
    // MPI_Finalize wrapper, before PMPI_Finalize); `dup` is written once.
    if unsafe { PMPI_Comm_split(consts::comm_world(), 0, me as c_int, &mut dup) } != 0 {
        warn("cannot make a private copy of MPI_COMM_WORLD");
        resolve_rest(rec, &[]);
        return false;
    }
    // SAFETY: `dup` is the valid communicator just made.
    unsafe { PMPI_Comm_set_errhandler(dup, consts::errors_return()) };
    let comm = Comm(dup);
    let agreed = crate::merge_sites::agree(&comm, me, p, rec, addrs, info.depth == 1);
    resolve_rest(rec, agreed.as_deref().unwrap_or(&[]));
    let by_root = agreed
        .as_ref()
        .map_or(0, |d| d.iter().filter(|&&x| x).count());
    let t1 = crate::timer::mono_ns();
    // A rank whose part cannot be encoded still takes part (sending an
    // empty frame) and votes against the log below: every rank then writes
    // its own file.
    let mut encoded = true;
    let outcome = match agreed {
        Err(e) => Err(e),
        Ok(_) => {
            let mut part = JobAggregate::of_record_in_job(rec, crate::overhead::rendezvous_bytes());
            let rows = usize::try_from(crate::opt::get().log_rows).unwrap_or(usize::MAX);
            part.set_bounds(Bounds::with_rows(rows));
            if me == 0 {
                root(&comm, p, dir, info, part, rec, t0, &mut encoded)
            } else {
                relay(&comm, me, p, part, &mut encoded).map(|()| true)
            }
        }
    };
    let mut ok: c_int = match &outcome {
        Ok(written) => c_int::from(*written && encoded),
        Err(_) => 0,
    };
    let mine = ok;
    // SAFETY: one int in and out, on the duplicate.
    let rc = unsafe {
        PMPI_Allreduce(
            &mine as *const c_int as *const c_void,
            &mut ok as *mut c_int as *mut c_void,
            1,
            consts::int(),
            consts::op_min(),
            dup,
        )
    };
    // SAFETY: our own duplicate, freed once.
    unsafe { PMPI_Comm_free(&mut dup) };
    let written = rc == 0 && ok == 1;
    if me == 0 && !written && matches!(outcome, Ok(true)) {
        // Another rank could not take part: it writes its own record, so
        // do all, and a log must not hold a second copy of some.
        let _ = std::fs::remove_file(dir.join(LOG_FILE_NAME));
    }
    if let Err(e) = &outcome {
        warn(&format!("the job log merge failed on this rank: {e}"));
    }
    if crate::run::debug() {
        // One write, so that the ranks' lines do not interleave.
        let line = format!(
            "mpiover: debug: rank {me} job log merge: {:.3} ms, {}; {by_root} of {} sites resolved \
             by rank 0, in {:.3} ms\n",
            crate::timer::mono_ns().wrapping_sub(t0) as f64 * 1e-6,
            if written { "written" } else { "not written" },
            rec.sites.len(),
            t1.wrapping_sub(t0) as f64 * 1e-6
        );
        eprint!("{line}");
    }
    written
}

fn encode_or_vote(part: &JobAggregate, encoded: &mut bool) -> Vec<u8> {
    match part.encode() {
        Ok(p) => p,
        Err(e) => {
            warn(&format!(
                "cannot encode the job log's aggregate on this rank ({e})"
            ));
            *encoded = false;
            Vec::new()
        }
    }
}

fn warn(what: &str) {
    if !crate::run::quiet() {
        crate::run::say_warning(&format!("{what}; records are written per rank instead"));
    }
}

/// Merges the children's aggregates into `part`, one child at a time.
fn gather(comm: &Comm, me: usize, p: usize, part: &mut JobAggregate) -> Result<(), String> {
    for (c, _) in children(me, p) {
        let (_, bytes) = comm.recv_frame(c)?;
        if bytes.is_empty() {
            // The child could not encode: it votes against the log.
            continue;
        }
        part.merge(JobAggregate::decode(&bytes).map_err(|e| format!("from rank {c}: {e}"))?);
    }
    Ok(())
}

/// Rank 0: the job's aggregate, with its own time in it (`tool.merge_s`,
/// from the start of the merge to the last child's part merged), into the
/// file. Ok(false) when the file cannot be written.
#[allow(clippy::too_many_arguments)]
fn root(
    comm: &Comm,
    p: usize,
    dir: &Path,
    info: &RunInfo,
    mut part: JobAggregate,
    rec: &mut Record,
    t0: u64,
    encoded: &mut bool,
) -> Result<bool, String> {
    gather(comm, 0, p, &mut part)?;
    let merge_s = crate::timer::mono_ns().wrapping_sub(t0) as f64 * 1e-9;
    rec.tool.merge_s = Some(merge_s);
    part.set_merge_s(0, merge_s);
    let payload = encode_or_vote(&part, encoded);
    if !*encoded {
        return Ok(false);
    }
    let mut ranks: Vec<u32> = part.ranks().map(|(r, _)| r).collect();
    ranks.sort_unstable();
    let tmp = dir.join(format!(".{LOG_FILE_NAME}.tmp-{}", info.head.pid));
    let header = LogHeader {
        schema: MERGED_LOG_SCHEMA.into(),
        run_id: info.head.run_id.clone(),
        ranks: p as u32,
        writer: format!("mpiover {}", env!("CARGO_PKG_VERSION")),
    };
    let write = || -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let f = std::fs::File::create(&tmp)?;
        let mut w = LogWriter::new(std::io::BufWriter::with_capacity(1 << 20, f), &header)?;
        w.merged(&ranks, &payload)?;
        let f = w.finish()?.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        std::fs::rename(&tmp, dir.join(LOG_FILE_NAME))
    };
    match write() {
        Ok(()) => Ok(true),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            let log = dir.join(LOG_FILE_NAME);
            if crate::record_file::dir_wide(&e) {
                // The per-rank records that follow meet the same fault: one
                // message for the job.
                crate::record_file::say_once(&format!(
                    "cannot write {}: {e}; the ranks' own records cannot be written there either",
                    log.display()
                ));
            } else {
                warn(&format!("cannot write {}: {e}", log.display()));
            }
            Ok(false)
        }
    }
}

/// Any other rank: its children's aggregates merged into its own, sent to
/// its parent (an empty frame when it cannot be encoded).
fn relay(
    comm: &Comm,
    me: usize,
    p: usize,
    mut part: JobAggregate,
    encoded: &mut bool,
) -> Result<(), String> {
    gather(comm, me, p, &mut part)?;
    let payload = encode_or_vote(&part, encoded);
    comm.send_frame(me as u32, &payload, parent(me))
}
