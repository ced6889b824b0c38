"""Where the gateway keeps things: sessions' Σ with versions, epoch documents, and the archive.
The only package that touches the disk."""

from skillstate.storage.blobs import BlobStore
from skillstate.storage.codec import BlobFormatError, Codec, default_codec
from skillstate.storage.memory import MemoryArchiveStore, MemoryStateStore
from skillstate.storage.protocols import (
    MAX_DOC_BYTES,
    MAX_SESSION_CHARS,
    MAX_STATE_BYTES,
    ArchiveEntry,
    ArchiveStore,
    Change,
    SessionInfo,
    StateRecord,
    StateStore,
    StoreLimitError,
    Updater,
    VersionConflict,
)
from skillstate.storage.resilient import ResilientArchiveStore, ResilientStateStore
from skillstate.storage.sqlite import DB_NAME, SQLiteDatabase, SQLiteStateStore
from skillstate.storage.sqlite_archive import SQLiteArchiveStore
from skillstate.storage.stores import StoreOptions, Stores, open_stores

__all__ = [
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
