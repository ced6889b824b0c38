"""Issue 13, "Done when": after ``skillstate integrate HOST --install`` (the real command, in a
subprocess) over a throwaway HOME that already holds the user's own config, each real CLI runs
the 30-turn loop of ``test_long_loop`` through the gateway in hybrid mode, with no other setup:
the loop crosses an epoch boundary, the gateway collapses the old turns and answers a recall.
Then ``--verify`` reports no drift and ``--uninstall`` puts every file back byte for byte.

The user's JSON files are written in a form skillstate never writes (four-space indents, no
final newline), so a restore that re-serialized them, or only took skillstate's keys out, would
not give the same bytes.

Two files the CLIs write themselves. Claude Code rewrites its state file ``~/.claude.json`` on
every run (``userID``, ``firstStartTime``, migration flags), so no uninstall can give its old
bytes back: it must leave what Claude Code wrote, and the user's keys, less skillstate's
server. OpenCode adds ``"$schema"`` to a global ``opencode.json`` that lacks it; the user's file
here has it, as every file OpenCode has run with does.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from e2e_support import Invocation, Trip, assert_round_trip, base_env, round_trip
from test_integrate_clients import mcp_command
from test_long_loop import (
    FINAL_TEXT,
    assert_clean_session,
    assert_collapsed,
    assert_loop_finished,
    assert_recalled,
    first_sigma,
    long_trip,
)

import skillstate
from skillstate.conversation import Wire
from skillstate.testing.agents import AgentPolicy

pytestmark = pytest.mark.e2e

SOURCE = Path(skillstate.__file__).parents[1]
PROMPT = "Print the end-to-end marker with your shell tool."
#: None of these is in a CLI's environment: the integration alone points it at the gateway.
BASE_URLS = ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_BASE")

CODEX_CONFIG = b"""\
# My own Codex settings.
model = "test-model"
approval_policy = "never"

# Analytics off also saves about 5 s of DNS lookups at exit.
[analytics]
enabled = false

[profiles.slow]
model_reasoning_effort = "high"
"""


def user_json(obj: object) -> bytes:
    """A user's JSON file: four-space indents, no final newline (skillstate writes two and one)."""
    return json.dumps(obj, indent=4).encode()


OPENCODE_SCHEMA = "https://opencode.ai/config.json"
OPENCODE_CONFIG = user_json({"$schema": OPENCODE_SCHEMA, "autoupdate": False, "share": "disabled"})
CLAUDE_SETTINGS = user_json({"env": {"MY_TEAM": "tapirs"}, "includeCoAuthoredBy": False})
CLAUDE_STATE = user_json({"hasCompletedOnboarding": True, "myOwnKey": "kept é"})


@dataclass(frozen=True, slots=True)
class Host:
    """One CLI in a throwaway HOME: its environment, the user's files as they were before the
    install (``None``: absent), the task's command line, the shell tool the CLI offers, and
    ``integrate``'s extra options. ``gateway`` gets the URL once the trip has started it."""

    name: str
    source: str
    wire: Wire
    tool: str
    env: dict[str, str]
    files: dict[Path, bytes | None]
    argv: list[str]
    options: tuple[str, ...] = ()
    gateway: list[str] = field(default_factory=list)

    @property
    def home(self) -> Path:
        return Path(self.env["HOME"])

    @property
    def work(self) -> Path:
        return self.home / "work"

    def integrate(self, mode: str) -> subprocess.CompletedProcess[str]:
        """``skillstate integrate HOST --MODE --gateway URL``, run from this checkout with the
        CLI's environment (so the data directory, and the install record, are in its HOME)."""
        argv = [sys.executable, "-m", "skillstate", "integrate", self.name, f"--{mode}"]
        argv += ["--gateway", self.gateway[0], *self.options]
        env = {**self.env, "PYTHONPATH": str(SOURCE)}
        return subprocess.run(
            argv, env=env, cwd=self.work, capture_output=True, text=True, timeout=60, check=False
        )


def host_env(home: Path, **extra: str) -> dict[str, str]:
    """A fresh environment whose PATH finds this checkout's ``skillstate`` first: the MCP
    server command ``integrate`` writes is the one ``shutil.which`` finds there."""
    shim = Path(mcp_command(home)).parent
    env = base_env(home)
    env["PATH"] = f"{shim}:{env['PATH']}"
    return {**env, **extra}


def seeded(home: Path, files: Mapping[Path, bytes | None]) -> dict[Path, bytes | None]:
    """Write the user's files (and the task's folder) into ``home``."""
    for path, content in files.items():
        if content is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
    (home / "work").mkdir()
    return dict(files)


def codex_host(binary: Path, home: Path, config: bytes | None) -> Host:
    """Without the user's ``model`` setting the model is named on the command line: Codex's
    own default model gets no ``tools`` in its requests (it calls them otherwise)."""
    env = host_env(home, CODEX_HOME=str(home / "codex"), OPENAI_API_KEY="sk-test")
    files = seeded(home, {home / "codex" / "config.toml": config})
    argv = [str(binary), "exec", "--skip-git-repo-check"]
    argv += [PROMPT] if config is not None else ["-m", "test-model", PROMPT]
    return Host("codex", "codex", Wire.RESPONSES, "exec_command", env, files, argv)


def opencode_host(binary: Path, home: Path) -> Host:
    """OpenCode finds its project through ``PWD``; it fetches plugin metadata from the npm
    registry on every run, so a closed loopback port keeps it offline."""
    env = host_env(
        home,
        PWD=str(home / "work"),
        OPENCODE_DISABLE_MODELS_FETCH="1",
        NPM_CONFIG_REGISTRY="http://127.0.0.1:9/",
    )
    files = seeded(home, {home / ".config" / "opencode" / "opencode.json": OPENCODE_CONFIG})
    # Separate words: `opencode run` quotes any argument that holds a space.
    words = PROMPT.split()
    argv = [str(binary), "run", "--pure", "--auto", "-m", "skillstate/test-model", *words]
    options = ("--model", "test-model")
    return Host("opencode", "opencode", Wire.CHAT, "bash", env, files, argv, options)


def claude_host(binary: Path, home: Path) -> Host:
    """No title request and no telemetry (nonessential traffic off), no retries, and the MCP
    servers connected before the first request."""
    env = host_env(
        home,
        ANTHROPIC_API_KEY="sk-ant-test",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_TELEMETRY="1",
        CLAUDE_CODE_MAX_RETRIES="0",
        MCP_CONNECTION_NONBLOCKING="false",
    )
    files = {
        home / ".claude" / "settings.json": CLAUDE_SETTINGS,
        home / ".claude.json": CLAUDE_STATE,
    }
    argv = [str(binary), "-p", PROMPT, "--allowedTools", "Bash", "--output-format", "json"]
    return Host("claude", "claude-code", Wire.MESSAGES, "Bash", env, seeded(home, files), argv)


def installed(host: Host) -> Callable[[str], Invocation]:
    """The CLI's task, after ``--install`` for the gateway the trip started: the command names
    every file it wrote, and none holds the user's bytes any more."""

    def build(gateway: str) -> Invocation:
        assert not set(BASE_URLS) & set(host.env), host.env
        host.gateway.append(gateway)
        # Blocking is fine here: the gateway and the upstream have nothing to serve yet.
        done = host.integrate("install")
        assert done.returncode == 0, done.stdout + done.stderr
        for path, content in host.files.items():
            assert f"installed in {path}\n" in done.stdout, done.stdout
            assert path.read_bytes() != content, path
        return Invocation(host.argv, host.env, host.work)

    return build


async def loop_trip(host: Host) -> Trip:
    """``test_long_loop``'s loop, through a gateway with default settings (hybrid mode)."""
    return await long_trip(installed(host))


def assert_session(trip: Trip, host: Host) -> None:
    """The loop finished cleanly, collapsed and recalled (``test_long_loop``'s checks), calling
    the CLI's own shell tool, and hybrid mode was engaged."""
    assert_loop_finished(trip)
    assert_clean_session(trip, host.source)
    assert_collapsed(trip)
    assert_recalled(trip)
    assert_hybrid(trip, host)
    assert {call.name for call in trip.policy.calls} == {host.tool}, trip.report()


def assert_hybrid(trip: Trip, host: Host) -> None:
    """The CLI spoke its own wire to the gateway, whose state lane took the session over at
    the boundary (an exchange reports hybrid mode once the lane rewrites it; before, it passes
    through as "off"): from then on every request of the loop offered the gateway's own
    ``skill_state`` and ``recall`` tools beside the client's, and the client never saw them."""
    report = trip.report()
    assert {exchange.client_wire for exchange in trip.exchanges} == {host.wire}, report
    assert trip.exchanges[-1].mode == "hybrid", report
    after = trip.model_requests[first_sigma(trip) :]
    looped = [r for r in after if isinstance(r.json, dict) and r.json.get("tools")]
    assert looped, report
    for request in looped:
        names = json.dumps(request.json["tools"])
        assert '"skill_state"' in names and '"recall"' in names, report
    assert "skill_state" not in trip.cli.stdout, report


def assert_verified(host: Host) -> None:
    checked = host.integrate("verify")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout == f"{host.name}: installed and up to date\n", checked.stdout


def assert_restored(host: Host, rewritten: Mapping[Path, Any] | None = None) -> None:
    """``--uninstall`` names every file and leaves each as the user had it, byte for byte (an
    absent one absent again), and takes skillstate's install record away. A file the CLI
    rewrote itself is in ``rewritten``, with the JSON it must hold now instead."""
    rewritten = rewritten or {}
    removed = host.integrate("uninstall")
    assert removed.returncode == 0, removed.stdout + removed.stderr
    for path, content in host.files.items():
        assert f"removed from {path}\n" in removed.stdout, removed.stdout
        if path in rewritten:
            assert json.loads(path.read_bytes()) == rewritten[path], path.read_text()
        elif content is None:
            assert not path.exists(), path
        else:
            assert path.read_bytes() == content, path
    record = host.home / ".local" / "share" / "skillstate" / "integrations.json"
    assert not record.exists(), record


@pytest.mark.parametrize("config", [CODEX_CONFIG, None], ids=["user-config", "no-config"])
async def test_codex_session_after_integrate(
    codex: Path, tmp_path: Path, config: bytes | None
) -> None:
    """With the user's config.toml, and with none at all (no CODEX_HOME folder either: Codex
    fills it with its own state, so only the file can go again)."""
    host = codex_host(codex, tmp_path, config)
    trip = await loop_trip(host)
    assert_session(trip, host)
    # The user's own top-level setting survived the merge (or the command line named it).
    assert {r.json["model"] for r in trip.model_requests} == {"test-model"}, trip.report()
    assert_verified(host)
    assert_restored(host)


async def test_opencode_session_after_integrate(opencode: Path, tmp_path: Path) -> None:
    host = opencode_host(opencode, tmp_path)
    trip = await loop_trip(host)
    assert_session(trip, host)
    assert_verified(host)
    assert_restored(host)


async def test_claude_code_session_after_integrate(claude: Path, tmp_path: Path) -> None:
    host = claude_host(claude, tmp_path)
    trip = await loop_trip(host)
    assert_session(trip, host)
    result = json.loads(trip.cli.stdout)
    assert result["is_error"] is False and result["result"] == FINAL_TEXT, trip.report()
    assert_verified(host)
    # What Claude Code left in its state file, less skillstate's server (and the mcpServers
    # object the install created for it); the user's keys are still there.
    state = tmp_path / ".claude.json"
    left = json.loads(state.read_bytes())
    assert left.pop("mcpServers") == {"skillstate": left_server(host)}, state.read_text()
    assert json.loads(CLAUDE_STATE).items() <= left.items(), left
    assert_restored(host, {state: left})


def left_server(host: Host) -> dict[str, Any]:
    """The MCP server entry ``--install`` wrote into Claude Code's state file."""
    command = str(host.home / "bin" / "skillstate")
    return {"type": "stdio", "command": command, "args": ["mcp"], "env": {}}


USER_JSONC = b"""\
// My own OpenCode settings, with comments (JSONC).
{
  "$schema": "https://opencode.ai/config.json",
  "autoupdate": false, // no update checks
  "share": "disabled",
  "model": "skillstate/test-model", // the provider skillstate's opencode.json defines
  "agent": {"build": {"prompt": "jsonc-was-read"}},
}
"""


async def test_opencode_with_a_users_jsonc_beside(opencode: Path, tmp_path: Path) -> None:
    """A user's ``opencode.jsonc`` is never parsed or touched: the install writes
    ``opencode.json`` beside it, OpenCode merges the two, and the uninstall leaves the JSONC
    as it was and in the JSON only the ``$schema`` OpenCode added to it. The command line
    names no model, the JSONC does, with the provider the JSON defines; the JSONC's agent
    prompt reaching the model shows OpenCode read it."""
    host = opencode_host(opencode, tmp_path)
    folder = tmp_path / ".config" / "opencode"
    (folder / "opencode.json").unlink()
    (folder / "opencode.jsonc").write_bytes(USER_JSONC)
    argv = [word for word in host.argv if word not in ("-m", "skillstate/test-model")]
    host = dataclasses.replace(host, argv=argv, files={folder / "opencode.json": None})
    trip = await round_trip(installed(host), mode="hybrid", policy=AgentPolicy())
    assert_round_trip(trip, source="opencode")
    assert any(b"jsonc-was-read" in request.body for request in trip.model_requests)
    assert_verified(host)
    assert (folder / "opencode.jsonc").read_bytes() == USER_JSONC
    assert_restored(host, {folder / "opencode.json": {"$schema": OPENCODE_SCHEMA}})
    assert (folder / "opencode.jsonc").read_bytes() == USER_JSONC
