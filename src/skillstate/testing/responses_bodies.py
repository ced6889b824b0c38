"""OpenAI Responses bodies and streams, built by hand.

Shapes follow the SDK's ``Response`` and its stream events, and what api.openai.com sends. The
response echoes the request's settings (model, instructions, tools, tool_choice, reasoning,
text, ...), as the real API does and as the SDK's ``Response`` model requires. Output items come
in the order reasoning (a summary, with ``encrypted_content`` when the request's ``include``
asks for it), message, function calls. A stream is::

    response.created, response.in_progress,
    per item: response.output_item.added, <the item's own events>, response.output_item.done,
    response.completed (response.incomplete when the reply stopped at max_tokens)

every event with an ``event:`` line equal to its ``type`` and a ``sequence_number`` counting
from 0. A mid-stream failure sends an ``error`` event after the text and ends the stream.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from skillstate.conversation import Json, Usage
from skillstate.protocols.sse import encode_event
from skillstate.support import jsonio
from skillstate.testing.error_bodies import openai_code
from skillstate.testing.outcome import CREATED, Outcome, json_pieces, text_pieces

#: Builds one numbered event: ``emit(type, **fields)``.
Emit = Callable[..., bytes]


def usage(u: Usage) -> Json:
    """``ResponseUsage``: ``input_tokens`` includes the cached part."""
    return {
        "input_tokens": u.input,
        "input_tokens_details": {
            "cached_tokens": u.cached_input,
            "cache_write_tokens": u.cache_write,
        },
        "output_tokens": u.output,
        "output_tokens_details": {"reasoning_tokens": u.reasoning},
        "total_tokens": u.input + u.output,
    }


def response(o: Outcome) -> Json:
    """The finished ``response`` object (the non-streaming body)."""
    return _response(o, _final_status(o), _items(o, done=True), _reported(o))


def stream(o: Outcome) -> Iterator[bytes]:
    """The SSE events of a streamed answer, one ``bytes`` per event."""
    counter = iter(range(1 << 30))

    def event(kind: str, **fields: Any) -> bytes:
        data = {"type": kind, "sequence_number": next(counter), **fields}
        return encode_event(jsonio.dumps_str(data), kind)

    yield event("response.created", response=_response(o, "in_progress", [], None))
    yield event("response.in_progress", response=_response(o, "in_progress", [], None))
    finals = _items(o, done=True)
    for index, (opening, final) in enumerate(zip(_items(o, done=False), finals, strict=True)):
        yield event("response.output_item.added", output_index=index, item=opening)
        if final["type"] == "reasoning":
            yield from _reasoning_events(event, index, final)
        elif final["type"] == "message":
            yield from _text_events(event, index, final)
            if o.error is not None:
                fields = {"code": openai_code(o.error.kind), "message": o.error.message}
                yield event("error", **fields, param=None)
                return
        else:
            yield from _call_events(event, index, final)
        yield event("response.output_item.done", output_index=index, item=final)
    last = "response.incomplete" if o.stop == "max_tokens" else "response.completed"
    yield event(last, response=_response(o, _final_status(o), finals, _reported(o)))


def _reported(o: Outcome) -> Json | None:
    """The finished response's ``usage``: null when the answer reports none."""
    return usage(o.usage) if o.reported else None


def _reasoning_events(event: Emit, index: int, item: Json) -> Iterator[bytes]:
    text = item["summary"][0]["text"]
    ids = {"item_id": item["id"], "output_index": index, "summary_index": 0}
    empty = {"type": "summary_text", "text": ""}
    yield event("response.reasoning_summary_part.added", **ids, part=empty)
    for piece in text_pieces(text):
        yield event("response.reasoning_summary_text.delta", **ids, delta=piece)
    yield event("response.reasoning_summary_text.done", **ids, text=text)
    yield event("response.reasoning_summary_part.done", **ids, part={**empty, "text": text})


def _text_events(event: Emit, index: int, item: Json) -> Iterator[bytes]:
    text = item["content"][0]["text"]
    ids = {"item_id": item["id"], "output_index": index, "content_index": 0}
    yield event("response.content_part.added", **ids, part=_output_text(""))
    for piece in text_pieces(text):
        yield event("response.output_text.delta", **ids, delta=piece, logprobs=[])
    yield event("response.output_text.done", **ids, text=text, logprobs=[])
    yield event("response.content_part.done", **ids, part=_output_text(text))


def _call_events(event: Emit, index: int, item: Json) -> Iterator[bytes]:
    ids = {"item_id": item["id"], "output_index": index}
    for piece in json_pieces(item["arguments"]):
        yield event("response.function_call_arguments.delta", **ids, delta=piece)
    yield event("response.function_call_arguments.done", **ids, arguments=item["arguments"])


def _output_text(text: str) -> Json:
    return {"type": "output_text", "annotations": [], "logprobs": [], "text": text}


def _final_status(o: Outcome) -> str:
    return "incomplete" if o.stop == "max_tokens" else "completed"


def _items(o: Outcome, *, done: bool) -> list[Json]:
    """The output items, as announced (``done=False``: empty, in progress) or finished."""
    status = ("incomplete" if o.stop == "max_tokens" else "completed") if done else "in_progress"
    items: list[Json] = []
    if o.reasoning is not None:
        summary = [{"type": "summary_text", "text": o.reasoning}] if done else []
        item: Json = {"id": o.reasoning_id, "type": "reasoning", "summary": summary}
        include = o.body.get("include")
        if done and isinstance(include, list) and "reasoning.encrypted_content" in include:
            item["encrypted_content"] = o.signature
        items.append(item)
    if o.text or (not o.calls and o.reasoning is None) or o.error is not None:
        content = [_output_text(o.text)] if done else []
        items.append(
            {
                "id": o.message_id,
                "type": "message",
                "status": status,
                "content": content,
                "role": "assistant",
            }
        )
    for call in o.calls:
        items.append(
            {
                "id": call.item_id,
                "type": "function_call",
                "status": status,
                "arguments": call.arguments if done else "",
                "call_id": call.id,
                "name": call.name,
            }
        )
    return items


def _response(o: Outcome, status: str, output: list[Json], used: Json | None) -> Json:
    body = o.body
    asked = body.get("reasoning")
    reasoning: Json = asked if isinstance(asked, dict) else {}
    return {
        "id": o.id,
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "background": False,
        "completed_at": CREATED if status == "completed" else None,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "max_tool_calls": body.get("max_tool_calls"),
        "model": o.model,
        "output": output,
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"),
        "prompt_cache_key": body.get("prompt_cache_key"),
        "reasoning": {"effort": reasoning.get("effort"), "summary": reasoning.get("summary")},
        "safety_identifier": body.get("safety_identifier"),
        "service_tier": "default",
        "store": body.get("store", True),
        "temperature": body.get("temperature", 1.0),
        "text": body.get("text", {"format": {"type": "text"}, "verbosity": "medium"}),
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools", []),
        "top_logprobs": body.get("top_logprobs", 0),
        "top_p": body.get("top_p", 1.0),
        "truncation": body.get("truncation", "disabled"),
        "usage": used,
        "user": body.get("user"),
        "metadata": body.get("metadata") or {},
    }
