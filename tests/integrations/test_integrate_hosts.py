"""Every host, through the installer: print, install, a second install, verify, uninstall and
a failure in the middle of an install, against files under a temporary home."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from integrate_support import (
    USER_JSON,
    USER_TOML,
    edit_ours,
    edit_theirs,
    plan,
    record,
    seed,
    snapshot,
)

from skillstate.integrations import Host, IntegrationError, install, snippet, uninstall, verify
from skillstate.integrations import files as files_module
from skillstate.integrations import installer as installer_module

HOSTS = list(Host)


def parsed(path: Path) -> object:
    text = path.read_text()
    return tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)


@pytest.mark.parametrize("host", HOSTS)
def test_print_changes_nothing(host: Host, tmp_path: Path) -> None:
    integration = plan(host, tmp_path)
    seed(integration)
    before = snapshot(tmp_path)
    text = snippet(integration)
    assert snapshot(tmp_path) == before
    assert "127.0.0.1:8789" in text
    for edit in integration.edits:
        assert str(edit.path) in text


@pytest.mark.parametrize("host", HOSTS)
def test_install_into_absent_files_parses_and_verifies(host: Host, tmp_path: Path) -> None:
    integration = plan(host, tmp_path)
    assert verify(integration)  # nothing there yet: drift
    changed = install(integration, record(tmp_path))
    assert changed == [edit.path for edit in integration.edits]
    for edit in integration.edits:
        assert parsed(edit.path)
    assert verify(integration) == []


@pytest.mark.parametrize("host", HOSTS)
def test_install_keeps_user_content(host: Host, tmp_path: Path) -> None:
    integration = plan(host, tmp_path)
    seed(integration)
    install(integration, record(tmp_path))
    for edit in integration.edits:
        data = parsed(edit.path)
        assert isinstance(data, dict)
        if edit.path.suffix == ".toml":
            assert data["model"] == "gpt-5" and data["analytics"] == {"enabled": False}
            assert data["model_provider"] == "skillstate"
        else:
            assert data["theme"] == "dark" and data["numStartups"] == 3
            assert data["env"]["FOO"] == "1"
    assert verify(integration) == []


@pytest.mark.parametrize("host", HOSTS)
def test_a_second_install_changes_nothing(host: Host, tmp_path: Path) -> None:
    integration = plan(host, tmp_path)
    seed(integration)
    install(integration, record(tmp_path))
    after_first = snapshot(tmp_path)
    assert install(integration, record(tmp_path)) == []
    assert snapshot(tmp_path) == after_first


@pytest.mark.parametrize("host", HOSTS)
def test_verify_reports_an_edited_value(host: Host, tmp_path: Path) -> None:
    integration = plan(host, tmp_path)
    install(integration, record(tmp_path))
    edit_ours(integration.edits[0].path)
    assert verify(integration)


@pytest.mark.parametrize("host", HOSTS)
def test_verify_reports_another_gateway(host: Host, tmp_path: Path) -> None:
    install(plan(host, tmp_path), record(tmp_path))
    assert verify(plan(host, tmp_path, gateway="http://127.0.0.1:9000"))


@pytest.mark.parametrize("host", HOSTS)
def test_verify_reads_only(host: Host, tmp_path: Path) -> None:
    integration = plan(host, tmp_path)
    seed(integration)
    before = snapshot(tmp_path)
    verify(integration)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("host", HOSTS)
def test_uninstall_after_install_into_absent_files_leaves_nothing(
    host: Host, tmp_path: Path
) -> None:
    integration = plan(host, tmp_path)
    install(integration, record(tmp_path))
    uninstall(integration, record(tmp_path))
    assert not (tmp_path / "home").exists() or snapshot(tmp_path / "home") == {}
    assert not record(tmp_path).exists()


@pytest.mark.parametrize("host", HOSTS)
def test_uninstall_restores_user_files_byte_for_byte(host: Host, tmp_path: Path) -> None:
    integration = plan(host, tmp_path)
    seeded = seed(integration)
    before = snapshot(tmp_path / "home")
    install(integration, record(tmp_path))
    install(plan(host, tmp_path, gateway="http://127.0.0.1:9000"), record(tmp_path))
    uninstall(integration, record(tmp_path))
    assert snapshot(tmp_path / "home") == before
    assert not record(tmp_path).exists()
    for path, content in seeded.items():
        assert path.read_bytes() == content


@pytest.mark.parametrize("host", HOSTS)
def test_uninstall_after_a_user_edit_removes_only_ours(host: Host, tmp_path: Path) -> None:
    integration = plan(host, tmp_path)
    seed(integration)
    install(integration, record(tmp_path))
    for edit in integration.edits:
        edit_theirs(edit.path)
    uninstall(integration, record(tmp_path))
    for edit in integration.edits:
        text = edit.path.read_text()
        assert "skillstate" not in text
        data = parsed(edit.path)
        if edit.path.suffix == ".toml":
            assert data == {
                **tomllib.loads(USER_TOML),
                "profiles": {"fast": {"model": "gpt-5-mini"}},
            }
        else:
            assert data == {**json.loads(USER_JSON), "added_by_user": True}


@pytest.mark.parametrize("host", HOSTS)
def test_uninstall_leaves_a_value_the_user_changed(host: Host, tmp_path: Path) -> None:
    integration = plan(host, tmp_path)
    install(integration, record(tmp_path))
    first = integration.edits[0].path
    edit_ours(first)
    uninstall(integration, record(tmp_path))
    if first.suffix == ".json":
        assert '"changed"' in first.read_text()  # the value is the user's now
    else:
        assert not first.exists()  # a block is ours whatever it holds: nothing else was there


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("seeded", [False, True])
def test_a_failed_rename_leaves_every_file_as_it_was(
    host: Host, seeded: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    integration = plan(host, tmp_path)
    if seeded:
        seed(integration)
    before = snapshot(tmp_path)
    real = files_module._replace
    calls: list[Path] = []

    def failing(source: str, target: Path) -> None:
        calls.append(target)
        if len(calls) == len(integration.edits) + 1:  # the last write: the install record
            raise OSError(28, "No space left on device")
        real(source, target)

    monkeypatch.setattr(files_module, "_replace", failing)
    with pytest.raises(IntegrationError, match="put back as it was"):
        install(integration, record(tmp_path))
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("host", HOSTS)
def test_a_failed_check_leaves_every_file_as_it_was(
    host: Host, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    integration = plan(host, tmp_path)
    seed(integration)
    before = snapshot(tmp_path)

    def refuse(change: files_module.Change) -> None:
        raise IntegrationError(f"{change.path} would not parse")

    monkeypatch.setattr(installer_module, "_check_json", refuse)
    monkeypatch.setattr(installer_module, "_check_toml", refuse)
    with pytest.raises(IntegrationError, match="would not parse"):
        install(integration, record(tmp_path))
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("host", HOSTS)
def test_invalid_json_or_toml_is_refused_before_any_write(host: Host, tmp_path: Path) -> None:
    integration = plan(host, tmp_path)
    seed(integration)
    broken = integration.edits[-1].path
    broken.write_text("{not valid" if broken.suffix == ".json" else "model = = 1\n")
    before = snapshot(tmp_path)
    with pytest.raises(IntegrationError, match="not valid"):
        install(integration, record(tmp_path))
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("host", HOSTS)
def test_no_credential_is_ever_written(host: Host, tmp_path: Path) -> None:
    env = {"OPENAI_API_KEY": "sk-secret-1", "ANTHROPIC_API_KEY": "sk-ant-secret-2"}
    integration = plan(host, tmp_path, env=env)
    seed(integration)
    install(integration, record(tmp_path))
    for name, content in snapshot(tmp_path).items():
        text = content.decode(errors="replace")
        assert "secret" not in text, name
        for field in ("apiKey", "api_key", "ANTHROPIC_API_KEY", "AUTH_TOKEN", "bearer"):
            assert field not in text, (name, field)
