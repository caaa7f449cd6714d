"""Bad input to ``run`` and ``gate``: one line naming the value and the choices, exit code 2, no traceback.

Nothing runs: the input is refused before any rank starts or any output is written. Checked through ``main`` in
this process, and once in a child process, as a user meets it.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.cli import main
from tests.as_users import run_in_folders

pytestmark = pytest.mark.cpu_unit

ROOT = Path(__file__).resolve().parents[2]
EVEN = "tests.conformance.faulty.even_ranks"


def _main(capsys, argv: list[str]) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as e:  # argparse refuses its own errors by exiting
        code = e.code
    return code, capsys.readouterr().err


_BITS = "[" + ",".join(["1", "0"] * 16) + "]"  # one rank's mask of a 32-element block
_STORE = '{"n":5,"BLOCK":32,"dtype":"int32","TRACE_OPS":false,"offset":0,"bits":[' + _BITS + ']}'
_TILE = ('{"M":5,"N":7,"BM":16,"BN":16,"dtype":"int32","TRACE_OPS":false,"offset":1,"rows":[' + _BITS[:32] + "],"
         + _BITS[:32] + "]]}")
_KEYS = "n, BLOCK, dtype, TRACE_OPS, offset, bits"  # store's params, in the order it draws them
_SCATTER = '{"M":5,"N":7,"BM":32,"BN":32,"dtype":"int32","TRACE_OPS":false,"SPAN":false}'
FILE = "{tmp}/afile"  # every test's tmp_path holds this file (and nothing else)
_TIMEOUT = "argument --timeout: --timeout '{}': expected a finite number of seconds > 0, at most 86400"
_KNOWN_TAIL = ("unfinished_ranges; in tests.conformance.faulty: buffer_twice, diverging, draw_raises, even_ranks, "
               "gluon_does_not_compile, hangs, hangs_under_a_tool, healthy, mismatched_params, model_raises, "
               "old_paths, out_of_bounds, rank_dies, rejects_every_draw (a dotted path names a module of "
               "conformance.scenarios or of a package IRIS_SCENARIO_PACKAGES lists)")
CASES = [
    (["--scenario", "nope"], {}, "unknown scenario 'nope'; known scenarios: all_gather, all_scatter, all_to_all, "),
    (["--scenario", "tests.conformance.faulty.nope"], {}, "unknown scenario 'tests.conformance.faulty.nope'; "),
    # a scenario is a registered one: any other module, importable or not, is refused (and not imported)
    (["--scenario", "os.path"], {}, "unknown scenario 'os.path'; known scenarios: all_gather, all_scatter, "),
    (["--scenario", "conformance.kit.helpers"], {}, "unknown scenario 'conformance.kit.helpers'; known scenarios: "),
    (["--scenario", "tests.conformance.faulty._base"], {}, "unknown scenario 'tests.conformance.faulty._base'; "
                                                           "known scenarios: all_gather, all_scatter, "),
    (["--scenario", "nope"], {}, _KNOWN_TAIL),
    (["--scenario", "tests.conformance.faulty.healthy"], {"IRIS_SCENARIO_PACKAGES": "os.path"},
     "IRIS_SCENARIO_PACKAGES lists 'os.path', a module; expected a comma list of packages of scenario modules"),
    (["--scenario", "x.y"], {"IRIS_SCENARIO_PACKAGES": "no_such_package"},
     "IRIS_SCENARIO_PACKAGES lists 'no_such_package', which cannot be imported (ModuleNotFoundError: No module named "
     "'no_such_package'); expected a comma list of packages of scenario modules"),
    (["--profile", "fast"], {}, "argument --profile: invalid choice: 'fast' (choose from 'ci', 'dev', 'nightly')"),
    ([], {"IRIS_CONFORMANCE_PROFILE": "fast"}, "profile='fast'; expected one of ['ci', 'dev', 'nightly'] "
                                               "(IRIS_CONFORMANCE_PROFILE)"),
    (["--scenario", EVEN, "--ranks", "2,3"], {}, "--ranks 3: even_ranks refuses 3 rank(s): pairs rank 2k with 2k+1 "
                                                 "(an even world); it accepts e.g. 2, 4"),
    (["--ranks", "0"], {}, "argument --ranks: --ranks '0': expected a comma list of integers from 1 to 64 (world "
                           "sizes; at most 64, the rank processes one host runs), such as 1,2,4"),
    (["--ranks", "2,"], {}, "argument --ranks: --ranks '2,': expected a comma list of integers from 1 to 64"),
    (["--ranks", "100000"], {}, "argument --ranks: --ranks '100000': expected a comma list of integers from 1 to 64 "
                                "(world sizes; at most 64, the rank processes one host runs)"),
    (["--ranks", "2,65"], {}, "argument --ranks: --ranks '2,65': expected a comma list of integers from 1 to 64"),
    (["--ranks", "1,2,1,2"], {}, "argument --ranks: --ranks '1,2,1,2': world size 1, 2 is repeated; expected each "
                                 "world size once, such as 1,2,4"),
    (["--ranks", "1,1"], {}, "argument --ranks: --ranks '1,1': world size 1 is repeated"),
    # a rank pool waits through poll(), whose timeout overflows past about 24 days: one day at most
    *[(["--timeout", t], {}, _TIMEOUT.format(t)) for t in ("inf", "nan", "1e10", "0", "-5", "86401", "soon")],
    (["--seed", "-3"], {}, "argument --seed: --seed '-3': expected an integer >= 0"),
    (["--examples", "0"], {}, "argument --examples: --examples '0': expected an integer >= 1"),
    (["--examples", "many"], {}, "argument --examples: --examples 'many': expected an integer >= 1"),
    (["--sanitize", "--backend", "cpu"], {}, "--sanitize checks GPU kernels with compute-sanitizer; backend cpu runs "
                                             "kernels under the interpreter (use --backend gpu on a CUDA host)"),
    (["--sanitize", "racecheck,initcheck", "--backend", "cpu"], {}, "--sanitize checks GPU kernels with "
                                                                    "compute-sanitizer; backend cpu runs kernels"),
    (["--sanitize", "asan"], {}, "argument --sanitize: --sanitize 'asan': expected a comma list of memcheck, "
                                 "racecheck, synccheck, initcheck"),
    (["--sanitize", "memcheck,,racecheck"], {}, "argument --sanitize: --sanitize 'memcheck,,racecheck': expected a "
                                                "comma list of memcheck, racecheck, synccheck, initcheck"),
    (["--sanitize", "Memcheck"], {}, "argument --sanitize: --sanitize 'Memcheck': expected a comma list of memcheck, "),
    (["--sanitize", ""], {}, "argument --sanitize: --sanitize '': expected a comma list of memcheck, "),
    (["--sanitize", "initcheck,racecheck,initcheck"], {}, "argument --sanitize: --sanitize 'initcheck,racecheck,"
                                                          "initcheck': initcheck is repeated; expected each tool once, "
                                                          "such as memcheck,racecheck,synccheck,initcheck"),
    # the GPU scale runs on a GPU only: the interpreter would take hours over its examples
    (["--scale", "gpu", "--backend", "cpu"], {}, "--scale gpu: backend cpu runs every program of a rank one after "
                                                 "another under the interpreter, and an example at this scale "
                                                 "(hundreds of programs, thousands of events) would take hours there; "
                                                 "use --backend gpu on a GPU host, or --scale small"),
    (["--scale", "huge"], {}, "argument --scale: invalid choice: 'huge' (choose from 'small', 'gpu')"),
    # --out is checked when the arguments are parsed: nothing made, no traceback at the first write
    (["--out", FILE], {}, "argument --out: --out '{tmp}/afile': exists and is not a folder; expected a folder (new "
                          "or existing) that can be written"),
    (["--out", FILE + "/out"], {}, "argument --out: --out '{tmp}/afile/out': {tmp}/afile is not a folder, so no "
                                   "folder can be made under it; expected a folder"),
    (["--out", "/proc/x/out"], {}, "argument --out: --out '/proc/x/out': nothing can be made or written in /proc "
                                   "(No such file or directory); expected a folder (new or existing) that can be "
                                   "written"),
    pytest.param(["--out", "{tmp}/locked/out"], {}, "argument --out: --out '{tmp}/locked/out': nothing can be made "
                 "or written in {tmp}/locked (Permission denied)",
                 marks=pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")),
    # an empty --out named the current folder, and the results went there
    (["--out", ""], {}, "argument --out: --out '': empty; expected a folder (new or existing) that can be written"),
    (["--out", "  "], {}, "argument --out: --out '  ': only blanks; expected a folder (new or existing) that can be "
                          "written"),
    # numbers are plain digits: no sign, exponent, base prefix, "_", padding or other scripts' digits
    (["--ranks", "1,+2"], {}, "argument --ranks: --ranks '1,+2': expected a comma list of integers from 1 to 64 (world "
                              "sizes; at most 64, the rank processes one host runs), such as 1,2,4; '+2' is not "
                              "written in plain digits 0-9\n"),
    (["--ranks", "\uff12"], {}, "argument --ranks: --ranks '\uff12': expected a comma list of integers from 1 to 64"),
    (["--seed", "1e3"], {}, "argument --seed: --seed '1e3': expected an integer >= 0\n"),
    (["--seed", "+5"], {}, "argument --seed: --seed '+5': expected an integer >= 0; '+5' is not written in plain "
                           "digits 0-9\n"),
    (["--seed", "1_000"], {}, "argument --seed: --seed '1_000': expected an integer >= 0; '1_000' is not written in "
                              "plain digits 0-9\n"),
    (["--examples", "0x10"], {}, "argument --examples: --examples '0x10': expected an integer >= 1\n"),
    (["--examples", " 5"], {}, "argument --examples: --examples ' 5': expected an integer >= 1; ' 5' is not written "
                               "in plain digits 0-9\n"),
    (["--examples", "9" * 5000], {}, "argument --examples: --examples '" + "9" * 40 + "'...(5000 characters): "
                                     "expected an integer >= 1\n"),
    (["--timeout", "+5"], {}, _TIMEOUT.format("+5") + "; '+5' is not written in plain digits 0-9 with an optional "
                                                      ".\n"),
    (["--timeout", "1e3"], {}, _TIMEOUT.format("1e3") + "; '1e3' is not written in plain digits 0-9 with an "
                                                        "optional .\n"),
    # a list option names each item once; a scenario named two ways is one scenario
    (["--scenario", "store", "--scenario", "store"], {}, "argument --scenario: --scenario 'store': scenario store is "
                                                         "given twice; expected each scenario once\n"),
    (["--scenario", "store", "--scenario", "conformance.scenarios.store"], {},
     "argument --scenario: --scenario 'conformance.scenarios.store': scenario store is given twice (as 'store' "
     "before); expected each scenario once\n"),
    # the documented environment variables, checked before anything runs
    ([], {"IRIS_HYPOTHESIS_DB": ""}, "IRIS_HYPOTHESIS_DB='': empty; expected the folder of Hypothesis's example "
                                     "database (made if missing), or none to keep no database\n"),
    ([], {"IRIS_HYPOTHESIS_DB": FILE}, "IRIS_HYPOTHESIS_DB='{tmp}/afile': exists and is not a folder; expected the "
                                       "folder of Hypothesis's example database"),
    ([], {"IRIS_HYPOTHESIS_DB": FILE + "/db"}, "IRIS_HYPOTHESIS_DB='{tmp}/afile/db': {tmp}/afile is not a folder, "
                                               "so no folder can be made under it; expected the folder of "
                                               "Hypothesis's example database"),
    *[([], {"IRIS_COMPILE_WORKERS": w}, f"IRIS_COMPILE_WORKERS={w!r}: not a whole number in plain digits; expected "
                                        "a number of compile processes (0 turns compiling ahead off)\n")
      for w in ("abc", "-1", "1e3", "\uff15", "2.5")],
]
RUN_ONLY = [
    (["--params", "{bad"], {}, "--params '{bad' is not valid JSON (Expecting property name enclosed in double "
                               "quotes at character 1); expected an object such as"),
    (["--params", "[1, 2]"], {}, "--params '[1, 2]' is a JSON list; expected an object of parameter names"),
    # replayed params are checked against the scenario's strategy before anything runs
    (["--scenario", "store", "--ranks", "1", "--params", '{"n":-5}'], {},
     "--params for store on 1 rank(s): missing key 'BLOCK'; expected the keys " + _KEYS),
    (["--scenario", "store", "--ranks", "1", "--params", _STORE.replace('"n":5', '"n":5,"zz":1')], {},
     "--params for store on 1 rank(s): unknown key 'zz'=1; expected the keys " + _KEYS),
    (["--scenario", "store", "--ranks", "1", "--params", _STORE.replace('"n":5', '"n":"5"')], {},
     "--params for store on 1 rank(s): n='5': expected an int like 1"),
    (["--scenario", "store", "--ranks", "2", "--params", _STORE], {},
     "--params for store on 2 rank(s): bits: 1 entries, expected one per rank (2)"),
    (["--scenario", "store", "--ranks", "1", "--params", _STORE[:-1] + ',"chunk":3}'], {},
     f"--params for store on 1 rank(s): unknown key 'chunk'=3; expected the keys {_KEYS} (chunk is a harness "
     "setting, not a param: --chunk N)"),
    # the trace chunk is its own flag: one of the chunks examples draw
    (["--scenario", "store", "--ranks", "1", "--chunk", "5", "--params", _STORE], {},
     "argument --chunk: --chunk '5': expected one of 3, 1, 16, 64 (the trace chunks examples draw)"),
    (["--chunk", "many"], {}, "argument --chunk: --chunk 'many': expected one of 3, 1, 16, 64 (the trace chunks "
                              "examples draw)"),
    # num_warps is drawn at the GPU scale only: fixing it means nothing at small, where launches keep their own
    (["--num-warps", "8", "--backend", "cpu"], {}, "--num-warps 8: only with --scale gpu (at scale small every "
                                                   "launch runs with its own num_warps)"),
    (["--num-warps", "3", "--scale", "gpu", "--backend", "gpu"], {}, "argument --num-warps: --num-warps '3': "
                                                                      "expected one of 1, 2, 4, 8, 16 (the num_warps "
                                                                      "examples draw at scale gpu)"),
    (["--scenario", "store", "--ranks", "1", "--params", _STORE[:-1] + ',"num_warps":8}'], {},
     f"--params for store on 1 rank(s): unknown key 'num_warps'=8; expected the keys {_KEYS} (num_warps is a harness "
     "setting, not a param: --num-warps N)"),
    # params drawn at the GPU scale replay with --scale gpu only (checked before anything runs)
    (["--scenario", "store", "--ranks", "1", "--backend", "gpu", "--params", _STORE.replace('"BLOCK":32',
                                                                                             '"BLOCK":1024')], {},
     "--params for store on 1 rank(s): BLOCK=1024; expected one of [32, 64]"),
    (["--scenario", "store", "--ranks", "1", "--params", _STORE.replace(_BITS, '{"pattern":"zigzag","length":32}')],
     {}, "--params: pattern 'zigzag'; expected one of on, off, periodic, runs, random, constant, ramp, uniform, "
         "differ"),
    # ... and each value against what the strategy draws there (its bounds, sets and sizes)
    (["--scenario", "store", "--ranks", "1", "--params", _STORE.replace('"n":5', '"n":-5')], {},
     "--params for store on 1 rank(s): n=-5; expected an int in 1..300"),
    (["--scenario", "store", "--ranks", "1", "--params", _STORE.replace('"BLOCK":32', '"BLOCK":33')], {},
     "--params for store on 1 rank(s): BLOCK=33; expected one of [32, 64]"),
    (["--scenario", "store", "--ranks", "1", "--params", _STORE.replace('"int32"', '"nope"')], {},
     "--params for store on 1 rank(s): dtype='nope'; expected one of ['int32', 'float32', 'int64', 'float16']"),
    (["--scenario", "store", "--ranks", "1", "--params", _STORE.replace(_BITS, "[1,0]")], {},
     "--params for store on 1 rank(s): bits[0]: 2 entries; expected 32"),
    (["--scenario", "store", "--ranks", "1", "--params", _STORE.replace(_BITS, "[2" + _BITS[2:])], {},
     "--params for store on 1 rank(s): bits[0][0]=2; expected an int in 0..1"),
    (["--scenario", "tile_2d", "--ranks", "2", "--params", _TILE.replace('"BN":16', '"BN":33')], {},
     "--params for tile_2d on 2 rank(s): BN=33; expected one of [16, 32]"),
    (["--scenario", "tile_2d", "--ranks", "2", "--params", _TILE.replace('"N":7', '"N":49')], {},
     "--params for tile_2d on 2 rank(s): N=49; expected an int in 1..48"),  # at most 3 tiles of BN along a row
    (["--scenario", "tile_2d", "--ranks", "2", "--params", _TILE.replace('"offset":1', '"offset":2')], {},
     "--params for tile_2d on 2 rank(s): offset=2; expected one of [1, 0]"),
    (["--scenario", "all_scatter", "--ranks", "2", "--params", _SCATTER.replace('"M":5', '"M":0')], {},
     "--params for all_scatter on 2 rank(s): M=0; expected an int in 1..100"),
    (["--scenario", "all_scatter", "--ranks", "2", "--params", _SCATTER.replace('"int32"', '"float16"')], {},
     "--params for all_scatter on 2 rank(s): dtype='float16'; expected one of ['int32', 'float32', 'int64']"),
    # what json.loads cannot take: a ValueError and a RecursionError traceback before
    (["--scenario", "store", "--ranks", "1", "--params", '{"n":' + "1" * 5000 + "}"], {},
     "--params '{\"n\":" + "1" * 55 + "... (5006 characters)' cannot be read (Exceeds the limit (4300 digits) for "
     "integer string conversion); expected an object of parameter names to values such as '{\"n\":15,\"BLOCK\":32}'\n"),
    (["--scenario", "store", "--ranks", "1", "--params", "[" * 50_000 + "]" * 50_000], {},
     "--params '" + "[" * 60 + "... (100000 characters)' cannot be read (lists or objects nested too deep); "
     "expected an object of parameter names to values"),
    (["--scenario", "store", "--ranks", "1", "--params", '{"n":' + "[" * 900 + "]" * 900 + "}"], {},
     "--params '{\"n\":" + "[" * 55 + "... (1806 characters)' nests lists or objects more than 8 deep; expected the "
     "params of an example, as a replay line writes them\n"),
    (["--scenario", "store", "--ranks", "1", "--params", '{"n":5,"n":6}'], {},
     "--params '{\"n\":5,\"n\":6}' gives key 'n' twice; expected each key once\n"),  # was: the last taken
    (["--chunk", "+3"], {}, "argument --chunk: --chunk '+3': expected one of 3, 1, 16, 64 (the trace chunks examples "
                            "draw)"),
    (["--chunk", "\uff13"], {}, "argument --chunk: --chunk '\uff13': expected one of 3, 1, 16, 64"),
]
GATE_ONLY = [
    (["--mutants", "nope,triton-trace-event_id"], {}, "--mutants 'nope,triton-trace-event_id': unknown mutant "
                                                      "'nope'; see python -m conformance mutate --list"),
    (["--mutants", ","], {}, "argument --mutants: --mutants ',': no mutant named; expected a comma list of mutant "
                             "names, or --mutants alone for all of them"),
    (["--mutants", ""], {}, "argument --mutants: --mutants '': no mutant named"),
    (["--known", "{tmp}"], {}, "--known {tmp}: cannot be read (Is a directory); expected the TOML file of known "
                               "divergences"),
    (["--baseline", "{tmp}"], {}, "--baseline {tmp}: cannot be read (Is a directory); expected a results.json of an "
                                  "earlier gate or run"),
    (["--baseline", "{tmp}/none.json"], {}, "--baseline {tmp}/none.json: no such file (a results.json of an earlier "
                                            "gate or run)"),
    (["--baseline", ""], {}, "argument --baseline: --baseline '': empty; expected the path of a file\n"),
    (["--known", " "], {}, "argument --known: --known ' ': only blanks; expected the path of a file\n"),
    (["--known", "/dev/zero"], {}, "argument --known: --known '/dev/zero': not a regular file; expected the path of a "
                                   "file\n"),  # was: read until memory ran out
    (["--baseline", "/dev/zero"], {}, "argument --baseline: --baseline '/dev/zero': not a regular file; expected the "
                                      "path of a file\n"),
    (["--mutants", "triton-trace-event_id,,gluon-trace-event_id"], {},
     "argument --mutants: --mutants 'triton-trace-event_id,,gluon-trace-event_id': an empty item; expected a comma "
     "list of mutant names, each once, such as triton-trace-event_id,gluon-trace-event_id\n"),
    (["--mutants", "triton-trace-event_id,triton-trace-event_id"], {},
     "argument --mutants: --mutants 'triton-trace-event_id,triton-trace-event_id': mutant triton-trace-event_id is "
     "given twice; expected each mutant once\n"),
]


def _rows(command: str, rows: list) -> list:
    """``rows`` as parameters of ``command`` (a ``pytest.param`` keeps its marks)."""
    out = []
    for row in rows:
        if isinstance(row, type(pytest.param())):
            out.append(pytest.param(command, *row.values, marks=row.marks))
        else:
            out.append((command, *row))
    return out


def _bad_input(tmp_path: Path, capsys, command: str, args: list[str]) -> tuple[int, str]:
    """Run ``command args`` in this process in an empty ``tmp_path`` holding only ``afile`` (and ``locked``, a
    folder nobody may write to); ``--out`` is ``tmp_path/out`` unless the row names one."""
    (tmp_path / "afile").write_text("not a folder")
    (tmp_path / "locked").mkdir(mode=0o555)
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    out = [] if "--out" in args else ["--out", str(tmp_path / "out")]
    return _main(capsys, [command, *args, *out])


@pytest.mark.parametrize(("command", "args", "env", "expected"),
                         _rows("run", CASES + RUN_ONLY) + _rows("gate", CASES + GATE_ONLY))
def test_bad_input_is_one_line_and_exit_code_2(tmp_path, capsys, monkeypatch, command, args, env, expected):
    monkeypatch.chdir(tmp_path)  # an output path that names the current folder would write here
    for name, value in env.items():
        monkeypatch.setenv(name, value.replace("{tmp}", str(tmp_path)))
    code, err = _bad_input(tmp_path, capsys, command, args)
    expected = expected.replace("{tmp}", str(tmp_path))
    assert code == 2, f"exit code={code}, but should be 2: {err}"
    assert err.count("\n") == 1 and err.startswith(f"python -m conformance {command}: "), err
    assert expected in err, err
    assert "Traceback" not in err, err
    assert sorted(os.listdir(tmp_path)) == ["afile", "locked"], "output was written before the input was refused"
    assert (tmp_path / "afile").read_text() == "not a folder" and not os.listdir(tmp_path / "locked")


@pytest.mark.parametrize("ref", ["json.tool", "tests.conformance.rank_view_jobs", "tests.conformance.faulty._base"])
def test_a_module_that_is_no_scenario_is_refused_without_being_imported(tmp_path, capsys, monkeypatch, ref):
    monkeypatch.delitem(sys.modules, ref, raising=False)
    code, err = _main(capsys, ["run", "--scenario", ref, "--out", str(tmp_path / "out")])
    assert code == 2, f"exit code={code}, but should be 2: {err}"
    assert err.startswith(f"python -m conformance run: unknown scenario {ref!r}; known scenarios: all_gather, "
                          "all_scatter, "), err
    assert err.count("\n") == 1, err
    assert ref not in sys.modules, f"{ref} was imported to be refused"


MUTATE = [
    (["--out", "{tmp}"], "python -m conformance mutate: argument --out: --out '{tmp}': is a folder; expected a file "
                         "in a folder that can be made and written"),
    (["--out", FILE + "/mutate.json"], "python -m conformance mutate: argument --out: --out '{tmp}/afile/mutate.json'"
                                       ": {tmp}/afile is not a folder; expected a file in a folder"),
    (["--keep", FILE], "python -m conformance mutate: argument --keep: --keep '{tmp}/afile': exists and is not a "
                       "folder; expected a folder (new or existing) that can be written"),
    (["--scenario", "nope", "--only", "nope"], "mutate: unknown scenario 'nope'; known scenarios: all_gather, "
                                               "all_scatter, "),
    (["--only", "nope,triton-trace-event_id"], "mutate: unknown mutant 'nope'; see python -m conformance mutate "
                                               "--list"),
    (["--only", ""], "python -m conformance mutate: argument --only: --only '': no mutant named; expected a comma "
                     "list of mutant names, or no --only for all of them"),  # not every mutant
    (["--only", " , "], "python -m conformance mutate: argument --only: --only ' , ': no mutant named"),
    (["--scenario", "os.path", "--only", "nope"], "mutate: unknown scenario 'os.path'; known scenarios: "
                                                  "all_gather, all_scatter, "),
    (["--ranks", "2,2"], "python -m conformance mutate: argument --ranks: --ranks '2,2': world size 2 is repeated"),
    (["--scale", "gpu", "--only", "triton-trace-event_id"], "mutate: --scale gpu: backend cpu runs every program of a "
                                                            "rank one after another under the interpreter"),
    # not the default (``--timeout 0`` was read as no timeout given), and refused here, not by the suite
    *[(["--timeout", t], "python -m conformance mutate: " + _TIMEOUT.format(t)) for t in ("0", "-5", "inf", "1e10")],
    (["--out", ""], "python -m conformance mutate: argument --out: --out '': empty; expected a file in a folder that "
                    "can be made and written\n"),
    (["--keep", ""], "python -m conformance mutate: argument --keep: --keep '': empty; expected a folder (new or "
                     "existing) that can be written\n"),
    (["--only", "triton-trace-event_id,"], "python -m conformance mutate: argument --only: --only "
                                           "'triton-trace-event_id,': an empty item; expected a comma list of mutant "
                                           "names, each once"),
    (["--only", "triton-trace-event_id", "--only", "gluon-trace-event_id,triton-trace-event_id"],
     "python -m conformance mutate: argument --only: --only 'gluon-trace-event_id,triton-trace-event_id': mutant "
     "triton-trace-event_id is given twice (as 'triton-trace-event_id' before); expected each mutant once\n"),
    (["--scenario", "conformance.scenarios.store", "--scenario", "store"],
     "python -m conformance mutate: argument --scenario: --scenario 'store': scenario store is given twice (as "
     "'conformance.scenarios.store' before); expected each scenario once\n"),
    (["--ranks", "\uff12"], "python -m conformance mutate: argument --ranks: --ranks '\uff12': expected a comma list "
                            "of integers from 1 to 64"),
]


@pytest.mark.parametrize(("args", "expected"), MUTATE)
def test_mutate_refuses_bad_input_before_it_copies_anything(tmp_path, capsys, monkeypatch, args, expected):
    monkeypatch.chdir(tmp_path)
    code, err = _bad_input(tmp_path, capsys, "mutate", args)
    assert code == 2, f"exit code={code}, but should be 2: {err}"
    assert err.count("\n") == 1 and err.startswith(expected.replace("{tmp}", str(tmp_path))), err
    assert sorted(os.listdir(tmp_path)) == ["afile", "locked"], "output was written before the input was refused"


@pytest.mark.parametrize(("command", "expected"), [
    ("run", "python -m conformance run: --backend gpu needs a GPU (torch.cuda.is_available() is False)"),
    ("gate", "python -m conformance gate: --backend gpu needs a GPU (torch.cuda.is_available() is False)"),
    ("mutate", "mutate: --backend gpu needs a GPU (torch.cuda.is_available() is False)"),
])
def test_the_gpu_backend_where_torch_sees_no_gpu_is_refused_before_any_case(tmp_path, capsys, monkeypatch, command,
                                                                             expected):
    """Was: every case ran and failed on its ranks ("the device is cpu ... TRITON_INTERPRET is not set")."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    code, err = _bad_input(tmp_path, capsys, command, ["--backend", "gpu", "--scenario", "store", "--ranks", "1"])
    assert (code, err) == (2, expected + "\n")
    assert sorted(os.listdir(tmp_path)) == ["afile", "locked"], "output was written before the input was refused"


NEW = [
    ("store", "scenario name 'store': {root}/conformance/scenarios/store.py already exists; expected a new name"),
    ("My-scenario", "scenario name 'My-scenario': expected a lowercase Python identifier such as my_scenario"),
    ("class", "scenario name 'class': expected a lowercase Python identifier such as my_scenario"),
    ("_shared", "scenario name '_shared': expected a lowercase Python identifier such as my_scenario"),
    ("2ranks", "scenario name '2ranks': expected a lowercase Python identifier such as my_scenario"),
    ("my.scenario", "scenario name 'my.scenario': expected a lowercase Python identifier such as my_scenario"),
    ("a" * 300, f"scenario name '{'a' * 300}': 300 characters; expected at most 48"),  # OSError before
    ("a" * 49, f"scenario name '{'a' * 49}': 49 characters; expected at most 48"),
]


@pytest.mark.parametrize(("name", "expected"), NEW)
def test_new_refuses_a_name_in_one_line_on_stderr(capsys, name, expected):
    before = sorted(os.listdir(ROOT / "conformance" / "scenarios"))
    code = main(["new", name])
    out, err = capsys.readouterr()
    assert code == 2, f"exit code={code}, but should be 2: {err}"
    assert not out and err.count("\n") == 1, (out, err)
    assert err.startswith("python -m conformance new: " + expected.format(root=ROOT)), err
    assert sorted(os.listdir(ROOT / "conformance" / "scenarios")) == before


def test_a_replay_that_launches_nothing_is_refused():
    """A value outside what the strategy shows (here a mapped draw) that leaves the model nothing to check."""
    from hypothesis import strategies as st

    from conformance.check.model import Model
    from conformance.harness.replay_params import ParamsError, check
    from conformance.kit.scenario import load

    healthy = load("tests.conformance.faulty.healthy")

    def model(p, world_size):
        return Model({r: [] for r in range(world_size)}, {r: {"out": [0] * p["n"]} for r in range(world_size)})

    empty = dataclasses.replace(healthy, model=model,
                                params=lambda ws: st.fixed_dictionaries({"n": st.integers(1, 9).map(int)}))
    check(empty, 2, {"n": 3})  # three elements of memory to check
    with pytest.raises(ParamsError) as e:
        check(empty, 2, {"n": 0})
    assert str(e.value) == ("--params for healthy on 2 rank(s): they launch nothing to check (the model expects no "
                            "event, no memory and no claimed slot on any rank); expected params that launch work, as "
                            "the strategy draws")


USER = [
    (["run", "--scenario", "nope", "--params", "{}"], "python -m conformance run: unknown scenario 'nope'; known "
                                                       "scenarios: "),
    (["run", "--out", "afile"], "python -m conformance run: argument --out: --out 'afile': exists and is not a folder"),
    (["gate", "--out", "afile/out"], "python -m conformance gate: argument --out: --out 'afile/out': afile is not a "
                                     "folder"),
    (["run", "--scenario", "store", "--ranks", "1", "--params", _STORE.replace('"n":5', '"n":-5')],
     "python -m conformance run: --params for store on 1 rank(s): n=-5; expected an int in 1..300"),
    (["new", "store"], "python -m conformance new: scenario name 'store': "),
    # the vacuous pass of a timeout poll() cannot wait for, refused before anything runs
    (["gate", "--scenario", "store", "--ranks", "1", "--examples", "2", "--timeout", "1e10", "--out", "g1"],
     "python -m conformance gate: " + _TIMEOUT.format("1e10")),
    (["run", "--scenario", "os.path"], "python -m conformance run: unknown scenario 'os.path'; known scenarios: "),
    (["run", "--ranks", "100000"], "python -m conformance run: argument --ranks: --ranks '100000': expected a comma "
                                   "list of integers from 1 to 64"),
]


@pytest.fixture(scope="module")
def as_users(tmp_path_factory) -> dict:
    """Every ``USER`` line run once, in one child process (``run_in_folders``)."""
    return run_in_folders(tmp_path_factory, [("conformance", args) for args, _ in USER])


@pytest.mark.parametrize(("args", "expected"), USER)
def test_a_user_sees_one_line_and_no_traceback(as_users, args, expected):
    result, folder = as_users[("conformance", *args)]
    assert result.returncode == 2, f"exit code={result.returncode}, but should be 2: {result.stderr}"
    assert result.stderr.startswith(expected), result.stderr
    assert result.stderr.count("\n") == 1 and not result.stdout, (result.stdout, result.stderr)
    assert os.listdir(folder) == ["afile"], "output was written before the input was refused"


@pytest.mark.parametrize("tools", [[], ["memcheck,racecheck,synccheck,initcheck"]], ids=["alone", "four"])
@pytest.mark.parametrize("command", ["run", "gate"])
def test_sanitize_without_the_tool_is_one_line_and_exit_code_2(tmp_path, capsys, monkeypatch, command, tools):
    from iris.ranks import sanitizer

    monkeypatch.setattr(sanitizer, "CUDA_DEFAULT", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    code, err = _main(capsys, [command, "--sanitize", *tools, "--backend", "gpu", "--out", str(tmp_path / "out")])
    assert code == 2, f"exit code={code}, but should be 2: {err}"
    expected = "--sanitize is not available on ROCm" if sanitizer_is_rocm() else \
        "--sanitize: compute-sanitizer not found on PATH, in $CUDA_HOME/bin or in /usr/local/cuda/bin"
    assert err.count("\n") == 1 and expected in err, err
    assert not (tmp_path / "out").exists(), "output was written before the input was refused"


@pytest.mark.parametrize("command", ["run", "gate"])
def test_sanitize_on_rocm_is_refused_by_name(tmp_path, capsys, monkeypatch, command):
    import torch

    monkeypatch.setattr(torch.version, "hip", "6.4")
    code, err = _main(capsys, [command, "--sanitize", "synccheck", "--backend", "gpu", "--out", str(tmp_path / "o")])
    assert (code, err) == (2, f"python -m conformance {command}: --sanitize is not available on ROCm: "
                              "compute-sanitizer checks CUDA programs only\n")
    assert not (tmp_path / "o").exists(), "output was written before the input was refused"


@pytest.mark.parametrize(("argv", "tools"), [
    ([], ()), (["--sanitize"], ("memcheck",)), (["--sanitize", "initcheck"], ("initcheck",)),
    (["--sanitize", "memcheck,racecheck,synccheck,initcheck"], ("memcheck", "racecheck", "synccheck", "initcheck")),
    (["--sanitize", "--ranks", "1,2"], ("memcheck",)),  # alone before another option: still memcheck
])
@pytest.mark.parametrize("command", ["run", "gate"])
def test_sanitize_takes_a_comma_list_of_tools_and_alone_means_memcheck(command, argv, tools):
    from conformance.cli import _parser

    assert _parser().parse_args([command, *argv]).sanitize == tools


def sanitizer_is_rocm() -> bool:
    import torch

    return bool(torch.version.hip)


@pytest.mark.parametrize(("command", "made", "expected"), [
    ("run", "results.json/", "{out}/results.json is a folder; expected a folder where the results (results.json "
                             "among them) can be written\n"),
    ("run", "traces", "{out}/traces exists and is not a folder; expected a folder where the results (traces among "
                      "them) can be written\n"),
    ("run", "traces/store.json/", "{out}/traces/store.json is a folder; expected a folder where the results "
                                  "(store.json among them) can be written\n"),
    ("gate", "summary.md/", "{out}/summary.md is a folder; expected a folder where the results (summary.md among "
                            "them) can be written\n"),
    ("gate", "junit.xml/", "{out}/junit.xml is a folder"),
    pytest.param("gate", "results.json", "{out}/results.json exists and cannot be written",
                 marks=pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only file")),
])
def test_a_result_the_out_folder_cannot_take_is_refused_before_anything_runs(tmp_path, capsys, command, made,
                                                                              expected):
    """Was: every case ran, then writing results.json (or summary.md, junit.xml) raised IsADirectoryError."""
    out = tmp_path / "out"
    out.mkdir()
    if made.endswith("/"):
        (out / made).mkdir(parents=True)
    else:
        (out / made).write_text("x")
        (out / made).chmod(0o444)
    before = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    code, err = _main(capsys, [command, "--scenario", "store", "--ranks", "1", "--out", str(out)])
    assert code == 2, f"exit code={code}, but should be 2: {err}"
    assert err.startswith(f"python -m conformance {command}: --out {str(out)!r}: {expected.format(out=out)}"), err
    assert err.count("\n") == 1, err
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == before, "output was written before the " \
                                                                                "input was refused"


@pytest.mark.parametrize(("env", "expected"), [
    ({"IRIS_COMPILE_WORKERS": "abc"}, "mutate: IRIS_COMPILE_WORKERS='abc': not a whole number in plain digits; "
                                      "expected a number of compile processes (0 turns compiling ahead off)\n"),
    ({"IRIS_HYPOTHESIS_DB": ""}, "mutate: IRIS_HYPOTHESIS_DB='': empty; expected the folder of Hypothesis's example "
                                 "database (made if missing), or none to keep no database\n"),
])
def test_mutate_refuses_a_bad_environment_variable_before_it_copies_anything(tmp_path, capsys, monkeypatch, env,
                                                                             expected):
    monkeypatch.chdir(tmp_path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    code, err = _bad_input(tmp_path, capsys, "mutate", ["--only", "triton-trace-event_id"])
    assert (code, err) == (2, expected)
    assert sorted(os.listdir(tmp_path)) == ["afile", "locked"], "output was written before the input was refused"


def test_the_hypothesis_database_variable_names_a_folder_or_none(tmp_path, monkeypatch):
    """A folder (made at the first save), ``none`` in any case, unset: Hypothesis's own; the readers agree."""
    from hypothesis.database import DirectoryBasedExampleDatabase

    from conformance.harness.profiles import example_database

    monkeypatch.setenv("IRIS_HYPOTHESIS_DB", str(tmp_path / "db"))
    database = example_database()
    assert isinstance(database, DirectoryBasedExampleDatabase) and database.path == tmp_path / "db"
    assert not (tmp_path / "db").exists(), "checking the variable made the folder"
    for off in ("none", "None", "NONE"):
        monkeypatch.setenv("IRIS_HYPOTHESIS_DB", off)
        assert example_database() is None


def test_a_mutate_baseline_that_timed_out_says_so_and_names_the_cases(monkeypatch):
    """Was: "the unmutated copy fails, fix the suite first" followed by an empty log tail."""
    from conformance.mutation import runner as mutation

    def timed_out(tree, cases, *, stop_at_first, **_):
        return mutation.ProbeRun([{"scenario": "store", "world_size": 2, "ok": True, "checks": [], "detail": ""}],
                                 True, -9, "")

    baseline = mutation.Baseline(Path("/nowhere"), timed_out, 1.0)
    with pytest.raises(mutation.MutationError) as e:
        baseline.verify([("store", 2), ("load", 1), ("tile_2d", 2)])
    assert str(e.value) == ("baseline: the unmutated copy timed out: load@1 did not finish within --timeout 1 s and 1 "
                            "case(s) never started (tile_2d@2); expected a --timeout that the unmutated copy's cases "
                            "fit in (default 1800)")


def test_mutate_with_a_timeout_its_baseline_cannot_meet_says_it_timed_out(tmp_path):
    """The replayed finding: ``mutate --timeout 1``, through the command line."""
    environ = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-m", "conformance", "mutate", "--timeout", "1", "--only",
                             "triton-trace-event_id", "--scenario", "store", "--ranks", "1"], cwd=tmp_path,
                            env=environ, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stderr == ("mutate: baseline: the unmutated copy timed out: store@1 did not finish within --timeout "
                             "1 s; expected a --timeout that the unmutated copy's cases fit in (default 1800)\n")
    assert os.listdir(tmp_path) == [], "a report was written for a run that did not start"


@pytest.mark.parametrize("names", [["store", "conformance.scenarios.store"], ["conformance.scenarios.store"]])
def test_a_scenario_named_by_its_module_path_is_the_scenario_of_its_short_name(names):
    """One case per world size, named ``store`` (the known divergences and results key on that name)."""
    from conformance.harness.suite import plan
    from conformance.mutation.runner import all_cases

    cases, _ = plan(names, (1, 2))
    assert [(c.name, c.world_size, c.scenario.ref) for c in cases] == [("store", 1, "store"), ("store", 2, "store")]
    assert all_cases(names, (1, 2)) == [("store", 2), ("store", 1)]


@pytest.mark.parametrize(("option", "text", "expected"), [
    ("--baseline", "[" * 100_000 + "]" * 100_000, "--baseline {path}: not a conformance results.json (lists or "
                                                  "objects nested too deep)"),
    ("--baseline", '{"cases": "x"}', "--baseline {path}: not a conformance results.json (AttributeError: 'str' "
                                     "object has no attribute 'get')"),
    ("--baseline", '{"cases": [{"record_id": "cpu-store-1r", "verdict": 3}]}',
     "--baseline {path}: not a conformance results.json (TypeError: case 'cpu-store-1r': expected a record id and a "
     "verdict object)"),  # was: a traceback after the suite, comparing against it
    ("--baseline", '{"cases": [], "n": ' + "1" * 5000 + "}", "--baseline {path}: not a conformance results.json "
                                                            "(ValueError: Exceeds the limit (4300 digits)"),
    ("--known", "a = " + "[" * 100_000 + "]" * 100_000, "--known {path}: cannot be read (arrays or tables nested too "
                                                        "deep); expected the TOML file of known divergences (see "
                                                        "README)"),
    ("--known", "a = " + "1" * 5000, "--known {path}: cannot be read (Exceeds the limit (4300 digits) for integer "
                                     "string conversion); expected the TOML file of known divergences"),
])
def test_a_baseline_or_known_file_python_cannot_parse_is_one_line(tmp_path, capsys, option, text, expected):
    """Was: a RecursionError, ValueError or AttributeError traceback."""
    path = tmp_path / "given"
    path.write_text(text)
    code, err = _main(capsys, ["gate", option, str(path), "--scenario", "store", "--ranks", "1", "--out",
                               str(tmp_path / "out")])
    assert code == 2, f"exit code={code}, but should be 2: {err}"
    assert err.startswith("python -m conformance gate: " + expected.format(path=path)), err
    assert err.count("\n") == 1, err
    assert sorted(os.listdir(tmp_path)) == ["given"], "output was written before the input was refused"
