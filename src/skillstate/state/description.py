"""What ``GET /state?session=ID`` and ``skillstate state show`` report about one session.

Pure: built from what the engine stored (the record, the ``epoch`` and ``last`` documents, the
archive index), so the report says what the engine last did, not a fresh guess. Keys:

* ``session``, ``state`` (Σ), ``step``, ``version``, ``state_bytes``, ``created``,
  ``last_seen`` (the store clock's seconds) and ``collapse_pending`` (a forced boundary waits
  for the next request);
* ``relayed``: the session's requests relayed undecoded since the state lane last read one
  (``state.passing``), counted in ``step``; Σ's seed takes their tool calls from the next
  request the lane reads;
* ``context``: the last request as measured when it was prepared: its ``mode``, ``step``, the
  client's ``messages`` and the ``outbound_messages`` sent upstream; in hybrid mode also the
  ``tokens`` of the client's turns by where they went (``head``, ``collapsed``, ``verbatim``,
  ``total``; o200k counts), the ``window_tokens`` the boundary rule measured, the ``epoch``
  number it rendered with and whether the epoch had to be ``recomputed``;
* ``window``: the verbatim window of that request: the first message in it (0-based), how many
  messages, turns and tokens it held;
* ``turns``: the per-turn index of that request: each turn's ``index``, ``kind``, ``tokens``
  and ``where`` (``head``, ``collapsed`` or ``verbatim``);
* ``epoch``: the current epoch's ``number``, ``head`` and ``cut`` (message indexes), and its
  ``spans`` (the archived ranges with their ``ref``), or None before the first boundary;
* ``archive``: the archive refs the session's collapsed spans are kept under, with the turns
  each holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from skillstate.conversation import Json
from skillstate.storage.protocols import ArchiveEntry, SessionInfo, StateRecord

WHERE = ("head", "collapsed", "verbatim")

_CONTEXT_KEYS = (
    "mode",
    "step",
    "messages",
    "outbound_messages",
    "window_tokens",
    "recomputed",
    "handover",
)


def describe_session(
    info: SessionInfo,
    record: StateRecord,
    epoch: Json | None,
    last: Json | None,
    entries: Sequence[ArchiveEntry],
    relayed: int = 0,
) -> Json:
    """The report above, from ``list_sessions``' line for the session, its record, its stored
    ``epoch`` and ``last`` documents (None when absent), its archive index and the requests
    ``relayed`` since the lane last read one."""
    turns: list[Json] = list(last.get("turns", [])) if last else []
    return {
        "session": info.session,
        "state": record.state,
        "step": record.step + relayed,
        "relayed": relayed,
        "version": record.version,
        "state_bytes": info.state_bytes,
        "created": info.created,
        "last_seen": info.last_seen,
        "collapse_pending": bool(record.meta.get("force_collapse")),
        "context": _context(last, turns),
        "window": _window(last, epoch, turns),
        "turns": turns,
        "epoch": _epoch(epoch),
        "archive": [_entry(entry) for entry in entries],
    }


def _context(last: Json | None, turns: Sequence[Json]) -> Json | None:
    if last is None:
        return None
    context: Json = {key: last[key] for key in _CONTEXT_KEYS if key in last}
    if last.get("mode") == "hybrid":
        tokens = {where: _tokens(turns, where) for where in WHERE}
        context["tokens"] = {**tokens, "total": sum(tokens.values())}
        context["epoch"] = last.get("epoch", 0)
    return context


def _window(last: Json | None, epoch: Json | None, turns: Sequence[Json]) -> Json | None:
    """The verbatim window; it starts at the epoch's cut when the last request rendered with
    that epoch (a recomputed epoch with no new boundary sends the whole history verbatim)."""
    if last is None or last.get("mode") != "hybrid":
        return None
    current = epoch is not None and last.get("epoch") == epoch.get("number")
    first = int(epoch["cut"]) if epoch is not None and current else 0
    verbatim = [turn for turn in turns if turn.get("where") == "verbatim"]
    return {
        "first_message": first,
        "messages": max(0, int(last.get("messages", 0)) - first),
        "turns": len(verbatim),
        "tokens": _tokens(verbatim, "verbatim"),
    }


def _epoch(epoch: Json | None) -> Json | None:
    if epoch is None:
        return None
    spans: Any = epoch.get("spans", [])
    return {
        "number": epoch.get("number"),
        "head": epoch.get("head"),
        "cut": epoch.get("cut"),
        "spans": list(spans),
    }


def _entry(entry: ArchiveEntry) -> Json:
    return {
        "ref": entry.ref,
        "first_turn": entry.first_turn,
        "last_turn": entry.last_turn,
        "summary": entry.summary,
        "size": entry.size,
    }


def _tokens(turns: Sequence[Json], where: str) -> int:
    return sum(int(turn.get("tokens", 0)) for turn in turns if turn.get("where") == where)
