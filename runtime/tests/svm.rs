//! SVM buffers, maps, launches and program builds on the default device, for every transport
//! under test (`ASYM_SVM=coarse cargo test` runs the coarse path alone).

mod common;

use asym_runtime::{
    select_device, Error, KernelParams, KernelSource, Runtime, RuntimeOptions, SvmBuffer, SvmKind,
    Transport,
};
use rand::Rng;

/// Adds one to every element of `buf` with the runtime's test kernel, and waits.
fn add_one_on_device(rt: &Runtime, buf: &SvmBuffer<u32>) {
    let n = buf.len();
    let mut k = rt.kernel(&asym_kernels::RUNTIME, "asym_add_one").unwrap();
    k.arg_svm("data", buf)
        .unwrap()
        .arg_scalar("n", n as u32)
        .unwrap();
    k.launch(n.next_multiple_of(64), Some(64))
        .unwrap()
        .wait()
        .unwrap();
}

#[test]
fn round_trip_host_device_host() {
    for t in common::transports() {
        let rt = common::runtime(t);
        for n in [1usize, 7, 1000, 4097] {
            let mut buf = rt.alloc::<u32>(n).unwrap();
            assert_eq!(buf.kind(), t.svm_kind());
            let data: Vec<u32> = (0..n).map(|_| rand::thread_rng().gen()).collect();
            buf.write(&data).unwrap();
            add_one_on_device(&rt, &buf);
            let back = buf.read().unwrap();
            let want: Vec<u32> = data.iter().map(|v| v.wrapping_add(1)).collect();
            assert_eq!(back, want, "transport {t}, n = {n}");
        }
    }
}

#[test]
fn read_maps_show_the_device_contents_and_leave_them_in_place() {
    // A read map between launches, twice: each shows what the kernels left, and the next
    // launch works on those contents (a read map copies nothing back, so a stale host copy
    // could only show if the map read the wrong side).
    for t in common::transports() {
        let rt = common::runtime(t);
        let n = 5000;
        let mut buf = rt.alloc::<u32>(n).unwrap();
        let data: Vec<u32> = (0..n as u32)
            .map(|i| i.wrapping_mul(2_654_435_761))
            .collect();
        buf.write(&data).unwrap();
        for round in 1..=3u32 {
            add_one_on_device(&rt, &buf);
            let map = buf.map_read().unwrap();
            assert!(
                map.iter()
                    .zip(&data)
                    .all(|(&got, &v)| got == v.wrapping_add(round)),
                "transport {t}, round {round}"
            );
            map.unmap().unwrap();
        }
        assert_eq!(buf.read().unwrap()[n - 1], data[n - 1].wrapping_add(3));
    }
}

#[test]
fn copy_engine_uploads_land_where_asked_and_feed_kernels() {
    for t in common::transports() {
        let rt = common::runtime(t);
        // Buffers on the main queue and on a queue of their own (pipeline stages use both).
        let side = rt.new_queue().unwrap();
        for on_side in [false, true] {
            let n = 5000usize;
            let mut buf = if on_side {
                rt.alloc_on::<u32>(n, &side).unwrap()
            } else {
                rt.alloc::<u32>(n).unwrap()
            };
            let data: Vec<u32> = (0..n).map(|_| rand::thread_rng().gen()).collect();
            buf.copy_from_host(0, &data[..3000]).unwrap();
            buf.copy_from_host(3000, &data[3000..]).unwrap();
            buf.copy_from_host::<u32>(n, &[]).unwrap();
            let mut k = rt.kernel(&asym_kernels::RUNTIME, "asym_add_one").unwrap();
            k.arg_svm("data", &buf)
                .unwrap()
                .arg_scalar("n", n as u32)
                .unwrap();
            k.launch(n.next_multiple_of(64), Some(64))
                .unwrap()
                .wait()
                .unwrap();
            let want: Vec<u32> = data.iter().map(|v| v.wrapping_add(1)).collect();
            assert_eq!(buf.read().unwrap(), want, "{t}, own queue {on_side}");
            // Out of range: an error, and the buffer is unchanged.
            for (at, len) in [(n - 1, 2), (n + 1, 0), (usize::MAX, 1)] {
                assert!(
                    matches!(
                        buf.copy_from_host(at, &vec![0u32; len]),
                        Err(e) if e.is_argument_error()
                    ),
                    "{t} at {at} len {len}"
                );
            }
            // Elements of another size: an error.
            assert!(matches!(
                buf.copy_from_host(0, &[0u64]),
                Err(e) if e.is_argument_error()
            ));
            // Refused while a launch may use the buffer.
            let launch = k.launch(n.next_multiple_of(64), Some(64)).unwrap();
            assert!(matches!(
                buf.copy_from_host(0, &data[..1]),
                Err(Error::Busy(_))
            ));
            launch.wait().unwrap();
            let want: Vec<u32> = data.iter().map(|v| v.wrapping_add(2)).collect();
            assert_eq!(buf.read().unwrap(), want, "{t}, own queue {on_side}");
        }
    }
}

#[test]
fn ranged_reads_return_what_a_kernel_left() {
    for t in common::transports() {
        let rt = common::runtime(t);
        let n = 4097usize;
        let mut buf = rt.alloc::<u32>(n).unwrap();
        let data: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2654435761)).collect();
        buf.write(&data).unwrap();
        add_one_on_device(&rt, &buf);
        let want: Vec<u32> = data.iter().map(|v| v.wrapping_add(1)).collect();
        for (at, len) in [(0, n), (0, 1), (1000, 3000), (n - 1, 1), (n, 0), (17, 0)] {
            assert_eq!(
                buf.read_range(at, len).unwrap(),
                &want[at..at + len],
                "{t} {at}+{len}"
            );
        }
        for (at, len) in [(n, 1), (4000, 98), (usize::MAX, 2)] {
            assert!(
                matches!(buf.read_range(at, len), Err(e) if e.is_argument_error()),
                "{t} {at}+{len}"
            );
        }
        // The same bytes as another element type of the same size; other sizes are refused.
        let as_i32: Vec<i32> = want[5..905].iter().map(|&v| v as i32).collect();
        assert_eq!(buf.read_range_as::<i32>(5, 900).unwrap(), as_i32, "{t}");
        assert!(matches!(
            buf.read_range_as::<u64>(0, 2),
            Err(e) if e.is_argument_error()
        ));
        // Past 4 MiB the destination's pages are touched in parallel before the copy; an
        // unaligned start and an odd length, whole.
        let big = (9 << 20) / 4 + 3;
        let mut buf = rt.alloc::<u32>(big).unwrap();
        let data: Vec<u32> = (0..big as u32).map(|i| i ^ 0x5bd1_e995).collect();
        buf.write(&data).unwrap();
        add_one_on_device(&rt, &buf);
        let got = buf.read_range(1, big - 1).unwrap();
        assert_eq!(got.len(), big - 1, "{t}");
        assert!(
            got.iter()
                .zip(&data[1..])
                .all(|(&g, &d)| g == d.wrapping_add(1)),
            "{t}: a large ranged read differs"
        );
        // A large ranged write (a mapped range, parallel streaming stores) and a small one
        // (the copy engine), read back whole.
        let fresh: Vec<i32> = (0..big as i32 - 5).map(|i| -i).collect();
        buf.write_range(5, &fresh).unwrap();
        buf.write_range(0, &[9u32, 8, 7]).unwrap();
        let whole = buf.read().unwrap();
        assert_eq!(whole[..3], [9, 8, 7], "{t}");
        assert_eq!(whole[3..5], [data[3] + 1, data[4] + 1], "{t}");
        assert!(
            whole[5..].iter().zip(&fresh).all(|(&w, &f)| w == f as u32),
            "{t}: a large ranged write differs"
        );
        assert!(matches!(
            buf.write_range(6, &fresh),
            Err(e) if e.is_argument_error()
        ));
    }
}

#[test]
fn a_ranged_map_writes_its_range_only() {
    for t in common::transports() {
        let rt = common::runtime(t);
        let n = 5000usize;
        let mut buf = rt.alloc::<u32>(n).unwrap();
        let data: Vec<u32> = (0..n as u32).collect();
        buf.write(&data).unwrap();
        add_one_on_device(&rt, &buf);
        let (at, len) = (1203, 2001);
        {
            let mut map = buf.map_range_for_overwrite(at, len).unwrap();
            assert_eq!(map.len(), len, "{t}");
            for (i, v) in map.iter_mut().enumerate() {
                *v = 7_000_000 + i as u32;
            }
            map.unmap().unwrap();
        }
        add_one_on_device(&rt, &buf);
        let got = buf.read().unwrap();
        for (i, &g) in got.iter().enumerate() {
            let want = if (at..at + len).contains(&i) {
                7_000_001 + (i - at) as u32
            } else {
                i as u32 + 2
            };
            assert_eq!(g, want, "{t}: element {i}");
        }
        assert!(buf.map_range_for_overwrite(n, 0).unwrap().is_empty());
        assert!(matches!(
            buf.map_range_for_overwrite(n - 10, 11),
            Err(e) if e.is_argument_error()
        ));
    }
}

#[test]
fn empty_buffer_is_usable() {
    for t in common::transports() {
        let rt = common::runtime(t);
        let mut buf = rt.alloc::<u32>(0).unwrap();
        assert!(buf.is_empty());
        assert_eq!(buf.read().unwrap(), Vec::<u32>::new());
        assert!(matches!(buf.write(&[1]), Err(e) if e.is_argument_error()));
    }
}

#[test]
fn host_and_kernel_never_share_plain_access() {
    for t in common::transports() {
        let rt = common::runtime(t);
        let mut buf = rt.alloc::<u32>(16).unwrap();
        let mut k = rt.kernel(&asym_kernels::RUNTIME, "asym_add_one").unwrap();
        k.arg_svm("data", &buf)
            .unwrap()
            .arg_scalar("n", 16u32)
            .unwrap();
        {
            let _map = buf.map().unwrap();
            // The kernel holds the buffer as an argument: launching while mapped is refused.
            assert!(
                matches!(k.launch(16, None), Err(Error::Busy(_))),
                "transport {t}"
            );
        }
        let mut launch = k.launch(16, None).unwrap();
        launch.wait_for(std::time::Duration::from_secs(30)).unwrap();
        assert_eq!(buf.launches_in_flight(), 0);
        assert_eq!(buf.read().unwrap(), vec![1; 16]);
    }
}

#[test]
fn atomics_only_on_fine_buffers() {
    for t in common::transports() {
        let rt = common::runtime(t);
        let buf = rt.alloc::<u32>(4).unwrap();
        match t {
            Transport::Fine => assert_eq!(buf.atomics().unwrap().len(), 4),
            Transport::Coarse => assert!(matches!(buf.atomics(), Err(e) if e.is_argument_error())),
        }
        let coarse = rt.alloc_kind::<u32>(4, SvmKind::Coarse).unwrap();
        assert!(coarse.atomics().is_err());
    }
}

#[test]
fn broken_kernel_reports_the_build_log() {
    let rt = common::runtime(common::transports()[0]);
    let broken = KernelSource::new(
        "broken.cl",
        "kernel void f(__global uint *p) { p[0] = undefined_name; }",
    );
    match rt.program(&broken) {
        Err(Error::Build {
            device,
            program,
            log,
            options,
        }) => {
            assert_eq!(program, "broken.cl");
            assert_eq!(device, rt.profile().label());
            assert!(
                log.contains("undefined_name"),
                "log should name the error: {log}"
            );
            assert!(options.contains("-cl-std="));
        }
        other => panic!("expected a build error, got {other:?}"),
    }
    let msg = rt.program(&broken).unwrap_err().to_string();
    assert!(
        msg.contains("undefined_name") && msg.contains("broken.cl"),
        "{msg}"
    );
}

#[test]
fn programs_are_cached_and_kernel_names_checked() {
    let rt = common::runtime(common::transports()[0]);
    let a = rt.program(&asym_kernels::RUNTIME).unwrap();
    let b = rt.program(&asym_kernels::RUNTIME).unwrap();
    assert_eq!(
        format!("{a:?}"),
        format!("{b:?}"),
        "the second build comes from the cache"
    );
    let err = rt
        .kernel(&asym_kernels::RUNTIME, "no_such_kernel")
        .unwrap_err();
    assert!(err.to_string().contains("no_such_kernel"), "{err}");
}

#[test]
fn bad_launch_sizes_are_errors() {
    let rt = common::runtime(common::transports()[0]);
    let buf = rt.alloc::<u32>(8).unwrap();
    let mut k = rt.kernel(&asym_kernels::RUNTIME, "asym_noop").unwrap();
    k.arg_svm("data", &buf).unwrap();
    assert!(matches!(k.launch(0, None), Err(e) if e.is_argument_error()));
    assert!(matches!(
        k.launch(10, Some(4)),
        Err(e) if e.is_argument_error()
    ));
    k.launch(8, Some(8)).unwrap().wait().unwrap();
}

/// Launches enqueued without a submission run once a later launch submits the queue, or
/// once a wait (or a drop) does: none is left waiting for a flush that never comes.
#[test]
fn unflushed_launches_run_when_waited_for_or_dropped() {
    for t in common::transports() {
        let rt = common::runtime(t);
        let mut data = rt.alloc::<u32>(256).unwrap();
        let mut k = rt.kernel(&asym_kernels::RUNTIME, "asym_add_one").unwrap();
        k.arg_svm("data", &data)
            .unwrap()
            .arg_scalar("n", 256u32)
            .unwrap();
        // Two unflushed, then one submitting all three.
        let a = k.launch_unflushed(256, None).unwrap();
        let b = k.launch_unflushed(256, None).unwrap();
        let c = k.launch(256, None).unwrap();
        for l in [a, b, c] {
            l.wait().unwrap();
        }
        // Alone, waited for; alone, dropped.
        k.launch_unflushed(256, None).unwrap().wait().unwrap();
        drop(k.launch_unflushed(256, None).unwrap());
        assert_eq!(data.read().unwrap(), vec![5; 256], "transport {t}");
    }
}

#[test]
fn kernels_follow_pointers_stored_in_svm() {
    for t in common::transports() {
        let rt = common::runtime(t);
        let mut target = rt.alloc::<u32>(100).unwrap();
        target.write(&(0..100).collect::<Vec<u32>>()).unwrap();
        let mut table = rt.alloc::<u64>(1).unwrap();
        table.write(&[target.svm_address()]).unwrap();
        let mut k = rt
            .kernel(&asym_kernels::RUNTIME, "asym_follow_pointer")
            .unwrap();
        k.arg_svm("table", &table)
            .unwrap()
            .arg_scalar("n", 100u32)
            .unwrap();
        k.use_indirect_svm(&target).unwrap();
        // The target is in use by the launch (until it is seen complete) though no argument.
        let launch = k.launch(128, None).unwrap();
        assert_eq!(target.launches_in_flight(), 1);
        assert!(matches!(target.map(), Err(Error::Busy(_))));
        launch.wait().unwrap();
        assert_eq!(
            target.read().unwrap(),
            (1..=100).collect::<Vec<u32>>(),
            "{t}"
        );
    }
}

/// A buffer of one runtime is refused as an argument of another runtime's kernel (another
/// context: its pointer means nothing there), directly or reached through a pointer; a
/// runtime sharing the context (another queue) takes it.
#[test]
fn buffers_of_another_context_are_refused() {
    let t = common::transports()[0];
    let (rt, other) = (common::runtime(t), common::runtime(t));
    let theirs = other.alloc::<u32>(64).unwrap();
    let mut k = rt.kernel(&asym_kernels::RUNTIME, "asym_add_one").unwrap();
    let got = k.arg_svm("data", &theirs).map(|_| ());
    assert!(
        matches!(&got, Err(e) if e.is_argument_error() && e.to_string().contains("another runtime")),
        "{got:?}"
    );
    let got = k.use_indirect_svm(&theirs).map(|_| ());
    assert!(matches!(&got, Err(e) if e.is_argument_error()), "{got:?}");
    let mut mine = rt.with_new_queue().unwrap().alloc::<u32>(64).unwrap();
    mine.write(&[1; 64]).unwrap();
    add_one_on_device(&rt, &mine);
    assert_eq!(mine.read().unwrap(), vec![2; 64]);
}

/// A new buffer larger than one device fill's or copy's piece (1 GiB) starts zeroed in every
/// piece, also where the memory held other values before (a buffer of the same size, filled
/// and dropped just before, which the allocator may hand back), and copies in and out of it
/// move every piece, the one across the first GiB boundary included.
#[test]
fn buffers_over_a_gib_are_zeroed_and_copied_in_every_piece() {
    let n = (1usize << 30) / 4 + 8192;
    for t in common::transports() {
        let rt = common::runtime(t);
        {
            let mut dirty = rt.alloc::<u32>(n).unwrap();
            dirty.write(&vec![u32::MAX; n]).unwrap();
        }
        let mut buf = rt.alloc::<u32>(n).unwrap();
        let edge = (1usize << 30) / 4;
        for (at, len) in [(0, 4096), (edge - 2048, 4096), (n - 1000, 1000)] {
            let got = buf.read_range(at, len).unwrap();
            assert!(
                got.iter().all(|&v| v == 0),
                "transport {t}: elements {at}..{} not zeroed",
                at + len
            );
        }
        let data: Vec<u32> = (0..n as u32)
            .map(|i| i.wrapping_mul(2_654_435_761))
            .collect();
        buf.copy_from_host(0, &data).unwrap();
        let across = buf.read_range(edge - 3, 7).unwrap();
        assert_eq!(across, data[edge - 3..edge + 4], "transport {t}");
        assert!(buf.read().unwrap() == data, "transport {t}: whole buffer");
    }
}

#[test]
fn freed_buffers_are_reused_zeroed_and_only_where_they_fit() {
    for t in common::transports() {
        let rt = common::runtime(t);
        let n = 10_000;
        let stats = |rt: &Runtime| rt.svm_stats();
        let before = stats(&rt);
        {
            let mut buf = rt.alloc::<u32>(n).unwrap();
            buf.write(&vec![0xdead_beef; n]).unwrap();
            add_one_on_device(&rt, &buf);
        }
        // The same size again: the freed buffer, zeroed (nothing of its last contents).
        let mut again = rt.alloc::<u32>(n).unwrap();
        let after = stats(&rt);
        assert_eq!(after.allocations - before.allocations, 2, "transport {t}");
        assert_eq!(after.reused - before.reused, 1, "transport {t}");
        assert!(
            again.read().unwrap().iter().all(|&v| v == 0),
            "transport {t}"
        );
        // Kernels and host see it as any fresh buffer.
        add_one_on_device(&rt, &again);
        assert!(
            again.read().unwrap().iter().all(|&v| v == 1),
            "transport {t}"
        );
        drop(again);
        // Larger than the free block, or under half of it: the driver's.
        let s = stats(&rt);
        let larger = rt.alloc::<u32>(2 * n).unwrap();
        let small = rt.alloc::<u32>(n / 4).unwrap();
        assert_eq!(stats(&rt).reused, s.reused, "transport {t}");
        // Half of it (and more than half of the block): reused, and of the requested length.
        let mut half = rt.alloc::<u32>(n / 2 + 100).unwrap();
        assert_eq!(stats(&rt).reused, s.reused + 1, "transport {t}");
        assert_eq!(half.len(), n / 2 + 100);
        assert!(
            half.read().unwrap().iter().all(|&v| v == 0),
            "transport {t}"
        );
        drop((larger, small, half));
        // A buffer larger than an eighth of the cache's limit goes back to the driver (and
        // pushes no small one out); one just within it is kept.
        let most = rt.svm_cache_limit() / 8;
        let s = stats(&rt);
        drop(rt.alloc::<u8>(most + 4096).unwrap());
        drop(rt.alloc::<u8>(most + 4096).unwrap());
        assert_eq!(stats(&rt).reused, s.reused, "transport {t}");
        drop(rt.alloc::<u8>(most).unwrap());
        drop(rt.alloc::<u8>(most).unwrap());
        assert_eq!(stats(&rt).reused, s.reused + 1, "transport {t}");
    }
}

/// Copies up to 64 KiB go through a map of their range, larger ones through the driver's copy:
/// both, and each after the other and after a kernel, land and read back the same.
#[test]
fn copies_either_side_of_the_mapped_limit_agree() {
    for t in common::transports() {
        let rt = common::runtime(t);
        let n = 50_000usize;
        let limit = (64 << 10) / 4;
        let mut buf = rt.alloc::<u32>(n).unwrap();
        let mut want: Vec<u32> = (0..n).map(|_| rand::thread_rng().gen()).collect();
        // Large (driver's copy), then small ranges over it (maps).
        buf.copy_from_host(0, &want).unwrap();
        for (at, len) in [(5, limit), (limit + 9, limit + 1), (n - 3, 3), (1, 1)] {
            let part: Vec<u32> = (0..len).map(|_| rand::thread_rng().gen()).collect();
            buf.copy_from_host(at, &part).unwrap();
            want[at..at + len].copy_from_slice(&part);
        }
        for (at, len) in [
            (0, n),
            (3, limit),
            (7, limit + 1),
            (n - 1, 1),
            (limit, 2 * limit),
        ] {
            let mut out = vec![0u32; len];
            buf.read_range_into(at, &mut out).unwrap();
            assert_eq!(out, &want[at..at + len], "{t} {at}+{len}");
        }
        add_one_on_device(&rt, &buf);
        for v in &mut want {
            *v = v.wrapping_add(1);
        }
        for (at, len) in [(11, 8), (2, limit + 1), (0, n)] {
            assert_eq!(
                buf.read_range(at, len).unwrap(),
                &want[at..at + len],
                "{t} {at}+{len}"
            );
        }
        // A small write after the kernel, read back both ways.
        buf.copy_from_host(100, &[7u32, 8, 9]).unwrap();
        want[100..103].copy_from_slice(&[7, 8, 9]);
        assert_eq!(buf.read_range(99, 5).unwrap(), &want[99..104], "{t}");
        assert_eq!(buf.read().unwrap(), want, "{t}");
    }
}

/// Device times only where asked: a runtime opened with them times its launches on the
/// device, one opened without does not (and still runs them); a device set keeps them.
#[test]
fn device_times_are_kept_where_asked() {
    let device = select_device(None).expect("an OpenCL device");
    for asked in [true, false] {
        let options = RuntimeOptions {
            device_times: Some(asked),
            ..Default::default()
        };
        let rt = Runtime::open_with(device.clone(), &options).unwrap();
        assert_eq!(rt.device_times(), asked);
        let buf = rt.alloc::<u32>(256).unwrap();
        let mut k = rt.kernel(&asym_kernels::RUNTIME, "asym_add_one").unwrap();
        k.arg_svm("data", &buf)
            .unwrap()
            .arg_scalar("n", 256u32)
            .unwrap();
        let timed = k.launch(256, Some(64)).unwrap().wait_timed().unwrap();
        assert_eq!(timed.is_some(), asked, "device times asked: {asked}");
        let mut buf = buf;
        assert_eq!(buf.read().unwrap(), vec![1; 256]);
    }
    let set = asym_runtime::DeviceSet::open(None).unwrap();
    assert!(set.members().iter().all(Runtime::device_times));
}

/// Device buffers (outside SVM) start zeroed, take and give back what the host copies, feed
/// kernels (whose argument keeps a buffer dropped by the host alive), and refuse ranges past
/// their end.
#[test]
fn device_buffers_round_trip_and_feed_kernels() {
    for t in common::transports() {
        let rt = common::runtime(t);
        let n = 3000usize;
        let mut buf = rt.device_buffer::<u32>(n).unwrap();
        assert_eq!(buf.len(), n);
        let mut out = vec![7u32; n];
        buf.read_range_into(0, &mut out).unwrap();
        assert!(out.iter().all(|&v| v == 0), "{t}: not zeroed");
        let data: Vec<u32> = (0..n).map(|_| rand::thread_rng().gen()).collect();
        buf.write_range(0, &data).unwrap();
        let mut k = rt.kernel(&asym_kernels::RUNTIME, "asym_add_one").unwrap();
        k.arg_buffer("data", &buf)
            .unwrap()
            .arg_scalar("n", n as u32)
            .unwrap();
        k.launch(n.next_multiple_of(64), Some(64))
            .unwrap()
            .wait()
            .unwrap();
        let mut got = vec![0u32; 100];
        buf.read_range_into(n - 100, &mut got).unwrap();
        let want: Vec<u32> = data[n - 100..].iter().map(|v| v.wrapping_add(1)).collect();
        assert_eq!(got, want, "{t}");
        for (at, len) in [(n - 1, 2), (n + 1, 0), (usize::MAX, 1)] {
            assert!(
                matches!(
                    buf.read_range_into(at, &mut vec![0u32; len]),
                    Err(e) if e.is_argument_error()
                ),
                "{t} at {at} len {len}"
            );
            assert!(
                matches!(
                    buf.write_range(at, &vec![0u32; len]),
                    Err(e) if e.is_argument_error()
                ),
                "{t} at {at} len {len}"
            );
        }
        // The kernel's argument holds the buffer: dropped by the host, it is still there.
        let small = rt.device_buffer::<u32>(64).unwrap();
        k.arg_buffer("data", &small)
            .unwrap()
            .arg_scalar("n", 64u32)
            .unwrap();
        drop(small);
        k.launch(64, Some(64)).unwrap().wait().unwrap();
        // An empty buffer is one element inside, none outside.
        let empty = rt.device_buffer::<u64>(0).unwrap();
        assert!(empty.is_empty());
        empty.read_range_into(0, &mut []).unwrap();
    }
}

/// Handles with their own queue share the device's programs and memory: buffers allocated
/// through each, kernels launched on each from its own thread while the other's are in
/// flight, every result where it belongs; a buffer of one handle used by the other's kernel
/// after the first's `finish`.
#[test]
fn handles_with_their_own_queues_work_side_by_side() {
    for t in common::transports() {
        let rt = common::runtime(t);
        let lanes: Vec<Runtime> = (0..3).map(|_| rt.with_new_queue().unwrap()).collect();
        assert!(lanes.iter().all(|l| l.transport() == t));
        std::thread::scope(|s| {
            for (i, lane) in lanes.iter().enumerate() {
                s.spawn(move || {
                    let n = 5000 + 17 * i;
                    let mut buf = lane.alloc::<u32>(n).unwrap();
                    let data: Vec<u32> = (0..n as u32).map(|v| v * 3 + i as u32).collect();
                    buf.write(&data).unwrap();
                    for _ in 0..=i {
                        add_one_on_device(lane, &buf);
                    }
                    let want: Vec<u32> = data.iter().map(|v| v + 1 + i as u32).collect();
                    assert_eq!(buf.read().unwrap(), want, "{t}: lane {i}");
                });
            }
        });
        let mut shared = lanes[0].alloc::<u32>(64).unwrap();
        add_one_on_device(&lanes[0], &shared);
        lanes[0].finish().unwrap();
        add_one_on_device(&lanes[1], &shared);
        assert_eq!(shared.read().unwrap(), vec![2u32; 64], "{t}");
    }
}

/// A source that takes `T_*` names from the host: every build checks the names it uses, the
/// names it defines and the names it is given against each other before compiling.
const CONTRACT: KernelSource = KernelSource::new(
    "contract.cl",
    "#define T_LOCAL 1\n__kernel void t(__global uint *x) { x[0] = T_A + T_LOCAL; }",
)
.taking(&["T_"]);

#[test]
fn a_program_whose_host_constants_disagree_with_it_does_not_build() {
    let rt = common::runtime(common::transports()[0]);
    for (options, says) in [
        ("", "T_A is used but neither defined nor given"),
        ("-DT_A=1 -DT_B=2", "T_B is given by the host but never used"),
        (
            "-DT_A=1 -DT_LOCAL=2",
            "T_LOCAL is given by the host and #defined",
        ),
    ] {
        match rt.program_with(&CONTRACT, options) {
            Err(e @ Error::Build { .. }) => assert!(e.to_string().contains(says), "{e}"),
            other => panic!("{options:?}: {:?}", other.map(|_| ())),
        }
    }
    assert!(rt.program_with(&CONTRACT, "-DT_A=1").is_ok());
}

/// A kernel with a parameter table: arguments set by name land where the source has them.
const NAMED: KernelSource = KernelSource::new(
    "named.cl",
    "__kernel void scale(__global uint *data, uint n, uint by) {
        uint i = get_global_id(0);
        if (i < n) data[i] *= by;
    }",
)
.with_params(&[KernelParams::new("scale", &["data", "n", "by"])]);

#[test]
fn kernel_arguments_are_set_by_name_and_checked_at_build() {
    let rt = common::runtime(common::transports()[0]);
    let mut data = rt.alloc::<u32>(8).unwrap();
    data.write(&[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
    let mut k = rt.kernel(&NAMED, "scale").unwrap();
    // Out of order on purpose: the name decides the position.
    k.arg_scalar("by", 3u32)
        .unwrap()
        .arg_svm("data", &data)
        .unwrap()
        .arg_scalar("n", 8u32)
        .unwrap();
    k.launch(8, None).unwrap().wait().unwrap();
    assert_eq!(data.read().unwrap(), vec![3, 6, 9, 12, 15, 18, 21, 24]);
    match k.arg_scalar("count", 1u32) {
        Err(e @ Error::OutOfRange { .. }) => {
            let m = e.to_string();
            assert!(m.contains("count") && m.contains("data, n, by"), "{m}")
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    // A kernel without a table takes positions only.
    const PLAIN: KernelSource = KernelSource::new("plain.cl", NAMED.text);
    let mut plain = rt.kernel(&PLAIN, "scale").unwrap();
    match plain.arg_scalar("n", 8u32) {
        Err(e @ Error::OutOfRange { .. }) => {
            assert!(e.to_string().contains("no parameter table"), "{e}")
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    assert!(plain.arg_scalar(1u32, 8u32).is_ok());
    // A table that disagrees with the source is a build error naming the kernel.
    const MOVED: KernelSource = KernelSource::new("moved.cl", NAMED.text)
        .with_params(&[KernelParams::new("scale", &["data", "by", "n"])]);
    const GONE: KernelSource = KernelSource::new("gone.cl", NAMED.text)
        .with_params(&[KernelParams::new("shift", &["data"])]);
    for (source, says) in [
        (&MOVED, "the host names its parameters (data, by, n)"),
        (&GONE, "kernel shift has a parameter table"),
    ] {
        match rt.program(source) {
            Err(e @ Error::Build { .. }) => assert!(e.to_string().contains(says), "{e}"),
            other => panic!("{}: {:?}", source.name, other.map(|_| ())),
        }
    }
}

/// The dependent-access probe follows its cycle on the device with loads and with atomic
/// minimums (which leave the cycle intact), its check refuses an end the cycle does not lead
/// to, and a cycle of fewer than two words is refused.
#[test]
fn chase_probe_follows_its_cycle_and_checks_the_end() {
    use asym_runtime::diag::{ChaseAccess, ChaseProbe};
    for t in common::transports() {
        let rt = common::runtime(t);
        for words in [2usize, 3, 1000, 4099] {
            let mut probe = ChaseProbe::new(&rt, words, words as u64).unwrap();
            for (access, links) in [
                (ChaseAccess::Load, 1u32),
                (ChaseAccess::AtomicMin, 2 * words as u32 + 1),
                (ChaseAccess::Load, 3 * words as u32 + 2),
                (ChaseAccess::Load, 0),
            ] {
                probe.follow(access, links).unwrap();
                probe.check(links).unwrap();
            }
            probe.follow(ChaseAccess::Load, 5).unwrap();
            let e = probe.check(6).unwrap_err();
            assert!(matches!(e, Error::DeviceLost { .. }), "{e}");
            assert!(probe
                .ns_per_link(ChaseAccess::Load, 64, 1)
                .unwrap()
                .is_finite());
        }
        let e = ChaseProbe::new(&rt, 1, 7)
            .err()
            .expect("one word is no cycle");
        assert!(e.is_argument_error(), "{e}");
    }
}

/// The grid-barrier probe passes every barrier with one group (always resident) over
/// launches that count on from where the last left the counter; with one group per compute
/// unit it passes them all or says the groups were not resident (PoCL may run them one after
/// another), never a wrong count.
#[test]
fn grid_barrier_probe_passes_every_barrier_or_says_why_not() {
    use asym_runtime::diag::GridBarrierProbe;
    for t in common::transports() {
        let rt = common::runtime(t);
        let mut one = GridBarrierProbe::new(&rt, Some(1), 64).unwrap();
        for count in [1u32, 7, 300, 0, 5] {
            one.pass(count).unwrap();
            one.check(count).unwrap();
        }
        assert!(one.us_per_barrier(50, 1).unwrap().is_finite());
        let mut every = GridBarrierProbe::new(&rt, None, 64).unwrap();
        match every.pass(20).and_then(|()| every.check(20)) {
            Ok(()) => {}
            Err(e) => assert!(matches!(e, Error::Unsupported { .. }), "{e}"),
        }
    }
}
