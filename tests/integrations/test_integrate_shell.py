"""``integrate HOST --shell``: the shell lane's PreToolUse hook in Claude Code's settings (an
entry of ours among the user's) and in Codex's config.toml (a group and its trust)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from integrate_support import COMMAND, GATEWAY, locations, record, snapshot
from test_integrate_cli import run

from skillstate.integrations import (
    Host,
    Integration,
    IntegrationError,
    install,
    integration,
    uninstall,
    verify,
)
from skillstate.integrations.probes import grants, hook_installed, shell_probe
from skillstate.integrations.shellhook import codex_trust_hash, command

USER_HOOKS = {
    "theme": "dark",
    "hooks": {"PreToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "x"}]}]},
}


def shell_plan(host: Host, tmp: Path, shell: bool = True, **kwargs: object) -> Integration:
    where = locations(tmp, **kwargs)  # type: ignore[arg-type]
    return integration(host, where, GATEWAY, COMMAND, shell=shell)


def settings_file(tmp: Path) -> Path:
    return tmp / "home" / ".claude" / "settings.json"


def config_file(tmp: Path) -> Path:
    return tmp / "home" / ".codex" / "config.toml"


def pre_tool_use(path: Path) -> list[dict[str, object]]:
    groups: list[dict[str, object]] = json.loads(path.read_text())["hooks"]["PreToolUse"]
    return groups


def test_the_trust_hash_is_the_one_codex_computes() -> None:
    """Codex 0.171's ``hooks/list`` (app server) reported this ``currentHash`` for a
    PreToolUse hook with matcher ``.*``, command ``/tmp/hx/a/hook.sh`` and the default
    600 s timeout; the e2e test checks the hash of our own hook against the real CLI."""
    expected = "sha256:b483d111e5186705eb3feae765b5dc99653f8387c3636ff48ae96ae5516faf64"
    assert codex_trust_hash(".*", "/tmp/hx/a/hook.sh", 600) == expected


def test_the_hook_command_names_the_program_twice() -> None:
    assert command("/opt/my tools/skillstate", "claude") == (
        "'/opt/my tools/skillstate' hook claude --program '/opt/my tools/skillstate'"
    )


def test_claude_gets_an_entry_beside_the_users_hooks(tmp_path: Path) -> None:
    path = settings_file(tmp_path)
    path.parent.mkdir(parents=True)
    original = json.dumps(USER_HOOKS, indent=4).encode()
    path.write_bytes(original)
    plan = shell_plan(Host.CLAUDE, tmp_path)
    install(plan, record(tmp_path))
    groups = pre_tool_use(path)
    assert groups[0] == USER_HOOKS["hooks"]["PreToolUse"][0]  # type: ignore[index]
    assert groups[1]["matcher"] == "Bash"
    assert groups[1]["hooks"] == [
        {"type": "command", "command": command(COMMAND, "claude"), "timeout": 30}
    ]
    assert verify(plan) == []
    before = snapshot(tmp_path)
    assert install(plan, record(tmp_path)) == []  # idempotent
    assert snapshot(tmp_path) == before
    uninstall(plan, record(tmp_path))
    assert path.read_bytes() == original


def test_claude_hook_list_created_and_removed_again(tmp_path: Path) -> None:
    path = settings_file(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text('{"theme": "dark"}')
    plan = shell_plan(Host.CLAUDE, tmp_path)
    install(plan, record(tmp_path))
    path.write_text(json.dumps(json.loads(path.read_text()) | {"added": 1}))  # user edits it
    uninstall(plan, record(tmp_path))
    assert json.loads(path.read_text()) == {"theme": "dark", "added": 1}


def test_after_a_user_edit_uninstall_takes_out_only_our_entry(tmp_path: Path) -> None:
    path = settings_file(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(USER_HOOKS))
    plan = shell_plan(Host.CLAUDE, tmp_path)
    install(plan, record(tmp_path))
    edited = json.loads(path.read_text())
    mine = {"matcher": "Read", "hooks": [{"type": "command", "command": "y"}]}
    edited["hooks"]["PreToolUse"].append(mine)
    path.write_text(json.dumps(edited))
    # Uninstall without --shell still knows the entry: the record names it.
    uninstall(shell_plan(Host.CLAUDE, tmp_path, shell=False), record(tmp_path))
    groups = pre_tool_use(path)
    assert groups == [USER_HOOKS["hooks"]["PreToolUse"][0], mine]  # type: ignore[index]


def test_an_install_without_shell_takes_the_hook_out(tmp_path: Path) -> None:
    install(shell_plan(Host.CLAUDE, tmp_path), record(tmp_path))
    assert hook_installed(Host.CLAUDE, locations(tmp_path), COMMAND)
    install(shell_plan(Host.CLAUDE, tmp_path, shell=False), record(tmp_path))
    assert not hook_installed(Host.CLAUDE, locations(tmp_path), COMMAND)
    assert "hooks" not in json.loads(settings_file(tmp_path).read_text())


def test_a_new_program_replaces_our_entry_instead_of_adding_one(tmp_path: Path) -> None:
    install(shell_plan(Host.CLAUDE, tmp_path), record(tmp_path))
    where = locations(tmp_path)
    moved = integration(Host.CLAUDE, where, GATEWAY, "/new/skillstate", shell=True)
    install(moved, record(tmp_path))
    groups = pre_tool_use(settings_file(tmp_path))
    assert [group["hooks"][0]["command"] for group in groups] == [  # type: ignore[index]
        command("/new/skillstate", "claude")
    ]


def test_verify_reports_a_removed_hook(tmp_path: Path) -> None:
    plan = shell_plan(Host.CLAUDE, tmp_path)
    install(plan, record(tmp_path))
    path = settings_file(tmp_path)
    data = json.loads(path.read_text())
    data["hooks"]["PreToolUse"] = []
    path.write_text(json.dumps(data))
    assert verify(plan) == [f"{path}: hooks.PreToolUse lacks skillstate's entry"]


def test_a_hooks_value_that_is_not_a_list_is_refused(tmp_path: Path) -> None:
    path = settings_file(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text('{"hooks": {"PreToolUse": "nope"}}')
    before = snapshot(tmp_path)
    with pytest.raises(IntegrationError, match=r"hooks\.PreToolUse is not a list"):
        install(shell_plan(Host.CLAUDE, tmp_path), record(tmp_path))
    assert snapshot(tmp_path) == before


def test_codex_gets_a_trusted_hook_group(tmp_path: Path) -> None:
    plan = shell_plan(Host.CODEX, tmp_path)
    install(plan, record(tmp_path))
    path = config_file(tmp_path)
    hooks = tomllib.loads(path.read_text())["hooks"]
    line = command(COMMAND, "codex")
    assert hooks["PreToolUse"] == [
        {"matcher": "^Bash$", "hooks": [{"type": "command", "command": line, "timeout": 30}]}
    ]
    key = f"{path.absolute()}:pre_tool_use:0:0"
    assert hooks["state"] == {key: {"trusted_hash": codex_trust_hash("^Bash$", line, 30)}}
    assert verify(plan) == []
    assert hook_installed(Host.CODEX, locations(tmp_path), COMMAND)
    uninstall(plan, record(tmp_path))
    assert not path.exists()


def test_codex_sandbox_may_write_the_archive(tmp_path: Path) -> None:
    data_dir = tmp_path / "data" / "skillstate"
    where = locations(tmp_path)
    plan = integration(Host.CODEX, where, GATEWAY, COMMAND, shell=True, data_dir=data_dir)
    install(plan, record(tmp_path))
    config = tomllib.loads(config_file(tmp_path).read_text())
    assert config["sandbox_workspace_write"] == {"writable_roots": [str(data_dir)]}
    without = integration(Host.CODEX, where, GATEWAY, COMMAND, data_dir=data_dir)
    install(without, record(tmp_path))  # no hook, no writable root
    assert "sandbox_workspace_write" not in tomllib.loads(config_file(tmp_path).read_text())


def test_codex_refuses_a_config_with_hook_groups_of_its_own(tmp_path: Path) -> None:
    """Codex trusts a hook by its place among the file's groups; ours must be the first."""
    path = config_file(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text('[[hooks.PreToolUse]]\nmatcher = "x"\n')
    before = snapshot(tmp_path)
    with pytest.raises(IntegrationError, match=r"already sets hooks\.PreToolUse outside"):
        install(shell_plan(Host.CODEX, tmp_path), record(tmp_path))
    assert snapshot(tmp_path) == before
    # Without the hook there is nothing to clash with.
    install(shell_plan(Host.CODEX, tmp_path, shell=False), record(tmp_path))


def test_codex_refuses_a_sandbox_table_of_the_users(tmp_path: Path) -> None:
    """The writable root needs skillstate's own ``[sandbox_workspace_write]`` header, which a
    file may declare once."""
    path = config_file(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("[sandbox_workspace_write]\nnetwork_access = true\n")
    data_dir = tmp_path / "data"
    where = locations(tmp_path)
    plan = integration(Host.CODEX, where, GATEWAY, COMMAND, shell=True, data_dir=data_dir)
    with pytest.raises(IntegrationError, match=r"already sets sandbox_workspace_write outside"):
        install(plan, record(tmp_path))


def test_codex_verify_reports_a_group_added_above_ours(tmp_path: Path) -> None:
    """Codex trusts the hook by its place: a group the user puts before ours untrusts it."""
    plan = shell_plan(Host.CODEX, tmp_path)
    install(plan, record(tmp_path))
    path = config_file(tmp_path)
    top_end = "# <<< skillstate <<<\n"  # after the top block, before the tables
    mine = top_end + '[[hooks.PreToolUse]]\nmatcher = "mine"\n'
    path.write_text(path.read_text().replace(top_end, mine, 1))
    [problem] = verify(plan)
    assert "hooks.PreToolUse has groups above skillstate's" in problem


def test_codex_keeps_other_hook_events_and_states_of_the_user(tmp_path: Path) -> None:
    path = config_file(tmp_path)
    path.parent.mkdir(parents=True)
    user = '[[hooks.Stop]]\nmatcher = "x"\n\n[hooks.state."other"]\nenabled = false\n'
    path.write_text(user)
    plan = shell_plan(Host.CODEX, tmp_path)
    install(plan, record(tmp_path))
    hooks = tomllib.loads(path.read_text())["hooks"]
    assert hooks["Stop"] == [{"matcher": "x"}] and "other" in hooks["state"]
    uninstall(plan, record(tmp_path))
    assert path.read_text() == user


def test_codex_project_scope_and_opencode_refuse_the_hook(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    with pytest.raises(IntegrationError, match="without --project"):
        shell_plan(Host.CODEX, tmp_path, project=project)
    with pytest.raises(IntegrationError, match="OpenCode has no PreToolUse hook"):
        shell_plan(Host.OPENCODE, tmp_path)
    # Claude Code reads hooks from a project's settings too.
    plan = shell_plan(Host.CLAUDE, tmp_path, project=project)
    install(plan, record(tmp_path))
    assert pre_tool_use(project / ".claude" / "settings.json")[0]["matcher"] == "Bash"


def test_the_shell_probe_names_the_hosts_that_have_it(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "home"), "PATH": ""}
    installed, detail = shell_probe(env)()
    assert not installed
    assert "skillstate integrate claude --install --shell" in detail
    install(shell_plan(Host.CODEX, tmp_path), record(tmp_path))
    assert shell_probe(env)() == (True, f"installed for codex; {grants()}")
    install(shell_plan(Host.CLAUDE, tmp_path), record(tmp_path))
    assert shell_probe(env)() == (True, f"installed for claude, codex; {grants()}")


def test_the_shell_probe_says_which_decision_for_which_programs() -> None:
    """doctor tells the user what the hook lets run without asking, and what stays theirs."""
    said = grants()
    allowed, decided = said.split("; the user decides")
    for name in ("git diff", "git status", "ls", "grep", "rg", "cat", "tail", "find"):
        assert name in allowed
    for name in ("pytest", "python -m pytest", "npm test", "cargo test", "ruff check"):
        assert name not in allowed.split(": ", 1)[1].split(", ")
        assert name in decided


def test_cli_install_verify_uninstall_with_shell(tmp_path: Path) -> None:
    code, out = run(tmp_path, "claude", "--install", "--shell")
    assert code == 0, out
    assert "hook claude" in settings_file(tmp_path).read_text()
    code, out = run(tmp_path, "claude", "--verify")  # finds the hook by itself
    assert (code, out) == (0, "claude: installed and up to date\n")
    path = settings_file(tmp_path)
    data = json.loads(path.read_text())
    data["hooks"]["PreToolUse"][0]["timeout"] = 5  # drift in the hook only
    path.write_text(json.dumps(data))
    code, out = run(tmp_path, "claude", "--verify", "--shell")
    assert code == 1 and "lacks skillstate's entry" in out
    code, out = run(tmp_path, "claude", "--uninstall")
    assert code == 0, out
    assert json.loads(path.read_text())["hooks"]["PreToolUse"][0]["timeout"] == 5  # theirs now


def test_cli_refusals_of_shell(tmp_path: Path) -> None:
    code, out = run(tmp_path, "opencode", "--install", "--shell")
    assert code == 1 and "OpenCode has no PreToolUse hook" in out
    code, out = run(tmp_path, "claude", "--fragment", "--shell")
    assert code == 2 and "--shell installs a hook" in out
    code, out = run(tmp_path, "claude", "--print", "--shell")
    assert code == 0 and '"PreToolUse"' in out and "hook claude" in out
