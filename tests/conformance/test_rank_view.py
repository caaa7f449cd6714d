"""``RankView`` (``conformance.kit.rank_view``) is what a scenario's setup and launch get of a rank: both the real
``Rank`` of a world and the stand-in rank that captures launches to compile them ahead implement it."""

from __future__ import annotations

import pytest
import torch

from conformance.harness.stand_in import StandInRank, captured_launches
from conformance.kit.rank_view import HostView, RankView, TracingView
from conformance.kit.scenario import load
from iris import context_layout
from iris.ranks import backend_env, launch

from . import rank_view_jobs

pytestmark = pytest.mark.cpu_interpret


def test_the_real_rank_is_a_rank_view():
    (got,) = launch(rank_view_jobs.real_rank_job, 1, env=backend_env("cpu"), timeout=300)
    assert (got["RankView"], got["HostView"], got["TracingView"]) == (True, True, True), got
    assert (got["ctx"].cur_rank, got["ctx"].num_ranks, len(got["ctx"].heap_bases)) == (0, 1, 1), got["ctx"]


@pytest.mark.parametrize(("rank", "world_size"), [(0, 1), (2, 3)])
def test_the_stand_in_rank_is_a_rank_view_with_a_real_context(rank, world_size):
    stand_in = StandInRank("triton", load("tracing_1d_address").kernel("triton"), rank, world_size, "cpu")
    assert isinstance(stand_in, RankView)
    assert isinstance(stand_in.shmem, HostView) and isinstance(stand_in.shmem.tracing, TracingView)
    assert stand_in.shmem.device == torch.device("cpu")
    assert stand_in.world_constexprs == {"rank": rank, "world": world_size}  # this kernel takes both
    ctx = context_layout.decode(stand_in.ctx)  # a context of layout v3: checks its length and version
    assert (ctx.cur_rank, ctx.num_ranks, ctx.heap_bases, ctx.tracing.enabled) == (rank, world_size,
                                                                                  (0,) * world_size, 0), ctx
    assert stand_in.ctx.dtype == torch.int64 and stand_in.ctx.shape == (context_layout.length(world_size),)


def test_a_captured_launch_passes_the_stand_in_context_first():
    scenario = load("store")
    params = {"n": 5, "BLOCK": 32, "dtype": "int32", "TRACE_OPS": False, "offset": 0,
              "bits": [[1, 0] * 16, [1, 0] * 16]}
    (launched,) = captured_launches(scenario, "gluon", params, 1, 2, "cpu")
    assert context_layout.decode(launched.args[0]).cur_rank == 1, launched.args[0]
    assert launched.args[1].dtype == torch.int32 and launched.kwargs["BLOCK"] == 32, launched
