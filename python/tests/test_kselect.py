"""asym.kselect against numpy.partition: every mode, dtype and shape of difficulty, keys in
host memory and resident in SVM, and every kind of bad argument."""

import numpy as np
import pytest

import asym
from conftest import CASES, DTYPES, MODES, keys, ordered


def reference(rows, k):
    """The k-th (from 1) of every row, by numpy, in asym's order (as ordered images)."""
    return np.partition(ordered(rows), k - 1, axis=1)[:, k - 1]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES)
def test_rows_match_numpy_partition(rng, mode, dtype, case):
    rows = keys(rng, dtype, (7, 333), case)
    for k in (1, 34, 333):
        got = asym.kselect(rows, k, mode=mode)
        assert got.dtype == dtype and got.shape == (7,)
        np.testing.assert_array_equal(ordered(got), reference(rows, k))


@pytest.mark.parametrize("mode", MODES)
def test_one_dimensional_cuts(rng, mode):
    flat = keys(rng, np.int32, 1000)
    np.testing.assert_array_equal(
        asym.kselect(flat, 5, sublist=250, mode=mode), reference(flat.reshape(4, 250), 5)
    )
    whole = asym.kselect(flat, 500, mode=mode)
    assert whole.tolist() == [np.sort(flat)[499]]
    bounds = [0, 1, 400, 401, 1000]
    got = asym.kselect(flat, 1, sublist=bounds, mode=mode)
    want = [flat[a:b].min() for a, b in zip(bounds, bounds[1:])]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("mode", MODES)
def test_one_key_and_one_row(mode):
    assert asym.kselect(np.array([7], dtype=np.uint32), 1, mode=mode).tolist() == [7]
    row = np.array([[3.0, -0.0, 0.0, -1.0]], dtype=np.float32)
    got = asym.kselect(row, 2, mode=mode)
    assert got[0] == 0.0 and np.signbit(got[0])


@pytest.mark.parametrize("mode", ["cpu", "gpu"])
def test_layouts_are_read_in_order(rng, mode):
    base = keys(rng, np.int32, (40, 64))
    fortran = np.asfortranarray(base)
    strided = keys(rng, np.int32, (40, 128))[:, ::2]
    transposed = keys(rng, np.int32, (64, 40)).T
    for a in (fortran, strided, transposed):
        assert not a.flags.c_contiguous
        np.testing.assert_array_equal(ordered(asym.kselect(a, 9, mode=mode)), reference(a, 9))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_resident_keys(rng, runtime, mode, dtype):
    rows = keys(rng, dtype, (6, 1000), "special" if dtype == np.float32 else "random")
    resident = runtime.array(rows)
    assert resident.shape == [6, 1000] and resident.dtype == dtype and len(resident) == 6
    np.testing.assert_array_equal(resident.numpy(), rows)
    for k in (1, 100, 1000):
        got = asym.kselect(resident, k, mode=mode)
        np.testing.assert_array_equal(ordered(got), reference(rows, k))
    flat = runtime.array(rows.ravel())
    got = asym.kselect(flat, 10, sublist=[0, 10, 6000], mode=mode)
    want = [np.sort(ordered(rows.ravel()[a:b]))[9] for a, b in ((0, 10), (10, 6000))]
    np.testing.assert_array_equal(ordered(got), want)


def test_many_batches_give_the_same_rows(rng, small_batches):
    rows = keys(rng, np.int32, (50, 1000))
    np.testing.assert_array_equal(asym.kselect(rows, 7, mode="cpu"), reference(rows, 7))
    flat = rows.ravel()
    bounds = np.unique(np.concatenate([[0, 50000], rng.integers(1, 50000, 40)]))
    got = asym.kselect(flat, 1, sublist=bounds, mode="coop")
    np.testing.assert_array_equal(got, [flat[a:b].min() for a, b in zip(bounds, bounds[1:])])


def test_empty_inputs():
    assert asym.kselect(np.zeros((0, 5), dtype=np.int32), 3).shape == (0,)
    with pytest.raises(ValueError, match="out of range"):
        asym.kselect(np.zeros((0, 5), dtype=np.int32), 6)
    with pytest.raises(ValueError, match="empty"):
        asym.kselect(np.zeros(0, dtype=np.int32), 1)


@pytest.mark.parametrize(
    "call, error, text",
    [
        (lambda a: asym.kselect(a, 0), ValueError, "counts from 1"),
        (lambda a: asym.kselect(a, 11), ValueError, "out of range"),
        (lambda a: asym.kselect(a.astype(np.int64), 1), TypeError, "int64"),
        (lambda a: asym.kselect(a.astype(np.float64), 1), TypeError, "float64"),
        (lambda a: asym.kselect(a.reshape(2, 2, 5), 1), ValueError, "1-D or 2-D"),
        (lambda a: asym.kselect(a.ravel(), 1, sublist=7), ValueError, "multiple"),
        (lambda a: asym.kselect(a.ravel(), 1, sublist=0), ValueError, "at least one"),
        (lambda a: asym.kselect(a.ravel(), 1, sublist=[0, 5, 3, 20]), ValueError, "decrease"),
        (lambda a: asym.kselect(a.ravel(), 1, sublist=[0, 5]), ValueError, "end at 20"),
        (lambda a: asym.kselect(a, 1, sublist=5), ValueError, "rows of 10"),
        (lambda a: asym.kselect(a, 1, mode="fast"), ValueError, "auto"),
        (lambda a: asym.kselect(a, 1, device=3), TypeError, "device="),
        (lambda a: asym.kselect(a, 1, device="no such device"), asym.DeviceError, "matches"),
    ],
)
def test_bad_arguments(call, error, text):
    a = np.arange(20, dtype=np.int32).reshape(2, 10)
    with pytest.raises(error, match=text):
        call(a)


def test_resident_refuses_another_device(runtime):
    with pytest.raises(ValueError, match="device="):
        asym.kselect(runtime.array(np.arange(4, dtype=np.int32)), 1, device=runtime)
