"""OpenTelemetry (docs/observability.md): a hybrid session through the gateway, across an epoch
boundary, on every wire, JSON and stream, as a real OTLP/HTTP receiver gets it (the test's own,
``testing.otlp_receiver``, decoding with the official protobuf messages): one trace per client
request, its ``SERVER`` span the parent of one ``CLIENT`` span per upstream attempt (whose id
the upstream got in its ``traceparent``) and of an ``INTERNAL`` span per round the gateway made
itself (handover, state); the GenAI attributes with the provider's usage; the boundary request
marked compacted; no content unless asked for, and then redacted; the client's trace continued;
a collector that is down costing the requests nothing; the GenAI metrics."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import time
from collections.abc import Mapping
from typing import Any

import aiohttp
import pytest
from shared_sessions import PatchingModel
from tool_loops import ROUTES, tool_loop

from skillstate.gateway import RunningGateway
from skillstate.support.trace import parse_traceparent
from skillstate.testing import RecordedRequest, Reply, ScriptedCall, ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.otlp_receiver import OtlpReceiver, ReceivedSpan
from skillstate.testing.session_view import tool_names

WIRES = pytest.mark.parametrize("wire", sorted(ROUTES))
STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
EAGER = {"lanes": "compaction,state", "collapse": {"min_turns": 2, "keep_recent_turns": 2}}
HEADERS = {"x-skillstate-mode": "hybrid"}
BOUNDARY = 3
STEPS = 5
INPUT, OUTPUT, CACHED = 1234, 56, 300
"""What the scripted provider reports for every reply."""
SECRET = "sk-proj-" + "Q7x" * 16
CONTENT_KEYS = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions")

REF = re.compile(r"ar_[0-9a-f]{24}")


class CountedModel(PatchingModel):
    """``PatchingModel``, reporting the same usage for every reply."""

    def __call__(self, request: RecordedRequest) -> Reply:
        reply = super().__call__(request)
        return dataclasses.replace(
            reply, input_tokens=INPUT, output_tokens=OUTPUT, cached_tokens=CACHED
        )


async def flushed(gateway: RunningGateway) -> None:
    """Until every request's spans left the gateway."""
    context = gateway.context
    assert context.recorder is not None and context.telemetry is not None
    await context.recorder.flush()
    await context.telemetry.flush()


async def hybrid_session(
    gateway: RunningGateway,
    up: ScriptedUpstream,
    wire: str,
    stream: bool,
    *,
    headers: Mapping[str, str] | None = None,
    task: str = "Note every step.",
) -> list[list[RecordedRequest]]:
    """``STEPS`` requests of one session, a collapse asked for before ``BOUNDARY``: what the
    upstream got for each."""
    session = f"otel-{wire}-{stream}"
    outputs: list[tuple[str, str]] = []
    by_step: list[list[RecordedRequest]] = []
    async with aiohttp.ClientSession() as http:
        for step in range(STEPS):
            if step == BOUNDARY:
                assert gateway.context.engine is not None
                await gateway.context.engine.request_collapse(session)
            outputs.append((f"call_{step}", f"output of step {step} " * 40))
            seen = len(up.requests)
            sent = {**HEADERS, "x-skillstate-session": session, **(headers or {})}
            body = tool_loop(wire, stream, task, outputs)
            async with http.post(gateway.url + ROUTES[wire], json=body, headers=sent) as reply:
                assert reply.status == 200, await reply.text()
                await reply.read()
            by_step.append(up.requests[seen:])
    return by_step


def traces(spans: list[ReceivedSpan]) -> dict[str, list[ReceivedSpan]]:
    by_trace: dict[str, list[ReceivedSpan]] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    return by_trace


def root_of(spans: list[ReceivedSpan]) -> ReceivedSpan:
    (root,) = [span for span in spans if span.kind == "SERVER"]
    return root


def sent_span(request: RecordedRequest) -> tuple[str, str]:
    """The trace id and parent span id the upstream got in ``traceparent``."""
    parsed = parse_traceparent(request.headers["traceparent"])
    assert parsed is not None
    return parsed[0], parsed[1]


def no_content(spans: list[ReceivedSpan]) -> None:
    for span in spans:
        assert not set(CONTENT_KEYS) & set(span.attributes), span.name
        for value in span.attributes.values():
            assert "output of step" not in str(value) and "Note every" not in str(value)


@WIRES
@STREAMS
async def test_a_hybrid_session_is_one_trace_per_request_with_its_attempts_and_rounds(
    wire: str, stream: bool
) -> None:
    async with (
        OtlpReceiver() as receiver,
        ScriptedUpstream(CountedModel()) as up,
        gateway_for(up.url, settings={**EAGER, "otel_endpoint": receiver.url}) as gateway,
    ):
        by_step = await hybrid_session(gateway, up, wire, stream)
        await flushed(gateway)
    by_trace = traces(receiver.spans)
    assert len(by_trace) == STEPS  # one trace per client request, each its own
    for step, upstream in enumerate(by_step):
        (trace_id,) = {sent_span(request)[0] for request in upstream}
        spans = by_trace[trace_id]
        root = root_of(spans)
        assert root.parent_id is None and root.service == "skillstate"
        assert all(span.parent_id == root.span_id for span in spans if span is not root)
        assert root.name == f"chat {root.attributes['gen_ai.request.model']}"
        attempts = [span for span in spans if span.kind == "CLIENT"]
        # Each upstream request is one attempt, sent under that attempt's span.
        assert sorted(sent_span(r)[1] for r in upstream) == sorted(a.span_id for a in attempts)
        assert all(a.attributes["http.response.status_code"] == 200 for a in attempts)
        for attempt in attempts:
            assert attempt.attributes["gen_ai.usage.input_tokens"] == INPUT
            assert attempt.attributes["gen_ai.usage.output_tokens"] == OUTPUT
            assert attempt.attributes["gen_ai.usage.cache_read.input_tokens"] == CACHED
            assert root.start_ns <= attempt.start_ns <= attempt.end_ns <= root.end_ns
        rounds = sorted(
            s.attributes["skillstate.round.cause"] for s in spans if s.kind == "INTERNAL"
        )
        attributes = root.attributes
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.provider.name"] == (
            "anthropic" if wire == "messages" else "openai"
        )
        assert attributes["gen_ai.response.model"]
        assert attributes["gen_ai.conversation.id"] == f"otel-{wire}-{stream}"
        assert attributes["gen_ai.usage.input_tokens"] == INPUT * len(upstream)
        assert attributes["gen_ai.usage.output_tokens"] == OUTPUT * len(upstream)
        assert attributes["gen_ai.usage.cache_read.input_tokens"] == CACHED * len(upstream)
        assert attributes["skillstate.mode"] == "hybrid"
        assert attributes["skillstate.rounds"] == len(upstream)
        assert "skillstate.lane.state" in attributes
        assert ("gen_ai.response.time_to_first_chunk" in attributes) is stream
        assert attributes["gen_ai.conversation.compacted"] is (step == BOUNDARY)
        if step < BOUNDARY:
            assert (len(upstream), rounds) == (1, [])  # passed through
        elif step == BOUNDARY:
            assert (len(upstream), rounds) == (3, ["handover", "state"])
            assert attributes["skillstate.epoch"] == 1
        else:
            assert (len(upstream), rounds) == (2, ["state"])
        no_content(spans)


class RecallingModel(CountedModel):
    """``CountedModel``; once offered ``recall`` with a ref in its context (after a boundary),
    it reads that ref back once before going on."""

    def __call__(self, request: RecordedRequest) -> Reply:
        text = request.body.decode()
        refs = REF.findall(text)
        if refs and "recall" in tool_names(request) and "call_recall" not in text:
            call = ScriptedCall("recall", {"ref": refs[0]}, id="call_recall")
            return Reply(calls=[call], input_tokens=INPUT, output_tokens=OUTPUT)
        return super().__call__(request)


async def test_a_round_after_a_recall_is_named_so() -> None:
    """The round the gateway sent after answering the model's ``recall`` is a ``recall``
    round on the trace; one after ``skill_state`` names that tool."""
    async with (
        OtlpReceiver() as receiver,
        ScriptedUpstream(RecallingModel()) as up,
        gateway_for(up.url, settings={**EAGER, "otel_endpoint": receiver.url}) as gateway,
    ):
        await hybrid_session(gateway, up, "chat", False)
        await flushed(gateway)
    rounds = [span for span in receiver.spans if span.kind == "INTERNAL"]
    named = {(span.name, span.attributes.get("skillstate.round.tools")) for span in rounds}
    assert ("skillstate.round recall", "recall") in named
    assert ("skillstate.round state", "skill_state") in named
    assert ("skillstate.round handover", None) in named


async def test_content_is_captured_only_when_asked_for_and_then_redacted() -> None:
    environ = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
    task = f"Note every step. The deploy key is {SECRET}."
    async with (
        OtlpReceiver() as receiver,
        ScriptedUpstream(CountedModel()) as up,
        gateway_for(
            up.url, settings={**EAGER, "otel_endpoint": receiver.url}, environ=environ
        ) as gateway,
    ):
        await hybrid_session(gateway, up, "chat", False, task=task)
        await flushed(gateway)
    roots = [span for span in receiver.spans if span.kind == "SERVER"]
    assert len(roots) == STEPS
    for root in roots:
        shown = root.attributes["gen_ai.input.messages"]
        assert "output of step 0" in shown or "output of step" in shown
        assert "[redacted:openai-key]" in shown and SECRET not in shown
        assert '"role":"assistant"' in root.attributes["gen_ai.output.messages"].replace(" ", "")
    assert all(SECRET not in str(s.attributes) for s in receiver.spans)


@STREAMS
async def test_the_clients_trace_is_continued_and_passed_upstream(stream: bool) -> None:
    trace_id, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    headers = {"traceparent": f"00-{trace_id}-{parent}-01"}
    async with (
        OtlpReceiver() as receiver,
        ScriptedUpstream(CountedModel()) as up,
        gateway_for(up.url, settings={**EAGER, "otel_endpoint": receiver.url}) as gateway,
    ):
        by_step = await hybrid_session(gateway, up, "messages", stream, headers=headers)
        await flushed(gateway)
    assert {sent_span(r)[0] for sent in by_step for r in sent} == {trace_id}
    assert {span.trace_id for span in receiver.spans} == {trace_id}
    roots = [span for span in receiver.spans if span.kind == "SERVER"]
    assert len(roots) == STEPS and {root.parent_id for root in roots} == {parent}
    attempt_ids = {s.span_id for s in receiver.spans if s.kind == "CLIENT"}
    assert {sent_span(r)[1] for sent in by_step for r in sent} == attempt_ids


async def test_the_gen_ai_metrics_reach_the_collector() -> None:
    environ = {"OTEL_METRIC_EXPORT_INTERVAL": "200"}
    async with (
        OtlpReceiver() as receiver,
        ScriptedUpstream(CountedModel()) as up,
        gateway_for(
            up.url, settings={**EAGER, "otel_endpoint": receiver.url}, environ=environ
        ) as gateway,
    ):
        await hybrid_session(gateway, up, "responses", True)
        await flushed(gateway)
        wanted = {"gen_ai.client.token.usage", "gen_ai.client.operation.duration"}
        async with asyncio.timeout(10):
            await receiver.wait_for(lambda: wanted <= {m.name for m in receiver.metrics})
    tokens = [m for m in receiver.metrics if m.name == "gen_ai.client.token.usage"]
    points: list[dict[str, Any]] = [p for m in tokens for p in m.points]
    kinds = {p["gen_ai.token.type"] for p in points}
    assert kinds == {"input", "output"}
    assert all(p["gen_ai.operation.name"] == "chat" for p in points)
    assert tokens[0].unit == "{token}"


async def test_a_collector_that_is_down_costs_the_requests_nothing(
    unused_tcp_port: int,
) -> None:
    """Spans to a port nobody listens on: the gateway finds it down as it starts, and every
    request is answered as without tracing (nothing recorded, no traceparent sent) but for a
    probe every few seconds; an export that fails later says the same; the gateway closes
    without waiting out the exporter's retries."""
    endpoint = f"http://127.0.0.1:{unused_tcp_port}"
    started = time.monotonic()
    async with (
        ScriptedUpstream(CountedModel()) as up,
        gateway_for(up.url, settings={**EAGER, "otel_endpoint": endpoint}) as gateway,
    ):
        telemetry = gateway.context.telemetry
        assert gateway.context.recorder is not None and telemetry is not None
        await telemetry.looked()
        by_step = await hybrid_session(gateway, up, "chat", True)
        await gateway.context.recorder.flush()
        await telemetry.flush()  # the probe's export fails too
        assert telemetry.skipped == STEPS - 1  # one made anyway: a probe of the collector
        sent = [r.headers.get("traceparent") for r in up.requests]
        assert len({parent.split("-")[1] for parent in sent if parent}) == 1
        await hybrid_session(gateway, up, "chat", False)
        await gateway.context.recorder.flush()
        sent = [r.headers.get("traceparent") for r in up.requests]
        probes = len({parent.split("-")[1] for parent in sent if parent})
        assert probes <= 2 and telemetry.skipped == 2 * STEPS - probes  # one every 5 s
    assert [len(sent) for sent in by_step] == [1, 1, 1, 3, 2]
    assert time.monotonic() - started < 10
