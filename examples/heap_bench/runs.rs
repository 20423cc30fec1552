//! The runs behind heap_bench's rows: the latency threads' and the Cooperative heap's
//! cycles, the device heap's, the peers', and those over a device set or range lanes.

use super::*;

pub(super) fn keys_for(pattern: &str, n: usize, seed: u64) -> Result<Vec<u32>> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    Ok(match pattern {
        "random" => (0..n).map(|_| rng.gen()).collect(),
        "ascending" => (0..n as u32).collect(),
        "descending" => (0..n as u32).rev().collect(),
        other => {
            return Err(Error::InvalidArgument(format!(
                "unknown pattern {other:?}: expected random, ascending, descending or all"
            )))
        }
    })
}

/// A heap the latency threads share: the concurrent heap (CpuOnly) or the Cooperative one.
pub(super) trait SharedHeap: Sync {
    fn insert(&self, keys: &[u32]) -> Result<()>;
    fn delete_min(&self, n: usize) -> Result<Vec<u32>>;
    fn len(&self) -> usize;
}

impl SharedHeap for ConcurrentGeneralizedHeap<u32> {
    fn insert(&self, keys: &[u32]) -> Result<()> {
        ConcurrentGeneralizedHeap::insert(self, keys)
    }
    fn delete_min(&self, n: usize) -> Result<Vec<u32>> {
        ConcurrentGeneralizedHeap::delete_min(self, n)
    }
    fn len(&self) -> usize {
        ConcurrentGeneralizedHeap::len(self)
    }
}

impl SharedHeap for CooperativeHeap<u32> {
    fn insert(&self, keys: &[u32]) -> Result<()> {
        CooperativeHeap::insert(self, keys)
    }
    fn delete_min(&self, n: usize) -> Result<Vec<u32>> {
        CooperativeHeap::delete_min(self, n)
    }
    fn len(&self) -> usize {
        CooperativeHeap::len(self)
    }
}

/// Insert everything, then delete everything, on the latency threads; checks every thread's
/// deletions are sorted and every key comes back once.
pub(super) fn concurrent_run(
    pool: &LatencyPool,
    heap: &impl SharedHeap,
    batch: usize,
    keys: &[u32],
) -> Result<(f64, f64, bool)> {
    let threads = pool.len();
    let share = keys.len().div_ceil(threads);
    let barrier = Barrier::new(threads);
    let insert_ns = AtomicU64::new(0);
    let started = Instant::now();
    pool.broadcast_scoped(|w| -> Result<()> {
        barrier.wait();
        let part = keys.chunks(share).nth(w.index).unwrap_or(&[]);
        for chunk in part.chunks(batch) {
            heap.insert(chunk)?;
        }
        barrier.wait();
        if w.index == 0 {
            insert_ns.store(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        }
        Ok(())
    })?
    .into_iter()
    .collect::<Result<()>>()?;
    let insert_ms = insert_ns.load(Ordering::Relaxed) as f64 / 1e6;
    let started = Instant::now();
    let outs = pool
        .broadcast_scoped(|_| -> Result<Vec<u32>> {
            let mut mine = Vec::new();
            loop {
                let got = heap.delete_min(batch)?;
                if got.is_empty() {
                    return Ok(mine);
                }
                mine.extend(got);
            }
        })?
        .into_iter()
        .collect::<Result<Vec<_>>>()?;
    let delete_ms = started.elapsed().as_secs_f64() * 1e3;
    // Deletes only: every thread's successive batches never go down.
    let mut ok = outs.iter().all(|o| o.windows(2).all(|w| w[0] <= w[1]));
    let mut all: Vec<u32> = outs.into_iter().flatten().collect();
    all.sort_unstable();
    let mut want = keys.to_vec();
    want.sort_unstable();
    ok &= all == want;
    Ok((insert_ms, delete_ms, ok))
}

/// The seed's mixed workload: preload, then pairs of (insert K, delete K) from every thread.
pub(super) fn mixed_run(
    pool: &LatencyPool,
    heap: &impl SharedHeap,
    batch: usize,
    preload: &[u32],
    pairs: usize,
    seed: u64,
) -> Result<(f64, bool)> {
    let threads = pool.len();
    heap.insert(preload)?;
    let barrier = Barrier::new(threads);
    let started = Instant::now();
    let results = pool
        .broadcast_scoped(|w| -> Result<(Vec<u32>, Vec<u32>)> {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ (w.index as u64 + 1) << 32);
            let (mut ins, mut del) = (Vec::new(), Vec::new());
            barrier.wait();
            for _ in (w.index..pairs).step_by(threads) {
                let keys: Vec<u32> = (0..batch).map(|_| rng.gen()).collect();
                heap.insert(&keys)?;
                ins.extend(keys);
                del.extend(heap.delete_min(batch)?);
            }
            Ok((ins, del))
        })?
        .into_iter()
        .collect::<Result<Vec<_>>>()?;
    let ms = started.elapsed().as_secs_f64() * 1e3;
    // Every key inserted (preload included) is either deleted once or still in the heap.
    let mut added: Vec<u32> = preload.to_vec();
    let mut removed = Vec::new();
    for (i, d) in results {
        added.extend(i);
        removed.extend(d);
    }
    removed.extend(heap.delete_min(heap.len())?);
    added.sort_unstable();
    removed.sort_unstable();
    Ok((ms, added == removed))
}

/// Insert everything, then delete everything, on the device; checks the deletions come back
/// sorted and complete. Returns (insert ms, delete ms, verified); the kernel build and a
/// first launch are done before the clock starts.
/// With `preload` keys in the heap first (inserted before the clock starts), the delete
/// takes as many keys as were inserted: the smallest of both.
pub(super) fn device_run<T: BenchKey>(
    heap: &DeviceGeneralizedHeap<T>,
    keys: &[T],
    preload: &[T],
    policy: BulkPolicy,
) -> Result<(f64, f64, bool)> {
    trace("warm-up");
    warm_up(heap)?;
    heap.insert(preload)?;
    heap.set_bulk_policy(policy);
    trace(format_args!("insert of {} keys", keys.len()));
    let t = Instant::now();
    heap.insert(keys)?;
    let insert_ms = t.elapsed().as_secs_f64() * 1e3;
    trace("delete");
    let t = Instant::now();
    let out = heap.delete_min(keys.len())?;
    let delete_ms = t.elapsed().as_secs_f64() * 1e3;
    trace("check");
    let mut want: Vec<T> = keys.iter().chain(preload).copied().collect();
    want.par_sort_unstable();
    heap.set_bulk_policy(BulkPolicy::Auto);
    let rest = heap.delete_min(preload.len())?;
    Ok((
        insert_ms,
        delete_ms,
        out == want[..keys.len()] && rest == want[keys.len()..] && heap.is_empty(),
    ))
}

/// The mixed workload on the device: one launch of all pairs on the preloaded heap.
pub(super) fn device_mixed_run(
    heap: &DeviceGeneralizedHeap<u32>,
    preload: &[u32],
    pairs: usize,
    seed: u64,
) -> Result<(f64, bool)> {
    warm_up(heap)?;
    heap.insert(preload)?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5eed);
    let keys: Vec<u32> = (0..pairs * heap.batch()).map(|_| rng.gen()).collect();
    let t = Instant::now();
    let dels = heap.insert_delete_pairs(&keys)?;
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let mut ok = dels.iter().all(|d| d.windows(2).all(|w| w[0] <= w[1]));
    let mut removed: Vec<u32> = dels.into_iter().flatten().collect();
    removed.extend(heap.delete_min(heap.len())?);
    let mut added: Vec<u32> = preload.iter().chain(&keys).copied().collect();
    added.sort_unstable();
    removed.sort_unstable();
    ok &= added == removed;
    Ok((ms, ok))
}

/// A first launch of the operations and of a bulk call (PoCL compiles a kernel for its
/// work-group size at the first launch); leaves the heap empty, with `BulkPolicy::Auto`.
pub(super) fn warm_up<T: BenchKey>(heap: &DeviceGeneralizedHeap<T>) -> Result<()> {
    let k = heap.batch();
    for warm in [BulkPolicy::Never, BulkPolicy::Always] {
        heap.set_bulk_policy(warm);
        heap.insert(&(0..2 * k as u32).map(T::from_u32).collect::<Vec<_>>())?;
        let back = heap.delete_min(2 * k)?;
        if back.len() != 2 * k || !heap.is_empty() {
            return Err(Error::corrupted("the device heap", "its warm-up lost keys"));
        }
    }
    heap.set_bulk_policy(BulkPolicy::Auto);
    Ok(())
}

/// std `BinaryHeap` and the sequential generalized heap, one core each, and a parallel sort.
pub(super) fn peer_rows(keys: &[u32], pattern: &'static str, batch: usize) -> Result<Vec<Row>> {
    let n = keys.len();
    let t = Instant::now();
    let mut bh = std::collections::BinaryHeap::with_capacity(n);
    for &k in keys {
        bh.push(std::cmp::Reverse(k));
    }
    let ins = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let mut prev = 0u32;
    let mut ok = bh.len() == n;
    while let Some(std::cmp::Reverse(k)) = bh.pop() {
        ok &= k >= prev;
        prev = k;
    }
    let mut rows = vec![Row {
        mode: "peer:binaryheap".into(),
        pattern,
        batch,
        threads: 1,
        work_group: None,
        insert_ms: ins,
        delete_ms: t.elapsed().as_secs_f64() * 1e3,
        verified: ok,
        device_stats: None,
    }];
    let t = Instant::now();
    let mut gh = GeneralizedHeap::new(batch)?;
    gh.insert(keys)?;
    let ins = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let out = gh.delete_min(n);
    let del = t.elapsed().as_secs_f64() * 1e3;
    let ok = out.len() == n && out.windows(2).all(|w| w[0] <= w[1]);
    rows.push(Row {
        mode: "seq:gheap".into(),
        pattern,
        batch,
        threads: 1,
        work_group: None,
        insert_ms: ins,
        delete_ms: del,
        verified: ok,
        device_stats: None,
    });
    // What a user wanting every key in order would do instead: sort (the copy is the
    // "insert", the sort the "delete"), with rayon on every core.
    let t = Instant::now();
    let mut sorted = keys.to_vec();
    let ins = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    sorted.par_sort_unstable();
    let del = t.elapsed().as_secs_f64() * 1e3;
    rows.push(Row {
        mode: "peer:par_sort".into(),
        pattern,
        batch,
        threads: rayon::current_num_threads(),
        work_group: None,
        insert_ms: ins,
        delete_ms: del,
        verified: sorted.len() == n && sorted.windows(2).all(|w| w[0] <= w[1]),
        device_stats: None,
    });
    Ok(rows)
}

/// Insert all, then delete all, with bulk calls: on each device of `set` alone (rows
/// gpu@i:auto) and on the heap spread over them all (gpu-set:auto), after two untimed calls
/// that build the programs and measure the members' speeds for the split.
pub(super) fn set_rows<T: BenchKey>(
    set: &DeviceSet,
    batch: usize,
    pattern: &'static str,
    keys: &[u32],
    emit: &mut dyn FnMut(Row),
) -> Result<()> {
    for (i, rt) in set.members().iter().enumerate() {
        let run = gpu_row::<T>(
            rt,
            batch,
            (None, None),
            InsertDirection::TopDown,
            BulkPolicy::Auto,
            keys,
            &[],
        )?;
        emit(Row {
            mode: format!("gpu@{i}:auto"),
            pattern,
            batch,
            threads: run.shape.0,
            work_group: Some(run.shape.1),
            insert_ms: run.insert_ms,
            delete_ms: run.delete_ms,
            verified: run.verified,
            device_stats: Some(json!({ "device": rt.profile().label(), "heap": run.stats })),
        });
    }
    let config = DeviceHeapConfig {
        initial_nodes: keys.len() / batch + 2,
        ..DeviceHeapConfig::new(batch)
    };
    trace("set: making the heap");
    let heap = SpreadHeap::<T>::new(set, &config)?;
    let keys: Vec<T> = keys.iter().map(|&k| T::from_u32(k)).collect();
    let mut want = keys.clone();
    want.par_sort_unstable();
    // The split the set chooses from measured speeds, then every member an equal share (what
    // spreading costs where the set would not spread).
    let even = vec![1.0; set.len()];
    for (mode, shares) in [("gpu-set:auto", None), ("gpu-set:even", Some(&even[..]))] {
        heap.set_shares(shares)?;
        let cycle = set_cycle(&heap, &keys, &[], &want)?;
        emit(Row {
            mode: mode.into(),
            pattern,
            batch,
            threads: set.len(),
            work_group: Some(0),
            insert_ms: cycle.insert_ms,
            delete_ms: cycle.delete_ms,
            verified: cycle.verified,
            device_stats: Some(json!({
                "members": cycle.inserted.iter().map(|m| json!({
                    "device": m.worker, "keys": m.items, "share": m.items as f64 / want.len().max(1) as f64,
                    "insert_ms": m.busy_s * 1e3, "keys_per_s": m.items_per_s,
                })).collect::<Vec<_>>(),
                // What each member's delete took, and the host's routing of the insert (its
                // counting pass over the keys) and of the delete (its first touch of the
                // answer, which the members then fill, each its own part).
                "delete_ms": cycle.deleted.iter().map(|m| m.busy_s * 1e3).collect::<Vec<_>>(),
                "routing_ms": [cycle.insert_routing_s * 1e3, cycle.delete_routing_s * 1e3],
            })),
        });
    }
    Ok(())
}

/// Insert all, then delete all, with the seed's operations on a heap of `lanes` range lanes
/// of `rt`'s device (row gpu-lanesL:td or :bu), each lane's launch `shape` where given; on a
/// heap holding `preload` first where that is not empty (the delete then takes the smallest
/// keys of both, which lie in the lowest lanes).
#[allow(clippy::too_many_arguments)]
pub(super) fn lanes_row<T: BenchKey>(
    rt: &Runtime,
    lanes: usize,
    batch: usize,
    shape: (Option<usize>, Option<usize>),
    direction: InsertDirection,
    pattern: &'static str,
    keys: &[u32],
    preload: &[u32],
) -> Result<Row> {
    let config = DeviceHeapConfig {
        initial_nodes: (keys.len() + preload.len()) / batch + 2,
        work_groups: shape.0,
        work_group_size: shape.1,
        bulk: BulkPolicy::Never,
        ..DeviceHeapConfig::new(batch).with_direction(direction)
    };
    trace(format_args!("lanes {lanes}: making the heap"));
    let heap = SpreadHeap::<T>::lanes(rt, lanes, &config)?;
    heap.set_shares(Some(&vec![1.0; lanes]))?;
    let keys: Vec<T> = keys.iter().map(|&k| T::from_u32(k)).collect();
    let preload: Vec<T> = preload.iter().map(|&k| T::from_u32(k)).collect();
    let mut want: Vec<T> = keys.iter().chain(&preload).copied().collect();
    want.par_sort_unstable();
    let cycle = set_cycle(&heap, &keys, &preload, &want)?;
    let shapes = heap.launch_shapes();
    Ok(Row {
        mode: named(&format!("gpu-lanes{lanes}"), direction),
        pattern,
        batch,
        threads: shapes.iter().map(|s| s.0).sum(),
        work_group: Some(shapes[0].1),
        insert_ms: cycle.insert_ms,
        delete_ms: cycle.delete_ms,
        verified: cycle.verified,
        device_stats: Some(json!({
            "lanes": lanes,
            "groups_per_lane": shapes[0].0,
            "insert_ms": cycle.inserted.iter().map(|m| m.busy_s * 1e3).collect::<Vec<_>>(),
            "keys": cycle.inserted.iter().map(|m| m.items).collect::<Vec<_>>(),
            "delete_ms": cycle.deleted.iter().map(|m| m.busy_s * 1e3).collect::<Vec<_>>(),
            "delete_keys": cycle.deleted.iter().map(|m| m.items).collect::<Vec<_>>(),
            "routing_ms": [cycle.insert_routing_s * 1e3, cycle.delete_routing_s * 1e3],
        })),
    })
}

/// A timed insert-all + delete-all on a spread heap: times, each member's report after the
/// insert and after the delete, and whether the delete returned every key in order.
pub(super) struct SetCycle {
    pub(super) insert_ms: f64,
    pub(super) delete_ms: f64,
    pub(super) insert_routing_s: f64,
    pub(super) delete_routing_s: f64,
    pub(super) inserted: Vec<MemberReport>,
    pub(super) deleted: Vec<MemberReport>,
    pub(super) verified: bool,
}

/// Two untimed insert-all + delete-all cycles of `keys` on a spread heap (the first builds
/// the programs and measures the members), then `preload` inserted (where not empty) and a
/// timed insert of `keys` and delete of as many, checked against `want` (`keys` and
/// `preload` sorted together): the delete returns its first part, the rest the heap keeps.
pub(super) fn set_cycle<T: BenchKey>(
    heap: &SpreadHeap<T>,
    keys: &[T],
    preload: &[T],
    want: &[T],
) -> Result<SetCycle> {
    for i in 0..2 {
        trace(format_args!("set: untimed cycle {i}"));
        heap.insert(keys)?;
        heap.delete_min(keys.len())?;
    }
    trace("set: preload");
    heap.insert(preload)?;
    trace("set: insert");
    let t = Instant::now();
    heap.insert(keys)?;
    let insert_ms = t.elapsed().as_secs_f64() * 1e3;
    let insert_routing_s = heap.last_routing_s();
    let inserted = heap.members();
    trace("set: delete");
    let t = Instant::now();
    let out = heap.delete_min(keys.len())?;
    let delete_ms = t.elapsed().as_secs_f64() * 1e3;
    let (delete_routing_s, deleted) = (heap.last_routing_s(), heap.members());
    let rest = heap.delete_min(preload.len())?;
    Ok(SetCycle {
        insert_ms,
        delete_ms,
        insert_routing_s,
        delete_routing_s,
        inserted,
        deleted,
        verified: out == want[..keys.len()] && rest == want[keys.len()..] && heap.is_empty(),
    })
}
