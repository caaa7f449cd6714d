"""examples/run.py: ``--auto`` reaches only the examples with a bracketed variant, and a rank's failed check ends the
run with exit code 1 (ranks replaced by a stand-in launch: no kernels)."""

from __future__ import annotations

import os

import pytest

from examples import all_gather_triton, message_passing_gluon
from examples import run as examples_run

pytestmark = pytest.mark.cpu_unit


def _launch_returning(results: list, calls: list):
    def launch(fn, world_size, *args, **kwargs):
        calls.append((fn, world_size, args, sorted(kwargs), kwargs.get("out")))
        return results

    return launch


@pytest.mark.parametrize(("main", "argv", "keywords", "out"), [
    (message_passing_gluon.main, ["--auto"], ["auto", "env", "out", "timeout"], "message_passing_gluon_auto.json"),
    (message_passing_gluon.main, [], ["auto", "env", "out", "timeout"], "message_passing_gluon.json"),
    (all_gather_triton.main, ["--ranks", "3"], ["env", "out", "timeout"], "all_gather_triton.json"),
    (all_gather_triton.main, ["--out", "{tmp}/t.pftrace"], ["env", "out", "timeout"], "{tmp}/t.pftrace"),
])
def test_auto_is_passed_only_to_a_main_that_takes_it(monkeypatch, capsys, tmp_path, main, argv, keywords, out):
    """--auto reaches only a main that takes it; the trace path (--out, else the example's default for the variant
    run) reaches every one."""
    monkeypatch.chdir(tmp_path)
    calls: list = []
    results = [{"rank": 0, "a_ok": True}, {"rank": 1, "a_ok": True}]
    monkeypatch.setattr(examples_run, "launch", _launch_returning(results, calls))
    assert examples_run.run_example(main, [a.replace("{tmp}", str(tmp_path)) for a in argv]) == results
    assert calls == [(main, 3 if "3" in argv else 2, (), keywords, out.replace("{tmp}", str(tmp_path)))]
    assert os.listdir(tmp_path) == [], "the check of the trace's folder left something behind"
    assert capsys.readouterr().out == "{'rank': 0, 'a_ok': True}\n{'rank': 1, 'a_ok': True}\n"


def test_a_failed_check_on_any_rank_exits_1_naming_the_ranks(monkeypatch, capsys):
    results = [{"rank": 0, "gathered_ok": True, "result_ok": True},
               {"rank": 1, "gathered_ok": True, "result_ok": False},
               {"rank": 2, "gathered_ok": False, "result_ok": True}]
    monkeypatch.setattr(examples_run, "launch", _launch_returning(results, []))
    with pytest.raises(SystemExit) as failed:
        examples_run.run_example(all_gather_triton.main, ["--ranks", "3"])
    assert failed.value.code == ("python -m examples.all_gather_triton: rank(s) 1, 2 computed a wrong result "
                                 "(see above)")  # sys.exit prints it to stderr, exit status 1
    assert capsys.readouterr().out.count("\n") == 3
