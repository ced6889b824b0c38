"""Blob files: compressed and content-addressed, private on disk, expiring after their TTL,
evicted least recently used past the quota, and rebuilt from the files after a restart."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from storage_support import Clock

from skillstate.storage import BlobStore, StoreLimitError
from skillstate.storage.codec import codec_of

DAY = 24 * 3600.0


def key(n: int) -> str:
    return f"ar_{n:024x}"


def blob_path(root: Path, name: str) -> Path:
    return root / name[-2:] / f"{name}.blob"


async def test_a_blob_round_trips_compressed(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "archive", codec="gzip")
    data = b"the same tool output, again and again\n" * 400
    await store.put(key(1), data)
    assert await store.get(key(1)) == data
    on_disk = blob_path(tmp_path / "archive", key(1)).read_bytes()
    assert codec_of(on_disk) == "gzip"
    assert len(on_disk) < len(data) / 10
    assert await store.get(key(2)) is None


async def test_directories_are_0700_and_files_0600(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    old = os.umask(0o022)
    try:
        await BlobStore(root).put(key(1), b"secret")
    finally:
        os.umask(old)
    path = blob_path(root, key(1))
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary left


async def test_an_existing_archive_folder_is_made_private(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    root.mkdir(mode=0o755)
    os.chmod(root, 0o755)
    await BlobStore(root).put(key(1), b"x")
    assert stat.S_IMODE(root.stat().st_mode) == 0o700


async def test_blobs_left_open_by_an_earlier_run_are_made_private(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    await BlobStore(root).put(key(1), b"secret")
    path = blob_path(root, key(1))
    os.chmod(path, 0o644)
    os.chmod(path.parent, 0o777)
    assert await BlobStore(root).get(key(2)) is None  # any first use: the store scans the files
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


async def test_putting_a_key_again_keeps_the_first_bytes(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    await store.put(key(1), b"first")
    await store.put(key(1), b"second")
    assert await store.get(key(1)) == b"first"


async def test_blobs_unused_past_the_ttl_expire(tmp_path: Path) -> None:
    clock = Clock()
    store = BlobStore(tmp_path, ttl=7 * DAY, clock=clock)
    await store.put(key(1), b"old")
    await store.put(key(2), b"read often")
    clock.advance(5 * DAY)
    assert await store.get(key(2)) == b"read often"  # a read renews it
    clock.advance(3 * DAY)
    assert await store.get(key(1)) is None
    assert not blob_path(tmp_path, key(1)).exists()
    assert await store.get(key(2)) == b"read often"


async def test_writes_sweep_expired_blobs(tmp_path: Path) -> None:
    clock = Clock()
    store = BlobStore(tmp_path, ttl=DAY, clock=clock)
    await store.put(key(1), b"a")
    await store.put(key(2), b"b")
    clock.advance(2 * DAY)
    await store.put(key(3), b"c")
    assert not blob_path(tmp_path, key(1)).exists()
    assert not blob_path(tmp_path, key(2)).exists()
    clock.advance(2 * DAY)
    assert await store.sweep() == 1
    assert await store.usage() == 0


async def test_past_the_quota_the_least_recently_used_go_first(tmp_path: Path) -> None:
    clock = Clock()
    sample = os.urandom(1000)  # random bytes do not compress: each file is about 1 KB
    store = BlobStore(tmp_path, max_bytes=3500, clock=clock, codec="gzip")
    for n in range(3):
        await store.put(key(n), sample + bytes([n]))
        clock.advance(1)
    assert await store.get(key(0)) is not None  # 0 is now the most recently used
    clock.advance(1)
    await store.put(key(3), sample + b"\x03")
    assert await store.get(key(1)) is None
    for n in (0, 2, 3):
        assert await store.get(key(n)) == sample + bytes([n])
    assert await store.usage() <= 3500


async def test_a_blob_over_the_whole_quota_is_refused(tmp_path: Path) -> None:
    store = BlobStore(tmp_path, max_bytes=100)
    with pytest.raises(StoreLimitError, match="over the quota"):
        await store.put(key(1), os.urandom(500))


async def test_a_restart_rebuilds_use_order_and_sizes_from_the_files(tmp_path: Path) -> None:
    clock = Clock()
    sample = os.urandom(1000)
    first = BlobStore(tmp_path, max_bytes=2500, clock=clock, codec="gzip")
    await first.put(key(1), sample + b"1")
    clock.advance(10)
    await first.put(key(2), sample + b"2")
    clock.advance(10)
    stray = tmp_path / key(1)[-2:] / ".crashed-writer.tmp"
    stray.write_bytes(b"half a blob")
    os.utime(stray, (0, 0))
    second = BlobStore(tmp_path, max_bytes=2500, clock=clock, codec="gzip")
    assert await second.usage() == await first.usage()
    assert not stray.exists()
    await second.put(key(3), sample + b"3")
    assert await second.get(key(1)) is None  # the oldest use, as the files' times said
    assert await second.get(key(2)) == sample + b"2"


async def test_a_damaged_blob_reads_as_missing_and_is_removed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = BlobStore(tmp_path)
    await store.put(key(1), b"fine")
    blob_path(tmp_path, key(1)).write_bytes(b"SSAB garbage")
    assert await store.get(key(1)) is None
    assert "unreadable" in caplog.text
    assert not blob_path(tmp_path, key(1)).exists()


async def test_a_blob_deleted_behind_the_stores_back_is_missing(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    await store.put(key(1), b"x")
    blob_path(tmp_path, key(1)).unlink()
    assert await store.get(key(1)) is None
    assert await store.delete(key(1)) is False
    await store.put(key(1), b"y")
    assert await store.get(key(1)) == b"y"
    assert await store.delete(key(1)) is True


async def test_a_blob_written_by_another_process_is_found(tmp_path: Path) -> None:
    await BlobStore(tmp_path).put(key(1), b"from elsewhere")
    reader = BlobStore(tmp_path)
    assert await reader.usage() > 0
    await BlobStore(tmp_path).put(key(2), b"written after the reader started")
    assert await reader.get(key(2)) == b"written after the reader started"
