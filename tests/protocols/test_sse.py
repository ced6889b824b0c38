"""``protocols.sse.SSEDecoder`` reads the events a stream holds whatever its line endings and
however its bytes are cut: LF alone (the fast path), CRLF and CR, a CRLF split between two
chunks, comments, and a data line with or without the space after its colon."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from skillstate.protocols.sse import SSEDecoder, SSEEvent

_TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=12)
_NAME = st.text(st.characters(min_codepoint=97, max_codepoint=122), min_size=1, max_size=6)


@st.composite
def _streams(draw: st.DrawFn) -> tuple[bytes, list[SSEEvent]]:
    """A stream's bytes and the events it holds."""
    ending = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    mixed = draw(st.booleans())
    lines: list[str] = []
    events: list[SSEEvent] = []
    last_id: str | None = None
    for _ in range(draw(st.integers(0, 5))):
        data = draw(st.lists(_TEXT, min_size=1, max_size=3))
        name = draw(st.none() | _NAME)
        if draw(st.booleans()):
            last_id = draw(_NAME)
            lines.append(f"id: {last_id}")
        if draw(st.booleans()):
            lines.append(f": {draw(_TEXT)}")  # a comment
        if name is not None:
            lines.append(f"event: {name}")
        for each in data:
            space = " " if draw(st.booleans()) or each.startswith(" ") else ""
            lines.append(f"data:{space}{each}")
        lines.append("")
        events.append(SSEEvent("\n".join(data), name, last_id))
    text, before = "", ""
    for line in lines:
        end = draw(st.sampled_from(["\n", "\r\n", "\r"])) if mixed else ending
        if before == "\r" and not line and end == "\n":
            end = "\r\n"  # a CR then a bare LF is one line's CRLF, not an empty line
        text += line + end
        before = end
    return text.encode(), events


@given(_streams(), st.lists(st.integers(1, 40), max_size=30))
def test_every_cut_of_a_stream_reads_as_its_events(
    stream: tuple[bytes, list[SSEEvent]], cuts: list[int]
) -> None:
    raw, events = stream
    decoder = SSEDecoder()
    got: list[SSEEvent] = []
    at = 0
    for size in cuts:
        got += decoder.feed(raw[at : at + size])
        at += size
    got += decoder.feed(raw[at:])
    got += decoder.close()
    assert got == events


def test_a_crlf_split_between_chunks_ends_one_line() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\n\r\ndata: b\n\n") == [SSEEvent("a"), SSEEvent("b")]


def test_a_line_not_yet_whole_waits_for_its_end() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: par") == []
    assert decoder.feed(b"t\n") == []
    assert decoder.feed(b"\n") == [SSEEvent("part")]
