//! The calibrated profile, schema `mpiover-profile/1`, and its lookup.
//!
//! `mpiover-calibrate` measures, for every communication event, a sample of
//! run-times under ideal conditions and reduces it to `tmax`, the longest time
//! one call may take without overhead (the overhead paper §4-9). The profile holds one
//! [`ProfileEntry`] per measured base point `(function, p, bytes, role, same_host)`,
//! the [`Environment`] it was measured in and the [`Method`] used, so that a
//! reader can judge the numbers (Hoefler & Belli, rules 9 and 10). The interposer
//! loads it at `MPI_Init` ([`Profile::load`]), checks that the run matches
//! ([`Profile::matches`]) and asks [`Profile::tmax`] once per new key.
//!
//! # File layout
//!
//! ```text
//! {"schema": "mpiover-profile/1",
//!  "environment": {hosts, ranks, ranks_per_host, mpi_library, cpu_model, binding, timer, date,
//!                  tool_version, command, ...},
//!  "method": {sync, clock_sync, window, q_max, alpha, warmup, min_samples, max_samples,
//!             entry_budget_s, time_budget_s, seed, functions, procs, sizes, ...},
//!  "runs": [{id, date, command, seed, wall_s, kept_windows, kept_window_s, ...}],
//!                                                             one per calibration run merged in
//!  "entries": [{function, p, bytes, role, same_host, hosts, n, n_invalid, n_late, n_overrun,
//!               n_preempted, min_s, median_s,
//!               median_ci_s, max_s, q90_s, q99_s, tmax_s, model, lambda, chi2, df, critical,
//!               accepted, fallback, bin_width_s, window_s, stop, sum_s, elapsed_s, note,
//!               runs: [{run, n, n_invalid, min_s, median_s, tmax_s, ...}],
//!               samples: {unit_s, base_s, count, runs, ticks}}],   the kept samples ([`Samples`])
//!  "skipped": [{function, p, bytes, reason}]}                 jobs not measured (budget)}
//! ```
//!
//! All times are seconds. The file is written with one entry per line so that
//! it stays readable and diffable; any JSON reader can load it. `n` counts the
//! kept samples, `n_invalid` the samples dropped because their window was
//! invalid, split by reason (`n_late`: a rank started late; else
//! `n_overrun`: a call ended after the window; else `n_preempted`: a rank was
//! preempted during its call); `model` is null and `fallback` true when every error model was
//! rejected by the chi-square test (tmax is then the empirical q_max
//! quantile); `stop` says why sampling ended (`stable`: the stopping rule of
//! the statistical core; `max_samples`; `entry_budget`; `time_budget`;
//! `window_max`).
//!
//! # For the interposer
//!
//! ```no_run
//! use mpiover_common::profile::{Environment, Profile};
//! let prof = Profile::load("profile.json")?;                 // errors name the file and the problem
//! let here = Environment { mpi_library: "Open MPI v4.1.4".into(), ..Default::default() };
//! if let Err(m) = prof.matches(&here) { eprintln!("mpiover: profile does not match: {m}"); }
//! if let Some(l) = prof.tmax("MPI_Recv", 16, 8, None) {       // once per new key
//!     let _overhead = (2.0e-5 - l.tmax_s).max(0.0);            // l.out_of_range: flag it
//! }
//! # Ok::<(), mpiover_common::profile::ProfileError>(())
//! ```
//!
//! The first lookup builds the index (one table per function/role, binary
//! searches after that); [`Index`] can also be built and kept separately.
//!
//! # Keys: what an entry's `function`, `p`, `bytes` and `role` mean
//!
//! Function names are the C names of [`crate::functions::CATALOGUE`] (`MPI_Send`).
//!
//! | function | p | bytes | role | sample (whose local durations) |
//! |---|---|---|---|---|
//! | `MPI_Send`, `MPI_Ssend` | 2 | message | none | both ranks of a ping-pong pair (ping and pong) |
//! | `MPI_Recv` | 2 | message | none | both ranks: the receive of the ping (posted with the send) and of the pong (posted after the own send) |
//! | `MPI_Isend`, `MPI_Irecv` | 2 | message | none | posting the request, both ranks |
//! | `MPI_Wait` | 2 | message | `MPI_Isend` or `MPI_Irecv` | the wait completing that request, right after posting |
//! | `MPI_Sendrecv` | 2 | message (each way) | none | both ranks, exchanging |
//! | `MPI_Bcast`, `MPI_Reduce`, `MPI_Gather(v)`, `MPI_Scatter(v)` | comm size | per-rank block | `root` / `nonroot` | root alone / all non-roots pooled |
//! | `MPI_Allreduce`, `MPI_Allgather(v)`, `MPI_Alltoall(v)`, `MPI_Scan`, `MPI_Exscan`, `MPI_Reduce_scatter(_block)`, `MPI_Barrier` | comm size | per-rank block (Barrier: 0) | none | all ranks pooled |
//!
//! *bytes* is the size of the per-rank block the call's arguments describe
//! (count x type size): the message for point-to-point calls, the buffer for
//! Bcast/Reduce/Allreduce/Scan/Exscan, `sendcount` of Gather/Allgather (on the
//! root too), `recvcount` of Scatter and Reduce_scatter_block, the per-pair
//! block of Alltoall; for the `v` variants and Reduce_scatter the mean block,
//! total / p. This is the "message size" of the usual MPI benchmarks; it can
//! be computed from the arguments on every rank without knowing the others'.
//!
//! Point-to-point entries do not depend on the communicator size: they are
//! measured on a pair, stored with `p = 2`, and the lookup ignores `p` for
//! them (never flagged out of range because of `p`). `same_host` says whether
//! the pair shared a host; on a multi-host calibration both kinds exist.
//!
//! Non-blocking point-to-point: the post (`MPI_Isend`, `MPI_Irecv`) is keyed by
//! its own name; the completion is keyed `function = "MPI_Wait"` with `role`
//! = the completed request's function (`"MPI_Irecv"`, `"MPI_Isend"`), i.e.
//! what the run record calls `completes`. A completion through
//! `Waitall/Waitany/Test` of one request may be looked up as `MPI_Wait`.
//!
//! # Lookup: interpolation and its axes
//!
//! `Tf(p, b)` is defined at the base points and interpolated bilinearly in
//! `(ln p, ln b)` (the overhead paper §8):
//!
//! - **bytes on a log scale.** The base sizes are log-spaced (1, 10, 20, ...,
//!   100, 200, ..., 4 MiB); communication time is close to linear in b only
//!   within a decade, and a linear scale would make everything between 1 MB and
//!   2 MB depend on two far apart points the same way as 1 B to 10 B. `b = 0` is
//!   treated as `b = 1` (a zero-byte message costs what a one-byte one does).
//! - **p on a log scale.** Tree-based collectives cost ~ log p, so linear
//!   interpolation in ln p is exact for them; for algorithms linear in p
//!   (Alltoall) interpolating in ln p overestimates slightly between base
//!   points (at most ~2 % between 2^n and 1.5 * 2^n), while interpolating in p
//!   would underestimate the log-p ones. Overestimating tmax is the safe side:
//!   it never invents overhead.
//!
//! Each `p` row is interpolated over its own byte list (the grid may be
//! ragged: a budget-limited run, a merge), then the two rows around `p` are
//! interpolated. The result is exact at base points and, between two adjacent
//! base points, lies between their values and is monotone (a convex
//! combination). Outside the measured range the nearest edge is used and
//! [`Lookup::out_of_range`] is set: never an extrapolation.
//!
//! # Merging runs
//!
//! Run-to-run (mpirun-to-mpirun) variation of a few percent is normal (seed
//! 000). [`Profile::merge`] combines two profiles of the same environment
//! (unless forced), the same q_max and the same `method.sync` (never forced:
//! barrier-synchronized samples hold the barrier's exit skew). Entries with the
//! same key keep every run's sample summary in `runs`, and the combined fields
//! are ([`combine_runs`]):
//!
//! - summed: `n`, `n_invalid`, `n_late`, `n_overrun`, `n_preempted`, and
//!   `sum_s`, `elapsed_s` (none when a run lacks them: a sum over part of the
//!   runs would not describe the `n` samples beside it);
//! - envelope: `min_s` the minimum, `max_s` the maximum, `median_ci_s` the
//!   union of the runs' intervals; `q90_s`, `q99_s` the **maximum** of the
//!   runs' quantiles (the pooled sample's quantile lies between the runs'
//!   smallest and largest, so this is an upper bound); `median_s` the median
//!   of the runs' medians (also between the runs' smallest and largest);
//!   `window_s` and `hosts` the largest;
//! - from the run with the largest tmax: `tmax_s` (the **maximum**), `model`,
//!   `lambda`, `chi2`, `df`, `critical`, `bin_width_s`, `stop`; `accepted`
//!   only if every run's model was accepted, `fallback` if any run fell back;
//!   `note` the runs' notes prefixed with their run ids.
//!
//! Taking the maximum tmax means that run-to-run variation the machine shows
//! under ideal conditions is never reported as overhead of an application.
//! The merged top-level fields are not a fit of the pooled samples (those are
//! not kept); each run's own summary stays in `runs`.

/// The schema string of this format; readers refuse anything else.
pub const PROFILE_SCHEMA: &str = "mpiover-profile/1";

mod env_match;
mod error;
mod fit_model;
#[cfg(feature = "stats")]
pub mod fitted;
mod index;
mod io;
mod load;
mod lookup;
mod merge;
mod samples;
mod schema;

pub use error::*;
pub use fit_model::{FitModel, TailTest};
pub use index::*;
pub use load::HostLoad;
pub use merge::*;
pub use samples::{Samples, SamplesError};
pub use schema::*;

#[cfg(test)]
mod tests;
