"""The StateStore contract, run against the in-memory twin and SQLite alike: versions,
optimistic commits, updates that never lose a patch, resets, sessions listed, documents, bounds."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from storage_support import BACKENDS, Clock, state_store

from skillstate.storage import (
    MAX_STATE_BYTES,
    Change,
    StateRecord,
    StateStore,
    StoreLimitError,
    VersionConflict,
)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=BACKENDS)
async def store(
    request: pytest.FixtureRequest, tmp_path: Path, clock: Clock
) -> AsyncIterator[StateStore]:
    async with state_store(request.param, tmp_path, clock) as opened:
        yield opened


async def test_an_unknown_session_is_empty_at_version_zero(store: StateStore) -> None:
    assert await store.load("s1") == StateRecord({}, 0, 0, {})


async def test_each_commit_adds_one_to_the_version(store: StateStore) -> None:
    first = await store.commit("s1", Change({"a": 1}, 1, {"epoch": 0}), expected_version=0)
    second = await store.commit("s1", first.changed(state={"a": 2}), expected_version=1)
    assert (first.version, second.version) == (1, 2)
    assert await store.load("s1") == StateRecord({"a": 2}, 2, 1, {"epoch": 0})
    assert (await store.load("other")).version == 0


async def test_a_commit_against_a_stale_version_conflicts(store: StateStore) -> None:
    await store.commit("s1", Change({"a": 1}, 1), expected_version=0)
    with pytest.raises(VersionConflict) as caught:
        await store.commit("s1", Change({"a": "lost"}, 1), expected_version=0)
    assert (caught.value.expected, caught.value.current) == (0, 1)
    with pytest.raises(VersionConflict):
        await store.commit("new", Change({}, 0), expected_version=3)
    assert (await store.load("s1")).state == {"a": 1}


async def test_concurrent_updates_of_one_session_lose_no_patch(store: StateStore) -> None:
    def add(key: str):  # type: ignore[no-untyped-def]
        def updater(record: StateRecord) -> Change:
            return record.changed(state={**record.state, key: True}, step=record.step + 1)

        return updater

    results = await asyncio.gather(*(store.update("s1", add(f"k{n}")) for n in range(40)))
    final = await store.load("s1")
    assert final.version == 40
    assert final.step == 40
    assert set(final.state) == {f"k{n}" for n in range(40)}
    assert sorted(r.version for r in results) == list(range(1, 41))


async def test_an_update_that_changes_nothing_commits_nothing(store: StateStore) -> None:
    await store.commit("s1", Change({"a": 1}, 1), expected_version=0)
    record = await store.update("s1", lambda record: None)
    assert record.version == 1
    assert (await store.load("s1")).version == 1


async def test_what_a_caller_holds_is_not_what_is_stored(store: StateStore) -> None:
    state = {"files": {"a.py": "read"}}
    committed = await store.commit("s1", Change(state, 1), expected_version=0)
    state["files"]["b.py"] = "changed after commit"
    committed.state["files"]["c.py"] = "changed in the result"
    loaded = await store.load("s1")
    loaded.state["files"]["d.py"] = "changed after load"
    assert (await store.load("s1")).state == {"files": {"a.py": "read"}}


async def test_big_integers_and_unicode_are_stored_exactly(store: StateStore) -> None:
    state = {"seed": 2**80 + 7, "note": "naïve ✓", "ratio": 0.1}
    await store.commit("s1", Change(state, 3), expected_version=0)
    assert (await store.load("s1")).state == state


async def test_sessions_are_listed_with_sizes_most_recent_first(
    store: StateStore, clock: Clock
) -> None:
    await store.commit("old", Change({"a": 1}, 2, {"m": 1}), expected_version=0)
    clock.advance(10)
    await store.commit("new", Change({"bb": [1, 2]}, 5), expected_version=0)
    clock.advance(10)
    await store.commit("old", Change({"a": 2}, 3, {"m": 1}), expected_version=1)
    listed = await store.list_sessions()
    assert [info.session for info in listed] == ["old", "new"]
    old, new = listed
    assert (old.version, old.step, old.state_bytes, old.meta_bytes) == (2, 3, 7, 7)
    assert (new.version, new.step, new.state_bytes, new.meta_bytes) == (1, 5, 12, 2)
    assert old.created == clock.now - 20
    assert old.last_seen == clock.now


async def test_touch_marks_a_session_seen_without_a_version(
    store: StateStore, clock: Clock
) -> None:
    await store.commit("a", Change({}, 0), expected_version=0)
    clock.advance(1)
    await store.commit("b", Change({}, 0), expected_version=0)
    clock.advance(1)
    await store.touch("a")
    await store.touch("never-committed")
    listed = await store.list_sessions()
    assert [(i.session, i.version, i.last_seen) for i in listed] == [
        ("a", 1, clock.now),
        ("b", 1, clock.now - 1),
    ]


async def test_reset_forgets_the_state_but_versions_only_grow(store: StateStore) -> None:
    await store.commit("s1", Change({"a": 1}, 4), expected_version=0)
    await store.put_doc("s1", "epoch", {"prefix": "x"})
    assert await store.reset("s1") is True
    assert await store.reset("s1") is False
    assert await store.reset("never") is False
    after = await store.load("s1")
    assert (after.state, after.step, after.meta) == ({}, 0, {})
    assert after.version == 2
    assert await store.get_doc("s1", "epoch") is None
    assert await store.list_sessions() == []
    with pytest.raises(VersionConflict):  # a commit computed before the reset
        await store.commit("s1", Change({"a": 1, "b": 2}, 5), expected_version=1)
    again = await store.commit("s1", Change({"fresh": True}, 1), expected_version=2)
    assert again.version == 3
    assert [info.session for info in await store.list_sessions()] == ["s1"]


async def test_documents_are_kept_per_session_and_name(store: StateStore) -> None:
    assert await store.get_doc("s1", "epoch") is None
    await store.put_doc("s1", "epoch", {"n": 1})
    await store.put_doc("s1", "epoch", {"n": 2})
    await store.put_doc("s1", "other", {"n": 3})
    await store.put_doc("s2", "epoch", {"n": 4})
    assert await store.get_doc("s1", "epoch") == {"n": 2}
    assert await store.get_doc("s1", "other") == {"n": 3}
    assert await store.get_doc("s2", "epoch") == {"n": 4}
    assert (await store.load("s1")).version == 0  # documents are not versioned


async def test_values_past_the_bounds_are_refused(store: StateStore) -> None:
    huge = {"blob": "x" * MAX_STATE_BYTES}
    with pytest.raises(StoreLimitError, match="over the bound"):
        await store.commit("s1", Change(huge, 1), expected_version=0)
    with pytest.raises(StoreLimitError, match="JSON object"):
        await store.commit("s1", Change([1], 1), expected_version=0)  # type: ignore[arg-type]
    with pytest.raises(StoreLimitError, match="not JSON"):
        await store.commit("s1", Change({"x": object()}, 1), expected_version=0)
    with pytest.raises(StoreLimitError, match="session id"):
        await store.load("")
    with pytest.raises(StoreLimitError, match="session id"):
        await store.load("s" * 513)
    assert (await store.load("s1")).version == 0
