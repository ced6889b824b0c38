"""Who may use the gateway: Host and Origin checks (DNS rebinding, cross-site requests), JSON-only
bodies, the gateway's own token, and the refusal to listen off loopback without one. Real
gateways on loopback in front of the scripted upstream, real clients."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import anthropic
import openai
import pytest

from skillstate.config import load_settings
from skillstate.gateway import running
from skillstate.server.guard import Exposed, Guard, host_name, is_loopback
from skillstate.testing import Reply, ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.policies import Script

TOKEN = "gateway-token-0123456789abcdef"
GATEWAY_KEY = "sk-gateway-held-key-0123456789"
PROVIDER_KEY = "sk-ant-api03-client-own-key-0123"
CHAT = {"model": "test-model", "messages": [{"role": "user", "content": "hi"}]}
JSON_TYPE = {"content-type": "application/json"}


async def _call(
    method: str, url: str, *, data: bytes | None = None, **headers: str
) -> tuple[int, dict[str, str], Any]:
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, url, data=data, headers=headers) as reply,
    ):
        raw = await reply.read()
        return reply.status, dict(reply.headers), json.loads(raw) if raw else None


def _chat(**headers: str) -> dict[str, str]:
    return {"content-type": "application/json", **headers}


# --- Host: DNS rebinding ---------------------------------------------------------------------


async def test_a_foreign_host_is_refused_before_anything_reaches_the_upstream() -> None:
    environ = {"SKILLSTATE_API_KEY": GATEWAY_KEY}
    async with ScriptedUpstream() as up, gateway_for(up.url, environ=environ) as gw:
        body = json.dumps(CHAT).encode()
        # What a rebound page sends: its own name, with the gateway's port.
        port = gw.url.rsplit(":", 1)[1]
        host = f"attacker.example:{port}"
        status, _, error = await _call(
            "POST", gw.url + "/v1/chat/completions", data=body, **_chat(Host=host)
        )
        assert status == 403
        assert "attacker.example" in error["error"]["message"]
        for path in ("/state", "/health", "/v1/models", "/"):
            status, _, _ = await _call("GET", gw.url + path, Host=host)
            assert status == 403, path
        # Anthropic's shape on its own route.
        status, _, error = await _call(
            "POST", gw.url + "/v1/messages", data=b"{}", **_chat(Host=host)
        )
        assert status == 403 and error["type"] == "error"
        assert error["error"]["type"] == "permission_error"
        assert up.requests == []


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "LOCALHOST.", "127.0.0.2", "[::1]"])
async def test_loopback_names_are_served(host: str) -> None:
    async with ScriptedUpstream() as up, gateway_for(up.url) as gw:
        port = gw.url.rsplit(":", 1)[1]
        status, _, _ = await _call("GET", gw.url + "/state", Host=f"{host}:{port}")
        assert status == 200


async def test_allowed_hosts_adds_names_and_a_star_allows_any() -> None:
    async with ScriptedUpstream() as up:
        async with gateway_for(up.url, settings={"allowed_hosts": "gw.lan"}) as gw:
            assert (await _call("GET", gw.url + "/state", Host="gw.lan:1"))[0] == 200
            assert (await _call("GET", gw.url + "/state", Host="other.lan"))[0] == 403
            assert (await _call("GET", gw.url + "/state", Host="10.1.2.3"))[0] == 403
        async with gateway_for(up.url, settings={"allowed_hosts": "*"}) as gw:
            assert (await _call("GET", gw.url + "/state", Host="other.lan"))[0] == 200


def test_host_names_lose_port_brackets_and_case() -> None:
    assert host_name("LocalHost:8789") == "localhost"
    assert host_name("[::1]:8789") == "::1"
    assert host_name("gw.lan.") == "gw.lan"
    assert host_name("10.0.0.1") == "10.0.0.1"
    guard = Guard(bound="0.0.0.0", token=TOKEN)
    assert guard.host_allowed("192.168.1.9:8789")  # a wildcard bind: any address literal
    assert not guard.host_allowed("rebound.example:8789")  # never a name it was not given
    assert guard.host_allowed(None)  # HTTP/1.0: nothing named, nothing rebound


# --- Origin: cross-site requests -------------------------------------------------------------


async def test_a_cross_site_post_is_refused_and_spends_no_key() -> None:
    """A web page's ``fetch(gateway, {method: "POST", mode: "no-cors", body})``: a text/plain
    body and the page's Origin, no preflight."""
    environ = {"SKILLSTATE_API_KEY": GATEWAY_KEY}
    async with ScriptedUpstream() as up, gateway_for(up.url, environ=environ) as gw:
        body = json.dumps(CHAT).encode()
        for content_type in ("text/plain", "application/json"):
            status, headers, error = await _call(
                "POST",
                gw.url + "/v1/chat/completions",
                data=body,
                **{"content-type": content_type, "Origin": "https://evil.example"},
            )
            assert status == 403
            assert "evil.example" in error["error"]["message"]
            assert "access-control-allow-origin" not in {k.lower() for k in headers}
        for method, path in (("DELETE", "/state?session=s"), ("POST", "/state/collapse?session=s")):
            status, _, _ = await _call(method, gw.url + path, Origin="https://evil.example")
            assert status == 403
        status, _, _ = await _call("GET", gw.url + "/state", Origin="null")
        assert status == 403
        assert up.requests == []


async def test_the_gateways_own_origin_is_served() -> None:
    async with ScriptedUpstream() as up, gateway_for(up.url) as gw:
        status, _, _ = await _call("GET", gw.url + "/state", Origin=gw.url)
        assert status == 200


async def test_an_allowed_origin_gets_cors_answers() -> None:
    origin = "http://localhost:3000"
    settings = {"allowed_origins": origin}
    async with ScriptedUpstream() as up, gateway_for(up.url, settings=settings) as gw:
        status, headers, _ = await _call(
            "OPTIONS",
            gw.url + "/v1/chat/completions",
            Origin=origin,
            **{
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type,authorization",
            },
        )
        assert status == 204
        assert headers["Access-Control-Allow-Origin"] == origin
        assert headers["Access-Control-Allow-Headers"] == "content-type,authorization"
        status, headers, reply = await _call(
            "POST",
            gw.url + "/v1/chat/completions",
            data=json.dumps(CHAT).encode(),
            **_chat(Origin=origin),
        )
        assert status == 200, reply
        assert headers["Access-Control-Allow-Origin"] == origin
        status, _, _ = await _call("GET", gw.url + "/state", Origin="http://localhost:3001")
        assert status == 403


# --- JSON only ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"],
)
@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages", "/v1/responses"])
async def test_generation_takes_only_json_bodies(content_type: str | None, path: str) -> None:
    """What a browser may send anywhere without asking (and a typeless Blob body); no Origin,
    so this holds whatever the Origin check decides."""
    body = json.dumps({**CHAT, "input": "hi", "max_tokens": 5}).encode()
    async with ScriptedUpstream() as up, gateway_for(up.url) as gw:
        headers = {} if content_type is None else {"content-type": content_type}
        async with (
            aiohttp.ClientSession(skip_auto_headers=["Content-Type"]) as session,
            session.post(gw.url + path, data=body, headers=headers) as reply,
        ):
            status, error = reply.status, await reply.json()
        assert status == 415
        assert "application/json" in error["error"]["message"]
        assert up.requests == []


async def test_json_with_a_charset_is_json() -> None:
    async with ScriptedUpstream() as up, gateway_for(up.url) as gw:
        status, _, _ = await _call(
            "POST",
            gw.url + "/v1/chat/completions",
            data=json.dumps(CHAT).encode(),
            **{"content-type": "application/json; charset=utf-8"},
        )
        assert status == 200


# --- the gateway's token ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/state"),
        ("DELETE", "/state?session=s"),
        ("POST", "/state/collapse?session=s"),
        ("GET", "/config"),
        ("GET", "/v1/models"),
        ("HEAD", "/"),
        ("GET", "/v1/nothing-here"),
        ("POST", "/v1/chat/completions"),
        ("POST", "/v1/messages"),
    ],
)
async def test_with_a_token_every_route_wants_it(method: str, path: str) -> None:
    environ = {"SKILLSTATE_AUTH_TOKEN": TOKEN}
    async with ScriptedUpstream() as up, gateway_for(up.url, environ=environ) as gw:
        data = json.dumps(CHAT).encode() if method == "POST" else None
        for wrong in ({}, {"Authorization": "Bearer nope"}, {"x-skillstate-token": TOKEN[:-1]}):
            status, headers, body = await _call(method, gw.url + path, data=data, **wrong)
            assert status == 401, (path, wrong)
            assert headers["WWW-Authenticate"].startswith("Bearer")
            if method != "HEAD":
                assert "SKILLSTATE_AUTH_TOKEN" in body["error"]["message"]
        status, _, _ = await _call(
            method, gw.url + path, data=data, **_chat(**{"x-skillstate-token": TOKEN})
        )
        assert status not in (401, 403)


async def test_without_the_token_health_is_a_bare_status() -> None:
    """A load balancer may ask whether the gateway answers; nothing else of it is shown."""
    environ = {"SKILLSTATE_AUTH_TOKEN": TOKEN}
    async with ScriptedUpstream() as up, gateway_for(up.url, environ=environ) as gw:
        for wrong in ({}, {"Authorization": "Bearer nope"}):
            status, _, body = await _call("GET", gw.url + "/health", **wrong)
            assert (status, body) == (200, {"status": "ok"})
        status, _, body = await _call("GET", gw.url + "/health", **{"x-skillstate-token": TOKEN})
        assert status == 200 and {"upstreams", "store", "version"} <= set(body)


async def test_a_bearer_token_opens_the_gateway_and_never_goes_upstream() -> None:
    """The OpenAI SDK with the gateway's token as its key; the gateway holds the provider's."""
    environ = {"SKILLSTATE_AUTH_TOKEN": TOKEN, "SKILLSTATE_API_KEY": GATEWAY_KEY}
    async with (
        ScriptedUpstream(Script([Reply(text="hi"), Reply(text="again")])) as up,
        gateway_for(up.url, environ=environ) as gw,
        openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key=TOKEN, max_retries=0) as client,
    ):
        reply = await client.chat.completions.create(**CHAT)
        stream = await client.chat.completions.create(**CHAT, stream=True)
        text = "".join([chunk.choices[0].delta.content or "" async for chunk in stream])
    assert reply.choices[0].message.content == "hi" and text == "again"
    for sent in up.requests:
        assert sent.headers["authorization"] == f"Bearer {GATEWAY_KEY}"
        assert TOKEN not in json.dumps(dict(sent.headers))


async def test_the_clients_own_key_travels_in_its_wires_header_beside_the_token() -> None:
    """Anthropic's SDK with the provider key in ``x-api-key`` and the gateway's token in its own
    header (Claude Code: ``ANTHROPIC_CUSTOM_HEADERS``); no key held by the gateway."""
    environ = {"SKILLSTATE_AUTH_TOKEN": TOKEN}
    async with (
        ScriptedUpstream(Script([Reply(text="hi")])) as up,
        gateway_for(up.url, environ=environ) as gw,
        anthropic.AsyncAnthropic(
            base_url=gw.url,
            api_key=PROVIDER_KEY,
            default_headers={"x-skillstate-token": TOKEN},
            max_retries=0,
        ) as client,
    ):
        message = await client.messages.create(
            model="test-model", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
        )
    assert message.content[0].type == "text" and message.content[0].text == "hi"
    [sent] = up.requests
    assert sent.headers.get("x-api-key") == PROVIDER_KEY
    assert "authorization" not in sent.headers
    assert TOKEN not in json.dumps(dict(sent.headers))


async def test_a_bearer_token_is_taken_off_beside_an_anthropic_key() -> None:
    environ = {"SKILLSTATE_AUTH_TOKEN": TOKEN}
    body = json.dumps({**CHAT, "max_tokens": 5}).encode()
    async with ScriptedUpstream() as up, gateway_for(up.url, environ=environ) as gw:
        headers = _chat(**{"Authorization": f"Bearer {TOKEN}", "x-api-key": PROVIDER_KEY})
        status, _, reply = await _call("POST", gw.url + "/v1/messages", data=body, **headers)
        assert status == 200, reply
        [sent] = up.requests
        assert sent.headers.get("x-api-key") == PROVIDER_KEY
        assert "authorization" not in sent.headers


async def test_a_token_header_leaves_the_clients_authorization_to_the_provider() -> None:
    environ = {"SKILLSTATE_AUTH_TOKEN": TOKEN}
    async with ScriptedUpstream() as up, gateway_for(up.url, environ=environ) as gw:
        headers = _chat(**{"x-skillstate-token": TOKEN, "Authorization": "Bearer sk-provider"})
        status, _, _ = await _call(
            "POST", gw.url + "/v1/chat/completions", data=json.dumps(CHAT).encode(), **headers
        )
        assert status == 200
        [sent] = up.requests
        assert sent.headers["authorization"] == "Bearer sk-provider"
        assert "x-skillstate-token" not in sent.headers


# --- listening off loopback ------------------------------------------------------------------


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "gw.example.com"])
async def test_a_non_loopback_host_without_a_token_does_not_start(host: str) -> None:
    settings = load_settings(cli={"host": host}, environ={"HOME": "/nonexistent"})
    with pytest.raises(Exposed, match="SKILLSTATE_AUTH_TOKEN"):
        async with running(settings, port=0):
            raise AssertionError("it started")


async def test_a_wildcard_host_with_a_token_serves_address_literals() -> None:
    environ = {"SKILLSTATE_AUTH_TOKEN": TOKEN}
    settings = {"host": "0.0.0.0"}
    async with (
        ScriptedUpstream() as up,
        gateway_for(up.url, settings=settings, environ=environ) as gw,
    ):
        port = gw.url.rsplit(":", 1)[1]
        url = f"http://127.0.0.1:{port}/state"
        assert (await _call("GET", url))[0] == 401
        assert (await _call("GET", url, **{"x-skillstate-token": TOKEN}))[0] == 200
        lan = {"x-skillstate-token": TOKEN, "Host": f"192.168.1.9:{port}"}
        assert (await _call("GET", url, **lan))[0] == 200
        named = {"x-skillstate-token": TOKEN, "Host": f"rebound.example:{port}"}
        assert (await _call("GET", url, **named))[0] == 403


def test_loopback_is_localhost_or_a_loopback_address() -> None:
    assert all(map(is_loopback, ["127.0.0.1", "127.9.9.9", "::1", "localhost", "LocalHost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "10.0.0.1", "my-laptop.local"]))
