"""One disagreement between an API and the model, or between the two APIs: :class:`Divergence`, and the names of
the checks that find them (``vs_model``, ``between``; ``conformance.results.CHECKS`` lists a case's three)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conformance.check.model import Event

MODEL = "model"


def vs_model(api: str) -> str:
    """The check of ``api``'s events and memory against the model: ``"<api> vs model"``."""
    return f"{api} vs {MODEL}"


def between(x: str, y: str) -> str:
    """The check of two APIs against each other: ``"<x> vs <y>"``."""
    return f"{x} vs {y}"


@dataclass
class Divergence:
    """One disagreement, readable without knowing the harness."""

    check: str  # "triton vs model" | "gluon vs model" | "triton vs gluon"
    rank: int
    where: str  # "pid 3 event 1", "buffer out[17]", "attempted", ...
    field: str
    actual: object  # the API's value (between two APIs: the first's)
    expected: object  # the model's value (between two APIs: the second's)
    left: Event | None = None
    right: Event | None = None

    def __str__(self) -> str:
        """Against the model: ``<field>=<actual>, but should be <expected>``; between two APIs, neither is the
        reference: ``<field>: <x>=<x's value>, <y>=<y's value>``."""
        a, b = self.check.split(" vs ")
        said = (f"{self.field}={self.actual!r}, but should be {self.expected!r}" if b == MODEL else
                f"{self.field}: {a}={self.actual!r}, {b}={self.expected!r}")
        lines = [f"{said} [{self.check}, rank {self.rank}, {self.where}]"]
        if self.left is not None or self.right is not None:
            lines.append(f"    {a:>6}: {self.left}")
            lines.append(f"    {b:>6}: {self.right}")
        return "\n".join(lines)
