"""Where each host's files are: the environment variables the hosts honour, and project scope."""

from __future__ import annotations

from pathlib import Path

from integrate_support import locations, plan, record

from skillstate.integrations import Host, claude, codex, install, opencode


def test_codex_user_scope_is_codex_home_else_dot_codex(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert codex.config_path(locations(tmp_path)) == home / ".codex" / "config.toml"
    custom = locations(tmp_path, env={"CODEX_HOME": "/opt/codex"})
    assert codex.config_path(custom) == Path("/opt/codex/config.toml")


def test_opencode_user_scope_follows_xdg_and_opencode_config(tmp_path: Path) -> None:
    home = tmp_path / "home"
    default = home / ".config" / "opencode" / "opencode.json"
    assert opencode.config_path(locations(tmp_path)) == default
    xdg = locations(tmp_path, env={"XDG_CONFIG_HOME": "/x/config"})
    assert opencode.config_path(xdg) == Path("/x/config/opencode/opencode.json")
    relative = locations(tmp_path, env={"XDG_CONFIG_HOME": "relative/config"})
    assert opencode.config_path(relative) == default  # the XDG spec: ignored
    custom = locations(tmp_path, env={"XDG_CONFIG_HOME": "/x", "OPENCODE_CONFIG": "/c/oc.json"})
    assert opencode.config_path(custom) == Path("/c/oc.json")


def test_claude_user_scope_follows_claude_config_dir(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert claude.settings_path(locations(tmp_path)) == home / ".claude" / "settings.json"
    assert claude.servers_path(locations(tmp_path)) == home / ".claude.json"
    custom = locations(tmp_path, env={"CLAUDE_CONFIG_DIR": "/cc"})
    assert claude.settings_path(custom) == Path("/cc/settings.json")
    assert claude.servers_path(custom) == Path("/cc/.claude.json")


def test_project_scope_uses_the_project_files(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    env = {"CODEX_HOME": "/no", "XDG_CONFIG_HOME": "/no", "CLAUDE_CONFIG_DIR": "/no"}
    where = locations(tmp_path, env=env, project=project)
    assert codex.config_path(where) == project / ".codex" / "config.toml"
    assert opencode.config_path(where) == project / "opencode.json"
    assert claude.settings_path(where) == project / ".claude" / "settings.json"
    assert claude.servers_path(where) == project / ".mcp.json"


def test_a_project_install_writes_only_inside_the_project(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    for host in Host:
        integration = plan(host, tmp_path, project=project)
        install(integration, record(tmp_path))
    assert not (tmp_path / "home").exists()
    written = sorted(
        str(path.relative_to(project)) for path in project.rglob("*") if path.is_file()
    )
    assert written == [".claude/settings.json", ".codex/config.toml", ".mcp.json", "opencode.json"]


def test_the_env_variables_decide_where_install_writes(tmp_path: Path) -> None:
    env = {
        "CODEX_HOME": str(tmp_path / "cx"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "cc"),
    }
    for host in Host:
        install(plan(host, tmp_path, env=env), record(tmp_path))
    assert (tmp_path / "cx" / "config.toml").is_file()
    assert (tmp_path / "xdg" / "opencode" / "opencode.json").is_file()
    assert (tmp_path / "cc" / "settings.json").is_file()
    assert (tmp_path / "cc" / ".claude.json").is_file()
    assert not (tmp_path / "home").exists()
