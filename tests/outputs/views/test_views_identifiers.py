"""What counts as an identifier, and the sidecar of those a view's body lacks."""

from __future__ import annotations

import pytest
from views_corpus import read

from skillstate.outputs.views import identifiers, view_of

SAMPLE = (
    "error[E0425]: cannot find value\n --> src/main.rs:12:5 see "
    "https://doc.rust-lang.org/error_codes/E0425.html. commit 3f2a9c1d, tests/test_x.py::test_add "
    "FAILED ../lib/util.js status 404 HTTP/1.1 503 v1.2.3 ENOENT TS2345 ERR_STREAM_CLOSED "
    "550e8400-e29b-41d4-a716-446655440000 sha256:" + "ab" * 32 + " package.json"
)


def test_finds_each_kind_in_order_of_first_appearance() -> None:
    assert identifiers.find(SAMPLE) == [
        "E0425",
        "src/main.rs",
        "src/main.rs:12:5",
        "https://doc.rust-lang.org/error_codes/E0425.html",
        "3f2a9c1d",
        "tests/test_x.py",
        "tests/test_x.py::test_add",
        "../lib/util.js",
        "status 404",
        "HTTP/1.1 503",
        "v1.2.3",
        "ENOENT",
        "TS2345",
        "ERR_STREAM_CLOSED",
        "550e8400-e29b-41d4-a716-446655440000",
        "sha256:" + "ab" * 32,
        "package.json",
    ]


@pytest.mark.parametrize(
    "english",
    [
        "The quick brown fox and/or the lazy dog, e.g. at 12:30:45 on 2024/01/02.",
        "deadbeef facade cafebabe 1234567 are not hashes without both a digit and a letter",
        "version 1.2 and 3.14 are floats; the status was fine; HTTP is a protocol",
        "A sentence. Another one! Yes? km/h, TODO: nothing here.",
    ],
)
def test_english_is_not_an_identifier(english: str) -> None:
    assert identifiers.find(english) == []


def test_each_identifier_is_listed_once() -> None:
    assert identifiers.find("a/b/c.py a/b/c.py 3f2a9c1d 3f2a9c1d") == ["a/b/c.py", "3f2a9c1d"]


def test_sidecar_lists_what_the_body_lacks_paths_before_line_references() -> None:
    found = ["src/a.py", "src/a.py:3", "src/b.py", "v1.0.0", "src/b.py:9:1"]
    expected = ("src/b.py", "v1.0.0", "src/a.py:3", "src/b.py:9:1")
    assert identifiers.sidecar(found, "see src/a.py") == expected


def test_sidecar_is_capped() -> None:
    many = [f"src/m/file_{n}.py" for n in range(1000)]
    kept = identifiers.sidecar(many, "")
    assert len(kept) <= identifiers.MAX_ENTRIES
    assert sum(len(k) + 2 for k in kept) <= identifiers.MAX_CHARS
    assert kept == tuple(many[: len(kept)])


def test_long_tokens_are_data_not_identifiers() -> None:
    assert identifiers.find("x/" * 500 + "a.py") == []


def test_view_sidecars_hold_the_originals_ids_the_body_lacks() -> None:
    made = view_of(read("api_records.json"))
    assert made is not None
    text = read("api_records.json")
    # record 5's id and commit appear only in the original (the sidecar's cap is reached
    # some 50 records on)
    at = text.index('"index": 5,')
    record = text[at - 60 : at + 400]
    rec_id = record.split('"id": "')[1].split('"')[0]
    commit = record.split('"commit": "')[1].split('"')[0]
    assert rec_id not in made.body and rec_id in made.identifiers
    assert commit not in made.body and commit in made.identifiers
    assert "https://git.example.com/team/svc-2" in made.identifiers
    assert all(ident not in made.body for ident in made.identifiers)


def test_build_log_sidecar_holds_the_cut_warning_locations() -> None:
    made = view_of(read("cargo_build.log"))
    assert made is not None
    missing = [f"src/engine/step_{n}.rs" for n in range(90)]
    missing = [path for path in missing if path not in made.body]
    assert missing  # the budget does cut some warnings
    assert all(path in made.identifiers for path in missing)


def test_pytest_sidecar_holds_the_folded_test_files() -> None:
    made = view_of(read("pytest_failure.txt"))
    assert made is not None
    assert "tests/state/test_merge_01.py" in made.identifiers
    assert "tests/state/test_merge_37.py" not in made.identifiers  # the body shows it
