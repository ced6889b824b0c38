"""Our keys in a JSON object file: set them, take them back, say whether they drifted.

The contract: ``remove(merge(obj))`` gives ``obj`` back, key order included, when nobody
touched our keys in between. ``merge`` reports each key's previous value (or that it was
absent), the objects and lists it had to create on the way, and the list items it appended;
``remove`` puts each of our keys back to its previous value only while it still holds ours,
takes out the items it is told are ours (one each), and deletes a created object or list only
while it is empty. A key the user changed after us is theirs and stays; so is every item of a
shared list but ours, and an item equal to ours that was there before us.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass

from skillstate.integrations.model import JSON, IntegrationError, KeysEdit

Path_ = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Previous:
    """A key's value before we set it; ``absent`` when it had none."""

    path: Path_
    absent: bool
    value: JSON = None


@dataclass(frozen=True, slots=True)
class Merged:
    """The object with our keys, what each held before, and the objects created for them."""

    obj: dict[str, JSON]
    previous: tuple[Previous, ...]
    created: tuple[Path_, ...]
    appended: tuple[tuple[Path_, JSON], ...] = ()


def parse(text: str, where: str) -> dict[str, JSON]:
    """The JSON object in ``text`` (blank text is an empty object); anything else refuses."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise IntegrationError(f"{where} is not valid JSON ({exc}); nothing was changed") from None
    if not isinstance(value, dict):
        raise IntegrationError(f"{where} does not hold a JSON object; nothing was changed")
    return value


def dumps(obj: dict[str, JSON]) -> str:
    """The stable form we write: two-space indents, non-ASCII kept, a final newline."""
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


def merge(edit: KeysEdit, obj: dict[str, JSON]) -> Merged:
    """``obj`` with our keys set; ``obj`` itself is left as it was."""
    out = copy.deepcopy(obj)
    previous: list[Previous] = []
    created: list[Path_] = []
    for path, value in edit.keys:
        parent = _parent(out, path, created, edit)
        leaf = path[-1]
        if leaf in parent:
            previous.append(Previous(path, False, copy.deepcopy(parent[leaf])))
        else:
            previous.append(Previous(path, True))
        parent[leaf] = copy.deepcopy(value)
    appended: list[tuple[Path_, JSON]] = []
    for path, item in edit.items:
        items = _list(_parent(out, path, created, edit), path, created, edit)
        if item not in items:
            items.append(copy.deepcopy(item))
            appended.append((path, item))
    return Merged(out, tuple(previous), tuple(created), tuple(appended))


def remove(
    edit: KeysEdit,
    obj: dict[str, JSON],
    previous: tuple[Previous, ...],
    created: tuple[Path_, ...],
    items: tuple[tuple[Path_, JSON], ...] = (),
) -> dict[str, JSON]:
    """``obj`` with each of our keys that still holds our value put back as it was, and each
    of ``items`` (the list items that are ours) taken out of its list."""
    out = copy.deepcopy(obj)
    for path, ours in items:
        parent = _existing_parent(out, path)
        found = None if parent is None else parent.get(path[-1])
        if isinstance(found, list) and ours in found:
            found.remove(ours)
    before = {item.path: item for item in previous}
    for path, value in edit.keys:
        parent = _existing_parent(out, path)
        if parent is None or parent.get(path[-1], _ABSENT) != value:
            continue
        item = before.get(path, Previous(path, True))
        if item.absent:
            del parent[path[-1]]
        else:
            parent[path[-1]] = copy.deepcopy(item.value)
    for path in sorted(created, key=len, reverse=True):
        parent = _existing_parent(out, path)
        if parent is not None and parent.get(path[-1], _ABSENT) in ({}, []):
            del parent[path[-1]]
    return out


def drift(edit: KeysEdit, obj: dict[str, JSON]) -> list[str]:
    """Each of our keys whose value in ``obj`` is not the one we would write, in words."""
    problems: list[str] = []
    for path, value in edit.keys:
        parent = _existing_parent(obj, path)
        name = ".".join(path)
        if parent is None or path[-1] not in parent:
            problems.append(f"{edit.path}: {name} is missing")
        elif parent[path[-1]] != value:
            problems.append(f"{edit.path}: {name} differs from what this version writes")
    for path, item in edit.items:
        parent = _existing_parent(obj, path)
        found = None if parent is None else parent.get(path[-1])
        if not isinstance(found, list) or item not in found:
            problems.append(f"{edit.path}: {'.'.join(path)} lacks skillstate's entry")
    return problems


_ABSENT = object()


def _parent(
    obj: dict[str, JSON], path: Path_, created: list[Path_], edit: KeysEdit
) -> dict[str, JSON]:
    node = obj
    for depth, key in enumerate(path[:-1]):
        if key not in node:
            node[key] = {}
            created.append(path[: depth + 1])
        child = node[key]
        if not isinstance(child, dict):
            name = ".".join(path[: depth + 1])
            raise IntegrationError(f"{edit.path}: {name} is not an object; nothing was changed")
        node = child
    return node


def _list(parent: dict[str, JSON], path: Path_, created: list[Path_], edit: KeysEdit) -> list[JSON]:
    if path[-1] not in parent:
        parent[path[-1]] = []
        created.append(path)
    found = parent[path[-1]]
    if not isinstance(found, list):
        name = ".".join(path)
        raise IntegrationError(f"{edit.path}: {name} is not a list; nothing was changed")
    return found


def _existing_parent(obj: dict[str, JSON], path: Path_) -> dict[str, JSON] | None:
    node: JSON = obj
    for key in path[:-1]:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node if isinstance(node, dict) else None
