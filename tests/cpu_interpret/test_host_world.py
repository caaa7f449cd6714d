"""Host behaviour on real cpu worlds: allocation helpers and out-of-space, create/close cycles, trace export."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from iris.ranks import launch
from iris.tracing.export import ALIGNMENT_METHOD
from tests.cpu_interpret import host_jobs as hs
from tests.cpu_unit.checks import check, check_that
from tests.trace_readers import PerfettoTrace, perfetto_pb2, read_json
from tests.worlds import ENV, run_world

pytestmark = [pytest.mark.cpu_interpret, pytest.mark.shares_setup]  # one world size: one group

WORLD = 2
CYCLES = 20
EXPECTED_VALUES = {
    "zeros": [[0.0] * 3] * 5,
    "zeros_tuple": [[0] * 4] * 4,
    "ones": [1] * 7,
    "full": [[2.5] * 3] * 2,
    "full_int": [-7] * 3,
    "arange": list(range(10)),
    "arange_step": list(range(3, 20, 4)),
    "zeros_like": [[0.0] * 5] * 2,
    "full_inf": [float("-inf")] * 2,
    "full_bool": [True] * 3,
    "full_tensor": [-3] * 2,
    "arange_float": [0.0, 0.25, 0.5, 0.75],
    "arange_uint8": list(range(256)),
    "arange_down": [10, 7, 4, 1],
}
EXPECTED_LAYOUT = {  # (shape, dtype)
    "zeros": ([5, 3], "torch.float32"),
    "zeros_tuple": ([4, 4], "torch.int64"),
    "ones": ([7], "torch.int32"),
    "full": ([2, 3], "torch.float64"),
    "full_int": ([3], "torch.int16"),
    "empty": ([10], "torch.int8"),
    "arange": ([10], "torch.int64"),
    "arange_step": ([5], "torch.int32"),
    "zeros_like": ([2, 5], "torch.float16"),
    "full_inf": ([2], "torch.bfloat16"),
    "full_bool": ([3], "torch.bool"),
    "full_tensor": ([2], "torch.int8"),
    "arange_float": ([4], "torch.float16"),
    "arange_uint8": ([256], "torch.uint8"),
    "arange_down": ([4], "torch.int8"),
}


def _allocation():
    return run_world(hs.allocation_job, "cpu", WORLD, 1 << 16)


@pytest.mark.parametrize("name", [n for n, _, _ in hs.HELPER_CASES])
def test_allocation_helper(name):
    """On the heap, aligned as asked, with the right shape, dtype and exact values, at the same offset on every rank."""
    alignment = {n: a for n, _, a in hs.HELPER_CASES}[name]
    offsets = []
    for res in _allocation():
        where = f"{name}, rank {res['rank']} of {WORLD}"
        t = res["helpers"][name]
        base, end = res["base"], res["base"] + res["size"]
        check_that("data_ptr", t["data_ptr"], base <= t["data_ptr"] < end, f"in [{base}, {end}) (the heap)", where)
        offset = t["data_ptr"] - base
        check_that("offset", offset, offset % alignment == 0, f"a multiple of {alignment}", where)
        check_that("data_ptr", t["data_ptr"], t["data_ptr"] % alignment == 0, f"a multiple of {alignment}", where)
        check("(shape, dtype)", (t["shape"], t["dtype"]), EXPECTED_LAYOUT[name], where)
        check("device", t["device"], "cpu", where)
        if name in EXPECTED_VALUES:
            check("values", t["values"], EXPECTED_VALUES[name], where)
        offsets.append(offset)
    check(f"{name} offsets by rank", offsets, [offsets[0]] * WORLD)


def test_allocation_larger_than_what_is_left():
    for res in _allocation():
        oom = res["oom"]
        where = f"rank {res['rank']}: {oom['request']} bytes with {oom['free_before']} free"
        check_that("error", oom["error"], oom["error"] is not None, "raised", where)
        kind, text, is_memory_error = oom["error"]
        check_that("error type", kind, is_memory_error, "a MemoryError", where)
        for value in (oom["request"], oom["free_before"]):
            check_that("error message", text, f"{value} bytes" in text, f"mentioning '{value} bytes'", where)
        check("heap.used after the refused allocation", oom["used_after"], oom["used_before"], where)
        check("allocation of the rest", oom["rest"], {"used": res["size"], "end": res["size"],
                                                      "sum": oom["free_before"]}, where)


def test_alignment_below_the_element_size_is_raised_to_it():
    """zeros(1, int8) then zeros(2, float32, alignment=1): placed at the next multiple of 4 (was: refused after
    consuming heap space)."""
    for res in _allocation():
        small = res["small_alignment"]
        where = f"rank {res['rank']}: zeros(1, int8) then zeros(2, float32, alignment=1)"
        check("error", small["error"], None, where)
        check("offset", small["offset"], 4, where)
        check("heap.used", small["used_after"], 4 + 8, where)


def test_a_bad_dtype_is_named_with_the_choices_and_allocates_nothing():
    bad = {"empty": "'nope'", "zeros": "3", "ones": "None", "full": "'nope'", "arange": "'int64'"}
    for res in _allocation():
        b = res["bad_dtype"]
        where = f"rank {res['rank']}"
        for helper, value in bad.items():
            err = b["errors"][helper]
            check_that(f"{helper} error", err, err is not None and err.startswith(f"ValueError: dtype={value}; "
                                                                                  "expected a torch.dtype, one of "),
                       f"ValueError naming dtype={value}", where)
            check_that(f"{helper} choices", err, "torch.float32" in err and "torch.int8" in err, "listing them", where)
        check("heap.used after the refusals", b["used_after"], b["used_before"], where)


def _failed_allocations():
    return run_world(hs.failed_allocation_job, "cpu", WORLD, 1 << 16)


def _check_failed(call: dict, expected: str, where: str) -> None:
    """The call raised ``expected`` and left the heap's used bytes as they were."""
    __tracebackhide__ = True
    check("error", call["error"], expected, where)
    check("heap.used after the failed call", call["used_after"], call["used_before"], where)


def _not_held(call: str, dtype: str, why: str) -> str:
    return f"ValueError: {call} {why}; expected a value torch.{dtype} holds exactly"


FILL_ERRORS = {  # name in FAILING_CALLS: the whole error
    "full 'a' as float32": "TypeError: full: fill_value='a' (str); expected a number (or a 0-d tensor) for a "
                           "torch.float32 tensor",
    "full 300 as int8": _not_held("full: fill_value=300", "int8", "is outside torch.int8's range (-128 to 127), so "
                                  "it would wrap"),
    "full nan as int32": _not_held("full: fill_value=nan", "int32", "is not a finite number, so torch.int32 cannot "
                                   "hold it"),
    "full 2**70 as int64": _not_held(f"full: fill_value={2**70}", "int64", "is outside torch.int64's range "
                                     f"({-2**63} to {2**63 - 1}), so it would wrap"),
    "full a 1-d tensor": "TypeError: full: fill_value=tensor([1., 1.]) (tensor of shape (2,)); expected a number (or "
                         "a 0-d tensor) for a torch.float32 tensor",
    "full -1 as uint8": _not_held("full: fill_value=-1", "uint8", "is outside torch.uint8's range (0 to 255), so it "
                                  "would wrap"),
    "full 1.5 as int8": _not_held("full: fill_value=1.5", "int8", "is not an integer, so torch.int8 would truncate it "
                                  "(to 1)"),
    # one element or four: the same refusal (was: inf for one, torch's own message naming neither for four)
    **{f"full 1e6 as float16, {n}": _not_held("full: fill_value=1000000.0", "float16", "overflows torch.float16 (to "
                                              "inf; its largest finite value is 65504)")
       for n in ("1 element", "4 elements")},
    "full 1e-50 as float32": _not_held("full: fill_value=1e-50", "float32", "underflows torch.float32 (to 0; its "
                                       "smallest positive value is 1.4013e-45)"),
    "full 16777217 as float32": _not_held("full: fill_value=16777217", "float32", "is an integer torch.float32 cannot "
                                          "hold exactly (it would become 16777216.0)"),
    "full 2 as bool": _not_held("full: fill_value=2", "bool", "is not True, False, 0 or 1, so a torch.bool element "
                                "cannot hold it"),
    "full 0.5 as bool": _not_held("full: fill_value=0.5", "bool", "is not True, False, 0 or 1, so a torch.bool "
                                  "element cannot hold it"),
    "full inf as int64": _not_held("full: fill_value=inf", "int64", "is not a finite number, so torch.int64 cannot "
                                   "hold it"),
    "full a 5000-digit integer": _not_held("full: fill_value=<an integer of 5000 digits>", "int64", "is outside "
                                           f"torch.int64's range ({-2**63} to {2**63 - 1}), so it would wrap"),
    "full a 0-d tensor of 1.5 as int32": _not_held("full: fill_value=tensor(1.5000)", "int32", "is not an integer, "
                                                   "so torch.int32 would truncate it (to 1)"),
    "arange step 1.5 as int64": _not_held("arange: start=0, end=5, step=1.5:", "int64", "step is not an integer, so "
                                          "torch.int64 would truncate the values"),
    "arange 250 to 260 as uint8": _not_held("arange: start=250, end=260, step=1:", "uint8", "the value 259 is "
                                            "outside torch.uint8's range (0 to 255), so it would wrap"),
    "arange -3 to 0 as uint8": _not_held("arange: start=-3, end=0, step=1:", "uint8", "the value -3 is outside "
                                         "torch.uint8's range (0 to 255), so it would wrap"),
    "arange to 70000 by 10000 as float16": _not_held("arange: start=0, end=70000, step=10000:", "float16", "the value "
                                                     "50000 is an integer torch.float16 cannot hold exactly (it "
                                                     "would become 49984.0)"),
    "arange to 1e6 by 1e5 as float16": _not_held("arange: start=0, end=1000000.0, step=100000.0:", "float16", "the "
                                                 "value 900000.0 overflows torch.float16 (to inf; its largest finite "
                                                 "value is 65504)"),
    "arange 1 to 4098 by 3 as float16": _not_held("arange: start=1, end=4098, step=3:", "float16", "the value 2053 is "
                                                  "an integer torch.float16 cannot hold exactly (it would become "
                                                  "2052.0)"),
    "arange step 0": "ValueError: arange: start=0, end=5, step=0: step is 0; expected a nonzero step",
    "arange away from end": "ValueError: arange: start=5, end=0, step=1: step points away from end; expected a step "
                            "of the sign of end - start",
    "arange to inf": "ValueError: arange: start=0, end=inf, step=1: end is not a finite number; expected finite "
                     "numbers",
    "arange as bool": "ValueError: arange: dtype=torch.bool; expected a number dtype (torch has no arange of bools)",
    "arange step '1'": "TypeError: arange: step='1' (str); expected a number (or a 0-d tensor) for a torch.int64 "
                       "tensor",
    "zeros_like [1, 2]": "TypeError: zeros_like: other=[1, 2] (list); expected a torch.Tensor (its shape and dtype "
                         "are copied)",
    "zeros_like None": "TypeError: zeros_like: other=None (NoneType); expected a torch.Tensor (its shape and dtype "
                       "are copied)",
}


@pytest.mark.parametrize("api", ["triton", "gluon"])
def test_a_failed_allocation_names_the_value_and_takes_no_heap(api):
    """A fill value or arange argument the dtype cannot hold exactly (one that wraps, is truncated, overflows to inf,
    underflows to 0; a bool other than 0 or 1), or the wrong type; zeros_like of what is not a tensor: refused naming
    the call, the value and the dtype, whatever the shape, and no heap taken (was: full((4,), -1, uint8) gave 255,
    full((1,), 1e6, float16) inf while four elements raised torch's message; arange(250, 260, uint8) wrapped)."""
    check("failing calls covered", sorted(FILL_ERRORS), sorted(hs.FAILING_CALLS))
    for rank, res in enumerate(_failed_allocations()):
        r = res[api]
        check("host object", r["type"], {"triton": "Iris", "gluon": "IrisGluon"}[api], f"rank {rank}")
        check("heap.used at the start", r["used_at_start"], 3, f"rank {rank}")
        for name, expected in FILL_ERRORS.items():
            where = f"{api} rank {rank}: {name}"
            check("heap.used before", r["calls"][name]["used_before"], 3, where)
            _check_failed(r["calls"][name], expected, where)
        check("offset of the next allocation", r["next_offset"], 256, f"{api} rank {rank}")


@pytest.mark.parametrize("api", ["triton", "gluon"])
def test_alignment_is_a_positive_power_of_two_for_every_dtype_and_helper(api):
    """0, 3, -256, 1.5, True, '256', None as ``alignment=``: the same error from every helper, for float32 as for
    int8 (was: float32 took 0, 3, -256 and 1.5, raising them to its element size), and no heap taken."""
    names = [f"{h} {str(d)[6:]} alignment={a!r}" for h in hs.ALLOCATORS for d in hs.ALIGNMENT_DTYPES
             for a in hs.BAD_ALIGNMENTS]
    for rank, res in enumerate(_failed_allocations()):
        alignments = res[api]["alignments"]
        check("cases", sorted(alignments), sorted(names), f"{api} rank {rank}")
        for name, call in alignments.items():
            value = name.split("alignment=", 1)[1]
            _check_failed(call, f"ValueError: alignment={value}; expected a positive power of two (bytes), such as "
                                "256", f"{api} rank {rank}: {name}")


@pytest.mark.parametrize("api", ["triton", "gluon"])
def test_a_fill_that_fails_after_allocating_gives_the_allocation_back(api):
    """With the up-front check of the fill value switched off, ``full`` fails in the fill itself, after allocating:
    the allocation is given back. ``heap.given_back_on_error`` rolls back a failed block and keeps a good one."""
    for rank, res in enumerate(_failed_allocations()):
        r, where = res[api], f"{api} rank {rank}"
        late = r["fill_fails_late"]
        check_that("error", late["error"], (late["error"] or "").startswith("RuntimeError: "), "torch's RuntimeError",
                   where)
        check("heap.used before and after", (late["used_before"], late["used_after"]), (256 + 16, 256 + 16), where)
        check("given_back_on_error", r["given_back_on_error"], {"before": 272, "kept_offset": 272, "after": 372},
              where)


def test_create_and_close_twenty_times_leaks_nothing():
    results = run_world(hs.lifecycle_job, "cpu", WORLD, CYCLES, 1 << 20)  # a hang fails through the world timeout
    for rank, res in enumerate(results):
        where = f"rank {rank} after {CYCLES} create/close cycles"
        check("/dev/shm heap files of this world", res["after"]["shm_files"], res["before"]["shm_files"], where)
        check("heap mappings in /proc/self/maps", res["after"]["heap_mappings"], res["before"]["heap_mappings"], where)
        check("open fds (/proc/self/fd)", res["after"]["fds"], res["before"]["fds"], where)
        check("sums", res["sums"], [256 * (i + rank) for i in range(CYCLES)], where)


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("export")


@cache
def _export(out_dir: str):
    return run_world(hs.export_job, "cpu", WORLD, out_dir)


def _trace(path) -> dict:
    with open(path) as f:
        return json.load(f)


def _check_rank_events(slices: list, res: dict, where: str) -> None:
    """The file's program slices of ``res``'s rank are its recorded events, field by field."""
    __tracebackhide__ = True
    rank = res["rank"]
    got = sorted((s for s in slices if s.process == f"triton rank {rank}" and s.track.startswith("program")),
                 key=lambda s: s.args["op_index"])
    check("number of ranges", len(got), len(res["rows"]), f"{where}, rank {rank}")
    for s, row in zip(got, res["rows"], strict=True):
        w = f"{where}, rank {rank}, op_index {row['op_index']}"
        check("name", s.name, row["name"], w)
        check("track", s.track, f"program {row['pid']}", w)
        for field in ("target_rank", "address", "payload_size", "payload"):
            check(f"args.{field}", s.args[field], row[field], w)
        check_that("start_ns", s.start_ns, s.start_ns >= 0, ">= 0", w)


def _check_arrows(slices: list, results, where: str) -> None:
    """Every remote store has an arrow to a slice of the same span on its target's incoming track."""
    __tracebackhide__ = True
    sources = {s.flow_out: s for s in slices if s.flow_out is not None}
    targets = {s.flow_in: s for s in slices if s.flow_in is not None}
    check("arrow ids", sorted(sources), sorted(targets), where)
    check("arrows", len(sources), sum(len(r["rows"]) for r in results), where)
    for fid, src in sources.items():
        dst, w = targets[fid], f"{where}, arrow from {src.key}"
        target = src.args["target_rank"]
        rank = int(src.process.split()[-1])
        check("arrow lands on", (dst.process, dst.track.split(" #")[0], dst.name),
              (f"triton rank {target}", "incoming", f"{src.name} from rank {rank}"), w)
        check("arrow target span", (dst.start_ns, dst.dur_ns), (src.start_ns, src.dur_ns), w)


def test_merged_export_has_every_rank_and_the_arrows(export_dir):
    results = _export(str(export_dir))
    path = export_dir / "merged.json"
    for res in results:
        check("export(merge=True) returned", res["merged"], str(path), f"rank {res['rank']}")
    expected_rows = (hs.TRACE_N + hs.TRACE_BLOCK - 1) // hs.TRACE_BLOCK
    for res in results:
        check("rows recorded", len(res["rows"]), expected_rows, f"rank {res['rank']}")
    trace = _trace(path)
    names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"}
    check("process names", sorted(names.values()), [f"triton rank {r}" for r in range(WORLD)], str(path))
    slices = read_json(trace)
    for res in results:
        _check_rank_events(slices, res, str(path))
    _check_arrows(slices, results, str(path))


def test_merged_binary_export_has_the_same_slices(export_dir):
    perfetto_pb2()
    results = _export(str(export_dir))
    path = export_dir / "merged.pftrace"
    for res in results:
        check("export(merge=True) returned", res["merged_binary"], str(path), f"rank {res['rank']}")
    slices = PerfettoTrace(path.read_bytes()).slices
    for res in results:
        _check_rank_events(slices, res, str(path))
    _check_arrows(slices, results, str(path))


def test_merged_export_states_its_clock_alignment(export_dir):
    results = _export(str(export_dir))
    meta = _trace(export_dir / "merged.json")["metadata"]
    clock = meta["clock_alignment"]
    check("clock_alignment.method", clock["method"], ALIGNMENT_METHOD)
    reads = clock["reads_host_ns"]
    check("ranks with a read", sorted(reads), [f"triton rank {r}" for r in range(WORLD)])
    for name, (before, after) in reads.items():
        check_that("read window", (before, after), 0 <= before <= after, "0 <= before <= after", name)
    check("error_bound_ns", clock["error_bound_ns"], max(a for _, a in reads.values()))
    check("metadata.flows", meta["flows"], sum(len(r["rows"]) for r in results))
    no_arrows = _trace(export_dir / "no_arrows.json")
    check("flows without arrows", [e for e in no_arrows["traceEvents"] if e["ph"] in ("s", "f")], [])


def test_per_rank_export_has_only_its_rank(export_dir):
    """Every rank exports to the same path (``own.json``): each writes its own file, ``own_rank<r>.json``, with its
    own events (was: one file, the last rank's, the others' events lost)."""
    results = _export(str(export_dir))
    check("per-rank files", sorted(p.name for p in export_dir.glob("own*")),
          [f"own_rank{r}.json" for r in range(WORLD)])
    for res in results:
        rank = res["rank"]
        path = export_dir / f"own_rank{rank}.json"
        check("export() returned", res["own"], str(path), f"rank {rank}")
        trace = _trace(path)
        slices = read_json(trace)
        check("processes in the file", sorted({s.process for s in slices}), [f"triton rank {rank}"], str(path))
        check("arrows in a one-rank file", [s for s in slices if s.flow_out or s.flow_in], [], str(path))
        _check_rank_events(slices, res, str(path))


def test_export_to_an_unwritable_path_raises_and_writes_nothing(export_dir):
    results = _export(str(export_dir))
    refused = export_dir / "refused"
    for res in results:
        where = f"rank {res['rank']}"
        missing, directory = res["refused"]["missing_folder"], res["refused"]["directory"]
        check_that("error (missing folder)", missing, missing and missing.startswith("FileNotFoundError")
                   and str(refused / "missing" / "t.json") in missing, "FileNotFoundError naming the path", where)
        check_that("error (a directory)", directory, directory and directory.startswith("IsADirectoryError")
                   and str(refused / "a_folder") in directory, "IsADirectoryError naming the path", where)
        merge = res["refused"]["merge_not_bool"]
        check("error (merge='yes')", merge, "ValueError: tracing.export: merge='yes'; expected a bool (True or False)",
              where)
        check("error (123)", res["refused"]["not_a_name"], "TypeError: trace export: path=123 (int); expected a file "
              "name, a str or os.PathLike, such as 'trace.json'", where)
    check("files under the refused folder", sorted(str(p.relative_to(refused)) for p in refused.rglob("*")),
          ["a_folder"])


@cache
def _merged_refused(path: str) -> tuple[str, list]:
    """Its own short world: a merged export that rank 0 refuses is the last thing the ranks do."""
    try:
        return "ok", launch(hs.merged_refused_job, WORLD, path, env=ENV["cpu"], timeout=120)
    except Exception as e:
        return "launch failed", [f"{type(e).__name__}: {e}"]


def test_merged_export_to_an_unwritable_path_writes_nothing(tmp_path):
    path = tmp_path / "missing" / "merged.json"
    _merged_refused(str(path))
    check("files", [str(p) for p in tmp_path.rglob("*")], [])


def test_merged_export_to_an_unwritable_path_raises_on_every_rank(tmp_path):
    path = tmp_path / "missing" / "merged.json"
    status, errors = _merged_refused(str(path))
    check("world", status, "ok", "; ".join(errors)[:2000])
    for rank, err in enumerate(errors):
        check_that("error", err, err is not None and str(path) in err, "an error naming the path", f"rank {rank}")
