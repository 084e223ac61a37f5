"""The shared parameter-constraint API (edgelearn.constraints)."""

import math
import pickle

import numpy as np
import pytest

from edgelearn.constraints import (
    Boolean,
    Constraint,
    InstanceOf,
    Interval,
    OneOf,
    Options,
    Text,
    check,
    check_params,
)

C = Interval(float, 0, None, closed="right")


def message(info):
    return str(info.value)


@pytest.mark.parametrize("constraint, text", [
    (Interval(float, 0, None, closed="right"), "a float in (0, inf]"),
    (Interval(float, 0, None, closed="neither"), "a float in (0, inf)"),
    (Interval(int, 1, 65535), "an int in [1, 65535]"),
    (Interval(int, None, 0), "an int in (-inf, 0]"),
    (Interval(float, 0.5, 2.25, closed="left"), "a float in [0.5, 2.25)"),
    (Options("pa", "nb"), "one of {'pa', 'nb'}"),
    (Options(0, 1, 2), "one of {0, 1, 2}"),
    (Options(None), "None"),
    (Boolean(), "a bool"),
    (Text(1, 64), "a str of 1 to 64 characters"),
    (Text(), "a str"),
    (Text(1), "a non-empty str"),
    (Text(pattern="[a-z]+", description="a lower-case word"), "a lower-case word"),
    (OneOf(Options(None), Interval(int, 1, None)), "None or an int in [1, inf)"),
    (OneOf(Options(None), Boolean(), Text(1)), "None, a bool or a non-empty str"),
])
def test_describe(constraint, text):
    assert constraint.describe() == text


def test_the_one_message_format():
    with pytest.raises(ValueError) as info:
        check("PAACDS", "C", -1, C)
    assert message(info) == "The 'C' parameter of PAACDS must be a float in (0, inf]. Got -1."
    with pytest.raises(TypeError) as info:
        check("PAACDS", "C", "1", C)
    assert message(info) == "The 'C' parameter of PAACDS must be a float in (0, inf]. Got '1'."
    with pytest.raises(ValueError) as info:
        check("gateway", "port", 70000, Interval(int, 1, 65535))
    assert message(info) == ("The 'port' parameter of gateway must be an int in "
                             "[1, 65535]. Got 70000.")


def test_interval_values():
    assert check("PA", "C", math.inf, C) == math.inf  # hard margin
    assert type(check("PA", "C", 1, C)) is float
    assert type(check("PA", "C", np.float32(0.5), C)) is float
    n = check("K", "window", np.int64(7), Interval(int, 1, None))
    assert type(n) is int and n == 7
    with pytest.raises(ValueError, match=r"Got 0\.$"):
        check("PA", "C", 0, C)
    with pytest.raises(ValueError, match=r"Got nan\.$"):
        check("f", "x", math.nan, Interval(float, None, None))
    with pytest.raises(ValueError, match=r"Got inf\.$"):
        check("f", "x", math.inf, Interval(float, 0, None, closed="neither"))
    with pytest.raises(TypeError, match=r"an int in \[1, inf\)\. Got 3\.0\.$"):
        check("K", "window", 3.0, Interval(int, 1, None))


@pytest.mark.parametrize("value", [True, False, np.True_, "1", None, [1], 1j])
def test_bool_and_others_are_never_numbers(value):
    for kind in (int, float):
        with pytest.raises(TypeError):
            check("f", "x", value, Interval(kind, None, None))


def test_options():
    assert check("E", "kind", "nb", Options("pa", "nb")) == "nb"
    assert type(check("PA", "mode", np.int64(1), Options(0, 1, 2))) is int
    with pytest.raises(ValueError) as info:
        check("PA", "mode", True, Options(0, 1, 2))  # True does not match 1
    assert message(info) == "The 'mode' parameter of PA must be one of {0, 1, 2}. Got True."
    with pytest.raises(ValueError):
        check("f", "flag", 0, Options(True, False))
    assert check("f", "flag", False, Options(True, False)) is False
    with pytest.raises(ValueError):  # unhashable: compared, simply no match
        check("f", "m", ["a"], Options("a"))
    with pytest.raises(ValueError):
        check("f", "m", np.array([1, 2]), Options(1))


def test_boolean():
    assert check("f", "b", np.False_, Boolean()) is False
    for bad in (0, 1, "True", None):
        with pytest.raises(TypeError, match=r"^The 'b' parameter of f must be a bool\."):
            check("f", "b", bad, Boolean())


def test_text():
    topic = Text(1, 8)
    assert check("gw", "topic", "abc", topic) == "abc"
    with pytest.raises(ValueError, match=r"a str of 1 to 8 characters\. Got ''\.$"):
        check("gw", "topic", "", topic)
    with pytest.raises(ValueError):
        check("gw", "topic", "x" * 9, topic)
    with pytest.raises(TypeError):
        check("gw", "topic", b"abc", topic)
    word = Text(pattern=r"[a-z]+", description="a lower-case word")
    with pytest.raises(ValueError) as info:
        check("gw", "name", "Abc", word)
    assert message(info) == "The 'name' parameter of gw must be a lower-case word. Got 'Abc'."
    with pytest.raises(ValueError, match="accepts none of the strings tried"):
        Text(pattern=r"Q{3}")
    assert Text(pattern=r"Q{3}", example="QQQ").valid_value() == "QQQ"


def test_long_values_are_shortened_in_messages():
    with pytest.raises(ValueError) as info:
        check("gw", "topic", "x" * 1000, Text(1, 8))
    assert len(message(info)) < 300 and message(info).endswith("...")


def test_one_of_type_or_value_error():
    window = OneOf(Options(None), Interval(int, 1, None))
    assert check("K", "w", None, window) is None
    assert check("K", "w", 5, window) == 5
    with pytest.raises(ValueError) as info:  # an int, out of range
        check("K", "w", 0, window)
    assert message(info) == "The 'w' parameter of K must be None or an int in [1, inf). Got 0."
    with pytest.raises(TypeError):  # no member takes a str
        check("K", "w", "5", window)


def test_instance_of():
    constraint = InstanceOf(dict, description="a dict")
    assert check("f", "d", {"a": 1}, constraint) == {"a": 1}
    with pytest.raises(TypeError, match=r"must be a dict\. Got None\.$"):
        check("f", "d", None, constraint)


ALL = [
    Interval(float, 0, None, closed="right"),
    Interval(float, 0, 1),
    Interval(float, 0, 1, closed="neither"),
    Interval(float, None, None, closed="neither"),
    Interval(int, 1, None),
    Interval(int, 0, 10, closed="neither"),
    Interval(int, None, -3),
    Interval(float, 0.5, 2.25, closed="left"),
    Options("pa", "nb", "kelm"),
    Options(0, 1, 2),
    Options(None),
    Boolean(),
    Text(),
    Text(1, 64),
    Text(3, 3),
    Text(pattern=r"[^#+]+", description="a topic without wildcards"),
    OneOf(Options(None), Interval(int, 1, None)),
    OneOf(Interval(float, 0, 1), Options("auto")),
    InstanceOf(dict),
]


@pytest.mark.parametrize("constraint", ALL, ids=repr)
def test_invalid_values_are_rejected_and_valid_value_passes(constraint):
    bad = constraint.invalid_values()
    assert bad, "every constraint must offer values to reject"
    for value in bad:
        assert not constraint.is_satisfied_by(value), value
        with pytest.raises((TypeError, ValueError), match=r"^The 'p' parameter of O must be "):
            check("O", "p", value, constraint)
    good = constraint.valid_value()
    assert constraint.is_satisfied_by(good)
    assert check("O", "p", good, constraint) == good


def test_interval_edges_are_offered_as_invalid():
    assert 0.0 in Interval(float, 0, None, closed="right").invalid_values()
    assert 11 in Interval(int, 1, 10).invalid_values()
    assert 0 in Interval(int, 1, 10).invalid_values()
    assert math.inf in Interval(float, 0, None, closed="neither").invalid_values()


def test_bad_declarations_fail_at_once():
    with pytest.raises(TypeError):
        Interval(str, 0, 1)
    with pytest.raises(ValueError):
        Interval(float, 0, 1, closed="open")
    with pytest.raises(ValueError):
        Interval(float, 2, 1)
    with pytest.raises(ValueError):  # no int strictly between 0 and 1
        Interval(int, 0, 1, closed="neither")
    with pytest.raises(TypeError):
        Interval(float, True, 1)
    with pytest.raises(TypeError):
        OneOf(Options(None), int)
    with pytest.raises(ValueError):
        Options()


def test_check_params_converts_all_and_names_strangers():
    constraints = {"C": C, "mode": Options(0, 1, 2), "window": Interval(int, 1, None)}
    got = check_params("PA", {"C": np.float64(2), "mode": np.int64(1)}, constraints)
    assert got == {"C": 2.0, "mode": 1}
    assert type(got["C"]) is float and type(got["mode"]) is int
    with pytest.raises(TypeError, match=r"PA got an unexpected parameter 'nu'"):
        check_params("PA", {"nu": 1}, constraints)
    with pytest.raises(ValueError, match=r"^The 'window' parameter of PA"):
        check_params("PA", {"C": 1.0, "window": 0}, constraints)


def test_constraints_are_plain_data():
    for constraint in ALL:
        if isinstance(constraint, InstanceOf):
            continue
        copy = pickle.loads(pickle.dumps(constraint))
        assert copy.describe() == constraint.describe()
        assert isinstance(copy, Constraint)
        assert constraint.describe() in repr(constraint)


def test_module_imports_only_stdlib_and_numpy():
    import subprocess
    import sys
    code = ("import sys, edgelearn.constraints; "
            "bad = [m for m in ('numba', 'river', 'sklearn', 'msgpack', 'paho') "
            "if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    # edgelearn/__init__ may import learners (numba); the module itself must not.
    import ast
    import pathlib
    import edgelearn.constraints as module
    tree = ast.parse(pathlib.Path(module.__file__).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    assert imported <= {"__future__", "math", "numbers", "re", "typing", "numpy"}, imported
    assert "river" not in out and "sklearn" not in out


def test_int_bounds_beyond_float_precision_stay_exact():
    # A seed is a uint64: float(2**64 - 1) rounds up to 2**64, which printed the wrong
    # bound in configs/gateway.toml and let 2**64 through to the generator.
    seed = Interval(int, 0, 2**64 - 1)
    assert seed.describe() == "an int in [0, 18446744073709551615]"
    assert seed.convert(2**64 - 1) == 2**64 - 1
    with pytest.raises(ValueError, match=r"\[0, 18446744073709551615\]. Got 18446744073709551616"):
        seed.convert(2**64)
    assert 2**64 in seed.invalid_values()
