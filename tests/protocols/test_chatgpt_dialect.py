"""The ChatGPT backend's dialect (``openai_responses.chatgpt``): the gateway's own bodies are
fitted to it, and a rewrite is judged safe to send only when it keeps what that backend needs
as the client sent it; the routing sends a ChatGPT login there, under no ``/v1``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from skillstate.conversation import Profile, Wire
from skillstate.protocols.openai_responses.chatgpt import fit, unsafe_rewrite
from skillstate.protocols.profiles import fit as fit_profile
from skillstate.upstream.routing import Router, Upstream, chatgpt_upstream

REASONING = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA-1"}


def client(**extra: Any) -> dict[str, Any]:
    body = {
        "model": "gpt-5-codex",
        "instructions": "Codex's own.",
        "input": [{"type": "message", "role": "user", "content": "go"}, REASONING],
        "store": False,
        "stream": True,
        "include": ["reasoning.encrypted_content"],
    }
    return {**body, **extra}


def test_fit_streams_stores_nothing_and_drops_the_output_limit() -> None:
    mine = {"model": "m", "input": [], "stream": False, "max_output_tokens": 900, "store": True}
    assert fit(mine) == {"model": "m", "input": [], "stream": True, "store": False}
    assert fit_profile(mine, Profile.CHATGPT, Wire.RESPONSES) == fit(mine)
    assert fit_profile(mine, Profile.OFFICIAL, Wire.RESPONSES) is mine


def test_a_rewrite_of_input_alone_is_safe() -> None:
    raw = json.dumps(client()).encode()
    more = client(input=[*client()["input"], {"type": "message", "role": "user", "content": "Σ"}])
    tools = client(tools=[{"type": "function", "name": "recall"}])
    assert unsafe_rewrite(raw, more) == []
    assert unsafe_rewrite(raw, tools) == []
    dropped = client(input=client()["input"][:1])  # an item left out is not an item changed
    assert unsafe_rewrite(raw, dropped) == []


@pytest.mark.parametrize(
    ("sent", "problem"),
    [
        (client(instructions="Codex's own. Be concise."), "instructions changed"),
        (client(instructions=None), "instructions changed"),
        (client(include=[]), "include changed"),
        (client(store=True), "store changed"),
        (client(stream=False), "stream changed"),
        (client(max_output_tokens=100), "max_output_tokens added"),
        (
            client(input=[{**REASONING, "encrypted_content": "gAAA-2"}]),
            "an encrypted item changed",
        ),
        (client(input=[{**REASONING, "summary": [{"text": "x"}]}]), "an encrypted item changed"),
    ],
)
def test_a_rewrite_that_touches_what_the_backend_needs_is_not(
    sent: dict[str, Any], problem: str
) -> None:
    assert problem in unsafe_rewrite(json.dumps(client()).encode(), sent)


def test_the_chatgpt_backend_takes_a_chatgpt_login_whatever_the_model() -> None:
    api = Upstream("api", "https://api.openai.com")
    backend = chatgpt_upstream("https://chatgpt.com/backend-api/codex/")
    router = Router([api], backend)
    assert router.route("gpt-5-codex") is api
    assert router.route("gpt-5-codex", chatgpt=True) is backend
    assert Router([api]).route("gpt-5-codex", chatgpt=True) is api
    assert backend.url("/v1/responses") == "https://chatgpt.com/backend-api/codex/responses"
    assert backend.url("/v1/models") == "https://chatgpt.com/backend-api/codex/models"
    assert api.url("/v1/responses") == "https://api.openai.com/v1/responses"
    assert backend.profile is Profile.CHATGPT and backend.api_key is None
