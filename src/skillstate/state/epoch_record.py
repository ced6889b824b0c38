"""A session's current epoch, as stored between requests.

An epoch is fixed at a boundary: the client's messages before ``cut`` are stood in for by the
head (``messages[:head]``, verbatim), the Σ ``snapshot`` and the archived ``spans``; the
messages from ``cut`` on are the verbatim window. ``anchor`` identifies the client history the
epoch was built from, so a rewound or edited history is noticed and the epoch recomputed.

The anchor (a contract: changing it ends every stored epoch once) is the BLAKE2b-128 hex of,
for each of ``messages[:cut]`` in order, the message's role, then every text, tool call (id,
name, arguments) and tool result (call id, then each text, and each ``Opaque`` item as its
compact JSON) it holds, each followed by a NUL byte. Cache markers and shape hints are left
out: clients move their cache markers from request to request, and that does not change the
history. (An ``Opaque`` item is the wire's JSON whole, a marker inside it included.)
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from skillstate.conversation import (
    Image,
    Json,
    Message,
    Opaque,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
)
from skillstate.conversation.prefixes import PrefixMemo
from skillstate.support import jsonio

DOC_NAME = "epoch"


@dataclass(frozen=True, slots=True)
class Span:
    """One archived span: messages ``first`` to ``last`` (0-based, inclusive) of the client's
    history, ``turns`` turns, kept exactly under ``ref``."""

    ref: str
    first: int
    last: int
    turns: int
    summary: str = ""

    def to_json(self) -> Json:
        return {
            "ref": self.ref,
            "first": self.first,
            "last": self.last,
            "turns": self.turns,
            "summary": self.summary,
        }

    @staticmethod
    def from_json(data: Json) -> Span:
        return Span(
            str(data["ref"]),
            int(data["first"]),
            int(data["last"]),
            int(data["turns"]),
            str(data.get("summary", "")),
        )


@dataclass(frozen=True, slots=True)
class Epoch:
    number: int
    head: int
    cut: int
    anchor: str
    snapshot: Json
    spans: tuple[Span, ...] = ()
    started_step: int = 0
    kept_until: int | None = None
    """How many messages the client's history held at the boundary (None in a record written
    before it was kept: read as ``cut``, nothing kept)."""
    extra: Json = field(default_factory=dict)

    def to_json(self) -> Json:
        return {
            "number": self.number,
            "head": self.head,
            "cut": self.cut,
            "anchor": self.anchor,
            "snapshot": self.snapshot,
            "spans": [s.to_json() for s in self.spans],
            "started_step": self.started_step,
            "kept_until": self.kept_until,
        }

    @staticmethod
    def from_json(data: Json) -> Epoch:
        spans: Any = data.get("spans", [])
        return Epoch(
            number=int(data["number"]),
            head=int(data["head"]),
            cut=int(data["cut"]),
            anchor=str(data["anchor"]),
            snapshot=dict(data.get("snapshot", {})),
            spans=tuple(Span.from_json(s) for s in spans),
            started_step=int(data.get("started_step", 0)),
            kept_until=None if data.get("kept_until") is None else int(data["kept_until"]),
        )

    def kept(self) -> range:
        """Where the turns this boundary kept verbatim sit in hybrid mode's outbound request:
        after the head and the Σ message, the client's messages ``cut`` to ``kept_until`` as
        they stood at the boundary. The same indexes on every request of the epoch; empty
        when nothing was collapsed (no Σ message) or nothing was kept."""
        if not self.spans or self.kept_until is None or self.kept_until <= self.cut:
            return range(0)
        start = self.head + 1
        return range(start, start + self.kept_until - self.cut)

    def holds(self, messages: Sequence[Message]) -> bool:
        """Whether the client's ``messages`` still extend the history this epoch was built on
        (``anchor`` hashes only what it has not hashed before)."""
        return len(messages) >= self.cut and anchor(messages[: self.cut]) == self.anchor


_hashed: PrefixMemo[Any] = PrefixMemo(min_messages=1)
"""Per conversation, the anchor's hash state over the longest prefix hashed so far, by its
messages: a re-sent history is made of the same message objects (``protocols.memo``), so a
longer prefix hashes only the messages it adds."""


def anchor(messages: Sequence[Message]) -> str:
    found = _hashed.find(messages)
    done, digest = (0, hashlib.blake2b(digest_size=16)) if found is None else found
    digest = digest.copy()  # the kept state stays that of its own prefix
    for message in messages[done:]:
        digest.update(message.role.encode() + b"\0")
        for part in message.parts:
            for piece in _pieces(part):
                digest.update(piece.encode("utf-8", "surrogatepass") + b"\0")
    if len(messages) > done:
        _hashed.keep(messages, digest.copy())
    return digest.hexdigest()


def _pieces(part: object) -> tuple[str, ...]:
    if isinstance(part, Text | Reasoning):
        return (part.text,)
    if isinstance(part, ToolCall):
        return (part.id, part.name, part.arguments)
    if isinstance(part, ToolResult):
        return (part.call_id, *(_item(c) for c in part.content if not isinstance(c, Image)))
    return (type(part).__name__,)


def _item(item: Text | Opaque) -> str:
    return item.text if isinstance(item, Text) else jsonio.dumps_str(item.data)
