"""``POST /v1/responses`` request bodies to the canonical ``Request`` and back.

``instructions`` is the system text; ``input`` a string (one user message, hinted
``input_string``) or an item list (see ``messages``). ``max_output_tokens``, ``temperature``,
``top_p``, ``stream``, ``parallel_tool_calls``, ``tool_choice`` and ``reasoning.effort`` are
``Params``; every other field (``include``, ``store``, ``prompt_cache_key``, ``text``,
``metadata``, the rest of ``reasoning``...) stays in ``extra``; ``text.format`` and the
log-probability fields are read from it too (see ``outputs``). Hints: ``keys`` (which
modelled fields were present) and ``nulls`` (which of them were null), so an untouched body
re-encodes to the same JSON.

From another wire, a body is built from the canonical fields alone. What it cannot carry:
stop sequences (the Responses API has none) and another wire's opaque items raise
``ProtocolError``. A thinking budget without an effort becomes the nearest effort. Reasoning
with a signature or text becomes a reasoning item (``summary_text`` from the text,
``encrypted_content`` from the signature, an id derived from them); reasoning with neither is
the one thing left out, since nothing of it could be replayed. The upstream only accepts an
``encrypted_content`` it issued itself.
"""

from __future__ import annotations

from typing import Any

from skillstate.conversation import Json, Message, Params, ProtocolError, Request, Text, Wire
from skillstate.protocols.openai_responses import checks
from skillstate.protocols.openai_responses.messages import decode_input, encode_input
from skillstate.protocols.openai_responses.outputs import decode_outputs, encode_outputs
from skillstate.protocols.openai_responses.tools import (
    decode_tool_choice,
    decode_tools,
    encode_tool_choice,
    encode_tools,
)

#: Wire key -> Params attribute, for the scalar parameters.
_SCALARS = {
    "max_output_tokens": "max_tokens",
    "temperature": "temperature",
    "top_p": "top_p",
    "parallel_tool_calls": "parallel_tool_calls",
}
_MODELLED = (
    "model",
    "input",
    "instructions",
    "tools",
    "tool_choice",
    "reasoning",
    "stream",
    *_SCALARS,
)
#: Thinking budgets (tokens) below which each effort is the nearest; above the last, "high".
_BUDGET_EFFORTS = ((4096, "low"), (16384, "medium"))


def decode_request(body: Json) -> Request:
    body = checks.obj(body, "body")
    model = checks.field(body, "model", str, "", required=True)
    if not model:
        raise checks.fail("model", "must not be empty")
    if "input" not in body:
        raise checks.fail("input", "missing required parameter")
    hints: Json = {
        "keys": [key for key in _MODELLED if key in body],
        "nulls": [key for key in _MODELLED if key in body and body[key] is None],
    }
    raw = body["input"]
    if isinstance(raw, str):
        messages = [Message("user", [Text(raw)])]
        hints["input_string"] = True
    else:
        messages = decode_input(checks.array(raw, "input"))
    instructions = checks.field(body, "instructions", str, "")
    extra = checks.without(body, *_MODELLED)
    return Request(
        model=model,
        messages=messages,
        source=Wire.RESPONSES,
        system=[] if instructions is None else [Text(instructions)],
        tools=decode_tools(checks.field(body, "tools", list, "") or []),
        params=_decode_params(body, extra, hints),
        extra=extra,
        hints=hints,
    )


def _decode_params(body: Json, extra: Json, hints: Json) -> Params:
    params = Params(
        max_tokens=checks.integer(body, "max_output_tokens"),
        # Numbers stay as they came, so an integer temperature re-encodes as an integer.
        temperature=checks.number(body, "temperature"),
        top_p=checks.number(body, "top_p"),
        stream=bool(checks.field(body, "stream", bool, "")),
        parallel_tool_calls=checks.field(body, "parallel_tool_calls", bool, ""),
    )
    if body.get("tool_choice") is not None:
        params.tool_choice, kind = decode_tool_choice(body["tool_choice"])
        if params.tool_choice is None:
            extra["tool_choice"] = body["tool_choice"]
        if kind is not None:
            hints["tool_choice_type"] = kind
    reasoning = checks.field(body, "reasoning", dict, "")
    if reasoning is not None:
        params.effort = checks.field(reasoning, "effort", str, "reasoning")
        extra["reasoning"] = checks.without(reasoning, "effort")
        hints["effort_key"] = "effort" in reasoning
    decode_outputs(body, params)
    return params


def encode_request(req: Request) -> Json:
    own = req.source is Wire.RESPONSES
    custom = frozenset(t.name for t in req.tools if t.kind == "custom")
    hints = req.hints if own else {}
    keys: list[str] = hints.get("keys", [])
    nulls: list[str] = hints.get("nulls", [])
    body: Json = dict(req.extra) if own else {}
    body["model"] = req.model
    body["input"] = _encode_input(req, own=own, custom=custom)
    if req.system:
        body["instructions"] = "\n\n".join(part.text for part in req.system)
    elif "instructions" in keys:
        body["instructions"] = None
    if req.tools or "tools" in keys:
        body["tools"] = (
            None if not req.tools and "tools" in nulls else encode_tools(req.tools, own=own)
        )
    _encode_params(req, body, keys, nulls)
    return body


def _encode_input(req: Request, *, own: bool, custom: frozenset[str]) -> str | list[Json]:
    if own and req.hints.get("input_string") and len(req.messages) == 1:
        only = req.messages[0]
        if only.role == "user" and len(only.parts) == 1 and isinstance(only.parts[0], Text):
            return only.parts[0].text
    return encode_input(req.messages, own=own, custom=custom)


def _encode_params(req: Request, body: Json, keys: list[str], nulls: list[str]) -> None:
    params = req.params
    if params.stop:
        raise ProtocolError("The Responses API has no stop sequences.", param="stop")
    for key, attr in _SCALARS.items():
        value: Any = getattr(params, attr)
        if value is not None or key in keys:
            body[key] = value
    if params.stream or "stream" in keys:
        body["stream"] = None if not params.stream and "stream" in nulls else params.stream
    if params.tool_choice is not None:
        kind = req.hints.get("tool_choice_type") if req.source is Wire.RESPONSES else None
        body["tool_choice"] = encode_tool_choice(params.tool_choice, req.tools, kind)
    elif "tool_choice" in keys and "tool_choice" not in body:
        body["tool_choice"] = None
    _encode_reasoning(req, body, keys)
    encode_outputs(req, body)


def _encode_reasoning(req: Request, body: Json, keys: list[str]) -> None:
    effort = req.params.effort
    if effort is None and req.params.thinking_budget is not None:
        effort = next(
            (name for limit, name in _BUDGET_EFFORTS if req.params.thinking_budget < limit),
            "high",
        )
    rest = body.get("reasoning")
    if isinstance(rest, dict):
        if effort is not None or req.hints.get("effort_key"):
            body["reasoning"] = {**rest, "effort": effort}
    elif effort is not None:
        body["reasoning"] = {"effort": effort}
    elif "reasoning" in keys:
        body["reasoning"] = None
