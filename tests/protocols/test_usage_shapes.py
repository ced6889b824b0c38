"""Provider-reported usage on every wire: replies and streams shaped as the providers send them
(``tests/fixtures/usage``) read as the normalized ``Usage``, and a reply translated to another
wire says the same figures in that wire's fields, checked by that wire's SDK types."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import anthropic.types
import openai.types.chat
import openai.types.responses
import pytest
from pydantic import TypeAdapter

from skillstate.conversation import (
    Accumulator,
    Event,
    Finish,
    Opaque,
    PartEnd,
    PartStart,
    Response,
    Start,
    Usage,
    Wire,
)
from skillstate.protocols import adapter
from skillstate.protocols.sse import SSEDecoder
from skillstate.protocols.streams import EventReader
from skillstate.support.jsonio import loads

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "usage"

#: The turn every fixture reports (see the fixtures' README), as each provider can report it.
ANTHROPIC = Usage(
    input=24 + 8192 + 1536,
    output=410,
    cached_input=8192,
    cache_write=1536,
    reasoning=256,
    cache_write_1h=1024,
)
OPENAI = Usage(input=9752, output=410, cached_input=8192, reasoning=256)
OPENROUTER = dataclasses.replace(OPENAI, cache_write=1536)
#: The web search turn: ``message_delta``'s cumulative totals replace ``message_start``'s.
SEARCH = dataclasses.replace(ANTHROPIC, input=3124 + 8192 + 1536, output=187, reasoning=0)
#: Cut at ``max_output_tokens`` while reasoning.
CAPPED = dataclasses.replace(OPENAI, output=512, reasoning=512)

REPLIES = [
    (Wire.MESSAGES, "anthropic-reply.json", ANTHROPIC),
    (Wire.CHAT, "chat-reply.json", OPENAI),
    (Wire.CHAT, "chat-reply-openrouter.json", OPENROUTER),
    (Wire.RESPONSES, "responses-reply.json", OPENAI),
]
STREAMS = [
    (Wire.MESSAGES, "anthropic-stream.sse", ANTHROPIC),
    (Wire.MESSAGES, "anthropic-stream-cumulative.sse", SEARCH),
    (Wire.CHAT, "chat-stream.sse", OPENAI),
    (Wire.RESPONSES, "responses-stream.sse", OPENAI),
    (Wire.RESPONSES, "responses-stream-incomplete.sse", CAPPED),
]

SDK_REPLY: dict[Wire, TypeAdapter[Any]] = {
    Wire.MESSAGES: TypeAdapter(anthropic.types.Message),
    Wire.CHAT: TypeAdapter(openai.types.chat.ChatCompletion),
    Wire.RESPONSES: TypeAdapter(openai.types.responses.Response),
}
SDK_EVENT: dict[Wire, TypeAdapter[Any]] = {
    Wire.MESSAGES: TypeAdapter(anthropic.types.RawMessageStreamEvent),
    Wire.CHAT: TypeAdapter(openai.types.chat.ChatCompletionChunk),
    Wire.RESPONSES: TypeAdapter(openai.types.responses.ResponseStreamEvent),
}


def _body(name: str) -> Any:
    return loads((FIXTURES / name).read_bytes())


def _events(wire: Wire, raw: bytes, piece: int = 11) -> list[Event]:
    """``raw`` decoded as a relay reads it, in ``piece``-byte chunks."""
    reader = EventReader(wire)
    events: list[Event] = []
    for i in range(0, len(raw), piece):
        events += reader.feed(raw[i : i + piece])
    return events + reader.close()


def _accumulated(wire: Wire, events: list[Event]) -> Response:
    accumulator = Accumulator(wire)
    for event in events:
        accumulator.add(event)
    assert accumulator.finished
    return accumulator.response()


def _encoded(wire: Wire, events: list[Event]) -> bytes:
    encoder = adapter(wire).stream_encoder(None)
    return b"".join(encoder.encode(event) for event in events) + encoder.close()


def _data(wire: Wire, raw: bytes) -> list[Any]:
    """The stream's events as JSON, each one checked by the wire's SDK type."""
    out = []
    for event in SSEDecoder().feed(raw):
        if event.data == "[DONE]" or event.event == "ping":
            continue
        data = loads(event.data)
        SDK_EVENT[wire].validate_python(data)
        out.append(data)
    return out


def _without_server_tools(events: list[Event]) -> list[Event]:
    """The events without Anthropic's server-tool blocks, which no other wire can carry."""
    opaque = {e.index for e in events if isinstance(e, PartStart) and isinstance(e.part, Opaque)}
    return [e for e in events if not (isinstance(e, PartStart | PartEnd) and e.index in opaque)]


def _carried(usage: Usage, wire: Wire) -> Usage:
    """What ``wire`` can say of ``usage``: only this wire breaks the cache writes down by TTL."""
    return usage if wire is Wire.MESSAGES else dataclasses.replace(usage, cache_write_1h=0)


# -- reading -------------------------------------------------------------------------------


@pytest.mark.parametrize(("wire", "name", "usage"), REPLIES)
def test_a_reply_reads_as_the_normalized_usage(wire: Wire, name: str, usage: Usage) -> None:
    assert adapter(wire).decode_response(_body(name)).usage == usage


@pytest.mark.parametrize(("wire", "name", "usage"), STREAMS)
def test_a_stream_ends_with_the_normalized_usage(wire: Wire, name: str, usage: Usage) -> None:
    """The stream's ``Finish`` holds the whole usage (the round loop sums it), and so does the
    response the events add up to."""
    events = _events(wire, (FIXTURES / name).read_bytes())
    finish = events[-1]
    assert isinstance(finish, Finish) and finish.usage == usage
    assert _accumulated(wire, events).usage == usage


def test_message_start_gives_the_prompt_side_with_its_breakdown() -> None:
    start = _events(Wire.MESSAGES, (FIXTURES / "anthropic-stream.sse").read_bytes())[0]
    assert isinstance(start, Start)
    assert start.usage == dataclasses.replace(ANTHROPIC, output=1, reasoning=0)


def test_a_cumulative_message_delta_replaces_what_message_start_said() -> None:
    """Without its cumulative fields the same stream would keep ``message_start``'s prompt
    counts; with them, its totals stand (added to the start's they would count twice)."""
    raw = (FIXTURES / "anthropic-stream-cumulative.sse").read_bytes()
    plain = raw.replace(
        b'"usage":{"input_tokens":3124,"cache_creation_input_tokens":1536,'
        b'"cache_read_input_tokens":8192,',
        b'"usage":{',
    )
    assert plain != raw
    assert _accumulated(Wire.MESSAGES, _events(Wire.MESSAGES, plain)).usage == dataclasses.replace(
        SEARCH, input=ANTHROPIC.input
    )
    assert _accumulated(Wire.MESSAGES, _events(Wire.MESSAGES, raw)).usage == SEARCH


@pytest.mark.parametrize(("wire", "name", "usage"), REPLIES)
def test_a_reply_reencodes_on_its_own_wire_as_sent(wire: Wire, name: str, usage: Usage) -> None:
    body = _body(name)
    assert adapter(wire).encode_response(adapter(wire).decode_response(body), None) == body


# -- writing another wire's shape ----------------------------------------------------------

CHAT_FROM_ANTHROPIC = {
    "prompt_tokens": 9752,
    "completion_tokens": 410,
    "total_tokens": 10162,
    "prompt_tokens_details": {"cached_tokens": 8192, "cache_write_tokens": 1536},
    "completion_tokens_details": {"reasoning_tokens": 256},
}
RESPONSES_FROM_ANTHROPIC = {
    "input_tokens": 9752,
    "input_tokens_details": {"cached_tokens": 8192, "cache_write_tokens": 1536},
    "output_tokens": 410,
    "output_tokens_details": {"reasoning_tokens": 256},
    "total_tokens": 10162,
}
MESSAGES_FROM_OPENAI = {
    "input_tokens": 1560,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 8192,
    "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
    "output_tokens": 410,
    "output_tokens_details": {"thinking_tokens": 256},
}
MESSAGES_FROM_OPENROUTER = {
    **MESSAGES_FROM_OPENAI,
    "input_tokens": 24,
    "cache_creation_input_tokens": 1536,
    "cache_creation": {"ephemeral_5m_input_tokens": 1536, "ephemeral_1h_input_tokens": 0},
}
CHAT_FROM_RESPONSES = {
    **CHAT_FROM_ANTHROPIC,
    "prompt_tokens_details": {"cached_tokens": 8192},
}
RESPONSES_FROM_CHAT = {
    **RESPONSES_FROM_ANTHROPIC,
    "input_tokens_details": {"cached_tokens": 8192, "cache_write_tokens": 0},
}

TRANSLATED_REPLIES = [
    (Wire.MESSAGES, "anthropic-reply.json", Wire.CHAT, CHAT_FROM_ANTHROPIC),
    (Wire.MESSAGES, "anthropic-reply.json", Wire.RESPONSES, RESPONSES_FROM_ANTHROPIC),
    (Wire.CHAT, "chat-reply.json", Wire.MESSAGES, MESSAGES_FROM_OPENAI),
    (Wire.CHAT, "chat-reply-openrouter.json", Wire.MESSAGES, MESSAGES_FROM_OPENROUTER),
    (Wire.CHAT, "chat-reply.json", Wire.RESPONSES, RESPONSES_FROM_CHAT),
    (Wire.RESPONSES, "responses-reply.json", Wire.MESSAGES, MESSAGES_FROM_OPENAI),
    (Wire.RESPONSES, "responses-reply.json", Wire.CHAT, CHAT_FROM_RESPONSES),
]


@pytest.mark.parametrize(("up", "name", "client", "shown"), TRANSLATED_REPLIES)
def test_a_translated_reply_says_the_usage_in_the_client_wire_fields(
    up: Wire, name: str, client: Wire, shown: dict[str, Any]
) -> None:
    decoded = adapter(up).decode_response(_body(name))
    body = adapter(client).encode_response(decoded, None)
    SDK_REPLY[client].validate_python(body)
    assert body["usage"] == shown
    assert adapter(client).decode_response(body).usage == _carried(decoded.usage, client)


def _usage_shown(wire: Wire, data: list[Any]) -> list[Any]:
    """Where each wire's stream says its usage: the Chat usage chunk (empty choices), the
    Responses terminal event, Anthropic's ``message_start`` and ``message_delta``."""
    if wire is Wire.CHAT:
        assert data[-1]["choices"] == []
        assert all(chunk["usage"] is None for chunk in data[:-1])
        return [data[-1]["usage"]]
    if wire is Wire.RESPONSES:
        return [data[-1]["response"]["usage"]]
    start = next(d for d in data if d["type"] == "message_start")
    delta = next(d for d in data if d["type"] == "message_delta")
    return [start["message"]["usage"], delta["usage"]]


ZERO_START = {
    "input_tokens": 0,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
    "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
    "output_tokens": 0,
}
TRANSLATED_STREAMS = [
    (Wire.MESSAGES, "anthropic-stream.sse", Wire.CHAT, [CHAT_FROM_ANTHROPIC]),
    (Wire.MESSAGES, "anthropic-stream.sse", Wire.RESPONSES, [RESPONSES_FROM_ANTHROPIC]),
    (
        Wire.MESSAGES,
        "anthropic-stream-cumulative.sse",
        Wire.RESPONSES,
        [
            {
                "input_tokens": 12852,
                "input_tokens_details": {"cached_tokens": 8192, "cache_write_tokens": 1536},
                "output_tokens": 187,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 13039,
            }
        ],
    ),
    (
        Wire.CHAT,
        "chat-stream.sse",
        Wire.MESSAGES,
        [
            ZERO_START,
            {
                "input_tokens": 1560,
                "cache_read_input_tokens": 8192,
                "output_tokens": 410,
                "output_tokens_details": {"thinking_tokens": 256},
            },
        ],
    ),
    (Wire.CHAT, "chat-stream.sse", Wire.RESPONSES, [RESPONSES_FROM_CHAT]),
    (Wire.RESPONSES, "responses-stream.sse", Wire.CHAT, [CHAT_FROM_RESPONSES]),
    (
        Wire.RESPONSES,
        "responses-stream-incomplete.sse",
        Wire.MESSAGES,
        [
            ZERO_START,
            {
                "input_tokens": 1560,
                "cache_read_input_tokens": 8192,
                "output_tokens": 512,
                "output_tokens_details": {"thinking_tokens": 512},
            },
        ],
    ),
]


@pytest.mark.parametrize(("up", "name", "client", "shown"), TRANSLATED_STREAMS)
def test_a_translated_stream_says_the_usage_in_the_client_wire_fields(
    up: Wire, name: str, client: Wire, shown: list[Any]
) -> None:
    events = _without_server_tools(_events(up, (FIXTURES / name).read_bytes()))
    raw = _encoded(client, events)
    assert _usage_shown(client, _data(client, raw)) == shown
    again = _accumulated(client, _events(client, raw))
    assert again.usage == _carried(_accumulated(up, events).usage, client)


# -- the breakdown follows the figures -----------------------------------------------------


def test_summed_rounds_write_the_breakdown_anew() -> None:
    """A reply whose usage the round loop summed says the sum in its breakdown too; the
    provider's own one while the figures are untouched."""
    decoded = adapter(Wire.MESSAGES).decode_response(_body("anthropic-reply.json"))
    decoded.usage = decoded.usage + decoded.usage
    usage = adapter(Wire.MESSAGES).encode_response(decoded, None)["usage"]
    assert usage["cache_creation_input_tokens"] == 3072
    assert usage["cache_creation"] == {
        "ephemeral_5m_input_tokens": 1024,
        "ephemeral_1h_input_tokens": 2048,
    }
    assert (usage["input_tokens"], usage["cache_read_input_tokens"]) == (48, 16384)


def test_a_stream_with_summed_usage_ends_with_the_sum() -> None:
    """What the round loop sends after two rounds: the last round's ``Finish`` with the sum."""
    events = _events(Wire.MESSAGES, (FIXTURES / "anthropic-stream.sse").read_bytes())
    finish = events[-1]
    assert isinstance(finish, Finish) and finish.usage is not None
    events[-1] = dataclasses.replace(finish, usage=finish.usage + finish.usage)
    raw = _encoded(Wire.MESSAGES, events)
    assert _accumulated(Wire.MESSAGES, _events(Wire.MESSAGES, raw)).usage == ANTHROPIC + ANTHROPIC
    delta = _usage_shown(Wire.MESSAGES, _data(Wire.MESSAGES, raw))[1]
    assert delta["cache_creation"] == {
        "ephemeral_5m_input_tokens": 1024,
        "ephemeral_1h_input_tokens": 2048,
    }


def test_usages_add_every_figure() -> None:
    total = ANTHROPIC + SEARCH
    assert total == Usage(
        input=ANTHROPIC.input + SEARCH.input,
        output=410 + 187,
        cached_input=2 * 8192,
        cache_write=2 * 1536,
        reasoning=256,
        cache_write_1h=2 * 1024,
    )
