"""asym: concurrent data structures across CPU latency cores and GPU throughput units.

The structures of the Rust library asym, with numpy arrays in and out:

- :func:`kselect` -- the k-th smallest key of every row (``numpy.partition``,
  ``torch.kthvalue``), on host keys or keys resident on a device (:meth:`Runtime.array`);
- :class:`Heap` and :func:`sort` -- the generalized heap (``heapq``, ``numpy.sort``);
- :func:`sssp` -- shortest paths from one source over a scipy CSR matrix
  (``scipy.sparse.csgraph.dijkstra``);
- :func:`knapsack` -- the exact 0/1 knapsack, optimum and items;
- :class:`RBTree` -- a sorted map in SVM, updated in batches (``sortedcontainers``).

Every call takes ``mode=`` -- ``"cpu"`` (pinned latency threads), ``"gpu"`` (the OpenCL
device), ``"coop"`` (both), ``"auto"`` (the fastest measured for the work) -- and
``device=`` (a device name fragment or an :class:`Runtime`). Calls release the GIL while
they work. Errors: ``ValueError``/``TypeError`` for bad arguments, ``MemoryError`` when
memory runs out, :class:`DeviceError` for device failures, :class:`AsymError` for the rest.
"""

from ._native import (
    AsymError,
    DeviceArray,
    DeviceError,
    Heap,
    RBTree,
    Runtime,
    __version__,
    devices,
    knapsack,
    kselect,
    sort,
    sssp,
)

__all__ = [
    "AsymError",
    "DeviceArray",
    "DeviceError",
    "Heap",
    "RBTree",
    "Runtime",
    "__version__",
    "devices",
    "knapsack",
    "kselect",
    "sort",
    "sssp",
]
