"""Why a provider's prompt cache missed (``economics.cache_verdict``): one test for each
verdict, on requests as a prefix cache sees them (``counterfactual.blocks_of``)."""

from __future__ import annotations

from dataclasses import replace

from skillstate.conversation import CacheMark, Message, Request, Text, Tool, Usage, Wire
from skillstate.conversation.prefixes import PrefixMemo
from skillstate.economics.cache_verdict import VERDICTS, Previous, cache_verdict
from skillstate.economics.counterfactual import Blocks, blocks_of

LONG = "The repository holds a payments service written in Python. " * 60  # ~700 tokens
TOOLS = [Tool("read_file", "Read a file.", {"type": "object"})]


def _request(
    *texts: str, system: str = LONG, tools: list[Tool] = TOOLS, mark: bool = False
) -> Request:
    messages = [
        Message("user" if n % 2 == 0 else "assistant", [Text(t)]) for n, t in enumerate(texts)
    ]
    if mark:
        messages[-1] = Message(messages[-1].role, [Text(texts[-1], cache=CacheMark())])
    return Request(
        model="m", messages=messages, source=Wire.CHAT, system=[Text(system)], tools=tools
    )


def _blocks(request: Request) -> Blocks:
    return blocks_of(request, PrefixMemo())


def _before(request: Request, at: float = 100.0) -> Previous:
    return (_blocks(request).chain, at)


FIRST = _request("Fix the failing test.", "Reading.", LONG)
NEXT = _request("Fix the failing test.", "Reading.", LONG, "Found it.", "Go on.")


def _verdict(
    sent: Request,
    before: Request | None,
    *,
    client: Request | None = None,
    client_before: Request | None = None,
    cached: int = 0,
    now: float = 160.0,
    explicit: bool = False,
    boundary: bool = False,
) -> str:
    client = client or sent
    client_before = client_before or before
    return cache_verdict(
        Usage(input=1_000, cached_input=cached),
        sent=_blocks(sent),
        before=_before(before) if before is not None else None,
        client=_blocks(client),
        client_before=_before(client_before) if client_before is not None else None,
        now=now,
        explicit=explicit,
        boundary=boundary,
    )


def test_hit_first_and_expired() -> None:
    assert _verdict(NEXT, FIRST, cached=1_024) == "hit"
    assert _verdict(FIRST, None) == "first"
    assert _verdict(NEXT, FIRST, now=100.0 + 601) == "expired"  # automatic: ten minutes
    assert _verdict(NEXT, FIRST, now=100.0 + 301, explicit=True) == "expired"  # breakpoints: five
    assert _verdict(NEXT, FIRST, now=100.0 + 301) != "expired"


def test_a_request_without_breakpoints_is_unmarked_where_the_cache_needs_them() -> None:
    assert _verdict(NEXT, FIRST, explicit=True) == "unmarked"
    marked = _request("Fix the failing test.", "Reading.", LONG, "Found it.", "Go on.", mark=True)
    assert _verdict(marked, FIRST, explicit=True) == "provider"


def test_a_whole_prefix_is_short_below_the_minimum_else_the_providers() -> None:
    small, smaller = (
        _request("Hi.", "Hello.", "Go.", system="Be brief."),
        _request("Hi.", system="Be brief."),
    )
    assert _verdict(small, smaller) == "short"
    assert _verdict(NEXT, FIRST) == "provider"


def test_the_client_changing_its_head_or_its_history() -> None:
    other_system = replace(NEXT, system=[Text(LONG + " Today is Friday.")])
    assert _verdict(other_system, FIRST) == "client-head"
    edited = _request(
        "Fix the failing tests, all of them.", "Reading.", LONG, "Found it.", "Go on."
    )
    assert _verdict(edited, FIRST) == "client-history"


def test_the_gateway_changing_what_it_sent() -> None:
    more_tools = replace(NEXT, tools=[*TOOLS, Tool("recall", "Recall.", {"type": "object"})])
    assert _verdict(more_tools, FIRST, client=NEXT) == "gateway-head"
    viewed = _request("Fix the failing test.", "Reading.", "a view of it", "Found it.", "Go on.")
    assert _verdict(viewed, FIRST, client=NEXT) == "gateway-history"
    assert _verdict(viewed, FIRST, client=NEXT, boundary=True) == "boundary"


def test_every_verdict_is_listed() -> None:
    assert len(set(VERDICTS)) == 12 and VERDICTS[0] == "hit"
