"""The three checks of every example, named once: each API against the model, and the two APIs against each other.

``CHECKS`` is their order in reports; ``VERDICT_KEY`` the key of each in a case's verdicts (an API's own check is
keyed by the API's name).
"""

from __future__ import annotations

from conformance.kit.scenario import APIS

MODEL = "model"


def vs_model(api: str) -> str:
    """The check of ``api``'s events and memory against the model: ``"<api> vs model"``."""
    return f"{api} vs {MODEL}"


def between(x: str, y: str) -> str:
    """The check of two APIs against each other: ``"<x> vs <y>"``."""
    return f"{x} vs {y}"


CHECKS: tuple[str, ...] = (*(vs_model(api) for api in APIS), between(*APIS))
VERDICT_KEY: dict[str, str] = {**{vs_model(api): api for api in APIS}, between(*APIS): between(*APIS)}
