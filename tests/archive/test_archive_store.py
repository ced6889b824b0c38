"""The archive over a real store: spans kept exactly under their ref and indexed, damaged or
substituted blobs refused, and the recall answers (a page, a search, an unknown ref)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from skillstate.archive import Archive, canonical_span, ref_for, span_ref, span_text
from skillstate.conversation import Message, Reasoning, Text, ToolCall, ToolResult
from skillstate.storage import BlobStore, MemoryArchiveStore, SQLiteArchiveStore, SQLiteDatabase
from skillstate.storage.protocols import ArchiveStore

SPAN = [
    Message("user", [Text("Find where the retry limit is set.")]),
    Message(
        "assistant",
        [
            Reasoning("look in config", signature="sig-1", extra={"id": "rs_1"}),
            ToolCall("call_1", "grep", '{"pattern": "RETRY_LIMIT"}', extra={"index": 0}),
        ],
    ),
    Message(
        "tool",
        [ToolResult("call_1", [Text("src/net.py:41: RETRY_LIMIT = 7\nsrc/net.py:90: retry()")])],
        hints={"content": "string"},
    ),
]


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ArchiveStore]:
    if request.param == "memory":
        yield MemoryArchiveStore()
        return
    db = await SQLiteDatabase.open(tmp_path / "skillstate.db")
    yield SQLiteArchiveStore(db, BlobStore(tmp_path / "archive"))
    await db.close()


async def test_a_kept_span_comes_back_exactly_and_is_indexed(store: ArchiveStore) -> None:
    archive = Archive(store, clock=lambda: 42.0)
    entry = await archive.keep("s1", SPAN, first_turn=3, last_turn=5, summary="found the limit")
    assert entry.ref == span_ref(SPAN)
    assert entry.size == len(canonical_span(SPAN))
    assert (entry.first_turn, entry.last_turn, entry.created) == (3, 5, 42.0)
    assert await archive.span(entry.ref) == SPAN
    assert await archive.entries("s1") == [entry]


async def test_the_same_span_is_stored_once(store: ArchiveStore) -> None:
    archive = Archive(store)
    one = await archive.keep("s1", SPAN, first_turn=1, last_turn=3)
    two = await archive.keep("s2", SPAN, first_turn=7, last_turn=9)
    assert one.ref == two.ref
    assert [e.session for e in await archive.entries("s2")] == ["s2"]


async def test_a_blob_that_does_not_match_its_ref_is_refused(store: ArchiveStore) -> None:
    ref = span_ref(SPAN)
    await store.put(ref, canonical_span(SPAN[:1]))  # another span's bytes under this ref
    assert await Archive(store).span(ref) is None


async def test_recall_pages_through_the_span_text(store: ArchiveStore) -> None:
    archive = Archive(store)
    entry = await archive.keep("s1", SPAN, first_turn=1, last_turn=3)
    text = await archive.recall(entry.ref)
    assert "## 1 user\nFind where the retry limit is set." in text
    assert '[tool call grep id=call_1]\n{"pattern": "RETRY_LIMIT"}' in text
    assert "src/net.py:41: RETRY_LIMIT = 7" in text
    assert "sig-1" not in text  # signatures and other wire details are not content


async def test_recall_with_a_query_answers_the_matching_lines(store: ArchiveStore) -> None:
    archive = Archive(store)
    entry = await archive.keep("s1", SPAN, first_turn=1, last_turn=3)
    answer = await archive.recall(entry.ref, "retry_limit =", context=0)
    number = span_text(SPAN).splitlines().index("src/net.py:41: RETRY_LIMIT = 7") + 1
    assert answer.splitlines() == [
        '1 of 1 matching lines for "retry_limit =":',
        f"{number}: src/net.py:41: RETRY_LIMIT = 7",
    ]
    missing = await archive.recall(entry.ref, "timeout")
    assert missing.startswith('No line matches "timeout"')


async def test_recall_of_an_unknown_or_malformed_ref_says_so(store: ArchiveStore) -> None:
    archive = Archive(store)
    unknown = "ar_" + "f" * 24
    assert await archive.recall(unknown) == (
        f"No archived span {unknown}: it is unknown, or expired from the archive."
    )
    assert "is not an archive ref" in await archive.recall("../../etc/passwd")
    assert await archive.span("nonsense") is None


async def test_a_blob_that_matches_its_ref_but_is_no_span_is_refused(
    store: ArchiveStore, caplog: pytest.LogCaptureFixture
) -> None:
    junk = b'{"not": "a span"}'
    await store.put(ref_for(junk), junk)
    assert await Archive(store).span(ref_for(junk)) is None
    assert "unreadable" in caplog.text


async def test_a_lanes_write_is_kept_under_its_ref_and_indexed(store: ArchiveStore) -> None:
    archive = Archive(store, clock=lambda: 5.0)
    output = [SPAN[2]]
    data = canonical_span(output)
    entry = await archive.put("s1", ref_for(data), data, "tool output call_1")
    assert (entry.ref, entry.first_turn, entry.summary) == (ref_for(data), -1, "tool output call_1")
    assert await archive.span(entry.ref) == output
    assert [e.ref for e in await archive.entries("s1")] == [entry.ref]
    with pytest.raises(ValueError, match="is not the ref"):
        await archive.put("s1", span_ref(SPAN), data)
