"""The shell lane's reducers over real command outputs (tests/fixtures/shell/outputs, made by
make_fixtures.py on a generated repository): each reduction saves tokens, the failing tests
and their assertion lines survive, and the archive gives back the exact output."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from skillstate.archive import Archive
from skillstate.economics.tokenizer import count_tokens
from skillstate.integrations.shell import reduce
from skillstate.integrations.shell.run import Outcome, exact, keep, shown
from skillstate.outputs.commands.listing import fold_entries, tree
from skillstate.outputs.commands.reducers import MIN_CHARS
from skillstate.outputs.commands.reducers import tests as runner_reduction
from skillstate.storage import MemoryArchiveStore

FOLDER = Path(__file__).parents[2] / "fixtures" / "shell" / "outputs"
INDEX: dict[str, dict[str, object]] = json.loads((FOLDER / "index.json").read_text())
REF = "ar_000000000000000000000000"


def _stdout(name: str) -> bytes:
    return (FOLDER / f"{name}.stdout").read_bytes()


def _stderr(name: str) -> bytes:
    path = FOLDER / f"{name}.stderr"
    return path.read_bytes() if path.exists() else b""


def test_the_fixture_set_is_real_and_small() -> None:
    assert {"git_diff", "git_log", "grep", "pytest_verbose", "cat", "find"} <= set(INDEX)
    total = sum(path.stat().st_size for path in FOLDER.iterdir())
    assert total < 1024 * 1024


@pytest.mark.parametrize("name", sorted(INDEX))
def test_every_fixture_is_reduced_with_a_saving_or_shown_unchanged(name: str) -> None:
    text = _stdout(name).decode()
    reduced = reduce(str(INDEX[name]["family"]), text)
    if reduced is None:
        return
    after = shown(reduced, REF, len(text)).decode()
    assert count_tokens(after) < count_tokens(text)
    assert after.startswith("[skillstate: output reduced on purpose")
    assert REF in after.splitlines()[0]


def test_big_outputs_are_reduced() -> None:
    for name in ("git_diff", "git_log", "grep", "pytest_verbose", "cat", "find_all"):
        text = _stdout(name).decode()
        reduced = reduce(str(INDEX[name]["family"]), text)
        assert reduced is not None, name
        assert count_tokens(reduced) < 0.6 * count_tokens(text), name


def test_small_outputs_are_shown_unchanged() -> None:
    for name in ("wc", "git_diff_stat", "git_show"):
        text = _stdout(name).decode()
        assert len(text) < MIN_CHARS
        assert reduce(str(INDEX[name]["family"]), text) is None


@pytest.mark.parametrize("name", ["pytest", "pytest_verbose"])
def test_failing_tests_and_their_assertions_survive(name: str) -> None:
    text = _stdout(name).decode()
    reduced = reduce("tests", text) or text
    failed = re.findall(r"^FAILED (\S+)", text, re.MULTILINE)
    assert failed
    for test in failed:
        assert test in reduced
        assert f"_ {test.rsplit('::', 1)[1]} _" in reduced
    for line in text.splitlines():
        if line.startswith("E   ") or "AssertionError" in line:
            assert line in reduced
    assert text.rstrip().splitlines()[-1] in reduced  # the counts


def test_a_failing_cargo_test_survives() -> None:
    text = _stdout("cargo_test").decode()
    reduced = reduce("tests", text) or ""
    for kept in ("test tests::case_41 ... FAILED", "left: 82", " right: 83", "test result: FAILED"):
        assert kept in text and kept in reduced
    assert "case_40 ... ok" not in reduced


def test_the_verbose_passes_are_gone() -> None:
    reduced = reduce("tests", _stdout("pytest_verbose").decode()) or ""
    assert " PASSED" not in reduced


@pytest.mark.parametrize("name", sorted(INDEX))
async def test_the_archive_gives_back_the_exact_output(name: str) -> None:
    archive = Archive(MemoryArchiveStore())
    argv = [str(word) for word in INDEX[name]["argv"]]  # type: ignore[attr-defined]
    outcome = Outcome(_stdout(name), _stderr(name), int(str(INDEX[name]["exit_code"])))
    ref = await keep(archive, argv, outcome)
    messages = await archive.span(ref)
    assert messages is not None
    assert exact(messages) == (argv, outcome)


async def test_bytes_that_are_not_utf8_come_back_exactly() -> None:
    archive = Archive(MemoryArchiveStore())
    outcome = Outcome(b"caf\xe9 \xff\xfe\n", b"\x80err", 3)
    ref = await keep(archive, ["cat", "x"], outcome)
    messages = await archive.span(ref)
    assert messages is not None and exact(messages)[1] == outcome


def test_other_runners_lose_their_passing_lines() -> None:
    cargo = "\n".join(
        ["running 300 tests"]
        + [f"test tests::case_{n} ... ok" for n in range(300)]
        + ["test tests::broken ... FAILED", "", "failures:", "", "---- tests::broken stdout ----"]
        + ["thread 'tests::broken' panicked at src/lib.rs:9:5:", "assertion failed: 1 == 2"]
        + ["", "test result: FAILED. 300 passed; 1 failed; 0 ignored"]
    )
    reduced = runner_reduction(cargo) or ""
    assert "case_1 " not in reduced
    for kept in ("tests::broken ... FAILED", "assertion failed: 1 == 2", "test result: FAILED"):
        assert kept in reduced
    go = "\n".join(
        [f"=== RUN   TestCase{n}\n--- PASS: TestCase{n} (0.00s)" for n in range(200)]
        + ["=== RUN   TestBroken", "    x_test.go:12: want 2, got 1", "--- FAIL: TestBroken"]
        + ["FAIL", "FAIL\texample.com/x\t0.01s"]
    )
    reduced = reduce("tests", go) or ""
    assert "TestCase7" not in reduced and "want 2, got 1" in reduced and "--- FAIL" in reduced


def test_a_long_git_status_run_is_folded_by_directory() -> None:
    run = [f"\tmodified:   src/m{n}.py" for n in range(30)] + ["\tmodified:   docs/a.md"]
    folded = fold_entries(run)
    assert len(folded) == 11
    assert folded[-1] == "\t… 21 more: src/ (20), docs/ (1)"


def test_tree_keeps_the_top_levels() -> None:
    lines = [".", "├── a", "│   ├── b", "│   │   └── deep", "│   │       └── deeper", "└── c"]
    assert tree(lines).splitlines() == [
        ".",
        "├── a",
        "│   ├── b",
        "        … 2 deeper entries",
        "└── c",
    ]
