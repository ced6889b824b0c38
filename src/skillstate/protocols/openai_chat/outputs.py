"""The shape of the answer a Chat request asks for: ``response_format``, ``n``, ``logprobs``
and ``top_logprobs``.

``response_format`` is ``Params.output_format``: ``{type: "text"}``, ``{type: "json_object"}``
or ``{type: "json_schema", json_schema: {name, description, schema, strict}}``; a type this
wire does not define is kept by name. ``n`` is ``Params.candidates``. ``logprobs: true`` is
``Params.logprobs``, with ``top_logprobs`` alternatives (0 when absent). The client's own
objects are kept in hints and sent back while they still mean the canonical values.

A request of another wire gets a ``json_schema`` named ``output`` when its format has no
name (this wire requires one); ``text``, the default, is not spelled out; log probabilities
are refused (see ``unsupported.check_choices``).
"""

from __future__ import annotations

from typing import Any

from skillstate.conversation import Json, OutputFormat, Params, Request, Wire
from skillstate.protocols.fields import (
    at,
    need_object,
    optional_bool,
    optional_int,
    optional_object,
    optional_str,
    required_object,
    required_str,
)
from skillstate.protocols.openai_chat.nulls import put, sent_null
from skillstate.protocols.unsupported import check_choices, format_refused

KEYS = ("response_format", "n", "logprobs", "top_logprobs")
#: The ``json_schema.name`` of a format from a wire that names none.
DEFAULT_NAME = "output"
_KINDS = ("text", "json_object", "json_schema")


def decode_outputs(body: Json, params: Params, hints: Json, nulls: set[str]) -> None:
    """Read the four fields of ``body`` into ``params``; the originals go to ``hints``."""
    value = body.get("response_format")
    if value is not None:
        params.output_format = decode_format(value, "response_format")
        hints["response_format"] = value
    params.candidates = optional_int(body, "n")
    asked = optional_bool(body, "logprobs")
    top = optional_int(body, "top_logprobs")
    nulls.update(sent_null(body, KEYS))
    params.logprobs = _logprobs(asked, top)
    if asked is not None or top is not None:
        hints["logprobs"] = [asked, top]


def decode_format(value: Any, path: str) -> OutputFormat:
    raw = need_object(value, path)
    kind = required_str(raw, "type", path)
    if kind != "json_schema":
        return OutputFormat(kind)
    inner = required_object(raw, "json_schema", path)
    inner_path = at(path, "json_schema")
    return OutputFormat(
        kind,
        schema=optional_object(inner, "schema", inner_path),
        name=optional_str(inner, "name", inner_path),
        description=optional_str(inner, "description", inner_path),
        strict=optional_bool(inner, "strict", inner_path),
    )


def _logprobs(asked: bool | None, top: int | None) -> int | None:
    return (top or 0) if asked else None


def encode_outputs(req: Request, body: Json, hints: Json, nulls: Any) -> None:
    """Write the fields of ``req.params`` into ``body`` (``hints`` are this wire's, else
    empty)."""
    params = req.params
    if req.source is not Wire.CHAT:
        check_choices(params, req.source, Wire.CHAT, several=True)
    put(body, "response_format", _response_format(req, hints), nulls)
    put(body, "n", params.candidates, nulls)
    kept = hints.get("logprobs")
    if kept is not None and _logprobs(*kept) == params.logprobs:
        asked, top = kept
    else:
        asked = True if params.logprobs is not None else None
        top = params.logprobs or None
    put(body, "logprobs", asked, nulls)
    put(body, "top_logprobs", top, nulls)


def _response_format(req: Request, hints: Json) -> Json | None:
    fmt = req.params.output_format
    original = hints.get("response_format")
    if fmt is None or (original is not None and decode_format(original, "") == fmt):
        return original if fmt is not None else None
    if req.source is Wire.CHAT:
        return encode_format(fmt)
    if fmt.kind == "text":
        return None  # every wire's default
    if fmt.kind not in _KINDS:
        raise format_refused(fmt, req.source, Wire.CHAT)
    return encode_format(fmt)


def encode_format(fmt: OutputFormat) -> Json:
    if fmt.kind != "json_schema":
        return {"type": fmt.kind}
    inner: Json = {"name": fmt.name or DEFAULT_NAME}
    for key, value in (("description", fmt.description), ("schema", fmt.schema)):
        if value is not None:
            inner[key] = value
    if fmt.strict is not None:
        inner["strict"] = fmt.strict
    return {"type": "json_schema", "json_schema": inner}
