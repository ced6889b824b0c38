"""``skillstate mcp`` as an agent host runs it: a real process spawned by the SDK's own stdio
client, every call over real pipes."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client

HEADER = "## 1 tool\n[tool result id=mcp]\n"
"""How a span ``compress`` archived starts when read back (``span_text``)."""


def _log(lines: int = 3000) -> str:
    out = []
    for n in range(lines):
        if n % 500 == 7:
            out.append(f"2026-12-02T10:{n % 60:02d}:00 ERROR worker {n} failed: disk quota")
        else:
            out.append(f"2026-12-02T10:{n % 60:02d}:00 INFO step {n} ok id=job-{n:05d}")
    out.append("api_key=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789")
    return "\n".join(out) + "\n"


@asynccontextmanager
async def connected(data: Path) -> AsyncIterator[ClientSession]:
    """A session with ``python -m skillstate mcp --data-dir DATA``, initialized; the server's
    stderr goes to ``DATA/../stderr.txt``."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "skillstate", "mcp", "--data-dir", str(data)],
        env={"HOME": str(data.parent), "XDG_CONFIG_HOME": str(data.parent / "config")},
    )
    with (data.parent / "stderr.txt").open("a") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


def _text(result: types.CallToolResult) -> str:
    assert len(result.content) == 1
    item = result.content[0]
    assert isinstance(item, types.TextContent)
    return item.text


async def _call(client: ClientSession, name: str, /, **arguments: Any) -> types.CallToolResult:
    return await client.call_tool(name, arguments)


async def _pages(session: ClientSession, ref: str) -> list[str]:
    """Every page of ``ref`` from offset 0, following the offset each page names."""
    pages: list[str] = []
    offset = 0
    while True:
        text = _text(await _call(session, "retrieve", ref=ref, offset=offset))
        pages.append(text)
        if "; read on with offset=" not in text:
            return pages
        offset = int(text.rsplit("offset=", 1)[1].rstrip("]"))


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


async def test_initialize_and_tools(data: Path) -> None:
    async with connected(data) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert set(tools) == {"compress", "retrieve", "state", "stats"}
        assert tools["compress"].input_schema["required"] == ["content"]
        assert set(tools["compress"].input_schema["properties"]) == {"content", "session"}
        assert set(tools["retrieve"].input_schema["properties"]) == {
            "ref",
            "query",
            "context",
            "offset",
        }
        assert tools["state"].input_schema["properties"]["patch"]["type"] == "object"
        assert tools["stats"].input_schema["properties"] == {}
        assert all(tool.description for tool in tools.values())


async def test_compress_then_retrieve_exactly(data: Path) -> None:
    content = _log()
    async with connected(data) as session:
        result = await _call(session, "compress", content=content)
        assert not result.is_error
        answer = json.loads(_text(result))
        ref = answer["ref"]
        assert ref.startswith("ar_")
        assert answer["tokens_after"] < answer["tokens_before"] // 4
        assert ref in answer["view"]
        assert "sk-proj-" not in answer["view"]

        pages = await _pages(session, ref)
        assert len(pages) > 2
        bodies = [page.rsplit("[characters ", 1)[0] for page in pages]
        assert "".join(bodies) == HEADER + content

        found = _text(await _call(session, "retrieve", ref=ref, query="ERROR", context=1))
        errors = [line for line in content.splitlines() if "ERROR" in line]
        assert len(errors) == 6
        assert all(line in found for line in errors)
        assert "6 of 6 matching lines" in found

    # Archived on disk: a new process reads the same span.
    async with connected(data) as session:
        assert (await _pages(session, ref))[0] == pages[0]


async def test_short_content_comes_back_whole_and_redacted(data: Path) -> None:
    content = "build ok\npassword=hunter2hunter2\n"
    async with connected(data) as session:
        answer = json.loads(_text(await _call(session, "compress", content=content, session="s")))
        assert answer["view"] == "build ok\npassword=[redacted:password]\n"
        assert answer["session"] == "s"
        whole = _text(await _call(session, "retrieve", ref=answer["ref"]))
        assert whole == HEADER + content


async def test_retrieve_errors(data: Path) -> None:
    async with connected(data) as session:
        unknown = await _call(session, "retrieve", ref="ar_" + "0" * 24)
        assert unknown.is_error
        assert "unknown, or expired" in _text(unknown)
        malformed = await _call(session, "retrieve", ref="nope")
        assert malformed.is_error
        assert "not an archive ref" in _text(malformed)
        bad = await _call(session, "retrieve", ref="ar_" + "0" * 24, context=-1)
        assert bad.is_error
        assert "`context`" in _text(bad)


async def test_state_read_patch_and_rejected_patch(data: Path) -> None:
    async with connected(data) as session:
        empty = json.loads(_text(await _call(session, "state", session="task-1")))
        assert empty == {"session": "task-1", "version": 0, "step": 0, "state": {}}

        patched = await _call(session, "state", session="task-1", patch={"step": 3})
        assert not patched.is_error
        after = json.loads(_text(patched))
        assert after["state"] == {"step": 3}
        assert after["version"] == 1

        rejected = await _call(session, "state", session="task-1", patch={"step": "three"})
        assert rejected.is_error
        assert "rejected" in _text(rejected)
        assert "/step" in _text(rejected)

        again = json.loads(_text(await _call(session, "state", session="task-1")))
        assert again["state"] == {"step": 3}
        assert again["version"] == 1


async def test_stats(data: Path) -> None:
    async with connected(data) as session:
        await _call(session, "compress", content="one\n")
        await _call(session, "compress", content="two\n", session="other")
        await _call(session, "state", session="other", patch={"step": 1})
        stats = json.loads(_text(await _call(session, "stats")))
        assert stats["sessions"] == 1
        assert stats["archive_entries"] == 2
        assert stats["archive_refs"] == 2
        assert stats["archive_bytes"] > 0
        assert stats["degraded"] is None


async def test_resources_list_and_read(data: Path) -> None:
    content = _log(200)
    async with connected(data) as session:
        ref = json.loads(_text(await _call(session, "compress", content=content)))["ref"]
        listed = (await session.list_resources()).resources
        assert [item.uri for item in listed] == [f"skillstate://archive/{ref}"]
        assert listed[0].name == ref
        assert listed[0].mime_type == "text/plain"

        read = await session.read_resource(listed[0].uri)
        assert len(read.contents) == 1
        item = read.contents[0]
        assert isinstance(item, types.TextResourceContents)
        assert item.text == HEADER + content

        templates = (await session.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["skillstate://archive/{ref}"]

        with pytest.raises(MCPError, match="unknown, or expired"):
            await session.read_resource("skillstate://archive/ar_" + "0" * 24)
