"""Before the first epoch boundary the model still sees the Σ it is asked to update: the tail
note carries Σ whole (the configured initial state from the first request, the model's own
patches on the next), after the client's messages, which go upstream as they came."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from skillstate.conversation import Json
from skillstate.support import jsonio
from skillstate.testing import RecordedRequest, Reply, ScriptedCall, ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.policies import Script

INITIAL = {"objective": "ship the parser fix"}
PATCH = {"findings": {"lexer": "tabs break the lexer"}}
NOTE = "[skillstate] The session state Σ so far"
ENVIRON = {
    "SKILLSTATE_INITIAL_STATE": jsonio.dumps_str(INITIAL),
    # Σ and skill_state from the first request, not from the first boundary (the default)
    "SKILLSTATE_COLLAPSE": '{"passthrough_until_boundary": false}',
}

CHAT_TOOLS = [{"type": "function", "function": {"name": "shell", "parameters": {"type": "object"}}}]
MESSAGES_TOOLS = [{"name": "shell", "input_schema": {"type": "object"}}]


def _body(wire: str, history: list[Json]) -> Json:
    if wire == "openai-chat":
        return {"model": "test-model", "messages": history, "tools": CHAT_TOOLS}
    return {"model": "test-model", "max_tokens": 64, "messages": history, "tools": MESSAGES_TOOLS}


def _path(wire: str) -> str:
    return "/v1/chat/completions" if wire == "openai-chat" else "/v1/messages"


def _reply_message(wire: str, answer: Json) -> Json:
    if wire == "openai-chat":
        message: Json = answer["choices"][0]["message"]
        return message
    return {"role": "assistant", "content": answer["content"]}


def _texts(message: Json) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [b["text"] for b in content or [] if isinstance(b, dict) and "text" in b]


def shown_state(recorded: RecordedRequest) -> Json | None:
    """Σ as the tail note of ``recorded`` shows it (None without one), read off the wire."""
    last = recorded.json["messages"][-1]
    for text in _texts(last):
        if text.startswith(NOTE):
            shown: Json = jsonio.loads(text.split("```json\n", 1)[1].split("\n```", 1)[0])
            return shown
    return None


async def _send(http: aiohttp.ClientSession, url: str, wire: str, history: list[Json]) -> Any:
    headers = {"x-skillstate-session": f"view-{wire}"}
    async with http.post(url + _path(wire), json=_body(wire, history), headers=headers) as r:
        assert r.status == 200, await r.text()
        return await r.json()


@pytest.mark.parametrize("wire", ["openai-chat", "anthropic-messages"])
async def test_the_model_sees_sigma_from_the_first_request_and_its_patch_on_the_next(
    wire: str,
) -> None:
    script = Script(
        [
            Reply(calls=[ScriptedCall("skill_state", {"patch": PATCH}, id="call_s1")]),
            Reply(text="Looked into it."),
            Reply(text="Fixed."),
        ]
    )
    async with (
        ScriptedUpstream(script) as up,
        gateway_for(up.url, wire=wire, environ=ENVIRON) as gw,
        aiohttp.ClientSession() as http,
    ):
        history: list[Json] = [{"role": "user", "content": "Fix the parser."}]
        answer = await _send(http, gw.url, wire, history)
        history += [_reply_message(wire, answer), {"role": "user", "content": "Go on."}]
        await _send(http, gw.url, wire, history)
    first, _, second = up.requests
    assert shown_state(first) == INITIAL
    assert first.json["messages"][:-1] == [{"role": "user", "content": "Fix the parser."}]
    seen = shown_state(second)
    assert seen is not None and {**INITIAL, **PATCH}.items() <= seen.items()
    # The client's messages lead the request unchanged: the note is only at the tail.
    assert (
        second.json["messages"][:-1][: len(first.json["messages"]) - 1]
        == (first.json["messages"][:-1])
    )
    assert "Σ" not in jsonio.dumps_str(second.json["messages"][:-1])


async def test_an_empty_sigma_adds_no_note() -> None:
    async with (
        ScriptedUpstream(Script([Reply(text="Hi.")])) as up,
        gateway_for(up.url, wire="openai-chat") as gw,
        aiohttp.ClientSession() as http,
    ):
        history: list[Json] = [{"role": "user", "content": "Fix the parser."}]
        await _send(http, gw.url, "openai-chat", history)
    assert up.requests[0].json["messages"] == history
