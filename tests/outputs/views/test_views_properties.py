"""For any text: no exception, the body within budget, the header line first."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from skillstate.outputs.views import render, view_of

_PIECES = st.sampled_from(
    [
        "\n",
        "\r\n",
        "error: ",
        "E   assert ",
        "● ",
        "diff --git a/x.py b/x.py\n",
        "--- a/x.py\n+++ b/x.py\n",
        "@@ -1,3 +1,4 @@\n",
        "+added\n",
        "-removed\n",
        "# heading\n",
        "src/app.py:12:5 ",
        "3f2a9c1d ",
        "https://example.com/a?b=c ",
        '{"status": 500, "error": "x"}',
        "[1, 2, 3]",
        "\x1b[31m",
        "\x00",
    ]
)
TEXTS = st.one_of(
    st.text(min_size=0, max_size=3000),
    st.lists(st.one_of(_PIECES, st.text(max_size=40)), max_size=400).map("".join),
)


@settings(max_examples=150, deadline=None)
@given(text=TEXTS, budget=st.integers(min_value=0, max_value=1500))
def test_views_never_raise_and_honour_the_budget(text: str, budget: int) -> None:
    made = view_of(text, budget_chars=budget)
    if made is None:
        return
    assert len(made.body) <= max(budget, 400)
    assert made.original_chars == len(text)
    rendered = render(made, "ar_0f")
    header, _, _ = rendered.partition("\n")
    assert header.startswith("[skillstate view of ")
    assert header.endswith("recall it with ref ar_0f, or with a query for matching lines]")
    assert all(ident in text for ident in made.identifiers)
    assert view_of(text, budget_chars=budget) == made
