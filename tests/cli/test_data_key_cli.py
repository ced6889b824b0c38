"""``skillstate keys data-key`` and ``skillstate keys rotate-data``: a new key goes first in an
owner-only key file; rotating seals what the data directory held in plaintext (and what an
older key sealed) under the newest key, says how much, and is in the audit log as
``data.rotate`` with who ran it; without a usable key it refuses, saying why."""

from __future__ import annotations

import asyncio
import getpass
import json
import os
from pathlib import Path

from click.testing import CliRunner

from skillstate.cli.main import cli
from skillstate.storage import Change, StoreOptions, open_stores
from skillstate.storage.data_key import read_key_file
from skillstate.storage.sealing import Sealer, key_id
from skillstate.testing import postgres

SECRET = "goal-4c1d-rotate-me"


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    done = CliRunner().invoke(cli, list(args), env=env)
    return done.exit_code, done.stdout, done.stderr


def _write(data: Path, sealer: Sealer | None, session: str) -> None:
    async def work() -> None:
        stores = await open_stores(data, options=StoreOptions(sealer=sealer))
        try:
            change = Change({"goal": SECRET}, step=1)
            await stores.state.commit(session, change, expected_version=0)
        finally:
            await stores.close()

    asyncio.run(work())


def _read(data: Path, sealer: Sealer, session: str) -> object:
    async def work() -> object:
        stores = await open_stores(data, options=StoreOptions(sealer=sealer))
        try:
            assert stores.degraded is None
            return (await stores.state.load(session)).state
        finally:
            await stores.close()

    return asyncio.run(work())


def test_a_new_data_key_goes_first_in_an_owner_only_file(tmp_path: Path) -> None:
    path = tmp_path / "conf" / "data.key"
    code, out, said = run("keys", "data-key", "--file", str(path))
    first = out.strip()
    assert code == 0 and "rotate-data" in said
    assert path.stat().st_mode & 0o777 == 0o600
    code, out, _ = run("keys", "data-key", env={"SKILLSTATE_DATA_KEY_FILE": str(path)})
    assert code == 0
    assert [key_id(key) for key in read_key_file(path)] == [out.strip(), first]
    code, _, said = run("keys", "data-key", "--data-dir", str(tmp_path))
    assert code == 2 and "no key file" in said


def test_rotate_data_seals_the_data_directory_and_is_audited(tmp_path: Path) -> None:
    data, path = tmp_path / "data", tmp_path / "data.key"
    run("keys", "data-key", "--file", str(path))
    older = Sealer(read_key_file(path))
    _write(data, None, "plain")  # written before encryption was on
    _write(data, older, "sealed-old")
    run("keys", "data-key", "--file", str(path))
    env = {"SKILLSTATE_DATA_KEY_FILE": str(path)}
    code, out, said = run("keys", "rotate-data", "--data-dir", str(data), env=env)
    newest = Sealer(read_key_file(path)[:1])
    assert code == 0, said
    assert f"2 records sealed again, 0 were already under data key {newest.key_id}" in out
    assert "sessions: 2 sealed again" in said and older.key_id in said  # may leave the file
    for session in ("plain", "sealed-old"):
        assert _read(data, newest, session) == {"goal": SECRET}
    assert all(SECRET.encode() not in f.read_bytes() for f in data.rglob("*") if f.is_file())
    code, out, _ = run("audit", "--json", "--data-dir", str(data))
    (entry,) = json.loads(out)["audit"]
    assert (entry["who"], entry["action"], entry["target"]) == ("cli", "data.rotate", newest.key_id)
    assert entry["detail"]["user"] == getpass.getuser() and entry["detail"]["resealed"] == 2


def test_rotate_data_wants_a_usable_key(tmp_path: Path) -> None:
    data = ["--data-dir", str(tmp_path / "data")]
    code, _, said = run("keys", "rotate-data", *data)
    assert code == 1 and "no data key is configured" in said
    path = tmp_path / "data.key"
    run("keys", "data-key", "--file", str(path))
    os.chmod(path, 0o644)
    env = {"SKILLSTATE_DATA_KEY_FILE": str(path)}
    code, _, said = run("keys", "rotate-data", *data, env=env)
    assert code == 1 and "may be read by others" in said


def test_rotate_data_on_postgresql(postgres_url: str, tmp_path: Path) -> None:
    async def empty() -> None:
        async with postgres.database():
            pass

    asyncio.run(empty())
    path = tmp_path / "data.key"
    run("keys", "data-key", "--file", str(path))
    env = {"SKILLSTATE_DATA_KEY_FILE": str(path)}
    code, out, said = run("keys", "rotate-data", "--store", postgres_url, env=env)
    assert code == 0, said
    assert "0 records sealed again" in out
    code, out, _ = run("audit", "--json", "--store", postgres_url)
    assert [e["action"] for e in json.loads(out)["audit"]] == ["data.rotate"]


def test_the_gateway_will_not_start_on_a_key_file_others_may_read(tmp_path: Path) -> None:
    path = tmp_path / "data.key"
    run("keys", "data-key", "--file", str(path))
    os.chmod(path, 0o604)
    env = {"SKILLSTATE_DATA_KEY_FILE": str(path)}
    umask = os.umask(0o022)  # serve sets this process's (the test worker's) umask: put back
    try:
        code, _, said = run("--data-dir", str(tmp_path / "data"), env=env)
    finally:
        os.umask(umask)
    assert code == 1 and "may be read by others (mode 0604)" in said
