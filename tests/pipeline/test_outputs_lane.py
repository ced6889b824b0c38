"""The output compaction lane: a bulky tool output becomes a view and an archive ref, only
where the gateway answers ``recall``; the original is archived exactly, the view holds no
secret, the call stays paired with its result, and the same output gives the same bytes."""

from __future__ import annotations

from typing import Any

import pytest

from skillstate.archive import read_span, ref_for
from skillstate.conversation import Image, Message, Request, Text, ToolCall, ToolResult, Wire
from skillstate.pipeline.lane import LaneContext
from skillstate.pipeline.outputs_lane import OutputsLane, OutputsOptions
from skillstate.state.mode import Mode
from skillstate.state.tools import recall_tool

CONTEXT = LaneContext("s1", Wire.CHAT, Wire.CHAT, Mode.HYBRID)
KEY = "sk-" + "Q" * 40  # built from pieces: no key-shaped literal in the repository


def build_log(lines: int = 2_000) -> str:
    out = [f"[{n:05d}] INFO compiling module_{n % 37}.py in 0.{n % 9}s" for n in range(lines)]
    out[1234] = "[01234] ERROR src/app/payments.py:88: KeyError: 'ZEBRA-42-needle'"
    out[1500] = f"[01500] DEBUG export OPENAI_API_KEY={KEY}"
    return "\n".join(out)


def request(output: str, *, recall: bool = True, extra: list[Any] | None = None) -> Request:
    call = Message("assistant", [ToolCall("call_1", "shell", '{"command": "make"}')])
    content: list[Any] = [Text(output), *(extra or [])]
    result = Message("tool", [ToolResult("call_1", content)])
    return Request(
        model="m",
        messages=[Message("user", [Text("Build it.")]), call, result],
        tools=[recall_tool()] if recall else [],
        source=Wire.CHAT,
    )


async def test_a_bulky_output_becomes_a_view_and_its_original_is_archived_exactly() -> None:
    lane = OutputsLane()
    sent = request(build_log())
    outcome = await lane(sent, CONTEXT)
    result = outcome.request.messages[2].parts[0]
    assert isinstance(result, ToolResult) and result.call_id == "call_1"  # still paired
    view = result.content[0]
    assert isinstance(view, Text) and view.text.startswith("[skillstate view of a log")
    assert len(view.text) < len(build_log()) // 4
    assert "KeyError" in view.text  # the error line is in the view
    (write,) = outcome.writes
    assert write.ref in view.text and ref_for(write.data) == write.ref
    assert read_span(write.data) == [sent.messages[2]]  # exactly what the client sent
    assert outcome.summary.startswith("-") and outcome.report["outputs"] == 1
    assert [m.role for m in outcome.request.messages] == ["user", "assistant", "tool"]


async def test_no_secret_reaches_the_view_and_the_archive_keeps_it() -> None:
    options = OutputsOptions(min_chars=2_000, budget_chars=1_000, arrival=("text",))
    outcome = await OutputsLane(options)(
        request("\n".join([f"line {n}" for n in range(400)] + [f"token={KEY}"] * 3)), CONTEXT
    )
    rendered = outcome.request.messages[2].parts[0].content[0].text  # type: ignore[union-attr]
    assert KEY not in rendered
    assert KEY.encode() in outcome.writes[0].data


async def test_the_same_output_gives_the_same_bytes_and_is_archived_once() -> None:
    lane = OutputsLane()
    sent = request(build_log())
    first = await lane(sent, CONTEXT)
    again = await lane(request(build_log()), CONTEXT)  # a re-sent history: new objects
    assert again.request.messages[2] == first.request.messages[2]
    assert again.writes == []  # archived already
    resent = await lane(sent, CONTEXT)  # the very same message objects
    assert resent.request.messages[2] is first.request.messages[2]
    fresh = await OutputsLane()(sent, CONTEXT)  # another process's lane: same bytes
    assert fresh.request.messages[2] == first.request.messages[2]
    other = await lane(sent, LaneContext("s2", Wire.CHAT, Wire.CHAT, Mode.HYBRID))
    assert len(other.writes) == 1  # another session indexes it too


@pytest.mark.parametrize(
    "sent",
    [
        request(build_log(), recall=False),  # nothing to recall with: left as sent
        request("short output"),
        request(build_log(), extra=[Image(data="cG5n", media_type="image/png")]),
    ],
    ids=["no-recall", "short", "with-image"],
)
async def test_outputs_it_must_not_touch_are_left_as_sent(sent: Request) -> None:
    outcome = await OutputsLane()(sent, CONTEXT)
    assert outcome.request is sent and outcome.writes == []


def test_the_options_are_bounded() -> None:
    with pytest.raises(ValueError, match="budget_chars must be at least 1000"):
        OutputsOptions(budget_chars=10)
    with pytest.raises(ValueError, match="min_chars must be at least twice"):
        OutputsOptions(min_chars=1_000, budget_chars=1_000)


def medium_log() -> str:
    """About 7,000 characters, under ``min_chars``, with an error line a view keeps."""
    out = [f"[{n:03d}] INFO compiling module_{n % 37}.py in 0.{n % 9}s" for n in range(160)]
    out[99] = "[099] ERROR src/app/cart.py:12: TypeError: 'NoneType'"
    return "\n".join(out)


def loop(outputs: list[str]) -> Request:
    """A task, then one step per output (the state lane's Σ message in between is not needed:
    ``kept`` names where the kept turns sit)."""
    messages = [Message("user", [Text("Fix the build.")])]
    for n, output in enumerate(outputs):
        messages.append(Message("assistant", [ToolCall(f"call_{n}", "shell", "{}")]))
        messages.append(Message("tool", [ToolResult(f"call_{n}", [Text(output)])]))
    return Request(model="m", messages=messages, tools=[recall_tool()], source=Wire.CHAT)


def at_boundary(kept: range) -> LaneContext:
    return LaneContext("s1", Wire.CHAT, Wire.CHAT, Mode.HYBRID, kept=kept)


def result_text(request: Request, message: int) -> str:
    part = request.messages[message].parts[0]
    assert isinstance(part, ToolResult) and isinstance(part.content[0], Text)
    return part.content[0].text


async def test_at_a_boundary_shorter_outputs_of_the_kept_turns_become_views_but_the_newest() -> (
    None
):
    medium = medium_log()
    sent = loop([medium, medium + "\nsecond", medium + "\nthird", medium + "\nfourth"])
    lane = OutputsLane()  # fresh_turns = 2
    kept = range(1, len(sent.messages))  # every step's turn was kept verbatim
    outcome = await lane(sent, at_boundary(kept))
    shown = [result_text(outcome.request, m) for m in (2, 4, 6, 8)]
    assert [s.startswith("[skillstate view of a log") for s in shown] == [1, 1, 0, 0]
    assert shown[2:] == [medium + "\nthird", medium + "\nfourth"]  # the newest two: whole
    assert [w.ref in s for w, s in zip(outcome.writes, shown, strict=False)] == [True, True]
    assert read_span(outcome.writes[0].data) == [sent.messages[2]]
    assert "TypeError" in shown[0]
    # Outside the kept turns (before any boundary, or after it: newer than the boundary),
    # the same outputs stay as they are.
    assert (await OutputsLane()(sent, CONTEXT)).request is sent
    later = await OutputsLane()(sent, at_boundary(range(1, 3)))  # one turn kept: the newest
    assert later.request is sent


async def test_a_boundarys_views_are_the_same_bytes_on_every_request_of_the_epoch() -> None:
    medium = medium_log()
    sent = loop([medium, "ok", "ok"])
    kept = range(1, len(sent.messages))
    first = await OutputsLane()(sent, at_boundary(kept))
    grown = loop([medium, "ok", "ok", "a newer step", medium])  # two turns later
    again = await OutputsLane()(grown, at_boundary(kept))
    assert again.request.messages[: len(sent.messages)] == first.request.messages
    assert result_text(again.request, 10) == medium  # newer than the boundary: whole


async def test_boundary_options_are_checked() -> None:
    with pytest.raises(ValueError, match="boundary_min_chars must be at least 2000"):
        OutputsOptions(boundary_min_chars=100)
    with pytest.raises(ValueError, match="fresh_turns must be at least 1"):
        OutputsOptions(fresh_turns=0)


def prose(paragraphs: int = 300) -> str:
    """A document (a file read, a page of docs): a view of the ``text`` kind."""
    return "\n\n".join(
        f"Section {n}. The {WORDS[n % 5]} module keeps its cache warm between requests."
        for n in range(paragraphs)
    )


WORDS = ("billing", "search", "ledger", "archive", "router")


async def test_a_text_or_diff_output_waits_for_a_boundary_a_log_does_not() -> None:
    text = prose()
    assert len(text) > OutputsOptions().min_chars
    sent = loop([text, "ok", "ok"])
    assert (await OutputsLane()(sent, CONTEXT)).request is sent  # the file as it was read
    at = await OutputsLane()(sent, at_boundary(range(1, len(sent.messages))))
    assert result_text(at.request, 2).startswith("[skillstate view of a text")
    logged = await OutputsLane()(loop([build_log(), "ok", "ok"]), CONTEXT)
    assert result_text(logged.request, 2).startswith("[skillstate view of a log")
    every = OutputsOptions(arrival=("log", "json", "diff", "text"))
    assert (await OutputsLane(every)(sent, CONTEXT)).request is not sent


def test_arrival_names_view_kinds() -> None:
    with pytest.raises(ValueError, match="arrival: prose is not a view kind"):
        OutputsOptions(arrival=("log", "prose"))
