"""Run an example's ``main`` on R local ranks: ``--ranks R`` (default 2), ``--cpu`` to force CPU worlds, ``--auto`` for
the auto-traced variant (every op records itself: ``trace_ops=True``, no brackets) of an example whose ``main`` takes
``auto`` (the others are auto-traced throughout), ``--out PATH`` for the merged trace (default: the example's
``TRACE``, or ``AUTO_TRACE`` with ``--auto``, in the current folder; the suffix picks the format: ``.json``,
``.pftrace``). Bad input, and a trace path that cannot be written (a folder, a read-only or missing folder, another
suffix), is refused in one line on stderr, exit code 2, before any rank starts; ``--help`` shows the example's
docstring. A rank whose result says a check failed (a ``*_ok`` entry that is False) ends the run with exit code 1."""

import argparse
import inspect
import sys
from collections.abc import Sequence
from pathlib import Path

import torch

from iris.cli_args import OneLineParser, world_size
from iris.ranks import backend_env, launch
from iris.tracing.export import WRITERS, check_writable

TRACE_SUFFIXES = tuple(suffix for writer in WRITERS.values() for suffix in writer.suffixes)


def trace_problem(path: str) -> str | None:
    """Why the merged trace cannot be written to ``path`` (checked as ``tracing.export`` will, leaving nothing
    behind), or None."""
    if not path:
        return "is empty"
    if Path(path).is_dir():
        return "is a folder"
    if Path(path).suffix.lower() not in TRACE_SUFFIXES:
        return f"has no trace suffix ({', '.join(TRACE_SUFFIXES)}: the suffix picks the format)"
    try:
        check_writable(path)
    except (OSError, ValueError) as e:
        return str(e)
    return None


def run_example(main, argv: Sequence[str] | None = None) -> list:
    """Parse the command line (``argv``, default ``sys.argv[1:]``) of the example that defines ``main``, run ``main``
    on its ranks and print each rank's result; return the results in rank order, or exit 1 where a rank's result
    has a ``*_ok`` entry that is False."""
    module = main.__globals__  # the example's own namespace, however it was run (python -m, runpy)
    spec = module.get("__spec__")
    name = spec.name if spec else main.__module__  # under python -m, __module__ is __main__
    parser = OneLineParser(prog=f"python -m {name}", description=module.get("__doc__"),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=world_size(), default=2,
                        help="local ranks (default 2); more ranks than GPUs share them")
    parser.add_argument("--cpu", action="store_true", help="run on CPU worlds under the Triton interpreter")
    variants = "auto" in inspect.signature(main).parameters
    if variants:
        parser.add_argument("--auto", action="store_true",
                            help="the auto-traced variant: every op records its own range")
    defaults = module["TRACE"] + (f", {module['AUTO_TRACE']} with --auto" if variants else "")
    parser.add_argument("--out", default=None, metavar="PATH",
                        help=f"the merged trace, .json or .pftrace (default {defaults}, in the current folder)")
    args = parser.parse_args(argv)
    default = module["AUTO_TRACE"] if variants and args.auto else module["TRACE"]
    out = default if args.out is None else args.out
    problem = trace_problem(out)
    if problem:
        given = f"--out {out!r}" if args.out is not None else f"the trace {out!r} (the default: --out names another)"
        parser.error(f"{given}: {problem}; expected a .json or .pftrace file in a folder that can be written")
    cpu = args.cpu or not torch.cuda.is_available()
    results = launch(main, args.ranks, timeout=300, env=backend_env("cpu" if cpu else "gpu"), out=out,
                     **({"auto": args.auto} if variants else {}))
    for r in results:
        print(r)
    failed = [rank for rank, r in enumerate(results) if any(not v for k, v in r.items() if k.endswith("_ok"))]
    if failed:
        sys.exit(f"{parser.prog}: rank(s) {', '.join(map(str, failed))} computed a wrong result (see above)")
    return results
