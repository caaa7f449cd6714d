"""Run an example's ``main`` on R local ranks: ``--ranks R`` (default 2), ``--cpu`` to force CPU worlds."""

import argparse

import torch

from iris.ranks import backend_env, launch


def run_example(main) -> list:
    parser = argparse.ArgumentParser(description=main.__module__)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--cpu", action="store_true", help="run on CPU worlds under the Triton interpreter")
    args = parser.parse_args()
    cpu = args.cpu or not torch.cuda.is_available()
    results = launch(main, args.ranks, timeout=300, env=backend_env("cpu" if cpu else "gpu"))
    for r in results:
        print(r)
    return results
