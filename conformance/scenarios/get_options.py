"""Each rank gets a masked block from rank (r + offset) % R via ctx.get with `other`, every cache modifier, a hint.

Model (kernels, params and model shared with its twin in _transfers.py), per rank r reading from s = (r + offset) % R,
program p over lanes L(p) = {j in block p: j < n, bits_r[j]},
rounds k = 0 .. ROUNDS-1 (modifiers and hint of round k: see _options.py):
    event  get range per round, in round order: pid p, target s, address = src[min L(p)] on r (the local
           from_ptr), size |L(p)| x bytes, payload = payload + k; then, with TRACE_OPS (drawn), the get's own
           range: the same but payload 0
    memory rank r: dst[k][j] = src_s[j] for j in L, UNTOUCHED elsewhere (`other` fills masked-off lanes of the
           load, which are not stored)
           src_q[j] = j + 1 + 512 q on every rank q (unchanged)
"""

from conformance.kit.scenario import first_sentence
from conformance.scenarios._transfers import transfer_scenario

SCENARIO = transfer_scenario("get", first_sentence(__doc__), options=True)
