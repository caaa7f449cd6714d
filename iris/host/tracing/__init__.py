"""Alias of the host tracing names under upstream iris's path ``iris.host.tracing``; the home is ``iris.tracing``."""

from iris.tracing.core import Tracing
from iris.tracing.events import EVENT_NAMES, TraceEvent

__all__ = ["EVENT_NAMES", "TraceEvent", "Tracing"]
