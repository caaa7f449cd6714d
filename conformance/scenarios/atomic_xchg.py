"""Every rank exchanges its values into a masked int block on every rank (atomic_xchg), traced per program and target.

Model (R ranks, shared kernel and model in _atomics.py):
    A(r) = {j < n : bits[r][j] and j % R == r}  (one writer per element)
    events of rank r, t = 0 .. R-1, program p: atomic_xchg range, target t, payload t,
        lanes A(r) in block p of buf on r
        then, with TRACE_OPS, atomic_xchg's own range: target t, the same lanes, payload 0
    buf on every rank: vals[j % R][j] where j in A(j % R), else init[j]
    old[t] on r: init[j] where j in A(r), else OLD_FILL (the only writer sees the initial value)
"""

from conformance.scenarios._atomics import atomic_scenario

SCENARIO = atomic_scenario("atomic_xchg")
