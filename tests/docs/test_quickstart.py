"""Every command block of docs/quickstart.md, run in order as a new user would, in an empty
home directory, against the scripted upstream.

Each fenced ``sh`` or ``python`` block is taken from the page with the comment above it, if
any: ``<!-- test: background -->`` starts a long-running command (the gateway) that must then
answer /health; ``<!-- test: as COMMAND -->`` runs COMMAND in the block's place, the block's
own form being one this test cannot run here (``make demo`` would build a virtual environment
in the clone; its COMMAND is what make then runs); ``<!-- test: skip REASON -->`` is not run
and the test prints the reason. Every block run must exit 0. A fence of any other language
fails the test, so no block goes unrun unseen. Two substitutions, printed with the blocks,
make the page's text run here: the provider's URL becomes the scripted upstream's, and the
gateway's port a free one (also given as ``SKILLSTATE_PORT``, so the commands that read it
from the settings agree).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest

from skillstate.testing import ScriptedUpstream

PAGE = Path(__file__).resolve().parents[2] / "docs" / "quickstart.md"
PROVIDER = "https://api.openai.com/v1"
PORT = "127.0.0.1:8789"
LANGUAGES = ("sh", "python")
_FENCE = re.compile(r"^```(\S*)\n(.*?)^```$", re.S | re.M)
_DIRECTIVE = re.compile(r"<!-- test: (background|skip|as)(?: (.+?))? -->\Z")
RUN_SECONDS = 120


@dataclass(frozen=True, slots=True)
class Block:
    """One fenced block of the page: its language, code, line, and how the test runs it."""

    language: str
    code: str
    line: int
    how: str  # "run", "background", "as" or "skip"
    reason: str = ""
    """Why a block is skipped; for "as", the command run in its place."""


def blocks(text: str) -> list[Block]:
    """Every fenced block of ``text``, in order, with the directive written just above it."""
    found = []
    for match in _FENCE.finditer(text):
        before = text[: match.start()]
        above = before.rstrip("\n").rpartition("\n")[2] if before.endswith("\n") else ""
        directive = _DIRECTIVE.match(above.strip())
        how, reason = ("run", "") if directive is None else (directive[1], directive[2] or "")
        line = before.count("\n") + 1
        found.append(Block(match.group(1), match.group(2), line, how, reason))
    return found


def test_the_page_has_no_block_the_test_cannot_run() -> None:
    found = blocks(PAGE.read_text())
    assert len(found) == PAGE.read_text().count("```") // 2
    assert [b.language for b in found if b.language not in LANGUAGES] == []
    assert all(b.reason for b in found if b.how == "skip"), "a skipped block says why"
    assert {b.how for b in found} == {"run", "background", "as", "skip"}
    assert all(b.reason for b in found if b.how == "as"), "a replaced block names its command"


def test_the_directives_are_read_from_the_comment_just_above() -> None:
    text = (
        "<!-- test: skip too slow here -->\n```sh\nmake test\n```\n\nprose\n\n"
        "```sh\nls\n```\n<!-- test: background -->\n```sh\nserve\n```\n"
        "<!-- test: as python -m demo -->\n\n```sh\nmake demo\n```\n"
        "<!-- test: skip not this one -->\nprose between\n```python\nprint(1)\n```\n"
    )
    assert [(b.code, b.how, b.reason) for b in blocks(text)] == [
        ("make test\n", "skip", "too slow here"),
        ("ls\n", "run", ""),
        ("serve\n", "background", ""),
        ("make demo\n", "as", "python -m demo"),
        ("print(1)\n", "run", ""),
    ]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _environment(home: Path, port: int) -> dict[str, str]:
    """A new user's environment: an empty home, skillstate on PATH, keys for the SDKs, no
    SKILLSTATE_ or XDG_ setting of the machine's, and the gateway's port."""
    kept = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SKILLSTATE_", "XDG_", "OPENAI_", "ANTHROPIC_"))
    }
    return {
        **kept,
        "HOME": str(home),
        "PATH": os.pathsep.join((str(Path(sys.executable).parent), kept.get("PATH", ""))),
        "SKILLSTATE_PORT": str(port),
        "OPENAI_API_KEY": "sk-quickstart-test",
        "ANTHROPIC_API_KEY": "sk-ant-quickstart-test",
    }


def _command(block: Block, code: str) -> list[str]:
    if block.language == "python":
        return [sys.executable, "-c", code]
    return ["bash", "-e", "-o", "pipefail", "-c", code]


async def _healthy(url: str) -> bool:
    async with aiohttp.ClientSession() as session:
        for _ in range(600):  # 30 s: a loaded machine starts slowly
            try:
                async with session.get(url + "/health") as reply:
                    if reply.status == 200:
                        return True
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.05)
    return False


async def _stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.send_signal(signal.SIGINT)
        try:
            await asyncio.wait_for(process.wait(), 20)
        except TimeoutError:
            process.kill()
            await process.wait()


@pytest.mark.slow
async def test_every_command_block_of_the_quick_start_runs(tmp_path: Path) -> None:
    port = _free_port()
    home = tmp_path / "home"
    home.mkdir()
    env = _environment(home, port)
    gateway = f"http://127.0.0.1:{port}"
    started: list[asyncio.subprocess.Process] = []
    report: list[str] = []
    async with ScriptedUpstream() as upstream:
        substitutions = {PROVIDER: upstream.url + "/v1", PORT: f"127.0.0.1:{port}"}
        report.append(f"substitutions: {substitutions}; HOME={home}")
        try:
            for block in blocks(PAGE.read_text()):
                code = block.code
                for text, replacement in substitutions.items():
                    code = code.replace(text, replacement)
                where = f"quickstart.md:{block.line} ({block.language})"
                if block.how == "skip":
                    report.append(f"{where} NOT RUN: {block.reason}\n{block.code}")
                    continue
                if block.how == "as":
                    report.append(f"{where} run as `{block.reason}` in place of:\n{code}")
                    code = block.reason
                process = await asyncio.create_subprocess_exec(
                    *_command(block, code),
                    cwd=home,
                    env=env,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.STDOUT,
                )
                if block.how == "background":
                    started.append(process)
                    assert await _healthy(gateway), f"{where}: the gateway did not come up"
                    report.append(f"{where} started in the background, answers {gateway}\n{code}")
                    continue
                output, _ = await asyncio.wait_for(process.communicate(), RUN_SECONDS)
                shown = output.decode(errors="replace")
                report.append(f"{where} exit {process.returncode}\n{code}--- output:\n{shown}")
                assert process.returncode == 0, "\n\n".join(report)
            async with aiohttp.ClientSession() as http, http.get(gateway + "/cost") as reply:
                totals = (await reply.json())["totals"]
            # The SDK blocks went through the gateway to the scripted upstream.
            assert totals["client_requests"] >= 2, totals
            assert len(upstream.requests) >= 2
        finally:
            for process in started:
                await _stop(process)
            print("\n\n".join(report))
    for process in started:
        assert process.returncode is not None


@pytest.mark.parametrize("block", [b for b in blocks(PAGE.read_text()) if b.how == "skip"])
def test_each_block_not_run_says_why(block: Block) -> None:
    """The blocks the run leaves out, each listed with its reason (``-rA`` shows them)."""
    print(f"quickstart.md:{block.line} not run: {block.reason}")
    assert block.reason
