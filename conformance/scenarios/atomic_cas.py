"""Every rank compare-and-swaps its values in a masked int block on every rank (atomic_cas), traced per program, target.

Model (R ranks, shared kernel and model in _atomics.py):
    A(r) = {j < n : bits[r][j] and j % R == r}  (one writer per element; other lanes use cmp == val)
    events of rank r, t = 0 .. R-1, program p: atomic_cas range, target t, payload t,
        lanes A(r) in block p of buf on r
        then, with TRACE_OPS, atomic_cas's own range: target t, every lane of block p (cas has no mask), payload 0
    cmp[r][j] = init[j] if hits[r][j] else init[j] + 1
    buf on every rank: vals[o][j] where j in A(o) and hits[o][j] for o = j % R, else init[j]
    old[t] on r: init[j] where j in A(r), else OLD_FILL (the only writer sees the initial value)
"""

from conformance.scenarios._atomics import atomic_scenario

SCENARIO = atomic_scenario("atomic_cas")
