"""A masked store to a peer, written against the kit's old import paths (a test-only control, not broken).

It imports ``conformance.strategies``, ``conformance.helpers``, ``conformance.model`` and ``conformance.scenario``,
the paths of the release before the kit moved, so ``test_old_imports`` can show that such a module still loads
(with a DeprecationWarning per old path) and passes. Its kernels are the ``store`` scenario's.
"""

from conformance import strategies as S
from conformance.helpers import launch_blocks, peer, per_program_events, setup_masked, transfer_memory
from conformance.model import Model
from conformance.scenario import Scenario, first_sentence
from conformance.scenarios.store import gluon_kernel, triton_kernel  # the kernels are store's: the paths are the point


def params(world_size):
    return S.masked_block(world_size, payload=False)


def setup(rank, p):
    setup_masked(rank, p, "dst", source=True)


def launch(kernel, rank, p):
    b = rank.buffers
    launch_blocks(kernel, rank, p, b["src"], b["dst"], b["bits"], p["n"], peer(rank, p))


def model(p, world_size):
    def target(r):
        return (r + p["offset"]) % world_size

    events = {r: per_program_events(p, r, "store", "instant", target=target(r), buffer="dst", payload=p["n"])
              for r in range(world_size)}
    return Model(events, transfer_memory(p, world_size, lambda r: r, target))


SCENARIO = Scenario(
    name="old_paths",
    description=first_sentence(__doc__),
    triton_kernel=triton_kernel,
    gluon_kernel=gluon_kernel,
    params=params,
    setup=setup,
    launch=launch,
    model=model,
)
