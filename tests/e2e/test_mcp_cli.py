"""A real agent CLI loads skillstate's MCP server and calls ``retrieve``: Claude Code, offline
against the scripted upstream through the gateway, with ``skillstate mcp`` as its MCP server
over stdio; the archived output comes back to the model exactly."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from e2e_support import Invocation, round_trip
from test_claude_code import claude_env

import skillstate
from skillstate.archive import Archive, canonical_span, ref_for
from skillstate.conversation import Message, Text, ToolResult
from skillstate.storage.stores import open_stores
from skillstate.testing import RecordedRequest, Reply, ScriptedCall
from skillstate.testing.agents import tool_outputs, tool_schemas

pytestmark = pytest.mark.e2e

NEEDLE = "cache key ZEBRA-777-needle"
LOG = "\n".join(f"[{n:05d}] INFO step {n}" for n in range(400)) + f"\n[00400] DEBUG {NEEDLE}\n"
RETRIEVE = "mcp__skillstate__retrieve"
FINAL = "Found it."


@dataclass
class RetrievePolicy:
    """The scripted model: call the MCP server's ``retrieve`` with ``ref``, then answer."""

    ref: str
    outputs: list[str] = field(default_factory=list)
    offered: list[str] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    side: list[int] = field(default_factory=list)

    def __call__(self, request: RecordedRequest) -> Reply:
        wire, body = request.wire, request.json
        assert wire is not None and isinstance(body, dict)
        found = [text for _, text in tool_outputs(wire, body)]
        if found:
            self.outputs += found
            return Reply(text=FINAL)
        tools = dict(tool_schemas(wire, body))
        if RETRIEVE not in tools:
            self.offered += sorted(tools)
            self.side.append(request.index)
            return Reply(text="A title")  # a side request
        self.calls.append(RETRIEVE)
        return Reply(calls=[ScriptedCall(RETRIEVE, {"ref": self.ref, "query": "ZEBRA-777"})])


async def archived(data: Path) -> str:
    """The log archived in ``data`` as the outputs lane archives an output; its ref."""
    stores = await open_stores(data)
    try:
        span = canonical_span([Message("tool", [ToolResult("call_1", [Text(LOG)])])])
        await Archive(stores.archive).put("e2e", ref_for(span), span, "a build log")
        return ref_for(span)
    finally:
        await stores.close()


async def test_claude_code_loads_the_mcp_server_and_retrieves(claude: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    ref = await archived(data)
    source = str(Path(skillstate.__file__).parents[1])
    server = {
        "command": sys.executable,
        "args": ["-m", "skillstate", "mcp", "--data-dir", str(data)],
        "env": {"PYTHONPATH": source, "HOME": str(tmp_path)},
    }
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"skillstate": server}}))

    def build(gateway: str) -> Invocation:
        work = tmp_path / "work"
        work.mkdir()
        # Connect the MCP servers before the first request (they load in the background
        # otherwise, and the first request offers a tool to wait for them instead).
        env = claude_env(tmp_path, gateway) | {"MCP_CONNECTION_NONBLOCKING": "false"}
        argv = [str(claude), "-p", "Find the cache key in the archived build log.",
                "--mcp-config", str(config), "--strict-mcp-config",
                "--allowedTools", RETRIEVE, "--output-format", "json"]  # fmt: skip
        return Invocation(argv, env, work)

    policy = RetrievePolicy(ref)
    trip = await round_trip(build, mode="off", policy=policy)  # type: ignore[arg-type]
    report = trip.report()
    assert trip.cli.returncode == 0, report
    assert json.loads(trip.cli.stdout)["result"] == FINAL, report
    assert policy.outputs and NEEDLE in policy.outputs[0], (report, policy.offered)
    assert policy.calls == [RETRIEVE], report
