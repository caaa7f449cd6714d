"""Each rank gets a masked block from rank (r + offset) % R into a local buffer through ctx.get, in a `get` range.

Model (kernels, params and model shared with its twin in _transfers.py), per rank r reading from s = (r + offset) % R,
program p over lanes L(p) = {j in block p: j < n, bits_r[j]}:
    event  get range: pid p, target s, address = src[min L(p)] on r (the local from_ptr), size |L(p)| x bytes,
           payload = payload + p; then, with TRACE_OPS (drawn), the get's own range: the same but payload 0
    memory rank r: dst[j] = src_s[j] for j in L, 0 elsewhere
           src_q[j] = j + 1 + 512 q on every rank q (unchanged)
"""

from conformance.kit.scenario import first_sentence
from conformance.scenarios._transfers import transfer_scenario

SCENARIO = transfer_scenario("get", first_sentence(__doc__))
