"""Every script under ``benchmarks/`` runs end to end on the CPU at small sizes, as ``python -m benchmarks.NAME``.

``CPU_RUNS`` maps each ``benchmarks/bench_*.py`` and ``benchmarks/stress_*.py`` to the arguments of its CPU run, or
to the test module that runs it already; a new script missing from it fails ``test_every_benchmark_has_a_cpu_run``.
A run fails on a non-zero exit; its figures are not judged, but its output must have the table it promises (header,
a row per API or step, finite numbers) and the values the CPU run determines (claims per event, sizes in the
heading).
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import triton

from benchmarks import bench_collectives as collectives_bench
from benchmarks import bench_compare as compare_bench
from benchmarks import bench_compile_time as compile_time_bench
from benchmarks import bench_gate_compiles as gate_bench
from benchmarks import bench_scatter_parts as parts_bench
from benchmarks import bench_tile_resources as resources_bench
from benchmarks import bench_tracing_device as device_bench
from benchmarks import cross_compile
from benchmarks import stress_traced_loops as stress
from benchmarks import tile_kernels as K
from conformance.harness.drawing import drawn_examples
from conformance.harness.profiles import load_profile
from conformance.harness.run_settings import RunSettings
from conformance.kit.scenario import load
from iris import context_layout as layout

pytestmark = pytest.mark.cpu_interpret

ROOT = Path(__file__).resolve().parents[2]
PAIRS, CHUNK, EVENTS = 4, 3, 1000
COMPARED = ("--events", "2000", "--ranks", "2", "--programs", "10", "--repeat", "1", "--capacity", "100,90")
CPU_RUNS: dict[str, list[str] | str] = {
    "bench_collectives": ["--backend", "cpu", "--chunk", str(CHUNK)],
    "bench_compare": list(COMPARED),
    "bench_compile_time": ["--ops", "1,2", "--targets", "sm_90"],
    "bench_conformance": "tests/conformance/test_bench_conformance.py",  # bench_conformance.main, 1 cpu rank
    "bench_gate_compiles": ["--scale", "small", "--ranks", "1", "--scenario", "load,store"],
    "bench_scatter_parts": ["--backend", "cpu", "--chunk", str(CHUNK)],
    "bench_tile_resources": ["--kernels", "all_scatter,tile_load", "--targets", "sm_90"],
    "bench_tracing_device": ["--backend", "cpu", "--pairs", str(PAIRS), "--chunk", str(CHUNK), "--auto"],
    "bench_tracing_host": ["--events", str(EVENTS), "--repeat", "1", "--device", "cpu"],
    "stress_traced_loops": ["--backend", "cpu", "--launches", "2", "--loops", "3,5"],
}
NUMBER = r"(-?\d+(?:\.\d+)?)"


def scripts() -> list[str]:
    return sorted(p.stem for pattern in ("bench_*.py", "stress_*.py") for p in (ROOT / "benchmarks").glob(pattern))


def run(name: str) -> list[str]:
    """stdout lines of ``python -m benchmarks.NAME`` with its CPU arguments; fails on a non-zero exit."""
    argv = [sys.executable, "-m", f"benchmarks.{name}", *CPU_RUNS[name]]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{' '.join(argv[1:])} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout.splitlines()


def finite(text: str) -> float:
    value = float(text)
    assert math.isfinite(value), text
    return value


def test_every_benchmark_has_a_cpu_run():
    assert scripts() and sorted(CPU_RUNS) == scripts(), f"benchmarks {scripts()} vs CPU runs {sorted(CPU_RUNS)}"


@pytest.mark.parametrize("name", [n for n, a in CPU_RUNS.items() if isinstance(a, str)])
def test_benchmark_run_by_another_test_module(name):
    text = (ROOT / CPU_RUNS[name]).read_text()
    assert f"from benchmarks import {name} as bench" in text and 'bench.main(["--backend", "cpu"' in text


# events one launch of each collective records at 9 KB a rank on 2 ranks, bracketed: all-gather 2 programs x 2 peers;
# reduce-scatter 1 program (a chunk of 1152 elements) x (2 fetches + 1 reduce); all-to-all 1 x 2; fused 2 x 2 x 3
COLLECTIVE_EVENTS = {"all_gather": 4, "reduce_scatter": 3, "all_to_all": 2, "gather_matmul": 12}


def test_bench_collectives_prints_every_kernel_and_variant_of_both_apis_on_the_cpu():
    """A section per kernel and API: a row for 9 KB with its programs and launches, the untraced min/med/max and each
    traced variant's ratio beside its own min/med/max; the goal and cost lines; the span variants' events equal to
    the bracketed ones field by field, on a masked tail; Proton skipped in one line; the record table."""
    out = run("bench_collectives")
    assert out[0].startswith("cpu: cpu, ") and f"chunk {CHUNK};" in out[0], out[0]
    assert out[1] == "proton: skipped on the CPU (its instrumentation needs a GPU)", out[1]
    traced = [v for v in collectives_bench.VARIANTS if v not in ("untraced", "proton")]
    spread = rf"{NUMBER}/{NUMBER}/{NUMBER}"
    at = 2
    for kernel in collectives_bench.KERNELS:
        for api in ("triton", "gluon"):
            phases = ", ".join(collectives_bench.PHASES[kernel])
            assert out[at] == f"{kernel} {api}, 2 ranks (phases {phases}):", out[at]
            assert out[at + 1].split()[:7] == ["size", "programs", "launches", "untraced", "ms/launch",
                                               "min/med/max", "auto"], out[at + 1]
            programs = collectives_bench.programs(kernel, 9 * 1024, 2)
            row = re.fullmatch(rf"\s+9 KB\s+{programs}\s+1\s+{spread}" + "".join(rf"\s+{NUMBER} \({spread}\)"
                                                                                for _ in traced), out[at + 2])
            assert row, out[at + 2]
            values = [finite(x) for x in row.groups()]
            untraced = values[:3]
            assert 0 < untraced[0] <= untraced[1] <= untraced[2], out[at + 2]
            for i in range(len(traced)):
                r, low, mid, high = values[3 + 4 * i: 7 + 4 * i]
                assert 0 < low <= mid <= high and math.isclose(r, mid / untraced[1], rel_tol=2e-3, abs_tol=2e-3), row
            assert out[at + 3].startswith("  traced/untraced <= 1.05 from: auto "), out[at + 3]
            assert out[at + 4].startswith("  cost per launch at 9 KB, us (median - untraced median): auto "), out
            events = COLLECTIVE_EVENTS[kernel]
            assert out[at + 5] == (f"  events at 9 KB against bracketed: span same ({events} events), offsets same "
                                   f"({events} events), bounds same ({events} events)"), out[at + 5]
            at += 6
    assert out[at] == "what each records:" and out[at + 2].split()[:2] == ["iris", "64"], out[at:]
    proton = next(i for i in range(at + 2, len(out)) if out[i].split()[0] == "proton")
    assert out[proton].split()[:2] == ["proton", "8"] and len(out) == proton + 1, out[at:]
    fields = " ".join(out[at + 2][22:82].split() + [w for line in out[at + 3:proton] for w in line.split()])
    assert fields == ", ".join(collectives_bench.STORED), fields  # every stored field, cur_rank and op_index not


def test_bench_collectives_finds_the_smallest_size_from_which_tracing_stays_within_5_percent():
    def row(size, ratio):
        return {"size": size, "ms": {"untraced": [1.0], "auto": [ratio]}}

    rows = [row(1 << 16, 1.2), row(1 << 18, 1.04), row(1 << 20, 1.06), row(1 << 22, 1.01), row(1 << 24, 1.05)]
    assert collectives_bench.within_goal_from(rows, "auto") == "4 MB"  # 1 MB breaks the run from below
    assert collectives_bench.within_goal_from(rows[:1], "auto") == "never"
    assert collectives_bench.within_goal_from([row(1 << 16, 1.0)], "auto") == "64 KB"


def test_bench_collectives_prints_a_dash_where_proton_could_not_run_and_compares_it_with_eager_launches():
    def row(size, proton):
        ms = {"untraced": [1.0, 1.0], "auto": [1.02, 1.04], collectives_bench.EAGER: [2.0]}
        return {"size": size, "grid": 4, "launches": {"untraced": 100, "auto": 100, "proton": 10},
                "ms": ms | ({"proton": [3.0]} if proton else {}), "registers": {"untraced": None}}

    lines = collectives_bench.table([row(1 << 16, False), row(1 << 20, True)], ["untraced", "auto", "proton"])
    assert lines[1].split()[-1] == "-" and lines[2].split()[-2:] == ["(3.0000/3.0000/3.0000)", "x10"], lines
    assert float(lines[2].split()[-3]) == 1.5  # proton against untraced launched one by one, as proton is
    assert lines[3] == "  traced/untraced <= 1.05 from: auto 64 KB, proton never", lines
    assert lines[4] == "  cost per launch at 64 KB, us (median - untraced median): auto 30.00, proton -", lines


def test_bench_compare_prints_a_row_per_capacity_and_the_exported_trace():
    """2,000 events on 2 ranks: every record kept at 100% (both APIs: 4,000), at most 900 slots a rank at 90%; no
    divergence either way; rank 0's exported trace holds its 1,000 events."""
    out = run("bench_compare")
    assert out[:2] == ["compare: 2,000 events, 2 ranks x 10 programs, chunk 64, 2 APIs; median of 1",
                       compare_bench.HEADER], out
    rows = [line.split() for line in out[2:4]]
    assert [r[0] for r in rows] == ["100%", "90%"], rows
    for r in rows:
        seconds, rate, model, peak = (finite(x) for x in r[1:5])
        assert seconds > 0 and rate > 0 and 0 <= model and peak > 0 and r[6] == "0", r
    kept = [int(r[5].replace(",", "")) for r in rows]
    assert kept[0] == 4000 and 0 < kept[1] <= 2 * 2 * 900, kept
    exported = re.fullmatch(rf"exported trace of one rank and API \(1,000 events\), written and read back on its "
                            rf"rank: JSON write {NUMBER} s, read {NUMBER} s, {NUMBER} MB \({NUMBER} B/event\)", out[4])
    assert exported and all(finite(x) > 0 for x in exported.groups()) and len(out) == 5, out


def test_bench_gate_compiles_counts_the_variants_compiling_ahead_would_compile_and_reads_their_frames():
    """The load and store cases on one rank: every distinct variant compiled once (compile_ahead's count of the
    same draws); at the small scale none of them spills, so their frames and the memory they hold are 0."""
    out = run("bench_gate_compiles")
    assert out[0] == (f"gate compiles: scale small, ranks 1, seed 0, sm_90, triton {gate_bench.triton.__version__}, "
                      "one core, empty cache") and out[1] == gate_bench.HEADER, out
    cases, events, found = gate_bench.variants(["load", "store"], (1,), "small", 0)
    cells = out[2].split()
    assert (int(cells[0]), int(cells[1]), int(cells[2])) == (cases, events, len(found)), out
    assert cases == 2 and len(found) >= 4
    modelled = sum(len(model.events[0]) for i, name in enumerate(("load", "store"))
                   for e in drawn_examples(load(name), 1, RunSettings("gpu", load_profile()), i)
                   for model in [e.model or load(name).expected(e.params, 1, e.settings)])
    assert events == modelled > 0, (events, modelled)  # each case's examples as the gate draws them, seed 0 and 1
    seconds, per_variant, slowest = (finite(x) for x in cells[3:6])
    assert 0 < slowest <= seconds and math.isclose(per_variant, seconds / len(found), abs_tol=0.006), out
    assert out[3].startswith("largest stack frames (bytes a thread), and the local memory a rank process then holds "
                             "on one H200 (132 SMs x 2048 threads):"), out
    frames = out[4:]
    assert len(frames) == gate_bench.LARGEST, out
    frame = re.compile(r"\s+0 B\s+0\.00 GiB  (load|store)@1 (triton|gluon), num_warps \d+, \d+ registers")
    assert all(frame.fullmatch(line) for line in frames), frames


def test_bench_compile_time_compiles_each_kernel_untraced_then_traced_in_an_empty_cache(capsys, monkeypatch):
    """A row per API and op count, each from two compiles of that kernel (tracing off, then on: the constexprs each
    compile got), each in a cache of its own, empty when the compile starts. Run through ``main`` here (the script as
    a user runs it: ``tests/benchmarks/test_bad_input.py``'s child rows)."""
    compile_ = triton.compile
    compiles: list[tuple] = []

    def recorded(src, target=None, options=None):
        cache = triton.knobs.cache.dir
        fields = {src.fn.arg_names[k[0]]: v for k, v in src.constants.items()}
        compiles.append((src.fn.__name__, target.arch, fields["OPS"], fields["TRACING"], cache, os.listdir(cache)))
        return compile_(src, target=target, options=options)

    monkeypatch.setattr(triton, "compile", recorded)
    rows = compile_time_bench.main(CPU_RUNS["bench_compile_time"])
    out = capsys.readouterr().out.splitlines()
    heading = (f"one compile each in an empty cache, 256-element blocks, num_warps 4, triton {triton.__version__}; "
               "least of 1")
    assert out[:2] == [heading, compile_time_bench.HEADER], out
    order = [(api, ops) for api in ("triton", "gluon") for ops in (1, 2)]
    assert [(r["target"], r["api"], r["ops"]) for r in rows] == [("sm_90", api, ops) for api, ops in order], rows
    assert out[2:] == [compile_time_bench.line(r) for r in rows], out
    for row, text in zip(rows, out[2:], strict=True):
        cells = text.split()
        assert all(finite(c) > 0 for c in cells[3:]), text
        assert math.isclose(float(cells[5]), row["auto"] / row["untraced"], abs_tol=0.006), text
    assert compiles[0][:4] == ("triton_op_pairs", 90, 1, False), compiles[0]  # the untimed first compile
    timed = [(name, arch, ops, traced) for name, arch, ops, traced, _, _ in compiles[1:]]
    assert timed == [(f"{api}_op_pairs", 90, ops, traced) for api, ops in order for traced in (False, True)], timed
    caches = [cache for *_, cache, _ in compiles]
    assert len(set(caches)) == len(caches) and all(listed == [] for *_, listed in compiles), compiles
    assert not any(os.path.exists(c) for c in caches), "each compile's cache is removed after it"


CROSS_COMPILING = ("bench_compile_time", "bench_gate_compiles", "bench_tile_resources")  # no kernel run, any backend


class Restarted(Exception):
    """``os.execve`` called: in a real run it does not return."""


@pytest.mark.parametrize(("interpret", "restarted"), [("1", True), ("true", True), ("0", False), ("", False),
                                                   (None, False)])
def test_a_cross_compiling_script_started_under_the_interpreter_starts_again_without_it(monkeypatch, interpret,
                                                                                        restarted):
    """``TRITON_INTERPRET`` on when a script that cross-compiles starts: its kernels were made interpreted when it was
    imported, so it starts again as ``python -m`` with the same arguments and the interpreter off; off or unset, its
    ``main`` runs. Every script that only cross-compiles starts through it (``bench_collectives`` runs its kernels
    under the interpreter on the CPU)."""
    started: list[tuple] = []

    def execve(path, argv, env):
        started.append((path, argv, env))
        raise Restarted

    monkeypatch.setattr(os, "execve", execve)
    monkeypatch.setattr(sys, "argv", ["bench_compile_time.py", "--ops", "1,2"])
    if interpret is None:
        monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    else:
        monkeypatch.setenv("TRITON_INTERPRET", interpret)
    ran: list[bool] = []
    if restarted:
        with pytest.raises(Restarted):
            cross_compile.run_script(lambda: ran.append(True), "benchmarks.bench_compile_time")
        ((path, argv, env),) = started
        assert (path, argv) == (sys.executable, [sys.executable, "-m", "benchmarks.bench_compile_time", "--ops", "1,2"])
        assert "TRITON_INTERPRET" not in env and env == {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    else:
        cross_compile.run_script(lambda: ran.append(True), "benchmarks.bench_compile_time")
    assert ran == ([] if restarted else [True]) and len(started) == int(restarted)
    for name in CROSS_COMPILING:
        text = (ROOT / f"benchmarks/{name}.py").read_text()
        assert text.endswith('if __name__ == "__main__":\n    run_script(main, __spec__.name)\n'), name


def test_bench_tile_resources_prints_what_the_cross_compile_reads(capsys):
    """A row per kernel and API, each figure the one ``resources`` reads from the same compile (no GPU needed). Run
    through ``main`` here, not a child: a child would compile and disassemble again what ``rows`` reads below
    (``tests/benchmarks/test_bad_input.py`` runs the script as a user does)."""
    resources_bench.main(CPU_RUNS["bench_tile_resources"])
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("cross-compiled, 64x64 tiles, num_warps 4, triton ") and out[1] == resources_bench.HEADER
    expected = [resources_bench.line(r) for r in resources_bench.rows(("all_scatter", "tile_load"), ("sm_90",))]
    assert out[2:] == expected and len(expected) == 4, out
    for row in out[2:]:
        registers, programs, instructions = (tuple(map(int, cell.split("/"))) for cell in row.split()[3:6])
        assert all(x > 0 for x in registers + programs + instructions), row


def test_bench_tile_resources_reads_every_part_of_scatter_parts(capsys):
    """``--kernels parts``: a row per part and API, in ``PARTS`` order, each against the one untraced compile (part
    0), the added instructions their difference; a record given a constant span adds fewer instructions than one that
    reduces the lowest address, the count or both, in both APIs (what docs/figures.md reads from this table)."""
    found = resources_bench.main(["--kernels", "parts", "--targets", "sm_90"])
    out = capsys.readouterr().out.splitlines()
    assert out[1] == resources_bench.HEADER and out[2:] == [resources_bench.line(r) for r in found], out
    parts = [f"part_{name}" for name in K.PARTS if name != "untraced"]
    assert [(r.kernel, r.api) for r in found] == [(k, a) for k in parts for a in ("triton", "gluon")], out
    for api in ("triton", "gluon"):
        rows = {r.kernel: r for r in found if r.api == api}
        assert len({r.untraced for r in rows.values()}) == 1, (api, out)
        assert all(r.added == r.traced.instructions - r.untraced.instructions > 0 for r in rows.values()), out
        constant = rows["part_constant"].added
        assert constant < min(rows[k].added for k in ("part_lowest", "part_count", "part_bracketed")), out


def test_bench_scatter_parts_prints_every_part_of_both_apis_on_the_cpu():
    """A line per API naming every part in order, each with its time, ratio to untraced and min-max (the interpreter
    compiles nothing: no registers)."""
    out = run("bench_scatter_parts")
    assert out[0].startswith(f"cpu: all-scatter 64x64 float32, 1 rank, 64x64 tiles, hint (1, 64), chunk {CHUNK}, 1 "
                             "launches per timing;"), out
    cell = re.compile(rf"(\w+) {NUMBER} x{NUMBER} \({NUMBER}-{NUMBER}, - reg\)$")
    assert [line.split()[0] for line in out[1:]] == ["triton", "gluon"], out
    for line in out[1:]:
        cells = [cell.match(c.strip()) for c in line.split(maxsplit=1)[1].split(";")]
        assert all(cells) and [c.group(1) for c in cells] == list(parts_bench.ROWS), line
        for c in cells:
            ms, ratio, low, high = (finite(x) for x in c.groups()[1:])
            assert 0 < low <= ms <= high, line
        untraced = float(cells[0].group(2))
        assert float(cells[0].group(3)) == 1.0, line
        for c in cells[1:]:
            assert math.isclose(float(c.group(3)), float(c.group(2)) / untraced, rel_tol=2e-3, abs_tol=2e-3), line


def test_bench_tracing_device_prints_both_apis_on_the_cpu():
    out = run("bench_tracing_device")
    at = out.index(device_bench.HEADER)
    auto_at = out.index(device_bench.AUTO_HEADER)
    heading, rows, auto_rows = out[at - 1], out[at + 1:auto_at], out[auto_at + 1:]
    assert [r.split()[0] for r in auto_rows] == ["triton", "gluon"], auto_rows
    spread = rf"per launch min/median/max: untraced {NUMBER}/{NUMBER}/{NUMBER} ms, traced {NUMBER}/{NUMBER}/{NUMBER} ms"
    counts = device_bench.pair_counts(PAIRS)
    points = ", ".join(f"{k}: {NUMBER}/{NUMBER}" for k in counts) + " ms untraced/traced"
    tiles = re.compile(rf"\(scatter_auto {spread}, registers traced/untraced -/-; tile_load {spread}, registers "
                       rf"traced/untraced -/-; store line through {points}; load line through {points}\)$")
    # the interpreter compiles nothing: no registers
    for row in auto_rows:
        figures, _, rest = row.partition("   (")
        store, store_r2, load, load_r2, busy, persistent, scatter, tile_load = (finite(x.strip("()"))
                                                                                for x in figures.split()[1:])
        assert 0 <= store_r2 <= 1 and 0 <= load_r2 <= 1 and persistent > 0 and scatter > 0 and tile_load > 0, row
        times = tiles.match("(" + rest)
        assert times and all(finite(x) > 0 for x in times.groups()), row
        t = [float(x) for x in times.groups()]
        assert t[0] <= t[1] <= t[2] and t[3] <= t[4] <= t[5] and t[6] <= t[7] <= t[8] and t[9] <= t[10] <= t[11], row
        assert math.isclose(scatter, t[4] / t[1], rel_tol=1e-3) and math.isclose(tile_load, t[10] / t[7],
                                                                                 rel_tol=1e-3), row
        _check_fitted(store, store_r2, t[12:18], counts, row)
        _check_fitted(load, load_r2, t[18:24], counts, row)
    assert heading.startswith(f"cpu: 1 ranks, 1 SMs, chunk {CHUNK}, {8 * layout.RECORD_WORDS} bytes/record; one "
                              f"program: {', '.join(map(str, counts))} pairs, claims from one launch of {PAIRS};"), \
        heading
    assert [r.split()[0] for r in rows] == ["triton", "gluon"], rows
    claims = max(1, math.ceil(PAIRS / CHUNK)) / (2 * PAIRS)  # one claim per chunk of records, 2 events a pair
    untraced = re.compile(rf"loop {NUMBER} ms, short {NUMBER} ms, persistent {NUMBER} ms; all-scatter per launch "
                          rf"min/median/max: untraced {NUMBER}/{NUMBER}/{NUMBER} ms, traced {NUMBER}/{NUMBER}/{NUMBER} "
                          rf"ms, untraced without the hint {NUMBER} ms; registers per thread traced/untraced: "
                          rf"persistent -/-, all-scatter -/-; scatter_span {spread}, registers traced/untraced -/-; "
                          rf"one program line through {points}\)$")
    for row in rows:  # the interpreter compiles nothing: no registers
        figures, _, rest = row.partition("   (untraced: ")
        one, r2, claim, floor, busy, short, persistent, scatter, span = (finite(x.strip("()"))
                                                                           for x in figures.split()[1:])
        assert 0 <= r2 <= 1 and claim == pytest.approx(claims, abs=1e-4), row
        assert persistent > 0 and scatter > 0, row
        times = untraced.search(rest)
        assert times and all(finite(t) > 0 for t in times.groups()), row
        t = [float(x) for x in times.groups()[-12:-6]]  # the span all-scatter's spreads, untraced then traced
        assert t[0] <= t[1] <= t[2] and t[3] <= t[4] <= t[5] and math.isclose(span, t[4] / t[1], rel_tol=1e-3), row
        _check_fitted(one, r2, [float(x) for x in times.groups()[-6:]], counts, row)


def _check_fitted(ns_per_unit: float, r2: float, points: list[float], counts: list[int], row: str) -> None:
    """The printed slope difference (ns) and R^2 are those of the lines through the printed points (untraced ms,
    traced ms at each loop length; printed to 0.1 us, so the slopes agree to a few of those per unit)."""
    untraced, traced = points[0::2], points[1::2]
    assert all(u > 0 and t > 0 for u, t in zip(untraced, traced, strict=True)), row
    slope = (device_bench.fit(counts, traced)[0] - device_bench.fit(counts, untraced)[0]) * 1e6
    assert math.isclose(ns_per_unit, slope, abs_tol=200.0), (ns_per_unit, slope, row)
    assert math.isclose(r2, device_bench.fit(counts, traced)[1], abs_tol=2e-3), (r2, row)


def test_the_one_program_line_is_a_least_squares_fit():
    slope, r2 = device_bench.fit([250, 500, 1000], [0.1 + 2e-4 * x for x in (250, 500, 1000)])
    assert slope == pytest.approx(2e-4) and r2 == pytest.approx(1.0)
    slope, r2 = device_bench.fit([1, 2, 3], [1.0, 3.0, 2.0])
    assert slope == pytest.approx(0.5) and r2 == pytest.approx(0.25)
    assert device_bench.pair_counts(1000) == [250, 500, 1000] and device_bench.pair_counts(2) == [1, 2]


@pytest.mark.parametrize("xs", [[1], [1, 2], [1, 1, 2], [4, 4, 4, 4]])
def test_a_line_through_fewer_than_three_distinct_points_is_refused(xs):
    """Any line passes through one or two points: the R^2 of 1.0000 it would print says nothing (was: --pairs 1
    printed R^2 1.0000 and a negative ns per pair)."""
    with pytest.raises(ValueError) as refused:
        device_bench.fit(xs, [float(x) for x in xs])
    assert str(refused.value) == (f"a line through the points at x = {', '.join(map(str, xs))}: {len(set(xs))} "
                                  "distinct x; expected at least 3")


def test_every_allowed_pairs_gives_three_distinct_loop_lengths():
    """--pairs is refused below MIN_PAIRS, and from there on the one-program line has FIT_POINTS distinct points."""
    assert device_bench.MIN_PAIRS == 4 and device_bench.FIT_POINTS == 3
    assert [len(device_bench.pair_counts(p)) for p in range(1, 4)] == [1, 2, 2]
    assert all(len(device_bench.pair_counts(p)) == 3 for p in range(4, 2000))


class _Launched(Exception):
    pass


def test_bench_tracing_device_defaults_to_the_cpu_sizes_without_a_gpu(monkeypatch, capsys):
    seen = {}

    def fake_launch(fn, world_size, sizes, chunk, auto_tracing, **kwargs):
        seen.update(fn=fn, sizes=sizes, env=kwargs["env"], auto_tracing=auto_tracing)
        raise _Launched

    monkeypatch.setattr(device_bench.torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(device_bench, "launch", fake_launch)
    with pytest.raises(_Launched):
        device_bench.main(["--work", "5"])
    cpu = device_bench.DEFAULTS["cpu"]
    assert seen["fn"] is device_bench.measure and seen["sizes"] == dataclasses.replace(cpu, work=5), seen
    assert seen["env"]["TRITON_INTERPRET"] == "1" and seen["auto_tracing"] is False, seen
    with pytest.raises(SystemExit) as refused:
        device_bench.main(["--backend", "gpu"])
    assert refused.value.code == 2 and "needs a GPU" in capsys.readouterr().err


def test_bench_tracing_host_prints_every_step_on_the_cpu():
    out = run("bench_tracing_host")
    at = next(i for i, line in enumerate(out) if line.startswith("cpu: "))
    assert out[at].startswith(f"cpu: {EVENTS:,} events ("), out[at]
    steps = ["events()", "json write", "json export", "pftrace write", "pftrace export"]
    rows = out[at + 1:at + 1 + len(steps)]
    for step, row in zip(steps, rows, strict=True):
        found = re.match(rf"^  {re.escape(step)} +{NUMBER} ms +{NUMBER} M events/s +{NUMBER} ns/event", row)
        assert found and finite(found[1]) > 0 and finite(found[3]) > 0, (step, row)
        if "export" in step:
            assert finite(re.search(rf"{NUMBER} B/event", row)[1]) > 0, row
    assert out[at + 1 + len(steps)].startswith("  one thread:    timeline "), out


def test_stress_traced_loops_runs_every_case_on_the_cpu():
    out = run("stress_traced_loops")
    at = out.index(f"{'api':<7} {'traces':<6} {'warps':>5} {'loop':>5}  result")
    rows = [line.split(None, 4) for line in out[at + 1:-1]]
    assert [r[:4] for r in rows] == [[api, kind, "4", n] for api in ("triton", "gluon") for kind in stress.KINDS
                                     for n in ("3", "5")], rows
    assert all(re.fullmatch(rf"finished 2/2, slowest {NUMBER} ms", r[4]) for r in rows), rows
    assert out[-1] == "every case finished" and out[at - 1].startswith("cpu: one program, chunk 64, 2 launches"), out


def test_stress_traced_loops_names_wrong_records():
    assert stress.wrong_records([0, 1, 2], 0, 3) is None
    assert stress.wrong_records([0, 2, 1], 0, 3) == "slots [0, 2, 1]...[2, 1] (3, expected 0..2), dropped 0"
    assert stress.wrong_records([0, 1], 0, 3) == "slots [0, 1]...[0, 1] (2, expected 0..2), dropped 0"
    assert stress.wrong_records([0, 1, 2], 1, 3) == "slots [0, 1, 2]...[1, 2] (3, expected 0..2), dropped 1"
