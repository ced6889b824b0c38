"""Kind detection at its edges, and the measuring script."""

from __future__ import annotations

from views_corpus import FOLDER

from skillstate.outputs.views import measure, view_of


def test_a_diff_without_git_headers_is_a_diff() -> None:
    hunks = "".join(f"@@ -{n},2 +{n},2 @@\n-old {n}\n+new {n}\n ctx\n" for n in range(1, 900))
    text = (
        "--- a/lib/one.c\n+++ b/lib/one.c\n" + hunks + "--- a/lib/two.c\n+++ b/lib/two.c\n" + hunks
    )
    made = view_of(text)
    assert made is not None and made.kind == "diff"
    assert "2 files changed, +1,798 -1,798:" in made.body
    assert "  lib/one.c (+899 -899)" in made.body and "  lib/two.c (+899 -899)" in made.body


def test_removed_lines_that_look_like_headers_stay_in_their_hunk() -> None:
    body = "".join(f"--- not a header {n}\n+++ nor this {n}\n" for n in range(2000))
    text = f"diff --git a/x.txt b/x.txt\n--- a/x.txt\n+++ b/x.txt\n@@ -1,2000 +1,2000 @@\n{body}"
    made = view_of(text)
    assert made is not None and made.kind == "diff"
    assert "1 files changed, +2,000 -2,000:" in made.body


def test_json_that_does_not_parse_is_read_as_lines() -> None:
    text = '{"a": 1,\n' + "error: truncated body\n" * 2000
    made = view_of(text)
    assert made is not None and made.kind == "log"


def test_prose_mentioning_errors_with_headings_is_text() -> None:
    section = "## Errors\n" + "An error here is reported to the caller, never raised.\n" * 30
    made = view_of(section * 12)
    assert made is not None and made.kind == "text"


def test_measure_rows_cover_the_corpus() -> None:
    rows = measure.rows(FOLDER)
    assert len(rows) == 13
    for _name, kind, chars, body, shown, tokens, shown_tokens in rows:
        assert kind in {"json", "diff", "log", "text"}
        assert body < chars and shown < chars and shown_tokens < tokens


def test_log_line_severity() -> None:
    from skillstate.outputs.views.log_view import ERROR, WARNING, severity

    for line in [
        "error[E0425]: cannot find value",
        "KeyError: 'a'",
        "Traceback (most recent call last):",
        "thread 'main' panicked at src/main.rs:2:5",
        "E       assert 1 == 2",
        ">       assert merge(left, patch) == {}",
        "    > 4 |   expect(sum(1, 2)).toBe(3);",
        "  ● sum › adds",
        "_______ test_merge _______",
        "FAILED tests/a.py::test_b - boom",
    ]:
        assert severity(line) == ERROR, line
    assert severity("warning: unused variable: `x`") == WARNING
    for line in ["> npm run build", "Compiling engine v0.1.0", "terror", "____", "all good"]:
        assert severity(line) == 0, line
