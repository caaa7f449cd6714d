"""The last rank's process is killed in the middle of an example (in setup, after the first buffer)."""

import os
import signal

from tests.conformance.faulty._base import scenario


def setup(rank, p):
    rank.buffer("out", p["BLOCK"], "int32")
    if rank.rank == rank.world_size - 1:
        os.kill(os.getpid(), signal.SIGKILL)


SCENARIO = scenario("rank_dies", setup=setup)
