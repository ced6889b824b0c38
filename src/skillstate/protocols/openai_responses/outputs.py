"""The shape of the answer a Responses request asks for: ``text.format``, ``top_logprobs`` and
the ``message.output_text.logprobs`` entry of ``include``.

``text.format`` is ``Params.output_format``: ``{type: "text"}``, ``{type: "json_object"}`` or
``{type: "json_schema", name, description, schema, strict}``; a type this wire does not define
is kept by name. Log probabilities are asked by that ``include`` entry or a ``top_logprobs``
above 0: ``Params.logprobs`` is then ``top_logprobs`` (0 when absent). These fields stay in
``Request.extra``, which this wire re-emits; a canonical value a lane changed is written over
them. This wire has no ``n``.

A request of another wire gets a ``json_schema`` named ``output`` when its format has no name
(this wire requires one); ``text``, the default, is not spelled out; ``n`` > 1 and log
probabilities are refused (see ``unsupported.check_choices``).
"""

from __future__ import annotations

from typing import Any

from skillstate.conversation import Json, OutputFormat, Params, Request, Wire
from skillstate.protocols.unsupported import check_choices, format_refused

LOGPROBS = "message.output_text.logprobs"
#: The ``name`` of a format from a wire that names none.
DEFAULT_NAME = "output"
_KINDS = ("text", "json_object", "json_schema")
_SCHEMA_KEYS = ("name", "description", "schema", "strict")


def decode_outputs(body: Json, params: Params) -> None:
    params.output_format = _format_in(body)
    params.logprobs = _logprobs_in(body)


def _format_in(body: Json) -> OutputFormat | None:
    """The format ``body`` asks for. Read leniently, as the rest of ``extra``: a malformed
    ``text`` is the upstream's to refuse, and reads as none."""
    text = body.get("text")
    raw = text.get("format") if isinstance(text, dict) else None
    kind = raw.get("type") if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or not isinstance(kind, str):
        return None
    if kind != "json_schema":
        return OutputFormat(kind)
    return OutputFormat(
        kind,
        schema=_typed(raw, "schema", dict),
        name=_typed(raw, "name", str),
        description=_typed(raw, "description", str),
        strict=_typed(raw, "strict", bool),
    )


def _typed(raw: Json, key: str, kind: type) -> Any:
    value = raw.get(key)
    return value if isinstance(value, kind) else None


def _logprobs_in(body: Json) -> int | None:
    top = body.get("top_logprobs")
    top = top if isinstance(top, int) and not isinstance(top, bool) else 0
    include = body.get("include")
    if (isinstance(include, list) and LOGPROBS in include) or top > 0:
        return top
    return None


def encode_outputs(req: Request, body: Json) -> None:
    """Write the answer's format and log probabilities of ``req`` into ``body`` (which holds
    this wire's ``extra`` when ``req`` is of this wire)."""
    params = req.params
    if req.source is not Wire.RESPONSES:
        check_choices(params, req.source, Wire.RESPONSES, several=False)
    fmt = params.output_format
    if fmt != _format_in(body):
        _put_format(req, body, fmt)
    if params.logprobs != _logprobs_in(body):
        _put_logprobs(body, params.logprobs)


def _put_format(req: Request, body: Json, fmt: OutputFormat | None) -> None:
    held = body.get("text")
    text: Json = dict(held) if isinstance(held, dict) else {}
    if fmt is None or (fmt.kind == "text" and req.source is not Wire.RESPONSES):
        text.pop("format", None)  # text is every wire's default
    elif fmt.kind not in _KINDS and req.source is not Wire.RESPONSES:
        raise format_refused(fmt, req.source, Wire.RESPONSES)
    else:
        text["format"] = encode_format(fmt)
    if text:
        body["text"] = text
    else:
        body.pop("text", None)


def encode_format(fmt: OutputFormat) -> Json:
    if fmt.kind != "json_schema":
        return {"type": fmt.kind}
    out: Json = {"type": "json_schema", "name": fmt.name or DEFAULT_NAME}
    values: dict[str, Any] = {"description": fmt.description, "schema": fmt.schema}
    out.update((key, value) for key, value in values.items() if value is not None)
    if fmt.strict is not None:
        out["strict"] = fmt.strict
    return out


def _put_logprobs(body: Json, logprobs: int | None) -> None:
    held = body.get("include")
    include = [item for item in held if item != LOGPROBS] if isinstance(held, list) else []
    body.pop("top_logprobs", None)
    if logprobs is not None:
        include.append(LOGPROBS)
        if logprobs:
            body["top_logprobs"] = logprobs
    if include:
        body["include"] = include
    else:
        body.pop("include", None)
