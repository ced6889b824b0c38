"""Cache markers: this wire's ``cache_control`` objects to and from ``CacheMark``.

``{"type": "ephemeral"}`` is a mark with the provider's default lifetime and
``{"type": "ephemeral", "ttl": "1h"}`` one with a ``ttl``
(https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching). An object that the mark
does not give back exactly (keys beyond these, another order, a future ``type``) is kept in the
carrier's ``hints`` under ``HINT`` and re-emitted while the carrier's mark still reads as it.
"""

from __future__ import annotations

from typing import Protocol

from skillstate.conversation import CacheMark, Json
from skillstate.protocols.fields import optional_object

KEY = "cache_control"
HINT = "cache_control"


class Marked(Protocol):
    """What carries a mark: a text, image, tool call, tool result or tool."""

    @property
    def cache(self) -> CacheMark | None: ...

    @property
    def hints(self) -> Json: ...


def decode_cache(got: Json, path: str, hints: Json) -> CacheMark | None:
    """The mark of an object's ``cache_control`` (held in ``got``), noting in ``hints`` the
    object as sent where the mark alone would not give it back."""
    value = optional_object(got, KEY, path)
    if value is None:
        return None
    mark = mark_of(value)
    if list(value.items()) != list(encode_mark(mark).items()):
        hints[HINT] = value
    return mark


def mark_of(value: Json) -> CacheMark:
    ttl = value.get("ttl")
    return CacheMark(ttl if isinstance(ttl, str) else None)


def encode_mark(mark: CacheMark) -> Json:
    out: Json = {"type": "ephemeral"}
    if mark.ttl is not None:
        out["ttl"] = mark.ttl
    return out


def cache_json(carrier: Marked, native: bool) -> Json | None:
    """The ``cache_control`` object for a part or tool, or None where it has no mark: the one
    it was decoded from while its mark still reads as that (``native`` only), else the mark's."""
    mark = carrier.cache
    if mark is None:
        return None
    kept = carrier.hints.get(HINT) if native else None
    if isinstance(kept, dict) and mark_of(kept) == mark:
        return kept
    return encode_mark(mark)
