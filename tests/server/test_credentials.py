"""An OpenAI-wire client (the SDK, as Codex and OpenCode use it) served by an Anthropic
upstream: its key reaches Anthropic in the header that key needs, through the gateway on real
loopback. The OpenAI SDK always sends ``Authorization: Bearer``."""

from __future__ import annotations

import openai
import pytest

from skillstate.testing import Reply, ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.policies import Script

API_KEY = "sk-ant-api03-abcdefghijklmnop"
OAUTH = "sk-ant-oat01-abcdefghijklmnop"


@pytest.mark.parametrize(
    ("key", "header", "value"),
    [(API_KEY, "x-api-key", API_KEY), (OAUTH, "authorization", f"Bearer {OAUTH}")],
    ids=["api-key", "oauth"],
)
async def test_an_openai_sdk_key_reaches_anthropic_in_the_header_it_needs(
    key: str, header: str, value: str
) -> None:
    async with (
        ScriptedUpstream(Script([Reply(text="hi")])) as up,
        gateway_for(up.url, wire="anthropic-messages") as gw,
        openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key=key, max_retries=0) as client,
    ):
        reply = await client.chat.completions.create(
            model="test-model", messages=[{"role": "user", "content": "hi"}]
        )
    assert reply.choices[0].message.content == "hi"
    [sent] = up.requests
    assert sent.path == "/v1/messages"
    other = "authorization" if header == "x-api-key" else "x-api-key"
    assert (sent.headers.get(header), sent.headers.get(other)) == (value, None)
