"""Turning an example's timeout into a hang: the case's verdict, with the replay line.

An example whose ranks do not all answer within its budget (``conformance.harness.budget``) raises
:class:`ExampleHung` out of ``example.run_example``; ``record_hang`` makes it the case's ``Hang`` and error. The pool
is rebuilt by its next job.
"""

from __future__ import annotations

from conformance.results import CaseResult, Hang
from iris.ranks import RankTimeout


class ExampleHung(Exception):
    """An example's ranks did not all answer within its budget: ``error`` is the pool's ``RankTimeout`` (its
    ``timeout`` the budget), ``seconds`` how long the example ran before its ranks were killed."""

    def __init__(self, error: RankTimeout, seconds: float) -> None:
        super().__init__(str(error))
        self.error, self.seconds = error, seconds


def record_hang(case: CaseResult, hung: ExampleHung) -> None:
    """Make ``hung`` the verdict of ``case`` (whose ``replay`` is the example's): its ``hang``, the seconds and the
    share of its budget it took, and its ``error`` with the pool's message and the replay command."""
    e = hung.error
    case.hang = Hang(e.ranks, e.doing, e.timeout, case.replay, e.stacks)
    case.seconds += hung.seconds
    case.budget_used = max(case.budget_used, round(hung.seconds / e.timeout, 4))
    case.error = f"hang: {case.hang.summary()}\n{type(e).__name__}: {e}\nreplay: {case.replay}"
