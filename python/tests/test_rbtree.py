"""asym.RBTree against a dict and a sorted list: random batches of inserts, deletes and
searches in every mode and dtype, range counts, iteration in order, and bad arguments."""

import bisect

import numpy as np
import pytest

import asym
from conftest import DTYPES, MODES, keys, ordered


def unique(rng, dtype, n):
    """`n` distinct keys (NaNs of one sign each at most, so a dict can hold them)."""
    a = keys(rng, dtype, n, "special" if dtype == np.float32 else "random")
    _, first = np.unique(ordered(a), return_index=True)
    return a[np.sort(first)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_batches_match_a_dict(rng, mode, dtype):
    tree = asym.RBTree(dtype, mode=mode)
    ref = {}
    pool = unique(rng, dtype, 3000)
    for step in range(6):
        ins = pool[rng.integers(0, len(pool), int(rng.integers(0, 1500)))]
        ins = ins[np.unique(ordered(ins), return_index=True)[1]]
        values = rng.integers(0, 2**64, len(ins), dtype=np.uint64)
        new = tree.insert(ins, values)
        img = ordered(ins).tolist()
        assert new == sum(1 for k in img if k not in ref)
        ref.update(zip(img, values.tolist()))
        dels = pool[rng.integers(0, len(pool), int(rng.integers(0, 800)))]
        dels = dels[np.unique(ordered(dels), return_index=True)[1]]
        removed = tree.delete(dels)
        assert removed == sum(1 for k in ordered(dels).tolist() if k in ref)
        for k in ordered(dels).tolist():
            ref.pop(k, None)
        assert len(tree) == len(ref)
        query = pool[rng.integers(0, len(pool), 1000)]
        found, got = tree.search(query)
        want = [ref.get(k) for k in ordered(query).tolist()]
        assert found.tolist() == [w is not None for w in want]
        assert got.tolist() == [w or 0 for w in want]
    ks, vs = tree.items()
    assert ordered(ks).tolist() == sorted(ref)
    assert vs.tolist() == [ref[k] for k in sorted(ref)]


@pytest.mark.parametrize("mode", MODES)
def test_range_counts_iteration_and_membership(rng, mode):
    tree = asym.RBTree(np.int32, mode=mode)
    a = unique(rng, np.int32, 2000)
    tree.insert(a)
    s = sorted(a.tolist())
    for _ in range(50):
        lo, hi = sorted(rng.integers(-(2**31), 2**31, 2).tolist())
        assert tree.range_count(lo, hi) == bisect.bisect_right(s, hi) - bisect.bisect_left(s, lo)
    assert tree.range_count(s[0], s[0]) == 1
    assert tree.range_count(5, 4) == 0
    assert list(tree) == s
    assert s[17] in tree and (s[17] + 1 in tree) == (s[17] + 1 in set(s))
    _, values = tree.search(a[:5])
    assert values.tolist() == [0] * 5


@pytest.mark.parametrize("mode", ["cpu", "gpu"])
def test_edge_cases(rng, mode):
    tree = asym.RBTree(np.float32, mode=mode)
    assert len(tree) == 0 and list(tree) == []
    assert tree.insert(np.zeros(0, dtype=np.float32)) == 0
    assert tree.search(np.zeros(0, dtype=np.float32))[0].shape == (0,)
    # A key given twice in one batch keeps its last value; -0.0 and +0.0 are two keys.
    assert tree.insert(np.array([1.0, 1.0, -0.0, 0.0], dtype=np.float32),
                       np.array([1, 2, 3, 4], dtype=np.uint64)) == 3
    assert tree.search(np.array([1.0, -0.0, 0.0], dtype=np.float32))[1].tolist() == [2, 3, 4]
    assert tree.delete(np.array([5.0], dtype=np.float32)) == 0
    strided = np.arange(100, dtype=np.float32)[::-4]
    assert tree.insert(strided) == len(strided)
    assert tree.range_count(0.5, 100.0) == len(strided) + 1


def test_many_batches(rng, small_batches):
    tree = asym.RBTree(np.uint32, mode="cpu")
    a = unique(rng, np.uint32, 20000)
    assert tree.insert(a) == len(a)
    found, _ = tree.search(a)
    assert found.all()
    assert tree.delete(a[::2]) == len(a[::2])
    assert len(tree) == len(a) - len(a[::2])


def test_bad_arguments():
    tree = asym.RBTree(np.int32)
    with pytest.raises(TypeError, match="holds int32"):
        tree.insert(np.zeros(2, dtype=np.float32))
    with pytest.raises(ValueError, match="1-D"):
        tree.insert(np.zeros((2, 2), dtype=np.int32))
    with pytest.raises(ValueError, match="one value per key"):
        tree.insert(np.zeros(2, dtype=np.int32), np.zeros(3, dtype=np.uint64))
    with pytest.raises(ValueError, match="negative"):
        tree.insert(np.zeros(1, dtype=np.int32), np.array([-1]))
    with pytest.raises(TypeError, match="int32, uint32 or float32"):
        asym.RBTree(np.float64)
    with pytest.raises(OverflowError):
        tree.range_count(0, 2**40)
    assert "asym.RBTree(dtype=int32" in repr(tree)
