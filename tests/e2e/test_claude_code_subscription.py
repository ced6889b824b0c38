"""The real Claude Code logged in with a subscription (``CLAUDE_CODE_OAUTH_TOKEN``, a token of
the test's own making) through the gateway in its default configuration: every request it
makes reaches the upstream byte for byte, with its own token and beta headers, however many
rounds the task takes; the gateway names the login and rewrites nothing (issue 27)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from e2e_support import Invocation, Trip, base_env, run_cli
from real_llama import Tap

from skillstate.economics.exchange import Exchange
from skillstate.protocols.logins import Login
from skillstate.testing import ScriptedUpstream
from skillstate.testing.agents import AgentPolicy
from skillstate.testing.gateway import gateway_for

pytestmark = pytest.mark.e2e

OAUTH = "sk-ant-oat01-" + "e2e0" * 20 + "-test0AA"
"""A subscription access token of the test's own making: Claude Code takes it from
``CLAUDE_CODE_OAUTH_TOKEN`` as it would a real one and asks nothing of Anthropic offline."""
PROMPT = "Print the end-to-end marker with your shell tool."


async def test_claude_code_s_subscription_reaches_the_upstream_byte_for_byte(
    claude: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    policy = AgentPolicy()
    exchanges: list[Exchange] = []
    lines: list[str] = []
    handler = _Lines(lines)
    logger = logging.getLogger("skillstate")
    logger.addHandler(handler)
    caplog.set_level(logging.INFO, logger="skillstate")
    work = tmp_path / "work"
    work.mkdir()
    try:
        async with (
            ScriptedUpstream(policy) as upstream,
            gateway_for(upstream.url) as gateway,  # the default settings: mode hybrid
            Tap(gateway.url) as tap,
        ):
            gateway.context.observers.append(exchanges.append)
            env = {
                **base_env(tmp_path),
                "ANTHROPIC_BASE_URL": tap.url,
                "CLAUDE_CODE_OAUTH_TOKEN": OAUTH,
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_TELEMETRY": "1",
                "CLAUDE_CODE_MAX_RETRIES": "0",
            }
            argv = [str(claude), "-p", PROMPT, "--allowedTools", "Bash", "--output-format", "json"]
            finished = await run_cli(Invocation(argv, env, work))
    finally:
        logger.removeHandler(handler)
    trip = Trip("auto", finished, upstream, policy, exchanges, lines)
    report = trip.report()
    assert finished.returncode == 0, report
    assert json.loads(finished.stdout)["result"] == trip.policy.final_text, report
    sent = [tapped.body for tapped in tap.posts() if tapped.path.startswith("/v1/messages")]
    heard = trip.model_requests
    assert len(sent) >= 2, report  # the task's first round and the one after its tool call
    assert [request.body for request in heard] == sent, report
    for request in heard:
        assert request.headers["authorization"] == f"Bearer {OAUTH}", report
        assert "oauth-2025-04-20" in request.headers["anthropic-beta"], report
        system = request.json["system"]
        assert system[0]["text"].startswith("x-anthropic-billing-header:"), report
        names = [tool["name"] for tool in request.json["tools"]]
        assert "skill_state" not in names and "recall" not in names, report
    assert [e.login for e in exchanges] == [Login.ANTHROPIC_SUBSCRIPTION] * len(sent), report
    assert all(e.mode == "off" and e.forwarded_original for e in exchanges), report
    told = [line for line in lines if "passed through untouched" in line]
    assert len(told) == 1, report


class _Lines(logging.Handler):
    def __init__(self, lines: list[str]) -> None:
        super().__init__(logging.DEBUG)
        self.lines = lines

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname} {record.name}: {record.getMessage()}")
