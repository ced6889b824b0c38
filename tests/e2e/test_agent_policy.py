"""``AgentPolicy`` on the requests real agent CLIs sent (tests/fixtures/recorded): it finds each
client's shell tool, answers side requests with a title and tool results with the final text.
These run without the CLIs installed."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from multidict import CIMultiDict, CIMultiDictProxy

from skillstate.conversation import Wire
from skillstate.support import jsonio
from skillstate.testing import RecordedRequest, ScriptedUpstream
from skillstate.testing.agents import (
    COMMAND,
    MARKER,
    AgentPolicy,
    NoShellTool,
    shell_arguments,
)

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "recorded"


def recorded(wire: Wire, name: str, index: int = 0) -> RecordedRequest:
    raw = (RECORDED / wire.value / f"{name}.json").read_bytes()
    return _request(wire, raw, index)


def _request(wire: Wire, raw: bytes, index: int = 0) -> RecordedRequest:
    headers = CIMultiDictProxy(CIMultiDict[str]())
    return RecordedRequest(index, "POST", "/v1/x", {}, headers, raw, jsonio.loads(raw), wire)


def test_the_command_prints_the_marker_without_containing_it() -> None:
    assert MARKER not in COMMAND
    printed = subprocess.run(["sh", "-c", COMMAND], capture_output=True, text=True, check=True)
    assert printed.stdout == MARKER + "\n"


@pytest.mark.parametrize(
    ("wire", "name", "tool", "arguments"),
    [
        (Wire.RESPONSES, "codex-first", "exec_command", {"cmd": COMMAND}),
        (Wire.CHAT, "opencode-first", "bash", {"command": COMMAND}),
        (
            Wire.MESSAGES,
            "claude-code-first",
            "Bash",
            {"command": COMMAND, "description": "Print the e2e marker"},
        ),
    ],
)
def test_first_turn_calls_the_clients_shell(
    wire: Wire, name: str, tool: str, arguments: dict[str, Any]
) -> None:
    policy = AgentPolicy()
    reply = policy(recorded(wire, name, index=3))
    assert [(call.name, dict(call.arguments)) for call in reply.calls] == [(tool, arguments)]
    assert reply.text == ""
    [issued] = policy.calls
    assert (issued.request, issued.name, jsonio.loads(issued.arguments)) == (3, tool, arguments)
    assert issued.id.startswith("toolu_01" if wire is Wire.MESSAGES else "call_")


@pytest.mark.parametrize(
    ("wire", "name", "call_id"),
    [
        (Wire.RESPONSES, "codex-function-call-output", "call_e2e_1"),
        (Wire.CHAT, "opencode-tool-result", "call_e2e_1"),
        (Wire.MESSAGES, "claude-code-tool-result", None),
    ],
)
def test_tool_result_gets_the_final_text(wire: Wire, name: str, call_id: str | None) -> None:
    policy = AgentPolicy(final_text="finished")
    reply = policy(recorded(wire, name, index=1))
    assert (reply.text, list(reply.calls)) == ("finished", [])
    [output] = policy.outputs
    assert output.request == 1 and MARKER in output.text
    assert output.call_id == call_id or (call_id is None and output.call_id.startswith("toolu_"))
    assert policy.calls == []


def test_opencode_title_request_gets_a_plain_title() -> None:
    policy = AgentPolicy(title="A title")
    reply = policy(recorded(Wire.CHAT, "opencode-title"))
    assert (reply.text, list(reply.calls), policy.side) == ("A title", [], [0])


def test_claude_code_title_request_gets_the_json_it_asks_for() -> None:
    policy = AgentPolicy(title="A title")
    reply = policy(recorded(Wire.MESSAGES, "claude-code-title", index=2))
    assert jsonio.loads(reply.text) == {"title": "A title"}
    assert policy.side == [2]


@pytest.mark.parametrize(
    ("wire", "body"),
    [
        (Wire.CHAT, {"response_format": {"type": "json_schema", "json_schema": {}}}),
        (Wire.RESPONSES, {"text": {"format": {"type": "json_schema", "schema": {}}}}),
    ],
)
def test_a_translated_title_request_still_gets_json(wire: Wire, body: dict[str, Any]) -> None:
    raw = jsonio.dumps({"model": "m", "messages": [], "input": [], **body})
    reply = AgentPolicy(title="T")(_request(wire, raw))
    assert jsonio.loads(reply.text) == {"title": "T"}


def test_tools_without_a_shell_are_refused() -> None:
    tools = [{"type": "function", "function": {"name": "read", "parameters": {}}}]
    raw = jsonio.dumps({"model": "m", "messages": [], "tools": tools})
    with pytest.raises(NoShellTool, match="read"):
        AgentPolicy()(_request(Wire.CHAT, raw))


def test_a_shell_inside_a_responses_namespace_with_an_argv_command() -> None:
    argv = {"properties": {"command": {"type": "array", "items": {"type": "string"}}}}
    inner = {"type": "function", "name": "shell", "parameters": argv}
    tools = [{"type": "web_search"}, {"type": "namespace", "name": "ns", "tools": [inner]}]
    raw = jsonio.dumps({"model": "m", "input": [], "tools": tools})
    reply = AgentPolicy(command="true")(_request(Wire.RESPONSES, raw))
    assert [dict(call.arguments) for call in reply.calls] == [{"command": ["bash", "-lc", "true"]}]


def test_shell_arguments_without_a_schema() -> None:
    assert shell_arguments({}, "ls") == {"command": "ls"}


async def test_the_recorded_call_id_is_the_one_the_upstream_sends() -> None:
    policy = AgentPolicy()
    raw = (RECORDED / "openai-chat" / "opencode-first.json").read_bytes()
    body = {**jsonio.loads(raw), "stream": False}
    body.pop("stream_options")
    async with ScriptedUpstream(policy) as up, aiohttp.ClientSession() as http:
        async with http.post(up.url + "/v1/chat/completions", json=body) as answer:
            sent = await answer.json()
    [call] = sent["choices"][0]["message"]["tool_calls"]
    assert call["id"] == policy.calls[0].id
    assert jsonio.loads(call["function"]["arguments"]) == {"command": COMMAND}
