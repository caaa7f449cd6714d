"""Each rank puts a masked local block into rank (r + offset) % R through ctx.put, in a `put` range.

Model (kernels, params and model shared with its twin in _transfers.py), per rank r writing to t = (r + offset) % R,
program p over lanes L(p) = {j in block p: j < n, bits_r[j]}:
    event  put range: pid p, target t, address = dst[min L(p)] on r (the local to_ptr), size |L(p)| x bytes,
           payload = payload + p; then, with TRACE_OPS (drawn), the put's own range: the same but payload 0
    memory rank q: dst[j] = src_s[j] for j in L of s = (q - offset) % R, 0 elsewhere
           src_q[j] = j + 1 + 512 q on every rank q (unchanged)
"""

from conformance.kit.scenario import first_sentence
from conformance.scenarios._transfers import transfer_scenario

SCENARIO = transfer_scenario("put", first_sentence(__doc__))
