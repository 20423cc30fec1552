"""What every call keeps: the GIL released while it works, Ctrl-C honoured between batches,
device failures raised as asym.DeviceError (and the runtime usable after), the runtime's
description."""

import _thread
import os
import signal
import threading
import time

import numpy as np
import pytest

import asym


def test_devices_and_runtime(runtime):
    found = asym.devices()
    assert found and {"platform", "name", "kind", "svm"} <= set(found[0])
    assert runtime.threads >= 1
    assert runtime.transport == os.environ.get("ASYM_SVM", runtime.transport)
    assert runtime.transport in ("fine", "coarse")
    assert "asym.Runtime(" in repr(runtime)
    assert asym.Runtime(threads=1).threads == 1
    with pytest.raises(ValueError, match="latency threads"):
        asym.Runtime(threads=0)


def test_the_gil_is_released_while_a_call_works(rng):
    # Default batches: each call detaches from the interpreter once for all its work. (With
    # batches of microseconds, CPython's GIL hand-over, up to its 5 ms switch interval, would
    # decide how often another thread runs, not the call.)
    rows = rng.integers(0, 1 << 30, (2000, 4096), dtype=np.int32)
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    try:
        start = time.perf_counter()
        for _ in range(5):
            asym.kselect(rows, 100, mode="cpu")
        end = time.perf_counter()
    finally:
        done.set()
        t.join()
    during = [x for x in ticks if start < x < end]
    # Another Python thread ran while the calls worked (tens of ms in all).
    assert len(during) >= 3, (len(during), end - start)


def _warm_call_at_least(rows, seconds):
    """Rows doubled until a warm CpuOnly call on them takes `seconds` (at most 2^26 keys);
    the rows and that call's time."""
    while True:
        whole = float("inf")
        for _ in range(2):  # the first call of a process also starts the latency threads
            start = time.perf_counter()
            asym.kselect(rows, 100, mode="cpu")
            whole = min(whole, time.perf_counter() - start)
        if whole >= seconds or rows.size >= 1 << 26:
            return rows, whole
        rows = np.concatenate([rows, rows])


def test_ctrl_c_stops_a_long_call_at_a_batch_boundary(rng, small_batches):
    # A call of 50 ms or more: the interrupt's thread needs the GIL to raise it, which a call
    # of many tiny batches hands over only every few ms.
    rows = rng.integers(0, 1 << 30, (1000, 4096), dtype=np.int32)
    rows, whole = _warm_call_at_least(rows, 0.05)
    # A process started in the background by a non-interactive shell ignores SIGINT, and
    # interrupt_main then does nothing: Python's own handler, for this test.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        timer = threading.Timer(whole / 10, _thread.interrupt_main)
        timer.start()
        start = time.perf_counter()
        with pytest.raises(KeyboardInterrupt):
            asym.kselect(rows, 100, mode="cpu")
        stopped = time.perf_counter() - start
        timer.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert stopped < whole * 0.9, (stopped, whole)
    # The next call runs whole and right.
    np.testing.assert_array_equal(
        asym.kselect(rows[:3], 100, mode="cpu"), np.partition(rows[:3], 99, axis=1)[:, 99]
    )


@pytest.mark.parametrize("point", ["launch", "alloc", "wait"])
def test_a_device_failure_is_a_device_error(rng, point):
    rt = asym.Runtime()
    rows = rng.integers(0, 100, (4, 256), dtype=np.int32)
    # Host keys are staged into new SVM (alloc); resident keys are selected in place.
    keys = rows if point == "alloc" else rt.array(rows)
    rt._inject_fault(point, 1)
    with pytest.raises(asym.DeviceError, match="lost"):
        asym.kselect(keys, 3, mode="gpu", device=rt if point == "alloc" else None)
    rt._inject_fault(point, 0)
    got = asym.kselect(rt.array(rows), 3, mode="gpu")
    np.testing.assert_array_equal(got, np.partition(rows, 2, axis=1)[:, 2])
    assert issubclass(asym.DeviceError, asym.AsymError)
    assert issubclass(asym.AsymError, RuntimeError)


def test_bad_fault_point():
    with pytest.raises(ValueError, match="fault point"):
        asym.Runtime()._inject_fault("nowhere", 1)
