"""Host compaction answered by the gateway (issue 3, item 10), on real loopback: the hosts'
compaction requests (tests/fixtures/compaction) sent through the official SDKs, JSON and
streamed. With Σ holding something, the gateway answers from it and the upstream hears
nothing; with Σ empty, or the state lane off, the request goes upstream as any other.
Codex's compaction items come back on later requests and are turned into summaries before
anything goes upstream; ``POST /v1/responses/compact`` is answered the same way."""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import anthropic
import openai
import pytest

from skillstate.conversation import Json, Text
from skillstate.economics.exchange import LOCAL, Exchange
from skillstate.gateway import RunningGateway
from skillstate.protocols import adapter
from skillstate.protocols.openai_responses.compaction import OWN_PREFIX, SUMMARY_NOTE
from skillstate.state.engine import StateEngine
from skillstate.storage.protocols import Change, StateRecord
from skillstate.testing import RecordedRequest, Reply, ScriptedUpstream
from skillstate.testing.gateway import gateway_for

COMPACTION = Path(__file__).parents[1] / "fixtures" / "compaction"
STATE = {
    "objective": "Fix the parser test",
    "plan": {"fix": {"step": "make parse('') return []", "status": "active"}},
    "findings": {"empty": "parse('') returns None today"},
}
STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
_sessions = itertools.count()


def body_of(name: str, *, stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((COMPACTION / name).read_text())
    body["stream"] = stream
    if not stream:
        body.pop("stream_options", None)
        # The anthropic SDK refuses a non-streaming request this large; so does Claude Code's
        # own non-streaming fallback, which asks for less.
        body["max_tokens"] = min(body.get("max_tokens", 0), 8192) or body.get("max_tokens")
    return body


@dataclass
class Rig:
    upstream: ScriptedUpstream
    gateway: RunningGateway
    exchanges: list[Exchange]

    @property
    def engine(self) -> StateEngine:
        engine = self.gateway.context.engine
        assert engine is not None
        return engine

    async def session(self, state: Json) -> dict[str, str]:
        """A fresh session's headers, its Σ set to ``state``."""
        session = f"compact-{next(_sessions)}"
        if state:

            def updater(current: StateRecord) -> Change:
                return current.changed(state=state)

            await self.engine.store.update(session, updater)
        return {"x-skillstate-session": session}


@contextlib.asynccontextmanager
async def rigged(wire: str = "auto") -> AsyncIterator[Rig]:
    reply = Reply(text="A summary written by the upstream model.")
    async with ScriptedUpstream(lambda _: reply) as up, gateway_for(up.url, wire=wire) as gw:
        exchanges: list[Exchange] = []
        gw.context.observers.append(exchanges.append)
        yield Rig(up, gw, exchanges)


def model_requests(rig: Rig) -> list[RecordedRequest]:
    return [r for r in rig.upstream.requests if r.wire is not None]


# --- the official SDKs as the hosts' stand-ins ----------------------------------------------


def _split(body: dict[str, Any], named: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, Any]]:
    kwargs = {k: body[k] for k in named if k in body}
    rest = {k: v for k, v in body.items() if k not in named and k not in ("stream",)}
    return kwargs, rest


async def messages_text(url: str, body: dict[str, Any], headers: dict[str, str]) -> str:
    kwargs, rest = _split(body, ("model", "max_tokens", "messages"))
    async with anthropic.AsyncAnthropic(base_url=url, api_key="sk-ant-test", max_retries=0) as c:
        options: Any = {"extra_body": rest, "extra_headers": headers}
        if body["stream"]:
            async with c.messages.stream(**kwargs, **options) as events:
                final = await events.get_final_message()
        else:
            final = await c.messages.create(**kwargs, **options)
    assert final.stop_reason == "end_turn"
    return "".join(block.text for block in final.content if block.type == "text")


async def responses_final(url: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
    kwargs, rest = _split(body, ("model", "input"))
    async with openai.AsyncOpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0) as c:
        options: Any = {"extra_body": rest, "extra_headers": headers}
        if body["stream"]:
            async with c.responses.stream(**kwargs, **options) as events:
                return await events.get_final_response()
        return await c.responses.create(**kwargs, **options)


async def chat_text(url: str, body: dict[str, Any], headers: dict[str, str]) -> str:
    kwargs, rest = _split(body, ("model", "messages"))
    rest.pop("stream_options", None)
    async with openai.AsyncOpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0) as c:
        options: Any = {"extra_body": rest, "extra_headers": headers}
        if body["stream"]:
            async with c.chat.completions.stream(**kwargs, **options) as events:
                final = await events.get_final_completion()
        else:
            final = await c.chat.completions.create(**kwargs, **options)
    return final.choices[0].message.content or ""


def decoded(item_content: str) -> str:
    assert item_content.startswith(OWN_PREFIX)
    return base64.urlsafe_b64decode(item_content[len(OWN_PREFIX) :]).decode()


def assert_summary(text: str) -> None:
    """The summary the gateway wrote for ``STATE`` and the fixtures' conversation."""
    assert "## Objective\nFix the parser test" in text
    assert "- [active] fix: make parse('') return []" in text
    assert "- Fix the failing test in tests/test_parser.py and run the suite." in text
    assert "python -m pytest -q" in text


# --- answered from Σ, without the upstream --------------------------------------------------


@STREAMS
async def test_claude_codes_compaction_is_answered_from_state(stream: bool) -> None:
    async with rigged() as rig:
        headers = await rig.session(STATE)
        body = body_of("claude-code-compact.json", stream=stream)
        text = await messages_text(rig.gateway.url, body, headers)
        assert model_requests(rig) == []
        assert text.startswith("<summary>\n") and text.endswith("\n</summary>")
        assert_summary(text)
        [exchange] = rig.exchanges
        assert (exchange.upstream, exchange.status, exchange.streamed) == (LOCAL, 200, stream)


@STREAMS
async def test_codex_local_compaction_is_answered_from_state(stream: bool) -> None:
    async with rigged() as rig:
        headers = await rig.session(STATE)
        body = body_of("codex-local-compact.json", stream=stream)
        final = await responses_final(rig.gateway.url, body, headers)
        assert model_requests(rig) == []
        assert final.status == "completed"
        assert_summary(final.output_text)
        assert "<summary>" not in final.output_text


@STREAMS
async def test_codex_remote_compaction_gets_one_compaction_item(stream: bool) -> None:
    async with rigged() as rig:
        headers = await rig.session(STATE)
        body = body_of("codex-remote-compact.json", stream=stream)
        final = await responses_final(rig.gateway.url, body, headers)
        assert model_requests(rig) == []
        [item] = final.output
        assert item.type == "compaction"
        assert_summary(decoded(item.encrypted_content))


@STREAMS
@pytest.mark.parametrize("name", ["opencode-compact.json", "opencode-compact-prior.json"])
async def test_opencodes_compaction_is_answered_from_state(stream: bool, name: str) -> None:
    async with rigged() as rig:
        headers = await rig.session(STATE)
        text = await chat_text(rig.gateway.url, body_of(name, stream=stream), headers)
        assert model_requests(rig) == []
        assert_summary(text)
        assert "<prior-summary>" not in text


async def test_the_reply_says_it_was_answered_by_the_gateway() -> None:
    async with (
        rigged() as rig,
        openai.AsyncOpenAI(
            base_url=rig.gateway.url + "/v1", api_key="sk-test", max_retries=0
        ) as client,
    ):
        headers = await rig.session(STATE)
        body = body_of("opencode-compact.json", stream=False)
        raw = await client.chat.completions.with_raw_response.create(
            model=body["model"], messages=body["messages"], extra_headers=headers
        )
        assert raw.headers["x-skillstate-compaction"] == "opencode"
        assert raw.headers["x-skillstate-session"] == headers["x-skillstate-session"]


async def test_a_reply_answered_by_the_gateway_is_no_upstream_request_in_the_ledger() -> None:
    """Its row names the upstream ``local``: counted as a client request, not as a request to
    a provider, and no time is put down to an upstream."""
    async with (
        rigged() as rig,
        openai.AsyncOpenAI(
            base_url=rig.gateway.url + "/v1", api_key="sk-test", max_retries=0
        ) as client,
        aiohttp.ClientSession() as http,
    ):
        headers = await rig.session(STATE)
        body = body_of("opencode-compact.json", stream=False)
        await client.chat.completions.create(
            model=body["model"], messages=body["messages"], extra_headers=headers
        )
        session = headers["x-skillstate-session"]
        async with http.get(rig.gateway.url + "/cost", params={"session": session}) as reply:
            totals = (await reply.json())["totals"]
        async with http.get(rig.gateway.url + "/cost/requests") as reply:
            rows = [r for r in (await reply.json())["requests"] if r["session"] == session]
    assert rig.upstream.requests == []
    assert (totals["requests"], totals["client_requests"]) == (0, 1)
    assert [(row["upstream"], row["upstream_ms"]) for row in rows] == [(LOCAL, 0.0)]


# --- forwarded ------------------------------------------------------------------------------


@STREAMS
async def test_with_an_empty_state_the_compaction_goes_upstream(stream: bool) -> None:
    async with rigged() as rig:
        headers = await rig.session({"step": 3})
        body = body_of("claude-code-compact.json", stream=stream)
        text = await messages_text(rig.gateway.url, body, headers)
        assert text == "A summary written by the upstream model."
        [forwarded] = model_requests(rig)
        last = forwarded.json["messages"][-1]["content"][-1]["text"]
        assert "create a detailed summary of the conversation so far" in last


async def test_with_the_state_lane_off_the_compaction_goes_upstream() -> None:
    async with rigged() as rig:
        headers = {**await rig.session(STATE), "x-skillstate-bypass": "1"}
        body = body_of("codex-local-compact.json", stream=True)
        final = await responses_final(rig.gateway.url, body, headers)
        assert final.output_text == "A summary written by the upstream model."
        [forwarded] = model_requests(rig)
        assert forwarded.json["input"] == body["input"]


# --- Codex's compaction items on later requests ---------------------------------------------


async def _compaction_item(rig: Rig, headers: dict[str, str]) -> Json:
    body = body_of("codex-remote-compact.json", stream=True)
    final = await responses_final(rig.gateway.url, body, headers)
    item: Json = final.output[0].model_dump(exclude_none=True)
    return item


@pytest.mark.parametrize("wire", ["openai-responses", "anthropic-messages"])
async def test_the_gateways_compaction_item_reaches_the_upstream_as_a_summary(wire: str) -> None:
    async with rigged(wire) as rig:
        headers = await rig.session(STATE)
        item = await _compaction_item(rig, headers)
        task = {"type": "message", "role": "user", "content": "Fix the failing test."}
        body = {"model": "gpt-5.5", "input": [task, item], "stream": True}
        final = await responses_final(rig.gateway.url, body, headers)
        assert final.output_text == "A summary written by the upstream model."
        [forwarded] = model_requests(rig)
        assert "compaction" not in forwarded.body.decode()
        assert forwarded.wire is not None
        messages = adapter(forwarded.wire).decode_request(forwarded.json).messages
        summaries = [p.text for m in messages for p in m.parts if isinstance(p, Text)]
        summary = next(t for t in summaries if t.startswith(SUMMARY_NOTE))
        assert_summary(summary)
        assert "Fix the failing test." in summaries


# --- POST /v1/responses/compact -------------------------------------------------------------


async def _compact(url: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
    """The SDK's ``responses.compact``: the raw reply, parsed with ``.parse()``."""
    kwargs, rest = _split(body, ("model", "input", "instructions"))
    async with openai.AsyncOpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0) as c:
        compact = c.responses.with_raw_response.compact
        return await compact(**kwargs, extra_body=rest, extra_headers=headers)


async def test_the_compact_endpoint_is_answered_from_state() -> None:
    async with rigged() as rig:
        headers = await rig.session(STATE)
        body = json.loads((COMPACTION / "codex-responses-compact.json").read_text())
        raw = await _compact(rig.gateway.url, body, headers)
        compacted = raw.parse()
        assert rig.upstream.requests == []
        assert compacted.object == "response.compaction"
        item = compacted.output[-1]
        sent = [i for i in body["input"] if i.get("role") == "user"]
        assert json.loads(raw.text)["output"][:-1] == sent  # kept exactly as sent
        assert item.type == "compaction"
        assert_summary(decoded(item.encrypted_content))
        assert compacted.usage.input_tokens == 0 and compacted.usage.output_tokens > 0


async def test_with_an_empty_state_the_compact_endpoint_goes_upstream() -> None:
    async with rigged() as rig:
        headers = await rig.session({})
        body = json.loads((COMPACTION / "codex-responses-compact.json").read_text())
        with pytest.raises(openai.NotFoundError):  # the scripted upstream has no such route
            await _compact(rig.gateway.url, body, headers)
        [forwarded] = rig.upstream.requests
        assert (forwarded.method, forwarded.path) == ("POST", "/v1/responses/compact")
        assert forwarded.json == body


async def test_the_compact_endpoint_needs_a_responses_upstream_or_a_state() -> None:
    async with rigged("anthropic-messages") as rig:
        headers = await rig.session({})
        body = json.loads((COMPACTION / "codex-responses-compact.json").read_text())
        with pytest.raises(openai.APIStatusError) as failed:
            await _compact(rig.gateway.url, body, headers)
        assert failed.value.status_code == 501
        assert "speaks anthropic-messages" in failed.value.message
        assert rig.upstream.requests == []


async def test_a_compaction_cut_short_upstream_is_tried_again_never_passed_on() -> None:
    """The compact endpoint passed through reads the upstream's reply whole within the tries:
    a body cut in half is tried again, and the client gets the whole compaction, never the
    half (and with no retry left, a 502 that names it)."""
    from aiohttp import web

    whole = {"object": "response.compaction", "output": [{"type": "compaction", "id": "c1"}]}
    raw = json.dumps(whole).encode()
    served: list[int] = []

    async def compact(request: web.Request) -> web.Response:
        served.append(len(served))
        body = raw[: len(raw) // 2] if len(served) % 2 else raw  # odd calls: cut in half
        return web.Response(body=body, content_type="application/json")

    app = web.Application()
    app.router.add_post("/v1/responses/compact", compact)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    body = json.loads((COMPACTION / "codex-responses-compact.json").read_text())
    headers = {"x-skillstate-mode": "off"}
    try:
        settings = {"retries": 1, "retry_max_wait": 0.01}
        url = f"http://127.0.0.1:{port}"
        async with gateway_for(url, wire="openai-responses", settings=settings) as gw:
            raw_reply = await _compact(gw.url, body, headers)
        assert json.loads(raw_reply.text) == whole and served == [0, 1]
        async with gateway_for(url, wire="openai-responses") as gw:  # no retry: a 502
            with pytest.raises(openai.APIStatusError) as failed:
                await _compact(gw.url, body, headers)
        assert failed.value.status_code == 502 and "cut short" in failed.value.message
    finally:
        await runner.cleanup()
