"""Host compaction with the real CLIs: each one compacts its history through the gateway in
hybrid mode, the gateway answers from Σ without asking the upstream, and the summary is what
the CLI carries on with.

* Claude Code: ``claude -p --continue "/compact"`` after a task, then another ``--continue``
  turn whose history starts with the summary.
* Codex, with a provider of its own (local compaction: a checkpoint prompt) and with a provider
  named ``OpenAI`` (remote compaction: a ``compaction_trigger`` item, answered with a
  compaction item the gateway unwraps on the next request). ``model_auto_compact_token_limit``
  makes Codex compact in the middle of the turn once the first reply reports a large prompt.
* OpenCode, whose model is given a small context limit so that the same large prompt makes it
  compact before it continues.

The scripted model patches Σ through ``skill_state`` on its first tool call, so Σ has content
(the gateway offers it from the first request here, not from the session's first boundary).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from e2e_support import TOOLS_AT_ONCE, Finished, Invocation, Trip, base_env, run_cli

from skillstate.economics.exchange import LOCAL, Exchange
from skillstate.gateway import RunningGateway
from skillstate.protocols.openai_responses.compaction import SUMMARY_NOTE
from skillstate.state.tools import SKILL_STATE_TOOL
from skillstate.testing import RecordedRequest, Reply, ScriptedCall, ScriptedUpstream
from skillstate.testing.agents import AgentPolicy, tool_schemas
from skillstate.testing.gateway import gateway_for

pytestmark = pytest.mark.e2e

PATCH = {"objective": "Print the e2e marker", "findings": {"marker": "prints skillstate-e2e"}}
#: What the summary the gateway wrote says first about ``PATCH``.
OBJECTIVE = "## Objective\nPrint the e2e marker"
TASK = "Print the end-to-end marker with your shell tool."
LARGE_PROMPT = 20_000
SMALL_PROMPT = 100


@dataclass
class PatchingPolicy(AgentPolicy):
    """``AgentPolicy`` whose first tool call comes with a ``skill_state`` patch (when the
    gateway offers the tool) and reports a prompt of ``LARGE_PROMPT`` tokens, enough for the
    host to compact; every other reply reports a small one."""

    patched: bool = False

    def __call__(self, request: RecordedRequest) -> Reply:
        reply = super().__call__(request)
        if not reply.calls or self.patched:
            return dataclasses.replace(reply, input_tokens=SMALL_PROMPT)
        self.patched = True
        assert request.wire is not None and isinstance(request.json, dict)
        calls = list(reply.calls)
        if SKILL_STATE_TOOL in dict(tool_schemas(request.wire, request.json)):
            calls.insert(0, ScriptedCall(SKILL_STATE_TOOL, {"patch": PATCH}))
        return dataclasses.replace(reply, calls=calls, input_tokens=LARGE_PROMPT)


@dataclass
class Rig:
    upstream: ScriptedUpstream
    gateway: RunningGateway
    policy: PatchingPolicy
    exchanges: list[Exchange] = field(default_factory=list)
    log: list[str] = field(default_factory=list)

    def report(self, finished: Finished) -> str:
        trip = Trip("auto", finished, self.upstream, self.policy, self.exchanges, self.log)
        return trip.report()

    @property
    def answered(self) -> list[Exchange]:
        """The compactions the gateway answered itself."""
        return [e for e in self.exchanges if e.upstream == LOCAL]

    def heard(self, text: str) -> list[RecordedRequest]:
        """The upstream's requests whose body holds ``text``."""
        return [r for r in self.upstream.requests if text in r.body.decode(errors="replace")]


class _Lines(logging.Handler):
    def __init__(self, lines: list[str]) -> None:
        super().__init__(logging.DEBUG)
        self.lines = lines

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname} {record.name}: {record.getMessage()}")


@asynccontextmanager
async def rigged() -> AsyncIterator[Rig]:
    policy = PatchingPolicy()
    async with ScriptedUpstream(policy) as upstream:
        # skill_state from the first request, so that the model's first patch fills Σ
        settings = {"mode": "hybrid", "collapse": TOOLS_AT_ONCE}
        async with gateway_for(upstream.url, settings=settings) as gateway:
            rig = Rig(upstream, gateway, policy)
            gateway.context.observers.append(rig.exchanges.append)
            handler = _Lines(rig.log)
            logging.getLogger("skillstate").addHandler(handler)
            try:
                yield rig
            finally:
                logging.getLogger("skillstate").removeHandler(handler)


def texts(body: Any) -> str:
    """Every text in (part of) a request body, joined: string contents and text blocks,
    tool results, Responses items alike."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for key, item in value.items():
                if key in ("text", "content", "output") or isinstance(item, list | dict):
                    walk(item)

    walk(body)
    return "\n".join(found)


# --- Claude Code ----------------------------------------------------------------------------


def claude_print(binary: Path, home: Path, gateway: str, *args: str) -> Invocation:
    """``claude -p ARGS`` against the gateway, in the same HOME and folder every time (so
    ``--continue`` finds the session)."""
    work = home / "work"
    work.mkdir(exist_ok=True)
    env = {
        **base_env(home),
        "ANTHROPIC_BASE_URL": gateway,
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }
    argv = [str(binary), "-p", *args, "--allowedTools", "Bash", "--output-format", "json"]
    return Invocation(argv, env, work)


async def test_claude_code_compact_is_answered_from_state(claude: Path, tmp_path: Path) -> None:
    async with rigged() as rig:
        url = rig.gateway.url
        task = await run_cli(claude_print(claude, tmp_path, url, TASK))
        assert task.returncode == 0, rig.report(task)
        before = len(rig.upstream.requests)
        compact = await run_cli(claude_print(claude, tmp_path, url, "--continue", "/compact"))
        report = rig.report(compact)
        assert compact.returncode == 0, report
        assert json.loads(compact.stdout)["is_error"] is False, report
        assert len(rig.upstream.requests) == before, report
        assert [e.client_wire.value for e in rig.answered] == ["anthropic-messages"], report
        after = await run_cli(claude_print(claude, tmp_path, url, "--continue", "What next?"))
        report = rig.report(after)
        assert after.returncode == 0, report
        continued = rig.upstream.requests[before]
        assert OBJECTIVE in texts(continued.json["messages"][0]), report
        assert not rig.heard("create a detailed summary of"), report


# --- Codex ----------------------------------------------------------------------------------

# Top-level keys come before any table. ``name = "OpenAI"`` is what makes Codex compact
# remotely; websockets off spares the reconnect attempts a plain HTTP server costs it.
CODEX_CONFIG = """\
model = "{model}"
model_provider = "gw"
model_auto_compact_token_limit = 8000

[model_providers.gw]
name = "{name}"
base_url = "{base_url}"
env_key = "GW_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
supports_websockets = false

[analytics]
enabled = false
"""


def codex_exec(binary: Path, home: Path, gateway: str, *, remote: bool) -> Invocation:
    codex_home = home / "codex"
    work = home / "work"
    codex_home.mkdir()
    work.mkdir()
    name, model = ("OpenAI", "gpt-5.5") if remote else ("gateway", "test-model")
    config = CODEX_CONFIG.format(model=model, name=name, base_url=gateway + "/v1")
    (codex_home / "config.toml").write_text(config)
    env = {**base_env(home), "CODEX_HOME": str(codex_home), "GW_API_KEY": "sk-test"}
    return Invocation([str(binary), "exec", "--skip-git-repo-check", TASK], env, work)


@pytest.mark.parametrize("remote", [False, True], ids=["own-provider", "openai-provider"])
async def test_codex_compaction_is_answered_from_state(
    codex: Path, tmp_path: Path, remote: bool
) -> None:
    async with rigged() as rig:
        finished = await run_cli(codex_exec(codex, tmp_path, rig.gateway.url, remote=remote))
        report = rig.report(finished)
        assert finished.returncode == 0, report
        assert "context compacted" in finished.stderr, report
        assert rig.policy.final_text in finished.stdout, report
        assert [e.client_wire.value for e in rig.answered] == ["openai-responses"], report
        assert not rig.heard("CONTEXT CHECKPOINT COMPACTION"), report
        assert not rig.heard('"compaction_trigger"'), report
        carried = [r for r in rig.upstream.requests if OBJECTIVE in texts(r.json)]
        assert carried, report
        if remote:
            assert all(SUMMARY_NOTE in texts(r.json) for r in carried), report
            assert not rig.heard('"type":"compaction"'), report


# --- OpenCode -------------------------------------------------------------------------------


def opencode_run(binary: Path, home: Path, gateway: str) -> Invocation:
    """``opencode run`` with a model whose context is small enough that the first reply's
    prompt size makes OpenCode compact."""
    project = home / "proj"
    project.mkdir()
    model = {"name": "test model", "limit": {"context": 16_000, "output": 1_000}}
    config = {
        "provider": {
            "gw": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "gateway",
                "options": {"baseURL": gateway + "/v1", "apiKey": "sk-test"},
                "models": {"test-model": model},
            }
        },
        "model": "gw/test-model",
        "autoupdate": False,
        "share": "disabled",
    }
    (project / "opencode.json").write_text(json.dumps(config))
    env = {
        **base_env(home),
        "PWD": str(project),
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "NPM_CONFIG_REGISTRY": "http://127.0.0.1:9/",
    }
    argv = [str(binary), "run", "--pure", "--auto", "-m", "gw/test-model", *TASK.split()]
    return Invocation(argv, env, project)


async def test_opencode_compaction_is_answered_from_state(opencode: Path, tmp_path: Path) -> None:
    async with rigged() as rig:
        finished = await run_cli(opencode_run(opencode, tmp_path, rig.gateway.url))
        report = rig.report(finished)
        assert finished.returncode == 0, report
        assert rig.policy.final_text in finished.stdout, report
        assert [e.client_wire.value for e in rig.answered] == ["openai-chat"], report
        assert not rig.heard("<conversation>"), report
        assert any(OBJECTIVE in texts(r.json) for r in rig.upstream.requests), report
