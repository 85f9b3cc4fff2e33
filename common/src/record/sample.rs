//! A record for tests of the readers (run directory, job log), beside the
//! record so that neither reader's tests import the other's.

use super::{Entry, Folded, Record, Site, Timer, Tool, RECORD_SCHEMA};
use crate::histogram::Histogram;

/// A small valid record: one site, one `MPI_Recv` entry.
pub(crate) fn record(rank: u32, ranks: u32, run_id: &str) -> Record {
    let mut hist = Histogram::default();
    hist.record(1000);
    Record {
        schema: RECORD_SCHEMA.into(),
        run_id: run_id.into(),
        rank,
        ranks,
        host: "h".into(),
        pid: 1,
        mpi_library: "Open MPI v4.1.4".into(),
        thread_level: "single".into(),
        command: vec!["./a".into()],
        start_unix_s: 0.0,
        end_unix_s: 1.0,
        app_time_s: 1.0,
        mpi_time_s: 0.5,
        finished: "finalize".into(),
        timer: Timer {
            name: "rdtsc".into(),
            unit_s: 1e-9,
            resolution_s: 1e-9,
            cost_s: 2e-8,
        },
        tool: Tool {
            version: "0.1.0".into(),
            cost_per_call_s: 5e-8,
            calls: 10,
            depth: 1,
            max_keys: 4096,
            merge_s: None,
            python: None,
        },
        profile: None,
        sites: vec![Site {
            id: 0,
            address: "0x1234".into(),
            module: None,
            build_id: None,
            offset: None,
            function: Some("main".into()),
            symbol: None,
            file: Some("a.c".into()),
            line: Some(3),
            inlined_into: vec![],
            note: None,
            native: None,
            language: None,
        }],
        functions: vec![],
        entries: vec![Entry {
            site: 0,
            function: "MPI_Recv".into(),
            p: ranks,
            bytes: 8,
            peer: Some(0),
            cross_host: None,
            role: None,
            completes: None,
            post_site: None,
            requests: None,
            completed_at: None,
            count: 1,
            sum_s: 1e-6,
            min_s: 1e-6,
            max_s: 1e-6,
            tmax_s: None,
            overhead_s: None,
            tmax_out_of_range: false,
            tmax_basis: None,
            tmax_composed: None,
            tmax_missing: None,
            hist,
        }],
        folded: Folded::default(),
        warnings: vec![],
        eager_limit: None,
        regions: Vec::new(),
        regions_folded: Default::default(),
    }
}
