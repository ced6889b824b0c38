"""The record of what skillstate installed: for each file, its bytes before the first install
(or that it was absent), the hash of what we wrote, each of our JSON keys' previous value, and
the list items we appended.

``--uninstall`` uses it to put a file back byte for byte when the file still holds exactly
what we wrote. The record lives in skillstate's data directory, readable by its owner only,
since it keeps a copy of the user's files. Its JSON form is a contract: version 1.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillstate.integrations.files import Change, read
from skillstate.integrations.jsonkeys import Previous
from skillstate.integrations.model import JSON, IntegrationError

VERSION = 1
FILE_NAME = "integrations.json"


@dataclass(frozen=True, slots=True)
class Entry:
    """What one file held before us, and what we left in it."""

    original: bytes | None
    written: str
    previous: tuple[Previous, ...] = ()
    created: tuple[tuple[str, ...], ...] = ()
    folders: tuple[Path, ...] = ()
    items: tuple[tuple[tuple[str, ...], JSON], ...] = ()


@dataclass(slots=True)
class Manifest:
    """Every file we installed into, by absolute path, and where the record is kept."""

    path: Path
    entries: dict[str, Entry] = field(default_factory=dict)

    def change(self) -> Change:
        """Writing this record, as one more change of the transaction."""
        if not self.entries:
            return Change(self.path, None)
        files = {name: _encode(entry) for name, entry in sorted(self.entries.items())}
        text = json.dumps({"version": VERSION, "files": files}, indent=2) + "\n"
        return Change(self.path, text.encode(), mode=0o600)


def load(path: Path) -> Manifest:
    """The record at ``path``; none there is an empty record."""
    content = read(path)
    if content is None:
        return Manifest(path)
    try:
        data = json.loads(content)
        files = data["files"] if data.get("version") == VERSION else None
        if not isinstance(files, dict):
            raise ValueError("unknown version")
        return Manifest(path, {name: _decode(entry) for name, entry in files.items()})
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise IntegrationError(f"the install record {path} is unreadable ({exc})") from None


def key(path: Path) -> str:
    """How a file is named in the record."""
    return str(path.absolute())


def _encode(entry: Entry) -> dict[str, Any]:
    original = None if entry.original is None else base64.b64encode(entry.original).decode()
    return {
        "original": original,
        "written_sha256": entry.written,
        "previous": [
            {"path": list(item.path), "absent": item.absent, "value": item.value}
            for item in entry.previous
        ],
        "created": [list(path) for path in entry.created],
        "folders": [str(folder) for folder in entry.folders],
        "items": [{"path": list(path), "value": value} for path, value in entry.items],
    }


def _decode(data: dict[str, Any]) -> Entry:
    original = data["original"]
    return Entry(
        original=None if original is None else base64.b64decode(original),
        written=str(data["written_sha256"]),
        previous=tuple(
            Previous(tuple(item["path"]), bool(item["absent"]), item["value"])
            for item in data["previous"]
        ),
        created=tuple(tuple(path) for path in data["created"]),
        folders=tuple(Path(folder) for folder in data["folders"]),
        items=tuple((tuple(item["path"]), item["value"]) for item in data.get("items", [])),
    )
