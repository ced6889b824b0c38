"""What the gateway answers itself is seen: every refusal, and every answer of its own routes,
is one ``-v`` line on ``skillstate.requests`` and a count by reason in ``/metrics``; a forwarded
request is neither."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp
import pytest

from skillstate.server.local_answers import LocalAnswer, line, reason_for
from skillstate.testing import ScriptedUpstream
from skillstate.testing.gateway import gateway_for

ROUTES = {
    "chat": "/v1/chat/completions",
    "responses": "/v1/responses",
    "messages": "/v1/messages",
}
BODIES = {
    "chat": {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
    "responses": {"model": "m", "input": "hi"},
    "messages": {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]},
}
JSON = {"content-type": "application/json"}
TOKEN = "local-answers-token-0123456789"
LOGGER = "skillstate.requests"


def _counted(metrics: str, name: str, **labels: str) -> float:
    """The value of one sample of ``metrics`` (0 when absent)."""
    shown = ",".join(f'{key}="{value}"' for key, value in labels.items())
    found = re.search(rf"^{name}\{{{re.escape(shown)}\}} (\S+)$", metrics, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == LOGGER]


async def _metrics(session: aiohttp.ClientSession, url: str, **headers: str) -> str:
    async with session.get(url + "/metrics", headers=headers) as reply:
        assert reply.status == 200
        return await reply.text()


async def _post(
    session: aiohttp.ClientSession, url: str, data: bytes, headers: dict[str, str]
) -> int:
    async with session.post(url, data=data, headers=headers) as reply:
        await reply.read()
        return reply.status


@pytest.mark.parametrize("route", list(ROUTES))
async def test_each_refusal_of_a_body_is_logged_and_counted(
    route: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    path = ROUTES[route]
    body = json.dumps(BODIES[route]).encode()
    cases = [
        (b'{"pad": "' + b"x" * 4096 + b'"}', JSON, 413, "body_too_large"),
        (b"{not json", JSON, 400, "invalid_json"),
        (b"", JSON, 400, "empty_body"),
        (body, {"content-type": "text/plain"}, 415, "unsupported_content_type"),
        (body, {**JSON, "x-skillstate-lanes": "nope"}, 400, "invalid_header"),
    ]
    settings = {"max_body_bytes": 2048}
    async with (
        ScriptedUpstream() as up,
        gateway_for(up.url, settings=settings) as gw,
        aiohttp.ClientSession() as session,
    ):
        for data, headers, status, _ in cases:
            assert await _post(session, gw.url + path, data, headers) == status
        metrics = await _metrics(session, gw.url)
    assert up.requests == []
    lines = _lines(caplog)
    for _, _, status, reason in cases:
        assert _counted(metrics, "skillstate_refused_total", reason=reason, status=str(status))
        expected = f"refused POST {path} status={status} reason={reason} "
        assert any(line.startswith(expected) for line in lines), (expected, lines)
    (too_large,) = [line for line in lines if "reason=body_too_large" in line]
    assert re.search(r" \d+\.\dms \(request body is over .*max_body_bytes", too_large)


@pytest.mark.parametrize("route", list(ROUTES))
async def test_a_model_no_upstream_serves_and_an_unknown_url_are_seen(
    route: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    async with ScriptedUpstream() as up:
        config = tmp_path / "skillstate.toml"
        config.write_text(f'[[upstreams]]\nname = "u"\nbase_url = "{up.url}"\nmodels = ["x*"]\n')
        async with (
            gateway_for(config_path=str(config)) as gw,
            aiohttp.ClientSession() as session,
        ):
            body = json.dumps(BODIES[route]).encode()
            assert await _post(session, gw.url + ROUTES[route], body, JSON) == 404
            assert await _post(session, gw.url + ROUTES[route] + "/nothing", body, JSON) == 404
            metrics = await _metrics(session, gw.url)
    assert _counted(metrics, "skillstate_refused_total", reason="model_not_served", status="404")
    assert _counted(metrics, "skillstate_refused_total", reason="unknown_path", status="404")
    lines = _lines(caplog)
    assert any(f"POST {ROUTES[route]} status=404 reason=model_not_served" in x for x in lines)
    assert any(f"POST {ROUTES[route]}/nothing status=404 reason=unknown_path" in x for x in lines)


async def test_the_guards_refusals_are_seen(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    environ = {"SKILLSTATE_AUTH_TOKEN": TOKEN}
    async with (
        ScriptedUpstream() as up,
        gateway_for(up.url, environ=environ) as gw,
        aiohttp.ClientSession() as session,
    ):
        body = json.dumps(BODIES["chat"]).encode()
        assert await _post(session, gw.url + ROUTES["chat"], body, JSON) == 401
        foreign = {**JSON, "x-skillstate-token": TOKEN, "Host": "evil.example"}
        assert await _post(session, gw.url + ROUTES["chat"], body, foreign) == 403
        page = {**JSON, "x-skillstate-token": TOKEN, "Origin": "http://evil.example"}
        assert await _post(session, gw.url + ROUTES["messages"], body, page) == 403
        metrics = await _metrics(session, gw.url, **{"x-skillstate-token": TOKEN})
    assert up.requests == []
    assert _counted(metrics, "skillstate_refused_total", reason="no_token", status="401")
    assert _counted(metrics, "skillstate_refused_total", reason="host_not_allowed", status="403")
    assert _counted(metrics, "skillstate_refused_total", reason="origin_not_allowed", status="403")
    lines = _lines(caplog)
    assert any(line.startswith("refused POST /v1/chat/completions status=401 ") for line in lines)
    assert not any(TOKEN in line for line in lines)


async def test_headers_too_large_are_seen(caplog: pytest.LogCaptureFixture) -> None:
    """Refused by the HTTP parser before any middleware: still one line and one count."""
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    async with gateway_for(None) as gw, aiohttp.ClientSession() as session:
        parts = urlsplit(gw.url)
        assert parts.hostname and parts.port
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        head = b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n"
        writer.write(head)
        await writer.drain()
        answer = await reader.read()
        writer.close()
        assert answer.split(b" ", 2)[1] == b"431"
        metrics = await _metrics(session, gw.url)
    assert _counted(metrics, "skillstate_refused_total", reason="headers_too_large", status="431")
    assert any(
        line.startswith("refused POST /v1/messages status=431 reason=headers_too_large ")
        for line in _lines(caplog)
    )


async def test_own_answers_are_seen_and_a_forwarded_request_is_not(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The model list and a token count made here are the gateway's own answers; a forwarded
    request keeps its one exchange line and adds nothing to these counters."""
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    async with (
        ScriptedUpstream() as up,
        gateway_for(up.url, wire="openai-chat") as gw,  # count_tokens: counted here
        aiohttp.ClientSession() as session,
    ):
        async with session.get(gw.url + "/v1/models") as reply:
            assert reply.status == 200
        counted = json.dumps(BODIES["messages"]).encode()
        assert await _post(session, gw.url + "/v1/messages/count_tokens", counted, JSON) == 200
        before = len(_lines(caplog))
        body = json.dumps(BODIES["chat"]).encode()
        assert await _post(session, gw.url + ROUTES["chat"], body, JSON) == 200
        metrics = await _metrics(session, gw.url)
    assert _counted(metrics, "skillstate_local_answers_total", reason="models_listed") == 1
    assert _counted(metrics, "skillstate_local_answers_total", reason="tokens_counted") == 1
    assert "skillstate_refused_total{" not in metrics
    lines = _lines(caplog)
    assert any(
        line.startswith("answered GET /v1/models status=200 reason=models_listed ")
        for line in lines
    )
    forwarded = lines[before:]
    assert not any(line.startswith(("refused ", "answered POST")) for line in forwarded)
    assert any("upstream=default status=200" in line for line in forwarded)


def test_reasons_and_the_line() -> None:
    assert reason_for(413) == "body_too_large" and reason_for(418) == "client_error"
    assert reason_for(599) == "gateway_error"
    answer = LocalAnswer("body_too_large", "too big")
    assert line("POST", "/v1/messages", 413, answer, 0.0451) == (
        "refused POST /v1/messages status=413 reason=body_too_large 45.1ms (too big)"
    )
    assert line("GET", "/health", 200, LocalAnswer("health"), 0.002) == (
        "answered GET /health status=200 reason=health 2.0ms"
    )
