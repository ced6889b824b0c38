"""server.bodies: a body that re-sends the one before it is read from its new bytes only, and the
value is always the one a whole parse gives."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillstate.server import bodies as reading
from skillstate.server.bodies import Bodies, Chart, chart, extend, shared_items
from skillstate.support import jsonio

run = jsonio.run


def charted(raw: bytes, key: str = "messages") -> Chart:
    found = run(chart(raw, orjson.loads(raw), key))
    assert found is not None
    return found


def message(n: int, text: str = "") -> dict[str, Any]:
    return {"role": "user" if n % 2 else "assistant", "content": f"turn {n} {text}"}


def body(turns: int, *, marked: int | None = None, tail: str = "") -> bytes:
    messages = [message(n) for n in range(turns)]
    if marked is not None:
        messages[marked]["cache_control"] = {"type": "ephemeral"}
    value: dict[str, Any] = {"model": "m", "messages": messages, "tools": [{"name": "t"}]}
    if tail:
        value["stream"] = tail
    return orjson.dumps(value)


def test_a_grown_body_is_read_from_its_new_items() -> None:
    old = charted(body(10))
    raw = body(12)
    spliced = run(extend(old, raw))
    assert spliced is not None
    value, grown = spliced
    assert value == orjson.loads(raw)
    assert list(value) == list(orjson.loads(raw))  # the keys in their order
    assert value["messages"][5] is old.items[5]  # not parsed again
    assert grown.ends == charted(raw).ends


def test_a_moved_marker_re_reads_only_from_the_item_it_left() -> None:
    old = charted(body(10, marked=9))
    raw = body(12, marked=11)
    assert shared_items(old, raw) == 9
    value, grown = run(extend(old, raw))
    assert value == orjson.loads(raw)
    assert value["messages"][8] is old.items[8]
    assert value["messages"][9] is not old.items[9]
    assert grown.ends == charted(raw).ends


def test_a_rewound_or_edited_history_keeps_what_still_matches() -> None:
    old = charted(body(40))
    edited = orjson.loads(body(40))
    edited["messages"][17]["content"] = "changed"
    raw = orjson.dumps(edited)
    assert shared_items(old, raw) == 17
    value, _ = run(extend(old, raw))
    assert value == edited
    assert shared_items(old, body(25)) == 25  # its array closes after them
    assert run(extend(old, body(25)))[0] == orjson.loads(body(25))


def test_keys_after_the_history_are_read_fresh() -> None:
    old = charted(body(10, tail="a"))
    raw = body(11, tail="b")
    value, _ = run(extend(old, raw))
    assert value == orjson.loads(raw)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"model":"m","messages":[{"a":1},{"a":2}],"messages":[]}',  # a repeat after it
        b'{"model":"m","messages":{"a":1}}',  # not an array
        b'{"model":"m","m\\u0065ssages":[{"a":1}]}',  # the name spelled with an escape
        b'[{"messages":[1]}]',
    ],
)
def test_bodies_not_charted(raw: bytes) -> None:
    assert run(chart(raw, orjson.loads(raw), "messages")) is None


def test_an_escaped_repeat_before_the_history_is_overridden_as_orjson_does() -> None:
    raw = b'{"m\\u0065ssages":[9],"model":"m","messages":[{"a":1},{"a":2}]}'
    old = charted(raw)
    grown = raw[:-2] + b',{"a":3}]}'
    value, _ = run(extend(old, grown))
    assert value == orjson.loads(grown)
    assert list(value) == list(orjson.loads(grown))


@pytest.mark.parametrize(
    "rest",
    [
        b',{"a":3}]',  # the object not closed
        b',{"a":3}],}',  # a trailing comma
        b',{"a":3}]}x',  # bytes after the document
        b',{"a":3},]}',  # a trailing comma in the array
        b',{"a":3}],"messages":[]}',  # the array's key again after it
        b',{"a":' + b"[" * 130 + b"]" * 130 + b"}]}",  # nested too deeply
    ],
)
def test_a_rest_that_does_not_read_on_its_own_gives_up(rest: bytes) -> None:
    raw = b'{"model":"m","messages":[{"a":1},{"a":2}]}'
    old = charted(raw)
    assert run(extend(old, raw[:-2] + rest)) is None


def test_a_long_integer_in_the_rest_stays_exact() -> None:
    raw = b'{"model":"m","messages":[{"a":1},{"a":2}]}'
    grown = raw[:-2] + b',{"a":123456789012345678901234567890}]}'
    value, _ = run(extend(charted(raw), grown))
    assert value["messages"][2]["a"] == 123456789012345678901234567890


def test_the_depth_limit_holds_for_the_rest_as_for_the_whole() -> None:
    """Items sit two levels down: one nested to the limit passes, one deeper does not."""
    raw = b'{"messages":[{"a":1}]}'
    old = charted(raw)
    fits = jsonio.MAX_DEPTH - 2
    ok = raw[:-2] + b"," + b"[" * fits + b"]" * fits + b"]}"
    over = raw[:-2] + b"," + b"[" * (fits + 1) + b"]" * (fits + 1) + b"]}"
    assert run(extend(old, ok))[0] == jsonio.loads(ok)
    with pytest.raises(jsonio.TooDeep):
        jsonio.loads(over)
    assert run(extend(old, over)) is None


def test_bodies_reads_each_request_of_a_session_and_splices_the_grown_ones() -> None:
    bodies = Bodies(min_bytes=0)
    for turns in range(1, 30):
        raw = body(turns, marked=turns - 1)
        assert asyncio.run(bodies.read(raw, "messages")) == orjson.loads(raw)
    assert bodies.spliced == 27  # all but the first and the second (whose one item moved)


def test_bodies_tell_sessions_apart_and_keep_to_their_bytes() -> None:
    bodies = Bodies(min_bytes=0, max_bytes=10_000)

    def session(n: int, turns: int) -> bytes:
        messages = [{"role": "system", "content": f"session {n}"}]
        messages += [message(t, "x" * 100) for t in range(turns)]
        return orjson.dumps({"model": "m", "messages": messages})

    for turns in range(1, 6):
        for n in range(3):
            raw = session(n, turns)
            assert asyncio.run(bodies.read(raw, "messages")) == orjson.loads(raw)
    assert bodies.spliced == 12
    assert len(bodies) == 3
    big = session(9, 100)
    asyncio.run(bodies.read(big, "messages"))
    assert len(bodies) == 1 and bodies.held_bytes == len(big)  # the last one, alone
    small = Bodies(min_bytes=10_000)
    asyncio.run(small.read(session(1, 1), "messages"))
    assert len(small) == 0


def test_concurrent_reads_of_one_grown_body_all_read_it() -> None:
    """Reads of a long body take turns with the event loop: several clients sending the same
    next body at once each extend the same kept chart (the first to finish replaces it)."""
    bodies = Bodies(min_bytes=0)

    def long_body(turns: int) -> bytes:
        messages = [message(n, "word " * 400) for n in range(turns)]
        return orjson.dumps({"model": "m", "messages": messages})

    async def scenario() -> list[Any]:
        await bodies.read(long_body(300), "messages")
        grown = [long_body(310), long_body(310), long_body(320), long_body(305)]
        return await asyncio.gather(*(bodies.read(raw, "messages") for raw in grown))

    values = asyncio.run(scenario())
    assert [len(v["messages"]) for v in values] == [310, 310, 320, 305]
    assert values[2] == orjson.loads(long_body(320))
    assert bodies.spliced == 4
    # The chart they grew from counted out once; each grown one kept (within max_bytes).
    assert bodies.held_bytes == sum(len(long_body(n)) for n in (310, 310, 320, 305))
    asyncio.run(bodies.read(long_body(330), "messages"))
    assert bodies.spliced == 5


def test_a_body_that_repeats_the_latest_chart_whole_is_compared_with_that_one_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Sessions that send one history at once leave a chart each (``test_concurrent_...``):
    the next body that grew from the latest is not compared with all of them."""
    bodies = Bodies(min_bytes=0)

    def long_body(turns: int) -> bytes:
        messages = [message(n, "word " * 400) for n in range(turns)]
        return orjson.dumps({"model": "m", "messages": messages})

    async def scenario() -> None:
        await bodies.read(long_body(300), "messages")
        await asyncio.gather(*(bodies.read(long_body(310), "messages") for _ in range(6)))

    asyncio.run(scenario())
    assert len(bodies) == 6
    compared: list[int] = []
    real = reading.shared_items
    monkeypatch.setattr(reading, "shared_items", lambda *a: compared.append(1) or real(*a))
    raw = long_body(311)
    assert asyncio.run(bodies.read(raw, "messages")) == orjson.loads(raw)
    assert compared == [1]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(
    before=st.dictionaries(st.text(max_size=4), JSON, max_size=2),
    items=st.lists(JSON, max_size=6),
    added=st.lists(JSON, max_size=4),
    cut=st.integers(0, 6),
    after=st.dictionaries(st.text(max_size=4), JSON, max_size=2),
    spaced=st.booleans(),
)
def test_any_body_reads_as_a_whole_parse_does(
    before: dict[str, Any],
    items: list[Any],
    added: list[Any],
    cut: int,
    after: dict[str, Any],
    spaced: bool,
) -> None:
    def dump(value: Any) -> bytes:
        if spaced:
            return json.dumps(value, indent=1, ensure_ascii=False).encode()
        return jsonio.dumps(value)

    first = {**before, "messages": items, **after}
    second = {**before, "messages": items[:cut] + added, **after}
    bodies = Bodies(min_bytes=0)
    for raw in (dump(first), dump(second), dump(second)):
        assert asyncio.run(bodies.read(raw, "messages")) == jsonio.loads(raw)
