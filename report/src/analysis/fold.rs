//! Folding one rank's record into the aggregate.

use super::*;

impl Agg {
    pub(crate) fn add_record(
        &mut self,
        rec: &Record,
        tmax: Option<&dyn TmaxSource>,
        rendezvous_bytes: u64,
    ) {
        let unit = rec.timer.unit_s;
        let site_of = |id: u32| -> &Site {
            match rec.sites.get(id as usize) {
                Some(s) if s.id == id => s,
                _ => rec
                    .sites
                    .iter()
                    .find(|s| s.id == id)
                    .expect("checked by check_record"),
            }
        };
        let mut event_time = 0.0;
        let mut rank_overhead: Option<f64> = None;
        // Completion site -> the point-to-point requests completed there:
        // (peer, posting line, whether a receive).
        let mut posts_done: HashMap<u32, Vec<(u32, String, bool)>> = HashMap::default();
        for e in &rec.entries {
            if let (Some(done), Some(peer)) = (e.completed_at, e.peer.filter(|&p| p >= 0)) {
                if class_of(&e.function) == Some(EventClass::Post) {
                    let at = Loc::of(site_of(e.site), &e.function).display();
                    let v = posts_done.entry(done).or_default();
                    let item = (peer as u32, at, is_receive_post(&e.function));
                    if !v.contains(&item) {
                        v.push(item);
                    }
                }
            }
        }
        for e in &rec.entries {
            let site = site_of(e.site);
            let key = SiteKey {
                loc: Loc::of(site, &e.function),
                function: if e.function == "other" {
                    None
                } else {
                    // Records written before names were demangled.
                    site.function
                        .as_deref()
                        .map(|f| mpiover_common::demangle::demangle(f).into_owned())
                },
                mpi: e.function.clone(),
            };
            let ev = evaluate(e, unit, tmax);
            let class = class_of(&e.function);
            let state = entry_wait_state(
                &e.function,
                e.bytes,
                e.role.as_deref(),
                e.completes.as_deref(),
                e.requests,
                rendezvous_bytes,
            );
            if e.function != "other" {
                count_lookup(&mut self.lookups, &ev, e.count, 1);
                if self.want_keys {
                    self.add_key(&key, e, unit, rec.rank);
                }
            }
            let acc = self
                .sites
                .entry(key.clone())
                .or_insert_with(|| SiteAcc::new(rec.rank, site));
            if rec.rank < acc.shown_by {
                acc.shown_by = rec.rank;
                acc.site = site.clone();
            }
            acc.calls += e.count;
            acc.time.add(e.sum_s);
            acc.bytes += e.bytes as u128 * e.count as u128;
            if e.count > 0 {
                acc.min = acc.min.min(e.min_s);
                acc.max = acc.max.max(e.max_s);
            }
            site_eval(acc, &ev, e.count, state);
            if let Some(done) = e.completed_at {
                let at = Loc::of(site_of(done), &e.function).display();
                *acc.completed_at.entry(at).or_default() += e.count;
            }
            let waits = is_peer_wait(state);
            if let (Some(done), true) = (
                posts_done.get(&e.site),
                class == Some(EventClass::Completion),
            ) {
                if e.post_site.is_none() {
                    for (_, at, _) in done {
                        *acc.posted_at.entry(at.clone()).or_default() += e.count;
                    }
                }
                if waits && e.peer.is_none() && ev.tmax.is_some() && ev.overhead > 0.0 {
                    // Several peers: whom it waited for is decided once every
                    // rank's wait at this site is known.
                    let want_recv = state == Some(WaitState::LateSender);
                    let candidates: Vec<(u32, Option<String>)> = done
                        .iter()
                        .filter(|(_, _, recv)| *recv == want_recv)
                        .map(|(p, at, _)| (*p, Some(at.clone())))
                        .collect();
                    if !candidates.is_empty() {
                        acc.multi.push(MultiWait {
                            rank: rec.rank,
                            overhead: ev.overhead,
                            time: e.sum_s,
                            calls: e.count,
                            candidates,
                        });
                    }
                }
            }
            let p2p_peer = e
                .peer
                .filter(|&p| p >= 0 && waits_on_its_peer(&e.function))
                .map(|p| p as u32);
            if let Some(peer) = p2p_peer {
                // A completion's late peer and posting line (a blocking
                // call's late peer is in `peers` already).
                let completion = class == Some(EventClass::Completion);
                if completion && waits && ev.tmax.is_some() && ev.overhead > 0.0 {
                    // The posting line: the completion's own when all its
                    // requests shared one, else that of the requests to or
                    // from this peer of the kind that waits.
                    let want_recv = state == Some(WaitState::LateSender);
                    let at = e
                        .post_site
                        .map(|ps| Loc::of(site_of(ps), &e.function).display())
                        .or_else(|| {
                            posts_done.get(&e.site)?.iter().find_map(|(p, at, recv)| {
                                (*p == peer && *recv == want_recv).then(|| at.clone())
                            })
                        });
                    acc.waited_for
                        .entry((peer, at))
                        .or_default()
                        .add(ev.overhead);
                }
                let pa = acc.peers.entry(peer).or_default();
                pa.time.add(e.sum_s);
                pa.calls += e.count;
                let cell = self.wait.entry((rec.rank, peer)).or_default();
                cell.time.add(e.sum_s);
                cell.calls += e.count;
                if waits && ev.tmax.is_some() {
                    pa.overhead.add(ev.overhead);
                    cell.overhead.add(ev.overhead);
                }
            }
            if self.want_dist {
                let mut bins = std::mem::take(&mut self.scratch);
                bins.clear();
                for b in &e.hist.buckets {
                    bins.push((self.bucket_bin(b.index(), unit), b.count()));
                }
                let acc = self.sites.get_mut(&key).expect("inserted above");
                for &(bin, c) in &bins {
                    acc.dist[bin] += c;
                }
                self.scratch = bins;
            }
            let acc = self.sites.get_mut(&key).expect("inserted above");
            if let Some(c) = &e.completes {
                acc.completes.insert(c.clone());
            }
            if let Some(ps) = e.post_site {
                let s = site_of(ps);
                *acc.posted_at
                    .entry(Loc::of(s, &e.function).display())
                    .or_default() += e.count;
            }
            // One row per rank and site: a record's entries are folded one
            // after another and its rank is unique in a run, so the site's
            // last row is this record's if it has one.
            if acc.per_rank.last().map(|r| r.rank) != Some(rec.rank) {
                acc.per_rank.push(RankSite {
                    rank: rec.rank,
                    calls: 0,
                    time: 0.0,
                    overhead: None,
                    root: false,
                });
            }
            let l = acc.per_rank.last_mut().expect("pushed above");
            l.calls += e.count;
            l.time += e.sum_s;
            l.root |= e.role.as_deref() == Some("root");
            if ev.tmax.is_some() {
                *l.overhead.get_or_insert(0.0) += ev.overhead;
                *rank_overhead.get_or_insert(0.0) += ev.overhead;
            }
            event_time += e.sum_s;
        }
        self.folded_keys += rec.folded.keys;
        self.folded_calls += rec.folded.calls;
        // Start-up and shut-down are not the application's communication:
        // they go on their own line, out of the MPI time every %MPI divides by.
        let (mut startup, mut shutdown) = (0.0, 0.0);
        for f in &rec.functions {
            match lifecycle(&f.function) {
                Some(Lifecycle::StartUp) => startup += f.time_s,
                Some(Lifecycle::ShutDown) => shutdown += f.time_s,
                None => {}
            }
        }
        self.ranks.push(RankAcc {
            rank: rec.rank,
            host: rec.host.clone(),
            app_time: rec.app_time_s,
            mpi_time: (rec.mpi_time_s - startup - shutdown).max(0.0),
            startup,
            shutdown,
            event_time,
            overhead: rank_overhead,
            calls: rec.tool.calls,
            cost_per_call: rec.tool.cost_per_call_s,
            merge_s: rec.tool.merge_s.filter(|s| s.is_finite() && *s >= 0.0),
            py_cost: rec.tool.python.as_ref().map(|p| p.cost_per_call_s),
            py_calls: rec.tool.python.as_ref().map_or(0, |p| p.calls),
            finished: rec.finished.clone(),
            command: rec.command.clone(),
            mpi_library: rec.mpi_library.clone(),
            thread_level: rec.thread_level.clone(),
            start: rec.start_unix_s,
            end: rec.end_unix_s,
            timer_name: rec.timer.name.clone(),
            timer_resolution: rec.timer.resolution_s,
            timer_cost: rec.timer.cost_s,
            depth: rec.tool.depth,
            profile: rec
                .profile
                .as_ref()
                .map(|p| (p.path.clone(), p.matched, p.q_max, p.note.clone())),
            warnings: rec.warnings.clone(),
        });
    }

    /// Adds one entry to its key's merged entry (`want_keys`).
    fn add_key(&mut self, key: &SiteKey, e: &Entry, unit: f64, rank: u32) {
        let id: KeyId = (
            key.clone(),
            e.function.clone(),
            e.p,
            e.bytes,
            e.role.clone(),
            e.completes.clone(),
            e.requests,
        );
        let mut entry = e.clone();
        (entry.site, entry.peer, entry.post_site, entry.completed_at) = (0, None, None, None);
        let k = KeyAcc {
            rank,
            unit_s: unit,
            entries: 1,
            entry,
        };
        merge_key(&mut self.keys, id, k);
    }

    pub(crate) fn merge(&mut self, o: Agg) {
        for (id, k) in o.keys {
            merge_key(&mut self.keys, id, k);
        }
        for (k, v) in o.sites {
            match self.sites.get_mut(&k) {
                Some(a) => a.merge(v),
                None => {
                    self.sites.insert(k, v);
                }
            }
        }
        self.ranks.extend(o.ranks);
        for (k, v) in o.wait {
            let c = self.wait.entry(k).or_default();
            c.overhead.merge(v.overhead);
            c.time.merge(v.time);
            c.calls += v.calls;
        }
        let l = &mut self.lookups;
        l.entries += o.lookups.entries;
        l.calls += o.lookups.calls;
        l.out_of_range_entries += o.lookups.out_of_range_entries;
        l.out_of_range_calls += o.lookups.out_of_range_calls;
        l.missing_entries += o.lookups.missing_entries;
        l.missing_calls += o.lookups.missing_calls;
        self.folded_keys += o.folded_keys;
        self.folded_calls += o.folded_calls;
    }
}

/// One entry's (or merged key's) tmax lookup, counted.
pub(crate) fn count_lookup(l: &mut Lookups, ev: &EntryEval, calls: u64, entries: u64) {
    match ev.tmax {
        Some(t) => {
            l.entries += entries;
            l.calls += calls;
            if t.out_of_range {
                l.out_of_range_entries += entries;
                l.out_of_range_calls += calls;
            }
        }
        None => {
            l.missing_entries += entries;
            l.missing_calls += calls;
        }
    }
}

/// What an entry's tmax adds to its site: overhead (by wait state), calls
/// over tmax, the range and basis of tmax, composition rules, and why a
/// tmax is missing.
pub(crate) fn site_eval(acc: &mut SiteAcc, ev: &EntryEval, count: u64, state: Option<WaitState>) {
    if let Some(Tmax {
        s: t,
        out_of_range: oor,
        basis,
        ..
    }) = ev.tmax
    {
        acc.basis = weaker(acc.basis, basis);
        acc.overhead.add(ev.overhead);
        acc.tmax_sum.add(t * count as f64);
        acc.calls_over.add(ev.calls_over);
        acc.calls_with_tmax += count;
        if oor {
            acc.out_of_range_calls += count;
        }
        acc.tmax_min = acc.tmax_min.min(t);
        acc.tmax_max = acc.tmax_max.max(t);
        acc.states.entry(state).or_default().add(ev.overhead);
        if let Some(rule) = ev.tmax.and_then(|t| t.composed) {
            *acc.composed.entry(rule).or_default() += count;
        }
    }
    if let Some(why) = &ev.missing {
        *acc.missing.entry(why.clone()).or_default() += count;
    }
}

fn merge_key(keys: &mut HashMap<KeyId, KeyAcc>, id: KeyId, k: KeyAcc) {
    match keys.entry(id) {
        std::collections::hash_map::Entry::Occupied(mut o) => o.get_mut().merge(k),
        std::collections::hash_map::Entry::Vacant(v) => {
            v.insert(k);
        }
    }
}
