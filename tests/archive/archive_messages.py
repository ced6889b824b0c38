"""Hypothesis strategies for canonical messages with every part type, arbitrary JSON in
``extra``, ``hints`` and ``Opaque.data`` (big integers and non-ASCII text included), and cache
marks with and without a ``ttl``."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from skillstate.conversation import (
    ArchiveRef,
    CacheMark,
    Image,
    Message,
    Opaque,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    Wire,
)

texts = st.text(max_size=12)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts
)
json_values: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)
objects = st.dictionaries(texts, json_values, max_size=3)
marks = st.none() | st.builds(CacheMark, st.none() | texts)

text_parts = st.builds(Text, texts, cache=marks, extra=objects, hints=objects)
image_parts = st.builds(
    Image,
    url=st.none() | texts,
    data=st.none() | texts,
    media_type=st.none() | texts,
    detail=st.none() | texts,
    cache=marks,
    extra=objects,
    hints=objects,
)
opaque_parts = st.builds(Opaque, st.sampled_from(list(Wire)), objects, hints=objects)
#: What a tool result holds: text, images and items of one wire (a ``tool_reference``...).
result_items = text_parts | image_parts | opaque_parts
parts = st.one_of(
    text_parts,
    image_parts,
    st.builds(
        ToolCall,
        texts,
        texts,
        texts,
        kind=st.sampled_from(["function", "custom"]),
        cache=marks,
        extra=objects,
        hints=objects,
    ),
    st.builds(
        ToolResult,
        texts,
        st.lists(result_items, max_size=3),
        is_error=st.booleans(),
        kind=st.sampled_from(["function", "custom"]),
        cache=marks,
        extra=objects,
        hints=objects,
    ),
    st.builds(
        Reasoning,
        texts,
        signature=st.none() | texts,
        redacted=st.booleans(),
        extra=objects,
        hints=objects,
    ),
    opaque_parts,
    st.builds(ArchiveRef, texts, texts),
)
messages = st.builds(
    Message,
    st.sampled_from(["system", "developer", "user", "assistant", "tool"]),
    st.lists(parts, max_size=4),
    extra=objects,
    hints=objects,
)
spans = st.lists(messages, max_size=4)
