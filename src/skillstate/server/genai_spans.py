"""One finished client request as OpenTelemetry's GenAI semantic conventions describe it: the
spans of its trace and the points of the two GenAI client metrics, as plain records
(``server.telemetry`` hands them to the SDK).

Contract. Every exchange that carries a ``Trace`` makes:

* the request's own span, ``SERVER``, named ``{gen_ai.operation.name} {gen_ai.request.model}``,
  the child of the client's span where it sent a ``traceparent``: the GenAI attributes with the
  usage of every round summed (the provider's counts, as the ledger's rows hold them),
  ``gen_ai.conversation.id`` (the session), ``gen_ai.response.time_to_first_chunk`` (streams),
  ``gen_ai.conversation.compacted`` on the request that began an epoch, and skillstate's own
  under ``skillstate.*``: mode, the lanes and what each did, the epoch, the rounds and attempts,
  the pass-through estimate and what it saved, the cache verdict, the gateway's overhead;
* one ``CLIENT`` span per upstream attempt (retries and fallbacks each their own, with their
  status), a child of the request's span, whose id is the ``traceparent`` the upstream got;
  an attempt that brought its round's reply carries that round's usage;
* one ``INTERNAL`` span per round the gateway made on its own (``handover``, ``state``: the
  internal tools, ``skill_state`` and ``recall``, answered; ``retry``: paper mode's
  correction), a child of the request's span, with that round's usage.

Content (``gen_ai.input.messages``, ``gen_ai.output.messages``, ``gen_ai.system_instructions``)
only when asked for, and redacted as every view of the gateway is (``outputs.redaction``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from skillstate.conversation import (
    Message,
    Request,
    Response,
    Text,
    ToolCall,
    ToolResult,
    Wire,
)
from skillstate.economics.exchange import LOCAL, Exchange
from skillstate.economics.ledger.recorder import epoch_of
from skillstate.economics.ledger.relayed import decoded_reply, decoded_request
from skillstate.economics.ledger.row import Row
from skillstate.outputs.redaction import redact
from skillstate.protocols import genai
from skillstate.state.tools import RECALL_TOOL
from skillstate.support import jsonio
from skillstate.support.trace import Attempt, Trace, new_span_id

OPERATION = "chat"
"""``gen_ai.operation.name``: every wire the gateway serves is a chat (Chat Completions,
Responses, Messages)."""

Attributes = dict[str, str | int | float | bool]


@dataclass(slots=True)
class SpanRecord:
    """A finished span: ids in hex, times in Unix nanoseconds, ``kind`` an ``SpanKind`` name."""

    name: str
    kind: str
    span_id: str
    parent_id: str | None
    start_ns: int
    end_ns: int
    attributes: Attributes
    error: str | None = None
    """The span's status is an error, and why; None: unset."""


@dataclass(slots=True)
class MetricPoint:
    """One upstream round's figures for ``gen_ai.client.token.usage`` (``tokens``, by
    ``gen_ai.token.type``) and ``gen_ai.client.operation.duration`` (``duration_s``)."""

    duration_s: float
    tokens: dict[str, int]
    attributes: Attributes


@dataclass(slots=True)
class Traced:
    """What one exchange makes."""

    spans: list[SpanRecord] = field(default_factory=list)
    points: list[MetricPoint] = field(default_factory=list)


def provider_of(wire: Wire) -> str:
    """``gen_ai.provider.name`` by the upstream's wire."""
    return "anthropic" if wire is Wire.MESSAGES else "openai"


def traced(exchange: Exchange, rows: list[Row], boundary: bool, *, content: bool) -> Traced:
    """The spans and metric points of ``exchange`` (its ``rows``: the ledger's; ``boundary``:
    it began an epoch; ``content``: capture the messages)."""
    trace = exchange.trace
    if trace is None:
        return Traced()
    base: Attributes = {
        "gen_ai.operation.name": OPERATION,
        "gen_ai.provider.name": provider_of(exchange.upstream_wire),
        "gen_ai.request.model": exchange.model,
    }
    response_model = rows[-1].model if rows else exchange.model
    out = Traced()
    root = _root(exchange, trace, rows, boundary, base, response_model)
    if content:
        root.attributes.update(_content(exchange))
    out.spans.append(root)
    causes = exchange.causes or [""]
    offset = max(0, len(trace.rounds) - len(causes))  # a handover that failed has no cause
    for number, (start, end) in enumerate(trace.rounds):
        cause = "handover" if number < offset else causes[number - offset]
        row = _row(rows, number - offset)
        attempts = [a for a in trace.attempts if a.round == number]
        replied = any(0 < a.status < 400 for a in attempts) and row is not None
        usage = _usage(row) if replied and row is not None else {}
        for attempt in attempts:
            given = usage if 0 < attempt.status < 400 else {}
            out.spans.append(_attempt(trace, attempt, cause, base, response_model, given, end))
        if cause:
            tools = exchange.round_tools.get(number - offset, ())
            out.spans.append(_round(trace, number, cause, tools, start, end, base, usage))
        if replied and row is not None:
            out.points.append(_point(row, end - start, base, response_model))
    return out


def _root(
    exchange: Exchange,
    trace: Trace,
    rows: list[Row],
    boundary: bool,
    base: Attributes,
    response_model: str,
) -> SpanRecord:
    attributes: Attributes = {
        **base,
        "gen_ai.response.model": response_model,
        "gen_ai.conversation.id": exchange.session,
        "gen_ai.conversation.compacted": boundary,
        "http.response.status_code": exchange.status,
        "skillstate.request_id": exchange.request_id,
        "skillstate.mode": exchange.mode,
        "skillstate.session.source": exchange.session_source,
        "skillstate.client_wire": exchange.client_wire.value,
        "skillstate.upstream": exchange.upstream,
        "skillstate.upstream_wire": exchange.upstream_wire.value,
        "skillstate.streamed": exchange.streamed,
        "skillstate.rounds": exchange.rounds,
        "skillstate.attempts": ",".join(str(status) for status in exchange.attempts),
        "skillstate.lanes": exchange.lanes,
        **_lanes(exchange.lanes),
    }
    replied = [row for row in rows if row.status < 400]
    if replied and exchange.upstream != LOCAL:
        attributes.update(_usage_sum(replied))
    epoch = epoch_of(exchange.lanes)
    if epoch is not None:
        attributes["skillstate.epoch"] = epoch
    if exchange.first_byte_s is not None and exchange.streamed:
        attributes["gen_ai.response.time_to_first_chunk"] = exchange.first_byte_s
    if exchange.overhead_s is not None:
        attributes["skillstate.overhead_ms"] = round(exchange.overhead_s * 1000, 3)
    if exchange.upstream == LOCAL:
        attributes["skillstate.answered_locally"] = True
    if exchange.note:
        attributes["skillstate.note"] = exchange.note
    if rows:
        attributes.update(_estimate(rows))
    # A stream is answered (timed) before its last bytes are read: its rounds end later.
    ends = [end for _, end in trace.rounds] + [a.end for a in trace.attempts if a.end]
    end = max([exchange.started + exchange.elapsed_s, *ends])
    error = f"HTTP {exchange.status}" if exchange.status >= 500 else None
    return SpanRecord(
        f"{OPERATION} {exchange.model}".strip(),
        "SERVER",
        trace.span_id,
        trace.parent_id,
        trace.ns(trace.arrived),
        trace.ns(max(end, trace.arrived)),
        attributes,
        error,
    )


def _attempt(
    trace: Trace,
    attempt: Attempt,
    cause: str,
    base: Attributes,
    response_model: str,
    usage: Attributes,
    round_end: float,
) -> SpanRecord:
    attributes: Attributes = {
        **base,
        "skillstate.upstream": attempt.upstream,
        "skillstate.round": attempt.round,
        "skillstate.round.cause": cause or "client",
        **usage,
    }
    error = None
    if attempt.status:
        attributes["http.response.status_code"] = attempt.status
    if attempt.status >= 400 or attempt.status == 0:
        error = f"HTTP {attempt.status}" if attempt.status else "no answer"
        attributes["error.type"] = str(attempt.status) if attempt.status else "no_answer"
    elif usage:
        attributes["gen_ai.response.model"] = response_model
    end = attempt.end if attempt.end is not None else round_end
    return SpanRecord(
        f"{OPERATION} {base['gen_ai.request.model']}".strip(),
        "CLIENT",
        attempt.span_id,
        trace.span_id,
        trace.ns(attempt.start),
        trace.ns(max(end, attempt.start)),
        attributes,
        error,
    )


def _round(
    trace: Trace,
    number: int,
    cause: str,
    tools: tuple[str, ...],
    start: float,
    end: float,
    base: Attributes,
    usage: Attributes,
) -> SpanRecord:
    """A round the gateway sent on its own; a ``state`` round that only continued after
    ``recall`` calls is named ``recall``, and ``skillstate.round.tools`` lists what it
    answered."""
    attributes: Attributes = {
        **base,
        "skillstate.round": number,
        "skillstate.round.cause": cause,
        **usage,
    }
    if tools:
        attributes["skillstate.round.tools"] = ",".join(tools)
    named = RECALL_TOOL if tools and set(tools) == {RECALL_TOOL} else cause
    return SpanRecord(
        f"skillstate.round {named}",
        "INTERNAL",
        new_span_id(),
        trace.span_id,
        trace.ns(start),
        trace.ns(max(end, start)),
        attributes,
    )


def _point(row: Row, duration_s: float, base: Attributes, response_model: str) -> MetricPoint:
    tokens = {"input": row.input, "output": row.output}
    return MetricPoint(duration_s, tokens, {**base, "gen_ai.response.model": response_model})


def _row(rows: list[Row], index: int) -> Row | None:
    return rows[index] if 0 <= index < len(rows) else None


def _usage(row: Row) -> Attributes:
    return {
        genai.INPUT_TOKENS: row.input,
        genai.OUTPUT_TOKENS: row.output,
        genai.CACHE_READ_TOKENS: row.cached_input,
        genai.CACHE_WRITE_TOKENS: row.cache_write,
    }


def _usage_sum(rows: list[Row]) -> Attributes:
    return {
        genai.INPUT_TOKENS: sum(row.input for row in rows),
        genai.OUTPUT_TOKENS: sum(row.output for row in rows),
        genai.CACHE_READ_TOKENS: sum(row.cached_input for row in rows),
        genai.CACHE_WRITE_TOKENS: sum(row.cache_write for row in rows),
    }


def _estimate(rows: list[Row]) -> Attributes:
    """The ledger's pass-through estimate (on the first row) and what the request saved on
    it; the cache verdict of the round that sent the client's request."""
    first = rows[0]
    out: Attributes = {}
    verdicts = [row.cache_verdict for row in rows if row.cause == "" and row.cache_verdict]
    verdict = verdicts[0] if verdicts else first.cache_verdict
    if verdict:
        out["skillstate.cache.verdict"] = verdict
    if first.estimate_basis:
        out["skillstate.estimate.basis"] = first.estimate_basis
    if first.passthrough_input is not None:
        out[genai.PASSTHROUGH_INPUT_TOKENS] = first.passthrough_input
        out[genai.SAVED_INPUT_TOKENS] = first.passthrough_input - sum(r.input for r in rows)
    costs = [row.cost_usd for row in rows]
    if first.passthrough_cost_usd is not None and None not in costs:
        spent = sum(cost for cost in costs if cost is not None)
        out["skillstate.cost_usd"] = spent
        out["skillstate.saved_usd"] = first.passthrough_cost_usd - spent
    return out


def _lanes(summary: str) -> Attributes:
    """What each lane did, from the ``x-skillstate-lanes`` summary (``name=what; ...``)."""
    out: Attributes = {}
    for item in summary.split(";"):
        name, sep, did = item.strip().partition("=")
        if sep and name:
            out[f"skillstate.lane.{name}"] = did
    return out


# --- content, only when asked for ---------------------------------------------------------


def _content(exchange: Exchange) -> Attributes:
    request, response = exchange.request, exchange.response
    relayed = exchange.relayed
    if relayed is not None:
        request = decoded_request(exchange.client_wire, relayed.body)
        response = decoded_reply(relayed.reply) if relayed.reply is not None else None
    out: Attributes = {}
    if request is not None:
        out.update(_input(request))
    if response is not None:
        out["gen_ai.output.messages"] = _json([_message(response.message, _finish(response))])
    return out


def _input(request: Request) -> Attributes:
    out: Attributes = {"gen_ai.input.messages": _json([_message(m) for m in request.messages])}
    if request.system:
        parts = [{"type": "text", "content": _redacted(p.text)} for p in request.system]
        out["gen_ai.system_instructions"] = _json(parts)
    return out


def _message(message: Message, finish: str | None = None) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, Text):
            parts.append({"type": "text", "content": _redacted(part.text)})
        elif isinstance(part, ToolCall):
            arguments = _redacted(part.arguments)
            parts.append(
                {"type": "tool_call", "id": part.id, "name": part.name, "arguments": arguments}
            )
        elif isinstance(part, ToolResult):
            text = "".join(p.text for p in part.content if isinstance(p, Text))
            parts.append(
                {"type": "tool_call_response", "id": part.call_id, "response": _redacted(text)}
            )
    shown: dict[str, Any] = {"role": str(message.role), "parts": parts}
    if finish is not None:
        shown[genai.FINISH_REASON] = finish
    return shown


def _finish(response: Response) -> str:
    return str(response.stop_reason.value) if response.stop_reason is not None else "stop"


def _redacted(text: str) -> str:
    return redact(text).text


def _json(value: Any) -> str:
    return jsonio.dumps_str(value)
