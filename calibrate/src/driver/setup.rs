//! Step 1: everything the measurements need, decided or exchanged once.

use mpiover_common::host::{iso8601_utc, unix_now};
use mpiover_common::profile::{Method, SyncMethod, WindowRule};
use mpiover_common::settings::Var;

use super::{Driver, Fail, Topology};
use crate::args::{Args, SyncArg};
use crate::clock::{self, Clock};
use crate::measure::{self, Settings, Sync};
use crate::output::{start_profile, test_notes};
use crate::pattern::Pattern;
use crate::plan::{make_plan, Plan};
use crate::stat::StatOpts;
use crate::{env, grid, mpi};

impl<'a> Driver<'a> {
    pub(super) fn start(a: &'a Args, world: mpi::Comm) -> Result<Driver<'a>, Fail> {
        let t_start = clock::raw_now();
        let me = mpi::rank(world);
        let world_size = mpi::size(world) as u32;
        let plan = make_plan(a, world_size).map_err(Fail)?;
        clock::init_duration_timer().map_err(Fail)?;
        let mut clock = Clock::new(me, &mpi::processor_name()).map_err(Fail)?;
        let delay = match Var::CalibrateTestDelay.get_nonblank() {
            Some(v) => Some(measure::parse_delay(&v).map_err(Fail)?),
            None => None,
        };
        let command: Vec<String> = std::env::args().collect();
        let date = iso8601_utc(unix_now());
        let (layout, environment) = env::gather(world, command.clone(), date.clone());
        let mut topo = Topology::new(world, me, layout);
        let jobs = grid::plan(
            &plan.kinds,
            &plan.procs,
            &plan.ks,
            &plan.sizes,
            &topo.pairs,
            world_size,
        );
        topo.split_sizes(world, me, &jobs);

        // Seed: given, stored (resume), or from the clock; rank 0 decides.
        let mut seed_buf = [0u8; 8];
        let mut profile = None;
        let mut setup_err = String::new();
        if me == 0 {
            let seed = a
                .seed
                .unwrap_or_else(|| (unix_now() * 1e6) as u64 ^ ((std::process::id() as u64) << 32));
            let method = method_of(a, &plan, seed);
            match start_profile(a, environment, method, &date, &command, world_size) {
                Ok(p) => {
                    seed_buf = p.method.seed.to_le_bytes();
                    profile = Some(p);
                }
                Err(e) => setup_err = e,
            }
        }
        let mut ok = [u8::from(setup_err.is_empty())];
        mpi::bcast_bytes(&mut ok, 0, world);
        if ok[0] == 0 {
            return Err(Fail(setup_err));
        }
        mpi::bcast_bytes(&mut seed_buf, 0, world);
        let seed = u64::from_le_bytes(seed_buf);

        if a.sync == SyncArg::Window {
            clock::initial_sync(
                &mut clock,
                world,
                a.sync_fitpoints,
                a.sync_exchanges,
                a.sync_span,
            );
        }

        let resolution_s = profile
            .as_ref()
            .map_or(1e-9, |p: &mpiover_common::profile::Profile| {
                p.environment.timer.resolution_s.max(1e-9)
            });
        let stats = StatOpts {
            q_max: a.q_max,
            alpha: a.alpha,
            resolution_s,
            min_samples: a.min_samples,
            max_samples: plan.max_samples,
            rel_tol: a.rel_tol,
        };
        let settings = Settings {
            sync: if a.sync == SyncArg::Window {
                Sync::Window
            } else {
                Sync::Barrier
            },
            warmup: a.warmup,
            stats,
            entry_budget_s: plan.entry_budget,
            extension: None,
            window_min_s: 5e-6,
            window_max_s: 1.0,
            lead_s: 2e-4,
            yield_wait: false,
            window_slack_s: 0.0,
            delay,
            world_rank: me,
            sync_exchanges: a.sync_exchanges,
        };
        Ok(Driver {
            a,
            world,
            me,
            world_size,
            t_start,
            plan,
            clock,
            topo,
            jobs,
            profile,
            seed,
            stats,
            settings,
            protocol: None,
            queue: Vec::new(),
            qpos: 0,
            retried: Default::default(),
            jobs_started: 0,
            round_len: 0,
            rounds_done: Default::default(),
            partial: Default::default(),
            rounds_t0: None,
            progress: None,
            run_id: String::new(),
            prev_wall: 0.0,
            load_start: if me == 0 {
                crate::load::read()
            } else {
                Default::default()
            },
            cpu_start_s: crate::load::own_cpu_s(),
        })
    }
}

/// How this run measures, as the profile states it (Hoefler & Belli, rules
/// 9 and 10: the method goes with the result).
fn method_of(a: &Args, plan: &Plan, seed: u64) -> Method {
    Method {
        sync: match a.sync {
            SyncArg::Window => SyncMethod::Window,
            SyncArg::Barrier => SyncMethod::Barrier,
        },
        clock_sync: None,
        window: (a.sync == SyncArg::Window).then(|| WindowRule {
            initial: "2 x the slowest warm-up call (over ranks) + 10 us".into(),
            growth: "doubled when more than 1/4 of a batch's windows are invalid".into(),
            min_s: 5e-6,
            max_s: 1.0,
            lead_s: 2e-4,
        }),
        q_max: a.q_max,
        alpha: a.alpha,
        rel_tol: Some(a.rel_tol),
        warmup: a.warmup,
        min_samples: a.min_samples,
        max_samples: plan.max_samples,
        entry_budget_s: plan.entry_budget,
        time_budget_s: plan.time_budget,
        pace_s: plan.pace,
        rounds: a.rounds,
        spread_s: a.spread,
        seed,
        quick: a.quick,
        functions: plan.functions.clone(),
        procs: plan.procs.clone(),
        exchange_neighbours: if plan.kinds.contains(&Pattern::Exchange) {
            plan.ks.clone()
        } else {
            Vec::new()
        },
        sizes: plan.sizes.clone(),
        reduction: "MPI_UINT8_T with MPI_SUM".into(),
        sample: "each rank's own local duration of its call; point-to-point: a ping-pong per \
                 window, every call of both ranks timed (receives pool the one-way receive and the \
                 receive of the reply), who pings alternates; rooted collectives: the root alone, \
                 and all non-root ranks pooled; other collectives: all ranks pooled; samples of \
                 invalid windows are dropped: a rank started late, overran the window, or was \
                 preempted during its call (involuntary context switch, getrusage; kept and noted \
                 when more than half of a batch was, and not checked when ranks outnumber cores)"
            .into(),
        communicators:
            "size p: the first p ranks in host-interleaved order; pairs: rank 0 with the \
                        next rank on its host (same_host) and with the first rank on another host"
                .into(),
        notes: test_notes(),
    }
}
