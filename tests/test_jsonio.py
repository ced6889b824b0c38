"""JSON in and out: fast, and exact for integers beyond 64 bits."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from skillstate import jsonio


def test_big_integers_stay_exact() -> None:
    raw = b'{"seed": 123456789012345678901234567890, "small": 7, "f": 1.5}'
    value = jsonio.loads(raw)
    assert value["seed"] == 123456789012345678901234567890
    assert isinstance(value["seed"], int)
    assert jsonio.loads(jsonio.dumps(value)) == value


def test_long_digit_runs_inside_strings_are_harmless() -> None:
    assert jsonio.loads('{"id": "00000000000000000000000"}') == {"id": "0" * 23}


@given(st.integers(min_value=-(10**40), max_value=10**40))
def test_any_integer_round_trips(number: int) -> None:
    assert jsonio.loads(jsonio.dumps({"n": number})) == {"n": number}
