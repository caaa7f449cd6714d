"""Rank-side job of ``test_rank_progress``: what ``run_example`` says it is doing, step by step, on a new rank."""

from __future__ import annotations


def run_examples_saying(name: str, params: dict, runs: int) -> list[list[str]]:
    """Run ``name``'s example ``params`` ``runs`` times on this rank; what each run said, in order."""
    from conformance.harness import rank_side
    from conformance.harness.drawing import example_of
    from conformance.kit.scenario import load

    settings = example_of(load(name), 1, params).settings
    real, said = rank_side.progress, []
    rank_side.progress = lambda where: (said[-1].append(where), real(where))
    try:
        for _ in range(runs):
            said.append([])
            rank_side.run_example(name, params, settings, ("triton",))
    finally:
        rank_side.progress = real
    return said
