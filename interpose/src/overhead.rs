//! Online overhead. `MPIOVER_PROFILE` names a
//! calibrated profile (`mpiover_common::profile`); it is loaded at `MPI_Init`
//! ([`load`]) and checked against this run's environment. When a key is
//! created the interposer asks once ([`tmax`]) for the tmax of the key's
//! (function, p, bytes, role); every call of the key then adds
//! max(0, t - tmax) to the key's overhead, in raw timer units (one compare
//! and one add on the hot path), and the record gets `tmax_s`, `overhead_s`
//! and `tmax_out_of_range` per entry and `profile` (path, whether the
//! environment matched, q_max, note).
//!
//! How a key is looked up (the profile's keys, `common/src/profile/lookup.rs` module docs):
//!
//! - bytes: the record's bytes (what the rank moves in all) converted to the
//!   per-rank block with `mpiover_common::functions::profile_bytes`;
//! - completions (`MPI_Wait*`, `MPI_Test*`): from what one call completed
//!   (how many requests, receives and sends, their bytes), by the rule of
//!   `mpiover_common::completion` (a single request's measured wait, a
//!   measured exchange of k neighbours, or a composed value with its rule
//!   in the record's `tmax_composed`);
//! - rooted collectives: role `root` / `nonroot`;
//! - point-to-point: whether the peer shares the host is not looked up per
//!   call, so the profile's cross-host entries are used when it has both
//!   kinds (the larger tmax: network latency is never reported as
//!   overhead). The ranks' hosts are exchanged at `MPI_Init` ([`load`]) for
//!   the record: each point-to-point entry says whether its peer was on
//!   another host (the report's eager limit between hosts).
//!
//! A profile that cannot be read gives one warning (rank 0) and no overhead;
//! one measured elsewhere (another MPI library, CPU, host, more ranks per
//! host, another binding, one host against the job's several or the
//! reverse) gives one warning and overhead that is computed
//! but flagged (`profile.matched = false`). Nothing here runs on the hot
//! path except [`tmax`], once per new key: no I/O, no MPI, never a panic.

use std::os::raw::c_int;
use std::sync::OnceLock;

use mpiover_common::host;
use mpiover_common::profile::{Binding, Environment, Profile};
use mpiover_common::record::ProfileUse;
use mpiover_mpisys::consts;
use mpiover_mpisys::*;

use crate::run::warn;

/// The profile in use, if any.
static PROFILE: OnceLock<Profile> = OnceLock::new();
/// What the record says about it.
static USAGE: OnceLock<ProfileUse> = OnceLock::new();

/// `profile` of the record.
pub fn usage() -> Option<ProfileUse> {
    USAGE.get().cloned()
}

/// The rendezvous thresholds the loaded profile measured (same host,
/// across hosts), if any.
pub fn rendezvous_bytes() -> Option<(u64, Option<u64>)> {
    PROFILE.get()?.protocol.as_ref()?.rendezvous_bytes_by_host()
}

/// Each rank's host (`MPI_Get_processor_name`), by rank of
/// `MPI_COMM_WORLD`, this rank's included: exchanged at `MPI_Init` when a
/// profile is named, so that the record can say which peers were on another
/// host.
static HOSTS: OnceLock<(u32, Vec<String>)> = OnceLock::new();

/// Whether world rank `peer` ran on another host than this rank; `None`
/// when the hosts were not exchanged.
pub fn crosses_host(peer: i32) -> Option<bool> {
    let (rank, hosts) = HOSTS.get()?;
    let me = hosts.get(*rank as usize)?;
    Some(hosts.get(usize::try_from(peer).ok()?)? != me)
}

/// Whether overhead is being computed.
pub fn active() -> bool {
    PROFILE.get().is_some()
}

/// The tmax of a key (seconds, whether it fell outside the measured range,
/// how the entries were estimated, and the rule when it was composed, see
/// `mpiover_common::completion`), or why there is none; `None` without a
/// profile.
pub fn tmax(
    k: &mpiover_common::completion::KeyRef,
) -> Option<Result<mpiover_common::completion::Resolved, mpiover_common::completion::Missing>> {
    let prof = PROFILE.get()?;
    Some(mpiover_common::completion::resolve(prof, k).and_then(|r| {
        if r.lookup.tmax_s.is_finite() && r.lookup.tmax_s >= 0.0 {
            Ok(r)
        } else {
            Err(mpiover_common::completion::Missing(
                "the profile's tmax is not a number",
            ))
        }
    }))
}

fn processor_name() -> String {
    let n = consts::max_processor_name().max(256) as usize;
    let mut buf = vec![0u8; n + 1];
    let mut len: c_int = 0;
    // SAFETY: buffer of at least MPI_MAX_PROCESSOR_NAME bytes.
    let r = unsafe { PMPI_Get_processor_name(buf.as_mut_ptr() as *mut libc::c_char, &mut len) };
    if r != 0 {
        return String::new();
    }
    let len = (len.max(0) as usize).min(n);
    String::from_utf8_lossy(buf.get(..len).unwrap_or(&[]))
        .trim_end_matches('\0')
        .trim()
        .to_string()
}

/// Ranks of the world on this rank's host (`MPI_Comm_split_type` shared).
fn ranks_on_host() -> u32 {
    let mut local: MPI_Comm = consts::comm_null();
    let mut n: c_int = 0;
    // SAFETY: PMPI calls on the world with valid out-pointers; collective
    // over the world, called by every rank at init.
    unsafe {
        if PMPI_Comm_split_type(
            consts::comm_world(),
            consts::comm_type_shared(),
            0,
            consts::info_null(),
            &mut local,
        ) == 0
        {
            PMPI_Comm_size(local, &mut n);
            PMPI_Comm_free(&mut local);
        }
    }
    n.max(0) as u32
}

/// Every rank's processor name, by rank of `MPI_COMM_WORLD` (one
/// `PMPI_Allgather`), or only this rank's when the exchange fails.
/// Collective over the world, called by every rank at init. A profile
/// measured on one host is told from a run on several (and the reverse) by
/// the job's hosts, not by this rank's; and the record says per peer
/// whether it was on another host.
fn rank_hosts(ranks: u32) -> Result<Vec<String>, String> {
    const N: usize = 256;
    let mut mine = [0u8; N];
    let name = processor_name();
    let b = name.as_bytes();
    let len = b.len().min(N - 1);
    mine[..len].copy_from_slice(&b[..len]);
    let mut all = vec![0u8; N * ranks.max(1) as usize];
    // SAFETY: every rank sends N bytes and receives N from each of the
    // world's `ranks` ranks into `all`, which holds N * ranks bytes; every
    // rank of the world calls this (collective).
    let r = unsafe {
        PMPI_Allgather(
            mine.as_ptr() as *const libc::c_void,
            N as c_int,
            consts::byte(),
            all.as_mut_ptr() as *mut libc::c_void,
            N as c_int,
            consts::byte(),
            consts::comm_world(),
        )
    };
    if r != 0 {
        return Err(name);
    }
    Ok(all
        .chunks(N)
        .map(|c| {
            let end = c.iter().position(|&x| x == 0).unwrap_or(c.len());
            String::from_utf8_lossy(&c[..end]).trim().to_string()
        })
        .collect())
}

/// The job's hosts (sorted, once each) from every rank's, or none when a
/// rank does not know its own; this rank's alone when they were not
/// exchanged.
fn job_hosts(by_rank: &Result<Vec<String>, String>) -> Vec<String> {
    match by_rank {
        Err(mine) if mine.is_empty() => Vec::new(),
        Err(mine) => vec![mine.clone()],
        Ok(all) if all.iter().any(String::is_empty) => Vec::new(),
        Ok(all) => {
            let mut hosts = all.clone();
            hosts.sort();
            hosts.dedup();
            hosts
        }
    }
}

/// This run's environment, as far as a profile is compared with it.
fn environment(
    mpi_library: &str,
    ranks: u32,
    by_rank: &Result<Vec<String>, String>,
) -> Environment {
    Environment {
        hosts: job_hosts(by_rank),
        ranks,
        ranks_per_host: vec![ranks_on_host()],
        mpi_library: mpi_library.to_string(),
        mpi_flavor: mpiover_mpisys::FLAVOR.to_string(),
        cpu_model: host::cpu_model(),
        cpus: host::cpus_online(),
        binding: Binding {
            policy: host::binding_policy(),
            ranks: Vec::new(),
        },
        os: host::os_release(),
        ..Default::default()
    }
}

/// Called by every rank at `MPI_Init` (collective over the world: it takes
/// part in three small PMPI collectives when `MPIOVER_PROFILE` is set, and
/// in none when it is not, on every rank alike).
pub fn load(rank: u32, ranks: u32, mpi_library: &str, warnings: &mut Vec<String>) {
    let Some(path) = crate::opt::get().profile.clone() else {
        return;
    };
    let shown = path.display().to_string();
    let by_rank = rank_hosts(ranks);
    let env = environment(mpi_library, ranks, &by_rank);
    let loaded = Profile::load(&path);
    let (failed, mismatch) = match &loaded {
        Err(_) => (1, 0),
        Ok(p) => (0, i32::from(p.matches(&env).is_err())),
    };
    // Did any rank fail? (One warning for the job, from rank 0.)
    let mine = [failed, mismatch];
    let mut any = [0 as c_int; 2];
    // SAFETY: two ints each way, every rank calls this.
    unsafe {
        PMPI_Allreduce(
            mine.as_ptr() as *const libc::c_void,
            any.as_mut_ptr() as *mut libc::c_void,
            2,
            consts::int(),
            consts::op_max(),
            consts::comm_world(),
        );
    }
    // Which peers are on another host: the report labels a send across
    // hosts with the profile's eager limit across hosts.
    if let Ok(all) = by_rank {
        let _ = HOSTS.set((rank, all));
    }
    let print = rank == 0;
    match loaded {
        Err(e) => {
            warn(
                warnings,
                format!("{e}; no overhead is computed (the application runs on)"),
                print,
            );
        }
        Ok(prof) => {
            if any[0] != 0 && print {
                warn(
                    warnings,
                    format!(
                        "profile {shown} could not be read on some ranks; they compute no overhead \
                         (see their records)"
                    ),
                    true,
                );
            }
            let note = match prof.matches(&env) {
                Ok(()) => None,
                Err(m) => {
                    warn(
                        warnings,
                        format!(
                            "profile {shown} was measured in another environment ({m}): \
                             overhead is computed but may be wrong"
                        ),
                        print,
                    );
                    Some(format!("measured in another environment: {m}"))
                }
            };
            if note.is_none() && any[1] != 0 && print {
                warn(
                    warnings,
                    format!(
                        "profile {shown} does not match the environment of some ranks (see their \
                         records): their overhead is flagged"
                    ),
                    true,
                );
            }
            // Build the lookup index now, not at the first new key.
            let _ = prof.index();
            let _ = USAGE.set(ProfileUse {
                path: std::fs::canonicalize(&path)
                    .map(|p| p.display().to_string())
                    .unwrap_or(shown),
                matched: note.is_none(),
                q_max: Some(prof.method.q_max).filter(|q| *q > 0.0),
                note,
            });
            let _ = PROFILE.set(prof);
        }
    }
}
