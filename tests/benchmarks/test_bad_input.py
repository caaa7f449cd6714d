"""Bad input to the benchmarks and the examples: one line on stderr naming the value and what was expected, exit code
2, nothing run, printed or written.

Every row goes through the script's ``main(argv)`` in this process, with what would start ranks or allocate replaced
by a function that fails the test; a few rows again in a child process, as a user meets them
(``python -m benchmarks.NAME ...``).
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from benchmarks import bench_compare, bench_tracing_host, stress_traced_loops
from conformance.kit.scenario import known_scenarios
from conformance.kit.scenario import names as scenario_names
from examples import run as examples_run
from tests.as_users import run_in_folders

pytestmark = pytest.mark.cpu_unit

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ("trace_store_triton", "trace_store_gluon", "message_passing_triton", "message_passing_gluon",
            "all_gather_triton", "all_gather_gluon", "fused_gather_compute_triton", "fused_gather_compute_gluon")
# where each script would start running: replaced by a function that fails the test (the examples that start ranks
# run through examples.run, whose launch is replaced)
STARTS = {"benchmarks.bench_collectives": "launch",
          "benchmarks.bench_compare": "bench", "benchmarks.bench_compile_time": "rows",
          "benchmarks.bench_conformance": "rows",
          "benchmarks.bench_gate_compiles": "variants",
          "benchmarks.bench_scatter_parts": "launch",
          "benchmarks.bench_tile_resources": "rows", "benchmarks.bench_tracing_device": "launch",
          "benchmarks.bench_tracing_host": "bench", "benchmarks.stress_traced_loops": "launch",
          "examples.timeline_png": "layout"}
WARPS = ", ".join(map(str, stress_traced_loops.num_warps_allowed()))
LOOPS = ("expected a comma list of integers from 1 to 2146435008 (loop lengths: the trace holds an event per "
         "iteration and a chunk), such as 250,1000")
EVENTS = "expected an integer from 1 to 2146435072 (the events one rank's tracing holds: slots are 32-bit)"
FOLDER = "expected a folder (new or existing) that can be written"
EVEN = "tests.conformance.faulty.even_ranks"
A_TRACE = "expected a trace that tracing.export wrote as JSON (a .json name, or format='json')"
PICTURE = "expected a PNG file in a folder that can be made and written"
TRACE_FILE = "expected a .json or .pftrace file in a folder that can be written"


_NOT_PLAIN = "; '{}' is not written in plain digits 0-9"  # the note where Python would read the value as a number
_POINT = " with an optional ."


def _at_least(option: str, value: str, minimum: int = 1) -> str:
    return f"argument {option}: {option} '{value}': expected an integer >= {minimum}"


def _world_size(value: str) -> str:
    return (f"argument --ranks: --ranks '{value}': expected an integer from 1 to 64 (a world size: at most the rank "
            "processes one host runs)")


CAPACITY = "expected a comma list of integers from 1 to 100 (percent of the events a rank records), such as 100,95"


SIZES = "expected a comma list of distinct byte counts, plain digits, each a multiple of 1024, such as 65536,1048576"
RANKS = "expected a comma list of integers from 2 to 8 (ranks sharing one GPU), such as 2,4,8"
COLLECTIVE_KERNELS = "all_gather, reduce_scatter, all_to_all, gather_matmul"
COLLECTIVE_VARIANTS = "untraced, auto, bracketed, both, span, offsets, bounds, claimed, proton"
CASES = [
    *[("benchmarks.bench_collectives", ["--sizes", value], f"argument --sizes: --sizes '{value}': {SIZES}")
      for value in ("1e6", "+65536", "65_536", "65536,", "", "65536,65536", "1000", "0", "-1024", " 65536")],
    *[("benchmarks.bench_collectives", ["--ranks", value], f"argument --ranks: --ranks '{value}': {RANKS}")
      for value in ("16", "1", "", "2,x", "4,")],
    ("benchmarks.bench_collectives", ["--ranks", "2,4,2"],
     "argument --ranks: --ranks '2,4,2': world size 2 is repeated; expected each world size once, such as 2,4,8"),
    ("benchmarks.bench_collectives", ["--kernels", ""],
     f"argument --kernels: --kernels '': expected a comma list of {COLLECTIVE_KERNELS}"),
    ("benchmarks.bench_collectives", ["--kernels", "all_gather,all_gather"],
     "argument --kernels: --kernels 'all_gather,all_gather': all_gather is repeated; expected each kernel once, such "
     "as all_gather,reduce_scatter,all_to_all,gather_matmul"),
    ("benchmarks.bench_collectives", ["--variants", "auto,untraced,auto"],
     "argument --variants: --variants 'auto,untraced,auto': auto is repeated; expected each variant once, such as "
     "untraced,auto,bracketed,both"),
    ("benchmarks.bench_collectives", ["--variants", "auto,nccl"],
     f"argument --variants: --variants 'auto,nccl': expected a comma list of {COLLECTIVE_VARIANTS}"),
    ("benchmarks.bench_collectives", ["--reps", "0"], _at_least("--reps", "0")),
    ("benchmarks.bench_collectives", ["--resources", "sm_80"],
     "argument --resources: --resources 'sm_80': expected a comma list of sm_90, gfx942"),
    ("benchmarks.bench_collectives", ["--min-ms", "0"],
     "argument --min-ms: --min-ms '0': expected a finite number of milliseconds > 0, at most 1000"),
    ("benchmarks.bench_collectives", ["--proton-buffer", "host"],
     "argument --proton-buffer: invalid choice: 'host' (choose from 'shared', 'global')"),
    # 1 GB a rank on 8 ranks: the fused kernel's output of 8 x 2^29 float16 elements
    ("benchmarks.bench_collectives", ["--backend", "cpu", "--sizes", "65536,1073741824", "--ranks", "2,8"],
     "--sizes 1 GB, --ranks 8: the kernels index elements with 32-bit offsets, and an output of 8 ranks' inputs "
     "would pass 2^31 elements; expected at most 536869888 bytes a rank at 8 ranks"),
    # 256 MB a rank on 8 ranks, a chunk of 2^20 slots for each of the fused kernel's 32768 programs (48 events each)
    ("benchmarks.bench_collectives", ["--backend", "cpu", "--sizes", "268435456", "--ranks", "8", "--chunk",
                                      "1048576"],
     "--sizes 256 MB, --ranks 8, --chunk 1048576: one launch would trace into 34361311232 slots, more than tracing "
     "holds (2146435072); expected smaller values"),
    *[("benchmarks.bench_compile_time", ["--ops", value], f"argument --ops: --ops '{value}': expected a comma list "
       "of integers from 1 to 256, such as 4,8,16,32") for value in ("0", "257", "4,", "x")],
    ("benchmarks.bench_compile_time", ["--ops", "4,8,4"],
     "argument --ops: --ops '4,8,4': op count 4 is repeated; expected each op count once, such as 4,8,16,32"),
    ("benchmarks.bench_compile_time", ["--targets", "sm_80"],
     "argument --targets: --targets 'sm_80': expected a comma list of sm_90, sm_100, gfx942, gfx950"),
    ("benchmarks.bench_compile_time", ["--reps", "0"], _at_least("--reps", "0")),
    ("benchmarks.bench_gate_compiles", ["--ranks", "0"],
     "argument --ranks: --ranks '0': expected a comma list of integers from 1 to 64 (world sizes), such as 1,2,4"),
    ("benchmarks.bench_gate_compiles", ["--scale", "huge"],
     "argument --scale: invalid choice: 'huge' (choose from 'small', 'gpu')"),
    ("benchmarks.bench_gate_compiles", ["--scenario", "load,nosuch"],
     f"argument --scenario: --scenario 'load,nosuch': expected a comma list of {', '.join(scenario_names())}"),
    ("benchmarks.bench_gate_compiles", ["--seed", "-1"], _at_least("--seed", "-1", 0)),
    ("benchmarks.bench_tile_resources", ["--kernels", "all_scatter,gemm"],
     "argument --kernels: --kernels 'all_scatter,gemm': expected a comma list of all_scatter, scatter_span, "
     "scatter_auto, tile_load, persistent, persistent_auto, part_claim, part_before, part_after, part_bracketed, "
     "part_span, part_fused, part_constant, part_lowest, part_count, parts"),
    ("benchmarks.bench_tile_resources", ["--targets", "sm_80"],
     "argument --targets: --targets 'sm_80': expected a comma list of sm_90, gfx942"),
    # a list option takes each entry once and no empty entry; numbers are plain digits
    ("benchmarks.bench_tile_resources", ["--kernels", "all_scatter,all_scatter"],
     "argument --kernels: --kernels 'all_scatter,all_scatter': all_scatter is repeated; expected each kernel once, "
     "such as all_scatter,scatter_span,scatter_auto,tile_load"),
    ("benchmarks.bench_tile_resources", ["--kernels", "parts,part_claim"],
     "--kernels parts,part_claim: part_claim named again by parts (every part of scatter_parts); expected each kernel "
     "once"),
    ("benchmarks.bench_tile_resources", ["--targets", "sm_90,,gfx942"],
     "argument --targets: --targets 'sm_90,,gfx942': expected a comma list of sm_90, gfx942"),
    ("benchmarks.bench_tile_resources", ["--targets", "gfx942,sm_90,gfx942"],
     "argument --targets: --targets 'gfx942,sm_90,gfx942': gfx942 is repeated; expected each target once, such as "
     "sm_90,gfx942"),
    ("benchmarks.bench_gate_compiles", ["--ranks", "2,1,2"],
     "argument --ranks: --ranks '2,1,2': world size 2 is repeated; expected each world size once, such as 1,2,4"),
    ("benchmarks.bench_gate_compiles", ["--scenario", "load,load"],
     "argument --scenario: --scenario 'load,load': load is repeated; expected each scenario once, such as "
     f"{','.join(scenario_names()[:4])}"),
    ("benchmarks.bench_gate_compiles", ["--scenario", "load", "--scenario", "store,load"],
     "argument --scenario: --scenario 'store,load': load given already by an earlier --scenario; expected each "
     "scenario once"),
    ("benchmarks.bench_compare", ["--capacity", "100,100"],
     "argument --capacity: --capacity '100,100': capacity 100 is repeated; expected each capacity once, such as "
     "100,95"),
    *[("benchmarks.bench_compare", ["--events", value], _at_least("--events", value) + note)
      for value, note in (("1_000", _NOT_PLAIN.format("1_000")), ("+5", _NOT_PLAIN.format("+5")),
                          (" 5", _NOT_PLAIN.format(" 5")), ("\u0665", _NOT_PLAIN.format("\u0665")), ("0x10", ""))],
    ("benchmarks.bench_compare", ["--events", "9" * 5000],
     "argument --events: --events '9999999999999999999999999999999999999999'...(5000 characters): expected an "
     "integer >= 1"),
    ("benchmarks.stress_traced_loops", ["--loops", "5,4,5"],
     "argument --loops: --loops '5,4,5': loop length 5 is repeated; expected each loop length once, such as "
     "250,1000"),
    ("benchmarks.stress_traced_loops", ["--warps", "4,4"],
     "argument --warps: --warps '4,4': num_warps 4 is repeated; expected each num_warps once, such as 4,8"),
    ("benchmarks.stress_traced_loops", ["--kinds", "store,store"],
     "argument --kinds: --kinds 'store,store': store is repeated; expected each kind once, such as pairs,store,load"),
    *[("benchmarks.stress_traced_loops", ["--timeout", value],
       f"argument --timeout: --timeout '{value}': expected a finite number of seconds > 0, at most 86400{note}")
      for value, note in (("1_0", _NOT_PLAIN.format("1_0") + _POINT), (" 5", _NOT_PLAIN.format(" 5") + _POINT),
                          ("+5", _NOT_PLAIN.format("+5") + _POINT), ("0x10", ""))],
    ("benchmarks.bench_compare", ["--events", "0"], _at_least("--events", "0")),
    ("benchmarks.bench_compare", ["--events", "1e6"], _at_least("--events", "1e6")),
    ("benchmarks.bench_compare", ["--ranks", "0"], _world_size("0")),
    ("benchmarks.bench_compare", ["--ranks", "65"], _world_size("65")),
    ("benchmarks.bench_compare", ["--programs", "0"], _at_least("--programs", "0")),
    *[("benchmarks.bench_compare", ["--chunk", value],
       f"argument --chunk: --chunk '{value}': expected an integer from 1 to 1048576 (slots a program claims at a "
       "time: tracing.enable's chunk)") for value in ("0", "2000000")],
    *[("benchmarks.bench_compare", ["--capacity", value], f"argument --capacity: --capacity '{value}': {CAPACITY}")
      for value in ("0", "101", "100,x", "")],
    ("benchmarks.bench_compare", ["--repeat", "0"], _at_least("--repeat", "0")),
    ("benchmarks.bench_compare", ["--seed", "-1"], _at_least("--seed", "-1", 0)),
    ("benchmarks.bench_compare", ["--events", "3999", "--ranks", "4", "--programs", "1000"],
     "--events 3999: fewer than --ranks 4 x --programs 1000; expected at least 4000 (every program records an "
     "event)"),
    ("benchmarks.bench_conformance", ["--scenario", "nosuch"],
     f"unknown scenario 'nosuch'; {known_scenarios()}"),
    ("benchmarks.bench_conformance", ["--examples", "-1"], _at_least("--examples", "-1")),
    ("benchmarks.bench_conformance", ["--scenario", "load", "--scenario", "store", "--scenario", "load"],
     "argument --scenario: --scenario 'load': load given already by an earlier --scenario; expected each scenario "
     "once"),
    ("benchmarks.bench_conformance", ["--examples", "0"], _at_least("--examples", "0")),
    ("benchmarks.bench_conformance", ["--ranks", "0"], _world_size("0")),
    ("benchmarks.bench_conformance", ["--ranks", "100000"], _world_size("100000")),
    ("benchmarks.bench_conformance", ["--cold-warm", "-2"], _at_least("--cold-warm", "-2", 0)),
    ("benchmarks.bench_conformance", ["--examples", "2", "--cold-warm", "4"],
     "--cold-warm 4: expected at most 3, the examples a scenario runs (--examples 2 and the first)"),
    ("benchmarks.bench_conformance", ["--scenario", EVEN, "--ranks", "3"],
     "--ranks 3: even_ranks refuses 3 rank(s): pairs rank 2k with 2k+1 (an even world); it accepts e.g. 2, 4"),
    ("benchmarks.bench_conformance", ["--backend", "tpu"],
     "argument --backend: invalid choice: 'tpu' (choose from 'cpu', 'gpu')"),
    ("benchmarks.bench_tracing_host", ["--out", "{tmp}/afile"],
     f"argument --out: --out '{{tmp}}/afile': exists and is not a folder; {FOLDER}"),
    ("benchmarks.bench_tracing_host", ["--out", "{tmp}/afile/out"],
     f"argument --out: --out '{{tmp}}/afile/out': {{tmp}}/afile is not a folder, so no folder can be made under it; "
     f"{FOLDER}"),
    ("benchmarks.bench_tracing_host", ["--out", "/proc/x/out"],
     f"argument --out: --out '/proc/x/out': nothing can be made or written in /proc (No such file or directory); "
     f"{FOLDER}"),
    pytest.param("benchmarks.bench_tracing_host", ["--out", "{tmp}/locked/out"],
                 f"argument --out: --out '{{tmp}}/locked/out': nothing can be made or written in {{tmp}}/locked "
                 f"(Permission denied); {FOLDER}",
                 marks=pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")),
    ("benchmarks.bench_tracing_host", ["--events", "3000000000"],
     f"argument --events: --events '3000000000': {EVENTS}"),
    ("benchmarks.bench_tracing_host", ["--events", "0"], f"argument --events: --events '0': {EVENTS}"),
    ("benchmarks.bench_tracing_host", ["--events", "1e6"], f"argument --events: --events '1e6': {EVENTS}"),
    ("benchmarks.bench_tracing_host", ["--repeat", "0"], _at_least("--repeat", "0")),
    ("benchmarks.bench_tracing_host", ["--device", "tpu"],
     "argument --device: invalid choice: 'tpu' (choose from 'auto', 'cpu', 'cuda')"),
    ("benchmarks.stress_traced_loops", ["--launches", "0"], _at_least("--launches", "0")),
    ("benchmarks.stress_traced_loops", ["--warps", "3"],
     f"argument --warps: --warps '3': expected a comma list of {WARPS} (num_warps: a power of two, at most 1024 "
     "threads a program), such as 4,8"),
    ("benchmarks.stress_traced_loops", ["--warps", "4,64"],
     f"argument --warps: --warps '4,64': expected a comma list of {WARPS} (num_warps: a power of two, at most 1024 "
     "threads a program), such as 4,8"),
    ("benchmarks.stress_traced_loops", ["--loops", "0"], f"argument --loops: --loops '0': {LOOPS}"),
    ("benchmarks.stress_traced_loops", ["--loops", "4,"], f"argument --loops: --loops '4,': {LOOPS}"),
    ("benchmarks.stress_traced_loops", ["--loops", "3000000000"], f"argument --loops: --loops '3000000000': {LOOPS}"),
    ("benchmarks.stress_traced_loops", ["--timeout", "0"],
     "argument --timeout: --timeout '0': expected a finite number of seconds > 0, at most 86400"),
    ("benchmarks.stress_traced_loops", ["--timeout", "inf"],
     "argument --timeout: --timeout 'inf': expected a finite number of seconds > 0, at most 86400"),
    ("benchmarks.stress_traced_loops", ["--kinds", "pairs,nope"],
     "argument --kinds: --kinds 'pairs,nope': expected a comma list of pairs, store, load"),
    # a line through 1 or 2 loop lengths (pairs 1 to 3) is no fit: it printed R^2 1.0000 and any slope
    *[("benchmarks.bench_tracing_device", ["--pairs", value], f"argument --pairs: --pairs '{value}': expected an "
       "integer >= 4 (the one-program line is fitted through loops of pairs/4, pairs/2 and pairs: 3 distinct lengths)")
      for value in ("0", "1", "2", "3", "4.0")],
    *[("benchmarks.bench_tracing_device", [option, value], _at_least(option, value))
      for option, value in (("--reps", "-1"), ("--size", "0"), ("--sms", "0"), ("--work", "x"),
                            ("--scatter-launches", "0"))],
    ("benchmarks.bench_tracing_device", ["--ranks", "0"], _world_size("0")),
    ("benchmarks.bench_tracing_device", ["--ranks", "65"], _world_size("65")),
    *[("benchmarks.bench_tracing_device", ["--chunk", value],
       f"argument --chunk: --chunk '{value}': expected an integer from 1 to 1048576 (slots a program claims at a "
       "time: tracing.enable's chunk)") for value in ("0", "2000000")],
    # the all-scatter's tiles alone (156250 x 156250 per launch) are more events than tracing holds
    ("benchmarks.bench_tracing_device", ["--backend", "cpu", "--size", "10000000"],
     "--chunk 64, --ranks 1, --pairs 4, --size 10000000, --scatter-launches 1, --sms 1: every rank would trace into "
     "1586914062500 slots (room for a launch's events and a chunk for each of its programs), more than tracing holds "
     "(2146435072: slots are 32-bit); expected smaller values"),
    *[("benchmarks.bench_scatter_parts", [option, value], _at_least(option, value))
      for option, value in (("--reps", "0"), ("--size", "0"), ("--launches", "-1"), ("--size", "x"))],
    ("benchmarks.bench_scatter_parts", ["--chunk", "0"],
     "argument --chunk: --chunk '0': expected an integer from 1 to 1048576 (slots a program claims at a time: "
     "tracing.enable's chunk)"),
    # 100 launches of 640 x 640 tiles, a chunk of 64 slots for each
    ("benchmarks.bench_scatter_parts", ["--backend", "cpu", "--size", "40960", "--launches", "100"],
     "--size 40960, --launches 100, --chunk 64: a group of launches would claim 2621440000 trace slots, more than "
     "tracing holds (2146435072); expected smaller values"),
    *[(f"examples.{name}", ["--ranks", "0"], _world_size("0")) for name in EXAMPLES],
    ("examples.trace_store_triton", ["--ranks", "-1"], _world_size("-1")),
    ("examples.trace_store_gluon", ["--ranks", "100000"], _world_size("100000")),
    ("examples.message_passing_gluon", ["--ranks", "two"], _world_size("two")),
    # the merged trace's path, checked before any rank starts (was: a 51-line traceback after the kernels ran)
    *[(f"examples.{name}", ["--out", value], f"--out '{value}': {why}; {TRACE_FILE}") for name in EXAMPLES
      for value, why in (("locked", "is a folder"), ("afile/t.json", "cannot write trace to 'afile/t.json': 'afile' is "
                                                                      "not a folder"))],
    ("examples.trace_store_gluon", ["--out", ""], f"--out '': is empty; {TRACE_FILE}"),
    ("examples.message_passing_triton", ["--out", "t.txt"],
     "--out 't.txt': has no trace suffix (.json, .pftrace, .perfetto-trace: the suffix picks the format); "
     f"{TRACE_FILE}"),
    ("examples.all_gather_gluon", ["--out", "nosuch/t.json"], "--out 'nosuch/t.json': cannot write trace to "
                                                              f"'nosuch/t.json': folder 'nosuch' does not exist; "
                                                              f"{TRACE_FILE}"),
    ("examples.fused_gather_compute_triton", ["--out", "/proc/t.json"], "--out '/proc/t.json': cannot write trace to "
                                                                        "'/proc/t.json': folder '/proc' does not "
                                                                        "accept new files (No such file or "
                                                                        f"directory); {TRACE_FILE}"),
    pytest.param("examples.trace_store_triton", ["--out", "locked/t.json"],
                 f"--out 'locked/t.json': cannot write trace to 'locked/t.json': folder 'locked' is not writable; "
                 f"{TRACE_FILE}", marks=pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only "
                                                                                     "folder")),
    # traced throughout (trace_ops=True): no bracketed variant to choose
    *[(f"examples.{name}", ["--auto"], "unrecognized arguments: --auto") for name in EXAMPLES[4:]],
    ("examples.fused_gather_compute_gluon", ["--ranks", "65"], _world_size("65")),
    ("examples.timeline_png", [], "the following arguments are required: TRACE"),
    ("examples.timeline_png", ["{tmp}/nosuch.json"],
     f"argument TRACE: TRACE '{{tmp}}/nosuch.json': no such file; {A_TRACE}"),
    ("examples.timeline_png", ["afile"], f"argument TRACE: TRACE 'afile': is not JSON; {A_TRACE}"),
    ("examples.timeline_png", ["locked"], f"argument TRACE: TRACE 'locked': is a folder; {A_TRACE}"),
    *[("examples.timeline_png", ["--width", value, "afile"],
       f"argument --width: --width '{value}': expected an integer from 320 to 8000 (pixels)")
      for value in ("319", "8001", "x")],
    ("examples.timeline_png", ["--out", "afile/x.png", "afile"],
     f"argument --out: --out 'afile/x.png': afile is not a folder; {PICTURE}"),
    ("examples.timeline_png", ["--out", "locked", "afile"], f"argument --out: --out 'locked': is a folder; {PICTURE}"),
    ("examples.timeline_png", ["--out", "", "afile"], f"argument --out: --out '': is empty; {PICTURE}"),
    ("examples.timeline_png", ["--out", "afile", "afile"], f"argument --out: --out 'afile': does not end in .png; "
                                                           f"{PICTURE}"),
]
# refused on a machine where torch sees no GPU (here: told so)
WITHOUT_GPU = [
    ("benchmarks.bench_collectives", ["--backend", "gpu"], "--backend gpu needs a GPU (torch.cuda.is_available() is "
                                                           "False)"),
    ("benchmarks.bench_conformance", ["--backend", "gpu"], "--backend gpu needs a GPU (torch.cuda.is_available() is "
                                                           "False)"),
    ("benchmarks.bench_tracing_device", ["--backend", "gpu"], "--backend gpu needs a GPU (torch.cuda.is_available() "
                                                              "is False)"),
    ("benchmarks.bench_scatter_parts", ["--backend", "gpu"], "--backend gpu needs a GPU (torch.cuda.is_available() "
                                                             "is False)"),
    ("benchmarks.stress_traced_loops", ["--backend", "gpu"], "--backend gpu needs a GPU (torch.cuda.is_available() is "
                                                             "False)"),
    ("benchmarks.bench_tracing_host", ["--device", "cuda"], "--device cuda: torch sees no GPU "
                                                            "(torch.cuda.is_available() is False)"),
]


def _refused(module: str, argv: list[str], monkeypatch, tmp_path: Path, capsys) -> tuple[int, str]:
    """``python -m module argv`` through its ``main`` in this process, in ``tmp_path`` holding only ``afile`` (and
    ``locked``, a folder nobody may write to); the exit code and stderr. Whatever would start running fails."""

    def ran(*args, **kwargs):
        raise AssertionError(f"{module} {' '.join(argv)} ran: bad input must be refused before")

    if module.startswith("examples.") and module not in STARTS:
        monkeypatch.setattr(examples_run, "launch", ran)
        example = importlib.import_module(module)

        def main(args):
            return examples_run.run_example(example.main, args)
    else:
        script = importlib.import_module(module)
        monkeypatch.setattr(script, STARTS[module], ran)
        main = script.main
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as refused:
        main([a.replace("{tmp}", str(tmp_path)) for a in argv])
    out, err = capsys.readouterr()
    assert not out, f"printed before refusing: {out}"
    return refused.value.code, err


def _setup(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("not a folder")
    (tmp_path / "locked").mkdir(mode=0o555)


def _nothing_written(tmp_path: Path) -> None:
    assert sorted(os.listdir(tmp_path)) == ["afile", "locked"], "output was written before the input was refused"
    assert (tmp_path / "afile").read_text() == "not a folder" and not os.listdir(tmp_path / "locked")


@pytest.mark.parametrize(("module", "argv", "expected"), CASES)
def test_bad_input_is_one_line_and_exit_code_2(tmp_path, capsys, monkeypatch, module, argv, expected):
    _setup(tmp_path)
    code, err = _refused(module, argv, monkeypatch, tmp_path, capsys)
    assert code == 2, f"exit code={code}, but should be 2: {err}"
    assert err == f"python -m {module}: {expected}\n".replace("{tmp}", str(tmp_path))
    _nothing_written(tmp_path)


def _default_traces() -> list[tuple[str, list[str], str]]:
    """Each example, and its --auto variant where it has one, with the name of the trace it writes by default."""
    cases = []
    for name in EXAMPLES:
        example = importlib.import_module(f"examples.{name}")
        cases.append((name, [], example.TRACE))
        if hasattr(example, "AUTO_TRACE"):
            cases.append((name, ["--auto"], example.AUTO_TRACE))
    return cases


@pytest.mark.parametrize(("name", "argv", "trace"), _default_traces())
def test_an_example_whose_default_trace_cannot_be_written_is_refused_before_it_runs(tmp_path, capsys, monkeypatch,
                                                                                      name, argv, trace):
    """A folder named as the trace in the current folder: one line, exit 2, no rank started (was: a 51-line
    traceback after the kernels ran)."""
    _setup(tmp_path)
    (tmp_path / trace).mkdir()
    code, err = _refused(f"examples.{name}", argv, monkeypatch, tmp_path, capsys)
    assert (code, err) == (2, f"python -m examples.{name}: the trace '{trace}' (the default: --out names another): is "
                              f"a folder; {TRACE_FILE}\n")
    assert sorted(os.listdir(tmp_path)) == sorted(["afile", "locked", trace]) and not os.listdir(tmp_path / trace)


@pytest.mark.parametrize("name", EXAMPLES)
def test_an_example_run_from_a_read_only_folder_is_refused_before_it_runs(tmp_path, capsys, monkeypatch, name):
    """The current folder takes no file: one line, exit 2, no rank started (root writes anywhere: there the folder
    is made to look read-only to the permission check)."""
    _setup(tmp_path)
    if os.geteuid() == 0:
        access = os.access
        monkeypatch.setattr(os, "access", lambda path, mode, **kw: (mode != os.W_OK or os.path.abspath(path) !=
                                                                    str(tmp_path / "locked")) and access(path, mode))
    trace = importlib.import_module(f"examples.{name}").TRACE
    code, err = _refused(f"examples.{name}", [], monkeypatch, tmp_path / "locked", capsys)
    assert (code, err) == (2, f"python -m examples.{name}: the trace '{trace}' (the default: --out names another): "
                              f"cannot write trace to '{trace}': folder '.' is not writable; {TRACE_FILE}\n")
    _nothing_written(tmp_path)


@pytest.mark.parametrize(("module", "argv", "expected"), WITHOUT_GPU)
def test_a_gpu_asked_for_without_one_is_refused(tmp_path, capsys, monkeypatch, module, argv, expected):
    _setup(tmp_path)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    code, err = _refused(module, argv, monkeypatch, tmp_path, capsys)
    assert code == 2 and err == f"python -m {module}: {expected}\n", (code, err)
    _nothing_written(tmp_path)


@pytest.mark.parametrize(("script", "events", "expected"), [
    # 2,000,000,000 events fit the 32-bit slots but not the memory (about 1 TiB at the run's peak)
    (bench_tracing_host, "2000000000", "a run holds about 1043 GiB at its peak (560 bytes per event), this machine "
                                       "has 64 GiB of memory; expected at most 122713351 events"),
    # 100,000,000 events to compare need about 149 GiB at the run's peak (the model's events alone are Python objects)
    (bench_compare, "100000000", "a run holds about 149 GiB at its peak (1600 bytes per event), this machine has 64 "
                                 "GiB of memory; expected at most 42949672 events"),
])
def test_more_events_than_the_memory_holds_are_refused(script, events, expected, tmp_path, capsys, monkeypatch):
    _setup(tmp_path)
    monkeypatch.setattr(script, "physical_memory", lambda: 64 << 30)
    module = script.__name__
    code, err = _refused(module, ["--events", events], monkeypatch, tmp_path, capsys)
    assert code == 2, (code, err)
    assert err == f"python -m {module}: --events {events}: {expected}\n", err
    _nothing_written(tmp_path)


def test_num_warps_are_the_powers_of_two_of_a_1024_thread_program(monkeypatch):
    monkeypatch.setattr(torch.version, "hip", None)
    assert stress_traced_loops.num_warps_allowed() == (1, 2, 4, 8, 16, 32)
    monkeypatch.setattr(torch.version, "hip", "6.2")  # 64 lanes a warp
    assert stress_traced_loops.num_warps_allowed() == (1, 2, 4, 8, 16)


def _as_a_user(tmp_path: Path, module: str, *argv: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"} | {"PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", module, *argv], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)


USER = [
    ("benchmarks.bench_collectives", ["--sizes", "64k"], f"argument --sizes: --sizes '64k': {SIZES}"),
    ("benchmarks.bench_compare", ["--capacity", "0"], f"argument --capacity: --capacity '0': {CAPACITY}"),
    ("benchmarks.bench_conformance", ["--scenario", "nosuch"], "unknown scenario 'nosuch'; known scenarios: "),
    ("benchmarks.bench_conformance", ["--examples", "-1"], _at_least("--examples", "-1")),
    ("benchmarks.bench_conformance", ["--scenario", "load", "--scenario", "store", "--scenario", "load"],
     "argument --scenario: --scenario 'load': load given already by an earlier --scenario; expected each scenario "
     "once"),
    ("benchmarks.bench_tracing_host", ["--out", "afile"], f"argument --out: --out 'afile': exists and is not a "
                                                          f"folder; {FOLDER}"),
    ("benchmarks.bench_tracing_host", ["--events", "3000000000"], f"argument --events: --events '3000000000': "
                                                                  f"{EVENTS}"),
    ("benchmarks.stress_traced_loops", ["--warps", "3"], "argument --warps: --warps '3': expected a comma list of "),
    ("benchmarks.bench_tracing_device", ["--chunk", "0"], "argument --chunk: --chunk '0': expected an integer from 1 "
                                                          "to 1048576"),
    ("benchmarks.bench_tracing_device", ["--pairs", "1"], "argument --pairs: --pairs '1': expected an integer >= 4 "),
    ("benchmarks.bench_tile_resources", ["--kernels", "all_scatter,all_scatter"],
     "argument --kernels: --kernels 'all_scatter,all_scatter': all_scatter is repeated"),
    ("benchmarks.bench_compare", ["--capacity", "100,100"], "argument --capacity: --capacity '100,100': capacity 100 "
                                                            "is repeated"),
    ("benchmarks.bench_compile_time", ["--ops", "0"], "argument --ops: --ops '0': expected a comma list of integers "
                                                      "from 1 to 256"),
    ("examples.message_passing_triton", ["--ranks", "0"], _world_size("0")),
    ("examples.all_gather_triton", ["--out", "afile/t.json"], "--out 'afile/t.json': cannot write trace to "
                                                              "'afile/t.json': 'afile' is not a folder; "),
    ("examples.trace_store_triton", ["--out", "afile"], "--out 'afile': has no trace suffix"),
    ("examples.timeline_png", ["nosuch.json"], f"argument TRACE: TRACE 'nosuch.json': no such file; {A_TRACE}"),
]


def test_a_user_whose_folder_holds_a_folder_named_as_the_trace_sees_one_line(tmp_path):
    """``python -m examples.trace_store_triton`` where ``triton_trace.json`` is a folder: refused before any rank
    starts (was: the kernels ran, then a 51-line traceback)."""
    (tmp_path / "triton_trace.json").mkdir()
    done = _as_a_user(tmp_path, "examples.trace_store_triton", "--cpu")
    assert (done.returncode, done.stdout) == (2, ""), (done.returncode, done.stdout, done.stderr)
    assert done.stderr == ("python -m examples.trace_store_triton: the trace 'triton_trace.json' (the default: --out "
                           f"names another): is a folder; {TRACE_FILE}\n"), done.stderr
    assert os.listdir(tmp_path) == ["triton_trace.json"] and not os.listdir(tmp_path / "triton_trace.json")


HELP = [*STARTS, *(f"examples.{name}" for name in EXAMPLES)]


@pytest.fixture(scope="module")
def as_users(tmp_path_factory) -> dict:
    """Every ``USER`` line and every script's ``--help``, run once in one child process (``run_in_folders``)."""
    return run_in_folders(tmp_path_factory, [(module, argv) for module, argv, _ in USER] +
                          [(module, ["--help"]) for module in HELP])


@pytest.mark.parametrize(("module", "argv", "expected"), USER)
def test_a_user_sees_one_line_and_no_traceback(as_users, module, argv, expected):
    done, folder = as_users[(module, *argv)]
    assert done.returncode == 2, f"exit code={done.returncode}, but should be 2: {done.stderr}"
    assert done.stderr.startswith(f"python -m {module}: {expected}"), done.stderr
    assert done.stderr.count("\n") == 1 and not done.stdout, (done.stdout, done.stderr)
    assert os.listdir(folder) == ["afile"], "output was written before the input was refused"


@pytest.mark.parametrize("module", HELP)
def test_help_names_the_script_and_says_what_it_does(as_users, module):
    done, folder = as_users[module, "--help"]
    first_line = importlib.import_module(module).__doc__.splitlines()[0]
    assert done.returncode == 0 and not done.stderr, (done.returncode, done.stderr)
    assert done.stdout.startswith(f"usage: python -m {module} [-h]"), done.stdout
    assert f"\n\n{first_line}\n" in done.stdout, done.stdout
    assert os.listdir(folder) == ["afile"], "--help wrote a file"


def test_help_in_a_process_of_its_own_is_what_the_batch_saw(tmp_path, as_users):
    """One script's ``--help`` as a user starts it, in a fresh interpreter: what the shared child saw, exactly."""
    (tmp_path / "afile").write_text("not a folder")
    module = "benchmarks.bench_collectives"
    done = _as_a_user(tmp_path, module, "--help")
    seen, _ = as_users[module, "--help"]
    assert (done.returncode, done.stdout, done.stderr) == (seen.returncode, seen.stdout, seen.stderr)
