"""iris/fill_values.py without a world: what ``full`` and ``arange`` take exactly, and what they write.

The refusals through the host object, and the heap left as it was, are pinned on a cpu world in
``tests/cpu_interpret/test_host_world.py``; here the values themselves, element by element.
"""

from __future__ import annotations

import math

import pytest
import torch

from iris.fill_values import Arange, fill_scalar, shown

pytestmark = pytest.mark.cpu_unit

# (value, dtype, the Python number fill_scalar gives): each held exactly, or (a float in a float dtype) rounded
HELD = [
    (255, torch.uint8, 255), (-128, torch.int8, -128), (2**63 - 1, torch.int64, 2**63 - 1), (3.0, torch.int16, 3.0),
    (True, torch.int32, True), (0, torch.bool, 0), (1.0, torch.bool, 1.0), (False, torch.bool, False),
    (65504, torch.float16, 65504), (2**24, torch.float32, 2**24), (0.1, torch.float16, 0.1),
    (float("inf"), torch.float16, math.inf), (float("-inf"), torch.bfloat16, -math.inf),
    (torch.tensor(7, dtype=torch.int64), torch.int8, 7), (torch.tensor(True), torch.bool, True),
]


@pytest.mark.parametrize(("value", "dtype", "expected"), HELD, ids=repr)
def test_a_value_the_dtype_holds_is_taken(value, dtype, expected):
    got = fill_scalar("full", "fill_value", value, dtype)
    assert (got, type(got)) == (expected, type(expected))


def test_nan_is_a_float_value():
    assert math.isnan(fill_scalar("full", "fill_value", float("nan"), torch.float32))


@pytest.mark.parametrize(("value", "dtype", "why"), [
    (256, torch.uint8, "is outside torch.uint8's range (0 to 255), so it would wrap"),
    (-1, torch.uint8, "is outside torch.uint8's range (0 to 255), so it would wrap"),
    (-2.5, torch.int64, "is not an integer, so torch.int64 would truncate it (to -2)"),
    (float("-inf"), torch.int8, "is not a finite number, so torch.int8 cannot hold it"),
    (65520, torch.float16, "overflows torch.float16 (to inf; its largest finite value is 65504)"),
    (-1e39, torch.float32, "overflows torch.float32 (to -inf; its largest finite value is 3.40282e+38)"),
    (2**1100, torch.float64, "overflows torch.float64 (to inf; its largest finite value is 1.79769e+308)"),
    (1e-8, torch.float16, "underflows torch.float16 (to 0; its smallest positive value is 5.96046e-08)"),
    (2049, torch.float16, "is an integer torch.float16 cannot hold exactly (it would become 2048.0)"),
    (257, torch.bfloat16, "is an integer torch.bfloat16 cannot hold exactly (it would become 256.0)"),
    (2**53 + 1, torch.float64, "is an integer torch.float64 cannot hold exactly (it would become 9007199254740992.0)"),
    (-1, torch.bool, "is not True, False, 0 or 1, so a torch.bool element cannot hold it"),
    (float("nan"), torch.bool, "is not True, False, 0 or 1, so a torch.bool element cannot hold it"),
], ids=repr)
def test_a_value_the_dtype_would_change_is_refused(value, dtype, why):
    with pytest.raises(ValueError) as refused:
        fill_scalar("full", "fill_value", value, dtype)
    assert str(refused.value) == f"full: fill_value={shown(value)} {why}; expected a value {dtype} holds exactly"


@pytest.mark.parametrize("value", ["1", None, 1j, [1], torch.ones(1), torch.tensor(1j)], ids=repr)
def test_what_is_not_a_number_is_a_type_error(value):
    with pytest.raises(TypeError, match=r"^full: fill_value=.*; expected a number \(or a 0-d tensor\) for a "
                                        r"torch.int32 tensor$"):
        fill_scalar("full", "fill_value", value, torch.int32)


def test_a_huge_integer_is_shown_by_its_length():
    """Python refuses to print an int of more than 4300 digits: the message gives its length instead."""
    assert shown(10**4999) == "<an integer of 5000 digits>" and shown(-(10**40)) == "-<an integer of 41 digits>"
    assert shown(10**39) == repr(10**39) and shown(True) == "True"


def _written(start, end, step, dtype) -> list:
    values = Arange(start, end, step, dtype)
    out = torch.full((values.count,), 99, dtype=dtype)
    values.fill(out)
    return out.tolist()


@pytest.mark.parametrize(("args", "expected"), [
    ((0, 256, 1, torch.uint8), list(range(256))),  # end past the dtype: every value in it
    ((10, 0, -3, torch.int8), [10, 7, 4, 1]),
    ((-128, 128, 85, torch.int8), [-128, -43, 42, 127]),
    ((2, 2, 1, torch.int32), []),
    ((0.0, 1.0, 0.25, torch.float16), [0.0, 0.25, 0.5, 0.75]),
    ((0, 4097, 2048, torch.float16), [0.0, 2048.0, 4096.0]),
    ((-(2**63), 2**63, 2**64 - 1, torch.int64), [-(2**63), 2**63 - 1]),  # a step past int64 with two values
    ((2**62, 2**63 - 1, 2**61, torch.int64), [2**62, 2**62 + 2**61]),
    ((2**63 - 4, 2**63 - 1, 1, torch.int64), [2**63 - 4, 2**63 - 3, 2**63 - 2]),
    ((-(2**63), 2**63 - 1, 2**62, torch.int64), [-(2**63), -(2**62), 0, 2**62]),  # step x index wraps in int64
])
def test_arange_writes_the_exact_values(args, expected):
    assert _written(*args) == expected


def test_arange_rounds_a_float_step_as_torch_does():
    assert _written(0, 1, 0.1, torch.float32) == torch.arange(0, 1, 0.1, dtype=torch.float32).tolist()


@pytest.mark.parametrize(("args", "why"), [
    ((0, 5, 0.5, torch.int32), "step is not an integer, so torch.int32 would truncate the values; expected a value "
                               "torch.int32 holds exactly"),
    ((200, 301, 50, torch.uint8), "the value 300 is outside torch.uint8's range (0 to 255), so it would wrap; "
                                  "expected a value torch.uint8 holds exactly"),
    ((0, 2**63 + 1, 2**63, torch.int64), f"the value {2**63} is outside torch.int64's range ({-2**63} to "
                                         f"{2**63 - 1}), so it would wrap; expected a value torch.int64 holds exactly"),
    ((0, 1e5, 7e4, torch.float16), "the value 70000.0 overflows torch.float16 (to inf; its largest finite value is "
                                   "65504); expected a value torch.float16 holds exactly"),
    ((0, float("nan"), 1, torch.float32), "end is not a finite number; expected finite numbers"),
    ((0, 1, -1, torch.int32), "step points away from end; expected a step of the sign of end - start"),
])
def test_arange_refuses_before_anything_is_written(args, why):
    with pytest.raises(ValueError) as refused:
        Arange(*args)
    start, end, step, _ = args
    assert str(refused.value) == f"arange: start={start!r}, end={end!r}, step={step!r}: {why}"


def test_an_interior_value_a_float_dtype_rounds_is_found_while_writing():
    """1 and 4096 are exact in float16, 2053 (between them, step 3) is not: refused by fill, not by the arguments."""
    values = Arange(1, 4098, 3, torch.float16)
    with pytest.raises(ValueError) as refused:
        values.fill(torch.empty(values.count, dtype=torch.float16))
    assert str(refused.value) == ("arange: start=1, end=4098, step=3: the value 2053 is an integer torch.float16 "
                                  "cannot hold exactly (it would become 2052.0); expected a value torch.float16 "
                                  "holds exactly")
