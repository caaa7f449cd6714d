"""The docs name only what exists and say what the code does; docs/api.md's op table is ``iris.op_contract``'s.

Checked in README.md, CONTRIBUTING.md and every docs/*.md: every repository path in backticks (relative to the
repository root) and every entry of docs/design.md's Layout tree; every relative link (and its #anchor); every
command line in backticks or a shell code block (scripts present and executable, modules importable, benchmark and
example flags declared by the module's argparse, pytest options and markers known; ``./ci/nightly.sh`` and
``./ci/sanitize.sh`` arguments go to ``conformance gate``, ``./ci/test.sh`` arguments to pytest); every bare
``--flag`` in backticks, against the command it belongs to: the nearest command in its paragraph, else the last one
before it in its section. A ``python -m`` command of a code block is parsed by its module's own argparse parser (the
``iris.cli_args`` types included: a name they do not know is refused), nothing run past the parse; a
``python -m conformance`` command names only scenarios and mutants that exist (or that a ``new`` of the same doc
makes); no command writes into a tracked file (``--out``, ``--keep``).

Tested against the code: the option lists of ``conformance run``, ``gate`` and ``mutate``, docs/sanitizers.md's tool
table (``iris.ranks.sanitizer.TOOLS``), CONTRIBUTING.md's mutant counts, design.md's word on the model's ``Event``.
Not repository files: URLs, globs, placeholders (``<case id>``, ``OLD/``), absolute and home paths, tool outputs
(paths git ignores, and ``OUTPUT_FILES``, which the conformance CLI writes into ``--out``).

Also checked: every document that a ``*.py`` of iris/, conformance/, tests/, benchmarks/ or examples/, or a ``*.md``,
names (a ``*.md`` name or a docs/ path) exists, and so does the heading that an ``#anchor`` or a quoted section title
after it names (``document_problems``).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import difflib
import io
import os
import re
import runpy
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from unittest import mock

import pytest

from conformance.check.model import LOGICAL_FIELDS, Event
from conformance.cli import _parser
from conformance.kit.scenario import is_scenario
from conformance.mutation.catalogue import CATALOGUE
from conftest import MARKERS
from iris.op_contract import TABLE_BEGIN, TABLE_END, op_table
from iris.ranks import sanitizer

pytestmark = pytest.mark.cpu_unit

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("README.md", "CONTRIBUTING.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")))
LAYOUT_DOC = "docs/design.md"  # the one Layout tree
OP_TABLE_DOC = "docs/api.md"  # the op table
README_MAX_LINES = 300
# Files the conformance CLI writes into its --out folder: named in the docs, never in the repository.
OUTPUT_FILES = ("results.json", "summary.md", "mutate.json")
PATH_SUFFIXES = (".py", ".md", ".sh", ".toml", ".json")
SHELL_BLOCKS = ("bash", "sh", "")
SEPARATORS = {"&&", "||", ";", "|"}
COMMAND = re.compile(r"^(?:[A-Z_]+=\S*\s+)*(?:python3? -m\s|\./)")
PLACEHOLDER = re.compile(r"^[A-Z][A-Z_]*$")
# Options whose value a command writes into: never a tracked file or a folder holding one.
OUTPUT_OPTIONS = ("--out", "--keep")
# Inputs that a doc's own command writes first (a refusal naming one, read before it exists, is no problem).
WRITTEN_BY_A_DOC_COMMAND = ("fused_gather_compute_triton.json",)
MUTANTS = {m.name for m in CATALOGUE}
# Scripts that hand their arguments on to a command (test_wrapper_scripts_pass_their_arguments_on checks it).
WRAPPERS = {"./ci/nightly.sh": ["python", "-m", "conformance", "gate"], "./ci/sanitize.sh": ["python", "-m",
            "conformance", "gate"], "./ci/test.sh": ["python", "-m", "pytest"]}


@dataclass(frozen=True)
class Span:
    """One inline code span of prose (``lang`` None) or one line of a fenced block (``lang`` its language)."""

    line: int
    text: str
    section: int
    paragraph: int
    lang: str | None


def spans(text: str) -> list[Span]:
    """Inline code spans and fenced-block lines of a Markdown text, in order, with section and paragraph ids."""
    found: list[Span] = []
    section = paragraph = 0
    lang: str | None = None
    prose: list[tuple[int, str]] = []

    def flush() -> None:
        nonlocal paragraph
        joined = "\n".join(t for _, t in prose)
        for m in re.finditer(r"`([^`]+)`", joined):
            line = prose[0][0] + joined.count("\n", 0, m.start())
            found.append(Span(line, " ".join(m[1].split()), section, paragraph, None))
        prose.clear()
        paragraph += 1

    for number, line in enumerate(text.splitlines(), 1):
        fence = re.match(r"^```(\w*)", line)
        if lang is not None:
            if fence:
                lang, paragraph = None, paragraph + 1
            else:
                found.append(Span(number, line, section, paragraph, lang))
            continue
        if fence:
            flush()
            lang = fence[1]
            continue
        if not line.strip() or re.match(r"^(#+ |\s*[-*] |\s*\d+\. |\|)", line):
            flush()
            if line.startswith("#"):
                section += 1
        if line.strip():
            prose.append((number, line))
    flush()
    return found


def commands(span: Span) -> list[list[str]]:
    """The command lines a span holds: prose that starts with one, or the lines of a shell block."""
    if span.lang is None:
        text = span.text if COMMAND.match(span.text) else ""
    elif span.lang == "":
        text = span.text[span.text.index("python -m") :] if "python -m" in span.text else ""
    else:
        text = span.text if span.lang in SHELL_BLOCKS else ""
    if not text:
        return []
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    found, current = [], []
    for token in lexer:
        if token in SEPARATORS:
            found.append(current)
            current = []
        elif current or not re.match(r"^[A-Za-z_]\w*=", token):
            token = token.removeprefix("[")
            current.append(token.removesuffix("]") if "[" not in token else token)  # [--flag value] is optional
    found.append(current)
    return [c for c in found if c and c != ["python", "-m"]]


def _conformance_options(sub: str) -> set[str]:
    action = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return set(action.choices[sub]._option_string_actions) if sub in action.choices else set()


def _module_file(module: str) -> Path | None:
    base = ROOT.joinpath(*module.split("."))
    return next((p for p in (base.with_suffix(".py"), base / "__main__.py") if p.is_file()), None)


def _added_options(tree: ast.AST) -> set[str]:
    """Option strings passed to ``add_argument`` anywhere in ``tree``."""
    return {a.value for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
            for a in node.args if isinstance(a, ast.Constant) and str(a.value).startswith("-")}


def _helper_options(module: str, names: set[str]) -> dict[str, set[str]]:
    """Of the functions ``names`` defined in ``module``, those that add options: name -> their option strings."""
    tree = ast.parse(_module_file(module).read_text())
    return {node.name: added for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name in names and (added := _added_options(node))}


def _argparse_options(module: str) -> set[str]:
    """Option strings passed to ``add_argument`` in ``module``, by the project's helpers it calls (a function of
    another module that adds an option, such as ``iris.cli_args.add_chunk``), and in the same package's modules it
    imports."""
    tree = ast.parse(_module_file(module).read_text())
    options = _added_options(tree)
    helpers: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module != module and _module_file(node.module):
            helpers |= _helper_options(node.module, {alias.name for alias in node.names})
            if node.module.split(".")[0] == module.split(".")[0]:
                options |= _argparse_options(node.module)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in helpers:
            options |= helpers[node.func.id]
    return options


class _Parsed(Exception):
    """Raised in place of running a script once its own parser accepted the arguments."""


def parse_problem(module: str, args: list[str]) -> str | None:
    """Why ``python -m module args`` is refused by the module's own argparse parser (its message), or None.

    The module runs as ``__main__`` up to its ``parse_args``, which here stops it once the arguments are accepted:
    nothing runs past the parse (the project's argument types, ``iris.cli_args``, only check)."""
    original = argparse.ArgumentParser.parse_args

    def parse_then_stop(self, args=None, namespace=None):
        original(self, args, namespace)
        raise _Parsed

    err, argv = io.StringIO(), sys.argv
    try:
        sys.argv = [module, *args]
        with (mock.patch.object(argparse.ArgumentParser, "parse_args", parse_then_stop),
              contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO())):
            runpy.run_module(module, run_name="__main__", alter_sys=False)
    except _Parsed:
        return None
    except SystemExit as e:
        return None if e.code in (0, None) else err.getvalue().strip() or f"exit code {e.code}"
    finally:
        sys.argv = argv
    return "it ran without parsing its arguments"


def tracked(path: str) -> bool:
    """Whether git tracks ``path`` or a file under it."""
    found = subprocess.run(["git", "-C", str(ROOT), "ls-files", "--", path], capture_output=True, text=True,
                           timeout=30).stdout
    return bool(found.strip())


class Checker:
    """Problems with the paths, commands and flags of one doc; ``pytest_option`` says whether pytest knows one."""

    def __init__(self, doc: str, pytest_option: Callable[[str], bool]):
        self.doc, self.pytest_option, self.problems = doc, pytest_option, []
        self.new_scenarios: set[str] = set()  # the names the doc's own ``conformance new`` commands make

    def problem(self, line: int, what: str) -> None:
        self.problems.append(f"{self.doc}:{line}: {what}")

    def options(self, argv: list[str]) -> tuple[str, Callable[[str], bool]] | None:
        """What a command is called in messages and whether it accepts an option; None: options not checked."""
        if argv[0] in WRAPPERS:
            return self.options(WRAPPERS[argv[0]])
        if argv[0] not in ("python", "python3") or len(argv) < 3:
            return None
        module, rest = argv[2], argv[3:]
        if module == "conformance" and rest:
            known = _conformance_options(rest[0])
            return f"python -m conformance {rest[0]}", known.__contains__
        if module == "pytest":
            return "python -m pytest", self.pytest_option
        if _module_file(module):
            known = _argparse_options(module)
            return f"python -m {module}", known.__contains__
        return None

    def path(self, line: int, text: str, executable: bool = False) -> None:
        path = ROOT / text
        if not path.exists() and not ignored(text) and text not in OUTPUT_FILES:
            self.problem(line, f"`{text}` does not exist")
        elif path.is_file() and (executable or path.read_bytes()[:2] == b"#!") and not os.access(path, os.X_OK):
            self.problem(line, f"`{text}` is not executable")

    def outputs(self, line: int, argv: list[str]) -> None:
        """A command writes nothing into a tracked file (``OUTPUT_OPTIONS``)."""
        for option, value in zip(argv, argv[1:], strict=False):
            if option in OUTPUT_OPTIONS and value and not PLACEHOLDER.match(value) and tracked(value):
                self.problem(line, f"`{' '.join(argv)}` writes into `{value}`, which git tracks")

    def conformance_names(self, line: int, args: argparse.Namespace) -> None:
        """The scenarios and mutants a ``python -m conformance`` command names exist (or the doc makes them)."""
        for name in getattr(args, "scenario", None) or ():
            if not PLACEHOLDER.match(name) and name not in self.new_scenarios and not is_scenario(name):
                self.problem(line, f"`python -m conformance {args.command}`: no scenario {name}")
        named = [*(getattr(args, "only", None) or ()), getattr(args, "mutants", None) or "all"]
        for name in (n.strip() for text in named if text != "all" for n in text.split(",")):
            if name and not PLACEHOLDER.match(name) and name not in MUTANTS:
                self.problem(line, f"`python -m conformance {args.command}`: no mutant {name}")

    def command(self, line: int, argv: list[str], strict: bool = False) -> None:
        """Check one command line; ``strict`` (a code block's): a module's own parser must accept it."""
        prog, args = argv[0], argv[1:]
        self.outputs(line, argv)
        if prog.startswith("./"):
            self.path(line, prog[2:], executable=True)
            if prog in WRAPPERS and args:
                self.command(line, [*WRAPPERS[prog], *args], strict)
            return
        if prog not in ("python", "python3") or args[:1] != ["-m"] or len(args) < 2:
            return
        module, rest = args[1], args[2:]
        if module == "conformance":
            err = io.StringIO()
            try:
                with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                    parsed = _parser().parse_args([a for a in rest if a != "--help"])
            except SystemExit:
                self.problem(line, f"`python -m conformance {' '.join(rest)}` is refused: {err.getvalue().strip()}")
                return
            self.conformance_names(line, parsed)
            return
        if module == "pytest":
            for i, arg in enumerate(rest):
                if arg.startswith("-") and not self.pytest_option(arg.split("=")[0]):
                    self.problem(line, f"`python -m pytest`: no option {arg}")
                elif "/" in arg and not arg.startswith("-"):
                    self.path(line, arg)
                if arg == "-m" and i + 1 < len(rest):
                    unknown = set(re.findall(r"\w+", rest[i + 1])) - {"and", "or", "not"} - set(MARKERS)
                    if unknown:
                        self.problem(line, f"`python -m pytest -m {rest[i + 1]}`: unknown markers {sorted(unknown)}")
            return
        if _module_file(module):
            known = _argparse_options(module)
            for arg in rest:
                if arg.startswith("--") and arg.split("=")[0] not in known:
                    self.problem(line, f"`python -m {module}` has no option {arg} (it declares {sorted(known)})")
            if strict and known and (why := parse_problem(module, rest)) is not None:
                if not any(name in why for name in WRITTEN_BY_A_DOC_COMMAND):
                    self.problem(line, f"`python -m {module} {' '.join(rest)}` is refused: {why}")
        elif module not in ("pip", "pytest"):
            self.problem(line, f"`python -m {module}`: no module {module} in the repository")

    def check(self, text: str) -> list[str]:
        found = spans(text)
        cmds = [(i, s, c) for i, s in enumerate(found) for c in commands(s)]
        new = ["python", "-m", "conformance", "new"]
        self.new_scenarios = {c[4] for _, _, c in cmds if c[:4] == new and len(c) > 4}
        for _, span, argv in cmds:
            self.command(span.line, argv, strict=span.lang is not None)
        for i, span in enumerate(found):
            if span.lang is not None or COMMAND.match(span.text):
                continue
            if span.text.startswith("--"):
                self.flag(span, cmds, i)
            elif (path := path_of(span.text)) is not None:
                self.path(span.line, path)
        return self.problems

    def flag(self, span: Span, cmds: list[tuple[int, Span, list[str]]], index: int) -> None:
        flag = span.text.split()[0].strip("[]").split("=")[0]
        section = [(j, s, c) for j, s, c in cmds if s.section == span.section]
        here_before = [c for j, s, c in section if j < index and s.paragraph == span.paragraph]
        here_after = [c for j, s, c in section if j > index and s.paragraph == span.paragraph]
        before = [c for j, s, c in section if j < index]
        owner = (here_before[-1:] or here_after[:1] or before[-1:] or [None])[0]
        options = self.options(owner) if owner else None
        if options is None:
            self.problem(span.line, f"`{flag}`: no command it belongs to in its paragraph or section")
        elif not options[1](flag):
            self.problem(span.line, f"`{flag}`: `{options[0]}` has no such option")


def path_of(text: str) -> str | None:
    """The repository path an inline code span names, or None (not a path, or not one in the repository)."""
    text = text.split("::")[0]
    text = text.removeprefix("./")
    if re.search(r"\s|://|[*?\[\]<>{}$~]", text) or text.startswith("/"):
        return None
    parts = [p for p in text.split("/") if p]
    if not parts or any(PLACEHOLDER.match(p) for p in parts):
        return None
    if "/" not in text:
        return text if text.endswith(PATH_SUFFIXES) else None
    looks = text.endswith("/") or "." in parts[-1] or parts[0].startswith(".") or (ROOT / parts[0]).exists()
    return text if looks else None


def ignored(path: str) -> bool:
    """Whether git ignores ``path``: a tool's output, not a repository file."""
    result = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "--no-index", "-q", path], timeout=30)
    return result.returncode == 0


def layout_entries(text: str) -> list[tuple[int, str, str]]:
    """``(line, path, how)`` of everything the Layout tree (``LAYOUT_DOC``) names: its entries (``how`` "entry", a path
    of the tree) and the file names in their descriptions (``how`` the name as written, resolved against its entry)."""
    match = re.search(r"^## Layout\n[^#]*?^```\n(.*?)^```", text, re.S | re.M)
    assert match, f"{LAYOUT_DOC} has no Layout code block under '## Layout'"
    first = text[: match.start(1)].count("\n") + 1
    lines = match[1].splitlines()
    column = len(lines[0]) - len(lines[0].split("  ")[-1].lstrip())  # where the descriptions start
    found, parents, entry = [], {}, ""
    for number, line in enumerate(lines, first):
        indent = len(line) - len(line.lstrip())
        if indent < column:
            names, description = line[:column].strip(), line[column:]
            parent = parents.get(indent - 2, "")
            paths = [parent + n for n in names.split(", ")]
            entry = next((p for p in paths if p.endswith("/")), parent)
            parents[indent] = paths[-1] if paths[-1].endswith("/") else parent
            found += [(number, p, "entry") for p in paths]
        else:
            description = line
        for name in re.findall(r"(?<![\w./-])([\w-]+(?:/[\w.-]+)*\.(?:py|sh|toml|yml|md|json))\b", description):
            found.append((number, name if "/" in name else entry + name, name))
    return found


def layout_problems(text: str) -> list[str]:
    """Entries of the Layout tree (and file names in their descriptions) that do not exist."""
    return [f"{LAYOUT_DOC}:{number}: Layout entry `{path}` does not exist" if how == "entry" else
            f"{LAYOUT_DOC}:{number}: Layout names `{how}`, but `{path}` does not exist"
            for number, path, how in layout_entries(text) if not (ROOT / path).exists()]


# Every module of these folders is named in the Layout; a scenario module is one of "one module per scenario".
LAYOUT_FOLDERS = ("iris", "conformance", "benchmarks", "examples")
LAYOUT_SKIPPED = ("conformance/scenarios/",)


def layout_missing(text: str) -> list[str]:
    """The modules of ``LAYOUT_FOLDERS`` (less ``__init__.py`` and ``LAYOUT_SKIPPED``) that the Layout does not name."""
    named = {path for _, path, _ in layout_entries(text)}
    modules = [p.relative_to(ROOT).as_posix() for d in LAYOUT_FOLDERS for p in sorted((ROOT / d).rglob("*.py"))
               if "__pycache__" not in p.parts and p.name != "__init__.py"]
    return [m for m in modules if m not in named and not m.startswith(LAYOUT_SKIPPED) and not ignored(m)]


def op_table_problem(text: str) -> str | None:
    """Why ``OP_TABLE_DOC``'s op table is not ``op_table()`` (a diff), or None."""
    table = op_table()
    if table in text and text.count(TABLE_BEGIN) == 1 and text.count(TABLE_END) == 1:
        return None
    begin, end = text.find(TABLE_BEGIN), text.find(TABLE_END)
    found = text[begin : end + len(TABLE_END) + 1] if 0 <= begin < end else ""
    diff = difflib.unified_diff(found.splitlines(), table.splitlines(), OP_TABLE_DOC, "op_table()", lineterm="")
    return (
        f"{OP_TABLE_DOC}'s op table is not iris.op_contract.op_table() (`python -m iris.op_contract` prints it):\n"
        + "\n".join(diff)
    )


@pytest.fixture
def pytest_option(pytestconfig) -> Callable[[str], bool]:
    def known(name: str) -> bool:
        try:
            pytestconfig.getoption(name)
        except ValueError:
            return False
        return True

    return known


@pytest.mark.parametrize("doc", DOCS)
def test_every_path_command_and_flag_the_doc_names_exists(doc, pytest_option):
    problems = Checker(doc, pytest_option).check((ROOT / doc).read_text())
    if doc == LAYOUT_DOC:
        problems += layout_problems((ROOT / doc).read_text())
    assert not problems, f"{doc} names {len(problems)} thing(s) that do not exist:\n" + "\n".join(problems)


def test_the_docs_name_paths_commands_and_flags():
    """The extraction sees what the docs hold (a parser that found nothing would pass everything)."""
    found = [s for doc in DOCS for s in spans((ROOT / doc).read_text())]
    paths = {p for s in found if s.lang is None and (p := path_of(s.text))}
    cmds = [c for s in found for c in commands(s)]
    flags = [s.text for s in found if s.lang is None and s.text.startswith("--")]
    assert {"ci/test.sh", ".ci/run", "iris/op_options.py", "conformance/mutation/catalogue.py"} <= paths, sorted(paths)
    assert {"run", "gate", "mutate", "new", "list"} <= {c[3] for c in cmds if c[2:3] == ["conformance"]}, cmds
    assert {"benchmarks.bench_conformance", "benchmarks.bench_tracing_host"} <= {c[2] for c in cmds if len(c) > 2}, cmds
    assert len(flags) >= 20, flags


def test_output_files_are_what_the_conformance_cli_writes():
    source = (ROOT / "conformance" / "cli.py").read_text()
    for name in OUTPUT_FILES:
        assert f'"{name}"' in source, f"{name} is listed as a conformance output, but conformance/cli.py never names it"
        assert not (ROOT / name).exists(), f"{name} is in the repository root: it is a file, not only an output"


def test_wrapper_scripts_pass_their_arguments_on():
    """What the checks assume: ./ci/nightly.sh and ./ci/sanitize.sh hand their arguments to the gate, ./ci/test.sh
    to pytest."""
    assert re.search(r'-m conformance gate .*"\$@"', (ROOT / "ci" / "nightly.sh").read_text())
    assert re.search(r'-m conformance gate .*"\$@"', (ROOT / "ci" / "sanitize.sh").read_text())
    assert re.search(r'-m pytest .*"\$@"', (ROOT / "ci" / "test.sh").read_text())


def test_the_op_table_is_the_contracts():
    problem = op_table_problem((ROOT / OP_TABLE_DOC).read_text())
    assert problem is None, problem


def test_a_drifted_op_row_is_caught():
    text = (ROOT / OP_TABLE_DOC).read_text()
    dropped = text.replace("volatile=False, hint=None` | `pointer`", "hint=None` | `pointer`")
    assert dropped != text and "volatile=False" in op_table_problem(dropped)
    assert op_table_problem(text.replace(TABLE_END, f"| `atomic_nand` | `pointer` | `pointer` | x |\n{TABLE_END}"))
    assert op_table_problem(text.replace("| `get` |", "| `get`  |"))


BROKEN = """# Doc

Run `python -m conformance run --no-such-flag` and `./ci/missing.sh`, see `iris/nope.py`, `ci/test.sh`,
`tests/cpu_unit/test_docs.py::test_x`, `<name>/x.py`, `out/x.json`, `https://x.y/z.py` and `a/b/c_*`.
`python -m conformance gate --profile ci` takes `--known FILE` and `--bogus`.

## Benchmarks

```bash
python -m pytest -m "gpu or gpux" tests/nowhere
python -m benchmarks.bench_gate_compiles --scenario nowhere
python -m conformance run --scenario nowhere --out docs
python -m conformance mutate --only triton-trace-op_index,gluon-get-wrong-rank
python -m conformance new drafted && python -m conformance run --scenario drafted
python -m benchmarks.bench_tracing_host --events 10 --frobnicate   # a comment naming no/such.py
```

`--repeat` is the benchmark's.

Run `./README.md`, see [the design]({docs}design{md}#no-such-heading),
[nothing](nowhere{md}) and [a section](#benchmarks).
""".format(docs="docs/", md=".md")  # written so, this file cites neither


def test_a_missing_path_command_or_flag_is_caught(pytest_option):
    problems = Checker("doc.md", pytest_option).check(BROKEN)
    expected = [
        "doc.md:3: `python -m conformance run --no-such-flag` is refused",
        "doc.md:3: `ci/missing.sh` does not exist",
        "doc.md:3: `iris/nope.py` does not exist",
        "doc.md:5: `--bogus`: `python -m conformance gate` has no such option",
        "doc.md:10: `python -m pytest -m gpu or gpux`: unknown markers ['gpux']",
        "doc.md:10: `tests/nowhere` does not exist",
        "doc.md:11: `python -m benchmarks.bench_gate_compiles --scenario nowhere` is refused: ",
        "doc.md:12: `python -m conformance run --scenario nowhere --out docs` writes into `docs`, which git tracks",
        "doc.md:12: `python -m conformance run`: no scenario nowhere",
        "doc.md:13: `python -m conformance mutate`: no mutant triton-trace-op_index",
        "doc.md:15: `python -m benchmarks.bench_tracing_host` has no option --frobnicate",
        "doc.md:15: `python -m benchmarks.bench_tracing_host --events 10 --frobnicate` is refused: "
        "python -m benchmarks.bench_tracing_host: unrecognized arguments: --frobnicate",
        "doc.md:20: `README.md` is not executable",
    ]
    for want in expected:
        assert any(p.startswith(want) for p in problems), f"{want!r} not among {problems}"
    assert len(problems) == len(expected), problems
    d, md = "docs/", ".md"
    assert link_problems("doc.md", BROKEN) == [f"doc.md:20: `{d}design{md}#no-such-heading`: no such heading",
                                               f"doc.md:21: `nowhere{md}` does not exist"]


def test_a_missing_layout_entry_is_caught():
    text = (ROOT / LAYOUT_DOC).read_text()
    assert layout_problems(text) == []
    renamed = text.replace("  op_options.py        accepted", "  op_choices.py        accepted")
    assert layout_problems(renamed) == [f"{LAYOUT_DOC}:{_line_of(text, 'op_options.py        accepted')}: Layout "
                                        "entry `iris/op_choices.py` does not exist"]  # fmt: skip
    described = text.replace("catalogue.py (the mutants", "mutant_list.py (the mutants")
    assert any("`conformance/mutation/mutant_list.py` does not exist" in p for p in layout_problems(described))


def test_the_layout_names_every_module():
    missing = layout_missing((ROOT / LAYOUT_DOC).read_text())
    assert not missing, f"{LAYOUT_DOC}'s Layout does not name {', '.join(missing)}: add each with what it holds"


def test_a_module_left_out_of_the_layout_is_caught():
    text = (ROOT / LAYOUT_DOC).read_text()
    left_out = text.replace("  op_options.py        accepted", "  (options)            accepted")
    assert layout_missing(left_out) == ["iris/op_options.py"]


def _line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


# ---- every document a source file or a doc names exists (a citation such as ``docs/design.md``, "Trace records")

SOURCE_DIRS = ("iris", "conformance", "tests", "benchmarks", "examples")
# Names that look like documents but are none, per citing file: the made-up docs of tests that check a parser (and
# this table, which names them).
NOT_DOCUMENTS = {"tests/cpu_unit/test_docs.py": {"doc.md", "a.md"}, "tests/cpu_unit/test_workflows.py": {"a.md"}}
# A Markdown file's name or path, with an optional #anchor; or a path under docs/ (any file).
DOCUMENT = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w-]+\.md)(?![\w.-])(?:#([\w-]+))?|(?<![\w./-])(docs/[\w./-]*[\w-])")
# A section named after a citation: ``docs/design.md``, "Trace records" (or: docs/design.md section "Trace records").
SECTION = re.compile(r'`{0,2}(?:,\s*|\s+)(?:section\s+)?"([^"\n]+)"')


def document_files() -> list[Path]:
    """The files whose citations are checked: the ``*.py`` of ``SOURCE_DIRS`` and the repository's ``*.md``."""
    files = [p for d in SOURCE_DIRS for p in sorted((ROOT / d).rglob("*.py")) if "__pycache__" not in p.parts]
    return files + sorted(ROOT.glob("*.md")) + sorted((ROOT / "docs").rglob("*.md"))


def citations(text: str) -> list[tuple[int, str, str | None, str | None]]:
    """``(line, path, anchor, section)`` of every document ``text`` names (``section``: a quoted title after it)."""
    found = []
    for m in DOCUMENT.finditer(text):
        name = (m[1] or m[3]).removeprefix("./")
        section = SECTION.match(text, m.end()) if m[1] and not m[2] else None
        found.append((text.count("\n", 0, m.start()) + 1, name, m[2], section[1] if section else None))
    return found


def _slug(title: str) -> str:
    """GitHub's anchor of a heading."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def _headings(path: Path) -> list[str]:
    return [m[1].strip() for m in re.finditer(r"^#+\s+(.+)$", path.read_text(), re.M)]


def document_problems(source: str, text: str) -> list[str]:
    """Documents that ``text`` (the file ``source``, repository-relative) names and the repository lacks, and anchors
    and quoted section titles that name no heading of the document. A name resolves against the repository root
    and the citing file's folder; a bare name also against ``docs/``. Not documents: what the conformance CLI
    writes (``OUTPUT_FILES``), paths git ignores, and the citing file's ``NOT_DOCUMENTS``."""
    problems = []
    here = (ROOT / source).parent
    for line, name, anchor, section in citations(text):
        where = f"{source}:{line}"
        if name in NOT_DOCUMENTS.get(source, ()) or name in OUTPUT_FILES:
            continue
        places = [ROOT / name, here / name] + ([ROOT / "docs" / name] if "/" not in name else [])
        found = next((p for p in places if p.exists()), None)
        if found is None:
            if not ignored(name):
                problems.append(f"{where}: `{name}` does not exist")
            continue
        headings = _headings(found) if found.suffix == ".md" and found.is_file() else []
        if anchor is not None and anchor not in {_slug(h) for h in headings}:
            problems.append(f"{where}: `{name}#{anchor}`: no such heading")
        if section is not None and section.lower() not in {h.lower() for h in headings}:
            problems.append(f'{where}: `{name}`, "{section}": no such heading')
    return problems


def test_every_document_the_sources_and_docs_name_exists():
    problems = [p for f in document_files()
                for p in document_problems(f.relative_to(ROOT).as_posix(), f.read_text(encoding="utf-8"))]
    assert not problems, f"{len(problems)} citation(s) of a document that is not there:\n" + "\n".join(problems)


def test_the_scan_sees_the_citations():
    """The scan covers sources, tests and docs, and sees a cited section (a scan that found nothing would pass)."""
    files = {f.relative_to(ROOT).as_posix() for f in document_files()}
    assert {"iris/tracing/core.py", "tests/cpu_unit/test_docs.py", "README.md", "docs/design.md"} <= files
    cited = citations((ROOT / "iris" / "tracing" / "core.py").read_text())
    assert any(name == "docs/design.md" and section == "Trace records" for _, name, _, section in cited), cited
    cited = citations((ROOT / "CONTRIBUTING.md").read_text())
    assert any(name == "docs/design.md" and section == "Trace records" for _, name, _, section in cited), cited


PLANTED = """See {docs}design{md} and {docs}design{md}#trace-records, ``{docs}design{md}``, "Trace records", and
README{md}; the gate writes summary{md}.
Gone: `{docs}nowhere{md}`, DESIGN{md}, {docs}pictures/flow.svg,
{docs}design{md}#no-such-section and ``{docs}design{md}``, "No such section".
"""


def test_a_missing_document_is_caught():
    d, m = "docs/", ".md"  # the planted names are made here, so that this file itself cites none of them
    problems = document_problems("iris/x.py", PLANTED.format(docs=d, md=m))
    assert problems == [f"iris/x.py:3: `{d}nowhere{m}` does not exist",
                        f"iris/x.py:3: `DESIGN{m}` does not exist",
                        f"iris/x.py:3: `{d}pictures/flow.svg` does not exist",
                        f"iris/x.py:4: `{d}design{m}#no-such-section`: no such heading",
                        f'iris/x.py:4: `{d}design{m}`, "No such section": no such heading'], problems
    assert document_problems("tests/cpu_unit/test_docs.py", f"doc{m}") == []  # a made-up doc of this file
    assert document_problems("iris/x.py", f"doc{m}") == [f"iris/x.py:1: `doc{m}` does not exist"]


# ---- every relative link of a doc leads somewhere

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def link_problems(doc: str, text: str) -> list[str]:
    """Relative Markdown links of ``text`` (the doc ``doc``, repository-relative) whose file, or whose #anchor's
    heading, is not there; links in code blocks and links with a scheme are not checked."""
    problems, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
        if fenced:
            continue
        for target in LINK.findall(line):
            if re.match(r"^[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            found = (ROOT / doc).parent / path
            if path and not found.exists():
                problems.append(f"{doc}:{number}: `{target}` does not exist")
                continue
            if not anchor or (path and found.suffix != ".md"):
                continue
            headings = _headings(found) if path else re.findall(r"^#+\s+(.+?)\s*$", text, re.M)
            if anchor not in {_slug(h) for h in headings}:
                problems.append(f"{doc}:{number}: `{target}`: no such heading")
    return problems


@pytest.mark.parametrize("doc", DOCS)
def test_every_relative_link_leads_somewhere(doc):
    problems = link_problems(doc, (ROOT / doc).read_text())
    assert not problems, "\n".join(problems)


# ---- what the docs say of the code is what the code does


def test_the_readme_is_a_front_door():
    lines = len((ROOT / "README.md").read_text().splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; at most {README_MAX_LINES}: move the rest to docs/"


# Where each ``python -m conformance`` command's options are documented: all of them.
OPTION_HOMES = {"run": "docs/suite.md", "gate": "docs/ci.md", "mutate": "CONTRIBUTING.md", "new": "CONTRIBUTING.md"}


def undocumented_options(command: str, text: str) -> list[str]:
    """The options of ``python -m conformance command`` (less ``--help``, and for ``gate`` less ``run``'s, which
    ``run``'s page holds) that ``text`` does not name."""
    options = {o for o in _conformance_options(command) if o.startswith("--") and o != "--help"}
    if command == "gate":
        options -= _conformance_options("run")
    return sorted(o for o in options if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", text))


@pytest.mark.parametrize("command", sorted(OPTION_HOMES))
def test_every_option_of_the_conformance_cli_is_documented(command):
    missing = undocumented_options(command, (ROOT / OPTION_HOMES[command]).read_text())
    assert not missing, f"{OPTION_HOMES[command]} does not document `python -m conformance {command}` {missing}"


def test_an_undocumented_option_is_caught():
    assert undocumented_options("run", "`--scenario` and --ranks")[:2] == ["--backend", "--chunk"]
    assert "--known" in undocumented_options("gate", "`--known-divergences`")


def sanitizer_table(text: str) -> dict[str, str]:
    """docs/sanitizers.md's tool table: tool -> its "runs as" cell."""
    return {m[1]: m[2].strip() for m in re.finditer(r"^\| `(\w+)` \|.*\| ([^|]+) \|$", text, re.M)}


def sanitizer_runs_as(tool: str) -> str:
    """The "runs as" cell of ``tool``, from ``iris.ranks.sanitizer.TOOLS`` (the one table of options)."""
    own = sanitizer.TOOLS[tool]
    cell = f"`compute-sanitizer --tool {tool}{''.join(' ' + o for o in own.options)}`"
    return cell + "".join(f", `{k}={v}`" for k, v in own.env.items())


def test_the_sanitizer_table_is_the_codes():
    text = (ROOT / "docs" / "sanitizers.md").read_text()
    table = sanitizer_table(text)
    assert list(table) == list(sanitizer.TOOLS), table
    for tool, cell in table.items():
        assert cell == sanitizer_runs_as(tool), f"docs/sanitizers.md, {tool}: {cell!r}, but the code runs it as " \
                                                f"{sanitizer_runs_as(tool)!r}"
    every = sanitizer.options("memcheck")
    common = every[2 : len(every) - len(sanitizer.TOOLS["memcheck"].options)]
    assert f"`compute-sanitizer {' '.join(common)}`" in text, common


NUMBERS = dict(zip(("one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
                    "seventeen eighteen nineteen twenty").split(), range(1, 21), strict=True))


def test_contributings_mutant_counts_are_the_catalogues():
    text = " ".join((ROOT / "CONTRIBUTING.md").read_text().split())
    m = re.search(r"full catalogue \((\d+) mutants, every one killed there but the (\d+) that the CPU cannot show",
                  text)
    assert m, "CONTRIBUTING.md no longer says how many mutants the nightly job runs"
    assert (int(m[1]), int(m[2])) == (len(CATALOGUE), sum(not mu.shows_on("cpu") for mu in CATALOGUE)), m[0]
    m = re.search(r"(\w+) mutants are such bugs", text)
    assert m and NUMBERS[m[1].lower()] == sum(mu.scale == "gpu" for mu in CATALOGUE), m and m[0]


def test_the_models_event_holds_the_logical_fields():
    """docs/design.md, "A new record field": ``Event`` is written by hand and holds exactly ``LOGICAL_FIELDS``."""
    assert {f.name for f in fields(Event)} - {"within"} == set(LOGICAL_FIELDS)
