"""iris.ranks.stacks: which frames of a rank's faulthandler dump a hang quotes, and a real dump of this process."""

import faulthandler
import os
import tempfile
import threading
import time

import pytest

from iris.ranks import stacks

pytestmark = pytest.mark.cpu_unit

WATCHER = '''Thread 0x00007f0000000002 (most recent call first):
  File "/x/iris/ranks/child.py", line 76 in _watch_parent
  File "/usr/lib/python3.11/threading.py", line 975 in run
'''


def _job_thread(frames: list[str]) -> str:
    outer = ['  File "/x/iris/ranks/child.py", line 176 in rank_main',
             '  File "/usr/lib/python3.11/multiprocessing/process.py", line 108 in run']
    return "Current thread 0x00007f0000000001 (most recent call first):\n" + "\n".join(frames + outer) + "\n"


def test_the_job_threads_frames_up_to_rank_main_and_no_other_thread():
    frames = ['  File "/x/torch/cuda/__init__.py", line 9 in synchronize', '  File "/x/job.py", line 3 in run_example']
    dump = WATCHER + "\n" + _job_thread(frames)
    assert stacks.job_frames(dump) == ('File "/x/torch/cuda/__init__.py", line 9 in synchronize\n'
                                       'File "/x/job.py", line 3 in run_example')
    assert stacks.job_frames(WATCHER) == ""  # no job thread in it (yet): nothing
    between_jobs = _job_thread([])
    assert stacks.job_frames(between_jobs) == 'File "/x/iris/ranks/child.py", line 176 in rank_main'


def test_a_deep_stack_keeps_its_innermost_and_outermost_frames():
    frames = [f'  File "/x/f{i}.py", line {i} in f{i}' for i in range(20)]
    got = stacks.job_frames(_job_thread(frames), max_frames=6).splitlines()
    assert got == [f'File "/x/f{i}.py", line {i} in f{i}' for i in range(3)] + ["... 14 frames"] + [
        f'File "/x/f{i}.py", line {i} in f{i}' for i in range(17, 20)]


def test_library_frames_between_the_innermost_and_the_projects_are_one_line_each_run():
    """A kernel spinning under the interpreter: its stack is deep in the interpreter, the kernel's line in the middle.
    The innermost frame (where it waits) and every frame outside the installed libraries are kept."""
    site = "/v/lib/python3.11/site-packages"
    frames = [f'  File "{site}/triton/runtime/interpreter.py", line 143 in _validate',
              '  File "<string>", line 6 in __init__',
              f'  File "{site}/triton/language/semantic.py", line 595 in scalar_constant',
              '  File "/repo/tests/faulty/hangs.py", line 12 in triton_kernel',
              f'  File "{site}/triton/runtime/interpreter.py", line 1470 in run',
              f'  File "{stacks._STDLIB}threading.py", line 9 in run',
              '  File "/repo/conformance/harness/rank_side.py", line 276 in launch',
              '  File "/repo/conformance/harness/rank_side.py", line 161 in run_example']
    assert stacks.job_frames(_job_thread(frames)).splitlines() == [
        f'File "{site}/triton/runtime/interpreter.py", line 143 in _validate', "... 2 library frames",
        'File "/repo/tests/faulty/hangs.py", line 12 in triton_kernel', "... 2 library frames",
        'File "/repo/conformance/harness/rank_side.py", line 276 in launch',
        'File "/repo/conformance/harness/rank_side.py", line 161 in run_example']


def test_a_real_dump_names_the_function_the_job_thread_waits_in():
    """faulthandler's own format, from this process: a thread whose outermost job frame is named rank_main."""
    release = threading.Event()

    def stuck_in_here():
        release.wait(30)

    def rank_main():  # stands in for iris.ranks.child.rank_main
        stuck_in_here()

    worker = threading.Thread(target=rank_main)
    worker.start()
    fd, path = tempfile.mkstemp(suffix=".txt")
    os.close(fd)
    try:
        stacks.listen(path)
        got = stacks.take({0: (os.getpid(), path)})
        assert list(got) == [0]
        lines = got[0].splitlines()
        assert lines[-1].endswith(" in stuck_in_here") and __file__ in lines[-1], got
        assert len(lines) >= 2 and all(" in rank_main" not in line for line in lines), got
        started = time.monotonic()
        assert stacks.take({0: (2**22 + 12345, path)}) == {} and time.monotonic() - started < 1  # no such process
    finally:
        faulthandler.unregister(stacks.SIGNAL)
        release.set()
        worker.join()
        os.remove(path)
    started = time.monotonic()
    assert stacks.take({0: (os.getpid(), path)}) == {} and time.monotonic() - started < 1  # no file: nothing asked
