"""The header line, the public surface and when no view is made."""

from __future__ import annotations

from views_corpus import read

import skillstate.outputs.views
from skillstate.outputs.views import View, render, view_of


def test_public_surface() -> None:
    assert sorted(skillstate.outputs.views.__all__) == ["MIN_BUDGET", "View", "render", "view_of"]


def test_render_has_one_header_line_then_the_body_then_the_sidecar() -> None:
    view = View("log", "line one\nline two", ("src/a.py", "3f2a9c1d"), 48213, 1204)
    assert render(view, "ar_7") == (
        "[skillstate view of a log: 48,213 chars, 1,204 lines; the exact output is archived "
        "as ar_7: recall it with ref ar_7, or with a query for matching lines]\n"
        "line one\nline two\n"
        "identifiers kept exactly: src/a.py, 3f2a9c1d"
    )


def test_render_without_a_sidecar_has_no_block() -> None:
    rendered = render(View("json", "shape:", (), 10, 1), "ar_1")
    assert rendered.endswith("]\nshape:")
    assert rendered.startswith("[skillstate view of a JSON document: 10 chars, 1 line;")


def test_short_text_has_no_view() -> None:
    assert view_of("") is None
    assert view_of("error: x\n" * 100) is None  # 900 chars, under twice the budget
    assert view_of("a" * 11_999) is None


def test_a_view_that_would_not_be_clearly_smaller_is_not_made() -> None:
    # every line different and holding an identifier: a view cannot say it in less
    text = "\n".join(f"src/pkg_{n}/mod_{n}.py" for n in range(1200))
    made = view_of(text, budget_chars=6000)
    assert made is None or len(made.body) + len(", ".join(made.identifiers)) <= len(text) / 2


def test_budget_below_the_minimum_is_raised_to_it() -> None:
    made = view_of(read("pytest_failure.txt"), budget_chars=10)
    assert made is not None
    assert len(made.body) <= skillstate.outputs.views.MIN_BUDGET


def test_smaller_budget_gives_a_smaller_view_that_keeps_the_failure() -> None:
    made = view_of(read("pytest_failure.txt"), budget_chars=1000)
    assert made is not None
    assert len(made.body) <= 1000
    assert "E       AssertionError" in made.body
