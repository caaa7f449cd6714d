"""Every rank ors its values into a masked int block on every rank (atomic_or), traced per program and target.

Model (R ranks, shared kernel and model in _atomics.py):
    A(r) = {j < n : bits[r][j]}
    events of rank r, t = 0 .. R-1, program p: atomic_or range, target t, payload t,
        lanes A(r) in block p of buf on r
        then, with TRACE_OPS, atomic_or's own range: target t, the same lanes, payload 0
    buf on every rank: init[j] | vals[r][j] for every r with j in A(r)
"""

from conformance.scenarios._atomics import atomic_scenario

SCENARIO = atomic_scenario("atomic_or")
