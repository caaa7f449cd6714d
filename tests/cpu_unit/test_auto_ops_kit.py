"""conformance.kit.auto_ops.call_events and the kit helpers that call it: an op's own ranges in a model; the kit's
modules import one another without a circle (``block_events`` holds what ``helpers`` and ``auto_ops`` share)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conformance.check.model import Addr
from conformance.kit.auto_ops import call_events
from conformance.kit.helpers import per_program_events

pytestmark = pytest.mark.cpu_unit

P = {"n": 40, "BLOCK": 32, "dtype": "int32", "bits": [[0, 1] * 32]}
ON = P | {"TRACE_OPS": True}


def _call(p, op, **kw):
    return call_events(p, op, rank=0, pid=1, target=1, buffer="dst", heap_rank=0, lanes=[33, 35],
                       block=range(32, 64), **kw)


def test_nothing_when_the_switch_is_off():
    assert _call(P, "store") == [] and _call(P | {"TRACE_OPS": False}, "store") == []


def test_by_default_the_op_addresses_the_manual_block_of_its_peer():
    (e,) = _call(ON, "put")
    assert (e.name, e.kind, e.pid, e.pid_m, e.pid_n, e.target_rank) == ("put", "range", 1, 1, 0, 1)
    assert (e.address, e.payload_size, e.payload) == (Addr(0, "dst", 33), 8, 0)


def test_an_op_without_a_mask_records_its_whole_block():
    (e,) = _call(ON, "atomic_cas")
    assert (e.address, e.payload_size) == (Addr(0, "dst", 32), 32 * 4)


def test_copy_records_its_read_then_its_write_with_rows_moving_one_buffer():
    read, write = _call(ON, "copy", peers={"from_rank": 2}, pointers={"src_ptr": (0, "src"), "dst_ptr": (0, "dst")},
                        rows={"dst": 64})
    assert (read.target_rank, read.address) == (2, Addr(0, "src", 33))
    assert (write.target_rank, write.address) == (1, Addr(0, "dst", 97))


def test_a_range_comes_before_the_op_an_instant_after_it():
    ranges = per_program_events(ON, 0, "load", "range", target=1, buffer="src", payload=7)
    assert [(e.name, e.kind, e.payload) for e in ranges] == [("load", "range", 7), ("load", "range", 0)] * 2
    instants = per_program_events(ON, 0, "store", "instant", target=1, buffer="dst", payload=7)
    assert [(e.kind, e.payload) for e in instants] == [("range", 0), ("instant", 7)] * 2
    assert per_program_events(P, 0, "load", "range", target=1, buffer="src", payload=7) == ranges[::2]


def _kit_imports() -> dict[str, set[str]]:
    """Each module of ``conformance/kit`` and the kit modules it imports anywhere in it (a function's import too)."""
    kit = Path(__file__).resolve().parents[2] / "conformance" / "kit"
    modules = {f"conformance.kit.{path.stem}": path for path in kit.glob("*.py") if path.stem != "__init__"}
    graph = {}
    for name, path in modules.items():
        imported = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import):
                imported |= {a.name for a in node.names}
        graph[name] = imported & set(modules) - {name}
    return graph


def test_the_kit_modules_import_each_other_without_a_circle():
    graph = _kit_imports()

    def circle(name: str, path: tuple[str, ...]) -> tuple[str, ...] | None:
        if name in path:
            return path[path.index(name):] + (name,)
        return next((c for n in sorted(graph[name]) if (c := circle(n, (*path, name)))), None)

    circles = [c for name in sorted(graph) if (c := circle(name, ()))]
    assert not circles, " -> ".join(circles[0])
    assert "conformance.kit.block_events" in graph["conformance.kit.auto_ops"], graph["conformance.kit.auto_ops"]
    assert "conformance.kit.auto_ops" in graph["conformance.kit.helpers"], graph["conformance.kit.helpers"]
