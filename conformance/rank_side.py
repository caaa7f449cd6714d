"""What runs on each rank process for one example: set up, launch both APIs, observe.

``run_example`` is the pool job. For each API it resets the heap and the trace buffers, lets the
scenario allocate its named buffers, launches the API's kernel between two clock readings, and
returns the raw observation (events, buffer contents, heap layout, launch window) as plain data.
"""

from __future__ import annotations

import torch

from conformance.scenario import load

_DTYPES = {
    "int8": torch.int8, "int16": torch.int16, "int32": torch.int32, "int64": torch.int64,
    "float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32, "float64": torch.float64,
}  # fmt: skip
HEAP_BYTES = 1 << 24


def torch_dtype(name: str) -> torch.dtype:
    """The torch dtype called ``name`` (params carry dtypes by name)."""
    if name not in _DTYPES:
        raise ValueError(f"dtype={name!r}, expected one of {sorted(_DTYPES)}")
    return _DTYPES[name]


class Rank:
    """One rank's side of an example: the host object, its context tensor and the named buffers."""

    def __init__(self, shmem) -> None:
        self.shmem = shmem
        self.rank = shmem.get_rank()
        self.world_size = shmem.get_num_ranks()
        self.ctx = shmem.get_device_context()
        self.buffers: dict[str, torch.Tensor] = {}

    def buffer(self, name: str, shape, dtype: str, fill=0) -> torch.Tensor:
        """Allocate heap buffer ``name`` (same offset on every rank) filled with ``fill`` (scalar or values)."""
        if name in self.buffers:
            raise ValueError(f"buffer {name!r} allocated twice")
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        t = self.shmem.zeros(*shape, dtype=torch_dtype(dtype))
        if isinstance(fill, (list, tuple)):
            t.copy_(torch.tensor(fill, dtype=t.dtype).reshape(shape))
        elif fill != 0:
            t.fill_(fill)
        self.buffers[name] = t
        return t

    def layout(self) -> dict[str, tuple[int, int, int]]:
        """``{buffer: (heap offset, element bytes, elements)}``."""
        base = self.shmem.heap.bases[self.rank]
        return {n: (t.data_ptr() - base, t.element_size(), t.numel()) for n, t in self.buffers.items()}


def _shmem():
    from iris.ranks import rank_state

    state = rank_state()
    if "shmem" not in state:
        import iris

        state["shmem"] = iris.iris(HEAP_BYTES)
    return state["shmem"]


def run_example(name: str, params: dict, apis: tuple[str, ...]) -> dict:
    """Pool job: run scenario ``name`` with ``params`` through each API on this rank; returns observations."""
    from iris.tracing.export import device_clock
    from iris.tracing.hw import cu_id_limit

    scenario = load(name)
    shmem = _shmem()
    out = {"rank": shmem.get_rank(), "heap_bases": list(shmem.heap.bases),
           "cu_limit": cu_id_limit(shmem.tracing.backend, shmem.device),
           "backend": shmem.tracing.backend, "ticks_per_second": shmem.tracing.ticks_per_second, "apis": {}}
    for api in apis:
        shmem.heap.reset()
        rank = Rank(shmem)
        max_events = params.get("max_events", scenario.max_events)
        shmem.tracing.enable(max_events)
        scenario.setup(rank, params)
        shmem.barrier()
        t0 = device_clock(shmem.device)
        compiles_before = _compiles(scenario.kernel(api))
        scenario.launch(scenario.kernel(api), rank, params)
        shmem.barrier()
        t1 = device_clock(shmem.device)
        events = shmem.tracing.events()
        out["apis"][api] = {
            "rows": events.rows(),
            "attempted": events.attempted,
            "capacity": max_events,
            "layout": rank.layout(),
            "memory": {n: t.cpu().tolist() for n, t in rank.buffers.items()},
            "window": (t0, t1),
            "compiles": _compiles(scenario.kernel(api)) - compiles_before,
        }
        shmem.tracing.disable()
    return out


def _compiles(kernel) -> int:
    """Compiled variants of ``kernel`` cached in this process (0 under the interpreter)."""
    caches = getattr(kernel, "device_caches", None)
    if not caches:
        return 0
    return sum(len(entry[0]) for entry in caches.values())
