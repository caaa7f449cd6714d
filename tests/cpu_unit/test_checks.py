"""The check helpers themselves: they pass on equal values and fail with the one message format."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.cpu_unit import checks

pytestmark = pytest.mark.cpu_unit


def _failure(fn) -> str:
    with pytest.raises(pytest.fail.Exception) as info:
        fn()
    return str(info.value)


def test_message_format():
    assert checks.message("dur", 3, "4", "rank 1") == "dur=3, but should be 4 [rank 1]"
    assert checks.message("dur", "x", "'y'") == "dur='x', but should be 'y'"


def test_check_passes_and_fails():
    checks.check("a", 1, 1)
    checks.check("a", math.nan, math.nan)
    checks.check("a", True, True)
    assert _failure(lambda: checks.check("a", 1, 2, "here")) == "a=1, but should be 2 [here]"
    assert _failure(lambda: checks.check("a", 1, True)) == "a=1, but should be True"
    assert _failure(lambda: checks.check("a", 1.0, math.nan)) == "a=1.0, but should be nan"


def test_check_that():
    checks.check_that("p", 5, 0 <= 5 < 8, "in [0, 8)")
    assert _failure(lambda: checks.check_that("p", 9, False, "in [0, 8)")) == "p=9, but should be in [0, 8)"


def test_check_array_names_first_difference():
    checks.check_array("x", np.array([1.0, np.nan]), np.array([1.0, np.nan]))
    text = _failure(lambda: checks.check_array("x", np.array([[1, 2], [3, 4]]), np.array([[1, 2], [5, 6]])))
    assert text == "x[1, 0]=3, but should be 5 [2 of 4 differ]", text
    text = _failure(lambda: checks.check_array("x", np.zeros(2), np.zeros(3)))
    assert text == "x.shape=(2,), but should be (3,)", text


def test_check_raises():
    def boom():
        raise ValueError("size=-5 is negative")

    err = checks.check_raises(ValueError, boom, mentions=["-5"])
    assert isinstance(err, ValueError)
    text = _failure(lambda: checks.check_raises(ValueError, boom, mentions=["-6"], where="w"))
    assert text == "error message='size=-5 is negative', but should be a message mentioning '-6' [w]", text
    text = _failure(lambda: checks.check_raises(TypeError, boom))
    assert text == "exception='ValueError: size=-5 is negative', but should be TypeError", text
    text = _failure(lambda: checks.check_raises(ValueError, lambda: None))
    assert text == "exception=None, but should be ValueError", text
