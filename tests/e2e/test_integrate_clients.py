"""Each real CLI, configured only by ``skillstate integrate``'s install into a throwaway HOME:
it reaches the gateway without a base URL in its environment, finishes a task with one tool
round trip, and has the ``skillstate`` MCP server: its tools are offered to the model (Claude
Code, OpenCode) or Codex lists it."""

from __future__ import annotations

import json
import stat
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from e2e_support import Invocation, Trip, assert_round_trip, base_env, round_trip, run_cli

import skillstate
from skillstate.integrations import Host, Locations, install, integration, verify

pytestmark = pytest.mark.e2e

PROMPT = "Print the end-to-end marker with your shell tool."


def mcp_command(home: Path) -> str:
    """A ``skillstate`` program for the host to spawn as ``skillstate mcp``: this checkout."""
    source = Path(skillstate.__file__).parents[1]
    script = home / "bin" / "skillstate"
    script.parent.mkdir(parents=True)
    script.write_text(f'#!/bin/sh\nPYTHONPATH={source} exec {sys.executable} -m skillstate "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def installed(host: Host, home: Path, gateway: str, env: dict[str, str]) -> None:
    """Install ``host``'s integration the way ``skillstate integrate HOST --install`` does."""
    where = Locations(env, home)
    plan = integration(host, where, gateway, mcp_command(home), ("test-model",))
    install(plan, home / "data" / "integrations.json")
    assert verify(plan) == []


def offered_mcp(trip: Trip) -> bool:
    """Whether a request to the model offered the MCP server's ``retrieve`` tool."""
    return any("retrieve" in json.dumps(request.json) for request in trip.model_requests)


def codex_env(home: Path) -> dict[str, str]:
    return {**base_env(home), "CODEX_HOME": str(home / "codex"), "OPENAI_API_KEY": "sk-test"}


def codex_run(binary: Path, home: Path) -> Callable[[str], Invocation]:
    def build(gateway: str) -> Invocation:
        env = codex_env(home)
        installed(Host.CODEX, home, gateway, env)
        work = home / "work"
        work.mkdir()
        argv = [str(binary), "exec", "--skip-git-repo-check", "-m", "test-model", PROMPT]
        return Invocation(argv, env, work)

    return build


def claude_run(binary: Path, home: Path) -> Callable[[str], Invocation]:
    def build(gateway: str) -> Invocation:
        env = {
            **base_env(home),
            "ANTHROPIC_API_KEY": "sk-ant-test",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_MAX_RETRIES": "0",
            "MCP_CONNECTION_NONBLOCKING": "false",
        }
        installed(Host.CLAUDE, home, gateway, env)
        work = home / "work"
        work.mkdir()
        argv = [str(binary), "-p", PROMPT, "--allowedTools", "Bash", "--output-format", "json"]
        return Invocation(argv, env, work)

    return build


def opencode_run(binary: Path, home: Path) -> Callable[[str], Invocation]:
    def build(gateway: str) -> Invocation:
        work = home / "work"
        work.mkdir()
        env = {
            **base_env(home),
            "PWD": str(work),
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "NPM_CONFIG_REGISTRY": "http://127.0.0.1:9/",
        }
        installed(Host.OPENCODE, home, gateway, env)
        words = PROMPT.split()
        argv = [str(binary), "run", "--pure", "--auto", "-m", "skillstate/test-model", *words]
        return Invocation(argv, env, work)

    return build


async def test_codex_configured_by_integrate(codex: Path, tmp_path: Path) -> None:
    trip = await round_trip(codex_run(codex, tmp_path), mode="off")
    assert_round_trip(trip, source="codex")
    # `codex exec` sends its first request before a slow MCP server has started (about 2 s
    # for `skillstate mcp`), so the registration is checked with Codex's own listing.
    argv = [str(codex), "mcp", "list", "--json"]
    listing = await run_cli(Invocation(argv, codex_env(tmp_path), tmp_path / "work"))
    assert listing.returncode == 0, listing.stderr
    [server] = json.loads(listing.stdout)
    assert server["name"] == "skillstate" and server["enabled"] is True, listing.stdout
    assert server["transport"]["args"] == ["mcp"], listing.stdout


async def test_claude_code_configured_by_integrate(claude: Path, tmp_path: Path) -> None:
    trip = await round_trip(claude_run(claude, tmp_path), mode="off")
    assert_round_trip(trip, source="claude-code")
    assert offered_mcp(trip), trip.report()


async def test_opencode_configured_by_integrate(opencode: Path, tmp_path: Path) -> None:
    trip = await round_trip(opencode_run(opencode, tmp_path), mode="off")
    assert_round_trip(trip, source="opencode")
    assert offered_mcp(trip), trip.report()
