"""Issue 22: a command that runs code (``pytest -q``) is never answered ``"allow"``; the
user's own prompt still decides, in the real Claude Code and Codex CLIs, with the real
``skillstate hook`` (``real``). Claude Code gets ``ask`` with the rewrite: its user is asked
about ``skillstate shell --project WORK -- pytest -q``, and after a yes that is what runs. Codex
takes a rewrite only with ``allow``, so the hook leaves the call untouched, and Codex asks about
``pytest -q`` itself. A stand-in hook script answers what the real one does not, to pin each
host's behaviour that the choice rests on: Codex refuses ``ask`` and a decision-less
``updatedInput`` (the call runs untouched), and ``allow`` would rewrite the call out of the
user's own ``pytest`` rule.

Who stands for the user:
- Claude Code ``-p``: ``--permission-prompt-tool mcp__prompt__approve``, a tiny MCP stdio
  server of ours that logs the tool input it is asked about and answers allow or deny.
- Codex ``exec``: exec mode never asks (``approval: never``) unless ``--approve-for-me``; then
  an approval goes first to the ``PermissionRequest`` hook, here a script of ours that logs the
  event and answers allow or deny. A user's rules file ``prefix_rule(pattern=["pytest"],
  decision="prompt")`` is what makes ``pytest`` need approval at all (Codex's sandbox, not a
  prompt, is what gates a plain command).

What ran is read from disk: the project's one test appends to ``pytest.log``, and the
``skillstate`` on PATH (this checkout, behind a shim) appends its arguments to
``skillstate.log``.
"""

from __future__ import annotations

import hashlib
import json
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from e2e_support import Invocation, Trip, base_env, round_trip

import skillstate
from skillstate.testing.agents import AgentPolicy

pytestmark = pytest.mark.e2e

SOURCE = Path(skillstate.__file__).parents[1]
COMMAND = "pytest -q"
PROMPT = "Run the tests."

HOOK = """\
import json, os, shlex, sys
event = json.load(sys.stdin)
mode, program = sys.argv[1], sys.argv[2]
tool_input = dict(event.get("tool_input") or {})
if tool_input.get("command") != "pytest -q":
    sys.exit(0)
tool_input["command"] = shlex.quote(program) + " shell -- pytest -q"
out = {"hookEventName": "PreToolUse", "updatedInput": tool_input}
if mode != "none":
    out["permissionDecision"] = mode
    out["permissionDecisionReason"] = "skillstate shell: runs code, the user decides"
print(json.dumps({"hookSpecificOutput": out}))
"""

#: Claude Code's permission prompt: one MCP tool, ``approve``; its answer is JSON text.
PROMPT_SERVER = """\
import json, os
from typing import Any
from mcp.server.mcpserver import MCPServer

server = MCPServer("prompt")

@server.tool(structured_output=False)
def approve(tool_name: str, input: dict[str, Any], tool_use_id: str | None = None) -> str:
    with open(os.environ["PROMPT_LOG"], "a") as log:
        log.write(json.dumps({"tool_name": tool_name, "input": input}) + "\\n")
    if os.environ["PROMPT_ANSWER"] == "allow":
        return json.dumps({"behavior": "allow", "updatedInput": input})
    return json.dumps({"behavior": "deny", "message": "the user said no"})

server.run("stdio")
"""

#: Codex's PermissionRequest hook, standing for the user's approval.
PERMISSION_HOOK = """\
import json, os, sys
event = json.load(sys.stdin)
with open(os.environ["PROMPT_LOG"], "a") as log:
    log.write(json.dumps(event) + "\\n")
decision = {"behavior": os.environ["PROMPT_ANSWER"]}
if decision["behavior"] == "deny":
    decision["message"] = "the user said no"
output = {"hookEventName": "PermissionRequest", "decision": decision}
print(json.dumps({"hookSpecificOutput": output}))
"""

PROJECT_TEST = """\
def test_runs():
    with open("pytest.log", "a") as log:
        log.write("ran\\n")
"""


@dataclass(frozen=True, slots=True)
class Project:
    """A throwaway HOME with a project (``work``) holding one test, the shims, and the logs."""

    home: Path

    @property
    def work(self) -> Path:
        return self.home / "work"

    @property
    def program(self) -> Path:
        return self.home / "bin" / "skillstate"

    def env(self, answer: str, **extra: str) -> dict[str, str]:
        env = base_env(self.home)
        env["PATH"] = f"{self.home / 'bin'}:{env['PATH']}"
        return {
            **env,
            "PROMPT_LOG": str(self.home / "prompt.log"),
            "PROMPT_ANSWER": answer,
            **extra,
        }

    def hook_line(self, mode: str, host: str) -> str:
        if mode == "real":
            skillstate = f"env PYTHONPATH={SOURCE} {sys.executable} -m skillstate"
            return f"{skillstate} hook {host} --program {self.program}"
        return f"{sys.executable} {self.home / 'hook.py'} {mode} {self.program}"

    def asked(self) -> list[dict[str, Any]]:
        """What the user's prompt was asked about, in order."""
        log = self.home / "prompt.log"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    def pytest_runs(self) -> int:
        log = self.work / "pytest.log"
        return len(log.read_text().splitlines()) if log.exists() else 0

    def skillstate_calls(self) -> list[str]:
        log = self.home / "skillstate.log"
        return log.read_text().splitlines() if log.exists() else []


def project(home: Path) -> Project:
    here = Project(home)
    (home / "bin").mkdir(parents=True)
    here.work.mkdir()
    (here.work / "test_one.py").write_text(PROJECT_TEST)
    (home / "hook.py").write_text(HOOK)
    _script(
        here.program,
        f'echo "$*" >> {home / "skillstate.log"}\n'
        f'PYTHONPATH={SOURCE} exec {sys.executable} -m skillstate "$@"\n',
    )
    _script(home / "bin" / "pytest", f'exec {sys.executable} -m pytest "$@"\n')
    return here


def _script(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def tool_texts(trip: Trip) -> list[str]:
    return [output.text for output in trip.policy.outputs]


# --- Claude Code ------------------------------------------------------------------------


def claude_run(
    binary: Path, here: Project, hook: str, answer: str, ask: tuple[str, ...] = ()
) -> Callable[[str], Invocation]:
    def build(gateway: str) -> Invocation:
        handler = {"type": "command", "command": here.hook_line(hook, "claude"), "timeout": 30}
        settings: dict[str, Any] = {
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [handler]}]},
            "permissions": {"ask": list(ask)},
        }
        (here.home / ".claude").mkdir()
        (here.home / ".claude" / "settings.json").write_text(json.dumps(settings))
        (here.home / ".claude.json").write_text(json.dumps({"hasCompletedOnboarding": True}))
        (here.home / "prompt.py").write_text(PROMPT_SERVER)
        server = {
            "type": "stdio",
            "command": sys.executable,
            "args": [str(here.home / "prompt.py")],
        }
        mcp = here.home / "mcp.json"
        mcp.write_text(json.dumps({"mcpServers": {"prompt": server}}))
        env = here.env(
            answer,
            ANTHROPIC_BASE_URL=gateway,
            ANTHROPIC_API_KEY="sk-ant-test",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_TELEMETRY="1",
            CLAUDE_CODE_MAX_RETRIES="0",
            MCP_CONNECTION_NONBLOCKING="false",
        )
        argv = [str(binary), "-p", PROMPT, "--output-format", "json"]
        argv += ["--mcp-config", str(mcp), "--strict-mcp-config"]
        argv += ["--permission-prompt-tool", "mcp__prompt__approve"]
        return Invocation(argv, env, here.work)

    return build


async def claude_trip(
    claude: Path,
    here: Project,
    hook: str,
    answer: str,
    command: str = COMMAND,
    ask: tuple[str, ...] = (),
) -> Trip:
    build = claude_run(claude, here, hook, answer, ask)
    trip = await round_trip(build, mode="off", policy=AgentPolicy(command=command))
    assert trip.cli.returncode == 0, trip.report()
    assert json.loads(trip.cli.stdout)["is_error"] is False, trip.report()
    return trip


async def test_claude_code_asks_the_user_about_the_rewritten_command(
    claude: Path, tmp_path: Path
) -> None:
    """The real hook answers ``ask``: the prompt is asked about the rewritten command, and
    after the user's yes that is what runs, its output reduced where it pays."""
    here = project(tmp_path)
    trip = await claude_trip(claude, here, "real", "allow")
    report = trip.report()
    shell = f"shell --project {here.work} -- {COMMAND}"
    assert [(a["tool_name"], a["input"]["command"]) for a in here.asked()] == [
        ("Bash", f"{here.program} {shell}")
    ], report
    assert here.skillstate_calls() == [shell], report
    assert here.pytest_runs() == 1, report
    assert any("1 passed" in text for text in tool_texts(trip)), report


async def test_claude_code_runs_nothing_when_the_user_says_no(claude: Path, tmp_path: Path) -> None:
    here = project(tmp_path)
    trip = await claude_trip(claude, here, "real", "deny")
    report = trip.report()
    assert len(here.asked()) == 1, report
    assert here.skillstate_calls() == [] and here.pytest_runs() == 0, report
    assert tool_texts(trip) == ["the user said no"], report
    [denial] = json.loads(trip.cli.stdout)["permission_denials"]
    assert denial["tool_input"]["command"].endswith(f"-- {COMMAND}"), report


async def test_claude_code_keeps_its_users_rule_for_a_read_only_command(
    claude: Path, tmp_path: Path
) -> None:
    """The user asked to be asked about ``ls``: the real hook, which would allow a rewritten
    ``ls`` that the rule no longer names, leaves it untouched, and the user is asked about it."""
    here = project(tmp_path)
    trip = await claude_trip(claude, here, "real", "allow", command="ls", ask=("Bash(ls:*)",))
    report = trip.report()
    assert [a["input"]["command"] for a in here.asked()] == ["ls"], report
    assert here.skillstate_calls() == [], report
    assert any("test_one.py" in text for text in tool_texts(trip)), report


# --- Codex --------------------------------------------------------------------------------

CODEX_CONFIG = """\
model = "test-model"
model_provider = "gw"
sandbox_mode = "workspace-write"
# A login shell would reset PATH from /etc/profile, and lose the shims.
allow_login_shell = false

[model_providers.gw]
name = "gateway"
base_url = "{base_url}"
env_key = "GW_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false
"""

#: The user's own rule: ask before running pytest.
ASK_BEFORE_PYTEST = 'prefix_rule(pattern=["pytest"], decision="prompt")\n'


def codex_hook(config: Path, event: str, key: str, line: str) -> str:
    """A ``[[hooks.EVENT]]`` group for ``line``, and the trust Codex wants for it."""
    handler = {"type": "command", "command": line, "timeout": 30, "async": False}
    identity = {"event_name": key, "matcher": "^Bash$", "hooks": [handler]}
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    trusted = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    return "\n".join(
        [
            f"[[hooks.{event}]]",
            'matcher = "^Bash$"',
            f"[[hooks.{event}.hooks]]",
            'type = "command"',
            f"command = {json.dumps(line)}",
            "timeout = 30",
            f"[hooks.state.{json.dumps(f'{config}:{key}:0:0')}]",
            f"trusted_hash = {json.dumps(trusted)}",
            "",
        ]
    )


def codex_run(
    binary: Path, here: Project, hook: str, answer: str, *, approve: bool = True
) -> Callable[[str], Invocation]:
    def build(gateway: str) -> Invocation:
        codex_home = here.home / "codex"
        (codex_home / "rules").mkdir(parents=True)
        (codex_home / "rules" / "default.rules").write_text(ASK_BEFORE_PYTEST)
        (here.home / "permission.py").write_text(PERMISSION_HOOK)
        config = codex_home / "config.toml"
        permission = f"{sys.executable} {here.home / 'permission.py'}"
        config.write_text(
            CODEX_CONFIG.format(base_url=gateway + "/v1")
            + codex_hook(config, "PreToolUse", "pre_tool_use", here.hook_line(hook, "codex"))
            + codex_hook(config, "PermissionRequest", "permission_request", permission)
        )
        env = here.env(answer, CODEX_HOME=str(codex_home), GW_API_KEY="sk-test")
        # --approve-for-me (approval on-request, workspace-write) refuses --sandbox beside it.
        argv = [str(binary), "exec", "--skip-git-repo-check"]
        argv += ["--approve-for-me"] if approve else []
        return Invocation([*argv, PROMPT], env, here.work)

    return build


async def codex_trip(codex: Path, here: Project, hook: str, answer: str, **kw: bool) -> Trip:
    build = codex_run(codex, here, hook, answer, **kw)
    trip = await round_trip(build, mode="off", policy=AgentPolicy(command=COMMAND))
    assert trip.cli.returncode == 0, trip.report()
    return trip


@pytest.mark.parametrize("decision", ["real", "ask", "none"])
async def test_codex_asks_the_user_about_an_untouched_command(
    codex: Path, tmp_path: Path, decision: str
) -> None:
    """The real hook prints nothing; a hook answering what Codex refuses (``ask``;
    ``updatedInput`` without ``allow``) fails in Codex: either way Codex runs the call
    untouched, its rule asks the user about ``pytest -q`` (the PermissionRequest hook), and
    after the yes pytest itself runs."""
    here = project(tmp_path)
    trip = await codex_trip(codex, here, decision, "allow")
    report = trip.report()
    asked = here.asked()
    assert [(a["hook_event_name"], a["tool_input"]["command"]) for a in asked] == [
        ("PermissionRequest", COMMAND)
    ], report
    assert here.skillstate_calls() == [] and here.pytest_runs() == 1, report
    failed = "hook: PreToolUse Failed" in trip.cli.stderr
    assert failed is (decision != "real"), report


async def test_codex_runs_nothing_when_the_user_says_no(codex: Path, tmp_path: Path) -> None:
    here = project(tmp_path)
    trip = await codex_trip(codex, here, "real", "deny")
    report = trip.report()
    assert len(here.asked()) == 1 and here.pytest_runs() == 0, report
    assert any('Rejected(\\"the user said no\\")' in t for t in tool_texts(trip)), report


async def test_codex_exec_rejects_what_needs_approval_without_a_reviewer(
    codex: Path, tmp_path: Path
) -> None:
    """Plain ``codex exec`` (approval: never): the rule's prompt becomes a rejection the model
    reads; nothing runs and no one is asked."""
    here = project(tmp_path)
    trip = await codex_trip(codex, here, "real", "allow", approve=False)
    report = trip.report()
    assert here.asked() == [] and here.pytest_runs() == 0, report
    never = "approval required by policy, but AskForApproval is set to Never"
    assert any(never in text for text in tool_texts(trip)), report


async def test_codex_allow_rewrites_out_of_the_users_rule(codex: Path, tmp_path: Path) -> None:
    """Why the real hook does not rewrite a code-running command for Codex (a stand-in that
    does): ``allow`` is the only answer Codex takes a rewrite with, and the user's ``pytest``
    rule no longer matches ``skillstate shell -- pytest -q``, so no one is asked and pytest
    runs."""
    here = project(tmp_path)
    trip = await codex_trip(codex, here, "allow", "deny")
    report = trip.report()
    assert here.asked() == [], report
    assert here.skillstate_calls() == [f"shell -- {COMMAND}"], report
    assert here.pytest_runs() == 1, report
