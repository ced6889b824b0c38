"""The real Codex CLI signed in with ChatGPT, configured only by ``skillstate integrate codex
--install``, runs the 30-turn hybrid loop (``test_long_loop``) through the gateway to the
ChatGPT backend's fake (``testing.chatgpt_backend``), offline (issue 27, "Done when").

The login is one of the test's own making: an unsigned JWT whose claims are the ones Codex
reads (``https://api.openai.com/auth`` with the account id and plan) and whose ``exp`` is
decades away, with ``last_refresh`` now, so Codex never tries to refresh it (and, should it
try, the refresh URL is a closed port of 127.0.0.1). Codex's own ChatGPT traffic (plugins,
account checks at ``chatgpt_base_url``) goes to a closed port too.

What it shows: the install kept Codex's login (``requires_openai_auth``, no ``env_key``) and
said so; every model request reached the backend with Codex's bearer token and
``ChatGPT-Account-ID``; none broke the backend's rules (streamed, ``store`` false, no
``max_output_tokens``, ``instructions`` as Codex sent them, which Codex 0.171 leaves out when
it has no model metadata); every encrypted reasoning item Codex sent back is one the backend
wrote, byte for byte; the loop collapsed and recalled as for an API key; the ledger
measured it (``/cost``: what a pass-through would have cost, and what was saved); and Codex
sent every request as a frame on one WebSocket (the install's ``supports_websockets``), which
the gateway served as it serves a ``POST``.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from e2e_support import Invocation, Trip, base_env, gateway_log, run_cli
from test_codex import assert_codex_session
from test_codex_socket import assert_over_the_socket, socket_log  # noqa: F401 (autouse)
from test_integrate_clients import mcp_command
from test_long_loop import (
    FACT,
    FINAL_TEXT,
    LIMIT_S,
    SIGMA,
    TURNS,
    assert_clean_session,
    assert_collapsed,
    assert_loop_finished,
    assert_recalled,
    command_for,
)

import skillstate
from skillstate.economics.exchange import Exchange
from skillstate.testing.agents import LoopPolicy
from skillstate.testing.chatgpt_backend import ChatGPTBackend
from skillstate.testing.gateway import gateway_for
from skillstate.testing.recording import RecordedRequest
from skillstate.testing.replies import Reply

pytestmark = pytest.mark.e2e

MODEL = "gpt-5-codex"
ACCOUNT = "acct-skillstate-e2e"
CLOSED = "http://127.0.0.1:9"
"""A closed port: what Codex's own ChatGPT calls and any refresh would reach."""
THOUGHT = "Thinking about the next listing."


def _part(value: dict[str, Any]) -> str:
    raw = json.dumps(value, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def unsigned_jwt(claims: dict[str, Any]) -> str:
    """A JWT Codex can read but nobody signed (its signature part is a placeholder)."""
    return f"{_part({'alg': 'none', 'typ': 'JWT'})}.{_part(claims)}.{_part({'sig': 0})}"


def chatgpt_login(codex_home: Path) -> str:
    """Write a ChatGPT-mode ``auth.json`` that never expires; its access token."""
    now = int(time.time())
    auth = {
        "chatgpt_account_id": ACCOUNT,
        "chatgpt_plan_type": "pro",
        "chatgpt_user_id": "user-skillstate-e2e",
    }
    far = now + 50 * 365 * 86400
    claims = {"iat": now, "exp": far, "https://api.openai.com/auth": auth}
    id_token = unsigned_jwt({**claims, "email": "e2e@example.invalid"})
    access = unsigned_jwt({**claims, "scp": ["openid", "model.request"]})
    refreshed = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    tokens = {
        "id_token": id_token,
        "access_token": access,
        "refresh_token": "rt-skillstate-e2e",
        "account_id": ACCOUNT,
    }
    login = {"auth_mode": "chatgpt", "OPENAI_API_KEY": None, "tokens": tokens}
    (codex_home / "auth.json").write_text(json.dumps({**login, "last_refresh": refreshed}))
    return access


@dataclasses.dataclass
class Run:
    """What the install said, and the token Codex holds."""

    said: str = ""
    token: str = ""


def codex_signed_in(binary: Path, home: Path, run: Run) -> Callable[[str], Invocation]:
    """``codex exec`` in a home whose Codex is signed in with ChatGPT, after ``skillstate
    integrate codex --install`` (the real command, in a child process) pointed it at the
    gateway."""

    def build(gateway: str) -> Invocation:
        codex_home, work = home / "codex", home / "work"
        codex_home.mkdir()
        work.mkdir()
        run.token = chatgpt_login(codex_home)
        (codex_home / "config.toml").write_text(
            f'model = "{MODEL}"\nchatgpt_base_url = "{CLOSED}/backend-api/"\n\n'
            "[analytics]\nenabled = false\n"
        )
        command = mcp_command(home)
        env = {
            **base_env(home),
            "PATH": f"{Path(command).parent}{os.pathsep}{base_env(home)['PATH']}",
            "CODEX_HOME": str(codex_home),
            "CODEX_REFRESH_TOKEN_URL_OVERRIDE": f"{CLOSED}/oauth/token",
        }
        source = str(Path(skillstate.__file__).parents[1])
        integrate = ["integrate", "codex", "--install", "--gateway", gateway]
        installing = subprocess.run(
            [sys.executable, "-m", "skillstate", *integrate],
            env={**env, "PYTHONPATH": source, "SKILLSTATE_DATA_DIR": str(home / "data")},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        run.said = installing.stdout + installing.stderr
        argv = [str(binary), "exec", "--skip-git-repo-check", "-m", MODEL, "List things."]
        return Invocation(argv, env, work)

    return build


def with_reasoning(policy: LoopPolicy) -> Callable[[RecordedRequest], Reply]:
    """``policy``, each of whose answers also carries a reasoning item (encrypted, since
    Codex asks for ``reasoning.encrypted_content``), which Codex sends back next turn."""

    def play(request: RecordedRequest) -> Reply:
        reply = policy(request)
        return reply if reply.error else dataclasses.replace(reply, reasoning=THOUGHT)

    return play


async def chatgpt_trip(invocation: Callable[[str], Invocation]) -> tuple[Trip, ChatGPTBackend, Any]:
    """The loop through a gateway with default settings (hybrid mode), whose ChatGPT backend
    is the fake; the trip, the fake, and the gateway's ``/cost`` at the end."""
    policy = LoopPolicy(
        turns=TURNS,
        command_for=command_for,
        final_text=FINAL_TEXT,
        recall_query=FACT,
        recall_cue=SIGMA,
    )
    exchanges: list[Exchange] = []
    states: dict[str, Any] = {}
    # Codex 0.171 sends no instructions without model metadata: checked below instead.
    with gateway_log() as lines:
        async with (
            ChatGPTBackend(
                with_reasoning(policy), token="", account=ACCOUNT, require_instructions=False
            ) as backend,
            gateway_for(None, settings={"chatgpt_base_url": backend.base_url}) as gateway,
            aiohttp.ClientSession() as http,
        ):
            gateway.context.observers.append(exchanges.append)
            built = invocation(gateway.url)
            backend.token = run_token(built)
            finished = await run_cli(built, LIMIT_S)
            engine = gateway.context.engine
            for session in {exchange.session for exchange in exchanges}:
                states[session] = await engine.describe(session) if engine else None
            async with http.get(gateway.url + "/cost") as answer:
                cost = await answer.json()
    trip = Trip("auto", finished, backend, policy, exchanges, lines, states)
    return trip, backend, cost


def run_token(invocation: Invocation) -> str:
    """The access token the invocation's Codex holds (read back from its auth.json)."""
    auth = json.loads((Path(invocation.env["CODEX_HOME"]) / "auth.json").read_text())
    return str(auth["tokens"]["access_token"])


def assert_chatgpt_rules(trip: Trip, backend: ChatGPTBackend, token: str) -> None:
    """Every model request reached the backend as Codex's own login, and none broke its
    rules; Codex's reasoning items came back as the backend wrote them."""
    report = trip.report()
    assert backend.broken == [], f"{backend.broken}\n{report}"
    assert {exchange.upstream for exchange in trip.exchanges} == {"chatgpt"}, report
    written = {answer.decode() for answer in backend.answers.values()}
    for request in trip.model_requests:
        assert request.path == "/responses", report
        assert request.headers.get("authorization") == f"Bearer {token}", report
        assert request.headers.get("chatgpt-account-id") == ACCOUNT, report
        assert request.headers.get("originator"), report
        body = request.json
        assert isinstance(body, dict), report
        assert body.get("store") is False and body.get("stream") is True, report
        assert "max_output_tokens" not in body, report
        assert "instructions" not in body, report  # Codex sent none; none was added
        assert body.get("include") == ["reasoning.encrypted_content"], report
        for item in body.get("input", []):
            if isinstance(item, dict) and "encrypted_content" in item:
                sealed = json.dumps(item["encrypted_content"])
                assert any(sealed in answer for answer in written), report
    sent_back = [r for r in trip.model_requests if b'"encrypted_content"' in r.body]
    assert sent_back, f"Codex sent no reasoning item back\n{report}"


def assert_measured(trip: Trip, cost: Any) -> None:
    """The ledger counted the loop as for an API key: every client request, priced, with
    what a pass-through would have sent and cost (an estimate) and what the collapse
    saved."""
    report = f"{json.dumps(cost, indent=1)}\n{trip.report()}"
    totals = cost["totals"]
    assert totals["client_requests"] == len(trip.exchanges), report
    assert totals["failed_requests"] == 0 and totals["unpriced_requests"] == 0, report
    assert totals["passthrough_input_tokens"] > totals["input_tokens"] > 0, report
    assert totals["passthrough_cost_usd"] > totals["cost_usd"] > 0, report
    assert totals["saved_usd"] > 0, report


async def test_codex_signed_in_with_chatgpt_runs_the_long_loop(codex: Path, tmp_path: Path) -> None:
    run = Run()
    trip, backend, cost = await chatgpt_trip(codex_signed_in(codex, tmp_path, run))
    assert "logged in with ChatGPT" in run.said, run.said
    assert run.token and run.token not in run.said, run.said
    config = (tmp_path / "codex" / "config.toml").read_text()
    assert "requires_openai_auth = true" in config and "env_key" not in config, config
    assert_loop_finished(trip)
    assert_clean_session(trip, source="codex")
    assert_collapsed(trip)
    assert_recalled(trip)
    assert_codex_session(trip)
    assert_chatgpt_rules(trip, backend, run.token)
    assert_measured(trip, cost)
    assert_over_the_socket(trip)
