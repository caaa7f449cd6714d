"""The memory-checker plumbing (iris.ranks.sanitizer): finding the tool, reading its log, refusing ROCm."""

from __future__ import annotations

import pytest
import torch

from iris.ranks import sanitizer

pytestmark = pytest.mark.cpu_unit

LOG = """========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 8 bytes
=========     at store_kernel+0x1d0 in kernel.py:12
=========     by thread (3,0,0) in block (0,0,0)
=========     Address 0x7f0000000400 is out of bounds
=========
========= ERROR SUMMARY: 1 error
"""


def test_new_errors_quotes_the_report_and_moves_past_it(tmp_path):
    log = tmp_path / "rank-1.log"
    log.write_text("========= COMPUTE-SANITIZER\n")
    text, offset = sanitizer.new_errors(str(log), 0)
    assert (text, offset) == ("", len("========= COMPUTE-SANITIZER\n")), "a clean log reports nothing"
    log.write_text(LOG)
    text, offset = sanitizer.new_errors(str(log), offset)
    assert "Invalid __global__ write of size 8 bytes" in text and "out of bounds" in text, text
    assert offset == len(LOG.encode()), f"offset={offset}, but should be the log's length {len(LOG.encode())}"
    assert sanitizer.new_errors(str(log), offset) == ("", offset), "an error is reported once, not again"


def test_a_missing_log_is_no_error(tmp_path):
    assert sanitizer.new_errors(str(tmp_path / "none.log"), 0) == ("", 0)


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
