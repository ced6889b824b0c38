"""JSON in and out: fast, and exact for integers beyond 64 bits."""

from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skillstate.support import jsonio


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


def _nested(levels: int, inner: str = "0") -> bytes:
    return ("[" * levels + inner + "]" * levels).encode()


def test_nesting_is_bounded_on_both_readers() -> None:
    assert jsonio.loads(_nested(jsonio.MAX_DEPTH)) is not None
    for long_number in ("0", "1234567890123456789012"):  # orjson's path, then the stdlib's
        with pytest.raises(jsonio.TooDeep):
            jsonio.loads(_nested(jsonio.MAX_DEPTH + 1, long_number))
        with pytest.raises(ValueError):  # past orjson's own limit, and past the recursion limit
            jsonio.loads(_nested(5000, long_number))


def test_deep_objects_count_as_levels_too() -> None:
    deep = '{"a":' * (jsonio.MAX_DEPTH + 1) + "1" + "}" * (jsonio.MAX_DEPTH + 1)
    with pytest.raises(jsonio.TooDeep):
        jsonio.loads(deep)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"s": "\\ud800", "n": 1234567890123456789012}',  # escaped lone surrogate
        b'{"s": "\xed\xa0\x80", "n": 1234567890123456789012}',  # raw (invalid UTF-8)
        b'{"n": NaN, "m": 1234567890123456789012}',
        b'{"n": 1e400, "m": 1234567890123456789012}',
        b'{"n": Infinity}',
        b'{"s": "\\udc00"}',
    ],
)
def test_what_orjson_refuses_the_stdlib_path_refuses_too(raw: bytes) -> None:
    with pytest.raises(ValueError):
        jsonio.loads(raw)


def test_a_str_with_a_lone_surrogate_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        jsonio.loads('{"s": "\ud800"}')


def test_the_writer_escapes_lone_surrogates_instead_of_raising() -> None:
    written = jsonio.dumps({"s": "a\ud800b", "n": 10**30})
    assert written == b'{"s":"a\\ud800b","n":1000000000000000000000000000000}'
    assert json.loads(written) == {"s": "a\ud800b", "n": 10**30}


def test_whatever_the_reader_accepts_the_writer_writes_even_wrapped() -> None:
    value = jsonio.loads(_nested(jsonio.MAX_DEPTH, "123456789012345678901234"))
    for _ in range(16):  # a translated request nests a client's value a little deeper
        value = {"wrapped": [value]}
    assert jsonio.dumps(value).count(b"[") == jsonio.MAX_DEPTH + 16


def test_the_writers_fallback_refuses_cleanly_past_the_recursion_limit() -> None:
    value: object = 10**30  # orjson refuses it, so the standard library writes
    for _ in range(5000):
        value = [value]
    with pytest.raises(jsonio.TooDeep):
        jsonio.dumps(value)


def test_a_long_number_across_a_slice_edge_is_still_read_exactly() -> None:
    edge = 1024 * 1024
    for offset in (-19, -18, -10, -1, 0, 1):
        prefix = b'["' + b"x" * (edge + offset - 5) + b'", '
        raw = prefix + b"98765432109876543210]"  # 20 digits, past 64 bits
        assert raw.index(b"9876") == edge + offset
        assert jsonio.loads(raw)[1] == 98765432109876543210, offset


async def test_reading_cooperatively_gives_the_loop_turns_and_the_same_value() -> None:
    raw = jsonio.dumps({"text": "x" * (4 * 1024 * 1024), "n": 10**30})
    turns = 0
    stop = False

    async def other_client() -> None:
        nonlocal turns
        while not stop:
            turns += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(other_client())
    await asyncio.sleep(0)
    before = turns
    value = await jsonio.loads_cooperatively(raw)
    stop = True
    await task
    assert value == jsonio.loads(raw) == {"text": "x" * (4 * 1024 * 1024), "n": 10**30}
    assert turns - before >= 4  # one turn at least per megabyte read


def test_depth_is_checked_alike_in_a_body_of_many_values() -> None:
    many = "[" + ",".join(["0"] * 30_000) + "]"  # past the walk's budget: orjson decides
    within = f"[{many}, {_nested(jsonio.MAX_DEPTH - 1).decode()}]"
    assert len(jsonio.loads(within)[0]) == 30_000
    with pytest.raises(jsonio.TooDeep):
        jsonio.loads(f"[{many}, {_nested(jsonio.MAX_DEPTH).decode()}]")
