"""The skillstate command: help, version, the shared flags and how a bad value ends a run."""

from __future__ import annotations

import os
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from command_probe import probe

from skillstate import __version__
from skillstate.cli.lazy import LazyGroup
from skillstate.cli.main import COMMANDS, cli
from skillstate.cli.options import SHOWN_DEFAULTS
from skillstate.cli.serve import serve_command
from skillstate.config import Settings, load_settings
from skillstate.pipeline.switches import lineup, names


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The developer's own SKILLSTATE_* variables must not leak into these runs."""
    for name in [name for name in os.environ if name.startswith("SKILLSTATE_")]:
        monkeypatch.delenv(name)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))


def test_version_prints_name_and_version() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.stdout == f"skillstate {__version__}\n"


def test_help_explains_shows_an_example_and_lists_commands() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    text = result.stdout
    assert "A local context gateway for LLM agents" in text
    assert "skillstate --upstream https://api.openai.com/v1" in text
    commands = text.split("Commands:")[1].split()
    assert "serve" in commands
    assert "config" in commands
    for flag in ("--config", "--upstream", "--upstream-wire", "--port", "--host", "--schema"):
        assert flag in text
    assert "--upstream-profile" in text and "docs/upstreams.md" in text
    for flag in ("--mode", "--data-dir", "--verbose", "-v,"):
        assert flag in text


@pytest.mark.parametrize(
    "args", [["--port", "notanumber"], ["serve", "--port", "notanumber"]], ids=["bare", "serve"]
)
def test_a_bad_port_ends_the_run_with_2_naming_the_flag(args: list[str]) -> None:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        "config error: port='notanumber' from command line --port: not an integer\n"
    )


def test_the_proxy_program_checks_its_flags_the_same_way() -> None:
    result = CliRunner().invoke(serve_command, ["--upstream", "ftp://example.com"])
    assert result.exit_code == 2
    assert result.stderr == (
        "config error: upstream='ftp://example.com' from command line --upstream: "
        "not an http:// or https:// URL\n"
    )


def test_every_problem_is_printed(tmp_path: Path) -> None:
    config = tmp_path / "s.toml"
    config.write_text("prot = 1\n")
    result = CliRunner().invoke(
        cli, ["serve", "--config", str(config), "--mode", "fast"], env={"SKILLSTATE_X": "1"}
    )
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"config error: 'prot' is not a known key (from config file {config}); "
        "did you mean 'port'?",
        "config error: 'SKILLSTATE_X' is not a known variable (from environment)",
    ]


def test_serve_and_config_have_help_without_starting_anything() -> None:
    for command in ("serve", "config"):
        result = CliRunner().invoke(cli, [command, "--help"])
        assert result.exit_code == 0
        assert "--port PORT" in result.stdout


def test_flags_before_the_command_apply_to_it() -> None:
    result = CliRunner().invoke(cli, ["--port", "9001", "--host", "::1", "config", "--json"])
    assert result.exit_code == 0, result.output
    assert '"value": 9001' in result.stdout
    result = CliRunner().invoke(cli, ["--port", "9001", "config", "--port", "9002"])
    port = next(line for line in result.stdout.splitlines() if line.startswith("port "))
    assert port.split() == ["port", "9002", "command", "line", "--port"]


def test_an_unknown_command_is_refused() -> None:
    result = CliRunner().invoke(cli, ["srve"])
    assert result.exit_code == 2
    assert "No such command 'srve'" in result.stderr


def test_a_config_file_given_before_the_command_applies_to_it(tmp_path: Path) -> None:
    config = tmp_path / "s.toml"
    config.write_text("port = 9003\n")
    result = CliRunner().invoke(cli, ["--config", str(config), "config"])
    assert result.exit_code == 0, result.output
    port = next(line for line in result.stdout.splitlines() if line.startswith("port "))
    assert port.split() == ["port", "9003", "config", "file", str(config)]


def test_the_command_table_holds_each_commands_own_short_help() -> None:
    """``skillstate --help`` lists ``COMMANDS``' summaries without importing the commands: each
    must be the command's own short help, or the list would drift from the commands."""
    context = click.Context(cli)
    for name, lazy in COMMANDS.items():
        command = cli.get_command(context, name)
        assert command is not None
        assert command.get_short_help_str(limit=10_000) == lazy.summary, (
            f"COMMANDS[{name!r}].summary in src/skillstate/cli/main.py should be "
            f"{command.get_short_help_str(limit=10_000)!r}"
        )


@pytest.mark.parametrize("width", [60, 80, 200])
def test_the_group_lists_the_commands_as_click_lists_them_imported(width: int) -> None:
    def fresh() -> LazyGroup:
        return LazyGroup("skillstate", lazy=COMMANDS, help="A group.")

    unloaded, loaded = fresh(), fresh()
    for name in COMMANDS:
        loaded.get_command(click.Context(loaded), name)
    assert not unloaded.commands and set(loaded.commands) == set(COMMANDS)
    shown = [
        group.get_help(click.Context(group, terminal_width=width)) for group in (unloaded, loaded)
    ]
    assert shown[0] == shown[1]
    assert not unloaded.commands  # listing imported none of them


FORBIDDEN = ("aiohttp", "pydantic", "pydantic_core")
"""Packages ``--help`` and ``--version`` must not import; of skillstate itself, only the
command line's entry modules (``LIGHT``) may load."""

LIGHT = {
    "skillstate",
    "skillstate.cli",
    "skillstate.cli.main",
    "skillstate.cli.fast",
    "skillstate.cli.group",
    "skillstate.cli.lazy",
    "skillstate.cli.options",
}


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["--version"]])
def test_help_and_version_import_neither_the_gateway_nor_its_settings(args: list[str]) -> None:
    result = probe(*args)
    assert result.code in (None, 0), result.stdout
    assert result.stdout.startswith(("Usage: skillstate", "skillstate "))
    modules = result.modules
    assert [m for m in modules if m.split(".")[0] in FORBIDDEN] == []
    assert {m for m in modules if m.split(".")[0] == "skillstate"} <= LIGHT


def test_the_defaults_the_help_shows_are_the_settings_own() -> None:
    for key, shown in SHOWN_DEFAULTS.items():
        default = Settings.model_fields[key].default
        assert getattr(default, "value", default) == shown, key


def test_lanes_help_lists_every_lane_and_the_ones_on_by_default() -> None:
    result = CliRunner().invoke(cli, ["serve", "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    line = next(line for line in result.stdout.splitlines() if "--lanes" in line)
    switches = load_settings(environ={}).lanes
    on = [name for name in names() if switches.enabled(name)]
    off = [name for name in names() if not switches.enabled(name)]
    assert on and off  # some lanes are off by default: the help must not call them all on
    assert f"[on by default: {','.join(on)}; off: {','.join(off)}]" in line
    assert {spec.name for spec in lineup() if spec.on} == set(on)


def test_lanes_help_of_the_bare_group_points_to_serve() -> None:
    result = CliRunner().invoke(cli, ["--help"], terminal_width=200)
    line = next(line for line in result.stdout.splitlines() if "--lanes" in line)
    assert "`skillstate serve --help` lists them and which are on" in line
