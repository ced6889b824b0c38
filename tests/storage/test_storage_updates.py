"""The update loop: retried on conflicts from elsewhere, bounded, and its locks released."""

from __future__ import annotations

import asyncio

import pytest

from skillstate.storage import Change, MemoryStateStore, StateRecord, VersionConflict
from skillstate.storage.updates import SessionLocks, run_update


async def test_a_conflict_from_elsewhere_is_retried_with_the_newer_record() -> None:
    store = MemoryStateStore()
    seen: list[int] = []

    async def commit(session: str, change: Change, expected: int) -> StateRecord:
        if not seen[1:]:  # another process commits between our first read and our commit
            await store.commit(session, Change({"theirs": 1}, 1), expected_version=expected)
        return await store.commit(session, change, expected_version=expected)

    def updater(record: StateRecord) -> Change:
        seen.append(record.version)
        return record.changed(state={**record.state, "ours": 1})

    result = await run_update(store.load, commit, SessionLocks(), "s", updater)
    assert seen == [0, 1]
    assert result.state == {"theirs": 1, "ours": 1}


async def test_endless_conflicts_give_up_after_the_bound() -> None:
    store = MemoryStateStore()
    calls = 0

    async def commit(session: str, change: Change, expected: int) -> StateRecord:
        nonlocal calls
        calls += 1
        raise VersionConflict(session, expected, expected + 1)

    with pytest.raises(VersionConflict):
        await run_update(store.load, commit, SessionLocks(), "s", lambda r: r.changed(), 3)
    assert calls == 3
    with pytest.raises(ValueError):
        await run_update(store.load, commit, SessionLocks(), "s", lambda r: r.changed(), 0)


async def test_session_locks_are_dropped_when_free() -> None:
    locks = SessionLocks()
    order: list[str] = []

    async def hold(session: str, tag: str) -> None:
        async with locks.hold(session):
            order.append(f"{tag}+")
            await asyncio.sleep(0.001)
            order.append(f"{tag}-")

    await asyncio.gather(hold("a", "1"), hold("a", "2"), hold("b", "3"))
    assert order.index("1-") < order.index("2+")  # one session's holders take turns
    assert order.index("3+") < order.index("1-")  # other sessions do not wait
    assert len(locks) == 0
