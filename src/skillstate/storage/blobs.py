"""Archive blobs as files: content-addressed, compressed, private, bounded.

``<root>/<last two characters of the key>/<key>.blob``, directories 0700 and files 0600 (an
archive holds whatever the client sent: code, secrets in tool output). A file is written to a
temporary name, synced and renamed, so a reader never sees half a blob and a crash leaves at
most a stray temporary file, removed on the next start.

Bounds: a blob not used (written or read) for ``ttl`` seconds expires (7 days by default);
past ``max_bytes`` of files on disk (500 MiB by default), the least recently used blobs are
evicted first. The store's clock stamps each use into the file's modification time, so the
order survives a restart. Looking (``kept``, ``usage``) is not a use.

With a ``sealer`` (``storage.sealing``) a file holds the framed blob sealed, bound to its key
(compressed, then sealed); a file written before sealing was turned on is read as it is. A
file that cannot be opened (a key the ring lacks, a failed check) raises ``SealError`` and is
kept: only a blob that is plainly damaged is removed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from skillstate.storage.codec import BlobFormatError, Codec, default_codec, pack, unpack
from skillstate.storage.protocols import StoreLimitError
from skillstate.storage.records import check_key
from skillstate.storage.sealing import Sealer, identity, opened
from skillstate.support.files import private_dir, write_durably

log = logging.getLogger("skillstate.storage")

DEFAULT_MAX_BYTES = 500 * 1024 * 1024
DEFAULT_TTL = 7 * 24 * 3600.0
#: How often (store clock seconds) a write also sweeps expired blobs.
_SWEEP_EVERY = 60.0
#: A temporary file this old belongs to a writer that died.
_STALE_TEMP = 3600.0
_SUFFIX = ".blob"


class BlobStore:
    """Compressed blobs under ``root``; every method runs its file work in a thread."""

    def __init__(
        self,
        root: Path,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        ttl: float = DEFAULT_TTL,
        clock: Callable[[], float] = time.time,
        codec: Codec | None = None,
        sealer: Sealer | None = None,
    ) -> None:
        self.root = root
        self.codec: Codec = codec or default_codec()
        self._max_bytes = max_bytes
        self._ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._index: dict[str, tuple[int, float]] | None = None  # key -> (file size, last use)
        self._swept = float("-inf")
        self.sealer = sealer

    @property
    def max_bytes(self) -> int:
        """The quota: bytes of blob files past which the least recently used are evicted."""
        return self._max_bytes

    @property
    def ttl(self) -> float:
        """Seconds a blob is kept after its last use."""
        return self._ttl

    async def put(self, key: str, data: bytes) -> None:
        """Keep ``data`` under ``key``; an existing blob is only marked as used."""
        await asyncio.to_thread(self._put, key, data)

    async def get(self, key: str) -> bytes | None:
        """The bytes under ``key``; None when absent, expired or unreadable (logged)."""
        return await asyncio.to_thread(self._get, key)

    async def delete(self, key: str) -> bool:
        return await asyncio.to_thread(self._delete, key)

    async def sweep(self) -> int:
        """Remove expired blobs now; how many."""
        return len(await self.expire())

    async def expire(self) -> list[str]:
        """Remove expired blobs now; their keys, sorted."""
        return await asyncio.to_thread(self._sweep_now)

    async def kept(self, keys: Iterable[str]) -> set[str]:
        """Those of ``keys`` whose blob is on disk and not expired; not a use of any."""
        wanted = list(keys)
        return await asyncio.to_thread(self._kept, wanted)

    async def reseal(self) -> tuple[int, int]:
        """Seal every blob file under the sealer's current key (``skillstate keys
        rotate-data``), one file at a time, each replaced whole and its last use kept; how many
        were sealed again and how many already were. A file that cannot be opened stops it
        (``SealError``), having changed nothing of that file."""
        if self.sealer is None:
            raise ValueError("resealing needs a data key")
        with self._lock:
            keys = sorted(self._loaded())
        done = [0, 0]
        for key in keys:
            resealed = await asyncio.to_thread(self._reseal, key, self.sealer)
            if resealed is not None:
                done[0 if resealed else 1] += 1
        return done[0], done[1]

    async def usage(self) -> int:
        """Bytes of blob files on disk."""
        return await asyncio.to_thread(self._usage)

    def _put(self, key: str, data: bytes) -> None:
        check_key(key)
        path = self._path(key)
        with self._lock:
            index = self._loaded()
            now = self._clock()
            if key in index and self._mark_used(path, now):
                index[key] = (index[key][0], now)
                return
        packed = pack(data, self.codec)
        if self.sealer is not None:
            packed = self.sealer.seal(packed, identity("blob", key))
        if len(packed) > self._max_bytes:
            raise StoreLimitError(f"a blob of {len(packed)} bytes is over the quota")
        with self._lock:
            index = self._loaded()
            now = self._clock()
            _write(path, packed, now)
            index[key] = (len(packed), now)
            self._evict(now, keep=key)

    def _get(self, key: str) -> bytes | None:
        check_key(key)
        path = self._path(key)
        with self._lock:
            index = self._loaded()
            now = self._clock()
            try:
                last = index[key][1] if key in index else path.stat().st_mtime
                packed = path.read_bytes()
            except FileNotFoundError:
                index.pop(key, None)
                return None
            if now - last > self._ttl:
                self._remove(key)
                return None
            self._mark_used(path, now)
            index[key] = (len(packed), now)
        if self.sealer is not None or packed[:4] != b"SSAB":
            packed = opened(packed, self.sealer, identity("blob", key))
        try:
            return unpack(packed)
        except BlobFormatError as error:
            log.warning("archive blob %s is unreadable (%s); removing it", key, error)
            with self._lock:
                self._remove(key)
            return None

    def _reseal(self, key: str, sealer: Sealer) -> bool | None:
        """Seal the file of ``key`` under the current key: True, False when it already was,
        None when it is gone."""
        path = self._path(key)
        with self._lock:
            try:
                stored = path.read_bytes()
                last = path.stat().st_mtime
            except FileNotFoundError:
                return None
            if sealer.is_current(stored):
                return False
            record = identity("blob", key)
            packed = sealer.seal(sealer.open(stored, record), record)
            _write(path, packed, last)
            if self._index is not None:
                self._index[key] = (len(packed), last)
            return True

    def _delete(self, key: str) -> bool:
        check_key(key)
        with self._lock:
            self._loaded()
            return self._remove(key)

    def _sweep_now(self) -> list[str]:
        with self._lock:
            self._loaded()
            return self._expire(self._clock())

    def _kept(self, keys: list[str]) -> set[str]:
        with self._lock:
            index = self._loaded()
            now = self._clock()
            return {
                key
                for key in keys
                if key in index and now - index[key][1] <= self._ttl and self._path(key).exists()
            }

    def _usage(self) -> int:
        with self._lock:
            return sum(size for size, _ in self._loaded().values())

    def _path(self, key: str) -> Path:
        return self.root / key[-2:] / f"{key}{_SUFFIX}"

    def _loaded(self) -> dict[str, tuple[int, float]]:
        """The index, built from the files on first use (and stray temporaries removed)."""
        if self._index is None:
            private_dir(self.root)
            self._index = _scan(self.root, time.time())
        return self._index

    def _mark_used(self, path: Path, now: float) -> bool:
        try:
            os.utime(path, (now, now))
        except FileNotFoundError:
            return False
        return True

    def _remove(self, key: str) -> bool:
        assert self._index is not None
        self._index.pop(key, None)
        try:
            self._path(key).unlink()
        except FileNotFoundError:
            return False
        return True

    def _expire(self, now: float) -> list[str]:
        assert self._index is not None
        self._swept = now
        expired = sorted(key for key, (_, last) in self._index.items() if now - last > self._ttl)
        for key in expired:
            self._remove(key)
        return expired

    def _evict(self, now: float, keep: str) -> None:
        assert self._index is not None
        if now - self._swept >= _SWEEP_EVERY:
            self._expire(now)
        index = self._index
        total = sum(size for size, _ in index.values())
        if total <= self._max_bytes:
            return
        for victim in sorted((key for key in index if key != keep), key=lambda k: index[k][1]):
            if total <= self._max_bytes:
                break
            total -= index[victim][0]
            self._remove(victim)


def _scan(root: Path, wall_now: float) -> dict[str, tuple[int, float]]:
    index: dict[str, tuple[int, float]] = {}
    for folder in root.iterdir():
        if not folder.is_dir():
            continue
        _tighten(folder, 0o700)  # left open by an earlier run or another tool
        for item in folder.iterdir():
            with contextlib.suppress(FileNotFoundError):
                info = item.stat()
                if item.name.endswith(_SUFFIX):
                    _tighten(item, 0o600, info.st_mode)
                    index[item.name[: -len(_SUFFIX)]] = (info.st_size, info.st_mtime)
                elif item.name.startswith(".") and wall_now - info.st_mtime > _STALE_TEMP:
                    item.unlink()
    return index


def _tighten(path: Path, mode: int, current: int | None = None) -> None:
    if current is None:
        current = path.stat().st_mode
    if stat.S_IMODE(current) != mode:
        os.chmod(path, mode)


def _write(path: Path, packed: bytes, now: float) -> None:
    private_dir(path.parent)
    write_durably(path, packed, now)
