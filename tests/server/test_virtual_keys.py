"""Virtual keys through a real gateway (``server.guard``, ``server.keyring``): no key made,
nothing changes; once one is usable, every request wants a key or the token, in the header its
client's wire leaves free, and the key never reaches the provider; a tenant's key opens the
models' routes only, its sessions are its own (two tenants naming one session do not share
it), and it asks only for the models it may; a revoked or expired key is refused; an admin's
key opens the rest."""

from __future__ import annotations

import json
import re
import time
from collections.abc import AsyncIterator

import aiohttp
import pytest

from skillstate.testing import RecordedRequest, Reply, ScriptedUpstream
from skillstate.testing.gateway import RunningGateway, gateway_for
from skillstate.testing.keys import GatewayKeys

CHAT = "/v1/chat/completions"
MESSAGES = "/v1/messages"
RESPONSES = "/v1/responses"
PROVIDER_KEY = "sk-the-gateways-own-provider-key"
STEP = re.compile(r"step (\d+)")


def noting(request: RecordedRequest) -> Reply:
    """Paper mode's model: notes the step the newest instruction names."""
    steps = STEP.findall(request.body.decode())
    patch = {"findings": {f"step-{steps[-1] if steps else 'none'}": "seen"}}
    return Reply(text=json.dumps({"state_patch": patch, "action": "noted"}))


def chat(model: str = "gpt-4.1", step: int = 0) -> dict[str, object]:
    return {"model": model, "messages": [{"role": "user", "content": f"Do step {step}."}]}


class Keyed(GatewayKeys):
    """A gateway and its upstream, with the keys' store at hand and lookups never cached."""

    def __init__(self, gateway: RunningGateway, up: ScriptedUpstream) -> None:
        super().__init__(gateway)
        self.gateway, self.up = gateway, up

    async def post(self, path: str, body: object, headers: dict[str, str]) -> tuple[int, str]:
        async with (
            aiohttp.ClientSession() as http,
            http.post(self.gateway.url + path, json=body, headers=headers) as reply,
        ):
            return reply.status, await reply.text()

    async def reset(self, session: str, headers: dict[str, str]) -> int:
        """DELETE /state for ``session``: the answer's status."""
        async with (
            aiohttp.ClientSession() as http,
            http.delete(
                self.gateway.url + "/state", params={"session": session}, headers=headers
            ) as reply,
        ):
            return reply.status

    async def get(self, path: str, headers: dict[str, str]) -> int:
        async with (
            aiohttp.ClientSession() as http,
            http.get(self.gateway.url + path, headers=headers) as reply,
        ):
            return reply.status


@pytest.fixture
async def keyed() -> AsyncIterator[Keyed]:
    settings = {"api_key": PROVIDER_KEY, "mode": "paper"}
    async with ScriptedUpstream(noting) as up, gateway_for(up.url, settings=settings) as gw:
        yield Keyed(gw, up)


async def test_without_keys_nothing_changes(keyed: Keyed) -> None:
    assert (await keyed.post(CHAT, chat(), {}))[0] == 200
    assert await keyed.get("/cost", {}) == 200


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_a_usable_key_is_wanted_and_never_reaches_the_provider(
    keyed: Keyed, stream: bool
) -> None:
    text, _ = await keyed.make("alice")
    body = {**chat(), "stream": stream}
    status, said = await keyed.post(CHAT, body, {})
    assert status == 401 and "skillstate keys create" in said
    assert "skillstate keys create" in json.loads(said)["error"]["message"]  # the wire's shape
    assert (await keyed.post(CHAT, body, {"authorization": "Bearer ssk-" + "x" * 43}))[0] == 401
    assert (await keyed.post(CHAT, body, {"authorization": f"Bearer {text}"}))[0] == 200
    anthropic = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 50,
        "stream": stream,
        "messages": [{"role": "user", "content": "Do step 1."}],
    }
    headers = {"x-api-key": text, "anthropic-version": "2023-06-01"}
    assert (await keyed.post(MESSAGES, anthropic, headers))[0] == 200
    for sent in keyed.up.requests:
        assert text not in json.dumps(dict(sent.headers)) and text.encode() not in sent.body
    assert {sent.headers.get("authorization") for sent in keyed.up.requests[:1]} == {
        f"Bearer {PROVIDER_KEY}"
    }


async def test_a_tenants_key_opens_the_models_and_its_own_datas_routes_only(
    keyed: Keyed,
) -> None:
    tenant, _ = await keyed.make("alice")
    admin, _ = await keyed.make("ops", admin=True)
    for path in ("/config", "/audit", "/docs/"):
        assert await keyed.get(path, {"authorization": f"Bearer {tenant}"}) == 403, path
        assert await keyed.get(path, {"authorization": f"Bearer {admin}"}) != 403, path
    for path in ("/cost", "/cost/requests", "/state", "/metrics", "/ui", "/health"):
        assert await keyed.get(path, {"authorization": f"Bearer {tenant}"}) == 200, path
    assert await keyed.get("/v1/models", {"authorization": f"Bearer {tenant}"}) != 403
    audit = keyed.gateway.context.audit
    assert audit is not None
    as_admin = {"authorization": f"Bearer {admin}"}
    assert await keyed.reset("gone", as_admin) == 404  # never seen; a known one is audited:
    await keyed.post(CHAT, chat(), {**as_admin, "x-skillstate-session": "s"})
    assert await keyed.reset("s", as_admin) == 200
    (entry,) = await audit.entries(action="session.reset")
    assert entry.who == f"key:{(await keyed.store.all())[-1].id}" and entry.target == "s"


def asked(path: str, step: int, stream: bool) -> dict[str, object]:
    """The request of step ``step`` in the wire ``path`` serves."""
    said = f"Do step {step}."
    if path == MESSAGES:
        messages = [{"role": "user", "content": said}]
        return {
            "model": "claude-sonnet-4-5",
            "max_tokens": 50,
            "messages": messages,
            "stream": stream,
        }
    if path == RESPONSES:
        return {"model": "gpt-4.1", "input": said, "stream": stream}
    return {**chat(step=step), "stream": stream}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("path", [CHAT, RESPONSES, MESSAGES], ids=["chat", "responses", "messages"])
async def test_two_tenants_naming_one_session_do_not_share_it(
    keyed: Keyed, path: str, stream: bool
) -> None:
    alice, _ = await keyed.make("alice")
    bob, _ = await keyed.make("bob")
    for key, step in ((alice, 1), (bob, 2), (alice, 3)):
        headers = {"authorization": f"Bearer {key}", "x-skillstate-session": "shared-name"}
        assert (await keyed.post(path, asked(path, step, stream), headers))[0] == 200
    engine = keyed.gateway.context.engine
    assert engine is not None
    mine = (await engine.store.load("alice/shared-name")).state["findings"]
    theirs = (await engine.store.load("bob/shared-name")).state["findings"]
    assert set(mine) == {"step-1", "step-3"} and set(theirs) == {"step-2"}
    assert (await engine.store.load("shared-name")).version == 0
    assert "step-1" not in keyed.up.requests[1].body.decode()  # bob's Σ holds none of alice's


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("mode", ["off", "paper"])
async def test_a_key_asks_only_for_its_models(keyed: Keyed, mode: str, stream: bool) -> None:
    text, _ = await keyed.make("alice", models=["gpt-4*"])
    headers = {"authorization": f"Bearer {text}", "x-skillstate-mode": mode}
    assert (await keyed.post(CHAT, {**chat("gpt-4.1"), "stream": stream}, headers))[0] == 200
    status, said = await keyed.post(CHAT, {**chat("o3"), "stream": stream}, headers)
    assert status == 403 and "may not use the model 'o3'" in said
    assert len(keyed.up.requests) == 1


async def test_a_revoked_or_expired_key_is_refused(keyed: Keyed) -> None:
    text, key = await keyed.make("alice")
    old, _ = await keyed.make("bob", expires=time.time() - 1)
    assert (await keyed.post(CHAT, chat(), {"authorization": f"Bearer {old}"}))[0] == 401
    assert (await keyed.post(CHAT, chat(), {"authorization": f"Bearer {text}"}))[0] == 200
    await keyed.store.revoke(key.id, time.time())
    assert (await keyed.post(CHAT, chat(), {"authorization": f"Bearer {text}"}))[0] == 401


async def test_the_token_still_opens_everything() -> None:
    settings = {"api_key": PROVIDER_KEY, "auth_token": "a-long-gateway-token-0123456789"}
    async with ScriptedUpstream(noting) as up, gateway_for(up.url, settings=settings) as gw:
        keyed = Keyed(gw, up)
        text, _ = await keyed.make("alice")
        token = {"x-skillstate-token": "a-long-gateway-token-0123456789"}
        assert await keyed.get("/cost", token) == 200
        assert (await keyed.post(CHAT, chat(), token))[0] == 200
        assert (await keyed.post(CHAT, chat(), {"authorization": f"Bearer {text}"}))[0] == 200
        assert (await keyed.post(CHAT, chat(), {}))[0] == 401
        both = {**token, "x-api-key": text, "authorization": f"Bearer {text}"}
        assert (await keyed.post(CHAT, chat(), both))[0] == 200  # the token's request
        for sent in up.requests:  # a key sent beside the token went no further either
            assert text not in json.dumps(dict(sent.headers))


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_a_tenant_with_a_provider_key_of_its_own_goes_upstream_with_it(
    stream: bool,
) -> None:
    """``tenant_api_keys``: alice's requests carry her provider key, bob's the gateway's, and
    neither carries the virtual key."""
    environ = {
        "SKILLSTATE_API_KEY": PROVIDER_KEY,
        "ALICE_PROVIDER_KEY": "sk-alices-own-provider-key",
        "SKILLSTATE_TENANT_API_KEYS": "alice=ALICE_PROVIDER_KEY",
    }
    async with (
        ScriptedUpstream(noting) as up,
        gateway_for(up.url, settings={"mode": "paper"}, environ=environ) as gw,
    ):
        keys = Keyed(gw, up)
        for tenant in ("alice", "bob"):
            text, _ = await keys.make(tenant)
            body = {**chat(), "stream": stream}
            assert (await keys.post(CHAT, body, {"authorization": f"Bearer {text}"}))[0] == 200
        sent = [request.headers.get("authorization") for request in up.requests]
    assert sent == ["Bearer sk-alices-own-provider-key", f"Bearer {PROVIDER_KEY}"]
