"""What several scenarios share: the drawn peer order of the collectives' loops over peers (``all_gather``,
``reduce_scatter``, ``all_to_all``, ``fused_gather_compute``), a run-time ``order`` buffer of every rank; the length
of a buffer of whole blocks (``padded_length``) and the source blocks of a rank whose every element differs
(``distinct_source``).

Rank r's loop visits ``order[r][i]`` at step i = 0 .. R-1 (``strategies.peer_orders``: a ring from any offset or any
permutation, r itself included), so which peer comes when is drawn, never compiled.
"""

from __future__ import annotations

from conformance.kit.helpers import cast, cdiv


def checked_orders(p: dict, world_size: int) -> list[list[int]]:
    """``p["order"]``, each rank's a permutation of the R ranks; ValueError naming the first that is not."""
    for r, order in enumerate(p["order"]):
        if sorted(order) != list(range(world_size)):
            raise ValueError(f"order[{r}]={order!r}: expected a permutation of the ranks 0..{world_size - 1}")
    return p["order"]


def setup_order(rank, p: dict) -> None:
    """Rank ``rank``'s ``order`` buffer: the peers its loop visits, in its order."""
    rank.buffer("order", rank.world_size, "int32", fill=p["order"][rank.rank])


def padded_length(p: dict) -> int:
    """``p["n"]`` elements rounded up to whole blocks of ``p["BLOCK"]``: the length of a buffer every program's block
    fits in, masked lanes included."""
    return cdiv(p["n"], p["BLOCK"]) * p["BLOCK"]


def distinct_source(q: int, p: dict, world_size: int) -> list:
    """Rank q's R blocks of L = ``padded_length(p)`` elements in ``p["dtype"]``: block k (the one for rank k),
    element j holds (q R + k) L + j + 1, so every element of every rank differs."""
    length = padded_length(p)
    return cast([(q * world_size + k) * length + j + 1 for k in range(world_size) for j in range(length)], p["dtype"])
