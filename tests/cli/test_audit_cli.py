"""``skillstate audit`` reads the log from the store itself: the SQLite file under the data
directory (newest first, one line each, the filters, ``--json``), a clear message where there
is none yet, and the shared PostgreSQL database of ``--store``."""

from __future__ import annotations

import asyncio
import datetime
from pathlib import Path

from click.testing import CliRunner

from skillstate.cli.main import cli
from skillstate.storage.audit import AuditLog, PostgresAudit, SQLiteAudit
from skillstate.storage.sqlite import DB_NAME, SQLiteDatabase
from skillstate.support import jsonio

DAY = 24 * 3600.0
START = datetime.datetime(2026, 3, 1, 12, 0).timestamp()  # local time, as the command reads it


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        self.now += DAY
        return self.now


async def _fill(log: AuditLog) -> None:
    """Three entries: March 2, 3 and 4 at noon."""
    await log.record("loopback", "session.collapse", "alpha", {"client": "127.0.0.1"})
    await log.record("token", "session.reset", "beta", {"client": "10.0.0.2"})
    await log.record("token", "session.reset", "gamma")


def _sqlite_log(folder: Path) -> None:
    async def fill() -> None:
        db = await SQLiteDatabase.open(folder / DB_NAME)
        try:
            await _fill(AuditLog(SQLiteAudit(db), clock=Clock()))
        finally:
            await db.close()

    asyncio.run(fill())


def audit(*args: str) -> tuple[int, str]:
    done = CliRunner().invoke(cli, ["audit", *args])
    return done.exit_code, done.output


def test_the_sqlite_log_newest_first_one_line_each(tmp_path: Path) -> None:
    _sqlite_log(tmp_path)
    code, said = audit("--data-dir", str(tmp_path))
    assert code == 0, said
    lines = said.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("2026-03-04 12:00:00") and "token  session.reset  gamma" in lines[0]
    assert "session.reset  beta  client=10.0.0.2" in lines[1]
    assert lines[2].startswith("2026-03-02 12:00:00") and "loopback  session.collapse" in lines[2]


def test_filters_and_json(tmp_path: Path) -> None:
    _sqlite_log(tmp_path)
    data = ("--data-dir", str(tmp_path))
    code, said = audit(*data, "--action", "session.reset", "--limit", "1")
    assert code == 0 and len(said.splitlines()) == 1 and "gamma" in said
    code, said = audit(*data, "--since", "2026-03-03", "--until", "2026-03-04T12:00", "--json")
    assert code == 0
    entries = jsonio.loads(said)["audit"]
    assert [(e["target"], e["who"], e["detail"]) for e in entries] == [
        ("beta", "token", {"client": "10.0.0.2"})
    ]
    code, said = audit(*data, "--since", "yesterday")
    assert code == 2 and "not an ISO 8601 date" in said


def test_none_yet_is_said(tmp_path: Path) -> None:
    code, said = audit("--data-dir", str(tmp_path))
    assert code == 0 and said.strip() == f"no audit log yet in {tmp_path / DB_NAME}"
    assert not (tmp_path / DB_NAME).exists()  # reading made nothing
    _sqlite_log(tmp_path)
    code, said = audit("--data-dir", str(tmp_path), "--action", "key.create")
    assert code == 0 and said.startswith("no audit entries in")


def test_the_shared_log_of_store(postgres_url: str) -> None:
    from skillstate.testing.postgres import database

    async def fill() -> None:
        async with database() as db:
            await _fill(AuditLog(PostgresAudit(db), clock=Clock()))

    asyncio.run(fill())
    code, said = audit("--store", postgres_url)
    assert code == 0, said
    assert [line.split("  ")[3] for line in said.splitlines()] == ["gamma", "beta", "alpha"]
