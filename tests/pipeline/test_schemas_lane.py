"""The ``schemas`` lane: compacted tools only when smaller, the same request otherwise, the
same bytes for the same tools, tool fields it must not touch, and the recorded clients'
tool lists."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skillstate.conversation import CacheMark, Message, Request, Text, Tool, Wire
from skillstate.pipeline.lane import LaneContext
from skillstate.pipeline.schemas_lane import (
    MEMO_SIZE,
    SchemasLane,
    SchemasOptions,
    compact_tools,
    tools_tokens,
)
from skillstate.protocols import adapter
from skillstate.state.mode import Mode
from skillstate.support import jsonio

RECORDED = Path(__file__).parents[1] / "fixtures" / "recorded"
CLIENTS = {
    "claude-code": (Wire.MESSAGES, "anthropic-messages/claude-code-first.json"),
    "opencode": (Wire.CHAT, "openai-chat/opencode-first.json"),
    "codex": (Wire.RESPONSES, "openai-responses/codex-first.json"),
}
CONTEXT = LaneContext(session="s", client_wire=Wire.CHAT, upstream_wire=Wire.CHAT, mode=Mode.OFF)
SCHEMA = "http://json-schema.org/draft-07/schema#"


def _request(tools: list[Tool]) -> Request:
    return Request(
        model="m", messages=[Message("user", [Text("hi")])], source=Wire.CHAT, tools=tools
    )


def _padded(name: str = "read") -> Tool:
    parameters = {
        "$schema": SCHEMA,
        "title": "Params",
        "type": "object",
        "properties": {"path": {"type": "string", "title": "Path", "examples": ["/etc/hosts"]}},
        "required": ["path"],
    }
    return Tool(name, "Read   a file.  \n\n\n\nReturns its text.", parameters)


def _recorded(client: str) -> Request:
    wire, path = CLIENTS[client]
    return adapter(wire).decode_request(json.loads((RECORDED / path).read_text()))


async def test_a_padded_tool_is_compacted_and_reported() -> None:
    request = _request([_padded()])
    outcome = await SchemasLane()(request, CONTEXT)
    assert outcome.request is not request
    (tool,) = outcome.request.tools
    assert tool.description == "Read a file.\n\nReturns its text."
    assert tool.parameters == {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    }
    before, after = tools_tokens(request.tools), tools_tokens(outcome.request.tools)
    assert after < before
    assert outcome.report == {"tools": 1, "tokens_before": before, "tokens_after": after}
    assert outcome.summary == f"-{before - after}t"
    assert request.tools[0].parameters is not None and "title" in request.tools[0].parameters


async def test_nothing_to_shrink_returns_the_same_request() -> None:
    lean = Tool("read", "Read a file.", {"type": "object", "properties": {"p": {"type": "string"}}})
    for request in (_request([lean]), _request([])):
        outcome = await SchemasLane()(request, CONTEXT)
        assert outcome.request is request
        assert outcome.summary == "" and outcome.report == {} and outcome.writes == []


async def test_tool_fields_the_lane_does_not_own_are_kept() -> None:
    mark = CacheMark()
    tool = _padded()
    tool.cache, tool.extra, tool.hints = mark, {"strict": True, "title": "x"}, {"h": 1}
    hosted = Tool("web_search", kind="web_search", extra={"type": "web_search", "title": "t"})
    outcome = await SchemasLane()(_request([tool, hosted]), CONTEXT)
    got, other = outcome.request.tools
    assert got.cache is mark and got.extra == {"strict": True, "title": "x"}
    assert (got.name, got.kind, got.hints) == ("read", "function", {"h": 1})
    assert other is hosted
    (direct,) = compact_tools([tool], SchemasOptions())
    assert direct.cache is mark and direct.extra is tool.extra and direct.hints is tool.hints


async def test_custom_tools_get_their_description_collapsed_only() -> None:
    custom = Tool(
        "patch", "Apply   a patch.", None, kind="custom", extra={"format": {"title": "t"}}
    )
    outcome = await SchemasLane()(_request([custom]), CONTEXT)
    (got,) = outcome.request.tools
    assert got.description == "Apply a patch." and got.extra == custom.extra


async def test_the_same_tools_give_the_same_bytes_every_time() -> None:
    lane = SchemasLane(SchemasOptions(description_chars=64))
    first = await lane(_request([_padded(), _padded("write")]), CONTEXT)
    again = await lane(_request([_padded(), _padded("write")]), CONTEXT)
    fresh = await SchemasLane(SchemasOptions(description_chars=64))(
        _request([_padded(), _padded("write")]), CONTEXT
    )
    dumped = [_dump(o.request.tools) for o in (first, again, fresh)]
    assert dumped[0] == dumped[1] == dumped[2]
    assert first.report == again.report == fresh.report


def test_the_output_does_not_depend_on_the_process() -> None:
    """Hash seeds and object ids differ between processes; the bytes must not."""
    code = (
        "from skillstate.pipeline.schemas_lane import compact_tools, SchemasOptions\n"
        "from tests.pipeline.test_schemas_lane import _padded, _dump\n"
        "print(_dump(compact_tools([_padded(), _padded('b')], SchemasOptions(64))))\n"
    )
    root = Path(__file__).parents[2]
    runs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            cwd=root,
            env={"PYTHONHASHSEED": seed, "PYTHONPATH": f"{root / 'src'}:{root}"},
        ).stdout
        for seed in ("1", "2")
    }
    assert runs == {_dump(compact_tools([_padded(), _padded("b")], SchemasOptions(64))) + "\n"}


async def test_the_memo_is_bounded_and_keyed_by_content() -> None:
    lane = SchemasLane()
    for i in range(MEMO_SIZE + 10):
        await lane(_request([_padded(f"t{i}")]), CONTEXT)
    assert len(lane._memo) == MEMO_SIZE
    # A changed schema under a name the memo holds is new content, compacted afresh.
    changed = _padded(f"t{MEMO_SIZE}")
    assert changed.parameters is not None
    changed.parameters["properties"]["mode"] = {"type": "integer", "title": "M"}
    outcome = await lane(_request([changed]), CONTEXT)
    params = outcome.request.tools[0].parameters
    assert params is not None and params["properties"]["mode"] == {"type": "integer"}


def test_the_cut_bound_is_checked() -> None:
    assert SchemasOptions().description_chars == 0
    with pytest.raises(ValueError, match="description_chars"):
        SchemasOptions(description_chars=10)


# --- the recorded clients --------------------------------------------------------------------


@pytest.mark.parametrize("client", sorted(CLIENTS))
@pytest.mark.parametrize("chars", [0, 2000])
async def test_recorded_tools_keep_every_fact(client: str, chars: int) -> None:
    request = _recorded(client)
    outcome = await SchemasLane(SchemasOptions(chars))(request, CONTEXT)
    after = outcome.request.tools
    assert [(t.name, t.kind, t.cache) for t in after] == [
        (t.name, t.kind, t.cache) for t in request.tools
    ]
    for old, new in zip(request.tools, after, strict=True):
        assert _facts(new.parameters) == _facts(old.parameters)
        assert new.extra == old.extra and new.hints == old.hints
    if outcome.request is not request:
        assert outcome.report["tokens_after"] < outcome.report["tokens_before"]
    # The recorded request re-encodes with the compacted tools.
    adapter(request.source).encode_request(outcome.request)


async def test_claude_code_tools_shrink() -> None:
    outcome = await SchemasLane()(_recorded("claude-code"), CONTEXT)
    assert outcome.report["tokens_before"] - outcome.report["tokens_after"] > 0
    for tool in outcome.request.tools:
        assert "$schema" not in (tool.parameters or {})


async def test_a_cut_saves_more_on_claude_code() -> None:
    lossless = await SchemasLane()(_recorded("claude-code"), CONTEXT)
    cut = await SchemasLane(SchemasOptions(2000))(_recorded("claude-code"), CONTEXT)
    assert cut.report["tokens_after"] < lossless.report["tokens_after"]
    assert any("[cut " in (t.description or "") for t in cut.request.tools)
    assert not any("[cut " in (t.description or "") for t in lossless.request.tools)


# --- helpers ---------------------------------------------------------------------------------


def _dump(tools: list[Tool]) -> str:
    return jsonio.dumps_str([[t.name, t.description, t.parameters] for t in tools])


def _facts(schema: Any, path: str = "#") -> list[tuple[str, str, Any]]:
    return list(_walk_facts(schema, path))


def _walk_facts(node: Any, path: str) -> Iterator[tuple[str, str, Any]]:
    """Names, types, required lists, enums, consts, patterns and formats at every schema
    position the recorded tools use."""
    if not isinstance(node, dict):
        return
    for key in ("type", "required", "enum", "const", "pattern", "format"):
        if key in node:
            yield path, key, node[key]
    properties = node.get("properties", {})
    yield path, "names", list(properties)
    for name, sub in properties.items():
        yield from _walk_facts(sub, f"{path}/properties/{name}")
    for key in ("items", "additionalProperties", "propertyNames", "not"):
        yield from _walk_facts(node.get(key), f"{path}/{key}")
    for key in ("anyOf", "oneOf", "allOf"):
        for i, sub in enumerate(node.get(key, [])):
            yield from _walk_facts(sub, f"{path}/{key}/{i}")
