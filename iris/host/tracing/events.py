"""Alias of ``iris.tracing.events`` under upstream iris's path: ``from iris.host.tracing.events import TraceEvent``.

The event table is defined once, in ``iris/tracing/events.py``; these are the same objects.
"""

from iris.tracing.events import EVENT_IDS, EVENT_NAMES, TRACE_FIELDS, TraceEvent, event_name

__all__ = ["EVENT_IDS", "EVENT_NAMES", "TRACE_FIELDS", "TraceEvent", "event_name"]
