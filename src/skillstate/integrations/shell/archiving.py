"""The shell lane's archive write without the gateway's storage stack: one blob file and one
``INSERT`` into the data directory's database, in the process that ran the command, with no
event loop, no database thread and no schema work.

Contract: what ``put`` writes is what the gateway's own store writes for ``Archive.put``
(``storage.sqlite_archive.SQLiteArchiveStore`` over ``storage.blobs.BlobStore``): the blob
framed by ``storage.codec.pack`` at ``<data_dir>/archive/<last two characters>/<ref>.blob``
(folders 0700, file 0600, written to a temporary name, synced, renamed; one already there only
marked as used) and the index row ``(session, ref, -1, -1, summary, size, created)``, so that
``skillstate archive get`` and the gateway's recall read it back exactly
(tests/integrations/shell/test_archiving.py); with a ``sealer``, the blob and the summary
sealed as the store seals them (``storage.sealing``). It writes only where that is all the
store would do: it answers ``False``, having written nothing, when the database is not there
yet or has another schema version (the store creates or refuses it), or when the archive is
past its quota or holds an expired blob (the store evicts and sweeps on its write); the caller
then uses the store.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from skillstate.storage.codec import default_codec, pack
from skillstate.storage.records import check_key, check_session, summary_record
from skillstate.storage.sealing import identity
from skillstate.storage.sqlite import DB_NAME, SCHEMA_VERSION
from skillstate.storage.stores import ARCHIVE_DIR
from skillstate.support.files import private_dir, write_durably

if TYPE_CHECKING:
    from skillstate.storage.sealing import Sealer

_SUFFIX = ".blob"
_BUSY_TIMEOUT_S = 5.0


def put(
    data_dir: Path,
    session: str,
    ref: str,
    data: bytes,
    summary: str,
    *,
    ttl: float,
    max_bytes: int,
    clock: Callable[[], float] = time.time,
    sealer: Sealer | None = None,
) -> bool:
    """Keep ``data`` under ``ref`` in ``session``'s index; ``False`` where the store must (see
    the module docstring). Raises when the disk refuses."""
    check_key(ref)
    check_session(session)
    database = data_dir / DB_NAME
    if not database.is_file():
        return False
    root = data_dir / ARCHIVE_DIR
    path = root / ref[-2:] / f"{ref}{_SUFFIX}"
    now = clock()
    packed = None if path.is_file() else pack(data, default_codec())
    if sealer is not None:
        if packed is not None:
            packed = sealer.seal(packed, identity("blob", ref))
        summary = sealer.seal_text(summary, summary_record(session, ref, -1)) if summary else ""
    if not _within_bounds(root, now, ttl, max_bytes, 0 if packed is None else len(packed)):
        return False
    conn = sqlite3.connect(database, isolation_level=None, timeout=_BUSY_TIMEOUT_S)
    try:
        if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            return False
        if packed is None:
            os.utime(path, (now, now))
        else:
            _write(path, packed, now)
        conn.execute(
            "INSERT OR IGNORE INTO archive_entries VALUES (?, ?, ?, ?, ?, ?, ?)",
            (session, ref, -1, -1, summary, len(data), now),
        )
    finally:
        conn.close()
    return True


def _within_bounds(root: Path, now: float, ttl: float, max_bytes: int, adding: int) -> bool:
    """Whether the archive stays under its quota with ``adding`` bytes more and holds no
    expired blob (else the store's write would evict or sweep)."""
    total = adding
    with contextlib.suppress(FileNotFoundError), os.scandir(root) as folders:
        for folder in folders:
            if not folder.is_dir(follow_symlinks=False):
                continue
            with os.scandir(folder.path) as items:
                for item in items:
                    if not item.name.endswith(_SUFFIX):
                        continue
                    info = item.stat(follow_symlinks=False)
                    if now - info.st_mtime > ttl:
                        return False
                    total += info.st_size
    return total <= max_bytes


def _write(path: Path, packed: bytes, now: float) -> None:
    """As ``storage.blobs``: private folders (the store's root and its fan-out folder), the
    file written whole or not at all."""
    for folder in (path.parent.parent, path.parent):
        private_dir(folder)
    write_durably(path, packed, now)
