"""The trace chunk is a harness setting (``ExampleSettings``), not a param: ``run --chunk N`` and
``RunSettings(chunk=N)`` reach every rank's tracing, and a drawn example keeps it beside its params, where its
replay command sets it."""

from __future__ import annotations

import json
import shlex

import pytest
from hypothesis import settings

from conformance.cli import _parser, main
from conformance.harness.case import run_case
from conformance.harness.drawing import CHUNK_SIZES
from conformance.harness.run_settings import RunSettings
from conformance.harness.suite import parse_params
from conformance.kit.scenario import load
from iris.ranks import Pools

pytestmark = pytest.mark.cpu_interpret

# 1 rank, 40 elements in blocks of 32: two programs, one store instant each
STORE = ('{"n":40,"BLOCK":32,"dtype":"int32","TRACE_OPS":false,"offset":0,"bits":[' + "["
         + ",".join(["1", "0"] * 32) + "]]}")


@pytest.mark.parametrize("chunk", [1, 64])
def test_run_chunk_sets_the_slots_each_program_claims(tmp_path, chunk):
    """Each program's one event opens a chunk of its own: the second program's event is in slot ``chunk``."""
    code = main(["run", "--backend", "cpu", "--scenario", "store", "--ranks", "1", "--chunk", str(chunk),
                 "--params", STORE, "--out", str(tmp_path)])
    assert code == 0, f"exit code={code}, but should be 0"
    trace = json.loads((tmp_path / "traces" / "store.json").read_text())
    processes = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"}
    slots = {}
    for e in trace["traceEvents"]:
        if e.get("ph") in ("X", "i"):
            slots.setdefault(processes[e["pid"]], set()).add(e["args"]["op_index"])
    assert slots == {"triton rank 0": {0, chunk}, "gluon rank 0": {0, chunk}}, slots


def test_drawn_examples_keep_the_chunk_beside_their_params_and_replay_with_it():
    scenario = load("chunked_claims")
    seen = []
    with Pools() as pools:
        run = RunSettings("cpu", settings(max_examples=4, deadline=None, database=None), seed=3)
        case, last = run_case(pools, scenario, 1, run, on_example=seen.append)
    assert case.ok and len(seen) == 4, case.failure or case.error
    for result in seen:
        assert "chunk" not in result.params and result.settings.chunk in CHUNK_SIZES, (result.params, result.settings)
        chunk = result.settings.chunk
        for obs in result.observations:
            for api, a in obs.apis.items():
                claimed = a.host.claimed
                assert claimed > 0 and claimed % chunk == 0, f"{api}: claimed {claimed}, chunk {chunk}"
        args = _parser().parse_args(shlex.split(result.replay)[3:])  # python -m conformance <run ...>
        assert (args.chunk, parse_params(args.params)) == (chunk, result.params), result.replay


def test_a_fixed_chunk_is_every_examples_chunk():
    seen = []
    with Pools() as pools:
        run = RunSettings("cpu", settings(max_examples=3, deadline=None, database=None), chunk=64, seed=3)
        case, _ = run_case(pools, load("chunked_claims"), 1, run, on_example=seen.append)
    assert case.ok, case.failure or case.error
    assert [r.settings.chunk for r in seen] == [64] * 3, [r.settings for r in seen]
    assert all(a.host.claimed % 64 == 0 and a.host.claimed > 0 for r in seen for o in r.observations
               for a in o.apis.values())
