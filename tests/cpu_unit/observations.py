"""Hand-built ``RankObservation``s (``conformance.harness.observation``) for tests of what the host does with them.

``records`` turns trace rows written as dicts (the fields of ``records.rows()``) into the ``TraceRecords`` a rank
sends back; ``api_observation`` and ``rank_observation`` fill every other field with a value the test can
override.
"""

from __future__ import annotations

import numpy as np

from conformance.check.exported import ARGS, ExportedTrace
from conformance.check.observation import ApiObservation, HostCounters, RankObservation
from iris.tracing.events import EVENT_IDS, TRACE_FIELDS
from iris.tracing.records import TraceRecords

BACKEND = "interpreter"


def records(rows: list[dict], dropped: int = 0, max_events: int = 16) -> TraceRecords:
    """The records of ``rows`` (each with ``name``, ``slot`` and every field of ``TRACE_FIELDS`` but ``event_id``;
    the kind follows from ``duration_cycles``), in the order given."""
    fields = np.array([[EVENT_IDS[r["name"]] if f == "event_id" else r[f] for r in rows] for f in TRACE_FIELDS],
                      dtype=np.int64).reshape(len(TRACE_FIELDS), len(rows))
    return TraceRecords.from_fields(fields, dropped, max_events, rank=0, backend=BACKEND, ticks_per_second=1e9,
                                    slots=np.array([r["slot"] for r in rows], dtype=np.int64))


def exported(rows: list[dict], dropped: int = 0) -> ExportedTrace:
    """What ``conformance.check.exported`` reads back from the file ``tracing.export`` writes for ``rows``."""
    keep = ("name", "kind", "pid", "cur_rank", *ARGS)
    return ExportedTrace([{k: r[k] for k in keep} for r in rows], len(rows), dropped)


def api_observation(rows: list[dict] = (), **changes) -> ApiObservation:
    """One API's observation of ``rows``: counters that agree with them (every slot up to the highest claimed),
    their export, one buffer ``buf`` of 8 four-byte elements at offset 0, the window [50, 500]; ``changes``
    replace any field."""
    rows = list(rows)
    claimed = max((r["slot"] for r in rows), default=-1) + 1
    fields = dict(records=records(rows), host=HostCounters(len(rows), 0, claimed, claimed), exported=exported(rows),
                  layout={"buf": (0, 4, 8)}, window=(50, 500))
    return ApiObservation(**(fields | changes))


def rank_observation(apis: dict[str, ApiObservation], rank: int = 0, **changes) -> RankObservation:
    """Rank ``rank``'s observation of ``apis``: heap base 2**30, one CU; ``changes`` replace any field."""
    fields = dict(rank=rank, heap_bases=[1 << 30], cu_limit=1, backend=BACKEND, ticks_per_second=1e9, apis=apis)
    return RankObservation(**(fields | changes))
