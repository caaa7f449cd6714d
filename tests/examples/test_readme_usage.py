"""README's "Usage" code, run as written on 2-rank worlds: every rank's export is on disk with its own events."""

from __future__ import annotations

import json

import pytest

from tests.cpu_unit.checks import check
from tests.examples import readme_jobs
from tests.trace_readers import read_json
from tests.worlds import backends, run_world

RANKS = 2


def _run(block: int, marker: str, backend: str, tmp_path) -> tuple:
    """README's Usage block ``block`` (the one that calls ``marker``) run on every rank, in ``tmp_path``."""
    code = readme_jobs.usage_blocks()[block]
    assert marker in code, f"README's Usage block {block} should be the one that calls {marker}: {code[:200]!r}"
    script = tmp_path / f"usage_{block}.py"
    script.write_text(code)
    return run_world(readme_jobs.run_script, backend, RANKS, str(script))


def _trace_files(tmp_path) -> list[str]:
    return sorted(p.name for p in tmp_path.glob("*.json"))


def _check_every_ranks_trace(api: str, results: list[dict], tmp_path) -> None:
    """One file per rank (was: rank 1's replaced rank 0's), each with that rank's 16 store ranges to the next rank,
    field by field."""
    check("trace files", _trace_files(tmp_path), [f"{api}_trace_rank{r}.json" for r in range(RANKS)])
    for res in results:
        rank = res["rank"]
        path = tmp_path / f"{api}_trace_rank{rank}.json"
        check("events recorded", len(res["rows"]), 16, f"rank {rank}")
        trace = json.loads(path.read_text())
        check("metadata.processes", trace["metadata"]["processes"], [f"{api} rank {rank}"], str(path))
        got = sorted(read_json(trace), key=lambda s: s.args["op_index"])
        check("slices", len(got), len(res["rows"]), str(path))
        for s, row in zip(got, res["rows"], strict=True):
            where = f"{path.name}, op_index {row['op_index']}"
            check("(process, track, name)", (s.process, s.track, s.name),
                  (f"{api} rank {rank}", f"program {row['pid']}", "store"), where)
            for field in ("target_rank", "address", "payload_size", "pid_m"):
                check(f"args.{field}", s.args[field], row[field], where)
            check("args.target_rank", s.args["target_rank"], (rank + 1) % RANKS, where)
            check("args.payload_size", s.args["payload_size"], 256 * 4, where)


@pytest.mark.parametrize("backend", backends())
def test_triton_usage_leaves_every_ranks_trace(backend, tmp_path):
    """``shmem.tracing.export("triton_trace.json")`` on every rank, as README's Triton block does."""
    _check_every_ranks_trace("triton", _run(0, "iris.iris(", backend, tmp_path), tmp_path)


@pytest.mark.parametrize("backend", backends())
def test_gluon_usage_leaves_every_ranks_trace(backend, tmp_path):
    """``shmem.tracing.export("gluon_trace.json")`` on every rank, after README's Gluon block launches its kernel."""
    _check_every_ranks_trace("gluon", _run(1, "iris_gluon.iris(", backend, tmp_path), tmp_path)
