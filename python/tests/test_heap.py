"""asym.Heap against heapq and asym.sort against numpy.sort: every mode and dtype, the edge
cases, and bad arguments."""

import heapq

import numpy as np
import pytest

import asym
from conftest import CASES, DTYPES, MODES, keys, ordered


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_heap_matches_heapq(rng, mode, dtype):
    heap = asym.Heap(dtype, mode=mode, batch=64)
    reference = []
    for step in range(12):
        batch = keys(rng, dtype, int(rng.integers(0, 700)), "special" if step % 3 == 0 else "random")
        heap.insert(batch)
        for key in ordered(batch).tolist():
            heapq.heappush(reference, key)
        n = int(rng.integers(0, 500))
        got = heap.delete_min(n)
        want = [heapq.heappop(reference) for _ in range(min(n, len(reference)))]
        assert got.dtype == dtype
        assert ordered(got).tolist() == want
        assert len(heap) == len(reference)
    rest = heap.delete_min(len(heap) + 10)
    assert ordered(rest).tolist() == sorted(reference)
    assert len(heap) == 0 and heap.delete_min(5).shape == (0,)


@pytest.mark.parametrize("mode", ["cpu", "gpu"])
def test_heap_takes_any_layout(rng, mode):
    heap = asym.Heap(np.int32, mode=mode)
    a = keys(rng, np.int32, 3000)[::3]
    heap.insert(a)
    np.testing.assert_array_equal(heap.delete_min(2000), np.sort(a))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES)
def test_sort_matches_numpy(rng, mode, dtype, case):
    for n in (0, 1, 2, 1000, 4097):
        a = keys(rng, dtype, n, case)
        got = asym.sort(a, mode=mode)
        assert got.dtype == dtype and got.shape == (n,)
        np.testing.assert_array_equal(ordered(got), np.sort(ordered(a)))


def test_heap_bad_arguments():
    with pytest.raises(TypeError, match="int32, uint32 or float32"):
        asym.Heap(np.int64)
    with pytest.raises(ValueError, match="mode"):
        asym.Heap(np.int32, mode="fastest")
    heap = asym.Heap(np.int32)
    with pytest.raises(TypeError, match="holds int32"):
        heap.insert(np.zeros(3, dtype=np.uint32))
    with pytest.raises(ValueError, match="1-D"):
        heap.insert(np.zeros((2, 2), dtype=np.int32))
    with pytest.raises(ValueError, match="1-D"):
        asym.sort(np.zeros((2, 2), dtype=np.int32))
    with pytest.raises(TypeError, match="float64"):
        asym.sort(np.zeros(3))
    assert "asym.Heap(dtype=int32" in repr(heap)
    with pytest.raises(ValueError, match="power of two"):
        asym.Heap(np.int32, mode="cpu", batch=100)


@pytest.mark.parametrize("mode, capacity", [("cpu", 2**44), ("gpu", 2**40)])
def test_a_capacity_the_machine_cannot_hold_is_a_memory_error(mode, capacity):
    # Terabytes of lock words or of SVM: refused before anything is allocated.
    with pytest.raises(MemoryError):
        asym.Heap(np.int32, mode=mode, capacity=capacity)
