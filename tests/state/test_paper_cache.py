"""Paper mode's stable prefix: the tools and P come first, byte-identical from one request of a
session to the next, closed by the gateway's one breakpoint on Anthropic upstreams; Σ and the
observation follow, unmarked (state/paper.py, "The prompt cache")."""

from __future__ import annotations

import copy
import json

from skillstate.conversation import (
    CacheMark,
    Json,
    Message,
    Request,
    Text,
    Tool,
    ToolCall,
    ToolResult,
    Wire,
)
from skillstate.protocols import adapter
from skillstate.state.paper import render_paper
from skillstate.state.schema import StateSchema
from skillstate.support import jsonio

SCHEMA = StateSchema.from_keys(None)
P = [Text("You are a careful data-cleaning agent. Work one step at a time.")]
TOOLS = [Tool("run", "run a step", {"type": "object", "properties": {}})]


def step(n: int, wire: Wire) -> Request:
    """The client's request at step ``n``: its whole transcript, Claude Code's markers (the
    system prompt, the newest message)."""
    messages = [Message("user", [Text("clean the table")])]
    for k in range(1, n + 1):
        messages.append(Message("assistant", [ToolCall(f"c{k}", "run", json.dumps({"k": k}))]))
        role = "user" if wire is Wire.MESSAGES else "tool"
        mark = CacheMark() if k == n else None
        messages.append(Message(role, [ToolResult(f"c{k}", [Text(f"step {k} ok")], cache=mark)]))
    system = [Text("the client's system prompt", cache=CacheMark("1h"))]
    return Request("m", messages, wire, system, copy.deepcopy(TOOLS))


def encoded(n: int, wire: Wire) -> Json:
    request = step(n, wire)
    out = render_paper(
        request,
        procedure=P,
        state={"step": n, "findings": {f"s{n}": "done"}},
        schema=SCHEMA,
        task="clean the table",
        cache_markers=wire is Wire.MESSAGES,
    )
    return adapter(wire).encode_request(out)


def test_anthropic_renders_share_the_prefix_up_to_the_procedures_breakpoint() -> None:
    first, second = encoded(1, Wire.MESSAGES), encoded(2, Wire.MESSAGES)
    # Anthropic caches tools, then system, then messages: the prefix up to the breakpoint.
    prefix = jsonio.dumps([first["tools"], first["system"]])
    assert prefix == jsonio.dumps([second["tools"], second["system"]])
    assert first["system"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert all("cache_control" not in block for block in first["system"][:-1])
    assert first["messages"] != second["messages"]  # Σ and the observation follow it


def test_no_marker_follows_the_procedure() -> None:
    body = jsonio.dumps_str(encoded(3, Wire.MESSAGES)["messages"])
    assert "cache_control" not in body


def test_the_clients_markers_are_left_on_its_request() -> None:
    request = step(2, Wire.MESSAGES)
    before = copy.deepcopy(request)
    render_paper(request, procedure=P, state={}, schema=SCHEMA, task=None, cache_markers=True)
    assert request == before


def test_openai_renders_share_a_stable_unmarked_prefix() -> None:
    first, second = encoded(1, Wire.CHAT), encoded(2, Wire.CHAT)
    # OpenAI's automatic cache reads the tools and the first messages: the system message.
    assert first["messages"][0]["role"] == "system"
    prefix = jsonio.dumps([first["tools"], first["messages"][0]])
    assert prefix == jsonio.dumps([second["tools"], second["messages"][0]])
    assert "cache_control" not in jsonio.dumps_str(first)
