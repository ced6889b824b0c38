"""Session identity: which conversation a request belongs to.

Order: our ``x-skillstate-session`` header, then the client's own signal (see
``protocols.signals``), then a fingerprint of the conversation's stable start.

The fingerprint (a documented contract, since changing it moves every unlabelled session):
``"fp-"`` + the first 24 hex digits of SHA-256 over the compact, key-sorted JSON of
``[wire, user, system, leading system/developer contents, first user message content]``.

A tenant's session (a request that came with a tenant's virtual key) is ``<tenant>/<id>``
(``storage.tenants``): ``/`` is in no id, so no tenant's session can be named as another's.

Ids are checked before they reach storage: 1 to 128 characters of ``[A-Za-z0-9._:-]``. Our
header must already be valid (a bad one is the caller's error); a client's own signal that is
not valid is replaced by ``"h-"`` + 32 hex digits of its SHA-256, so it stays stable.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from skillstate.conversation import ProtocolError, Wire
from skillstate.protocols.signals import fingerprint_material, session_signals
from skillstate.storage.tenants import ID_RULE, valid_session_id

HEADER = "x-skillstate-session"


@dataclass(frozen=True, slots=True)
class SessionId:
    id: str
    source: str


def resolve_session(
    headers: Mapping[str, str], body: Mapping[str, Any], wire: Wire, tenant: str | None = None
) -> SessionId:
    """The request's session; a tenant's (``tenant``: its virtual key's) is ``tenant/id``,
    so two tenants whose clients name the same session never share it."""
    ours = headers.get(HEADER)
    if ours is not None:
        if not valid_session_id(ours):
            raise ProtocolError(f"{HEADER} must be {ID_RULE}", param=HEADER)
        found = SessionId(ours, "header")
    elif signals := session_signals(headers, body):
        source, value = signals[0]
        found = SessionId(_safe(value), source)
    else:
        material = [wire.value, *fingerprint_material(wire, body)]
        digest = hashlib.sha256(canonical_json(material)).hexdigest()
        found = SessionId("fp-" + digest[:24], "fingerprint")
    return found if tenant is None else SessionId(f"{tenant}/{found.id}", found.source)


def canonical_json(value: Any) -> bytes:
    """``value`` as the fingerprint's contract writes it: the standard library's compact,
    key-sorted JSON (``ensure_ascii=False``), in UTF-8. orjson writes the same bytes for
    everything but floats (its shortest forms differ: ``0.00001`` for ``1e-05``) and integers
    past 64 bits; a value holding one is written by the standard library. The walk that
    tells costs a step per value, not per character, as writing does."""
    if _plain(value):
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _plain(value: Any) -> bool:
    """Whether ``value`` holds only strings, booleans, None and 64-bit integers, in lists
    and string-keyed dicts (of exactly these types, as JSON reads: anything else is written
    by the standard library, which is always right)."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str or item is None or kind is bool:
            continue
        if kind is list:
            stack += item
        elif kind is dict:
            if not all(type(key) is str for key in item):
                return False
            stack += item.values()
        elif kind is not int or not -(2**63) <= item < 2**64:
            return False
    return True


def _safe(value: str) -> str:
    if valid_session_id(value):
        return value
    return "h-" + hashlib.sha256(value.encode()).hexdigest()[:32]
