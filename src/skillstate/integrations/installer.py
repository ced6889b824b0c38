"""The four modes of ``skillstate integrate``: print, install, uninstall, verify.

Install is one transaction over the host's files and the install record (``files.apply``): it
plans every file first, refuses before writing when a file cannot be merged (invalid JSON, a
``model_provider`` of the user's own), and a second install of the same version changes no
byte. Uninstall puts a file back byte for byte when it still holds what we wrote, and
otherwise takes out only our blocks and keys. Verify reads and reports, nothing more.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from skillstate.integrations import blocks, jsonkeys
from skillstate.integrations.files import Change, apply, digest, missing_folders, read
from skillstate.integrations.manifest import Entry, Manifest, key, load
from skillstate.integrations.model import (
    BlockEdit,
    Edit,
    Integration,
    IntegrationError,
    KeysEdit,
    Syntax,
)

Plan = tuple[Change | None, Entry | None]


def snippet(integration: Integration) -> str:
    """What install would put in each file, headed by the file's path; changes nothing."""
    parts: list[str] = []
    for edit in integration.edits:
        parts.append(f"# {edit.path}\n")
        if isinstance(edit, BlockEdit):
            parts += [blocks.render(edit, block) for block in edit.blocks]
        else:
            parts.append(jsonkeys.dumps(jsonkeys.merge(edit, {}).obj))
        parts.append("\n")
    parts += [f"# {note}\n" for note in integration.notes]
    return "".join(parts).rstrip("\n") + "\n"


def install(integration: Integration, record: Path) -> list[Path]:
    """Install every edit at once; the files it changed (none on a second run)."""
    manifest = load(record)
    plans = [
        _plan_install(edit, manifest.entries.get(key(edit.path))) for edit in integration.edits
    ]
    return _commit(integration, manifest, plans)


def uninstall(integration: Integration, record: Path) -> list[Path]:
    """Take out what install wrote; the files it changed."""
    manifest = load(record)
    plans = [
        _plan_uninstall(edit, manifest.entries.get(key(edit.path))) for edit in integration.edits
    ]
    return _commit(integration, manifest, plans)


def verify(integration: Integration) -> list[str]:
    """Where what is installed differs from what this version would write; empty: none."""
    problems: list[str] = []
    for edit in integration.edits:
        content = read(edit.path)
        if content is None:
            problems.append(f"{edit.path}: not installed (no file)")
            continue
        text = _text(edit.path, content)
        if isinstance(edit, BlockEdit):
            expected = [blocks.render(edit, block) for block in edit.blocks]
            if blocks.found(edit, text) != expected:
                problems.append(f"{edit.path}: the skillstate block differs from this version's")
            else:
                problems += _displaced(edit, text)
        else:
            problems += jsonkeys.drift(edit, jsonkeys.parse(text, str(edit.path)))
    return problems


def _displaced(edit: BlockEdit, text: str) -> list[str]:
    """Each list of tables our blocks add to that no longer starts with ours: Codex trusts a
    hook by its place among the file's hook groups, so one added above ours untrusts it."""
    if edit.syntax is not Syntax.TOML:
        return []
    try:
        theirs = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return [f"{edit.path}: not valid TOML ({exc})"]
    ours = tomllib.loads("".join(blocks.render(edit, block) for block in edit.blocks))
    hooks, found = ours.get("hooks", {}), theirs.get("hooks", {})
    problems: list[str] = []
    for event, groups in hooks.items():
        if _tables(groups) and found.get(event, [])[: len(groups)] != groups:
            problems.append(
                f"{edit.path}: hooks.{event} has groups above skillstate's, so Codex no longer "
                "trusts it: move them to hooks.json"
            )
    return problems


def _commit(integration: Integration, manifest: Manifest, plans: list[Plan]) -> list[Path]:
    changes: list[Change] = []
    for edit, (change, entry) in zip(integration.edits, plans, strict=True):
        if change is None:
            continue
        changes.append(change)
        if entry is None:
            manifest.entries.pop(key(edit.path), None)
        else:
            manifest.entries[key(edit.path)] = entry
    if not changes:
        return []
    checks = {edit.path: _checker(edit) for edit in integration.edits}
    apply([*changes, manifest.change()], lambda change: checks.get(change.path, _unchecked)(change))
    return [change.path for change in changes]


def _plan_install(edit: Edit, entry: Entry | None) -> Plan:
    """Our pieces merged into the file. The record of an earlier install is kept only while
    the file still holds exactly what that install wrote (a new gateway URL, say), and then
    the items it appended make way for this version's; otherwise the install starts afresh
    from the file as it would be without our pieces (those the record names, too)."""
    content = read(edit.path)
    text = "" if content is None else _text(edit.path, content)
    record = entry
    if entry is not None and digest(content) != entry.written:
        entry = None
    base = _without(edit, text, record) if entry is None else _without_items(edit, text, entry)
    if isinstance(edit, BlockEdit):
        _refuse_conflicts(edit, base)
        new = blocks.merge(edit, base)
        merged = jsonkeys.Merged({}, (), ())
    else:
        merged = jsonkeys.merge(edit, jsonkeys.parse(base, str(edit.path)))
        new = jsonkeys.dumps(merged.obj)
    data = new.encode()
    if entry is None:
        original = content if base == text else base.encode()
        entry = Entry(original, "", merged.previous, merged.created, missing_folders(edit.path))
    entry = Entry(
        entry.original,
        digest(data) or "",
        entry.previous,
        tuple(dict.fromkeys(entry.created + merged.created)),
        entry.folders,
        merged.appended,
    )
    if data == content:
        return None, entry
    return Change(edit.path, data), entry


def _plan_uninstall(edit: Edit, entry: Entry | None) -> Plan:
    """The file's old bytes when it holds exactly what we wrote; else the file less ours."""
    content = read(edit.path)
    if content is None:
        return None, None
    if entry is not None and digest(content) == entry.written:
        return Change(edit.path, entry.original, prune=entry.folders), None
    text = _text(edit.path, content)
    new = _without(edit, text, entry)
    if new == text:
        return None, None
    empty = not new.strip() if isinstance(edit, BlockEdit) else new.strip() == "{}"
    if empty and entry is not None and entry.original is None:
        return Change(edit.path, None, prune=entry.folders), None
    return Change(edit.path, new.encode()), None


def _without(edit: Edit, text: str, entry: Entry | None) -> str:
    """``text`` less our blocks or keys; ``text`` itself when it holds none of them. Our list
    items are those the record names, or without a record those this version writes."""
    if isinstance(edit, BlockEdit):
        return blocks.strip(edit, text)
    obj = jsonkeys.parse(text, str(edit.path))
    previous = entry.previous if entry else ()
    created = entry.created if entry else ()
    items = entry.items if entry else tuple(edit.items)
    left = jsonkeys.remove(edit, obj, previous, created, items)
    return text if left == obj else jsonkeys.dumps(left)


def _without_items(edit: Edit, text: str, entry: Entry) -> str:
    """``text`` less the list items an earlier install appended (only a JSON file has any),
    and the lists and objects it created for them, once empty."""
    if isinstance(edit, BlockEdit) or not entry.items:
        return text
    obj = jsonkeys.parse(text, str(edit.path))
    left = jsonkeys.remove(KeysEdit(edit.path, ()), obj, (), entry.created, entry.items)
    return jsonkeys.dumps(left)


def _refuse_conflicts(edit: BlockEdit, text: str) -> None:
    """A TOML file must parse without our blocks and not already set what the blocks set (a
    ``model_provider``, a table of ours, a list of tables ours would join)."""
    if edit.syntax is not Syntax.TOML:
        return
    try:
        config = tomllib.loads(blocks.strip(edit, text))
    except tomllib.TOMLDecodeError as exc:
        raise IntegrationError(
            f"{edit.path} is not valid TOML ({exc}); nothing was changed"
        ) from None
    ours = tomllib.loads("".join(blocks.render(edit, block) for block in edit.blocks))
    clashes = _shared(ours, config, ())
    if clashes:
        raise IntegrationError(
            f"{edit.path} already sets {' and '.join(clashes)} outside skillstate's block: "
            "remove that line or table, then install again; nothing was changed"
        )


def _shared(ours: dict[str, Any], theirs: dict[str, Any], at: tuple[str, ...]) -> list[str]:
    """What both set, by dotted name: a key, a list (of tables), or a table of ours (one that
    holds a value of its own); a table that only holds tables is compared key by key."""
    found: list[str] = []
    for name, value in ours.items():
        if name not in theirs:
            continue
        if isinstance(value, dict) and isinstance(theirs[name], dict) and not _owned(value):
            found += _shared(value, theirs[name], (*at, name))
        else:
            found.append(".".join((*at, name)))
    return found


def _owned(table: dict[str, Any]) -> bool:
    """A table written under its own header: it holds a value that is neither a table nor a
    list of tables (those can be added to from anywhere in the file)."""
    return any(not isinstance(value, dict) and not _tables(value) for value in table.values())


def _tables(value: object) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _checker(edit: Edit) -> Callable[[Change], None]:
    """The verify step of install: the file as written must still parse."""
    if isinstance(edit, KeysEdit):
        return lambda change: _check_json(change)
    if edit.syntax is Syntax.TOML:
        return lambda change: _check_toml(change)
    return _unchecked


def _check_toml(change: Change) -> None:
    if change.content is not None:
        try:
            tomllib.loads(change.content.decode())
        except tomllib.TOMLDecodeError as exc:
            raise IntegrationError(f"{change.path} would not be valid TOML ({exc})") from None


def _check_json(change: Change) -> None:
    if change.content is not None:
        jsonkeys.parse(change.content.decode(), str(change.path))


def _unchecked(change: Change) -> None:
    """Markdown, and the install record: any text will do."""


def _text(path: Path, content: bytes) -> str:
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        raise IntegrationError(f"{path} is not UTF-8 text; nothing was changed") from None
