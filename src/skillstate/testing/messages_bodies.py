"""Anthropic Messages bodies and streams, built by hand.

Shapes follow the SDK's ``Message`` and raw stream events, and what api.anthropic.com sends.
Content blocks come in the order thinking (with a signature), text, tool_use. A stream is::

    message_start (usage with the input counts, output_tokens 1),
    per block: content_block_start, content_block_delta*, content_block_stop
      (a ping after the first content_block_start),
    message_delta (stop_reason and the final usage), message_stop

every event with an ``event:`` line equal to its ``type``. A tool_use block opens with
``input: {}`` and streams its input as ``input_json_delta`` fragments. A mid-stream failure
sends an ``error`` event after the text and ends the stream.

Usage: Anthropic's ``input_tokens`` excludes cache reads and writes, which it reports
separately (``cache_read_input_tokens``, ``cache_creation_input_tokens``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from skillstate.conversation import Json, Usage
from skillstate.protocols.sse import encode_event
from skillstate.support import jsonio
from skillstate.testing.outcome import Outcome, json_pieces, text_pieces


def usage(u: Usage, hour: int = 0, output: int | None = None) -> Json:
    """A message's ``usage``: ``hour`` of the cache write had the 1-hour TTL, the rest five
    minutes (``output`` overrides the output count, as ``message_start`` reports only the
    first token)."""
    return {
        **delta_usage(u),
        "cache_creation": {
            "ephemeral_5m_input_tokens": u.cache_write - hour,
            "ephemeral_1h_input_tokens": hour,
        },
        "output_tokens": u.output if output is None else output,
        "service_tier": "standard",
    }


def delta_usage(u: Usage) -> Json:
    """The cumulative counts ``message_delta`` ends a stream with."""
    return {
        "input_tokens": max(0, u.input - u.cached_input - u.cache_write),
        "cache_creation_input_tokens": u.cache_write,
        "cache_read_input_tokens": u.cached_input,
        "output_tokens": u.output,
    }


def message(o: Outcome) -> Json:
    """The non-streaming ``message`` body."""
    return _message(o, _blocks(o), usage(o.usage, o.cache_write_1h) if o.reported else None)


def stream(o: Outcome) -> Iterator[bytes]:
    """The SSE events of a streamed answer, one ``bytes`` per event."""
    opening = usage(o.usage, o.cache_write_1h, output=1) if o.reported else None
    yield _event("message_start", message=_message(o, [], opening, final=False))
    pinged = False
    for index, block in enumerate(_blocks(o)):
        yield _event("content_block_start", index=index, content_block=_opening(block))
        if not pinged:
            yield _event("ping")
            pinged = True
        for delta in _deltas(block):
            yield _event("content_block_delta", index=index, delta=delta)
        if block["type"] == "text" and o.error is not None:
            error = {"type": o.error.kind, "message": o.error.message}
            yield _event("error", error=error)
            return
        yield _event("content_block_stop", index=index)
    if not pinged:
        yield _event("ping")
    stop = {"stop_reason": o.stop, "stop_sequence": _stop_sequence(o)}
    counts = {"usage": delta_usage(o.usage)} if o.reported else {}
    yield _event("message_delta", delta=stop, **counts)
    yield _event("message_stop")


def _event(kind: str, **fields: Any) -> bytes:
    return encode_event(jsonio.dumps_str({"type": kind, **fields}), kind)


def _blocks(o: Outcome) -> list[Json]:
    blocks: list[Json] = []
    if o.reasoning is not None:
        blocks.append({"type": "thinking", "thinking": o.reasoning, "signature": o.signature})
    if o.text or o.error is not None:
        blocks.append({"type": "text", "text": o.text})
    for call in o.calls:
        blocks.append(
            {
                "type": "tool_use",
                "id": call.id,
                "name": call.name,
                "input": jsonio.loads(call.arguments),
            }
        )
    return blocks


def _opening(block: Json) -> Json:
    """A block as ``content_block_start`` announces it: empty, filled in by deltas."""
    if block["type"] == "thinking":
        return {"type": "thinking", "thinking": "", "signature": ""}
    if block["type"] == "text":
        return {"type": "text", "text": ""}
    return {**block, "input": {}}


def _deltas(block: Json) -> Iterator[Json]:
    if block["type"] == "thinking":
        for piece in text_pieces(block["thinking"]):
            yield {"type": "thinking_delta", "thinking": piece}
        yield {"type": "signature_delta", "signature": block["signature"]}
    elif block["type"] == "text":
        for piece in text_pieces(block["text"]):
            yield {"type": "text_delta", "text": piece}
    else:
        # The real API opens every tool input with an empty fragment.
        yield {"type": "input_json_delta", "partial_json": ""}
        for piece in json_pieces(jsonio.dumps_str(block["input"])):
            yield {"type": "input_json_delta", "partial_json": piece}


def _stop_sequence(o: Outcome) -> str | None:
    """The matched stop sequence: the request's first one, when the reply stopped on one."""
    sequences = o.body.get("stop_sequences")
    if o.stop == "stop_sequence" and isinstance(sequences, list) and sequences:
        first = sequences[0]
        return first if isinstance(first, str) else None
    return None


def _message(o: Outcome, content: list[Json], used: Json | None, *, final: bool = True) -> Json:
    """The message object; ``message_start`` sends it unfinished (no content, no stop); no
    ``usage`` when the answer reports none."""
    message: Json = {
        "id": o.id,
        "type": "message",
        "role": "assistant",
        "model": o.model,
        "content": content,
        "stop_reason": o.stop if final else None,
        "stop_sequence": _stop_sequence(o) if final else None,
    }
    if used is not None:
        message["usage"] = used
    return message
