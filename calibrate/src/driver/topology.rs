//! Which ranks measure what: the point-to-point pairs (rank 0 with the next
//! rank on its host, and with the first rank on another host) and one
//! communicator per size the jobs need, made of the first ranks of the
//! host-interleaved order.

use crate::env::HostLayout;
use crate::grid::{Job, Pair};
use crate::mpi;
use crate::plan::interleaved;

pub(super) struct Topology {
    pub(super) layout: HostLayout,
    /// Ranks in host-interleaved order.
    pub(super) order: Vec<i32>,
    pub(super) same_peer: Option<i32>,
    pub(super) cross_peer: Option<i32>,
    /// The pair kinds this job's hosts allow.
    pub(super) pairs: Vec<Pair>,
    /// Each pair's communicator (`None` on ranks not in it).
    pub(super) pair_comms: Vec<(Pair, Option<mpi::Comm>)>,
    /// One communicator per size (`None` on ranks not in it).
    comms: Vec<(u32, Option<mpi::Comm>)>,
}

impl Topology {
    /// The pairs (collective over `world`).
    pub(super) fn new(world: mpi::Comm, me: i32, layout: HostLayout) -> Topology {
        let world_size = layout.host_of.len() as i32;
        let order = interleaved(&layout.host_of);
        let same_peer = (1..world_size).find(|&r| layout.host_of[r as usize] == layout.host_of[0]);
        let cross_peer = (1..world_size).find(|&r| layout.host_of[r as usize] != layout.host_of[0]);
        let mut pairs = Vec::new();
        let mut pair_comms = Vec::new();
        for (pair, peer) in [(Pair::SameHost, same_peer), (Pair::CrossHost, cross_peer)] {
            if let Some(peer) = peer {
                let color = (me == 0 || me == peer).then_some(0);
                pairs.push(pair);
                pair_comms.push((pair, mpi::split(world, color, if me == 0 { 0 } else { 1 })));
            }
        }
        Topology {
            layout,
            order,
            same_peer,
            cross_peer,
            pairs,
            pair_comms,
            comms: Vec::new(),
        }
    }

    /// One communicator per size `jobs` need (collectives: p; exchanges:
    /// their ranks); collective over `world`.
    pub(super) fn split_sizes(&mut self, world: mpi::Comm, me: i32, jobs: &[Job]) {
        let mut sizes: Vec<u32> = jobs
            .iter()
            .filter(|j| j.pair.is_none())
            .map(|j| j.ranks)
            .collect();
        sizes.sort_unstable();
        sizes.dedup();
        let pos = self.order.iter().position(|&r| r == me).unwrap_or(0) as i32;
        for &p in &sizes {
            let color = (pos < p as i32).then_some(0);
            self.comms.push((p, mpi::split(world, color, pos)));
        }
    }

    /// Hosts the first `p` ranks of the order span.
    pub(super) fn hosts_in(&self, p: u32) -> u32 {
        let mut h: Vec<u32> = self
            .order
            .iter()
            .take(p as usize)
            .map(|&r| self.layout.host_of[r as usize])
            .collect();
        h.sort_unstable();
        h.dedup();
        h.len() as u32
    }

    /// Hosts a job's entries were measured across.
    pub(super) fn hosts_of(&self, job: &Job) -> u32 {
        match job.pair {
            Some(Pair::SameHost) => 1,
            Some(Pair::CrossHost) => 2,
            None => self.hosts_in(job.ranks),
        }
    }

    /// This rank's communicator of `job`, if it takes part.
    pub(super) fn comm_for(&self, job: &Job) -> Option<mpi::Comm> {
        match job.pair {
            Some(pair) => self.pair_comms.iter().find(|(p, _)| *p == pair)?.1,
            None => self.comms.iter().find(|(p, _)| *p == job.ranks)?.1,
        }
    }

    /// How many of `job`'s ranks share this rank's host.
    pub(super) fn local_members(&self, job: &Job, me: i32) -> u32 {
        let members: Vec<i32> = match job.pair {
            Some(Pair::SameHost) => vec![0, self.same_peer.unwrap_or(0)],
            Some(Pair::CrossHost) => vec![0, self.cross_peer.unwrap_or(0)],
            None => self
                .order
                .iter()
                .take(job.ranks as usize)
                .copied()
                .collect(),
        };
        let host_of = &self.layout.host_of;
        let mine = host_of[me as usize];
        members
            .iter()
            .filter(|&&r| host_of[r as usize] == mine)
            .count() as u32
    }
}
