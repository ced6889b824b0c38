"""The lane runner: order, writes, change detection, and a failing lane skipped."""

from __future__ import annotations

import dataclasses

from skillstate.conversation import Message, Request, Text, Wire
from skillstate.pipeline import ArchiveWrite, LaneContext, LaneOutcome, run_lanes
from skillstate.state.mode import Mode

CONTEXT = LaneContext(session="s", client_wire=Wire.CHAT, upstream_wire=Wire.CHAT, mode=Mode.HYBRID)


def _request() -> Request:
    return Request(model="m", messages=[Message("user", [Text("hi")])], source=Wire.CHAT)


class Append:
    def __init__(self, name: str, text: str) -> None:
        self.name = name
        self.text = text

    async def __call__(self, request: Request, context: LaneContext) -> LaneOutcome:
        messages = [*request.messages, Message("user", [Text(self.text)])]
        write = ArchiveWrite(
            ref=f"ar_{self.name}", data=self.text.encode(), session=context.session
        )
        return LaneOutcome(dataclasses.replace(request, messages=messages), [write], {"n": 1})


class Untouched:
    name = "untouched"

    async def __call__(self, request: Request, context: LaneContext) -> LaneOutcome:
        return LaneOutcome(request)


class Broken:
    name = "broken"

    async def __call__(self, request: Request, context: LaneContext) -> LaneOutcome:
        raise ValueError("boom")


class Kept:
    """What an archive was asked to keep; ``fail_on`` a ref it cannot keep."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.refs: list[str] = []
        self.fail_on = fail_on

    async def __call__(self, write: ArchiveWrite) -> None:
        if write.ref == self.fail_on:
            raise OSError("disk full")
        self.refs.append(write.ref)


async def test_lanes_run_in_order_and_writes_are_kept() -> None:
    kept = Kept()
    lanes = [Append("a", "one"), Append("b", "two")]
    result = await run_lanes(lanes, _request(), CONTEXT, kept)
    assert kept.refs == ["ar_a", "ar_b"]  # archived before the request goes on
    texts = [m.parts[0].text for m in result.request.messages]  # type: ignore[union-attr]
    assert texts == ["hi", "one", "two"]
    assert [w.ref for w in result.writes] == ["ar_a", "ar_b"]
    assert result.changed and [r.report for r in result.reports] == [{"n": 1}, {"n": 1}]


async def test_unchanged_request_is_reported_as_unchanged() -> None:
    original = _request()
    result = await run_lanes([Untouched()], original, CONTEXT)
    assert result.request is original and not result.changed


async def test_a_failing_lane_is_skipped_and_reported() -> None:
    lanes = [Append("a", "one"), Broken(), Append("b", "two")]
    result = await run_lanes(lanes, _request(), CONTEXT, Kept())
    assert len(result.request.messages) == 3
    broken = result.reports[1]
    assert broken.name == "broken" and broken.error == "ValueError: boom" and not broken.changed
    assert [w.ref for w in result.writes] == ["ar_a", "ar_b"]
    assert all(r.elapsed_s >= 0 for r in result.reports)


async def test_a_lane_whose_writes_cannot_be_kept_is_skipped() -> None:
    """Nothing is taken out of a request that the archive did not keep (invariant 4)."""
    kept = Kept(fail_on="ar_b")
    lanes = [Append("a", "one"), Append("b", "two")]
    result = await run_lanes(lanes, _request(), CONTEXT, kept)
    texts = [m.parts[0].text for m in result.request.messages]  # type: ignore[union-attr]
    assert texts == ["hi", "one"] and [w.ref for w in result.writes] == ["ar_a"]
    assert result.reports[1].error == "OSError: disk full"
    nowhere = await run_lanes([Append("a", "one")], _request(), CONTEXT)  # no archive at all
    assert not nowhere.changed and nowhere.writes == []
    assert "no archive keeps it" in (nowhere.reports[0].error or "")


class Keeps:
    """Says where the kept turns sit, as the state lane does."""

    name = "keeps"

    async def __call__(self, request: Request, context: LaneContext) -> LaneOutcome:
        return LaneOutcome(request, kept=range(2, 5))


class Reads:
    def __init__(self) -> None:
        self.name = "reads"
        self.seen: list[range] = []

    async def __call__(self, request: Request, context: LaneContext) -> LaneOutcome:
        self.seen.append(context.kept)
        return LaneOutcome(request)


async def test_the_lanes_after_one_that_says_where_the_kept_turns_are_see_it() -> None:
    before, after = Reads(), Reads()
    result = await run_lanes([before, Keeps(), Untouched(), after], _request(), CONTEXT)
    assert before.seen == [range(0)] and after.seen == [range(2, 5)]
    assert result.context.kept == range(2, 5)
