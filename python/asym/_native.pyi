"""Type stubs of asym's native module (re-exported by the package ``asym``)."""

from typing import Iterator, Literal, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

__version__: str

Mode = Literal["auto", "cpu", "gpu", "coop"]
KeyDType = Union[type[np.int32], type[np.uint32], type[np.float32], np.dtype, str]
Keys = npt.NDArray[Union[np.int32, np.uint32, np.float32]]
Device = Union[str, "Runtime", None]

class AsymError(RuntimeError):
    """A call failed for a reason that is not the caller's arguments."""

class DeviceError(AsymError):
    """An OpenCL device failed or cannot do what was asked."""

class Runtime:
    """Devices and threads that asym's calls run on."""

    def __init__(self, device: Optional[str] = None, threads: Optional[int] = None) -> None: ...
    @property
    def device(self) -> Optional[str]: ...
    @property
    def transport(self) -> Optional[Literal["fine", "coarse"]]: ...
    @property
    def threads(self) -> int: ...
    def array(self, a: npt.ArrayLike) -> DeviceArray:
        """Copies ``a`` into SVM on this runtime's device."""
    def _inject_fault(self, point: Literal["launch", "map", "alloc", "wait"], nth: int) -> None: ...

class DeviceArray:
    """Keys that live in SVM on a runtime's device."""

    def numpy(self) -> Keys: ...
    @property
    def shape(self) -> list[int]: ...
    @property
    def dtype(self) -> np.dtype: ...
    def __len__(self) -> int: ...

def devices() -> list[dict[str, Union[str, int]]]:
    """The OpenCL devices asym can run on."""

def kselect(
    keys: Union[npt.ArrayLike, DeviceArray],
    k: int,
    sublist: Union[int, Sequence[int], npt.NDArray[np.integer], None] = None,
    mode: Mode = "auto",
    device: Device = None,
) -> Keys:
    """The k-th smallest key (from 1) of every row of ``keys``."""

class Heap:
    """A priority queue of int32, uint32 or float32 keys, in batches."""

    def __init__(
        self,
        dtype: KeyDType,
        mode: Mode = "auto",
        device: Device = None,
        batch: int = 1024,
        capacity: int = 0,
    ) -> None: ...
    def insert(self, keys: npt.ArrayLike) -> None: ...
    def delete_min(self, n: int) -> Keys: ...
    def __len__(self) -> int: ...
    @property
    def mode(self) -> Literal["cpu", "gpu", "coop"]: ...
    @property
    def dtype(self) -> np.dtype: ...

def sort(a: npt.ArrayLike, mode: Mode = "auto", device: Device = None) -> Keys:
    """A sorted copy of 1-D ``a``, through the generalized heap."""

def sssp(
    graph: object,
    source: int,
    mode: Mode = "auto",
    device: Device = None,
    stats: bool = False,
) -> Union[npt.NDArray[np.float64], Tuple[npt.NDArray[np.float64], dict[str, object]]]:
    """Shortest path lengths from ``source`` (inf where unreachable)."""

def knapsack(
    weights: npt.ArrayLike,
    profits: npt.ArrayLike,
    capacity: int,
    mode: Mode = "auto",
    device: Device = None,
    time_limit: Optional[float] = None,
) -> Tuple[int, Optional[npt.NDArray[np.int64]], bool]:
    """The 0/1 knapsack's optimum, a set of items worth it, and whether it is proved."""

class RBTree:
    """A sorted map from int32, uint32 or float32 keys to uint64 values, in SVM."""

    def __init__(self, dtype: KeyDType, mode: Mode = "auto", device: Device = None) -> None: ...
    def insert(self, keys: npt.ArrayLike, values: Optional[npt.ArrayLike] = None) -> int: ...
    def delete(self, keys: npt.ArrayLike) -> int: ...
    def search(
        self, keys: npt.ArrayLike
    ) -> Tuple[npt.NDArray[np.bool_], npt.NDArray[np.uint64]]: ...
    def range_count(self, lo: Union[int, float], hi: Union[int, float]) -> int: ...
    def items(self) -> Tuple[Keys, npt.NDArray[np.uint64]]: ...
    def keys_array(self) -> Keys: ...
    def __iter__(self) -> Iterator[Union[int, float]]: ...
    def __contains__(self, key: Union[int, float]) -> bool: ...
    def __len__(self) -> int: ...
    @property
    def mode(self) -> Literal["cpu", "gpu", "coop"]: ...

def _set_batch_keys(keys: int) -> int: ...
