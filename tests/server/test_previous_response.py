"""``previous_response_id`` from a Responses client served by another wire's upstream: the
gateway keeps what it answered and writes the conversation out for the upstream; ``store:
false`` is respected; an unknown id is the Responses API's own not-found error. On a
Responses upstream the reference goes through untouched (the provider honours it)."""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from typing import Any

import aiohttp
import openai
import pytest
from internal_tools_clients import calls_and_results

from skillstate.protocols.sse import SSEDecoder
from skillstate.testing import Reply, ScriptedCall, ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.policies import Script

OTHER_WIRES = pytest.mark.parametrize("upstream", ["openai-chat", "anthropic-messages"])
STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])


async def _respond(
    url: str, body: dict[str, Any], headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    """POST /v1/responses; the JSON body, or for a stream the final response object."""
    async with (
        aiohttp.ClientSession() as session,
        session.post(url + "/v1/responses", json=body, headers=headers) as reply,
    ):
        raw = await reply.read()
        if reply.status != 200 or not body.get("stream"):
            return reply.status, json.loads(raw)
    events = [json.loads(e.data) for e in SSEDecoder().feed(raw) if e.data != "[DONE]"]
    done = [e["response"] for e in events if e.get("type") == "response.completed"]
    return 200, done[-1]


def _texts(body: Any) -> list[tuple[str, str]]:
    """(role, text) of each message an upstream of either wire received."""
    messages = body["messages"]
    out = []
    for message in messages:
        content = message["content"]
        if isinstance(content, list):
            content = "".join(block.get("text", "") for block in content)
        out.append((message["role"], content))
    return out


@OTHER_WIRES
@STREAMS
async def test_a_continuation_is_written_out_for_another_wire(upstream: str, stream: bool) -> None:
    script = Script([Reply(text="Hello Ada"), Reply(text="Your name is Ada")])
    async with ScriptedUpstream(script) as up, gateway_for(up.url, wire=upstream) as gw:
        base = {"model": "test-model", "stream": stream}
        status, first = await _respond(gw.url, {**base, "input": "My name is Ada."})
        assert status == 200, first
        follow = {**base, "input": "What is my name?", "previous_response_id": first["id"]}
        status, second = await _respond(gw.url, follow)
        assert status == 200, second
        sent = up.requests[1].json
    assert _texts(sent)[-3:] == [
        ("user", "My name is Ada."),
        ("assistant", "Hello Ada"),
        ("user", "What is my name?"),
    ]
    assert "previous_response_id" not in sent
    assert second["previous_response_id"] == first["id"]  # echoed, and now honoured


@OTHER_WIRES
async def test_a_chain_of_continuations_keeps_every_turn(upstream: str) -> None:
    script = Script([Reply(text="one"), Reply(text="two"), Reply(text="three")])
    async with ScriptedUpstream(script) as up, gateway_for(up.url, wire=upstream) as gw:
        _, first = await _respond(gw.url, {"model": "test-model", "input": "a"})
        body = {"model": "test-model", "input": "b", "previous_response_id": first["id"]}
        _, second = await _respond(gw.url, body)
        body = {"model": "test-model", "input": "c", "previous_response_id": second["id"]}
        status, _ = await _respond(gw.url, body)
        assert status == 200
        sent = up.requests[2].json
    assert [text for _, text in _texts(sent)] == ["a", "one", "b", "two", "c"]


@OTHER_WIRES
async def test_store_false_is_not_kept(upstream: str) -> None:
    script = Script([Reply(text="not kept")])
    async with ScriptedUpstream(script) as up, gateway_for(up.url, wire=upstream) as gw:
        _, first = await _respond(gw.url, {"model": "test-model", "input": "hi", "store": False})
        body = {"model": "test-model", "input": "again", "previous_response_id": first["id"]}
        status, error = await _respond(gw.url, body)
        assert len(up.requests) == 1  # refused before anything went upstream
    assert status == 404
    assert error["error"]["code"] == "previous_response_not_found"


@OTHER_WIRES
async def test_an_unknown_id_is_the_responses_apis_not_found(upstream: str) -> None:
    async with ScriptedUpstream() as up, gateway_for(up.url, wire=upstream) as gw:
        async with openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0) as c:
            with pytest.raises(openai.NotFoundError) as raised:
                await c.responses.create(
                    model="test-model", input="hi", previous_response_id="resp_never_made"
                )
    error = raised.value.body
    assert isinstance(error, dict)
    assert error["code"] == "previous_response_not_found"
    assert error["param"] == "previous_response_id"
    assert "resp_never_made" in error["message"]


async def test_a_responses_upstream_gets_the_reference_as_sent() -> None:
    async with ScriptedUpstream() as up, gateway_for(up.url) as gw:
        body = {"model": "test-model", "input": "hi", "previous_response_id": "resp_theirs"}
        status, _ = await _respond(gw.url, body)
        assert status == 200
        assert up.requests[0].json["previous_response_id"] == "resp_theirs"


LOOKUP = {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}
TOOLS = [{"type": "function", "name": "lookup", "parameters": LOOKUP, "strict": False}]


@OTHER_WIRES
@STREAMS
async def test_a_continuation_through_a_hybrid_session_with_tools(
    upstream: str, stream: bool
) -> None:
    """Hybrid mode with the client's tools: the first response hides a ``skill_state`` round
    and ends in a call of the client's ``lookup``; the client answers it with only a
    ``function_call_output`` and ``previous_response_id``. The upstream gets the call and its
    output paired, the session (and its Σ) is the one the first response belonged to, and the
    reference is echoed."""
    patch = {"objective": "look up k1"}
    script = Script(
        [
            Reply(calls=[ScriptedCall("skill_state", {"patch": patch}, id="call_state")]),
            Reply(calls=[ScriptedCall("lookup", {"key": "k1"}, id="call_k1")]),
            Reply(text="k1 is v1"),
        ]
    )
    hybrid = {"x-skillstate-mode": "hybrid"}
    tools_at_once = {"collapse": {"passthrough_until_boundary": False}}
    async with (
        ScriptedUpstream(script) as up,
        gateway_for(up.url, wire=upstream, settings=tools_at_once) as gw,
    ):
        base = {"model": "test-model", "stream": stream, "tools": TOOLS}
        status, first = await _respond(gw.url, {**base, "input": "Look up k1."}, hybrid)
        assert status == 200, first
        [call] = [item for item in first["output"] if item["type"] == "function_call"]
        assert call["name"] == "lookup"
        output = {"type": "function_call_output", "call_id": call["call_id"], "output": "v1"}
        follow = {**base, "input": [output], "previous_response_id": first["id"]}
        status, second = await _respond(gw.url, follow, hybrid)
        assert status == 200, second
        assert len(up.requests) == 3
        sent = up.requests[2]
    assert "previous_response_id" not in sent.json
    calls, results = calls_and_results(sent)
    assert [(c.name, c.id) for c in calls] == [("lookup", call["call_id"])]  # ours stay hidden
    assert results == {call["call_id"]: "v1"}
    offered = [t.get("name") or t["function"]["name"] for t in sent.json["tools"]]
    assert offered == ["lookup", "skill_state", "recall"]
    assert "look up k1" in sent.body.decode()  # Σ of the session the first response patched
    assert second["previous_response_id"] == first["id"]
    assert "k1 is v1" in json.dumps(second["output"])


@STREAMS
async def test_a_tenant_continues_only_its_own_responses(stream: bool) -> None:
    """Another tenant's response id is unknown to a tenant (the Responses API's not-found), and
    nothing of that conversation goes upstream; its own continues. An admin's key continues its
    own (and key-less callers') responses: a tenant's reply is kept under the tenant's name, so
    an admin's key is answered alike (the id names no reply an admin was given)."""
    from skillstate.testing.keys import GatewayKeys, bearer

    script = Script([Reply(text="Hello Ada"), Reply(text="Ada"), Reply(text="Ada again")])
    async with ScriptedUpstream(script) as up, gateway_for(up.url, wire="openai-chat") as gw:
        made = GatewayKeys(gw)
        keys = {}
        for tenant, admin in (("alice", False), ("bob", False), ("ops", True)):
            keys[tenant] = bearer((await made.make(tenant, admin=admin))[0])
        base = {"model": "test-model", "stream": stream}
        status, first = await _respond(gw.url, {**base, "input": "My name is Ada."}, keys["alice"])
        assert status == 200, first
        follow = {**base, "input": "What is my name?", "previous_response_id": first["id"]}
        for caller in ("bob", "ops"):
            status, refused = await _respond(gw.url, follow, keys[caller])
            assert status == 404 and first["id"] in refused["error"]["message"]
        assert len(up.requests) == 1  # nothing of alice's conversation went anywhere
        status, second = await _respond(gw.url, follow, keys["alice"])
        assert status == 200, second
        assert ("user", "My name is Ada.") in _texts(up.requests[-1].json)


@STREAMS
async def test_an_id_another_tenant_was_given_first_keeps_each_callers_own(stream: bool) -> None:
    """An upstream's ids may repeat (Ollama's Chat ids are ``chatcmpl-`` and one of 999
    numbers; here three upstreams each number their replies from the first, so each one's
    first id is the same): each caller is given an id of the gateway's own, and a reply kept
    for one tenant never stands in for another caller's, so alice and an admin each continue
    their own conversation after bob's was kept (before, the first kept held the upstream's
    id: alice's continuation was refused as unknown, and the admin's was written out with
    bob's conversation)."""
    from skillstate.testing.keys import GatewayKeys, bearer

    callers = (("bob", "Bob", False), ("alice", "Ada", False), ("ops", "Oz", True))
    async with AsyncExitStack() as stack:
        ups = {}
        for tenant, name, _ in callers:
            script = Script([Reply(text=f"Hello {name}"), Reply(text=f"Your name is {name}")])
            ups[tenant] = await stack.enter_async_context(ScriptedUpstream(script))
        tables = [
            {"name": tenant, "base_url": up.url, "wire": "openai-chat", "models": [tenant]}
            for tenant, up in ups.items()
        ]
        gw = await stack.enter_async_context(gateway_for(settings={"upstreams": tables}))
        made = GatewayKeys(gw)
        keys = {t: bearer((await made.make(t, admin=admin))[0]) for t, _, admin in callers}
        ids = {}
        for tenant, name, _ in callers:
            ask = {"model": tenant, "stream": stream, "input": f"My name is {name}."}
            status, first = await _respond(gw.url, ask, keys[tenant])
            assert status == 200, first
            ids[tenant] = first["id"]
        assert len(set(ids.values())) == 3  # the upstreams' one id, each given one of its own
        for tenant, name, _ in callers:
            follow = {
                "model": tenant,
                "stream": stream,
                "input": "What is my name?",
                "previous_response_id": ids[tenant],
            }
            status, second = await _respond(gw.url, follow, keys[tenant])
            assert status == 200, (tenant, second)
            heard = ups[tenant].requests[-1].json
            assert ("user", f"My name is {name}.") in _texts(heard), (tenant, heard)
            others = [other for _, other, _ in callers if other != name]
            assert not any(other in json.dumps(heard) for other in others), (tenant, heard)


@OTHER_WIRES
@STREAMS
async def test_an_id_an_upstream_gives_twice_names_each_conversation_apart(
    upstream: str, stream: bool
) -> None:
    """One caller, two conversations, one upstream id (two upstreams that each number their
    replies from the first): the client is given an id of the gateway's own for each, and each
    continuation goes on with its own conversation (before, both were given the upstream's id,
    the first kept held it, and the second conversation's continuation was written out with
    the first's)."""
    async with AsyncExitStack() as stack:
        ups, tables = [], []
        for model, name in (("a", "Ada"), ("b", "Bo")):
            script = Script([Reply(text=f"Hello {name}"), Reply(text=f"Your name is {name}")])
            up = await stack.enter_async_context(ScriptedUpstream(script))
            ups.append(up)
            tables.append({"name": model, "base_url": up.url, "wire": upstream, "models": [model]})
        gw = await stack.enter_async_context(gateway_for(settings={"upstreams": tables}))
        given = []
        for model, name in (("a", "Ada"), ("b", "Bo")):
            ask = {"model": model, "stream": stream, "input": f"My name is {name}."}
            status, first = await _respond(gw.url, ask)
            assert status == 200, first
            assert first["id"].startswith("resp_")
            given.append(first["id"])
        assert given[0] != given[1]
        for (model, name), up, named in zip((("a", "Ada"), ("b", "Bo")), ups, given, strict=True):
            follow = {"model": model, "stream": stream, "input": "Who am I?"}
            status, second = await _respond(gw.url, {**follow, "previous_response_id": named})
            assert status == 200, second
            assert second["previous_response_id"] == named
            heard = _texts(up.requests[-1].json)
            assert ("user", f"My name is {name}.") in heard, heard
            other = "Bo" if name == "Ada" else "Ada"
            assert not any(other in text for _, text in heard), heard
