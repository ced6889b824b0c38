"""Generation parameters of a Chat request.

``max_completion_tokens`` and its older synonym ``max_tokens`` both map to
``Params.max_tokens``; the hint ``max_key`` remembers which one the client used (when it sent
both, the other stays in ``extra``). A request of another wire gets ``max_completion_tokens``,
the name OpenAI's current models require. ``stop`` may be a string (hint ``stop_string``) or a
list. ``reasoning_effort`` is ``Params.effort``; another wire's thinking budget without an
effort is given the nearest effort level. With ``stream: true`` a request of another wire always
asks for ``stream_options.include_usage``, so the gateway can account the usage, and so does
one of this wire whose reply the gateway reads in its round loop (``ask_usage``; never a
request in mode off, whose bytes go up as the client sent them); a request of this wire that a
lane or the gateway's own round turned to non-streaming loses its ``stream_options``. The
answer's format, ``n`` and log probabilities: see ``outputs``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from skillstate.conversation import Json, Params, Request, Wire
from skillstate.protocols.fields import (
    at,
    need_list,
    need_str,
    optional_bool,
    optional_int,
    optional_number,
    optional_str,
)
from skillstate.protocols.openai_chat.nulls import nulls_of, put, sent_null
from skillstate.protocols.openai_chat.outputs import KEYS as OUTPUT_KEYS
from skillstate.protocols.openai_chat.outputs import decode_outputs, encode_outputs
from skillstate.protocols.openai_chat.tools import decode_tool_choice, encode_tool_choice

MAX_KEYS = ("max_completion_tokens", "max_tokens")
KNOWN = (
    *MAX_KEYS,
    "temperature",
    "top_p",
    "stop",
    "stream",
    "tool_choice",
    "parallel_tool_calls",
    "reasoning_effort",
    *OUTPUT_KEYS,
)
_SIMPLE: tuple[tuple[str, Callable[[Json, str], Any]], ...] = (
    ("temperature", optional_number),
    ("top_p", optional_number),
    ("parallel_tool_calls", optional_bool),
    ("reasoning_effort", optional_str),
)


def decode_params(body: Json, hints: Json, nulls: set[str]) -> tuple[Params, Json]:
    """The parameters of ``body`` and the ``extra`` they leave (a second max-tokens key, a
    tool choice the model does not name)."""
    values = {key: read(body, key) for key, read in _SIMPLE}
    nullable = [*values, "stream", "tool_choice", "stop"]
    extra: Json = {}
    max_key = next((key for key in MAX_KEYS if key in body), None)
    max_tokens = None
    if max_key is not None:
        hints["max_key"] = max_key
        max_tokens = optional_int(body, max_key)
        extra.update({key: body[key] for key in MAX_KEYS if key in body and key != max_key})
        nullable.append(max_key)
    nulls.update(sent_null(body, nullable))
    stream = optional_bool(body, "stream")
    if stream is not None:
        hints["stream"] = stream
    choice = None
    if body.get("tool_choice") is not None:
        choice = decode_tool_choice(body["tool_choice"], "tool_choice")
        if choice is None:
            extra["tool_choice"] = body["tool_choice"]
        hints["tool_choice"] = body["tool_choice"]
    params = Params(
        max_tokens=max_tokens,
        temperature=values["temperature"],
        top_p=values["top_p"],
        stop=_decode_stop(body, hints),
        stream=bool(stream),
        tool_choice=choice,
        parallel_tool_calls=values["parallel_tool_calls"],
        effort=values["reasoning_effort"],
    )
    decode_outputs(body, params, hints, nulls)
    return params, extra


def _decode_stop(body: Json, hints: Json) -> list[str] | None:
    value = body.get("stop")
    if value is None:
        return None
    if isinstance(value, str):
        hints["stop_string"] = True
        return [value]
    items = need_list(value, "stop")
    return [need_str(item, at("stop", i)) for i, item in enumerate(items)]


def encode_params(req: Request, body: Json) -> None:
    """Write the parameters of ``req`` into ``body``."""
    native = req.source is Wire.CHAT
    hints = req.hints if native else {}
    nulls = nulls_of(hints)
    params = req.params
    put(body, hints.get("max_key", MAX_KEYS[0]), params.max_tokens, nulls)
    put(body, "temperature", params.temperature, nulls)
    put(body, "top_p", params.top_p, nulls)
    stop: Any = params.stop
    if stop is not None and hints.get("stop_string") and len(stop) == 1:
        stop = stop[0]
    put(body, "stop", stop, nulls)
    if params.stream or "stream" in hints:
        body["stream"] = params.stream
    elif "stream" in nulls:
        body["stream"] = None
    if params.stream and not native:
        body["stream_options"] = {"include_usage": True}
    elif not params.stream and hints.get("stream") is True:
        body.pop("stream_options", None)  # a lane turned streaming off: OpenAI refuses these
    put(body, "tool_choice", _tool_choice(req, hints), nulls)
    put(body, "parallel_tool_calls", params.parallel_tool_calls, nulls)
    put(body, "reasoning_effort", params.effort or _effort_for(params.thinking_budget), nulls)
    encode_outputs(req, body, hints, nulls)


def asks_usage(fields: Json) -> bool:
    """Whether a Chat body (or a request's ``extra``, which keeps the field) asks its stream
    for the usage (``stream_options.include_usage``)."""
    options = fields.get("stream_options")
    return isinstance(options, dict) and bool(options.get("include_usage"))


def ask_usage(req: Request) -> Request:
    """``req`` asking for the stream's usage, for a request the gateway reads the reply of
    itself (the client's stream encoder still sends the client only what it asked for). A
    request of another wire asks already (see ``encode_params``)."""
    if not req.params.stream or req.source is not Wire.CHAT:
        return req
    if asks_usage(req.extra):
        return req
    options = req.extra.get("stream_options")
    merged = {**(options if isinstance(options, dict) else {}), "include_usage": True}
    return dataclasses.replace(req, extra={**req.extra, "stream_options": merged})


def _tool_choice(req: Request, hints: Json) -> Any:
    """The client's own tool choice while it still means the same choice, else a fresh one."""
    choice = req.params.tool_choice
    if choice is None:
        return None
    original = hints.get("tool_choice")
    if original is not None and decode_tool_choice(original, "tool_choice") == choice:
        return original
    return encode_tool_choice(choice, req.tools)


def _effort_for(budget: int | None) -> str | None:
    """The effort level nearest a thinking budget of another wire (in tokens)."""
    if budget is None or budget <= 0:
        return None
    if budget < 4096:
        return "low"
    return "medium" if budget < 16384 else "high"
