"""The sanitizer plumbing (iris.ranks.sanitizer): the four tools' options, reading each tool's log (findings, clean
runs, what is not ours), the wrapper script, finding the tool, refusing ROCm.

The logs are written as each tool prints them (NVIDIA's Compute Sanitizer documentation: the report formats of its
examples, with the tool's indentation of the lines after a report's first).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile

import pytest
import torch

from iris.ranks import RankPool, sanitizer

pytestmark = pytest.mark.cpu_unit

BANNER = "========= COMPUTE-SANITIZER\n"
MEMCHECK = """========= Invalid __global__ write of size 4 bytes
=========     at store_kernel+0x1d0 in store.py:12
=========     by thread (3,0,0) in block (0,0,0)
=========     Address 0x7f0000000400 is out of bounds
=========     and is 1,024 bytes after the nearest allocation at 0x7f0000000000 of size 1,024 bytes
=========
========= Program hit cudaErrorInvalidValue (error 1) due to "invalid argument" on CUDA API call to cudaMemcpy.
=========
"""
RACECHECK = """========= Error: Race reported between Write access at sumKernel(int *, int *)+0x90 in block_error.cu:41
=========     and Read access at sumKernel(int *, int *)+0x100 in block_error.cu:51 [508 hazards]
=========
========= WARNING: Race reported between Write access at RAW()+0xf0 in raceGroupBasic.cu:40
=========     and Read access at RAW()+0x280 in raceGroupBasic.cu:46 [4 hazards]
=========
========= Warning: (Warp Level Programming) Potential RAW hazard detected at __shared__ 0x8c in block (0,0,0) :
=========     Write Thread (35,0,0) at sumKernel(int *, int *)+0x90 in warp_error.cu:44
=========     Read Thread (32,0,0) at sumKernel(int *, int *)+0x120 in warp_error.cu:56
=========     Current Value : 35
=========
"""
SYNCCHECK = """========= Barrier error detected. Divergent thread(s) in block.
=========     at [clone myKernel(int *, int *)] outlineSync()+0x11f0 in test.cu:42
=========     by thread (32,0,0) in block (0,0,0)
=========     Device Frame: myKernel(int *, int *)+0xe40 in test.cu:60
=========
========= Barrier error detected. Invalid arguments
=========     at __cuda_sm70_warpsync+0x30
=========     by thread (0,0,0) in block (0,0,0)
"""
INITCHECK = """========= Uninitialized __global__ memory read of size 4 bytes
=========     at vectorAdd(int *)+0x70 in memset_error.cu:41
=========     by thread (31,0,0) in block (1,0,0)
=========     Address 0x7f3c7ec000fc
=========
"""
FINDINGS = {  # tool: (log, [(kind, first line of the report, lines in it)])
    "memcheck": (MEMCHECK, [("invalid memory access", "Invalid __global__ write of size 4 bytes", 5),
                            ("CUDA API error", 'Program hit cudaErrorInvalidValue (error 1) due to "invalid argument" '
                                               "on CUDA API call to cudaMemcpy.", 1)]),
    "racecheck": (RACECHECK, [("shared-memory race", "Error: Race reported between Write access at sumKernel(int *, "
                                                     "int *)+0x90 in block_error.cu:41", 2),
                              ("shared-memory race", "WARNING: Race reported between Write access at RAW()+0xf0 in "
                                                     "raceGroupBasic.cu:40", 2),
                              ("shared-memory hazard", "Warning: (Warp Level Programming) Potential RAW hazard "
                                                       "detected at __shared__ 0x8c in block (0,0,0) :", 4)]),
    "synccheck": (SYNCCHECK, [("barrier error", "Barrier error detected. Divergent thread(s) in block.", 4),
                              ("barrier error", "Barrier error detected. Invalid arguments", 3)]),
    "initcheck": (INITCHECK, [("uninitialized read", "Uninitialized __global__ memory read of size 4 bytes", 4)]),
}
CLEAN = {  # what each tool writes when it found nothing: the banner, then its summary at exit
    "memcheck": "========= ERROR SUMMARY: 0 errors\n",
    "racecheck": "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n",
    "synccheck": "========= ERROR SUMMARY: 0 errors\n",
    "initcheck": "========= ERROR SUMMARY: 0 errors\n",
}
SUMMARIES = {  # the summary of a run that found something: a finding of its own
    "memcheck": "========= LEAK SUMMARY: 1024 bytes leaked in 1 allocations\n========= ERROR SUMMARY: 3 errors\n",
    "racecheck": "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n",
    "synccheck": "========= ERROR SUMMARY: 32 errors\n",
    "initcheck": "========= ERROR SUMMARY: 1 error\n",
}


def _said(reports) -> list[tuple[str, str, int, str]]:
    return [(r.kind, sanitizer._text(r.lines[0]), len(r.lines), r.not_ours) for r in reports]


@pytest.mark.parametrize("tool", sanitizer.TOOLS)
def test_each_tool_s_findings_are_read_as_it_documents_them(tool):
    log, expected = FINDINGS[tool]
    reports = sanitizer.parse(BANNER + log + CLEAN[tool], tool)
    assert _said(reports) == [(kind, first, n, "") for kind, first, n in expected]
    assert reports[0].lines[0] == "========= " + expected[0][1], "a report quotes the tool's line as it wrote it"


@pytest.mark.parametrize("tool", sanitizer.TOOLS)
def test_a_clean_run_of_each_tool_reports_nothing(tool):
    assert sanitizer.parse(BANNER + CLEAN[tool], tool) == []
    assert sanitizer.parse("=========\n========= \nan application line, not the tool's\n", tool) == []


@pytest.mark.parametrize("tool", sanitizer.TOOLS)
def test_a_summary_that_counts_findings_is_a_finding(tool):
    lines = SUMMARIES[tool].splitlines()
    assert _said(sanitizer.parse(BANNER + SUMMARIES[tool], tool)) == [("summary", line[10:], 1, "") for line in lines]


def test_a_line_the_table_does_not_know_is_a_finding_and_the_tool_s_own_errors_are():
    text = ("========= Internal Sanitizer Error: The Sanitizer encountered an error while launching k and didn't track "
            "the launch. Errors might go undetected. (Unable to allocate enough memory)\n"
            "========= Something the marker table has never seen\n=========     with a detail\n"
            "========= Error: process didn't terminate successfully\n")
    assert [(kind, n) for kind, _, n, _ in _said(sanitizer.parse(text, "racecheck"))] == [
        ("tool error", 1), ("", 2), ("tool error", 1)]
    overflow = ("========= Warning: Detected overflow of tracked cuda::barrier structures. Results might be "
                "incorrect. Try using --num-cuda-barriers to fix the issue\n")
    assert [r.kind for r in sanitizer.parse(overflow, "synccheck")] == ["barrier tracking overflow"]


def test_an_initcheck_report_on_peer_memory_is_not_ours_and_on_own_memory_is():
    peer = ((0x7F3C7EC00000, 0x1000),)  # the report's address 0x7f3c7ec000fc lies in it
    (report,) = sanitizer.parse(INITCHECK, "initcheck", peer)
    assert report.not_ours == sanitizer.TOOLS["initcheck"].peer_memory_unsupported
    assert report.not_ours.startswith("initcheck does not support IPC allocations"), report.not_ours
    assert sanitizer.parse(INITCHECK, "initcheck", ((0x7F3C7EC00000, 0xFC),))[0].not_ours == "", "one byte past it"
    assert sanitizer.parse(INITCHECK, "initcheck")[0].not_ours == "", "no peer memory mapped"
    memcheck = INITCHECK.replace("Uninitialized __global__ memory read", "Invalid __global__ read")
    assert sanitizer.parse(memcheck, "memcheck", peer)[0].not_ours == "", "memcheck checks peer memory"
    for said in ("Access at 0x7f3c7ec000fc", "Access to 0x7f3c7ec000fc is uninitialized",  # newer releases' wording
                 "Uninitialized access at 0x7f3c7ec000fc on access by cudaMemcpy source."):
        report = INITCHECK.replace("Address 0x7f3c7ec000fc", said)
        assert sanitizer.parse(report, "initcheck", peer)[0].not_ours, said
        assert not sanitizer.parse(report, "initcheck", ((0x1000, 0x10),))[0].not_ours, said


def test_new_reports_moves_past_what_it_read_and_leaves_a_line_being_written(tmp_path):
    log = tmp_path / "memcheck-rank-1.log"
    log.write_text(BANNER)
    assert sanitizer.new_reports(str(log), 0, "memcheck") == ([], len(BANNER)), "a clean log reports nothing"
    log.write_text(BANNER + MEMCHECK + "========= Invalid __sha")
    reports, offset = sanitizer.new_reports(str(log), len(BANNER), "memcheck")
    assert [r.kind for r in reports] == ["invalid memory access", "CUDA API error"]
    assert offset == len(BANNER + MEMCHECK), f"offset={offset}, but should stop before the unfinished line"
    log.write_text(BANNER + MEMCHECK + "========= Invalid __shared__ read of size 4 bytes\n")
    reports, end = sanitizer.new_reports(str(log), offset, "memcheck")
    assert _said(reports) == [("invalid memory access", "Invalid __shared__ read of size 4 bytes", 1, "")]
    assert sanitizer.new_reports(str(log), end, "memcheck") == ([], end), "a report is read once, not again"


def test_a_missing_log_is_no_finding(tmp_path):
    assert sanitizer.new_reports(str(tmp_path / "none.log"), 0, "memcheck") == ([], 0)


def test_a_failure_quotes_the_kinds_then_the_tool_s_lines():
    reports = sanitizer.parse(RACECHECK, "racecheck")
    assert sanitizer.quote(reports, "racecheck", "/logs/r.log") == (
        "compute-sanitizer racecheck reported 2 shared-memory race, 1 shared-memory hazard (rank log /logs/r.log):\n"
        + "\n".join(line for line in RACECHECK.splitlines() if line != "========="))
    many = sanitizer.parse(SYNCCHECK * 8, "synccheck")
    quoted = sanitizer.quote(many, "synccheck", "l").splitlines()
    assert quoted[0] == "compute-sanitizer synccheck reported 16 barrier error (rank log l):", quoted[0]
    assert len(quoted) == 1 + sanitizer.QUOTED_LINES + 1 and quoted[-1] == "... and 16 more lines in the log", quoted
    unknown = sanitizer.parse("========= Nothing the table knows\n", "memcheck")
    assert sanitizer.quote(unknown, "memcheck", "l").splitlines()[0] == (
        "compute-sanitizer memcheck reported 1 line the marker table does not know (rank log l):")


def test_reports_that_are_not_ours_are_noted_beside_the_log_and_taken_once(tmp_path, monkeypatch):
    monkeypatch.setattr(sanitizer, "find_tool", lambda: "/cuda/bin/compute-sanitizer")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the pool's log folder
    pool = RankPool(2, "gpu", sanitizer="initcheck")  # nothing starts before the first job
    assert os.path.dirname(pool.log_dir) == str(tmp_path) and "initcheck" in os.path.basename(pool.log_dir)
    peer = ((0x7F3C7EC00000, 0x1000),)
    reports = sanitizer.parse(INITCHECK * 3, "initcheck", peer)
    for rank_log in ("initcheck-rank-11.log", "initcheck-rank-12.log"):
        sanitizer.note_not_ours(os.path.join(pool.log_dir, rank_log), "initcheck", reports)
    why = sanitizer.TOOLS["initcheck"].peer_memory_unsupported
    head = ("========= Uninitialized __global__ memory read of size 4 bytes\n"
            "=========     at vectorAdd(int *)+0x70 in memset_error.cu:41")
    assert pool.take_not_ours() == [{"tool": "initcheck", "why": why, "report": head, "count": 6}]
    assert pool.take_not_ours() == [], "an entry is taken once"
    sanitizer.note_not_ours(os.path.join(pool.log_dir, "initcheck-rank-11.log"), "initcheck", reports[:1])
    assert pool.take_not_ours() == [{"tool": "initcheck", "why": why, "report": head, "count": 1}]
    with open(os.path.join(pool.log_dir, "initcheck-rank-11.log" + sanitizer.NOT_OURS_SUFFIX)) as f:
        assert [json.loads(line)["count"] for line in f] == [3, 1], "one line per distinct report and job"
    assert RankPool(1, "gpu").take_not_ours() == [] and RankPool(1, "gpu").log_dir is None


@pytest.mark.parametrize("tool", sanitizer.TOOLS)
def test_the_wrapper_runs_each_tool_with_its_options_and_a_log_per_rank_and_tool(tool):
    """The tool's own options go between --tool and --log-file, its variables beside the log's. What they are is
    ``TOOLS``', written once: docs/sanitizers.md's table is checked against it (tests/cpu_unit/test_docs.py)."""
    own, env = " ".join(sanitizer.TOOLS[tool].options), sanitizer.TOOLS[tool].env
    exports = "".join(f"{k}={v}\nexport {k}\n" for k, v in env.items())
    assert sanitizer.wrapper_text(tool, "/cuda/bin/compute-sanitizer", "/usr/bin/python3", "/tmp/logs") == (
        f"#!/bin/sh\nIRIS_SANITIZER_LOG=/tmp/logs/{tool}-rank-$$.log\nexport IRIS_SANITIZER_LOG\n"
        f"IRIS_SANITIZER_TOOL={tool}\nexport IRIS_SANITIZER_TOOL\n{exports}"
        f"exec /cuda/bin/compute-sanitizer --tool {tool} --target-processes application-only --show-backtrace device "
        f'{own} --log-file "$IRIS_SANITIZER_LOG" /usr/bin/python3 "$@"\n')


def test_the_wrapper_hands_the_program_its_arguments_and_names_the_log_by_its_pid(tmp_path):
    """Run through sh with a stand-in tool that prints what it got: paths with spaces and quotes stay whole."""
    folder = tmp_path / "it's a dir"
    folder.mkdir()
    tool = folder / "compute-sanitizer"
    tool.write_text('#!/bin/sh\nfor a in "$@"; do echo "arg:$a"; done\necho "tool:$IRIS_SANITIZER_TOOL"\n'
                    'echo "caching:$PYTORCH_NO_CUDA_MEMORY_CACHING"\necho "pid:$$"\n')
    tool.chmod(0o755)
    script = folder / "wrapper.sh"
    script.write_text(sanitizer.wrapper_text("initcheck", str(tool), "/my python", str(folder)))
    out = subprocess.run(["sh", str(script), "-c", "x y"], capture_output=True, text=True, check=True).stdout
    said = out.splitlines()
    pid = said[-1].removeprefix("pid:")
    assert said[:-1] == [f"arg:{a}" for a in ["--tool", "initcheck", "--target-processes", "application-only",
                                              "--show-backtrace", "device", "--print-limit", "0", "--log-file",
                                              f"{folder}/initcheck-rank-{pid}.log", "/my python", "-c", "x y"]] + [
        "tool:initcheck", "caching:1"], said


def test_sanitize_names_a_tool():
    assert [sanitizer.tool_name(v) for v in (False, "", True, "racecheck", "initcheck")] == [
        "", "", "memcheck", "racecheck", "initcheck"]
    with pytest.raises(ValueError) as e:
        sanitizer.tool_name("asan")
    assert str(e.value) == ("sanitizer='asan'; expected False, True (memcheck) or one of memcheck, racecheck, "
                            "synccheck, initcheck")
    with pytest.raises(ValueError, match=r"^RankPool: sanitizer='memcheck,racecheck'; expected False"):
        RankPool(1, "gpu", sanitizer="memcheck,racecheck")


def test_missing_tool_says_where_it_looked(monkeypatch, tmp_path):
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(sanitizer, "CUDA_DEFAULT", str(tmp_path / "cuda"))
    missing = r"compute-sanitizer not found on PATH, in \$CUDA_HOME/bin"
    with pytest.raises(sanitizer.SanitizerUnavailable, match=missing):
        sanitizer.find_tool()
    tool = tmp_path / "cuda" / "bin" / "compute-sanitizer"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    assert sanitizer.find_tool() == str(tool)


def test_rocm_is_refused_by_name(monkeypatch):
    monkeypatch.setattr(torch.version, "hip", "6.4")
    with pytest.raises(sanitizer.SanitizerUnavailable, match="not available on ROCm"):
        sanitizer.find_tool()
