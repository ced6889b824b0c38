"""The canonical form and the ref: pinned bytes (the contract), determinism, exactness for
values JSON libraries disagree on, and the refusals of anything that is not a span."""

from __future__ import annotations

import hashlib
import json

import pytest
from archive_messages import spans
from hypothesis import given

from skillstate.archive import (
    FORMAT_VERSION,
    SpanFormatError,
    canonical_span,
    is_ref,
    read_span,
    ref_for,
    span_ref,
)
from skillstate.conversation import Message, Opaque, Text, ToolCall, ToolResult, Wire


def test_the_canonical_form_is_pinned() -> None:
    """The contract: if this test has to change, every archive ref changes with it."""
    span = [
        Message("user", [Text("Grüße", extra={"b": 1, "a": [True, None]})]),
        Message("assistant", [ToolCall("c1", "run", '{"cmd": "ls"}')], hints={"z": 0.5}),
    ]
    expected = (
        b'{"messages":[{"parts":[{"extra":{"a":[true,null],"b":1},"text":"Gr\\u00fc\\u00dfe",'
        b'"type":"text"}],"role":"user"},{"hints":{"z":0.5},"parts":[{"arguments":'
        b'"{\\"cmd\\": \\"ls\\"}","id":"c1","name":"run","type":"tool_call"}],'
        b'"role":"assistant"}],"v":1}'
    )
    assert canonical_span(span) == expected
    assert span_ref(span) == "ar_" + hashlib.sha256(expected).hexdigest()[:24]


@given(spans)
def test_spans_read_back_exactly(span: list[Message]) -> None:
    data = canonical_span(span)
    assert read_span(data) == span
    assert canonical_span(read_span(data)) == data  # byte-stable, -0.0 and 1 vs 1.0 included
    assert data.isascii()
    assert is_ref(ref_for(data))


def test_key_order_does_not_change_the_ref() -> None:
    one = Message("user", [Text("x", extra={"a": 1, "b": 2})])
    other = Message("user", [Text("x", extra={"b": 2, "a": 1})])
    assert span_ref([one]) == span_ref([other])


def test_any_change_of_content_changes_the_ref() -> None:
    base = [Message("tool", [ToolResult("c1", [Text("exit 0")])])]
    changed = [Message("tool", [ToolResult("c1", [Text("exit 1")])])]
    flagged = [Message("tool", [ToolResult("c1", [Text("exit 0")], is_error=True)])]
    refs = {span_ref(base), span_ref(changed), span_ref(flagged), span_ref(base + base)}
    assert len(refs) == 4


def test_values_json_libraries_disagree_on_stay_exact() -> None:
    big = 2**70 + 1
    lone = json.loads('"\\ud83d"')  # a lone surrogate, as a client may send it
    span = [Message("user", [Text(lone, extra={"seed": big, "f": -0.0, "one": 1.0})])]
    restored = read_span(canonical_span(span))
    part = restored[0].parts[0]
    assert isinstance(part, Text)
    assert part.text == lone
    assert part.extra["seed"] == big
    assert str(part.extra["f"]) == "-0.0"
    assert isinstance(part.extra["one"], float)


def test_non_finite_numbers_have_a_fixed_form() -> None:
    span = [Message("user", [Opaque(Wire.CHAT, {"x": float("nan"), "y": float("inf")})])]
    assert b'"data":{"x":NaN,"y":Infinity}' in canonical_span(span)
    assert span_ref(span) == span_ref(read_span(canonical_span(span)))


def test_refs_have_one_form() -> None:
    assert is_ref("ar_" + "0" * 24)
    assert not is_ref("ar_" + "0" * 23)
    assert not is_ref("ar_" + "A" * 24)
    assert not is_ref("../" + "0" * 24)
    assert not is_ref("ar_" + "0" * 24 + "\n")


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"not json", "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (b"[]", "not an archived span"),
        (b'{"messages":[]}', "not an archived span"),
        (b'{"messages":[],"v":1,"x":0}', "not an archived span"),
        (b'{"messages":[],"v":99}', "unknown archive format version"),
        (b'{"messages":{},"v":1}', "must be a list"),
        (b'{"messages":[{"role":"user"}],"v":1}', "parts must be a list"),
    ],
)
def test_what_is_not_a_span_is_refused(data: bytes, problem: str) -> None:
    with pytest.raises(SpanFormatError, match=problem):
        read_span(data)


def test_the_format_version_is_written() -> None:
    assert json.loads(canonical_span([]))["v"] == FORMAT_VERSION
