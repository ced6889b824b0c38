"""The MCP tools in process, over the in-memory stores: what a bad call answers."""

from __future__ import annotations

import json

import pytest

from skillstate.archive import Archive
from skillstate.mcp import TOOL_SCHEMAS, McpTools
from skillstate.state.schema import StateSchema
from skillstate.storage.stores import open_stores


@pytest.fixture
async def tools() -> McpTools:
    stores = await open_stores(None)
    return McpTools(Archive(stores.archive), stores.state, StateSchema.from_keys(None))


@pytest.mark.parametrize(
    ("name", "arguments", "says"),
    [
        ("compress", {}, "`content` is required"),
        ("compress", {"content": 3}, "`content` must be a string"),
        ("compress", {"content": "x", "extra": 1}, "remove extra"),
        ("retrieve", {"ref": "ar_" + "0" * 24, "offset": True}, "`offset` must be an integer"),
        ("retrieve", {"ref": "ar_" + "0" * 24, "context": 99}, "between 0 and 20"),
        ("state", {"session": ""}, "must not be empty"),
        ("state", {"session": "s", "patch": [1]}, "`patch` must be an object"),
        ("stats", {"x": 1}, "no arguments"),
        ("nope", {}, "unknown tool 'nope'"),
    ],
)
async def test_bad_calls_are_error_results(
    tools: McpTools, name: str, arguments: dict[str, object], says: str
) -> None:
    answer = await tools.call(name, arguments)
    assert answer.is_error
    assert says in answer.text


async def test_compress_twice_is_one_span(tools: McpTools) -> None:
    first = json.loads((await tools.call("compress", {"content": "same\n"})).text)
    second = json.loads((await tools.call("compress", {"content": "same\n"})).text)
    assert first["ref"] == second["ref"]
    stats = json.loads((await tools.call("stats", {})).text)
    assert stats["archive_refs"] == 1


def test_every_schema_is_a_closed_object() -> None:
    for description, schema in TOOL_SCHEMAS.values():
        assert description
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False


def test_public_surface() -> None:
    import skillstate.mcp

    assert sorted(skillstate.mcp.__all__) == [
        "DEFAULT_SESSION",
        "McpTools",
        "TOOL_SCHEMAS",
        "ToolAnswer",
        "URI_PREFIX",
        "URI_TEMPLATE",
    ]


def test_the_package_does_not_load_the_sdk() -> None:
    """The gateway imports the package for its route; the SDK waits for the first request."""
    import subprocess
    import sys

    code = "import sys, skillstate.mcp, skillstate.gateway; print('mcp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
