"""The ArchiveStore contract, run against the in-memory twin and SQLite with blob files."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from storage_support import BACKENDS, Clock, archive_store

from skillstate.storage import ArchiveEntry, ArchiveStore, StoreLimitError

REF = "ar_" + "1" * 24


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ArchiveStore]:
    async with archive_store(request.param, tmp_path, Clock()) as opened:
        yield opened


def entry(session: str, ref: str, first: int, last: int) -> ArchiveEntry:
    return ArchiveEntry(session, ref, first, last, f"turns {first}-{last}", 10 * last, 5.0)


async def test_put_then_get_and_putting_again_changes_nothing(store: ArchiveStore) -> None:
    assert await store.get(REF) is None
    await store.put(REF, b"span bytes")
    await store.put(REF, b"span bytes")
    assert await store.get(REF) == b"span bytes"


async def test_index_entries_are_per_session_in_turn_order(store: ArchiveStore) -> None:
    other = "ar_" + "2" * 24
    await store.add_entry(entry("s1", other, 9, 12))
    await store.add_entry(entry("s1", REF, 1, 8))
    await store.add_entry(entry("s1", REF, 1, 8))
    await store.add_entry(entry("s2", REF, 3, 4))
    assert await store.entries("s1") == [entry("s1", REF, 1, 8), entry("s1", other, 9, 12)]
    assert await store.entries("s2") == [entry("s2", REF, 3, 4)]
    assert await store.entries("none") == []


async def test_forget_drops_a_sessions_entries_only(store: ArchiveStore) -> None:
    await store.put(REF, b"kept")
    await store.add_entry(entry("s1", REF, 1, 2))
    await store.add_entry(entry("s2", REF, 1, 2))
    assert await store.forget("s1") == 1
    assert await store.forget("s1") == 0
    assert await store.entries("s1") == []
    assert await store.entries("s2") == [entry("s2", REF, 1, 2)]
    assert await store.get(REF) == b"kept"


async def test_keys_that_could_escape_a_folder_are_refused(store: ArchiveStore) -> None:
    for key in ("../etc/passwd", "a/b", "", "x" * 129, "ar_1.blob"):
        with pytest.raises(StoreLimitError):
            await store.put(key, b"x")
        with pytest.raises(StoreLimitError):
            await store.get(key)


async def test_the_memory_twin_evicts_the_least_recently_used_past_its_quota() -> None:
    from skillstate.storage import MemoryArchiveStore

    store = MemoryArchiveStore(max_bytes=250)
    refs = [f"ar_{n:024x}" for n in range(3)]
    for ref in refs:
        await store.put(ref, b"x" * 100)
    assert await store.get(refs[0]) is None  # 300 bytes: the oldest went
    assert await store.get(refs[1]) is not None  # 1 is now more recent than 2
    await store.put("ar_" + "f" * 24, b"y" * 100)
    assert await store.get(refs[2]) is None
    assert await store.get(refs[1]) == b"x" * 100
    with pytest.raises(StoreLimitError, match="quota"):
        await store.put("ar_" + "e" * 24, b"z" * 251)
