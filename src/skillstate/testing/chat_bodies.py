"""OpenAI Chat Completions bodies and streams, built by hand.

Shapes follow the SDK's ``ChatCompletion`` and ``ChatCompletionChunk`` and what api.openai.com
sends: a first chunk with the role, content deltas, tool-call deltas (the first per call holds
``id``, ``type`` and ``name``; later ones only argument fragments), a chunk with
``finish_reason``, then, with ``stream_options.include_usage``, a usage chunk whose ``choices``
is empty (every earlier chunk carrying ``"usage": null``), and ``data: [DONE]``. Reasoning is
sent as ``reasoning_content``, the field DeepSeek, vLLM and llama.cpp use (OpenAI's own Chat API
does not return reasoning text). A mid-stream error is a ``data: {"error": {...}}`` event and no
``[DONE]``.
"""

from __future__ import annotations

from collections.abc import Iterator

from skillstate.conversation import Json, Usage
from skillstate.protocols.sse import encode_event
from skillstate.support import jsonio
from skillstate.testing.error_bodies import openai_error_object
from skillstate.testing.outcome import CREATED, Outcome, json_pieces, text_pieces

FINGERPRINT = "fp_scripted"
_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}


def usage(u: Usage) -> Json:
    """``CompletionUsage``: ``prompt_tokens`` includes the cached part."""
    prompt_details: Json = {"cached_tokens": u.cached_input, "audio_tokens": 0}
    if u.cache_write:
        prompt_details["cache_write_tokens"] = u.cache_write
    return {
        "prompt_tokens": u.input,
        "completion_tokens": u.output,
        "total_tokens": u.input + u.output,
        "prompt_tokens_details": prompt_details,
        "completion_tokens_details": {
            "reasoning_tokens": u.reasoning,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def completion(o: Outcome) -> Json:
    """A non-streaming ``chat.completion``."""
    message: Json = {
        "role": "assistant",
        "content": o.text if o.text or not o.calls else None,
        "refusal": None,
        "annotations": [],
    }
    if o.reasoning is not None:
        message["reasoning_content"] = o.reasoning
    if o.calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in o.calls
        ]
    return {
        "id": o.id,
        "object": "chat.completion",
        "created": CREATED,
        "model": o.model,
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": _FINISH[o.stop]}
        ],
        **({"usage": usage(o.usage)} if o.reported else {}),
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT,
    }


def stream(o: Outcome) -> Iterator[bytes]:
    """The SSE events of a streamed answer, one ``bytes`` per event."""
    options = o.body.get("stream_options")
    include_usage = isinstance(options, dict) and options.get("include_usage") is True

    def chunk(delta: Json, finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return _event(o, [choice], include_usage, None)

    yield chunk({"role": "assistant", "content": "", "refusal": None})
    for piece in text_pieces(o.reasoning or ""):
        yield chunk({"reasoning_content": piece})
    for piece in text_pieces(o.text):
        yield chunk({"content": piece})
    if o.error is not None:
        error = openai_error_object(o.error.kind, o.error.message)
        yield encode_event(jsonio.dumps_str({"error": error}))
        return
    for index, call in enumerate(o.calls):
        opening = {"index": index, "id": call.id, "type": "function"}
        yield chunk({"tool_calls": [{**opening, "function": {"name": call.name, "arguments": ""}}]})
        for piece in json_pieces(call.arguments):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, _FINISH[o.stop])
    if include_usage and o.reported:
        yield _event(o, [], True, usage(o.usage))
    yield encode_event("[DONE]")


def _event(o: Outcome, choices: list[Json], include_usage: bool, used: Json | None) -> bytes:
    data: Json = {
        "id": o.id,
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": o.model,
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT,
        "choices": choices,
    }
    if include_usage:
        data["usage"] = used
    return encode_event(jsonio.dumps_str(data))
