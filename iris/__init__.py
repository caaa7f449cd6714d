"""iris: a symmetric heap for multi-GPU Triton and Gluon kernels, with device-side tracing.

Host: ``shmem = iris.iris(heap_size)``; kernels: ``DeviceContext.initialize(shmem.get_device_context(), ...)``.
"""

from iris.device import DeviceContext
from iris.iris import Iris, iris
from iris.ranks import launch
from iris.tracing.events import EVENT_NAMES, TRACE_FIELDS, TraceEvent

__all__ = ["DeviceContext", "EVENT_NAMES", "Iris", "TRACE_FIELDS", "TraceEvent", "iris", "launch"]
