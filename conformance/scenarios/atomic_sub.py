"""Every rank subtracts its values into a masked int block on every rank (atomic_sub), traced per program and target.

Model (R ranks, shared kernel and model in _atomics.py):
    A(r) = {j < n : bits[r][j]}
    events of rank r, t = 0 .. R-1, program p: atomic_sub range, target t, payload t,
        lanes A(r) in block p of buf on r
        then, with TRACE_OPS, atomic_sub's own range: target t, the same lanes, payload 0
    buf on every rank: init[j] - sum of vals[r][j] over r with j in A(r) (wrapped to dtype)
"""

from conformance.scenarios._atomics import atomic_scenario

SCENARIO = atomic_scenario("atomic_sub")
