"""Messages to JSON and back, exactly: a property over every part type, the defaults rule, real
client requests restored to the same wire JSON, and the refusals of malformed input."""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args

import pytest
from archive_messages import messages
from hypothesis import given

from skillstate.archive import SpanFormatError, decode_message, encode_message
from skillstate.archive.serialize import PART_TYPES, decode_part, encode_part
from skillstate.conversation import (
    CacheMark,
    Message,
    Opaque,
    Part,
    Text,
    ToolCall,
    ToolResult,
    Wire,
)
from skillstate.protocols import adapter
from skillstate.support.jsonio import loads

RECORDED = Path(__file__).parent.parent / "fixtures" / "recorded"


@given(messages)
def test_every_message_round_trips_exactly(message: Message) -> None:
    restored = decode_message(encode_message(message))
    assert restored == message
    assert [type(p) for p in restored.parts] == [type(p) for p in message.parts]


def test_every_part_class_has_a_tag() -> None:
    assert set(PART_TYPES.values()) == set(get_args(Part))


def test_fields_at_their_default_are_left_out() -> None:
    assert encode_part(Text("hi")) == {"type": "text", "text": "hi"}
    assert encode_part(ToolCall("c1", "run", "{}")) == {
        "type": "tool_call",
        "id": "c1",
        "name": "run",
        "arguments": "{}",
    }
    assert encode_message(Message("user", [])) == {"role": "user", "parts": []}


def test_values_equal_to_a_default_but_of_another_type_are_kept() -> None:
    # False is the default of is_error; 0 is not False for the canonical form.
    result = ToolResult("c1", [], is_error=0)  # type: ignore[arg-type]
    assert encode_part(result)["is_error"] == 0


def test_nested_tool_result_content_and_wire_values() -> None:
    result = ToolResult("c1", [Text("out", extra={"annotations": []})], is_error=True)
    encoded = encode_part(result)
    assert encoded["content"] == [{"type": "text", "text": "out", "extra": {"annotations": []}}]
    assert decode_part(encoded) == result
    opaque = Opaque(Wire.RESPONSES, {"type": "web_search_call"})
    assert encode_part(opaque)["wire"] == "openai-responses"
    assert decode_part(encode_part(opaque)) == opaque


def test_cache_marks_are_objects_of_their_own() -> None:
    assert encode_part(Text("a", cache=CacheMark()))["cache"] == {}
    assert encode_part(Text("a", cache=CacheMark("1h")))["cache"] == {"ttl": "1h"}
    assert decode_part({"type": "text", "text": "a", "cache": {"ttl": "1h"}}) == Text(
        "a", cache=CacheMark("1h")
    )


def test_a_cache_marker_of_an_older_form_reads_as_a_mark() -> None:
    older = {"type": "text", "text": "a", "cache": {"type": "ephemeral", "ttl": "1h"}}
    assert decode_part(older) == Text("a", cache=CacheMark("1h"))


def test_an_opaque_item_of_a_tool_result_round_trips() -> None:
    """A Claude Code tool search result: its ``tool_reference`` block is an item of the result."""
    reference = {"type": "tool_reference", "tool_name": "mcp__github__create_issue"}
    result = ToolResult("toolu_1", [Text("Found 1 tool"), Opaque(Wire.MESSAGES, reference)])
    encoded = encode_part(result)
    assert encoded["content"][1] == {
        "type": "opaque",
        "wire": "anthropic-messages",
        "data": reference,
    }
    assert decode_part(encoded) == result


def _recorded() -> list[tuple[Wire, Path]]:
    found = []
    for wire in Wire:
        folder = RECORDED / wire.value
        if folder.is_dir():
            found += [
                (wire, path)
                for path in sorted(folder.glob("*.json"))
                if ".headers." not in path.name
            ]
    return found


@pytest.mark.parametrize(("wire", "path"), _recorded(), ids=lambda v: getattr(v, "name", str(v)))
def test_real_client_requests_restore_to_the_same_wire_json(wire: Wire, path: Path) -> None:
    body = loads(path.read_bytes())
    wire_adapter = adapter(wire)
    request = wire_adapter.decode_request(body)
    request.messages = [decode_message(encode_message(m)) for m in request.messages]
    assert wire_adapter.encode_request(request) == body


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ([], "a message must be a JSON object"),
        ({"role": "robot", "parts": []}, "unknown role"),
        ({"role": "user", "parts": {}}, "parts must be a list"),
        ({"role": "user", "parts": [], "colour": 1}, "unknown message keys"),
        ({"role": "user", "parts": [], "extra": []}, "extra must be a JSON object"),
        ({"role": "user", "parts": [{"type": "video"}]}, "unknown part type"),
        ({"role": "user", "parts": [{"text": "no type"}]}, "unknown part type"),
        ({"role": "user", "parts": ["text"]}, "a part must be a JSON object"),
        ({"role": "user", "parts": [{"type": "text"}]}, "text part"),
        ({"role": "user", "parts": [{"type": "text", "text": "a", "x": 1}]}, "text part"),
        (
            {"role": "user", "parts": [{"type": "tool_result", "call_id": "c", "content": 1}]},
            "list",
        ),
        ({"role": "user", "parts": [{"type": "opaque", "wire": "smtp", "data": {}}]}, "wire"),
        ({"role": "user", "parts": [{"type": "text", "text": "a", "cache": []}]}, "JSON object"),
        (
            {"role": "user", "parts": [{"type": "text", "text": "a", "cache": {"ttl": 5}}]},
            "ttl must be a string",
        ),
        (
            {
                "role": "user",
                "parts": [
                    {
                        "type": "tool_result",
                        "call_id": "c",
                        "content": [{"type": "tool_call", "id": "d", "name": "n", "arguments": ""}],
                    }
                ],
            },
            "cannot hold a ToolCall",
        ),
    ],
)
def test_malformed_input_is_refused(data: Any, problem: str) -> None:
    with pytest.raises(SpanFormatError, match=problem):
        decode_message(data)


def test_a_foreign_part_object_cannot_be_encoded() -> None:
    with pytest.raises(TypeError, match="not a canonical part"):
        encode_part("text")  # type: ignore[arg-type]
