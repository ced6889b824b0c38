"""Checks and encodings every backend shares, so that the in-memory twin and SQLite accept and
refuse exactly the same values and report the same sizes."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from skillstate.conversation import Json
from skillstate.storage.protocols import (
    MAX_SESSION_CHARS,
    MAX_STATE_BYTES,
    ArchiveEntry,
    Change,
    StateRecord,
    StoreLimitError,
)
from skillstate.storage.sealing import MAGIC, TEXT_PREFIX, Sealer, identity, opened, opened_text
from skillstate.support import jsonio

EMPTY = b"{}"
_KEY = re.compile(r"[A-Za-z0-9_-]{1,128}")


def check_session(session: str) -> None:
    if not session or len(session) > MAX_SESSION_CHARS:
        raise StoreLimitError(f"a session id has 1 to {MAX_SESSION_CHARS} characters")


def check_key(key: str) -> None:
    """A blob key is also a file name: letters, digits, ``_`` and ``-`` only."""
    if _KEY.fullmatch(key) is None:
        raise StoreLimitError(f"not a blob key: {key[:140]!r}")


def encode_object(value: Json, limit: int, what: str) -> bytes:
    """``value`` as compact JSON (big integers exact), refused past ``limit`` bytes."""
    if not isinstance(value, dict):
        raise StoreLimitError(f"{what} must be a JSON object")
    try:
        raw = jsonio.dumps(value)
    except (TypeError, ValueError) as error:
        raise StoreLimitError(f"{what} is not JSON: {error}") from None
    if len(raw) > limit:
        raise StoreLimitError(f"{what} is {len(raw)} bytes, over the bound of {limit}")
    return raw


def decode_object(raw: bytes) -> Json:
    value = jsonio.loads(raw)
    if not isinstance(value, dict):
        raise ValueError("a stored value is not a JSON object")
    return value


def sealed_object(value: Json, limit: int, what: str, sealer: Sealer | None, *record: str) -> bytes:
    """``encode_object``, then sealed for ``record`` (``sealing.identity``) when there is a
    sealer; the bound applies to the JSON, before sealing."""
    raw = encode_object(value, limit, what)
    return raw if sealer is None else sealer.seal(raw, identity(*record))


def opened_object(raw: bytes, sealer: Sealer | None, *record: str) -> Json:
    """``decode_object`` of a value ``sealed_object`` wrote (or one written before sealing);
    ``SealError`` where it cannot be opened."""
    if sealer is not None or raw[:4] == MAGIC:
        raw = opened(raw, sealer, identity(*record))
    return decode_object(raw)


@dataclass(frozen=True, slots=True)
class Encoded:
    """A change's Σ and meta as compact JSON, and as kept (the same bytes, or sealed)."""

    state: bytes
    meta: bytes
    kept_state: bytes
    kept_meta: bytes

    def record(self, version: int, step: int) -> StateRecord:
        """The record committed: decoded again, so that it shares nothing with the change."""
        return StateRecord(decode_object(self.state), version, step, decode_object(self.meta))


def encoded_change(session: str, change: Change, sealer: Sealer | None) -> Encoded:
    """A change's Σ and meta as JSON, and as kept: sealed for ``session`` where there is a
    sealer."""
    state = encode_object(change.state, MAX_STATE_BYTES, "a state")
    meta = encode_object(change.meta, MAX_STATE_BYTES, "a state's meta")
    if sealer is None:
        return Encoded(state, meta, state, meta)
    kept = sealer.seal(state, identity("state", session))
    return Encoded(state, meta, kept, sealer.seal(meta, identity("meta", session)))


def summary_record(session: str, ref: str, first_turn: int) -> bytes:
    """The identity a summary is sealed for: its index row's key."""
    return identity("summary", session, ref, str(first_turn))


def sealed_entry(entry: ArchiveEntry, sealer: Sealer | None) -> ArchiveEntry:
    """``entry`` as kept: its summary sealed where there is a sealer (and text)."""
    if sealer is None or not entry.summary:
        return entry
    record = summary_record(entry.session, entry.ref, entry.first_turn)
    return replace(entry, summary=sealer.seal_text(entry.summary, record))


def opened_entry(row: tuple[Any, ...], sealer: Sealer | None) -> ArchiveEntry:
    """The entry of a ``(session, ref, first_turn, last_turn, summary, size, created)`` row,
    its summary opened."""
    entry = ArchiveEntry(*row)
    if not entry.summary or (sealer is None and not entry.summary.startswith(TEXT_PREFIX)):
        return entry
    record = summary_record(entry.session, entry.ref, entry.first_turn)
    return replace(entry, summary=opened_text(entry.summary, sealer, record))
