"""The fuzz corpus and its mutations.

Seeds are valid wire documents kept in ``tests/fixtures/fuzz/<wire>/``: requests, responses,
error bodies and recorded streams (see the README there), with the real agents' requests of
``tests/fixtures/recorded/``. A mutation takes a seed and changes it a few times where a
hostile or broken client or provider would: a value replaced by one of another type (or by a
word the wires use as a ``type``), a key dropped or added, a list emptied, a node wrapped in
a list. Most mutants are invalid; the decoders must say so with a ``ProtocolError``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from skillstate.conversation import Wire
from skillstate.protocols.sse import SSEDecoder, SSEEvent

FIXTURES = Path(__file__).parent.parent / "fixtures"
CORPUS = FIXTURES / "fuzz"

Path_ = tuple[str | int, ...]


def seeds(wire: Wire, kind: str) -> list[Path]:
    """The seed files of ``wire`` named ``<kind>-*`` (``request``, ``response``, ``error``,
    ``stream``); requests also take the recorded agents' requests."""
    found = sorted((CORPUS / wire.value).glob(f"{kind}-*"))
    if kind == "request":
        recorded = (FIXTURES / "recorded" / wire.value).glob("*.json")
        found += sorted(p for p in recorded if not p.name.endswith(".headers.json"))
    return found


def load(path: Path) -> Any:
    return json.loads(path.read_bytes())


def stream_events(path: Path) -> list[SSEEvent]:
    decoder = SSEDecoder()
    return decoder.feed(path.read_bytes()) + decoder.close()


@cache
def _vocabulary() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Every key, and every short string value, found in the whole corpus."""
    keys: set[str] = set()
    words: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                keys.add(key)
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, str) and len(node) <= 40:
            words.add(node)

    for wire in Wire:
        for kind in ("request", "response", "error"):
            for path in seeds(wire, kind):
                walk(load(path))
        for path in seeds(wire, "stream"):
            for event in stream_events(path):
                try:
                    walk(json.loads(event.data))
                except ValueError:
                    continue
    return tuple(sorted(keys)), tuple(sorted(words))


def _values() -> st.SearchStrategy[Any]:
    keys, words = _vocabulary()
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.sampled_from([0, -1, 1, 2**31, 2**63, 2**70, -(2**70), 1.5, -0.0, 1e308]),
        st.sampled_from(words),
        st.text(max_size=8),
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.dictionaries(st.sampled_from(keys) | st.text(max_size=5), inner, max_size=3),
        ),
        max_leaves=6,
    )


def paths(node: Any, at: Path_ = ()) -> Iterator[Path_]:
    """Every path to a node of ``node``, itself (``()``) included."""
    yield at
    if isinstance(node, dict):
        for key, value in node.items():
            yield from paths(value, (*at, key))
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from paths(item, (*at, index))


def _get(node: Any, path: Path_) -> Any:
    for step in path:
        node = node[step]
    return node


def _set(node: Any, path: Path_, value: Any) -> Any:
    """``node`` with the node at ``path`` replaced by ``value`` (copied along the path)."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(node, dict):
        return {**node, head: _set(node[head], rest, value)}
    copy = list(node)
    copy[int(head)] = _set(node[int(head)], rest, value)
    return copy


@st.composite
def mutants(draw: st.DrawFn, seed: Any, *, steps: int = 3) -> Any:
    """``seed`` changed one to ``steps`` times."""
    keys, _ = _vocabulary()
    values = _values()
    document = seed
    for _ in range(draw(st.integers(1, steps))):
        path = draw(st.sampled_from(list(paths(document))))
        node = _get(document, path)
        operation = draw(st.sampled_from(["replace", "replace", "drop", "add", "empty", "wrap"]))
        if operation == "drop" and path:
            parent = _get(document, path[:-1])
            if isinstance(parent, dict):
                trimmed = {k: v for k, v in parent.items() if k != path[-1]}
            else:
                trimmed = [v for i, v in enumerate(parent) if i != path[-1]]
            document = _set(document, path[:-1], trimmed)
        elif operation == "add" and isinstance(node, dict):
            key = draw(st.sampled_from(keys))
            document = _set(document, path, {**node, key: draw(values)})
        elif operation == "empty" and isinstance(node, dict | list):
            document = _set(document, path, type(node)())
        elif operation == "wrap":
            document = _set(document, path, [node])
        else:
            document = _set(document, path, draw(values))
    return document
