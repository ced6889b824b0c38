"""The real Claude Code logged in with a subscription (``CLAUDE_CODE_OAUTH_TOKEN``, a token of
the test's own making) through the gateway in its default configuration: every request it
makes reaches the upstream byte for byte, with its own token and beta headers, however many
rounds the task takes; the gateway names the login and rewrites nothing (issue 27).

And what a non-Anthropic base URL changes for such a user, as docs/integrations.md says it
(measured with Claude Code 2.1.197; a newer one that behaves otherwise fails here, and the
docs must follow): it asks for the 200k window unless a ``[1m]`` model is chosen, and it still
reads the subscription's limits from the response headers, which the gateway relays."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from e2e_support import Finished, Invocation, Trip, base_env, run_cli
from real_llama import Tap

from skillstate.economics.exchange import Exchange
from skillstate.protocols.logins import Login
from skillstate.testing import Reply, ScriptedUpstream
from skillstate.testing.agents import AgentPolicy
from skillstate.testing.gateway import gateway_for
from skillstate.testing.policies import Policy, Script

pytestmark = pytest.mark.e2e

OAUTH = "sk-ant-oat01-" + "e2e0" * 20 + "-test0AA"
"""A subscription access token of the test's own making: Claude Code takes it from
``CLAUDE_CODE_OAUTH_TOKEN`` as it would a real one and asks nothing of Anthropic offline."""
PROMPT = "Print the end-to-end marker with your shell tool."
ONE_MILLION = "context-1m-2025-08-07"


@dataclass(slots=True)
class Run:
    """One Claude Code run through a tap (what it sent) and the gateway (what went up)."""

    trip: Trip
    sent: list[bytes]

    @property
    def report(self) -> str:
        return self.trip.report()


async def through_gateway(
    claude: Path, home: Path, policy: Policy, flags: Sequence[str] = ()
) -> Run:
    """Run ``claude -p`` with the subscription token, its base URL a tap in front of a gateway
    with default settings (mode hybrid), the scripted upstream playing ``policy``."""
    exchanges: list[Exchange] = []
    lines = _Lines()
    logger = logging.getLogger("skillstate")
    logger.addHandler(lines)
    work = home / "work"
    work.mkdir()
    try:
        async with (
            ScriptedUpstream(policy) as upstream,
            gateway_for(upstream.url) as gateway,
            Tap(gateway.url) as tap,
        ):
            gateway.context.observers.append(exchanges.append)
            env = {
                **base_env(home),
                "ANTHROPIC_BASE_URL": tap.url,
                "CLAUDE_CODE_OAUTH_TOKEN": OAUTH,
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_TELEMETRY": "1",
                "CLAUDE_CODE_MAX_RETRIES": "0",
            }
            argv = [str(claude), "-p", PROMPT, "--allowedTools", "Bash", *flags]
            finished: Finished = await run_cli(Invocation(argv, env, work))
    finally:
        logger.removeHandler(lines)
    agent = policy if isinstance(policy, AgentPolicy) else AgentPolicy()
    trip = Trip("auto", finished, upstream, agent, exchanges, lines.lines)
    sent = [tapped.body for tapped in tap.posts() if tapped.path.startswith("/v1/messages")]
    return Run(trip, sent)


async def test_claude_code_s_subscription_reaches_the_upstream_byte_for_byte(
    claude: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="skillstate")
    policy = AgentPolicy()
    run = await through_gateway(claude, tmp_path, policy, ("--output-format", "json"))
    trip, report = run.trip, run.report
    assert trip.cli.returncode == 0, report
    assert json.loads(trip.cli.stdout)["result"] == policy.final_text, report
    heard = trip.model_requests
    assert len(run.sent) >= 2, report  # the task's first round and the one after its tool call
    assert [request.body for request in heard] == run.sent, report
    for request in heard:
        assert request.headers["authorization"] == f"Bearer {OAUTH}", report
        beta = request.headers["anthropic-beta"]
        assert "oauth-2025-04-20" in beta and ONE_MILLION not in beta, report
        system = request.json["system"]
        assert system[0]["text"].startswith("x-anthropic-billing-header:"), report
        names = [tool["name"] for tool in request.json["tools"]]
        assert "skill_state" not in names and "recall" not in names, report
    logins = [exchange.login for exchange in trip.exchanges]
    assert logins == [Login.ANTHROPIC_SUBSCRIPTION] * len(run.sent), report
    assert all(e.mode == "off" and e.forwarded_original for e in trip.exchanges), report
    told = [line for line in trip.log if "passed through untouched" in line]
    assert len(told) == 1, report
    usage = json.loads(trip.cli.stdout)["modelUsage"]
    assert {model["contextWindow"] for model in usage.values()} == {200_000}, report


async def test_a_1m_model_brings_the_1m_window_back_through_the_gateway(
    claude: Path, tmp_path: Path
) -> None:
    flags = ("--model", "sonnet[1m]", "--output-format", "json")
    run = await through_gateway(claude, tmp_path, AgentPolicy(), flags)
    trip, report = run.trip, run.report
    assert trip.cli.returncode == 0, report
    assert [request.body for request in trip.model_requests] == run.sent, report
    assert all(ONE_MILLION in r.headers["anthropic-beta"] for r in trip.model_requests), report
    usage = json.loads(trip.cli.stdout)["modelUsage"]
    assert {model["contextWindow"] for model in usage.values()} == {1_000_000}, report


LIMITS = {
    "anthropic-ratelimit-unified-status": "allowed_warning",
    "anthropic-ratelimit-unified-reset": "1893456000",
    "anthropic-ratelimit-unified-representative-claim": "five_hour",
    "anthropic-ratelimit-unified-5h-status": "allowed_warning",
    "anthropic-ratelimit-unified-5h-utilization": "0.91",
    "anthropic-ratelimit-unified-5h-reset": "1893456000",
}
"""What Anthropic says of a subscription's limits on each reply (the five-hour window at 91 %)."""


async def test_the_subscription_s_limits_reach_claude_code_through_the_gateway(
    claude: Path, tmp_path: Path
) -> None:
    """Claude Code reads its limits from the reply's headers through any base URL; the
    gateway relays them, so its headless stream still reports them."""
    policy = Script([Reply(text="Nothing to run.", headers=LIMITS)] * 2)
    flags = ("--output-format", "stream-json", "--verbose")
    run = await through_gateway(claude, tmp_path, policy, flags)
    trip, report = run.trip, run.report
    assert trip.cli.returncode == 0, report
    events = [json.loads(line) for line in trip.cli.stdout.splitlines() if line.strip()]
    limits = [event["rate_limit_info"] for event in events if event["type"] == "rate_limit_event"]
    assert limits, report
    assert limits[0]["status"] == "allowed_warning", report
    assert limits[0]["rateLimitType"] == "five_hour", report
    assert limits[0]["utilization"] == pytest.approx(0.91), report


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname} {record.name}: {record.getMessage()}")
