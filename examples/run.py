"""Run an example's ``main`` on R local ranks: ``--ranks R`` (default 2), ``--cpu`` to force CPU worlds."""

import argparse

import torch

from iris.launcher import launch


def run_example(main) -> list:
    parser = argparse.ArgumentParser(description=main.__module__)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--cpu", action="store_true", help="run on CPU worlds under the Triton interpreter")
    args = parser.parse_args()
    cpu = args.cpu or not torch.cuda.is_available()
    env = {"TRITON_INTERPRET": "1", "IRIS_FORCE_CPU": "1"} if cpu else {"TRITON_INTERPRET": "0", "IRIS_FORCE_CPU": "0"}
    results = launch(main, args.ranks, timeout=300, env=env)
    for r in results:
        print(r)
    return results
