"""Run an example's ``main`` on R local ranks: ``--ranks R`` (default 2), ``--cpu`` to force CPU worlds, ``--auto`` for
the auto-traced variant (every op records itself: ``trace_ops=True``, no brackets)."""

import argparse

import torch

from iris.ranks import backend_env, launch


def run_example(main) -> list:
    parser = argparse.ArgumentParser(description=main.__module__)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--cpu", action="store_true", help="run on CPU worlds under the Triton interpreter")
    parser.add_argument("--auto", action="store_true", help="the auto-traced variant: every op records its own range")
    args = parser.parse_args()
    cpu = args.cpu or not torch.cuda.is_available()
    results = launch(main, args.ranks, timeout=300, env=backend_env("cpu" if cpu else "gpu"), auto=args.auto)
    for r in results:
        print(r)
    return results
