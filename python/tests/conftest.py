"""Shared helpers: the modes, the dtypes, keys of every shape of difficulty, and the total
order asym gives float32 keys (-NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN)."""

import os

import numpy as np
import pytest

import asym

MODES = ["auto", "cpu", "gpu", "coop"]
DTYPES = [np.int32, np.uint32, np.float32]
CASES = ["random", "duplicates", "equal", "sorted", "reverse", "special"]


def ordered(a):
    """The int32 image of keys whose signed order is asym's order of them."""
    a = np.ascontiguousarray(a)
    if a.dtype == np.int32:
        return a.astype(np.int64)
    if a.dtype == np.uint32:
        return a.astype(np.int64)
    bits = a.view(np.int32).astype(np.int64)
    return np.where(bits < 0, bits ^ 0x7FFFFFFF, bits)


def keys(rng, dtype, size, case="random"):
    """`size` keys (an int or a shape) of `dtype` for `case`."""
    n = int(np.prod(size))
    if dtype == np.float32:
        if case == "special":
            pool = np.array(
                [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -1.5], dtype=np.float32
            )
            out = rng.choice(pool, n)
            out[: min(n, 4)] = pool[:4][: min(n, 4)]
            # A negative NaN the way hardware writes one.
            out.view(np.uint32)[out.view(np.uint32) == np.float32(-np.nan).view(np.uint32)] |= 1
        else:
            out = rng.standard_normal(n).astype(np.float32) * 1000
    else:
        info = np.iinfo(dtype)
        out = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        if case == "special":
            out[: min(n, 2)] = [info.min, info.max][: min(n, 2)]
    if case == "duplicates":
        out = rng.choice(out[: max(1, n // 50)], n)
    elif case == "equal":
        out = np.full(n, out[0] if n else 0, dtype=dtype)
    elif case == "sorted":
        out = out[np.argsort(ordered(out), kind="stable")]
    elif case == "reverse":
        out = out[np.argsort(ordered(out), kind="stable")][::-1]
    return np.ascontiguousarray(out.astype(dtype)).reshape(size)


@pytest.fixture
def rng(request):
    """A generator seeded afresh for every test (ASYM_TEST_SEED fixes it); the seed is in
    the test's report when it fails."""
    seed = int(os.environ.get("ASYM_TEST_SEED", np.random.SeedSequence().entropy % 2**32))
    request.node.user_properties.append(("seed", seed))
    print(f"seed {seed}")
    return np.random.default_rng(seed)


@pytest.fixture(scope="module")
def runtime():
    return asym.Runtime()


@pytest.fixture
def small_batches():
    """Batches of 4,096 keys, so that long calls run in many."""
    before = asym._native._set_batch_keys(4096)
    yield 4096
    asym._native._set_batch_keys(before)
