"""The data directory and CLI checks, on real folders and tiny executable scripts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from skillstate.cli.doctor import machine
from skillstate.cli.doctor.machine import check_cli, check_clis, check_data_dir


def owner_only(path: Path) -> Path:
    path.mkdir(mode=0o700)
    (path / "state.db").write_bytes(b"")
    (path / "state.db").chmod(0o600)
    return path


def test_an_owner_only_data_dir(tmp_path: Path) -> None:
    check = check_data_dir(owner_only(tmp_path / "data"))
    assert check.ok is True and check.detail.endswith("(owner-only)")


def test_a_missing_data_dir_is_information(tmp_path: Path) -> None:
    check = check_data_dir(tmp_path / "not" / "yet")
    assert check.ok is None and "does not exist yet" in check.detail


def test_an_open_data_dir_wants_chmod_700(tmp_path: Path) -> None:
    data = owner_only(tmp_path / "data")
    data.chmod(0o755)
    check = check_data_dir(data)
    assert check.ok is False and "is mode 755, not 700" in check.detail
    assert check.fix == f"chmod 700 {data}"


def test_a_readable_file_inside_wants_go_rwx(tmp_path: Path) -> None:
    data = owner_only(tmp_path / "data")
    (data / "state.db").chmod(0o644)
    check = check_data_dir(data)
    assert check.ok is False and str(data / "state.db") in check.detail
    assert check.fix == f"chmod -R go-rwx {data}"


@pytest.mark.skipif(os.getuid() == 0, reason="root may write anywhere")
def test_an_unwritable_data_dir(tmp_path: Path) -> None:
    data = owner_only(tmp_path / "data")
    data.chmod(0o500)
    try:
        check = check_data_dir(data)
    finally:
        data.chmod(0o700)
    assert check.ok is False and check.fix == f"chmod 700 {data}"


def fake_cli(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(exist_ok=True)
    script = folder / name
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return script


async def test_clis_on_path_with_their_versions(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    codex = fake_cli(bin_dir, "codex", "echo 'codex-cli 0.171.0'")
    fake_cli(bin_dir, "claude", "echo '2.1.197 (Claude Code)'; echo more")
    checks = await check_clis(environ={"PATH": str(bin_dir)})
    by_name = {check.name: check for check in checks}
    assert list(by_name) == ["cli codex", "cli opencode", "cli claude"]
    assert by_name["cli codex"].ok is True
    assert by_name["cli codex"].detail == f"codex-cli 0.171.0 ({codex})"
    assert by_name["cli claude"].detail.startswith("2.1.197 (Claude Code) (")
    assert by_name["cli opencode"].ok is None and by_name["cli opencode"].detail == "not on PATH"


async def test_a_cli_that_does_not_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(machine, "VERSION_TIMEOUT_S", 0.3)
    bin_dir = tmp_path / "bin"
    fake_cli(bin_dir, "opencode", "exec sleep 30")
    check = await check_cli("opencode", str(bin_dir))
    assert check.ok is True and "--version did not answer in 0.3s" in check.detail
