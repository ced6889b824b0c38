"""skillstate archive: stats, list, get, search and cleanup over a real data directory,
populated the way the gateway populates it (``open_stores`` and ``Archive.keep``/``put``)."""

from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from skillstate.archive import Archive, canonical_span, encode_message, ref_for, span_text
from skillstate.cli.main import cli
from skillstate.conversation import Message, Text, ToolCall, ToolResult
from skillstate.storage import open_stores

DAY = 24 * 3600.0

RECENT = [
    Message("user", [Text("Find where the retry limit is set.")]),
    Message("assistant", [ToolCall("call_1", "grep", '{"pattern": "RETRY_LIMIT"}')]),
    Message(
        "tool",
        [ToolResult("call_1", [Text("src/net.py:41: RETRY_LIMIT = 7\nsrc/net.py:90: retry()")])],
    ),
]
OUTPUT = [Message("tool", [ToolResult("call_9", [Text("line one\nline two\nlimit reached")])])]
OLD = [Message("user", [Text("an old request about the retry limit")])]


@dataclass(frozen=True)
class Kept:
    data_dir: Path
    recent: str
    output: str
    old: str


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in [name for name in os.environ if name.startswith("SKILLSTATE_")]:
        monkeypatch.delenv(name)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))


async def _populate(data_dir: Path) -> Kept:
    now = time.time()
    clock = [now - 3600]
    stores = await open_stores(data_dir, clock=lambda: clock[0])
    try:
        archive = Archive(stores.archive, clock=lambda: clock[0])
        recent = await archive.keep("s1", RECENT, first_turn=2, last_turn=4, summary="grep")
        clock[0] = now - 60
        data = canonical_span(OUTPUT)
        output = await archive.put("s2", ref_for(data), data, "a tool output")
        # Unused for 10 days but not swept yet (the gateway sweeps as it writes).
        clock[0] = now - 10 * DAY
        old = await archive.keep("s-old", OLD, first_turn=0, last_turn=0, summary="old")
    finally:
        await stores.close()
    return Kept(data_dir, recent.ref, output.ref, old.ref)


@pytest.fixture
def kept(tmp_path: Path) -> Kept:
    return asyncio.run(_populate(tmp_path / "data"))


def run(kept: Kept | Path, *args: str, env: dict[str, str] | None = None) -> Result:
    data_dir = kept if isinstance(kept, Path) else kept.data_dir
    return CliRunner().invoke(cli, ["archive", *args, "--data-dir", str(data_dir)], env=env)


def blob_files(data_dir: Path) -> dict[str, int]:
    return {
        path.name.removesuffix(".blob"): path.stat().st_size
        for path in (data_dir / "archive").rglob("*.blob")
    }


def test_stats_counts_entries_refs_and_bytes(kept: Kept) -> None:
    result = run(kept, "stats", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["entries"] == 3 and doc["refs"] == 3
    assert doc["expired_refs"] == 1  # the old span, unused for 10 days
    assert doc["bytes_on_disk"] == sum(blob_files(kept.data_dir).values()) > 0
    assert doc["max_bytes"] == 500 * 1024 * 1024
    assert doc["ttl_days"] == 7.0
    assert doc["newest"] - doc["oldest"] == pytest.approx(10 * DAY - 60, abs=1)
    sizes = [len(canonical_span(span)) for span in (RECENT, OUTPUT, OLD)]
    assert doc["span_bytes"] == sum(sizes)

    text = run(kept, "stats", env={"SKILLSTATE_ARCHIVE_MAX_MB": "2"})
    assert text.exit_code == 0, text.output
    lines = dict(line.split(None, 1) for line in text.stdout.splitlines())
    assert lines["entries"] == "3"
    assert lines["refs"] == "3 (1 expired or evicted)"
    assert lines["on"].startswith("disk ") and lines["on"].endswith("of 2.0 MiB (0.0%)")
    assert lines["ttl"] == "7 days after the last use"


def test_list_shows_each_entry_newest_first_and_the_expired_one(kept: Kept) -> None:
    result = run(kept, "list")
    assert result.exit_code == 0, result.output
    header, *rows = [line.split() for line in result.stdout.splitlines()]
    assert header == ["REF", "SESSION", "TURNS", "SIZE", "AGE"]
    assert [row[:3] for row in rows] == [
        [kept.output, "s2", "output"],
        [kept.recent, "s1", "2-4"],
        [kept.old, "s-old", "0"],
    ]
    assert [row[-1] for row in rows] == ["1m", "1h", "expired"]
    assert rows[1][3:5] == [str(len(canonical_span(RECENT))), "B"]

    only = run(kept, "list", "--session", "s1", "--json")
    assert only.exit_code == 0, only.output
    (entry,) = json.loads(only.stdout)["entries"]
    assert (entry["ref"], entry["first_turn"], entry["last_turn"]) == (kept.recent, 2, 4)
    assert entry["expired"] is False and entry["summary"] == "grep"

    limited = run(kept, "list", "--limit", "1")
    assert len(limited.stdout.splitlines()) == 2
    assert (
        run(kept, "list", "--session", "nobody").stdout == "no archive entries for session nobody\n"
    )
    assert run(kept, "list", "--limit", "0").exit_code == 2


def test_get_prints_the_exact_span(kept: Kept) -> None:
    result = run(kept, "get", kept.recent)
    assert result.exit_code == 0, result.output
    assert result.stdout == span_text(RECENT) + "\n"
    as_json = run(kept, "get", kept.output, "--json")
    assert as_json.exit_code == 0, as_json.output
    doc = json.loads(as_json.stdout)
    assert doc == {"ref": kept.output, "messages": [encode_message(m) for m in OUTPUT]}


def test_get_an_unknown_or_expired_ref_exits_1(kept: Kept) -> None:
    unknown = "ar_" + "0" * 24
    result = run(kept, "get", unknown)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == f"Error: no archived span {unknown}: it is unknown, or it expired\n"
    expired = run(kept, "get", kept.old)
    assert expired.exit_code == 1 and "it expired" in expired.stderr
    bad = run(kept, "get", "not-a-ref")
    assert bad.exit_code == 1 and "is not an archive ref" in bad.stderr


def test_search_prints_matching_lines_with_context(kept: Kept) -> None:
    result = run(kept, "search", "RETRY_LIMIT = 7", "--context", "1")
    assert result.exit_code == 0, result.output
    assert result.stdout.split("\n\n") == [
        "\n".join(
            [
                f"== {kept.recent} (session s1)",
                '1 of 1 matching lines for "RETRY_LIMIT = 7":',
                " 9- [tool result id=call_1]",
                "10: src/net.py:41: RETRY_LIMIT = 7",
                "11- src/net.py:90: retry()",
            ]
        ),
        "[1 expired span not searched]\n",  # the old span, which mentions the retry limit too
    ]

    words = run(kept, "search", "limit", "--context", "0")  # the spans oldest first
    assert words.exit_code == 0, words.output
    assert words.stdout.split("\n\n")[:2] == [
        "\n".join(
            [
                f"== {kept.recent} (session s1)",
                '3 of 3 matching lines for "limit":',
                " 2: Find where the retry limit is set.",
                "--",
                ' 6: {"pattern": "RETRY_LIMIT"}',
                "--",
                "10: src/net.py:41: RETRY_LIMIT = 7",
            ]
        ),
        "\n".join(
            [
                f"== {kept.output} (session s2)",
                '1 of 1 matching lines for "limit":',
                "5: limit reached",
            ]
        ),
    ]

    elsewhere = run(kept, "search", "retry", "--session", "s2")
    assert elsewhere.exit_code == 1
    assert elsewhere.stdout == ""
    assert elsewhere.stderr == 'no line matches "retry" in 1 archived span\n'
    assert run(kept, "search", " ").exit_code == 2


def test_cleanup_removes_the_expired_blob_and_its_entry(kept: Kept) -> None:
    assert kept.old in blob_files(kept.data_dir)
    result = run(kept, "cleanup")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"expired blob {kept.old}",
        f"dropped entries of {kept.old}",
        "1 expired blob deleted, 1 index entry dropped",
    ]
    assert set(blob_files(kept.data_dir)) == {kept.recent, kept.output}
    listed = run(kept, "list", "--json")
    assert [e["ref"] for e in json.loads(listed.stdout)["entries"]] == [kept.output, kept.recent]
    again = run(kept, "cleanup", "--json")
    assert json.loads(again.stdout) == {"expired_blobs": [], "dropped_refs": [], "dropped_rows": 0}


def test_a_data_directory_without_an_archive(tmp_path: Path) -> None:
    empty = tmp_path / "nothing"
    stats = run(empty, "stats")
    assert stats.exit_code == 0 and stats.stdout.startswith(f"no archive entries in {empty}\n")
    assert run(empty, "list").stdout == "no archive entries\n"
    assert run(empty, "get", "ar_" + "1" * 24).exit_code == 1
    assert run(empty, "search", "x").exit_code == 1
    assert not empty.exists()  # looking created nothing


def test_a_bad_archive_setting_exits_2(kept: Kept) -> None:
    result = run(kept, "stats", env={"SKILLSTATE_ARCHIVE_TTL_DAYS": "0"})
    assert result.exit_code == 2
    assert "archive_ttl_days" in result.stderr and "greater than 0" in result.stderr


def test_help_explains_each_command() -> None:
    result = CliRunner().invoke(cli, ["archive", "--help"])
    assert result.exit_code == 0
    for name in ("stats", "list", "get", "search", "cleanup"):
        assert f"  {name} " in result.stdout
    assert "archive_ttl_days" in result.stdout
    get_help = CliRunner().invoke(cli, ["archive", "get", "--help"])
    assert "Exit 1 when REF is unknown or expired" in get_help.stdout
