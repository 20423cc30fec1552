"""asym.knapsack against dynamic programming: random instances in every mode, items that
add up, the edge cases and bad arguments."""

import numpy as np
import pytest

import asym
from conftest import MODES


def optimum(weights, profits, capacity):
    best = np.zeros(capacity + 1, dtype=np.int64)
    for w, p in zip(weights, profits):
        if w <= capacity:
            best[w:] = np.maximum(best[w:], best[: capacity + 1 - w] + p)
    return int(best[capacity])


def check(weights, profits, capacity, mode):
    value, items, proved = asym.knapsack(weights, profits, capacity, mode=mode)
    assert proved
    assert value == optimum(weights, profits, capacity)
    assert items is not None and items.dtype == np.int64
    assert list(items) == sorted(set(items.tolist()))
    assert sum(weights[i] for i in items) <= capacity
    assert sum(profits[i] for i in items) == value


@pytest.mark.parametrize("mode", MODES)
def test_random_instances(rng, mode):
    for n in (1, 2, 10, 40, 120):
        weights = rng.integers(1, 100, n)
        profits = rng.integers(0, 100, n)
        capacity = int(weights.sum() // 2)
        check(weights.tolist(), profits.tolist(), capacity, mode)
        # Strongly correlated: profit = weight + 10 (harder for branch-and-bound).
        check(weights.tolist(), (weights + 10).tolist(), capacity, mode)


@pytest.mark.parametrize("mode", MODES)
def test_edge_cases(mode):
    assert asym.knapsack([], [], 10, mode=mode)[:2][0] == 0
    assert asym.knapsack([5], [7], 0, mode=mode)[0] == 0
    assert asym.knapsack([5], [7], 5, mode=mode)[0] == 7
    value, items, _ = asym.knapsack([0, 3, 0], [4, 5, 0], 2, mode=mode)
    assert value == 4 and 0 in items.tolist()
    check([4, 4, 4, 4], [3, 3, 3, 3], 9, mode)
    check(np.array([2, 3, 4], dtype=np.uint8), np.array([3, 4, 5], dtype=np.int16), 5, mode)


@pytest.mark.parametrize(
    "args, error, text",
    [
        (([1, 2], [1], 3), ValueError, "2 weights but 1 profits"),
        (([1, -2], [1, 1], 3), ValueError, "negative"),
        (([1, 2], [1, 1], -3), ValueError, "capacity"),
        (([1.5, 2], [1, 1], 3), TypeError, "integers"),
        (([[1, 2]], [[1, 1]], 3), ValueError, "one-dimensional"),
        (([0] * 5, [2**62] * 5, 3), ValueError, "exceeds 2\\^64"),
        (([2**62] * 10, [2**62] * 10, 2**62), ValueError, "exceeds 2\\^64"),
    ],
)
def test_bad_arguments(args, error, text):
    with pytest.raises(error, match=text):
        asym.knapsack(*args)
    with pytest.raises(ValueError, match="time_limit"):
        asym.knapsack([1], [1], 1, time_limit=0)
