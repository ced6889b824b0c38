"""Checks and encodings every backend shares, so that the in-memory twin and SQLite accept and
refuse exactly the same values and report the same sizes."""

from __future__ import annotations

import re

from skillstate.conversation import Json
from skillstate.storage.protocols import MAX_SESSION_CHARS, StoreLimitError
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
