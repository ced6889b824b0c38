"""A Claude Code session that used tool search, through the gateway in front of a scripted
model: the ``ToolSearch`` result holds ``tool_reference`` blocks, not text, and it still
answers its call. So a hybrid session collapses past it, the archive gives the step back
exactly, and a request that must be translated for another wire is refused with a 400 that
names the block, before anything goes upstream."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import pytest

from skillstate.conversation import Wire
from skillstate.protocols import adapter
from skillstate.state.engine import StateEngine
from skillstate.state.epoch_record import DOC_NAME, Epoch
from skillstate.support.jsonio import dumps_str, loads
from skillstate.testing import Reply, Script, ScriptedUpstream
from skillstate.testing.gateway import gateway_for

TOOL_SEARCH = (
    Path(__file__).parents[1] / "fixtures" / "handwritten" / "claude-code-tool-search.json"
)
#: Keep one turn after a boundary, and collapse however short the session is.
EAGER = {"collapse": {"keep_recent_turns": 1, "min_turns": 0}}


def body() -> dict[str, Any]:
    value: dict[str, Any] = loads(TOOL_SEARCH.read_bytes())
    return value


async def post(url: str, sent: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession() as client,
        client.post(f"{url}/v1/messages", json=sent, headers=headers) as reply,
    ):
        return reply.status, loads(await reply.read())


async def test_a_hybrid_session_collapses_past_a_tool_search_result() -> None:
    session = "tool-search-hybrid"
    headers = {"x-skillstate-session": session, "x-skillstate-mode": "hybrid"}
    async with (
        # The first reply answers the handover round (the session's first boundary).
        ScriptedUpstream(Script([Reply(text="{}"), Reply(text="Issue #42 is filed.")])) as up,
        gateway_for(up.url, wire="anthropic-messages", settings=EAGER) as gw,
    ):
        engine = gw.context.engine
        assert isinstance(engine, StateEngine)
        await engine.request_collapse(session)
        status, _ = await post(gw.url, body(), headers)
        assert status == 200
        epoch_doc = await engine.store.get_doc(session, DOC_NAME)
        assert epoch_doc is not None
        epoch = Epoch.from_json(epoch_doc)
        (span,) = epoch.spans
        restored = await engine.archive.span(span.ref)
    assert len(up.requests) == 2
    sent = dumps_str(up.requests[1].json["messages"])
    assert "toolu_search1" not in sent and "tool_reference" not in sent
    assert "toolu_issue1" not in sent and "toolu_bash1" in sent
    # The search step and the call it made possible were collapsed, the first instruction kept.
    assert (epoch.head, span.first, span.last, epoch.cut) == (1, 1, 4, 5)
    assert restored is not None
    request = adapter(Wire.MESSAGES).decode_request(body())
    assert restored == request.messages[1:5]
    request.messages[1:5] = restored
    assert adapter(Wire.MESSAGES).encode_request(request) == body()


@pytest.mark.parametrize("upstream", ["openai-chat", "openai-responses"])
async def test_a_tool_search_result_translated_for_another_wire_is_a_clear_400(
    upstream: str,
) -> None:
    headers = {"x-skillstate-session": f"tool-search-{upstream}", "x-skillstate-mode": "off"}
    async with (
        ScriptedUpstream(Script([Reply(text="never sent")])) as up,
        gateway_for(up.url, wire=upstream) as gw,
    ):
        status, error = await post(gw.url, body(), headers)
    assert status == 400
    assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
    assert "tool_reference item of the anthropic-messages wire" in error["error"]["message"]
    assert up.requests == []
