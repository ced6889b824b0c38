"""Claude Code reads a PNG with its ``Read`` tool while the gateway translates to a Chat
Completions upstream: the tool result holds an image, which a Chat ``tool`` message cannot
carry, so the image reaches the upstream in the ``user`` message after it."""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from e2e_support import Invocation, assert_translated, base_env, round_trip

from skillstate.conversation import Wire
from skillstate.testing.agents import AgentPolicy, IssuedCall, ToolOutput, tool_outputs
from skillstate.testing.outcome import resolve
from skillstate.testing.recording import RecordedRequest
from skillstate.testing.replies import Reply, ScriptedCall

pytestmark = pytest.mark.e2e

PROMPT = "Look at the picture in dot.png and describe it."
FINAL = "It is a small red square."


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A solid-colour RGB PNG (RFC 2083: signature, IHDR, one IDAT, IEND)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    row = b"\x00" + bytes(rgb) * width
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


@dataclass(slots=True)
class ReadImagePolicy(AgentPolicy):
    """Calls Claude Code's ``Read`` tool on ``path`` once, then answers ``final_text``."""

    path: str = ""

    def __call__(self, request: RecordedRequest) -> Reply:
        wire, body = request.wire, request.json
        if wire is None or not isinstance(body, dict):
            raise ValueError(f"request #{request.index} is not a model request")
        found = tool_outputs(wire, body)
        if found:
            self.outputs.extend(ToolOutput(request.index, cid, text) for cid, text in found)
            return Reply(text=self.final_text)
        reply = Reply(calls=[ScriptedCall("Read", {"file_path": self.path})])
        issued = resolve(reply, request).calls[0]
        self.calls.append(IssuedCall(request.index, issued.id, issued.name, issued.arguments))
        return reply


def claude_reads(binary: Path, home: Path) -> Callable[[str], Invocation]:
    def build(gateway: str) -> Invocation:
        env = {
            **base_env(home),
            "ANTHROPIC_BASE_URL": gateway,
            "ANTHROPIC_API_KEY": "sk-ant-test",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_MAX_RETRIES": "0",
        }
        argv = [str(binary), "-p", PROMPT, "--allowedTools", "Read", "--output-format", "json"]
        return Invocation(argv, env, home / "work")

    return build


def _image_urls(content: Any) -> list[str]:
    parts = content if isinstance(content, list) else []
    return [
        part["image_url"]["url"]
        for part in parts
        if isinstance(part, dict) and part.get("type") == "image_url"
    ]


async def test_claude_code_reads_an_image_through_a_chat_upstream(
    claude: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    image = work / "dot.png"
    image.write_bytes(png(8, 8, (255, 0, 0)))
    policy = ReadImagePolicy(final_text=FINAL, path=str(image))
    trip = await round_trip(claude_reads(claude, tmp_path), wire="openai-chat", policy=policy)
    report = trip.report()
    assert trip.cli.returncode == 0, report
    result = json.loads(trip.cli.stdout)
    assert result["is_error"] is False, report
    assert result["result"] == FINAL, report
    assert_translated(trip, Wire.MESSAGES, Wire.CHAT)
    call = policy.calls[0]
    last = trip.model_requests[-1].json
    assert isinstance(last, dict), report
    messages = last["messages"]
    at = next(i for i, m in enumerate(messages) if m.get("tool_call_id") == call.id)
    assert messages[at]["role"] == "tool", report
    after = messages[at + 1]
    assert after["role"] == "user", report
    texts = [p.get("text") for p in after["content"] if p.get("type") == "text"]
    assert f"image from tool result {call.id}" in texts, report
    urls = _image_urls(after["content"])
    assert len(urls) == 1 and urls[0].startswith("data:image/png;base64,"), report
