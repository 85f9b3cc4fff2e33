//! Call sites resolved once for the job (`MPIOVER_FORMAT=log`): resolving a
//! site reads its object's debug information, and with every rank doing it
//! at `MPI_Finalize` a large job reads the executable's DWARF once per rank
//! from a shared file system.
//!
//! Before the aggregates are merged, the ranks send up the merge's tree the
//! native sites they saw, by object, build id and offset from the load bias
//! (the same on every rank, whatever ASLR did): a union, whose size does not
//! grow with the ranks. Rank 0 resolves each one at its own address of the
//! same object (bias + offset) and broadcasts the resolved sites; each rank
//! takes them over for its own. A site rank 0 cannot resolve (an object it
//! has not loaded, or another build of it) is resolved by the ranks that saw
//! it, as are Python sites (their line is read from the interpreter).

use std::collections::{BTreeMap, BTreeSet};
use std::os::raw::{c_int, c_void};

use mpiover_common::record::{Record, Site};
use mpiover_mpisys::consts;
use mpiover_mpisys::*;

use crate::merge_tree::{children, parent, Comm};
use crate::rt::SiteRef;

/// Where a native site is, the same on every rank: (object, build id, offset).
type Ident = (String, Option<String>, String);

fn ident(s: &Site) -> Option<Ident> {
    Some((s.module.clone()?, s.build_id.clone(), s.offset.clone()?))
}

/// Resolves the sites of `rec` (return addresses `addrs`) with the other
/// ranks; true for each site now resolved. Collective over `comm`.
pub(crate) fn agree(
    comm: &Comm,
    me: usize,
    p: usize,
    rec: &mut Record,
    addrs: &[SiteRef],
    tail_notes: bool,
) -> Result<Vec<bool>, String> {
    let native = |i: usize| {
        addrs
            .get(i)
            .is_some_and(|&at| !at.is_none() && !at.is_python())
    };
    let mut seen: BTreeSet<Ident> = (0..rec.sites.len())
        .filter(|&i| native(i))
        .filter_map(|i| ident(&rec.sites[i]))
        .collect();
    for (c, _) in children(me, p) {
        let (_, b) = comm.recv_frame(c)?;
        let theirs: Vec<Ident> =
            rmp_serde::from_slice(&b).map_err(|e| format!("sites from rank {c}: {e}"))?;
        seen.extend(theirs);
    }
    let mut table = Vec::new();
    if me == 0 {
        table = rmp_serde::to_vec_named(&resolve(seen, tail_notes))
            .map_err(|e| format!("resolved sites: {e}"))?;
    } else {
        let mine: Vec<Ident> = seen.into_iter().collect();
        let b = rmp_serde::to_vec(&mine).map_err(|e| format!("sites: {e}"))?;
        comm.send_frame(me as u32, &b, parent(me))?;
    }
    bcast(comm, &mut table)?;
    let resolved: Vec<(Ident, Site)> =
        rmp_serde::from_slice(&table).map_err(|e| format!("resolved sites: {e}"))?;
    let by: BTreeMap<Ident, Site> = resolved.into_iter().collect();
    let mut done = vec![false; rec.sites.len()];
    for (i, s) in rec.sites.iter_mut().enumerate() {
        let Some(r) = ident(s).filter(|_| native(i)).and_then(|k| by.get(&k)) else {
            continue;
        };
        s.function = r.function.clone();
        s.symbol = r.symbol.clone();
        s.file = r.file.clone();
        s.line = r.line;
        s.inlined_into = r.inlined_into.clone();
        s.note = r.note.clone();
        done[i] = true;
    }
    Ok(done)
}

/// Rank 0: each site at its own address of the same object.
fn resolve(seen: BTreeSet<Ident>, tail_notes: bool) -> Vec<(Ident, Site)> {
    let objs = crate::objects::objects();
    let mut out = Vec::new();
    for k in seen {
        let (module, build_id, offset) = &k;
        let Some(obj) = objs
            .iter()
            .find(|o| &o.path == module && &o.build_id == build_id)
        else {
            continue;
        };
        let Some(off) = offset
            .strip_prefix("0x")
            .and_then(|h| usize::from_str_radix(h, 16).ok())
        else {
            continue;
        };
        let ra = SiteRef::native(obj.bias.wrapping_add(off));
        let mut s = crate::sites::locate(0, ra, &objs);
        if s.module.as_ref() != Some(module) {
            continue;
        }
        crate::sites::symbolize(&mut s, ra);
        if tail_notes && s.note.is_none() {
            s.note = crate::tail_call::note(&objs, ra);
        }
        out.push((k, s));
    }
    out
}

/// Rank 0's bytes to every rank: the length, then the bytes.
fn bcast(comm: &Comm, bytes: &mut Vec<u8>) -> Result<(), String> {
    let mut len = (bytes.len() as u64).to_le_bytes();
    // SAFETY: 8 bytes in and out, on our duplicate communicator.
    let rc = unsafe {
        PMPI_Bcast(
            len.as_mut_ptr() as *mut c_void,
            8,
            consts::byte(),
            0,
            comm.0,
        )
    };
    if rc != 0 {
        return Err(format!("MPI_Bcast of the sites' length failed ({rc})"));
    }
    let n = c_int::try_from(u64::from_le_bytes(len)).map_err(|_| "sites over 2 GiB".to_string())?;
    bytes.resize(n as usize, 0);
    // SAFETY: `bytes` holds `n` bytes.
    let rc = unsafe {
        PMPI_Bcast(
            bytes.as_mut_ptr() as *mut c_void,
            n,
            consts::byte(),
            0,
            comm.0,
        )
    };
    (rc == 0)
        .then_some(())
        .ok_or(format!("MPI_Bcast of the sites failed ({rc})"))
}
