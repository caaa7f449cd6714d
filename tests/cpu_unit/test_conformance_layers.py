"""conformance/ is layered: no two of its parts (its folders and top-level modules) import each other, at any depth,
imports under ``TYPE_CHECKING`` and inside functions included.

Every module of conformance/ is parsed, never imported; each import of a ``conformance`` module is resolved to the
part it lands in (a folder such as ``harness``, or a top-level module such as ``results``). The graph of parts must
have no cycle, and each part imports only parts on floors below its own (``FLOORS``). The command line (``cli``,
``__main__``) stands above every part; the deprecated aliases at the suite's old import paths
(``conformance/scenario.py`` and its siblings) only re-export a module of ``kit`` or ``check``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.cpu_unit

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "conformance"
TOP = {"cli", "__main__", "__init__"}  # the command line, above every part
# each part's floor, lowest first: a part imports only parts of lower floors
FLOORS = ({"check"}, {"kit"}, {"results"}, {"harness", "scenarios"}, {"report", "mutation"})


def _deprecated_alias(path: Path) -> bool:
    return path.parent == PACKAGE and path.read_text().startswith('"""Deprecated: the old path of')


def part_of(module: str) -> str | None:
    """The part of conformance/ a dotted module name lands in (its folder or top-level module); None outside."""
    names = module.split(".")
    return names[1] if names[0] == "conformance" and len(names) > 1 else None


def imported(source: str, package: str) -> set[str]:
    """The ``conformance`` modules a module of ``package`` whose text is ``source`` imports, as absolute names
    (relative imports resolved; ``from conformance import results`` names ``conformance.results``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parents = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parents + ([base] if base else []))
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return {name for name in found if name.startswith("conformance.")}


def part_graph() -> dict[str, set[str]]:
    """Each part -> the other parts its modules import (the command line and the deprecated aliases left out)."""
    parts = {p.stem for p in PACKAGE.glob("*.py")} | {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    graph: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        dotted = path.relative_to(ROOT).with_suffix("").parts
        here = part_of(".".join(dotted))
        if here in TOP or _deprecated_alias(path):
            continue
        targets = {part_of(name) for name in imported(path.read_text(), ".".join(dotted[:-1]))}
        graph.setdefault(here, set()).update(t for t in targets if t in parts and t not in TOP and t != here)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The cycles a depth-first search of ``graph`` meets, each as the parts along it, its first repeated last."""
    found: list[list[str]] = []
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> None:
        path = path + [node]
        for nxt in sorted(graph.get(node, ())):
            if nxt in path:
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in done:
                visit(nxt, path)
        done.add(node)

    for node in sorted(graph):
        if node not in done:
            visit(node, [])
    return found


def test_no_two_parts_of_conformance_import_each_other():
    graph = part_graph()
    assert {"check", "harness", "kit", "mutation", "report", "results", "scenarios"} <= set(graph), sorted(graph)
    found = cycles(graph)
    assert not found, "import cycles between parts of conformance/: " + "; ".join(" -> ".join(c) for c in found)


def test_each_part_imports_only_parts_on_lower_floors():
    floor = {part: i for i, parts in enumerate(FLOORS) for part in parts}
    graph = part_graph()
    assert set(graph) <= set(floor), f"give {sorted(set(graph) - set(floor))} a floor in FLOORS"
    upward = [f"{a} -> {b}" for a, targets in sorted(graph.items()) for b in sorted(targets) if floor[b] >= floor[a]]
    assert not upward, f"imports of a part on the same floor or above: {upward}"


def test_a_cycle_is_caught():
    assert cycles({"results": {"kit"}, "kit": {"check"}, "check": {"results"}}) == [
        ["check", "results", "kit", "check"]]
    assert cycles({"results": set(), "kit": {"results"}, "check": {"kit", "results"}}) == []


def test_every_kind_of_import_is_resolved_to_its_part():
    source = ("from typing import TYPE_CHECKING\nimport conformance.kit.scale\nimport iris.context_layout\n"
              "from . import helpers\nfrom ..results import CaseResult\n"
              "if TYPE_CHECKING:\n    from conformance.check.model import Model\n"
              "def f():\n    from conformance import report\n")
    assert {part_of(n) for n in imported(source, "conformance.harness")} == {
        "kit", "harness", "results", "check", "report"}
