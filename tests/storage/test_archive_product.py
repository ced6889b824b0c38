"""The archive as a product: its default bounds (7 days after the last use, 500 MiB), a read
that renews a span, eviction in least-recently-used order, the settings that bound it, and
what ``skillstate archive`` asks of the whole archive (entries, kept refs, cleanup)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from storage_support import Clock

from skillstate.archive import Archive, ref_for
from skillstate.config import ConfigError, load_settings
from skillstate.conversation import Message, Text
from skillstate.storage import BlobStore, StoreOptions, open_stores
from skillstate.storage.blobs import DEFAULT_MAX_BYTES, DEFAULT_TTL

DAY = 24 * 3600.0
MIB = 1024 * 1024


def key(n: int) -> str:
    return f"ar_{n:024x}"


def blob_path(root: Path, name: str) -> Path:
    return root / name[-2:] / f"{name}.blob"


def test_the_default_bounds_are_seven_days_and_500_mib() -> None:
    assert DEFAULT_TTL == 7 * DAY
    assert DEFAULT_MAX_BYTES == 500 * MIB
    store = BlobStore(Path("unused"))
    assert (store.ttl, store.max_bytes) == (7 * DAY, 500 * MIB)
    assert StoreOptions() == StoreOptions.of_archive(7, 500)
    assert StoreOptions.of_archive(0.5, 3) == StoreOptions(
        archive_max_bytes=3 * MIB, archive_ttl=DAY / 2
    )


async def test_a_read_renews_a_blob_under_the_default_ttl(tmp_path: Path) -> None:
    clock = Clock()
    store = BlobStore(tmp_path, clock=clock)
    await store.put(key(1), b"read now and then")
    await store.put(key(2), b"never read")
    for _ in range(3):  # 18 days in all, never 7 without a read
        clock.advance(6 * DAY)
        assert await store.get(key(1)) == b"read now and then"
    assert await store.get(key(2)) is None
    assert not blob_path(tmp_path, key(2)).exists()
    clock.advance(7 * DAY + 1)
    assert await store.get(key(1)) is None


async def test_a_read_renews_the_file_time_so_a_restart_keeps_it(tmp_path: Path) -> None:
    clock = Clock()
    first = BlobStore(tmp_path, ttl=7 * DAY, clock=clock)
    await first.put(key(1), b"x")
    clock.advance(6 * DAY)
    assert await first.get(key(1)) == b"x"
    assert blob_path(tmp_path, key(1)).stat().st_mtime == clock.now
    clock.advance(6 * DAY)
    assert await BlobStore(tmp_path, ttl=7 * DAY, clock=clock).get(key(1)) == b"x"


async def test_looking_is_not_a_use(tmp_path: Path) -> None:
    clock = Clock()
    store = BlobStore(tmp_path, ttl=7 * DAY, clock=clock)
    await store.put(key(1), b"x")
    clock.advance(6 * DAY)
    assert await store.kept([key(1), key(2)]) == {key(1)}
    assert await store.usage() > 0
    clock.advance(2 * DAY)
    assert await store.kept([key(1)]) == set()  # expired, though not yet swept
    assert await store.get(key(1)) is None


async def test_the_quota_evicts_in_least_recently_used_order(tmp_path: Path) -> None:
    clock = Clock()
    sample = os.urandom(1000)  # does not compress: each file is a little over 1000 bytes
    store = BlobStore(tmp_path, max_bytes=4500, clock=clock, codec="gzip")
    for n in range(4):
        await store.put(key(n), sample + bytes([n]))
        clock.advance(1)
    for n in (2, 0, 3, 1):  # use order now: 2, 0, 3, 1 (1 most recent)
        assert await store.get(key(n)) is not None
        clock.advance(1)
    evicted = []
    for n in range(4, 7):
        await store.put(key(n), sample + bytes([n]))
        clock.advance(1)
        evicted.append(
            sorted(set(map(key, range(n + 1))) - await store.kept(map(key, range(n + 1))))
        )
    assert evicted == [[key(2)], [key(0), key(2)], [key(0), key(2), key(3)]]
    assert await store.usage() <= 4500


async def test_expire_names_what_it_deleted(tmp_path: Path) -> None:
    clock = Clock()
    store = BlobStore(tmp_path, ttl=DAY, clock=clock)
    await store.put(key(2), b"b")
    await store.put(key(1), b"a")
    clock.advance(DAY / 2)
    await store.put(key(3), b"c")
    clock.advance(DAY * 0.75)
    assert await store.expire() == [key(1), key(2)]
    assert await store.expire() == []
    assert await store.kept([key(1), key(2), key(3)]) == {key(3)}


def span(text: str) -> list[Message]:
    return [Message("user", [Text(text)])]


async def test_the_disk_archive_lists_every_session_and_cleans_up(tmp_path: Path) -> None:
    clock = Clock()
    options = StoreOptions(archive_ttl=7 * DAY)
    stores = await open_stores(tmp_path, options=options, clock=clock)
    try:
        disk = stores.disk_archive
        assert disk is not None
        archive = Archive(stores.archive, clock=clock)
        old = await archive.keep("s1", span("old turns"), first_turn=0, last_turn=3)
        clock.advance(DAY)
        output = b'{"messages":[],"v":1}'
        kept = await archive.put("s2", ref_for(output), output, "a tool output")
        clock.advance(DAY)
        shared = await archive.keep("s2", span("old turns"), first_turn=5, last_turn=6)
        assert shared.ref == old.ref
        listed = await disk.all_entries()
        assert [(e.session, e.ref) for e in listed] == [
            ("s2", old.ref),
            ("s2", kept.ref),
            ("s1", old.ref),
        ]
        assert [e.session for e in await disk.all_entries("s1")] == ["s1"]
        assert len(await disk.all_entries(limit=2)) == 2
        assert await disk.kept({old.ref, kept.ref}) == {old.ref, kept.ref}

        clock.advance(6 * DAY + 1)  # kept.ref unused for over 7 days, old.ref for 6
        done = await disk.cleanup()
        assert done.expired_blobs == (kept.ref,)
        assert done.dropped_refs == (kept.ref,)
        assert done.dropped_rows == 1
        assert [e.ref for e in await disk.all_entries()] == [old.ref, old.ref]
        assert "expired from the archive" in await archive.recall(kept.ref)
        assert await archive.text(old.ref) == "## 1 user\nold turns"

        os.unlink(blob_path(tmp_path / "archive", old.ref))  # evicted behind the index's back
        done = await disk.cleanup()
        assert (done.expired_blobs, done.dropped_refs, done.dropped_rows) == ((), (old.ref,), 2)
        assert await disk.all_entries() == []
    finally:
        await stores.close()


@pytest.fixture
def clean_env(tmp_path: Path) -> dict[str, str]:
    return {"HOME": str(tmp_path)}


def test_archive_settings_default_to_seven_days_and_500_mb(clean_env: dict[str, str]) -> None:
    settings = load_settings(environ=clean_env)
    assert (settings.archive_ttl_days, settings.archive_max_mb) == (7.0, 500)
    assert settings.sources["archive_ttl_days"] == "default"


def test_archive_settings_from_the_environment_and_the_file(
    clean_env: dict[str, str], tmp_path: Path
) -> None:
    config = tmp_path / "skillstate.toml"
    config.write_text("archive_ttl_days = 1.5\narchive_max_mb = 64\n")
    settings = load_settings(environ=clean_env, config_path=str(config))
    assert (settings.archive_ttl_days, settings.archive_max_mb) == (1.5, 64)
    env = {**clean_env, "SKILLSTATE_ARCHIVE_TTL_DAYS": "30", "SKILLSTATE_ARCHIVE_MAX_MB": "2048"}
    settings = load_settings(environ=env, config_path=str(config))
    assert (settings.archive_ttl_days, settings.archive_max_mb) == (30.0, 2048)
    assert settings.sources["archive_max_mb"] == "environment SKILLSTATE_ARCHIVE_MAX_MB"


@pytest.mark.parametrize(
    ("variable", "text", "reason"),
    [
        ("SKILLSTATE_ARCHIVE_TTL_DAYS", "0", "greater than 0"),
        ("SKILLSTATE_ARCHIVE_TTL_DAYS", "-2", "greater than 0"),
        ("SKILLSTATE_ARCHIVE_TTL_DAYS", "a week", "not a number"),
        ("SKILLSTATE_ARCHIVE_MAX_MB", "0", "greater than 0"),
        ("SKILLSTATE_ARCHIVE_MAX_MB", "1.5", "not an integer"),
        ("SKILLSTATE_ARCHIVE_MAX_MB", "lots", "not an integer"),
    ],
)
def test_bad_archive_settings_are_refused_with_their_source(
    clean_env: dict[str, str], variable: str, text: str, reason: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(environ={**clean_env, variable: text})
    (problem,) = caught.value.problems
    assert variable in problem and reason in problem


def test_archive_settings_in_the_file_must_have_their_toml_type(
    clean_env: dict[str, str], tmp_path: Path
) -> None:
    config = tmp_path / "skillstate.toml"
    config.write_text('archive_max_mb = "500"\narchive_ttl_days = -1.0\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(environ=clean_env, config_path=str(config))
    problems = "\n".join(caught.value.problems)
    assert "archive_max_mb" in problems and "archive_ttl_days" in problems


async def test_the_quota_setting_bounds_a_running_gateways_archive(tmp_path: Path) -> None:
    """``archive_max_mb`` reaches the stores the gateway opens: past 1 MiB of spans, the one
    used least recently is gone (the default 500 MiB would keep all three)."""
    from skillstate.archive import canonical_span
    from skillstate.testing.gateway import gateway_for

    environ = {"SKILLSTATE_ARCHIVE_MAX_MB": "1"}
    async with gateway_for(environ=environ, settings={"data_dir": str(tmp_path)}) as gw:
        assert gw.context.engine is not None
        archive = gw.context.engine.archive
        refs = []
        for _ in range(3):  # random hex does not compress below half: ~600 KB on disk each
            text = os.urandom(600_000).hex()
            span = canonical_span([Message("user", [Text(text)])])
            refs.append(ref_for(span))
            await archive.put("s", refs[-1], span)
        kept = [await archive.span(ref) is not None for ref in refs]
    assert kept == [False, False, True]
