"""Setup allocates the buffer ``out`` twice."""

from tests.conformance.faulty._base import scenario


def setup(rank, p):
    rank.buffer("out", p["BLOCK"], "int32")
    rank.buffer("out", p["BLOCK"], "int32")


SCENARIO = scenario("buffer_twice", setup=setup)
