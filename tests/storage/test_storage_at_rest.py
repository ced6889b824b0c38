"""Encryption at rest through the real stores: with a data key, a scan of every file under the
data directory (the database, its WAL, the blob files) and of every row of every PostgreSQL
table finds none of a session's Σ values, documents, archived text or summaries, and all of it
reads back; without one the same scan finds them (so the scan sees what it looks for).
``skillstate keys rotate-data``'s work (``storage.resealing``) round-trips: records under the
old key, and records written before sealing, come back equal under the new key alone, the old
key alone no longer opens them, and a gateway's writes during the rotation are kept."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from storage_support import Clock, postgres_database

from skillstate.archive import Archive
from skillstate.conversation.model import Message, Text
from skillstate.storage import StoreOptions, open_stores
from skillstate.storage.blobs import BlobStore
from skillstate.storage.postgres import (
    PostgresArchiveStore,
    PostgresDatabase,
    PostgresStateStore,
    table_names,
)
from skillstate.storage.protocols import ArchiveStore, Change, StateRecord, StateStore
from skillstate.storage.resealing import reseal_postgres, reseal_sqlite
from skillstate.storage.sealing import MAGIC, Sealer, SealError
from skillstate.storage.sqlite import DB_NAME, SQLiteDatabase, SQLiteStateStore
from skillstate.storage.sqlite_archive import SQLiteArchiveStore
from skillstate.storage.stores import ARCHIVE_DIR

OLD = bytes(range(32))
NEW = bytes(range(100, 132))
SECRETS = (
    "goal-7f3a1c-migrate-billing",
    "finding-b42e-api-key-in-env",
    "meta-c9d1-budget",
    "doc-e5f0-epoch-prefix",
    "archived-turn-91ab-password-hunter2",
    "summary-0d3e-ran-the-migration",
)
SESSION = "tenant/scan-session"


async def _use(state: StateStore, archive: ArchiveStore) -> list[str]:
    """A session's Σ, meta and document, and an archived turn with its summary, each holding
    one of ``SECRETS``; the refs archived."""
    goal, finding, meta, doc, turn, summary = SECRETS
    await state.commit(
        SESSION,
        Change({"goal": goal, "findings": [finding]}, step=3, meta={"note": meta}),
        expected_version=0,
    )
    await state.put_doc(SESSION, "epoch", {"prefix": doc})
    messages = [Message("user", [Text(f"please look: {turn}")])]
    entry = await Archive(archive).keep(
        SESSION, messages, first_turn=1, last_turn=1, summary=summary
    )
    return [entry.ref]


async def _read_back(state: StateStore, archive: ArchiveStore, refs: list[str]) -> None:
    goal, finding, meta, doc, turn, summary = SECRETS
    record = await state.load(SESSION)
    assert record.state == {"goal": goal, "findings": [finding]}
    assert record.meta == {"note": meta} and record.version == 1 and record.step == 3
    assert await state.get_doc(SESSION, "epoch") == {"prefix": doc}
    span = await Archive(archive).span(refs[0])
    assert span is not None and turn in str(span[0].parts[0])
    assert [entry.summary for entry in await archive.entries(SESSION)] == [summary]


def _found(haystack: bytes) -> list[str]:
    """The secrets in ``haystack``, as text or as the hex PostgreSQL shows bytes in."""
    return [
        secret
        for secret in SECRETS
        if secret.encode() in haystack or secret.encode().hex().encode() in haystack
    ]


def _scan_files(root: Path) -> list[str]:
    found: set[str] = set()
    for path in root.rglob("*"):
        if path.is_file():
            found.update(_found(path.read_bytes()))
    return sorted(found)


@pytest.mark.parametrize("sealed", [True, False], ids=["sealed", "plain"])
async def test_no_plaintext_under_the_data_directory(tmp_path: Path, sealed: bool) -> None:
    sealer = Sealer([NEW]) if sealed else None
    stores = await open_stores(tmp_path, options=StoreOptions(sealer=sealer))
    try:
        assert stores.kind == "sqlite"
        refs = await _use(stores.state, stores.archive)
        await _read_back(stores.state, stores.archive, refs)
        assert (tmp_path / f"{DB_NAME}-wal").stat().st_size > 0  # the WAL is scanned too
        found = _scan_files(tmp_path)
    finally:
        await stores.close()
    if sealed:
        assert found == []
        blobs = list((tmp_path / ARCHIVE_DIR).rglob("*.blob"))
        assert blobs and all(blob.read_bytes()[:4] == MAGIC for blob in blobs)
        assert _scan_files(tmp_path) == []  # after the close's checkpoint as well
    else:
        assert {SECRETS[0], SECRETS[1], SECRETS[5]} <= set(found)


async def _dump(db: PostgresDatabase) -> bytes:
    """Every row of every skillstate table, as PostgreSQL writes it as text."""
    rows = []
    for table in table_names():
        rows += [r[0] for r in await db.pool.fetch(f"SELECT t::text FROM {table} t")]
    return "\n".join(rows).encode()


@pytest.mark.parametrize("sealed", [True, False], ids=["sealed", "plain"])
async def test_no_plaintext_in_the_postgresql_tables(sealed: bool) -> None:
    sealer = Sealer([NEW]) if sealed else None
    async with postgres_database() as db:
        state = PostgresStateStore(db, clock=Clock(), sealer=sealer)
        archive = PostgresArchiveStore(db, clock=Clock(), sealer=sealer)
        refs = await _use(state, archive)
        await _read_back(state, archive, refs)
        found = _found(await _dump(db))
    if sealed:
        assert found == []
    else:
        assert {SECRETS[0], SECRETS[1], SECRETS[5]} <= set(found)


async def test_a_sealed_store_opened_with_the_wrong_key_or_none_says_so(tmp_path: Path) -> None:
    stores = await open_stores(tmp_path, options=StoreOptions(sealer=Sealer([NEW])))
    refs = await _use(stores.state, stores.archive)
    await stores.close()
    db = await SQLiteDatabase.open(tmp_path / DB_NAME)
    try:
        for sealer, said in ((Sealer([OLD]), "not among the keys"), (None, "no data key")):
            blobs = BlobStore(tmp_path / ARCHIVE_DIR, sealer=sealer)
            with pytest.raises(SealError, match=said):
                await SQLiteStateStore(db, sealer=sealer).load(SESSION)
            with pytest.raises(SealError, match=said):
                await SQLiteArchiveStore(db, blobs).get(refs[0])
            with pytest.raises(SealError, match=said):
                await SQLiteArchiveStore(db, blobs).entries(SESSION)
        assert (tmp_path / ARCHIVE_DIR / refs[0][-2:] / f"{refs[0]}.blob").exists()  # kept
    finally:
        await db.close()


def _sqlite_stores(
    db: SQLiteDatabase, folder: Path, sealer: Sealer | None
) -> tuple[SQLiteStateStore, SQLiteArchiveStore]:
    blobs = BlobStore(folder / ARCHIVE_DIR, sealer=sealer)
    return SQLiteStateStore(db, sealer=sealer), SQLiteArchiveStore(db, blobs)


async def test_rotation_round_trips_on_sqlite(tmp_path: Path) -> None:
    """Written before sealing (no key), then under the old key; rotated to the new key: all of
    it reads back under the new key alone, none of it under the old key alone."""
    db = await SQLiteDatabase.open(tmp_path / DB_NAME)
    try:
        state = SQLiteStateStore(db)
        await state.commit("before", Change({"goal": SECRETS[2]}, step=1), expected_version=0)
        refs = await _use(*_sqlite_stores(db, tmp_path, Sealer([OLD])))
        said: list[tuple[str, int, int]] = []
        done = await reseal_sqlite(
            db, BlobStore(tmp_path / ARCHIVE_DIR), Sealer([NEW, OLD]), lambda *n: said.append(n)
        )
        # Σ and meta of two sessions, a document, a summary and a blob, none current before.
        assert done.counts == {
            "sessions": (2, 0),
            "documents": (1, 0),
            "archive_entries": (1, 0),
            "blobs": (1, 0),
        }
        assert [table for table, *_ in said] == [
            "sessions",
            "documents",
            "archive_entries",
            "blobs",
        ]
        await _read_back(*_sqlite_stores(db, tmp_path, Sealer([NEW])), refs)
        before = await SQLiteStateStore(db, sealer=Sealer([NEW])).load("before")
        assert before.state == {"goal": SECRETS[2]} and before.version == 1
        with pytest.raises(SealError, match="not among the keys"):
            await SQLiteStateStore(db, sealer=Sealer([OLD])).load(SESSION)
        with pytest.raises(SealError, match="not among the keys"):
            await _sqlite_stores(db, tmp_path, Sealer([OLD]))[1].get(refs[0])
        again = await reseal_sqlite(
            db, BlobStore(tmp_path / ARCHIVE_DIR), Sealer([NEW, OLD]), lambda *n: None
        )
        assert again.resealed == 0 and again.current == 5
    finally:
        await db.close()
    assert _scan_files(tmp_path) == []  # the plaintext row is gone from the file and its WAL


async def test_rotation_keeps_the_writes_of_a_gateway_serving_meanwhile(tmp_path: Path) -> None:
    """Over several batches, a gateway (its own connection, as another process) updates
    sessions while the rotation runs: no update is lost and every record ends current."""
    ring = Sealer([NEW, OLD])
    gateway_db = await SQLiteDatabase.open(tmp_path / DB_NAME)
    rotating_db = await SQLiteDatabase.open(tmp_path / DB_NAME)
    try:
        old = SQLiteStateStore(gateway_db, sealer=Sealer([OLD]))
        names = [f"s{n:04}" for n in range(450)]
        for name in names:
            await old.commit(name, Change({"n": 0, "goal": SECRETS[0]}, 0), expected_version=0)
        gateway = SQLiteStateStore(gateway_db, sealer=ring)

        def bump(record: StateRecord) -> Change:
            return record.changed(state={**record.state, "n": record.state["n"] + 1})

        async def serve() -> None:
            for round_ in range(3):
                for name in names[round_::7]:
                    await gateway.update(name, bump)
                    await asyncio.sleep(0)

        rotation = reseal_sqlite(rotating_db, None, ring, lambda *n: None)
        done, _ = await asyncio.gather(rotation, serve())
        assert done.counts["sessions"][0] + done.counts["sessions"][1] == len(names)
        expected = {name: sum(name in names[r::7] for r in range(3)) for name in names}
        current = SQLiteStateStore(gateway_db, sealer=Sealer([NEW]))
        for name in names:
            assert (await current.load(name)).state["n"] == expected[name]
        kept = await gateway_db.run(
            lambda conn: conn.execute("SELECT state FROM sessions").fetchall()
        )
        assert len(kept) == len(names) and all(ring.is_current(row[0]) for row in kept)
    finally:
        await rotating_db.close()
        await gateway_db.close()


async def test_rotation_round_trips_on_postgresql() -> None:
    async with postgres_database() as db:
        plain = PostgresStateStore(db, clock=Clock())
        await plain.commit("before", Change({"goal": SECRETS[2]}, step=1), expected_version=0)
        state = PostgresStateStore(db, clock=Clock(), sealer=Sealer([OLD]))
        refs = await _use(state, PostgresArchiveStore(db, clock=Clock(), sealer=Sealer([OLD])))
        done = await reseal_postgres(db, Sealer([NEW, OLD]), lambda *n: None)
        assert done.counts == {
            "sessions": (2, 0),
            "documents": (1, 0),
            "archive_entries": (1, 0),
            "blobs": (1, 0),
        }
        new = Sealer([NEW])
        state = PostgresStateStore(db, clock=Clock(), sealer=new)
        await _read_back(state, PostgresArchiveStore(db, clock=Clock(), sealer=new), refs)
        assert (await state.load("before")).state == {"goal": SECRETS[2]}
        with pytest.raises(SealError, match="not among the keys"):
            await PostgresStateStore(db, sealer=Sealer([OLD])).load(SESSION)
        with pytest.raises(SealError, match="not among the keys"):
            await PostgresArchiveStore(db, clock=Clock(), sealer=Sealer([OLD])).get(refs[0])
        assert _found(await _dump(db)) == []
        again = await reseal_postgres(db, Sealer([NEW, OLD]), lambda *n: None)
        assert again.resealed == 0 and again.current == 5
