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

use mpiover_aggregate::JobAggregate;
use mpiover_common::joblog::{LogHeader, LogWriter, LOG_FILE_NAME, MERGED_LOG_SCHEMA};
use mpiover_common::record::Record;
use mpiover_mpisys::consts;
use mpiover_mpisys::*;

use crate::run::RunInfo;

const TAG: c_int = 0x6d70;
const HEAD: usize = 16;

fn lowbit(r: usize) -> usize {
    r & r.wrapping_neg()
}

/// The children of `r` in the binomial tree of `p` ranks rooted at 0, with
/// the size of each one's subtree.
pub(crate) fn children(r: usize, p: usize) -> Vec<(usize, usize)> {
    let mut v = Vec::new();
    let mut d = 1;
    while (r == 0 || d < lowbit(r)) && r + d < p {
        let c = r + d;
        v.push((c, lowbit(c).min(p - c)));
        d <<= 1;
    }
    v
}

pub(crate) fn parent(r: usize) -> usize {
    r - lowbit(r)
}

/// One point-to-point transfer of bytes on the private communicator.
pub(crate) struct Comm(pub(crate) MPI_Comm);

/// A buffer's length as an MPI count.
fn count(buf: &[u8]) -> Result<c_int, String> {
    c_int::try_from(buf.len()).map_err(|_| "a frame over 2 GiB".to_string())
}

/// An MPI return code as a result.
fn done(rc: c_int, what: &str, peer: usize) -> Result<(), String> {
    (rc == 0)
        .then_some(())
        .ok_or(format!("{what} rank {peer} failed ({rc})"))
}

impl Comm {
    fn send(&self, buf: &[u8], to: usize) -> Result<(), String> {
        let (n, t, p) = (count(buf)?, consts::byte(), to as c_int);
        // SAFETY: `buf` holds `n` bytes; the communicator is our duplicate.
        let rc = unsafe { PMPI_Send(buf.as_ptr().cast(), n, t, p, TAG, self.0) };
        done(rc, "MPI_Send to", to)
    }

    fn recv(&self, buf: &mut [u8], from: usize) -> Result<(), String> {
        let (n, t, p, st) = (
            count(buf)?,
            consts::byte(),
            from as c_int,
            consts::status_ignore(),
        );
        // SAFETY: `buf` has room for `n` bytes; the status is ignored.
        let rc = unsafe { PMPI_Recv(buf.as_mut_ptr().cast(), n, t, p, TAG, self.0, st) };
        done(rc, "MPI_Recv from", from)
    }

    /// One frame from `from`: (rank, payload).
    pub(crate) fn recv_frame(&self, from: usize) -> Result<(u32, Vec<u8>), String> {
        let mut head = [0u8; HEAD];
        self.recv(&mut head, from)?;
        let rank = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        let mut len = [0u8; 8];
        len.copy_from_slice(&head[8..16]);
        let mut payload = vec![0u8; u64::from_le_bytes(len) as usize];
        self.recv(&mut payload, from)?;
        Ok((rank, payload))
    }

    pub(crate) fn send_frame(&self, rank: u32, payload: &[u8], to: usize) -> Result<(), String> {
        let mut head = [0u8; HEAD];
        head[..4].copy_from_slice(&rank.to_le_bytes());
        head[8..].copy_from_slice(&(payload.len() as u64).to_le_bytes());
        self.send(&head, to)?;
        self.send(payload, to)
    }
}

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
            let part = JobAggregate::of_record_in_job(rec, crate::overhead::rendezvous_bytes());
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
        eprintln!("mpiover: warning: {what}; records are written per rank instead");
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
            warn(&format!(
                "cannot write {}: {e}",
                dir.join(LOG_FILE_NAME).display()
            ));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every rank but the root is in exactly one subtree of its parent, and
    /// the subtree sizes add up: the root receives P - 1 frames.
    #[test]
    fn the_binomial_tree_covers_every_rank_once() {
        for p in 1..=70 {
            let mut seen = vec![0; p];
            for r in 0..p {
                for (c, n) in children(r, p) {
                    assert_eq!(parent(c), r, "p {p}");
                    seen[c] += 1;
                    let below: usize = children(c, p).iter().map(|x| x.1).sum();
                    assert_eq!(n, 1 + below, "p {p} child {c}");
                }
            }
            assert!(seen[1..].iter().all(|&s| s == 1), "p {p}: {seen:?}");
            let at_root: usize = children(0, p).iter().map(|x| x.1).sum();
            assert_eq!(at_root, p - 1);
            let depth = (0..p).map(|mut r| {
                let mut d = 0;
                while r != 0 {
                    r = parent(r);
                    d += 1;
                }
                d
            });
            assert!(depth.max().unwrap_or(0) <= (p as f64).log2().ceil() as usize);
        }
    }
}
