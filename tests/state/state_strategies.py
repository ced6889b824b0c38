"""Hypothesis strategies for Σ tests: JSON values over a small key alphabet, so that patches
and states share keys often enough to exercise merging rather than plain insertion."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

KEYS = st.sampled_from(["a", "b", "c", "plan", "x/y~z"])

SCALARS: st.SearchStrategy[Any] = (
    st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
)


def values(*, nulls: bool) -> st.SearchStrategy[Any]:
    """JSON values, with ``null`` anywhere when ``nulls``, nowhere otherwise."""
    leaf = SCALARS | st.none() if nulls else SCALARS

    def extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.lists(children, max_size=3) | st.dictionaries(KEYS, children, max_size=4)

    return st.recursive(leaf, extend, max_leaves=12)


def objects(*, nulls: bool) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(KEYS, values(nulls=nulls), max_size=5)
