//! The records of the scale benchmark (`gen_records`): many sites of mixed
//! kinds on a ring, recorded online against a profile.

use mpiover_common::record::*;
use mpiover_common::rng::Rng;

use super::{empty_record, fixture_tmax, push_entry, site, EntrySpec, Times};

/// One rank of the scale benchmark: `nsites` sites of mixed kinds on a ring,
/// each with one entry of a few hundred to a few thousand calls, recorded
/// online against a profile.
pub fn scale_record(rank: u32, ranks: u32, nsites: u32, seed: u64) -> Record {
    let mut rng = Rng::new(seed ^ ((rank as u64) << 20));
    let mut rec = empty_record(
        &format!("scale-{seed}"),
        rank,
        ranks,
        &format!("node{:04}", rank / 32),
    );
    rec.app_time_s = 100.0;
    rec.profile = Some(ProfileUse {
        path: "/profiles/scale.json".into(),
        matched: true,
        q_max: Some(0.9),
        note: None,
    });
    let left = ((rank + ranks - 1) % ranks) as i32;
    let right = ((rank + 1) % ranks) as i32;
    let late_rank = 7 % ranks;
    for s in 0..nsites {
        let file = format!("/home/user/app/src/module{:02}.c", s / 20);
        let sid = s;
        rec.sites
            .push(site(sid, &file, 100 + 7 * s, &format!("kernel_{}", s / 4)));
        let kind = s % 10;
        let count = 200 + (rng.next_u64() % 1800);
        let bytes = 8u64 << (rng.next_u64() % 14);
        let base = 2e-6 + bytes as f64 * 1e-10;
        let times = Times {
            base_s: base,
            noise_s: base * 0.3,
            delay_s: 0.0,
        };
        let tmax = fixture_tmax(times);
        let (function, peer, role, completes, delay) = match kind {
            0..=2 => (
                "MPI_Recv",
                Some(left),
                None,
                None,
                if left as u32 == late_rank { 50e-6 } else { 0.0 },
            ),
            3 => ("MPI_Send", Some(right), None, None, 0.0),
            4 | 5 => ("MPI_Wait", Some(left), None, Some("MPI_Irecv"), 0.0),
            6 | 7 => (
                "MPI_Allreduce",
                None,
                None,
                None,
                if rank == late_rank { 0.0 } else { 20e-6 },
            ),
            8 => (
                "MPI_Bcast",
                None,
                Some(if rank == 0 { "root" } else { "nonroot" }),
                None,
                0.0,
            ),
            _ => ("MPI_Barrier", None, None, None, 0.0),
        };
        push_entry(
            &mut rec,
            &mut rng,
            EntrySpec {
                site: sid,
                function,
                p: ranks,
                bytes,
                peer,
                role,
                completes,
                post_site: None,
                count,
                times: Times {
                    delay_s: delay,
                    ..times
                },
                tmax_s: tmax,
            },
            true,
            256,
        );
    }
    rec.mpi_time_s += 0.01;
    rec
}
