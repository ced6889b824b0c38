"""Fields that used to vanish in translation, through a real gateway: the answer's format
reaches an upstream of another wire, and what that wire cannot do comes back to the client as
a 400 in its own error shape, the upstream never asked."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from skillstate.testing import ScriptedUpstream
from skillstate.testing.gateway import gateway_for

SCHEMA = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}


async def _post(url: str, body: dict[str, Any]) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as session, session.post(url, json=body) as reply:
        return reply.status, await reply.json()


@pytest.mark.parametrize("mode", ["off", "hybrid"])
async def test_anthropic_structured_output_reaches_a_chat_upstream(mode: str) -> None:
    body = {
        "model": "test-model",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "title this"}],
        "output_config": {"format": {"type": "json_schema", "schema": SCHEMA}},
    }
    settings = {"mode": mode}
    async with (
        ScriptedUpstream() as up,
        gateway_for(up.url, wire="openai-chat", settings=settings) as gw,
    ):
        status, reply = await _post(gw.url + "/v1/messages", body)
    assert status == 200, reply
    sent = up.requests[-1].json
    assert sent["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": SCHEMA},
    }


@pytest.mark.parametrize("mode", ["off", "hybrid"])
@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"n": 2}, "n=2"),
        ({"logprobs": True, "top_logprobs": 2}, "logprobs"),
        ({"response_format": {"type": "json_object"}}, "response_format"),
    ],
)
async def test_what_an_anthropic_upstream_cannot_do_is_refused_by_name(
    fields: dict[str, Any], named: str, mode: str
) -> None:
    body = {"model": "test-model", "messages": [{"role": "user", "content": "hi"}], **fields}
    settings = {"mode": mode}
    async with (
        ScriptedUpstream() as up,
        gateway_for(up.url, wire="anthropic-messages", settings=settings) as gw,
    ):
        status, reply = await _post(gw.url + "/v1/chat/completions", body)
    assert status == 400, reply
    assert reply["error"]["type"] == "invalid_request_error"
    assert reply["error"]["message"].startswith(named), reply
    assert not [r for r in up.requests if r.wire is not None]
