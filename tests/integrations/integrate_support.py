"""Helpers for the integration tests: a home directory under tmp, the install record, and a
snapshot of every file so that "changed nothing" is a comparison of bytes."""

from __future__ import annotations

import json
from pathlib import Path

from skillstate.integrations import Host, Integration, Locations, integration

GATEWAY = "http://127.0.0.1:8789"
COMMAND = "skillstate"

USER_TOML = 'model = "gpt-5"  # mine\n\n[analytics]\nenabled = false\n'
USER_JSON = '{"theme": "dark",\n    "env": {"FOO": "1"}, "numStartups": 3}'


def locations(
    tmp: Path, env: dict[str, str] | None = None, project: Path | None = None
) -> Locations:
    return Locations(dict(env or {}), tmp / "home", project)


def record(tmp: Path) -> Path:
    return tmp / "data" / "integrations.json"


def plan(host: Host, tmp: Path, gateway: str = GATEWAY, **kwargs: object) -> Integration:
    where = locations(tmp, **kwargs)  # type: ignore[arg-type]
    return integration(host, where, gateway, COMMAND, ("gpt-5",))


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` and its bytes; folders are recorded as empty markers."""
    files: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        files[str(path.relative_to(root))] = path.read_bytes() if path.is_file() else b"<dir>"
    return files


def seed(integration: Integration) -> dict[Path, bytes]:
    """Put user content in every file the integration touches; what was put there."""
    seeded: dict[Path, bytes] = {}
    for edit in integration.edits:
        edit.path.parent.mkdir(parents=True, exist_ok=True)
        content = USER_TOML if edit.path.suffix == ".toml" else USER_JSON
        edit.path.write_text(content)
        seeded[edit.path] = content.encode()
    return seeded


def edit_ours(path: Path) -> None:
    """The user changes one of our values by hand."""
    text = path.read_text()
    if path.suffix == ".toml":
        path.write_text(text.replace('wire_api = "responses"', 'wire_api = "chat"'))
        return
    data = json.loads(text)
    for section in ("provider", "mcpServers", "env"):
        if section in data:
            name = next(iter(data[section]))
            data[section][name] = "changed"
            break
    path.write_text(json.dumps(data))


def edit_theirs(path: Path) -> None:
    """The user changes something of their own in the file."""
    if path.suffix == ".toml":
        path.write_text(path.read_text() + '\n[profiles.fast]\nmodel = "gpt-5-mini"\n')
        return
    data = json.loads(path.read_text())
    data["added_by_user"] = True
    path.write_text(json.dumps(data, indent=4))
