"""What a hung rank's quoted stack must show, for the tests of the faulty scenario that hangs."""

import inspect

from conformance.harness import rank_side

from .faulty import hangs


def check_hang_stacks(stacks: dict, spinning: str, waiting: str | None = None) -> None:
    """The hung ranks' stacks: ``spinning`` (a rank, as the record's key) in the faulty kernel's spin loop, its line
    named; ``waiting`` in the barrier after the kernels; each from where it waits out to the example's job."""
    line = next(i for i, text in enumerate(inspect.getsource(hangs).splitlines(), 1) if "while tl.atomic_add" in text)
    assert sorted(stacks) == sorted(k for k in (spinning, waiting) if k is not None), stacks
    frames = {rank: text.splitlines() for rank, text in stacks.items()}
    assert f'File "{hangs.__file__}", line {line} in triton_kernel' in frames[spinning], stacks
    assert all(f[-1].startswith(f'File "{rank_side.__file__}", line ') and f[-1].endswith(" in run_example")
               for f in frames.values()), stacks
    if waiting is not None:
        assert any(f.endswith(" in barrier") for f in frames[waiting]), stacks
