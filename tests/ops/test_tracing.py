"""Device tracing, field by field, for both device APIs on 1, 2 and 4 ranks."""

from __future__ import annotations

import numpy as np
import pytest

from iris.tracing.events import EVENT_IDS, EVENT_NAMES
from iris.tracing.guard import GUARD_RECORD
from iris.tracing.records import event_ids
from tests.ops import trace_jobs as ts
from tests.worlds import WORLD_SIZES, backends, run_world

pytestmark = pytest.mark.shares_setup

APIS = ("triton", "gluon")


def _check(what: str, actual, expected) -> None:
    __tracebackhide__ = True
    if actual != expected:
        pytest.fail(f"{what}={actual!r}, but should be {expected!r}")


def _world(api, backend, world_size):
    return run_world(ts.tracing_job, backend, world_size, api)


def _check_physical(case: dict, row: dict, res: dict, where: str) -> None:
    """Timestamps inside the launch window, durations ordered, ids in range for the device."""
    __tracebackhide__ = True
    t0, t1 = case["t0"], case["t1"]
    if not t0 <= row["timestamp"] <= t1:
        pytest.fail(f"{where}: timestamp={row['timestamp']}, but should lie in the launch window [{t0}, {t1}]")
    if row["kind"] == "range":
        if not 0 <= row["duration_cycles"] <= t1 - row["timestamp"]:
            bound = t1 - row["timestamp"]
            pytest.fail(f"{where}: duration_cycles={row['duration_cycles']}, but should be in [0, {bound}]")
        _check(f"{where}: duration_ns", row["duration_ns"], row["duration_cycles"] * 1e9 / case["tps"])
    if not 0 <= row["cu_id"] < res["cu_limit"]:
        pytest.fail(f"{where}: cu_id={row['cu_id']}, but should be in [0, {res['cu_limit']})")
    if not 0 <= row["xcc_id"] < res["xcc_limit"]:
        pytest.fail(f"{where}: xcc_id={row['xcc_id']}, but should be in [0, {res['xcc_limit']})")


def _by_pid(rows: list[dict]) -> dict[int, dict]:
    return {row["pid"]: row for row in rows}


def _check_slots(case: dict, where: str) -> None:
    """Chunk 1 and every program recording: the slots are dense, and each event's op_index is its slot."""
    __tracebackhide__ = True
    _check(f"{where}: op_index values", sorted(r["op_index"] for r in case["rows"]), list(range(len(case["rows"]))))
    _check(f"{where}: op_index == slot", [r["op_index"] for r in case["rows"]], [r["slot"] for r in case["rows"]])


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("world_size", WORLD_SIZES)
@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("case", ["1d_masked", "1d_full"])
def test_device_context_tracing_1d_address(case, backend, world_size, api):
    """One store range per program over a 1-D pointer block: every recorded field."""
    world = _world(api, backend, world_size)
    for q, res in enumerate(world):
        c = res[case]
        blocks = -(-c["n"] // ts.BLOCK)
        _check(f"rank {q} {case}: attempted", c["attempted"], blocks)
        _check(f"rank {q} {case}: dropped", c["dropped"], 0)
        _check(f"rank {q} {case}: events", len(c["rows"]), blocks)
        _check_slots(c, f"rank {q} {case}")
        rows = _by_pid(c["rows"])
        for p in range(blocks):
            where = f"rank {q} {case} pid {p}"
            row = rows[p]
            active = min(ts.BLOCK, c["n"] - p * ts.BLOCK)
            expected = {
                "name": "store", "event_id": EVENT_IDS["store"], "kind": "range", "pid": p, "pid_m": p,
                "pid_n": 0, "cur_rank": q, "target_rank": (q + 1) % world_size,
                "address": c["buf"] + p * ts.BLOCK * 4, "payload_size": active * 4, "payload": 5 + p,
            }  # fmt: skip
            for field, value in expected.items():
                _check(f"{where}: {field}", row[field], value)
            _check_physical(c, row, res, where)


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("world_size", WORLD_SIZES)
@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("mask", ["all", "none", "random"])
def test_tracing_masks(mask, backend, world_size, api):
    """Instants with masks: address = lowest active lane (0 if none), payload_size = active lanes x 4."""
    for q, res in enumerate(_world(api, backend, world_size)):
        c = res[f"mask_{mask}"]
        bits = ts.mask_bits(mask, q, 128).tolist()
        _check(f"rank {q} mask {mask}: bits as run", c["bits"], bits)
        rows = _by_pid(c["rows"])
        _check(f"rank {q} mask {mask}: programs", sorted(rows), [0, 1, 2, 3])
        for p in range(4):
            lanes = [j for j in range(p * ts.BLOCK, (p + 1) * ts.BLOCK) if bits[j]]
            where = f"rank {q} mask {mask} pid {p}"
            row = rows[p]
            _check(f"{where}: kind", row["kind"], "instant")
            _check(f"{where}: event_id", row["event_id"], EVENT_IDS["load"])
            _check(f"{where}: target_rank", row["target_rank"], q)
            _check(f"{where}: address", row["address"], c["buf"] + 4 * lanes[0] if lanes else 0)
            _check(f"{where}: payload_size", row["payload_size"], 4 * len(lanes))
            _check(f"{where}: duration_cycles", row["duration_cycles"], -2)
            _check_physical(c, row, res, where)


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("world_size", WORLD_SIZES)
@pytest.mark.parametrize("backend", backends())
def test_tracing_2d_blocks(backend, world_size, api):
    """2-D tiles: pid is linear over the grid, address the tile's first active element, size from the 2-D mask."""
    for q, res in enumerate(_world(api, backend, world_size)):
        c = res["2d"]
        gm, gn = -(-c["M"] // c["BM"]), -(-c["N"] // c["BN"])
        _check(f"rank {q} 2d: events", len(c["rows"]), gm * gn)
        _check_slots(c, f"rank {q} 2d")
        rows = _by_pid(c["rows"])
        for pm in range(gm):
            for pn in range(gn):
                where = f"rank {q} 2d tile ({pm},{pn})"
                row = rows[pm + pn * gm]
                rows_active = min(c["BM"], c["M"] - pm * c["BM"])
                cols_active = min(c["BN"], c["N"] - pn * c["BN"])
                _check(f"{where}: pid_m", row["pid_m"], pm)
                _check(f"{where}: pid_n", row["pid_n"], pn)
                _check(f"{where}: address", row["address"], c["buf"] + 8 * (pm * c["BM"] * c["stride"] + pn * c["BN"]))
                _check(f"{where}: payload_size", row["payload_size"], 8 * rows_active * cols_active)
                _check_physical(c, row, res, where)
        data = c["data"]
        for i in (0, 17, 49):
            for j in (0, 31, 39):
                _check(f"rank {q} 2d data[{i}][{j}]", data[i][j], i * 1000 + j)
        _check(f"rank {q} 2d data[50][0] (outside the mask)", data[50][0], 0)


def _layout_expectations(bits: list[int], buf: int) -> dict[int, tuple[int, int]]:
    """(address, payload_size) of each trace_layouts_kernel instant (int32 elements), from its lane bits."""
    bm, bn = ts.LAYOUT_TILE
    on, off = ts.LAYOUT_FLAGS
    row = [j for j in range(bn) if bits[j]]
    rows = [i for i in range(bm) if bits[bn + i]]
    tile = (buf, 4 * bm * bn)

    def first(lanes, stride):
        return buf + 4 * stride * lanes[0] if lanes else 0

    return {
        1: (first(row, 1), 4 * len(row)),
        2: (first(rows, bn), 4 * len(rows)),
        3: tile,
        4: tile if on else (0, 0),
        5: tile if off else (0, 0),
        6: (first(rows, bn), 4 * bn * len(rows)),
        7: (buf + 12, 4) if on else (0, 0),
        8: (buf + 12, 4) if off else (0, 0),
        9: (buf + 12, 4),
    }


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("world_size", WORLD_SIZES)
@pytest.mark.parametrize("backend", backends())
def test_tracing_block_shapes_and_mask_kinds(backend, world_size, api):
    """Address and payload_size over 1-D rows and columns (SliceLayouts in Gluon), 2-D tiles and scalar pointers,
    with no mask, a lane mask, a broadcast row mask and scalar masks on and off (``trace_jobs.LAYOUT_CASES``)."""
    for q, res in enumerate(_world(api, backend, world_size)):
        c = res["layouts"]
        _check(f"rank {q} layouts: bits as run", c["bits"], ts.mask_bits("random", q, sum(ts.LAYOUT_TILE)).tolist())
        expected = _layout_expectations(c["bits"], c["buf"])
        _check(f"rank {q} layouts: attempted", c["attempted"], len(expected))
        got = sorted(c["rows"], key=lambda r: r["op_index"])
        _check(f"rank {q} layouts: payloads in program order", [r["payload"] for r in got], sorted(expected))
        for row in got:
            k = row["payload"]
            where = f"rank {q} layouts case {k} ({ts.LAYOUT_CASES[k]})"
            want = {"name": "user", "kind": "instant", "pid": 0, "pid_m": 0, "pid_n": k, "cur_rank": q,
                    "target_rank": q, "op_index": k - 1, "duration_cycles": -2, "address": expected[k][0],
                    "payload_size": expected[k][1]}
            for field, value in want.items():
                _check(f"{where}: {field}", row[field], value)
            _check_physical(c, row, res, where)


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("world_size", WORLD_SIZES)
@pytest.mark.parametrize("backend", backends())
def test_tracing_loop_instants_payloads(backend, world_size, api):
    """Per program, in program order: range(payload=i) containing instant(payload=10 i), for i < 3."""
    for q, res in enumerate(_world(api, backend, world_size)):
        c = res["loop"]
        _check(f"rank {q} loop: events", len(c["rows"]), 12)
        for p in range(2):
            mine = sorted((r for r in c["rows"] if r["pid"] == p), key=lambda r: r["op_index"])
            got = [(r["name"], r["kind"], r["payload"], r["pid_n"], r["payload_size"]) for r in mine]
            want = [x for i in range(3) for x in (("compute", "range", i, i, 4), ("user", "instant", 10 * i, i, 4))]
            _check(f"rank {q} loop pid {p}: (name, kind, payload, pid_n, payload_size) in program order", got, want)
            for rng, inst in zip(mine[::2], mine[1::2], strict=True):
                end = rng["timestamp"] + rng["duration_cycles"]
                if not rng["timestamp"] <= inst["timestamp"] <= end:
                    pytest.fail(f"rank {q} pid {p}: instant at {inst['timestamp']} outside its range "
                                f"[{rng['timestamp']}, {end}]")
            for r in mine:
                _check_physical(c, r, res, f"rank {q} loop pid {p} op {r['op_index']}")


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("world_size", WORLD_SIZES)
@pytest.mark.parametrize("backend", backends())
def test_tracing_overflow(backend, world_size, api):
    """24 attempts into 5 slots: 5 kept (slots 0..4, each complete), 19 dropped, nothing past the end."""
    for q, res in enumerate(_world(api, backend, world_size)):
        c = res["overflow"]
        _check(f"rank {q} overflow: attempted", c["attempted"], 24)
        _check(f"rank {q} overflow: dropped", c["dropped"], 19)
        _check_slots(c, f"rank {q} overflow")
        raw = np.array(c["raw"], dtype=np.int64)  # [slot][word] of the 5 slots and the guard slot after them
        for row in c["rows"]:
            where = f"rank {q} overflow slot {row['op_index']}"
            _check(f"{where}: cur_rank", row["cur_rank"], q)
            if row["name"] not in ("compute", "user"):
                pytest.fail(f"{where}: name={row['name']!r}, but should be 'compute' or 'user'")
            _check_physical(c, row, res, where)
        ids = event_ids(np.ascontiguousarray(raw.T)).tolist()
        for s in range(5):
            if EVENT_NAMES.get(ids[s]) not in ("compute", "user"):
                pytest.fail(f"rank {q} overflow: raw event id of slot {s}={ids[s]}, but should be compute or user")
        _check(f"rank {q} overflow: the guard slot past the end (never written), word by word", raw[5].tolist(),
               list(GUARD_RECORD))


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("world_size", WORLD_SIZES)
@pytest.mark.parametrize("backend", backends())
def test_chunked_claims_keep_program_order_and_leave_holes(backend, world_size, api):
    """Chunks of 4 slots, 3 programs of 6 events (3 pairs of compute range + user instant): each program's events
    sit in its own chunks, in program order, op_index = slot; the claims are whole chunks, 2 per program."""
    for q, res in enumerate(_world(api, backend, world_size)):
        c = res["chunked"]
        where = f"rank {q} chunked"
        _check(f"{where}: attempted, dropped", (c["attempted"], c["dropped"]), (18, 0))
        _check(f"{where}: claimed (2 chunks of 4 per program)", c["claimed"], 3 * 2 * 4)
        _check(f"{where}: op_index == slot", [r["op_index"] for r in c["rows"]], [r["slot"] for r in c["rows"]])
        _check(f"{where}: unique slots", len({r["slot"] for r in c["rows"]}), 18)
        chunks = {}
        for p in range(3):
            mine = sorted((r for r in c["rows"] if r["pid"] == p), key=lambda r: r["op_index"])
            _check(f"{where} pid {p}: (name, pid_n) in program order", [(r["name"], r["pid_n"]) for r in mine],
                   [(name, i) for i in range(3) for name in ("compute", "user")])
            for r in mine:
                chunks.setdefault(r["op_index"] // 4, set()).add(p)
        _check(f"{where}: chunks shared by two programs", [k for k, ps in chunks.items() if len(ps) > 1], [])


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("backend", backends())
def test_tracing_unfinished_runtime_off_compiled_off_reset(backend, api):
    """Ranges never ended are flagged; runtime-off and compiled-off record nothing; reset restarts numbering."""
    for q, res in enumerate(_world(api, backend, 2)):
        c = res["unfinished"]
        _check(f"rank {q} unfinished: kinds", [r["kind"] for r in c["rows"]], ["unfinished"] * 3)
        _check(f"rank {q} unfinished: addresses", sorted(r["address"] for r in c["rows"]),
               [c["buf"] + 4 * p for p in range(3)])
        _check(f"rank {q} unfinished: payload_size", [r["payload_size"] for r in c["rows"]], [4, 4, 4])
        for case in ("runtime_off", "compiled_off"):
            _check(f"rank {q} {case}: counters", res[case]["counters"], [0, 0])
            _check(f"rank {q} {case}: buffers changed", res[case]["changed"], [])
        _check(f"rank {q} compiled-off: attempted", res["compiled_off"]["attempted"], 0)
        r = res["reset"]
        _check(f"rank {q} reset: attempted", r["attempted"], 2)
        _check(f"rank {q} reset: (name, op_index)", sorted((x["name"], x["op_index"]) for x in r["rows"]),
               [("wait", 0), ("wait", 1)])


@pytest.mark.parametrize("api", ["triton"])  # Gluon reads rank and world from the context: nothing to disagree
@pytest.mark.parametrize(("rank_offset", "world_offset", "message"),
                         [(1, 0, "rank differs"), (0, 1, "world_size differs")])
@pytest.mark.cpu_interpret
def test_rank_world_mismatch_is_reported(rank_offset, world_offset, message, api):
    """A kernel whose constexpr rank/world_size disagree with the context fails (interpreter: always)."""
    errors = run_world(ts.rank_check_job, "cpu", 2, api, rank_offset, world_offset)
    for q, err in enumerate(errors):
        if message not in err:
            pytest.fail(f"rank {q}: error={err!r}, but should mention {message!r}")


@pytest.mark.parametrize("world_size", WORLD_SIZES)
@pytest.mark.parametrize("backend", backends())
def test_device_context_reads_rank_and_world_at_run_time(backend, world_size):
    """Triton ``DeviceContext.initialize`` without rank/world_size reads both from the context, and takes them as
    run-time values too: the kernel sees this rank's values, stores to the next rank, records the event, and every
    rank launches the same compiled variant (on a GPU; the interpreter compiles nothing)."""
    results = run_world(ts.rank_forms_job, backend, world_size, 0, 0)
    for form in ("context", "tensor"):
        for q, res in enumerate(results):
            c, where = res[form], f"rank {q} {form}"
            prev, nxt = (q - 1) % world_size, (q + 1) % world_size
            _check(f"{where}: error", c["error"], "")
            _check(f"{where}: (ctx.rank, ctx.world_size)", c["seen"], [q, world_size])
            _check(f"{where}: buf", c["buf"], [100 + prev if j == prev else 0 for j in range(world_size)])
            _check(f"{where}: events", len(c["rows"]), 1)
            row = c["rows"][0]
            expected = {"name": "store", "kind": "range", "cur_rank": q, "target_rank": nxt,
                        "address": c["buf_ptr"] + 4 * q, "payload_size": 4, "payload": world_size}
            for field, value in expected.items():
                _check(f"{where}: {field}", row[field], value)
        _check(f"{form}: compiled variants over the ranks", len({res[form]["variant"] for res in results}), 1)


@pytest.mark.parametrize(("rank_offset", "world_offset", "message"),
                         [(1, 0, "rank differs"), (0, 1, "world_size differs")])
@pytest.mark.cpu_interpret
def test_run_time_rank_world_mismatch_is_reported(rank_offset, world_offset, message):
    """Run-time rank/world_size given to ``DeviceContext.initialize`` are checked against the context like constexprs
    (interpreter: always); left out, they are the context's."""
    for q, res in enumerate(run_world(ts.rank_forms_job, "cpu", 2, rank_offset, world_offset)):
        err = res["tensor"]["error"]
        if message not in err:
            pytest.fail(f"rank {q} tensor: error={err!r}, but should mention {message!r}")
        _check(f"rank {q} context: error", res["context"]["error"], "")
        _check(f"rank {q} context: (ctx.rank, ctx.world_size)", res["context"]["seen"], [q, 2])
