import math

import numpy as np
import pytest

from edgelearn._validation import check_bool, check_choice, check_number


def message(exc_info):
    return str(exc_info.value)


def test_examples_from_the_design():
    with pytest.raises(ValueError) as info:
        check_number("alpha", 1.5, "drop_features", 0, 1)
    assert message(info) == ("The 'alpha' parameter of drop_features must be a float "
                             "in [0, 1]. Got 1.5.")
    with pytest.raises(ValueError) as info:
        check_number("C", -1, "PAACDS", 0, math.inf, low_open=True)
    assert message(info) == ("The 'C' parameter of PAACDS must be a float in "
                             "(0, inf]. Got -1.")
    with pytest.raises(ValueError) as info:
        check_choice("mode", 3, "PA", (0, 1, 2))
    assert message(info) == ("The 'mode' parameter of PA must be one of {0, 1, 2}. "
                             "Got 3.")


@pytest.mark.parametrize("value, ok", [
    (0, False), (1e-300, True), (1, True), (math.inf, True), (-math.inf, False),
])
def test_open_and_closed_bounds(value, ok):
    if ok:
        assert check_number("C", value, "PA", 0, None, low_open=True) == value
    else:
        with pytest.raises(ValueError):
            check_number("C", value, "PA", 0, None, low_open=True)


def test_high_open():
    with pytest.raises(ValueError, match=r"in \[0, 1\)\. Got 1\.$"):
        check_number("p", 1, "f", 0, 1, high_open=True)
    assert check_number("p", 0.999, "f", 0, 1, high_open=True) == 0.999


def test_fractional_bounds_are_shown_as_written():
    with pytest.raises(ValueError, match=r"in \[0\.5, 2\.25\]"):
        check_number("x", 3, "f", 0.5, 2.25)


def test_returns_plain_python_scalars():
    v = check_number("x", np.float32(0.5), "f", 0, 1)
    assert type(v) is float and v == 0.5
    n = check_number("n", np.int64(7), "f", 1, None, integer=True)
    assert type(n) is int and n == 7
    assert type(check_number("x", 1, "f", 0, 1)) is float


@pytest.mark.parametrize("value", [True, False, np.True_, "1", None, [1], 1j])
def test_non_numbers_are_type_errors(value):
    with pytest.raises(TypeError, match=r"must be a float in \[0, 1\]\. Got "):
        check_number("x", value, "f", 0, 1)


def test_nan_is_never_in_range():
    with pytest.raises(ValueError, match=r"Got nan\.$"):
        check_number("x", float("nan"), "f", None, None)


def test_integer_mode():
    with pytest.raises(TypeError) as info:
        check_number("window", 3.0, "MultiLabelKELM", 1, None, integer=True)
    assert message(info) == ("The 'window' parameter of MultiLabelKELM must be an int "
                             "in [1, inf). Got 3.0.")
    with pytest.raises(ValueError, match=r"an int in \[1, 10\]\. Got 11\.$"):
        check_number("k", 11, "f", 1, 10, integer=True)
    with pytest.raises(ValueError, match=r"an int in \(-inf, 0\]\. Got 1\.$"):
        check_number("k", 1, "f", None, 0, integer=True)


def test_numpy_scalars_shown_as_python_values():
    with pytest.raises(ValueError, match=r"Got 2\.0\.$"):
        check_number("x", np.float64(2.0), "f", 0, 1)


def test_check_choice():
    assert check_choice("kind", "pa", "OnlineEnsemble", ["kelm", "pa"]) == "pa"
    assert type(check_choice("mode", np.int64(1), "PA", (0, 1, 2))) is int
    with pytest.raises(ValueError) as info:
        check_choice("mode", True, "PA", (0, 1, 2))
    assert message(info) == "The 'mode' parameter of PA must be one of {0, 1, 2}. Got True."
    with pytest.raises(ValueError, match=r"one of \{'a', 'b'\}\. Got \['a'\]\.$"):
        check_choice("m", ["a"], "f", {"b", "a"})
    with pytest.raises(ValueError, match=r"one of \{None, 'x'\}\. Got 'y'\.$"):
        check_choice("m", "y", "f", (None, "x"))
    assert check_choice("flag", False, "f", (True, False)) is False
    with pytest.raises(ValueError):
        check_choice("flag", 0, "f", (True, False))


def test_check_bool():
    assert check_bool("b", True, "f") is True
    assert check_bool("b", np.False_, "f") is False
    for bad in (0, 1, "True", None):
        with pytest.raises(TypeError, match=r"The 'b' parameter of f must be a bool\."):
            check_bool("b", bad, "f")
