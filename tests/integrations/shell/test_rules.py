"""The host's own deny and ask rules keep their say: a command whose program one names is left
untouched by the hook, since the host would match the rule against the rewritten command
(``skillstate shell ... -- CMD``), which no longer names it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skillstate.integrations.shell import Host, answer
from skillstate.integrations.shell.rules import EVERY, named

SRC = Path(__file__).parents[3] / "src"


def _settings(deny: tuple[str, ...] = (), ask: tuple[str, ...] = (), **more: list[str]) -> str:
    return json.dumps({"permissions": {"deny": list(deny), "ask": list(ask), **more}})


@pytest.mark.parametrize(
    ("rules", "programs"),
    [
        (_settings(deny=("Bash(cat .env)",)), {"cat"}),
        (_settings(ask=("Bash(git diff:*)", "Bash(/usr/bin/grep:*)")), {"git", "grep"}),
        (_settings(deny=("Bash",)), {EVERY}),
        (_settings(deny=("Bash(*)",)), {EVERY}),
        (_settings(ask=("Bash(* .env)",)), {EVERY}),
        (_settings(deny=("Read(./.env)", "WebFetch"), allow=["Bash(cat:*)"]), set()),
        ("{not json", set()),
        ('{"permissions": ["Bash"]}', set()),
    ],
)
def test_claude_codes_deny_and_ask_rules_name_programs(rules: str, programs: set[str]) -> None:
    assert named("claude", [rules]) == programs


@pytest.mark.parametrize(
    ("rules", "programs"),
    [
        ('prefix_rule(pattern=["pytest"], decision="prompt")', {"pytest"}),
        (
            'prefix_rule(\n  pattern = [["git", "gh"], "log"],\n  decision = "forbidden",\n)',
            {"git", "gh"},
        ),
        ('prefix_rule(pattern=["cat"], decision="allow")', set()),
        ('prefix_rule(pattern=["tail"])', {"tail"}),
        ('prefix_rule(decision="prompt")', {EVERY}),
        ("# nothing here", set()),
    ],
)
def test_codex_rules_name_programs(rules: str, programs: set[str]) -> None:
    assert named("codex", [rules]) == programs


def _event(command: str, cwd: Path) -> str:
    event = {"cwd": str(cwd), "tool_name": "Bash", "tool_input": {"command": command}}
    return json.dumps({"hook_event_name": "PreToolUse", **event})


def test_a_claude_rule_for_the_original_command_leaves_it_to_claude_code(tmp_path: Path) -> None:
    user = tmp_path / "user-settings.json"
    user.write_text(_settings(deny=("Bash(cat .env)",)))
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.local.json").write_text(_settings(ask=("Bash(git log:*)",)))
    for command in ("cat .env", "cat README", "git log"):
        reply = answer(_event(command, project), Host.CLAUDE, rule_files=[user])
        assert reply.output == "", command
    reply = answer(_event("ls", project), Host.CLAUDE, rule_files=[user])
    assert json.loads(reply.output)["hookSpecificOutput"]["permissionDecision"] == "allow"


def test_a_codex_rule_for_the_original_command_leaves_it_to_codex(tmp_path: Path) -> None:
    rules = tmp_path / "default.rules"
    rules.write_text('prefix_rule(pattern=["grep"], decision="prompt")\n')
    assert answer(_event("grep -rn x .", tmp_path), Host.CODEX, rule_files=[rules]).output == ""
    assert answer(_event("ls", tmp_path), Host.CODEX, rule_files=[rules]).output != ""


@pytest.mark.parametrize("host", ["claude", "codex"])
def test_the_hook_command_reads_the_hosts_rule_files(tmp_path: Path, host: str) -> None:
    home = tmp_path / "home"
    project = tmp_path / "project"
    project.mkdir()
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(_settings(deny=("Bash(cat:*)",)))
    (home / ".codex" / "rules").mkdir(parents=True)
    (home / ".codex" / "rules" / "mine.rules").write_text('prefix_rule(pattern=["cat"])\n')
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "PYTHONPATH": str(SRC)}
    run = [sys.executable, "-m", "skillstate", "hook", host]
    for command, rewritten in (("cat notes", False), ("ls", True)):
        event = _event(command, project).encode()
        done = subprocess.run(run, input=event, capture_output=True, env=env, check=True)
        assert bool(done.stdout.strip()) is rewritten, (command, done.stdout)
