"""Generation parameters of a Responses request.

``max_output_tokens``, ``temperature``, ``top_p``, ``parallel_tool_calls``, ``stream``,
``tool_choice`` and ``reasoning.effort`` are ``Params``; the rest of ``reasoning`` and a tool
choice the model does not name stay in ``extra``; the answer's format and log probabilities:
see ``outputs``. Encoding follows the request's hints ``keys`` and ``nulls`` (which modelled
fields were present, and which of them null) when it came from this wire. A thinking budget
without an effort becomes the nearest effort; stop sequences, which this wire has none of,
raise ``ProtocolError``. A request of this wire sent without a stream (the gateway's own
rounds) loses its ``stream_options``, which the API takes only with one.
"""

from __future__ import annotations

from typing import Any

from skillstate.conversation import Json, Params, ProtocolError, Request, Wire
from skillstate.protocols.fields import (
    optional_bool,
    optional_int,
    optional_number,
    optional_object,
    optional_str,
    without,
)
from skillstate.protocols.openai_responses.outputs import decode_outputs, encode_outputs
from skillstate.protocols.openai_responses.tools import decode_tool_choice, encode_tool_choice

#: Wire key -> Params attribute, for the scalar parameters.
_SCALARS = {
    "max_output_tokens": "max_tokens",
    "temperature": "temperature",
    "top_p": "top_p",
    "parallel_tool_calls": "parallel_tool_calls",
}
#: The request fields these parameters are read from.
KEYS = ("tool_choice", "reasoning", "stream", *_SCALARS)
#: Thinking budgets (tokens) below which each effort is the nearest; above the last, "high".
_BUDGET_EFFORTS = ((4096, "low"), (16384, "medium"))


def decode_params(body: Json, extra: Json, hints: Json) -> Params:
    """The parameters of ``body``; what they leave for ``extra`` and ``hints`` goes there."""
    params = Params(
        max_tokens=optional_int(body, "max_output_tokens"),
        # Numbers stay as they came, so an integer temperature re-encodes as an integer.
        temperature=optional_number(body, "temperature"),
        top_p=optional_number(body, "top_p"),
        stream=bool(optional_bool(body, "stream")),
        parallel_tool_calls=optional_bool(body, "parallel_tool_calls"),
    )
    if body.get("tool_choice") is not None:
        params.tool_choice, kind = decode_tool_choice(body["tool_choice"])
        if params.tool_choice is None:
            extra["tool_choice"] = body["tool_choice"]
        if kind is not None:
            hints["tool_choice_type"] = kind
    reasoning = optional_object(body, "reasoning")
    if reasoning is not None:
        params.effort = optional_str(reasoning, "effort", "reasoning")
        extra["reasoning"] = without(reasoning, "effort")
        hints["effort_key"] = "effort" in reasoning
    decode_outputs(body, params)
    return params


def encode_params(req: Request, body: Json, keys: list[str], nulls: list[str]) -> None:
    """Write the parameters of ``req`` into ``body``; ``keys`` and ``nulls`` are the hints of
    a request of this wire (empty for another wire's)."""
    params = req.params
    if params.stop:
        raise ProtocolError("The Responses API has no stop sequences.", param="stop")
    for key, attr in _SCALARS.items():
        value: Any = getattr(params, attr)
        if value is not None or key in keys:
            body[key] = value
    if params.stream or "stream" in keys:
        body["stream"] = None if not params.stream and "stream" in nulls else params.stream
    if not params.stream and "stream" in keys:
        body.pop("stream_options", None)  # a round the gateway reads whole: the API refuses it
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
