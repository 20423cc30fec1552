"""asym.sssp against scipy.sparse.csgraph.dijkstra: random and road-like graphs in every
mode, unreachable vertices, zero weights, self-loops, parallel edges, the tuple form, and
bad graphs."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

import asym
from conftest import MODES


def random_graph(rng, n, m, max_weight=100, zero=False):
    rows = rng.integers(0, n, m)
    cols = rng.integers(0, n, m)
    w = rng.integers(0 if zero else 1, max_weight, m).astype(np.float64)
    g = sp.csr_matrix((w, (rows, cols)), shape=(n, n))
    if zero:
        # Explicit zeros are edges to scipy's csgraph: keep them stored.
        g = sp.csr_matrix((w, cols, np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n))])), shape=(n, n))
    return g


def grid(side, rng):
    """A road-like graph: a grid with random weights both ways, a few links missing."""
    n = side * side
    v = np.arange(n).reshape(side, side)
    pairs = [(v[:, :-1].ravel(), v[:, 1:].ravel()), (v[:-1, :].ravel(), v[1:, :].ravel())]
    src = np.concatenate([a for a, b in pairs] + [b for a, b in pairs])
    dst = np.concatenate([b for a, b in pairs] + [a for a, b in pairs])
    keep = rng.random(src.size) > 0.05
    w = rng.integers(1, 1000, src.size)[keep].astype(np.float64)
    return sp.csr_matrix((w, (src[keep], dst[keep])), shape=(n, n))


@pytest.mark.parametrize("mode", MODES)
def test_random_graphs_match_dijkstra(rng, mode):
    for n, m in ((1, 0), (2, 1), (50, 20), (300, 3000), (2000, 9000)):
        g = random_graph(rng, n, m)
        source = int(rng.integers(0, n))
        got = asym.sssp(g, source, mode=mode)
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, dijkstra(g, indices=source))


@pytest.mark.parametrize("mode", MODES)
def test_road_like_graph(rng, mode):
    g = grid(60, rng)
    np.testing.assert_array_equal(asym.sssp(g, 0, mode=mode), dijkstra(g, indices=0))


@pytest.mark.parametrize("mode", ["cpu", "gpu"])
def test_zero_weights_loops_and_parallel_edges(rng, mode):
    g = random_graph(rng, 200, 2000, max_weight=4, zero=True)
    assert (g.data == 0).any()
    g = g + sp.identity(200, format="csr") * 5
    g = sp.csr_matrix(g)
    np.testing.assert_array_equal(asym.sssp(g, 3, mode=mode), dijkstra(g, indices=3))
    # Parallel edges: the lighter one counts.
    indptr = np.array([0, 2, 2])
    got = asym.sssp((indptr, np.array([1, 1]), np.array([9, 4])), 0, mode=mode)
    np.testing.assert_array_equal(got, [0.0, 4.0])


@pytest.mark.parametrize("mode", MODES)
def test_tuple_form_and_other_formats(rng, mode):
    g = random_graph(rng, 400, 2500)
    want = dijkstra(g, indices=7)
    np.testing.assert_array_equal(asym.sssp((g.indptr, g.indices, g.data), 7, mode=mode), want)
    np.testing.assert_array_equal(
        asym.sssp((g.indptr.astype(np.int64), g.indices, g.data.astype(np.uint32)), 7, mode=mode),
        want,
    )
    np.testing.assert_array_equal(asym.sssp(g.tocoo(), 7, mode=mode), want)
    np.testing.assert_array_equal(asym.sssp(g.tocsc(), 7, mode=mode), want)


@pytest.mark.parametrize(
    "graph, source, error, text",
    [
        (sp.csr_matrix(np.ones((2, 3))), 0, ValueError, "square"),
        (sp.csr_matrix(np.array([[0, 1.5], [0, 0]])), 0, ValueError, "whole numbers"),
        (sp.csr_matrix(np.array([[0, -1.0], [0, 0]])), 0, ValueError, "whole numbers"),
        (sp.csr_matrix(np.array([[0, 1.0], [0, 0]])), 2, ValueError, "source"),
        (sp.csr_matrix(np.array([[0, 1.0], [0, 0]])), -1, ValueError, "from 0"),
        (sp.csr_matrix((0, 0)), 0, ValueError, "source"),
        ((np.array([0, 1]), np.array([5]), np.array([1])), 0, ValueError, "outside"),
        ((np.array([0, 2, 1, 2]), np.array([0, 1]), np.array([1, 1])), 0, ValueError, "decrease"),
        ((np.array([0, 1]), np.array([0]), np.array([1, 2])), 0, ValueError, "weights"),
        ((np.array([0, 1]), np.array([0])), 0, ValueError, "indptr, indices, weights"),
        (np.ones((2, 2)), 0, TypeError, "scipy.sparse"),
        ((np.array([0, 1]), np.array([0]), np.array(["a"])), 0, TypeError, "integers"),
    ],
)
def test_bad_graphs(graph, source, error, text):
    with pytest.raises(error, match=text):
        asym.sssp(graph, source)
