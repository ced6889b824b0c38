"""A hybrid session through a gateway with a data key (encryption at rest, SECURITY.md): the
turns it collapses are archived and read back exactly through ``recall``, and afterwards no
file under the data directory (the database, its WAL, the blob files) holds any of the
session's tool outputs in clear; every blob and every Σ row is sealed."""

from __future__ import annotations

from pathlib import Path

import aiohttp
from test_outputs_modes import needle, recalled, recalling, step_log, viewed
from tool_loops import ROUTES, tool_loop

from skillstate.storage.data_key import add_key
from skillstate.storage.sealing import MAGIC
from skillstate.storage.sqlite import DB_NAME, SQLiteDatabase
from skillstate.testing import ScriptedUpstream
from skillstate.testing.gateway import gateway_for


async def test_a_hybrid_session_leaves_nothing_in_clear_under_the_data_directory(
    tmp_path: Path,
) -> None:
    data, key_file = tmp_path / "data", tmp_path / "data.key"
    add_key(key_file)
    session = "sealed-session"
    headers = {"x-skillstate-session": session, "x-skillstate-mode": "hybrid"}
    settings = {
        "data_dir": str(data),
        "data_key_file": str(key_file),
        "lanes": "compaction,state,outputs",
        "collapse": {"min_turns": 2, "keep_recent_turns": 3},
    }
    steps = [(f"call_{n}", step_log(n)) for n in range(5)]
    async with (
        ScriptedUpstream(recalling("Done.")) as up,
        gateway_for(up.url, settings=settings) as gw,
        aiohttp.ClientSession() as http,
    ):
        assert gw.context.stores is not None and gw.context.stores.kind == "sqlite"
        assert gw.context.engine is not None
        await gw.context.engine.request_collapse(session)
        asked = tool_loop("chat", False, "Build every step.", steps)
        async with http.post(gw.url + ROUTES["chat"], json=asked, headers=headers) as r:
            assert r.status == 200, await r.text()
        assert viewed(up.requests)
        (by_ref,) = recalled(up.requests)
        assert needle(2) in by_ref.body  # the exact output, from the sealed archive
        record = await gw.context.engine.store.load(session)
        assert record.version > 0
    blobs = list((data / "archive").rglob("*.blob"))
    assert blobs and all(blob.read_bytes()[:4] == MAGIC for blob in blobs)
    found = [
        (path.name, n)
        for path in data.rglob("*")
        if path.is_file()
        for n in range(5)
        if needle(n) in path.read_bytes() or b"ValueError: bad input" in path.read_bytes()
    ]
    assert found == []
    db = await SQLiteDatabase.open(data / DB_NAME)
    try:
        rows = await db.run(
            lambda conn: conn.execute("SELECT state, meta FROM sessions").fetchall()
        )
    finally:
        await db.close()
    assert rows and all(state[:4] == MAGIC and meta[:4] == MAGIC for state, meta in rows)
