"""The JSON view: anomalies first, then a shape tree.

Anomalies are the objects, anywhere in the document, that say something went wrong: one with
a non-empty ``error``/``errors``/``exception``/``failure`` key, a ``status`` of 400 to 599 (or
``"error"``, ``"failed"``), a non-zero integer ``code``/``exit_code``, or ``ok``/``success``
set to false. Each is shown at its path with its value in compact JSON (long ones cut).

The shape tree names each key with its type (``{N keys}``, ``[N items]``) or its value when
that is a short scalar, nested to a depth; an array shows its first and last items, in full
when small, else as shapes. When the budget is short the tree is written shallower and with
smaller items, and at last cut with a mark.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

_ERROR_KEYS = frozenset({"error", "errors", "exception", "failure", "fault", "stderr"})
_STATUS_KEYS = frozenset({"status", "status_code", "statusCode", "http_status", "state"})
_CODE_KEYS = frozenset({"code", "exit_code", "exitCode", "returncode", "return_code"})
_FLAG_KEYS = frozenset({"ok", "success", "succeeded", "passed"})
_BAD_WORDS = frozenset({"error", "failed", "failure", "fatal", "errored", "crashed"})
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LEVELS = ((6, 240, 24), (5, 200, 20), (4, 160, 16), (3, 100, 10), (2, 60, 6), (1, 0, 4))
"""(depth, longest item shown whole, keys listed per object), tried in turn."""
MAX_ANOMALIES = 40
_SCALAR_CHARS = 60


def view(value: Any, budget: int) -> str:
    """The JSON view of a parsed document, within ``budget`` characters when it can be."""
    found = anomalies(value)
    block = _anomaly_block(found, budget // 2)
    room = budget - len(block) - 1
    tree = ""
    for depth, whole, keys in _LEVELS:
        tree = "\n".join(["shape:", *_shape("$", value, 0, depth, whole, keys)])
        if len(tree) <= room:
            break
    return f"{block}\n{tree}" if block else tree


def anomalies(value: Any) -> list[tuple[str, Any]]:
    """(path, object) for each object that reports a failure, in document order."""
    found: list[tuple[str, Any]] = []
    stack: list[tuple[str, Any]] = [("$", value)]
    while stack:  # a stack, not recursion: a document may nest deeper than is safe to recurse
        path, node = stack.pop()
        if isinstance(node, dict):
            if _is_anomaly(node):
                found.append((path, node))
                continue  # its inner anomalies are inside what is shown
            children = [(_child(path, k), v) for k, v in node.items()]
        elif isinstance(node, list):
            children = [(f"{path}[{i}]", v) for i, v in enumerate(node)]
        else:
            continue
        stack.extend(reversed(children))
    return found


def _is_anomaly(node: dict[str, Any]) -> bool:
    for key, val in node.items():
        if key in _ERROR_KEYS and val not in (None, "", [], {}, False, 0):
            return True
        if key in _STATUS_KEYS and _bad_status(val):
            return True
        if key in _CODE_KEYS and isinstance(val, int) and not isinstance(val, bool) and val:
            return True
        if key in _FLAG_KEYS and val is False:
            return True
    return False


def _bad_status(val: Any) -> bool:
    if isinstance(val, int) and not isinstance(val, bool):
        return 400 <= val <= 599
    if isinstance(val, str):
        return val.lower() in _BAD_WORDS or (val.isdigit() and 400 <= int(val[:4]) <= 599)
    return False


def _anomaly_block(found: list[tuple[str, Any]], room: int) -> str:
    if not found:
        return ""
    out = [f"anomalies ({len(found):,}):"]
    used = len(out[0])
    for shown, (path, node) in enumerate(found[:MAX_ANOMALIES]):
        line = f"  {path}: {_compact(node, 300)}"
        if used + len(line) + 40 > room:
            out.append(f"  … {len(found) - shown:,} more anomalies …")
            return "\n".join(out)
        out.append(line)
        used += len(line) + 1
    if len(found) > MAX_ANOMALIES:
        out.append(f"  … {len(found) - MAX_ANOMALIES:,} more anomalies …")
    return "\n".join(out)


def _shape(label: str, value: Any, depth: int, limit: int, whole: int, keys: int) -> list[str]:
    """Lines describing ``value`` under ``label``, indented by depth."""
    pad = "  " * depth
    if isinstance(value, dict):
        head = f"{pad}{label}: {{{len(value):,} keys}}"
        if depth >= limit or not value:
            return [f"{head} {_key_list(value, 0)}".rstrip()]
        out = [head]
        for key, child in list(value.items())[:keys]:
            out += _shape(_label(key), child, depth + 1, limit, whole, keys)
        if len(value) > keys:
            out.append(f"{pad}  … {len(value) - keys:,} more keys: {_key_list(value, keys)}")
        return out
    if isinstance(value, list):
        return _array(label, value, depth, limit, whole, keys)
    return [f"{pad}{label}: {_scalar(value)}"]


def _array(
    label: str, value: list[Any], depth: int, limit: int, whole: int, keys: int
) -> list[str]:
    pad = "  " * depth
    out = [f"{pad}{label}: [{len(value):,} items]"]
    if not value or depth >= limit:
        return out
    ends = [(0, value[0])] + ([(len(value) - 1, value[-1])] if len(value) > 1 else [])
    for index, item in ends:
        text = _compact(item, whole + 1)
        if len(text) <= whole:
            out.append(f"{pad}  [{index}]: {text}")
        else:
            out += _shape(f"[{index}]", item, depth + 1, limit, whole, keys)
    return out


def _key_list(value: dict[str, Any], skip: int) -> str:
    names = list(value)[skip : skip + 12]
    more = len(value) - skip - len(names)
    return ", ".join(names) + (f", … {more:,} more" if more > 0 else "")


def _label(key: str) -> str:
    return key if _KEY.fullmatch(key) else _compact(key, 80)


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if _KEY.fullmatch(key) else f"{path}[{_compact(key, 80)}]"


def _scalar(value: Any) -> str:
    if isinstance(value, str) and len(value) > _SCALAR_CHARS:
        return f"{_compact(value[:_SCALAR_CHARS], _SCALAR_CHARS + 2)}… (str, {len(value):,} chars)"
    return _compact(value, _SCALAR_CHARS + 20)


def _compact(value: Any, limit: int) -> str:
    """Compact JSON of ``value``, cut to about ``limit`` characters with the cut marked."""
    try:
        text = orjson.dumps(value).decode()
    except TypeError:  # orjson's JSONEncodeError: integers past 64 bits
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} chars)"
