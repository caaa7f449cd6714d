"""``benchmarks.bench_conformance`` runs every scenario to the end (1 rank, one example after the first, cpu),
and its cold/warm figures come from fresh rank processes on one new Triton cache folder."""

from __future__ import annotations

import math
import os

import pytest

from benchmarks import bench_conformance as bench
from conformance.harness.drawing import Example
from conformance.harness.example import run_example
from conformance.kit.scenario import load, names

pytestmark = pytest.mark.cpu_interpret

WORLD = 1


def test_every_scenario_that_accepts_the_world_gets_a_row_without_failures(capsys):
    table = bench.main(["--backend", "cpu", "--ranks", str(WORLD), "--examples", "1"])
    out = capsys.readouterr().out.splitlines()
    expected = [n for n in names() if load(n).refusal(WORLD) is None]
    assert expected and [r.name for r in table] == expected, [r.name for r in table]
    assert out[1] == bench.header() and out[2:] == [bench.line(r) for r in table] + [bench.mean_line(table)], out
    for row in table:
        assert row.failures == 0, f"{row.name}: {row.failures} failing example(s)"
        assert math.isfinite(row.rate) and row.rate > 0, f"{row.name}: rate {row.rate}"
        assert row.variants == "-/-", f"{row.name}: the interpreter compiles nothing, got {row.variants}"
        assert row.compiles.split()[0] in ("-", "0.00"), f"{row.name}: compiles {row.compiles}"
        assert all(math.isfinite(v) and v >= 0 for v in row.phases.values()), (row.name, row.phases)
        assert row.phases["launch"] > 0, f"{row.name}: no launch time"
        assert row.cold is None and row.warm is None, f"{row.name}: cold/warm measured without --cold-warm"


def test_cold_and_warm_run_on_fresh_ranks_that_share_one_new_triton_cache(monkeypatch):
    scenario = load("store")
    params = {"n": 40, "BLOCK": 32, "dtype": "int32", "TRACE_OPS": False, "offset": 0, "bits": [[1, 0] * 32]}
    seen: list[tuple[list[int], list[str | None], int]] = []

    def spy(pools, scenario, world_size, example, backend):
        pool = pools.get(world_size, backend)
        seen.append((pool.pids, pool.run(os.getenv, "TRITON_CACHE_DIR"), example.settings.chunk))
        return run_example(pools, scenario, world_size, example, backend)

    monkeypatch.setattr(bench, "run_example", spy)
    monkeypatch.setenv("TRITON_CACHE_DIR", "/nonexistent/left-as-it-was")
    cold, warm, failures = bench.cold_warm(scenario, "cpu", WORLD, [Example(params, scenario.settings(params, 3))])
    assert failures == 0 and cold > 0 and warm > 0, (cold, warm, failures)
    assert len(seen) == 2, seen
    (cold_pids, [cold_dir], cold_chunk), (warm_pids, [warm_dir], warm_chunk) = seen
    assert (cold_chunk, warm_chunk) == (3, 3), seen  # the examples' own settings, both times
    assert set(cold_pids).isdisjoint(warm_pids), f"warm reused the cold run's rank processes: {seen}"
    assert cold_dir == warm_dir and os.path.basename(cold_dir).startswith("iris-triton-cache-"), seen
    assert not os.path.exists(cold_dir), f"{cold_dir} was left behind"
    assert os.environ["TRITON_CACHE_DIR"] == "/nonexistent/left-as-it-was"


def test_a_row_prints_its_cold_and_warm_seconds_under_their_column():
    row = bench.Row("store", 2.0, "- (0 warm)", "-/-", 0, dict.fromkeys(bench.PHASES, 1.0), cold=1.5, warm=0.25)
    header, line = bench.header(), bench.line(row)
    end = header.index("cold/warm s") + len("cold/warm s")
    assert line[:end].endswith(" 1.50/0.25"), (header, line)
    assert len(line) == len(bench.mean_line([row])), "the mean line is not aligned with the rows"
