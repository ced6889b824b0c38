"""Hostile or odd input completes quickly and honours the budget."""

from __future__ import annotations

import time

import pytest
from views_corpus import read

from skillstate.outputs.views import render, view_of

BUDGET = 6000
GUARD_S = 5.0
"""Far above what a linear scan takes (under a second for the largest input here, on a loaded
machine): what it catches is a scan gone quadratic or a regex backtracking, not speed."""


def timed(text: str, budget: int = BUDGET) -> float:
    start = time.perf_counter()
    made = view_of(text, budget_chars=budget)
    took = time.perf_counter() - start
    if made is not None:
        assert len(made.body) <= budget
        assert render(made, "ar_x").count("\n") >= 1
    return took


def test_one_200_kb_line_is_cut_with_the_cut_counted() -> None:
    made = view_of(read("single_line.txt"))
    assert made is not None and made.kind == "text"
    assert made.original_lines == 1
    assert "chars …" in made.body
    assert len(made.body) < 1000


def test_ten_thousand_identical_lines_fold_into_one() -> None:
    made = view_of(read("identical_lines.log"))
    assert made is not None
    assert made.body == "INFO heartbeat ok (… repeated 10,000 times)"


def test_near_identical_lines_fold_with_their_digits_varying() -> None:
    text = "".join(
        f"2026-05-12T10:{n // 60 % 60:02d}:{n % 60:02d} INFO tick {n}\n" for n in range(3000)
    )
    made = view_of(text)
    assert made is not None
    assert "(… repeated 3,000 times, digits varying)" in made.body


def test_binary_looking_text_shows_controls_as_replacement_characters() -> None:
    made = view_of(read("binaryish.txt"))
    assert made is not None
    assert "\x00" not in made.body and "\x1b" not in made.body
    assert len(made.body) <= BUDGET


@pytest.mark.parametrize(
    "text",
    [
        "a" * 300_000,  # one token, too long to be an identifier
        "/" * 300_000,
        "\n" * 300_000,
        "\r" * 100_000 + "x",
        "\x1b[" * 100_000,  # unterminated escape sequences
        "\x1b]" + "x" * 200_000,  # an OSC never closed
        "[" * 200_000,  # looks like JSON, is not
        "{" * 100 + "}" * 100 + " " * 20_000,  # JSON nested deeper than jsonio allows? no: 100
        "[" * 200 + "]" * 200 + " " * 20_000,  # deeper than jsonio allows
        "@@ -1 +1 @@\n" * 20_000,  # hunk headers without files
        "diff --git a/x b/x\n@@ -1,99999 +1,99999 @@\n" + "-x\n" * 20_000,
        "error " * 50_000,
        "x:1:2 " * 50_000,
        "E   " * 50_000,
        "● \n" * 30_000,
        "# h\n" * 30_000,
        ("é" * 50 + "\n") * 2_000,
        "\ud800" * 20_000,  # lone surrogates, as a decoder with surrogateescape would give
    ],
)
def test_hostile_text_completes_within_budget(text: str) -> None:
    assert timed(text) < GUARD_S


def test_json_with_huge_array_and_many_keys() -> None:
    doc = "[" + ",".join(f'{{"k{n}": {n}, "status": 200}}' for n in range(30_000)) + "]"
    assert timed(doc) < GUARD_S
    wide = "{" + ",".join(f'"key_{n}": "{n}"' for n in range(20_000)) + "}"
    made = view_of(wide)
    assert made is not None and made.kind == "json"
    assert "more keys" in made.body


def test_small_budgets_hold() -> None:
    for name in ("pytest_failure.txt", "api_records.json", "changes.diff", "guide.md"):
        for budget in (400, 777, 2000):
            made = view_of(read(name), budget_chars=budget)
            assert made is not None, (name, budget)
            assert len(made.body) <= budget, (name, budget)
