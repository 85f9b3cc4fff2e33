//! The environment of the calibration, gathered over all ranks.

use mpiover_common::profile::{self, Binding, Environment, TimerInfo};

use crate::clock;
use crate::mpi::{self, Comm};

/// What rank 0 knows about the job after [`gather`]; every rank gets
/// `host_of` (the host index of every world rank) and its own host's counts.
pub struct Layout {
    /// Host index of every world rank.
    pub host_of: Vec<u32>,
    /// CPUs this rank may run on.
    pub my_cpus: u32,
}

/// Gather host names and bindings; the environment is complete on rank 0.
pub fn gather(world: Comm, command: Vec<String>, date: String) -> (Layout, Environment) {
    let me = mpi::rank(world);
    let p = mpi::size(world) as usize;
    let name = mpi::processor_name();
    let names = mpi::gather_strings(&name, 256, 0, world);
    let cpus = profile::cpus_allowed_list().unwrap_or_default();
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
    let layout = Layout {
        my_cpus: profile::cpu_list_len(&cpus),
        host_of: host_of.clone(),
    };

    let mut env = Environment::default();
    if me == 0 {
        let (resolution_s, cost_s) = clock::timer_properties();
        env.ranks_per_host = (0..hosts.len())
            .map(|h| host_of.iter().filter(|&&x| x as usize == h).count() as u32)
            .collect();
        env.hosts = hosts;
        env.ranks = p as u32;
        env.mpi_library = mpi::library_version();
        env.mpi_flavor = mpiover_mpisys::FLAVOR.to_string();
        env.cpu_model = profile::cpu_model();
        env.cpus = profile::cpus_online();
        env.binding = Binding {
            policy: profile::binding_policy(),
            ranks: cpu_lists,
        };
        env.timer = TimerInfo {
            name: clock::TIMER_NAME.to_string(),
            resolution_s,
            cost_s,
        };
        env.os = profile::os_release();
        env.mpi_env = profile::mpi_env();
        env.date = date;
        env.tool_version = env!("CARGO_PKG_VERSION").to_string();
        env.command = command;
    }
    (layout, env)
}
