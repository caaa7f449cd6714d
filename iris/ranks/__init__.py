"""Rank processes: the one place iris starts, feeds and stops local rank worlds.

``RankPool`` keeps R rank processes alive across jobs; ``launch`` is a one-shot pool; ``Pools`` owns the pools
of a run; ``backend_env`` says what a cpu or gpu rank needs; ``rank_state`` is a rank's cache across jobs.
"""

from iris.ranks.child import progress, rank_state
from iris.ranks.env import BACKENDS, backend_env, xdist_worker_index
from iris.ranks.launch import launch
from iris.ranks.pool import MAX_TIMEOUT_S, MAX_WORLD_SIZE, RankDied, RankError, RankPool, RankTimeout, UnguardedMain
from iris.ranks.pool_owner import Pools

__all__ = ["BACKENDS", "MAX_TIMEOUT_S", "MAX_WORLD_SIZE", "Pools", "RankDied", "RankError", "RankPool", "RankTimeout",
           "UnguardedMain", "backend_env", "launch", "progress", "rank_state", "xdist_worker_index"]
