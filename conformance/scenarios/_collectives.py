"""What the collective scenarios share (``all_gather``, ``reduce_scatter``, ``all_to_all``, ``fused_gather_compute``):
the drawn peer order of their loops over peers, a run-time ``order`` buffer of every rank.

Rank r's loop visits ``order[r][i]`` at step i = 0 .. R-1 (``strategies.peer_orders``: a ring from any offset or any
permutation, r itself included), so which peer comes when is drawn, never compiled.
"""

from __future__ import annotations


def checked_orders(p: dict, world_size: int) -> list[list[int]]:
    """``p["order"]``, each rank's a permutation of the R ranks; ValueError naming the first that is not."""
    for r, order in enumerate(p["order"]):
        if sorted(order) != list(range(world_size)):
            raise ValueError(f"order[{r}]={order!r}: expected a permutation of the ranks 0..{world_size - 1}")
    return p["order"]


def setup_order(rank, p: dict) -> None:
    """Rank ``rank``'s ``order`` buffer: the peers its loop visits, in its order."""
    rank.buffer("order", rank.world_size, "int32", fill=p["order"][rank.rank])
