"""The public surfaces of storage/ and archive/, pinned."""

from __future__ import annotations

import skillstate.archive
import skillstate.storage


def test_storage_public_surface() -> None:
    assert sorted(skillstate.storage.__all__) == sorted(
        [
            "DB_NAME",
            "MAX_DOC_BYTES",
            "MAX_SESSION_CHARS",
            "MAX_STATE_BYTES",
            "ArchiveEntry",
            "ArchiveStore",
            "BlobFormatError",
            "BlobStore",
            "Change",
            "Codec",
            "MemoryArchiveStore",
            "MemoryStateStore",
            "ResilientArchiveStore",
            "ResilientStateStore",
            "SQLiteArchiveStore",
            "SQLiteDatabase",
            "SQLiteStateStore",
            "SessionInfo",
            "StateRecord",
            "StateStore",
            "StoreLimitError",
            "StoreOptions",
            "Stores",
            "Updater",
            "VersionConflict",
            "default_codec",
            "open_stores",
        ]
    )
    assert all(hasattr(skillstate.storage, name) for name in skillstate.storage.__all__)


def test_archive_public_surface() -> None:
    assert sorted(skillstate.archive.__all__) == sorted(
        [
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
    )
    assert all(hasattr(skillstate.archive, name) for name in skillstate.archive.__all__)
