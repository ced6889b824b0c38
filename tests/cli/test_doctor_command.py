"""skillstate doctor: one check a line, each problem with its fix; --json; exit 1 on a problem.

The gateway runs in the test's loop and the command in a thread (it runs a loop of its own).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from skillstate import __version__
from skillstate.cli.main import cli
from skillstate.testing import ScriptedUpstream
from skillstate.testing.gateway import gateway_for


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in [name for name in os.environ if name.startswith("SKILLSTATE_")]:
        monkeypatch.delenv(name)
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "CODEX_HOME", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("OPENCODE_CONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))


def fake_clis(folder: Path) -> str:
    folder.mkdir()
    for name, version in [("codex", "codex-cli 0.171.0"), ("claude", "2.1.197 (Claude Code)")]:
        script = folder / name
        script.write_text(f"#!/bin/sh\necho '{version}'\n")
        script.chmod(0o755)
    return str(folder)


async def doctor(*args: str, path: str = "") -> Result:
    runner = CliRunner()
    return await asyncio.to_thread(runner.invoke, cli, ["doctor", *args], env={"PATH": path})


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def test_all_in_place_exits_0(tmp_path: Path) -> None:
    data = tmp_path / "data"
    bin_dir = fake_clis(tmp_path / "bin")
    async with (
        ScriptedUpstream() as up,
        gateway_for(up.url, settings={"data_dir": str(data)}) as gw,
    ):
        port = gw.url.rsplit(":", 1)[1]
        args = ["--port", port, "--upstream", up.url, "--data-dir", str(data)]
        result = await doctor(*args, path=bin_dir)
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines() if line}
    assert rows["check"] == ["status", "detail"]
    assert rows["gateway"][:2] == ["ok", gw.url]
    assert __version__ in result.stdout
    assert result.stdout.rstrip().endswith("no problems found")
    assert f"codex-cli 0.171.0 ({bin_dir}/codex)" in result.stdout


async def test_a_problem_exits_1_with_its_fix(tmp_path: Path) -> None:
    port = closed_port()
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    data.chmod(0o755)
    result = await doctor("--port", str(port), "--data-dir", str(data))
    assert result.exit_code == 1
    assert "3 problem(s):" in result.stdout
    assert f"  gateway: skillstate serve --port {port}" in result.stdout
    assert f"  data dir: chmod 700 {data}" in result.stdout
    assert "  upstream: skillstate --upstream" in result.stdout


async def test_json_output(tmp_path: Path) -> None:
    port = closed_port()
    result = await doctor("--json", "--port", str(port), "--upstream", f"http://127.0.0.1:{port}")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["ok"] is False
    names = [check["name"] for check in report["checks"]]
    assert names == [
        "gateway",
        "circuits",
        "upstream default",
        "data dir",
        "store",
        "redis",
        "cli codex",
        "cli opencode",
        "cli claude",
        "integration codex",
        "integration opencode",
        "integration claude",
        "login claude",
        "shell hook",
        "price catalog",
    ]
    for check in report["checks"]:
        assert set(check) == {"name", "ok", "detail", "fix"}
        assert check["ok"] in (True, False, None)
        assert (check["fix"] is not None) == (check["ok"] is False)


async def test_a_config_error_exits_2() -> None:
    result = await doctor("--port", "x")
    assert result.exit_code == 2
    assert "config error: port='x'" in result.stderr


async def test_the_group_flags_name_the_gateway(tmp_path: Path) -> None:
    port = closed_port()
    runner = CliRunner()
    args = ["--port", str(port), "doctor", "--json"]
    result = await asyncio.to_thread(runner.invoke, cli, args, env={"PATH": ""})
    report = json.loads(result.stdout)
    assert report["checks"][0]["fix"] == f"skillstate serve --port {port}"


def test_doctor_is_listed_in_the_help() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert "doctor" in result.stdout.split("Commands:")[1].split()


async def test_the_fix_starts_the_gateway_with_the_same_config(tmp_path: Path) -> None:
    port = closed_port()
    config = tmp_path / "my config.toml"
    config.write_text(f"port = {port}\n")
    result = await doctor("--config", str(config), "--json")
    gateway = json.loads(result.stdout)["checks"][0]
    assert gateway["fix"] == f"skillstate serve --config '{config}' --port {port}"
