//! The environment of the calibration, gathered over all ranks.

use mpiover_common::host;
use mpiover_common::profile::{Binding, Environment, TimerInfo};

use crate::clock;
use crate::mpi::{self, Comm};

/// What rank 0 knows about the job after [`gather`]; every rank gets
/// `host_of` (the host index of every world rank) and its own host's counts.
pub struct HostLayout {
    /// Host index of every world rank.
    pub host_of: Vec<u32>,
    /// CPUs the ranks on this rank's host may run on together (the union of
    /// their affinity lists; 0 when unknown). Ranks bound to one core each
    /// are not oversubscribed although each of them sees a single CPU.
    pub host_cpus: u32,
}

/// CPU ids of a Linux CPU list ("0-3,8"); ranges capped at 65536 CPUs.
fn cpu_ids(list: &str) -> Vec<u32> {
    let mut v = Vec::new();
    for part in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
                    v.extend(a..=b.min(a.saturating_add(65_535)));
                }
            }
            None => v.extend(part.parse::<u32>().ok()),
        }
    }
    v
}

/// Gather host names and bindings; the environment is complete on rank 0.
pub fn gather(world: Comm, command: Vec<String>, date: String) -> (HostLayout, Environment) {
    let me = mpi::rank(world);
    let p = mpi::size(world) as usize;
    let name = mpi::processor_name();
    let names = mpi::gather_strings(&name, 256, 0, world);
    let cpus = host::cpus_allowed_list().unwrap_or_default();
    let cpu_lists = mpi::gather_strings(&cpus, 1024, 0, world);

    // Host index of every rank, computed on rank 0 and broadcast.
    let mut host_of = vec![0u8; 4 * p];
    let mut hosts: Vec<String> = Vec::new();
    if me == 0 {
        for (r, n) in names.iter().enumerate() {
            let h = match hosts.iter().position(|x| x == n) {
                Some(i) => i,
                None => {
                    hosts.push(n.clone());
                    hosts.len() - 1
                }
            };
            host_of[4 * r..4 * r + 4].copy_from_slice(&(h as u32).to_le_bytes());
        }
    }
    mpi::bcast_bytes(&mut host_of, 0, world);
    let host_of: Vec<u32> = host_of
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    // CPUs per host: the union of its ranks' lists, on rank 0, broadcast.
    let mut host_cpus = vec![0u8; 4 * p];
    if me == 0 {
        let mut union: Vec<std::collections::BTreeSet<u32>> = vec![Default::default(); hosts.len()];
        for (r, list) in cpu_lists.iter().enumerate() {
            union[host_of[r] as usize].extend(cpu_ids(list));
        }
        for r in 0..p {
            let n = union[host_of[r] as usize].len() as u32;
            host_cpus[4 * r..4 * r + 4].copy_from_slice(&n.to_le_bytes());
        }
    }
    mpi::bcast_bytes(&mut host_cpus, 0, world);
    let layout = HostLayout {
        host_cpus: host_cpus
            .get(4 * me as usize..4 * me as usize + 4)
            .map_or(0, |c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        host_of: host_of.clone(),
    };

    let mut env = Environment::default();
    if me == 0 {
        let (timer_name, resolution_s, cost_s) = clock::timer_properties();
        env.ranks_per_host = (0..hosts.len())
            .map(|h| host_of.iter().filter(|&&x| x as usize == h).count() as u32)
            .collect();
        env.hosts = hosts;
        env.ranks = p as u32;
        env.mpi_library = mpi::library_version();
        env.mpi_flavor = mpiover_mpisys::FLAVOR.to_string();
        env.cpu_model = host::cpu_model();
        env.cpus = host::cpus_online();
        env.binding = Binding {
            policy: host::binding_policy(),
            ranks: cpu_lists,
        };
        env.timer = TimerInfo {
            name: timer_name.to_string(),
            resolution_s,
            cost_s,
        };
        env.os = host::os_release();
        env.mpi_env = host::mpi_env();
        env.date = date;
        env.tool_version = env!("CARGO_PKG_VERSION").to_string();
        env.command = command;
    }
    (layout, env)
}

#[cfg(test)]
mod tests {
    use super::cpu_ids;

    #[test]
    fn cpu_lists_parse_to_ids() {
        assert_eq!(cpu_ids("0-3,8"), vec![0, 1, 2, 3, 8]);
        assert_eq!(cpu_ids("1"), vec![1]);
        assert_eq!(cpu_ids(""), Vec::<u32>::new());
        assert_eq!(cpu_ids("x,2-1,5"), vec![5]);
    }
}
