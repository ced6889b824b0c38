"""The content-addressed ref of an archived span, and the canonical bytes it hashes.

Contract (changing any of it changes every hash, and orphans every ref already given to a
model or written into a Σ message):

* The canonical form of a span (a list of canonical messages) is the JSON document
  ``{"messages": [...], "v": 1}`` where each message is ``serialize.encode_message(message)``.
* It is written compactly (separators ``,`` and ``:``, no whitespace), with the keys of every
  object sorted by code point, every non-ASCII character escaped as ``\\uXXXX`` (so the bytes
  are ASCII, hence UTF-8, and a lone surrogate that a client sent as an escape survives),
  integers in full however large, and floats as Python's shortest round-tripping repr
  (``NaN`` and ``Infinity``, which only a body read by the standard library can hold, as
  Python's json module writes them).
* The ref is ``"ar_"`` followed by the first 24 hex digits (96 bits) of the SHA-256 of those
  bytes.

The archive stores exactly these bytes, so a blob can be checked against its ref on the way out.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence

from skillstate.archive.serialize import SpanFormatError, decode_message, encode_message
from skillstate.conversation import Message

FORMAT_VERSION = 1
REF_PREFIX = "ar_"
_REF_HEX = 24
_REF = re.compile(rf"{REF_PREFIX}[0-9a-f]{{{_REF_HEX}}}")


def canonical_span(messages: Sequence[Message]) -> bytes:
    """The canonical bytes of ``messages`` (the contract above)."""
    document = {"messages": [encode_message(m) for m in messages], "v": FORMAT_VERSION}
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return text.encode("ascii")


def ref_for(canonical: bytes) -> str:
    """The ref of a span whose canonical bytes are ``canonical``."""
    return REF_PREFIX + hashlib.sha256(canonical).hexdigest()[:_REF_HEX]


def span_ref(messages: Sequence[Message]) -> str:
    return ref_for(canonical_span(messages))


def is_ref(text: str) -> bool:
    """Whether ``text`` has the form of an archive ref (says nothing of whether it exists)."""
    return _REF.fullmatch(text) is not None


def read_span(canonical: bytes) -> list[Message]:
    """The messages ``canonical_span`` wrote; ``SpanFormatError`` for anything else.

    Read with the standard library, which keeps big integers and lone surrogates exact."""
    try:
        document = json.loads(canonical)
    except (ValueError, UnicodeDecodeError) as error:
        raise SpanFormatError(f"not JSON: {error}") from None
    if not isinstance(document, dict) or set(document) != {"messages", "v"}:
        raise SpanFormatError("not an archived span")
    if document["v"] != FORMAT_VERSION:
        raise SpanFormatError(f"unknown archive format version {document['v']!r}")
    messages = document["messages"]
    if not isinstance(messages, list):
        raise SpanFormatError("an archived span's messages must be a list")
    return [decode_message(item) for item in messages]
