"""conformance.exported: a one-rank JSON export read back as trace rows, field by field, every kind and lane."""

from __future__ import annotations

import pytest

from conformance.check import exported
from iris.tracing.export import write_trace
from iris.tracing.records import KIND_NAMES
from iris.tracing.timeline import RankTrace
from tests.cpu_unit.trace_cases import ORIGINS, records

pytestmark = pytest.mark.cpu_unit


@pytest.mark.parametrize("rank", [0, 1])
def test_every_event_reads_back_with_its_fields_kind_and_program(tmp_path, rank):
    """Rank 0 has a range, an instant and an unfinished range; rank 1 a program on two lanes (an overlap)."""
    rec = records(rank, attempted=len(records(rank)) + 3, max_events=len(records(rank)))
    path = write_trace(tmp_path / "t.json", [RankTrace(rec, ORIGINS[rank], "gluon")], format="json")
    got = exported.read(path)
    want = [{"name": row["name"], "kind": row["kind"], "pid": row["pid"], "cur_rank": rank,
             **{a: row[a] for a in exported.ARGS}} for row in rec.rows()]
    assert got.rows == sorted(want, key=lambda r: r["op_index"])
    assert (got.events, got.dropped) == (len(rec), 3)
    assert {r["kind"] for r in got.rows} <= set(KIND_NAMES.values())


def test_an_export_of_two_ranks_is_refused(tmp_path):
    traces = [RankTrace(records(r), ORIGINS[r]) for r in (0, 1)]
    path = write_trace(tmp_path / "t.json", traces, format="json")
    with pytest.raises(ValueError, match="one rank and API"):
        exported.read(path)
