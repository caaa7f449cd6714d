"""``TraceSpan``: a pointer block's record fields, computed once by ``ctx.tracing.span`` and handed to records.

A record's ``address`` (lowest active address) and ``payload_size`` (active elements x element bytes) are block
reductions over the pointer block and its mask. A kernel that records the same block many times (a tile stored to
every peer in a loop) can compute them once, before the loop, with ``span = ctx.tracing.span(ptrs, mask=mask)``, and
pass ``span`` as each record's ``address`` (with no ``mask``): the record then reduces nothing. Triton's compiler
moves a loop-invariant block's reductions out of a loop by itself; Gluon's does not, so in Gluon the span is what
keeps a traced tile kernel at the untraced kernel's programs per SM (the all-scatter: 168 registers a thread instead
of 181 on sm_90, ``benchmarks/bench_tile_resources.py``).

One class for both APIs: it holds two scalars and no code, so the two tracing implementations (which compute the
fields each in its own language, ``span``) share it as they share the record layout.
"""

import triton
import triton.language as tl

from iris._aggregate import aggregate


@aggregate
class TraceSpan:
    """(lowest active address, active bytes) of a pointer block under its mask, as a record writes them."""

    lowest: tl.tensor  # int64 address; 0 when no lane is active
    nbytes: tl.tensor  # int32: active elements x element bytes

    @triton.constexpr_function
    def __init__(self, lowest, nbytes):
        self.lowest = lowest
        self.nbytes = nbytes
