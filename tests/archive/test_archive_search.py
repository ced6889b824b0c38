"""Searching an archived span's text: what matches, the context, merged excerpts, the bound on
the answer, the "no match" answer; and reading a text a page at a time."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skillstate.archive import Found, page, search


def numbered(count: int, special: dict[int, str] | None = None) -> str:
    """Lines ``line 1``... with some replaced (1-based)."""
    lines = [f"line {n}" for n in range(1, count + 1)]
    for number, text in (special or {}).items():
        lines[number - 1] = text
    return "\n".join(lines)


def matched(found: Found) -> list[int]:
    return sorted(n for e in found.excerpts for n in e.matched)


def test_case_insensitive_phrase_and_all_words_match() -> None:
    text = numbered(
        30,
        {
            3: "Error: Permission denied",
            10: "denied by policy: permission",
            20: "permission granted",
            25: "PERMISSION DENIED again",
        },
    )
    found = search(text, "permission denied", context=0)
    assert matched(found) == [3, 10, 25]
    assert found.matches == 3


def test_context_lines_around_each_match() -> None:
    found = search(numbered(20, {10: "needle"}), "needle", context=2)
    [excerpt] = found.excerpts
    assert excerpt.first == 8
    assert excerpt.lines == ("line 8", "line 9", "needle", "line 11", "line 12")
    assert excerpt.matched == frozenset({10})


def test_context_is_clipped_at_the_edges() -> None:
    found = search(numbered(5, {1: "needle", 5: "needle"}), "needle", context=3)
    assert [(e.first, len(e.lines)) for e in found.excerpts] == [(1, 5)]


def test_overlapping_and_adjacent_windows_merge() -> None:
    text = numbered(40, {5: "needle", 8: "needle", 13: "needle", 30: "needle"})
    found = search(text, "needle", context=2)
    # 3-7 and 6-10 overlap; 11-15 touches 10; 28-32 stands apart.
    assert [(e.first, e.first + len(e.lines) - 1) for e in found.excerpts] == [(3, 15), (28, 32)]
    rendered = found.render()
    assert rendered.count("\n--\n") == 1
    assert " 8: needle" in rendered
    assert " 9- line 9" in rendered


def test_no_match_is_a_clear_answer() -> None:
    found = search(numbered(12), "kubernetes")
    assert found.matches == 0
    assert found.excerpts == ()
    assert found.render().startswith('No line matches "kubernetes" (12 lines searched')


def test_an_empty_query_is_refused() -> None:
    with pytest.raises(ValueError, match="empty query"):
        search("text", "   ")


def test_the_answer_is_bounded_and_says_what_it_left_out() -> None:
    text = "\n".join(f"match number {n} " + "x" * 60 for n in range(2000))
    found = search(text, "match", context=1, limit=2000)
    rendered = found.render()
    assert len(rendered) <= 2000
    assert found.matches == 2000
    assert 0 < found.shown < 2000
    assert f"[{2000 - found.shown} more matching lines not shown" in rendered


def test_whole_phrase_lines_are_shown_before_scattered_words() -> None:
    scattered = {n: f"denied {n} then permission" for n in range(1, 200)}
    text = numbered(400, {**scattered, 350: "permission denied here"})
    found = search(text, "permission denied", context=0, limit=1000)
    assert 350 in matched(found)
    assert found.shown < found.matches


def test_long_lines_are_clipped_around_the_match() -> None:
    line = "a" * 5000 + " TARGET " + "b" * 5000
    found = search(line, "target", width=100)
    [excerpt] = found.excerpts
    [shown] = excerpt.lines
    assert "TARGET" in shown
    assert shown.startswith("…") and shown.endswith("…")
    assert len(shown) <= 102


def test_one_line_is_shown_even_when_its_context_does_not_fit() -> None:
    text = "\n".join(["c" * 300] * 5 + ["hit"] + ["c" * 300] * 5)
    found = search(text, "hit", context=5, limit=700)
    assert found.shown == 1
    assert len(found.render()) <= 700


@given(
    st.lists(st.sampled_from(["foo bar", "bar", "Foo", "baz foo", "", "x" * 500]), max_size=60),
    st.sampled_from(["foo", "bar foo", "FOO BAR"]),
    st.integers(min_value=0, max_value=4),
    st.integers(min_value=640, max_value=3000),
)
def test_any_answer_stays_within_its_limit(
    lines: list[str], query: str, context: int, limit: int
) -> None:
    found = search("\n".join(lines), query, context=context, limit=limit)
    assert len(found.render()) <= limit
    words = query.casefold().split()
    expected = [i + 1 for i, line in enumerate(lines) if all(w in line.casefold() for w in words)]
    assert found.matches == len(expected)
    assert set(matched(found)) <= set(expected)
    if expected:
        assert found.shown >= 1


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError):
        search("x", "x", limit=10)
    with pytest.raises(ValueError):
        search("x", "x", context=-1)


def test_a_short_text_is_one_page_as_it_is() -> None:
    assert page("one\ntwo\n") == "one\ntwo\n"
    assert page("") == ""


def test_pages_cut_at_a_line_break_and_say_how_to_read_on() -> None:
    text = "\n".join(f"row {n:04}" for n in range(1000))
    first = page(text, 0, 100)
    body, note = first.rsplit("\n", 1)
    assert body.endswith("row 0010")  # 9 characters a row: 11 rows fit in 100
    end = len(body) + 1
    assert note == f"[characters 0-{end} of {len(text)}; read on with offset={end}]"
    second = page(text, end, 100)
    assert second.startswith("row 0011\n")


def test_paging_through_returns_the_whole_text() -> None:
    text = "\n".join(f"row {n} " + "y" * (n % 37) for n in range(400))
    offset, pieces = 0, []
    while True:
        answer = page(text, offset, 500)
        body, _, note = answer.rpartition("\n[characters ")
        pieces.append(body + ("\n" if "read on" in note else ""))
        if "read on" not in note:
            break
        offset = int(note.split("offset=")[1].rstrip("]"))
    assert "".join(pieces).rstrip("\n") == text


def test_a_page_past_the_end_says_so() -> None:
    assert page("abc", 10) == "[offset 10 is past the end: the text has 3 characters]"
    with pytest.raises(ValueError):
        page("abc", -1)


def test_one_huge_line_is_cut_by_characters() -> None:
    answer = page("z" * 1000, 0, 300)
    assert answer == "z" * 300 + "\n[characters 0-300 of 1000; read on with offset=300]"
