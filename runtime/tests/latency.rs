//! The latency pool: pinning, panics, bounded waits, bad options.

use std::time::Duration;

use asym_runtime::CpuTopology;
use asym_runtime::{Error, LatencyPool, PoolOptions};

#[test]
fn pinned_threads_run_on_the_cpus_they_were_given() {
    let topo = CpuTopology::discover();
    assert!(!topo.pus.is_empty() && topo.cores >= 1);
    // Every usable CPU, in reverse so the assignment differs from the default order.
    let cores: Vec<usize> = topo.pus.iter().rev().copied().collect();
    let pool = LatencyPool::new(PoolOptions {
        threads: Some(cores.len()),
        cores: Some(cores.clone()),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(
        pool.pinned_cpus(),
        cores.iter().map(|&c| Some(c)).collect::<Vec<_>>()
    );
    for _ in 0..5 {
        let seen = pool
            .broadcast(|w| {
                // Burn a little time so the scheduler has a chance to move an unpinned thread.
                let mut x = 0u64;
                for i in 0..200_000u64 {
                    x = x.wrapping_add(i * i);
                }
                std::hint::black_box(x);
                (w.pinned_cpu, w.current_cpu())
            })
            .unwrap();
        for (i, (pinned, current)) in seen.into_iter().enumerate() {
            assert_eq!(pinned, Some(cores[i]));
            assert_eq!(
                current,
                Some(cores[i]),
                "thread {i} runs on the CPU it was pinned to"
            );
        }
    }
}

#[test]
fn a_panicking_job_is_an_error_not_a_hang() {
    let pool = LatencyPool::new(PoolOptions {
        threads: Some(2),
        ..Default::default()
    })
    .unwrap();
    let err = pool
        .broadcast(|w| {
            if w.index == 1 {
                panic!("boom on thread {}", w.index);
            }
            w.index
        })
        .unwrap_err();
    match err {
        Error::LatencyThreadPanicked {
            thread, message, ..
        } => {
            assert_eq!(thread, 1);
            assert!(message.contains("boom on thread 1"), "{message}");
        }
        other => panic!("expected a panic error, got {other:?}"),
    }
    // The pool survives the panic.
    assert_eq!(pool.broadcast(|w| w.index).unwrap(), vec![0, 1]);
    assert!(matches!(
        pool.run_on(0, |_| -> u8 { panic!("x") }),
        Err(Error::LatencyThreadPanicked { thread: 0, .. })
    ));
    assert_eq!(pool.run_on(1, |w| w.index * 10).unwrap(), 10);
}

#[test]
fn a_stuck_job_times_out_naming_the_thread() {
    let pool = LatencyPool::new(PoolOptions {
        threads: Some(2),
        timeout: Some(Duration::from_millis(200)),
        ..Default::default()
    })
    .unwrap();
    let err = pool
        .broadcast_timeout(
            |w| {
                if w.index == 0 {
                    std::thread::sleep(Duration::from_millis(600));
                }
            },
            Duration::from_millis(100),
        )
        .unwrap_err();
    match err {
        Error::Stalled { waiting_for, .. } => assert!(waiting_for.contains("[0]"), "{waiting_for}"),
        other => panic!("expected a stall, got {other:?}"),
    }
}

#[test]
fn bad_options_are_errors() {
    assert!(matches!(
        LatencyPool::new(PoolOptions {
            threads: Some(0),
            ..Default::default()
        }),
        Err(e) if e.is_argument_error()
    ));
    assert!(matches!(
        LatencyPool::new(PoolOptions { cores: Some(vec![100_000]), ..Default::default() }),
        Err(e) if e.is_argument_error() && e.to_string().contains("100000")
    ));
    assert!(matches!(
        LatencyPool::new(PoolOptions {
            cores: Some(vec![]),
            ..Default::default()
        }),
        Err(e) if e.is_argument_error()
    ));
    let pool = LatencyPool::new(PoolOptions {
        threads: Some(1),
        ..Default::default()
    })
    .unwrap();
    assert!(matches!(
        pool.run_on(5, |_| ()),
        Err(e) if e.is_argument_error()
    ));
}

#[test]
fn more_threads_than_cpus_share_them_round_robin() {
    let topo = CpuTopology::discover();
    let n = topo.pus.len() * 2 + 1;
    let pool = LatencyPool::new(PoolOptions {
        threads: Some(n),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(pool.len(), n);
    let sums = pool
        .broadcast(|w| (0..1000u64).map(|i| i * w.index as u64).sum::<u64>())
        .unwrap();
    for (i, s) in sums.into_iter().enumerate() {
        assert_eq!(s, 499_500 * i as u64);
    }
}

#[test]
fn scoped_broadcast_borrows_and_reports_panics() {
    let pool = LatencyPool::new(PoolOptions {
        threads: Some(3),
        ..Default::default()
    })
    .unwrap();
    let data: Vec<u64> = (0..3000).collect();
    let chunks: Vec<&[u64]> = data.chunks(1000).collect();
    // Each thread sums its own borrowed chunk and returns a borrow into the data.
    let sums = pool
        .broadcast_scoped(|w| (chunks[w.index].iter().sum::<u64>(), &chunks[w.index][0]))
        .unwrap();
    assert_eq!(
        sums.iter().map(|s| s.0).sum::<u64>(),
        data.iter().sum::<u64>()
    );
    assert_eq!(*sums[2].1, 2000);
    let err = pool
        .broadcast_scoped(|w| {
            if w.index == 2 {
                panic!("scoped boom")
            } else {
                w.index
            }
        })
        .unwrap_err();
    assert!(
        matches!(err, Error::LatencyThreadPanicked { thread: 2, ref message, .. } if message.contains("scoped boom"))
    );
    assert_eq!(pool.broadcast_scoped(|w| w.index).unwrap(), vec![0, 1, 2]);
}

#[test]
fn spin_barrier_separates_rounds_and_elects_one_leader_each() {
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    // More parties than the 2 cores of the dev machine: waiters must yield to the late ones.
    let parties = 6;
    let rounds = 2_000;
    let barrier = asym_runtime::SpinBarrier::new(parties, Duration::from_secs(60));
    let arrived = AtomicUsize::new(0);
    let leaders = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..parties {
            s.spawn(|| {
                for round in 0..rounds {
                    arrived.fetch_add(1, Relaxed);
                    let led = barrier
                        .wait_with(|| {
                            // Every party has arrived when the leader runs.
                            assert_eq!(arrived.load(Relaxed), parties * (round + 1));
                            leaders.fetch_add(1, Relaxed);
                        })
                        .unwrap();
                    // Nobody leaves before everyone arrived, nobody arrives twice in a round.
                    let seen = arrived.load(Relaxed);
                    assert!(seen >= parties * (round + 1) && seen <= parties * (round + 2));
                    let _ = led;
                    barrier.wait().unwrap();
                }
            });
        }
    });
    // One leader per wait: two waits per round.
    assert_eq!(leaders.load(Relaxed), rounds);
    assert!(!barrier.is_poisoned());
}

#[test]
fn a_failing_party_poisons_the_barrier_instead_of_leaving_the_others_waiting() {
    let barrier = asym_runtime::SpinBarrier::new(4, Duration::from_secs(60));
    let started = std::time::Instant::now();
    let results: Vec<Result<(), Error>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let barrier = &barrier;
                s.spawn(move || {
                    let guard = barrier.guard();
                    for round in 0..10 {
                        if i == 0 && round == 3 {
                            // Fails: the guard drops unfinished.
                            return Err(Error::InvalidArgument("party 0 gave up".into()));
                        }
                        barrier.wait()?;
                    }
                    guard.finish();
                    Ok(())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "no party waited out the timeout"
    );
    for r in &results[1..] {
        assert!(matches!(r, Err(Error::ThreadLost { .. })), "{r:?}");
    }
    // A panicking party poisons it too.
    let barrier = asym_runtime::SpinBarrier::new(2, Duration::from_secs(60));
    std::thread::scope(|s| {
        let b = &barrier;
        let panicking = s.spawn(move || {
            let _guard = b.guard();
            panic!("party fails");
        });
        assert!(panicking.join().is_err());
        assert!(matches!(barrier.wait(), Err(Error::ThreadLost { .. })));
    });
}

#[test]
fn a_party_that_never_comes_is_a_stall() {
    let barrier = asym_runtime::SpinBarrier::new(3, Duration::from_millis(200));
    let results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2).map(|_| s.spawn(|| barrier.wait())).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(
        results
            .iter()
            .any(|r| matches!(r, Err(Error::Stalled { .. }))),
        "{results:?}"
    );
    assert!(results.iter().all(|r| r.is_err()));
}
