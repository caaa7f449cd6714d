"""Rank-side job of ``test_rank_view``: the harness's real ``Rank`` on a rank of a world, held against the
``RankView`` protocol a scenario's setup and launch are written for."""

from __future__ import annotations


def real_rank_job() -> dict:
    """Which protocols the real ``Rank`` (its host object, its tracing) implements, and what its context holds."""
    from conformance.harness.rank_side import Rank, _shmem
    from conformance.kit.rank_view import HostView, RankView, TracingView
    from conformance.kit.scenario import load
    from iris import context_layout

    rank = Rank(_shmem("store"), "gluon", load("store").kernel("gluon"))
    return {"RankView": isinstance(rank, RankView), "HostView": isinstance(rank.shmem, HostView),
            "TracingView": isinstance(rank.shmem.tracing, TracingView),
            "ctx": context_layout.decode(rank.ctx.cpu())}
