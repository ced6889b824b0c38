"""Long strings read and written in pieces give exactly what one orjson call gives."""

from __future__ import annotations

import asyncio
import base64
import random
from typing import Any

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from skillstate.support import jsonio, longstrings

# Small bounds so that generated documents cross every slice and piece boundary.
LONG, PIECE = 16, 7

# Characters whose escapes or UTF-8 forms span several bytes: a cut must never fall inside.
_CHARS = st.sampled_from(['"', "\\", "\n", "\t", "\x01", "é", "€", "😀", "\u2028", "a", "/", " "])
_TEXT = st.lists(_CHARS, min_size=0, max_size=120).map("".join)
_LEAF = st.one_of(_TEXT, st.integers(-(10**20), 10**20), st.booleans(), st.none(), st.floats(0, 1))
_VALUE = st.recursive(
    _LEAF,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_TEXT, inner, max_size=4)),
    max_leaves=12,
)


def _read(data: bytes) -> Any:
    """What ``longstrings`` reads ``data`` as, at the small bounds; None if it did not cut."""
    steps = longstrings.read(data, long=LONG, piece=PIECE)
    cut = _drain(steps)
    if cut is None:
        return None
    skeleton, table = cut
    # The skeleton as the gateway reads it (``jsonio``): an integer past 64 bits stays exact.
    return _drain(longstrings.put_back(jsonio.loads(skeleton), table))


def _drain(steps: Any) -> Any:
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


@settings(max_examples=400, deadline=None)
@given(_VALUE)
@example({"": {"": '"""""', '"': -9223372036854775809, '""': ""}, '"': '""\x01€😀"'})
def test_a_cut_document_reads_as_orjson_reads_it(value: Any) -> None:
    data = jsonio.dumps(value)
    got = _read(data)
    if got is not None:
        assert got == jsonio.loads(data)


@settings(max_examples=400, deadline=None)
@given(_VALUE)
def test_pieces_write_the_bytes_orjson_writes(value: Any) -> None:
    written = _drain(longstrings.write(value, long=LONG, piece=PIECE))
    if written is not None:
        assert written == orjson.dumps(value)


@settings(max_examples=200, deadline=None)
@given(st.lists(_TEXT, min_size=1, max_size=6, unique=True), st.sampled_from(["", " ", "\n  "]))
def test_long_literals_are_cut_out_and_keys_are_not(texts: list[str], space: str) -> None:
    long_texts = [t * 3 + "x" * 40 for t in texts]
    doc = {"k" + t: [t, {"v": t}] for t in long_texts}
    data = jsonio.dumps(doc).replace(b":", space.encode() + b":")
    cut = _drain(longstrings.read(data, long=LONG, piece=PIECE))
    assert cut is not None
    skeleton, table = cut
    assert sorted(table.values()) == sorted(t for t in long_texts for _ in range(2))
    for text in long_texts:  # the keys are still in the skeleton, the values are not
        assert orjson.dumps("k" + text) in skeleton
    assert _read(data) == doc


def test_a_document_of_short_strings_is_not_cut() -> None:
    data = jsonio.dumps({"messages": [{"role": "user", "content": "hi"}] * 50})
    assert _drain(longstrings.read(data, long=LONG, piece=PIECE)) is None


@pytest.mark.parametrize(
    "bad",
    [
        b'{"a": "' + b"x" * 200 + b"\\q" + b'"}',  # a bad escape inside a long literal
        b'{"a": "' + b"x" * 200 + b"\x01" + b'"}',  # a raw control character
        b'{"a": "' + b"x" * 200 + b"\xff" + b'"}',  # not UTF-8
        b'{"a": "' + b"x" * 200 + b"\\ud800" + b'"}',  # a lone surrogate
        b'{"a": "' + b"x" * 200,  # never closed
        b'{"a": \\"' + b"x" * 200 + b'"}',  # a backslash outside any string
        b'{"a": "' + b"x" * 200 + b'" "b"}',  # two strings in a row
    ],
)
def test_what_is_not_json_is_refused_with_orjsons_own_words(bad: bytes) -> None:
    cut = _drain(longstrings.read(bad, long=LONG, piece=PIECE))
    if cut is not None:
        with pytest.raises(orjson.JSONDecodeError):
            orjson.loads(cut[0])
    with pytest.raises(orjson.JSONDecodeError) as whole:
        orjson.loads(bad)
    with pytest.raises(ValueError, match=str(whole.value).split(":")[0]):
        jsonio.loads(bad * 1 + b" " * (2 * 1024 * 1024))


def _big_body(mib: float, seed: int = 0) -> dict[str, Any]:
    data = random.Random(seed).randbytes(int(mib * 1024 * 1024 * 3 / 4))
    code = 'print("x\\\\y")\n\tconst é = "😀";' * int(mib * 1024 * 40)
    return {
        "id": 12345678901234567890123,  # beyond 64 bits: the standard library keeps it exact
        "messages": [
            {"role": "tool", "content": base64.b64encode(data).decode()},
            {"role": "tool", "content": code},
            {"role": "user", "content": "short"},
        ],
    }


def test_a_body_of_megabytes_reads_whole_at_the_real_bounds() -> None:
    body = _big_body(3)
    data = jsonio.dumps(body)
    cut = _drain(longstrings.read(data))
    assert cut is not None and len(cut[0]) < 1024  # only the skeleton is read in one call
    assert jsonio.loads(data) == body
    assert asyncio.run(jsonio.loads_cooperatively(data)) == body


def test_a_body_of_megabytes_writes_whole_at_the_real_bounds() -> None:
    body = _big_body(3)
    written = asyncio.run(jsonio.dumps_cooperatively(body))
    assert written == jsonio.dumps(body)
    assert _drain(longstrings.write(body)) is None  # the big integer: written whole instead
    body.pop("id")
    assert _drain(longstrings.write(body)) == orjson.dumps(body)


def test_reading_and_writing_megabytes_let_other_work_run_between_pieces() -> None:
    body = _big_body(4)
    body.pop("id")
    data = jsonio.dumps(body)

    async def ticks_during(work: Any) -> int:
        ticks = 0
        done = False

        async def ticker() -> None:
            nonlocal ticks
            while not done:
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        before = ticks
        await work
        done = True
        await task
        return ticks - before

    # Each mebibyte of a long string is its own step: at least 8 for the 8 MiB of text.
    assert asyncio.run(ticks_during(jsonio.loads_cooperatively(data))) >= 8
    assert asyncio.run(ticks_during(jsonio.dumps_cooperatively(body))) >= 8


def test_a_value_with_too_many_values_is_written_whole() -> None:
    value = {"many": list(range(30_000)), "long": "x" * (2 * longstrings.LONG)}
    assert _drain(longstrings.write(value)) is None
    assert asyncio.run(jsonio.dumps_cooperatively(value)) == orjson.dumps(value)
