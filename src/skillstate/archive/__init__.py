"""The archive of collapsed spans: the canonical form and ref that address them exactly, the
store that keeps them, and the text search ``recall`` answers with."""

from skillstate.archive.hashing import (
    FORMAT_VERSION,
    REF_PREFIX,
    canonical_span,
    is_ref,
    read_span,
    ref_for,
    span_ref,
)
from skillstate.archive.render import span_text
from skillstate.archive.search import Excerpt, Found, page, search
from skillstate.archive.serialize import SpanFormatError, decode_message, encode_message
from skillstate.archive.store import Archive

__all__ = [
    "FORMAT_VERSION",
    "REF_PREFIX",
    "Archive",
    "Excerpt",
    "Found",
    "SpanFormatError",
    "canonical_span",
    "decode_message",
    "encode_message",
    "is_ref",
    "page",
    "read_span",
    "ref_for",
    "search",
    "span_ref",
    "span_text",
]
