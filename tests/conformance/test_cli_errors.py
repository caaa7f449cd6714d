"""Bad input to ``run`` and ``gate``: one line naming the value and the choices, exit code 2, no traceback.

Nothing runs: the input is refused before any rank starts or any output is written. Checked through ``main`` in
this process, and once in a child process, as a user meets it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.cli import main

pytestmark = pytest.mark.cpu_unit

ROOT = Path(__file__).resolve().parents[2]
EVEN = "tests.conformance.faulty.even_ranks"


def _main(capsys, argv: list[str]) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as e:  # argparse refuses its own errors by exiting
        code = e.code
    return code, capsys.readouterr().err


_STORE = '{"n":5,"BLOCK":32,"dtype":"int32","offset":0,"bits":[[1,0,1,1,0,1,1,0,1,1]]}'
CASES = [
    (["--scenario", "nope"], {}, "unknown scenario 'nope'; known scenarios: all_scatter, atomic_add, "),
    (["--scenario", "tests.conformance.faulty.nope"], {}, "unknown scenario 'tests.conformance.faulty.nope'; "),
    (["--profile", "fast"], {}, "argument --profile: invalid choice: 'fast' (choose from 'ci', 'dev', 'nightly')"),
    ([], {"IRIS_CONFORMANCE_PROFILE": "fast"}, "profile='fast'; expected one of ['ci', 'dev', 'nightly'] "
                                               "(IRIS_CONFORMANCE_PROFILE)"),
    (["--scenario", EVEN, "--ranks", "2,3"], {}, "--ranks 3: even_ranks refuses 3 rank(s): pairs rank 2k with 2k+1 "
                                                 "(an even world); it accepts e.g. 2, 4"),
    (["--ranks", "0"], {}, "argument --ranks: --ranks '0': world sizes must be >= 1"),
    (["--seed", "-3"], {}, "argument --seed: --seed '-3': expected an integer >= 0"),
    (["--examples", "0"], {}, "argument --examples: --examples '0': expected an integer >= 1"),
    (["--examples", "many"], {}, "argument --examples: --examples 'many': expected an integer >= 1"),
    (["--sanitize", "--backend", "cpu"], {}, "--sanitize checks GPU memory accesses; backend cpu runs kernels under "
                                             "the interpreter"),
]
RUN_ONLY = [
    (["--params", "{bad"], {}, "--params '{bad' is not valid JSON (Expecting property name enclosed in double "
                               "quotes at character 1); expected an object such as"),
    (["--params", "[1, 2]"], {}, "--params '[1, 2]' is a JSON list; expected an object of parameter names"),
    # replayed params are checked against the scenario's strategy before anything runs
    (["--scenario", "store", "--ranks", "1", "--params", '{"n":-5}'], {},
     "--params for store on 1 rank(s): missing key 'BLOCK'; expected the keys n, BLOCK, dtype, offset, bits"),
    (["--scenario", "store", "--ranks", "1", "--params", _STORE.replace('"n":5', '"n":5,"zz":1')], {},
     "--params for store on 1 rank(s): unknown key 'zz'=1; expected the keys n, BLOCK, dtype, offset, bits"),
    (["--scenario", "store", "--ranks", "1", "--params", _STORE.replace('"n":5', '"n":"5"')], {},
     "--params for store on 1 rank(s): n='5': expected an int like 1"),
    (["--scenario", "store", "--ranks", "2", "--params", _STORE], {},
     "--params for store on 2 rank(s): bits: 1 entries, expected one per rank (2)"),
    (["--scenario", "store", "--ranks", "1", "--params", _STORE[:-1] + ',"chunk":5}'], {},
     "--params for store on 1 rank(s): chunk=5; expected one of [3, 1, 16, 64]"),
    (["--scenario", "store", "--ranks", "1", "--params", _STORE.replace("[[1,0,1,1,0,1,1,0,1,1]]", "[[1,0]]")], {},
     "--params for store on 1 rank(s): the model rejects them (IndexError: list index out of range)"),
]


@pytest.mark.parametrize(("command", "args", "env", "expected"),
                         [("run", *c) for c in CASES + RUN_ONLY] + [("gate", *c) for c in CASES])
def test_bad_input_is_one_line_and_exit_code_2(tmp_path, capsys, monkeypatch, command, args, env, expected):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    code, err = _main(capsys, [command, *args, "--out", str(tmp_path / "out")])
    assert code == 2, f"exit code={code}, but should be 2: {err}"
    assert err.count("\n") == 1 and err.startswith(f"python -m conformance {command}: "), err
    assert expected in err, err
    assert not (tmp_path / "out").exists(), "output was written before the input was refused"


def test_a_user_sees_one_line_and_no_traceback(tmp_path):
    environ = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-m", "conformance", "run", "--scenario", "nope", "--params", "{}"],
                            cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2, f"exit code={result.returncode}, but should be 2: {result.stderr}"
    assert result.stderr.startswith("python -m conformance run: unknown scenario 'nope'; known scenarios: "), \
        result.stderr
    assert result.stderr.count("\n") == 1 and not result.stdout, (result.stdout, result.stderr)


@pytest.mark.parametrize("command", ["run", "gate"])
def test_sanitize_without_the_tool_is_one_line_and_exit_code_2(tmp_path, capsys, monkeypatch, command):
    from iris.ranks import sanitizer

    monkeypatch.setattr(sanitizer, "CUDA_DEFAULT", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    code, err = _main(capsys, [command, "--sanitize", "--backend", "gpu", "--out", str(tmp_path / "out")])
    assert code == 2, f"exit code={code}, but should be 2: {err}"
    expected = "--sanitize is not available on ROCm" if sanitizer_is_rocm() else \
        "--sanitize: compute-sanitizer not found on PATH, in $CUDA_HOME/bin or in /usr/local/cuda/bin"
    assert err.count("\n") == 1 and expected in err, err
    assert not (tmp_path / "out").exists(), "output was written before the input was refused"


def sanitizer_is_rocm() -> bool:
    import torch

    return bool(torch.version.hip)
