"""Bodies of megabytes: a long tool result reaches the upstream exactly, on every wire, in
every mode and across wires, read and written in pieces (``skillstate.support.longstrings``);
one that is not JSON is still a 400 in the client's wire."""

from __future__ import annotations

import io
import json
from typing import Any

import aiohttp
import pytest

from skillstate.support import jsonio
from skillstate.testing import ScriptedUpstream
from skillstate.testing.gateway import gateway_for

# Over jsonio.CUT_FROM, with every kind of escape and multi-byte character a cut must respect;
# sent as a file, as aiohttp warns of a bytes body this long.
RESULT = ('print("a\\\\b")\n\tconst é = "😀" + \'\u2028\'; ' * 120_000)[: jsonio.CUT_FROM + 3]


def _request(route: str, result: str, stream: bool = False) -> dict[str, Any]:
    if route == "responses":
        return {
            "model": "test-model",
            "stream": stream,
            "input": [
                {"role": "user", "content": "read it"},
                {
                    "type": "function_call",
                    "call_id": "call_1",
                    "name": "read_file",
                    "arguments": '{"path": "a.py"}',
                },
                {"type": "function_call_output", "call_id": "call_1", "output": result},
            ],
        }
    if route == "messages":
        use = {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a"}}
        return {
            "model": "test-model",
            "max_tokens": 50,
            "stream": stream,
            "messages": [
                {"role": "user", "content": "read it"},
                {"role": "assistant", "content": [use]},
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": result}
                    ],
                },
            ],
        }
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
    }
    return {
        "model": "test-model",
        "stream": stream,
        "messages": [
            {"role": "user", "content": "read it"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": result},
        ],
    }


ROUTES = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "messages": "/v1/messages"}


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("upstream_wire", ["auto", "anthropic-messages"])
@pytest.mark.parametrize("mode", ["off", "hybrid", "paper"])
@pytest.mark.parametrize("route", list(ROUTES))
async def test_a_long_tool_result_reaches_the_upstream_exactly(
    route: str, mode: str, upstream_wire: str, stream: bool
) -> None:
    async with (
        ScriptedUpstream() as up,
        gateway_for(up.url, wire=upstream_wire, settings={"mode": mode}) as gw,
        aiohttp.ClientSession() as session,
    ):
        body = json.dumps(_request(route, RESULT, stream), ensure_ascii=False).encode()
        headers = {"content-type": "application/json", "x-skillstate-session": f"big-{mode}"}
        async with session.post(
            gw.url + ROUTES[route], data=io.BytesIO(body), headers=headers
        ) as reply:
            text = await reply.text()
            assert reply.status == 200, text
        sent = [s for rec in up.requests if rec.json for s in _strings(rec.json)]
        assert any(RESULT in s for s in sent)


@pytest.mark.parametrize("route", list(ROUTES))
@pytest.mark.parametrize(
    "broken",
    [
        pytest.param(lambda b: b.replace(b"const", b"\\q", 1), id="bad-escape-in-the-result"),
        pytest.param(lambda b: b.replace(b"const", b"\x01", 1), id="control-character"),
        pytest.param(lambda b: b.replace(b"const", b"\xff", 1), id="not-utf-8"),
        pytest.param(lambda b: b[:-3], id="cut-short"),
    ],
)
async def test_a_long_body_that_is_not_json_is_a_400_in_the_wire(route: str, broken: Any) -> None:
    async with (
        ScriptedUpstream() as up,
        gateway_for(up.url, settings={"mode": "hybrid"}) as gw,
        aiohttp.ClientSession() as session,
    ):
        body = broken(json.dumps(_request(route, RESULT), ensure_ascii=False).encode())
        headers = {"content-type": "application/json"}
        async with session.post(
            gw.url + ROUTES[route], data=io.BytesIO(body), headers=headers
        ) as reply:
            answer = await reply.json()
            assert reply.status == 400
        assert "not valid JSON" in json.dumps(answer)
        assert not up.requests
