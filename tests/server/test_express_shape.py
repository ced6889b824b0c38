"""The express path's shape, not its time (issue 28): a request passed through untouched (mode
off by the gateway's setting, by ``x-skillstate-mode`` or by a bypass; hybrid mode for a request
without tools, or of a session passed through before its first boundary) builds no canonical
request or reply and makes no trip to a thread while it is served, on every wire, JSON and
stream; a request a lane may change (hybrid at the session's first request, one long enough
for a boundary, a host's compaction, paper mode, a lane that acts in mode off) still takes the
full path. Every function the handler's task calls is seen through ``sys.setprofile`` on the event
loop's thread: the recorder's own task (which does go to a thread, in batches) is another
task."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import CodeType, FrameType
from typing import Any

import aiohttp
import pytest

from skillstate.conversation import Request, Response, Wire
from skillstate.protocols import adapter
from skillstate.server import proxy
from skillstate.testing import Reply, ScriptedUpstream
from skillstate.testing.gateway import gateway_for

PATHS = {
    Wire.CHAT: "/v1/chat/completions",
    Wire.RESPONSES: "/v1/responses",
    Wire.MESSAGES: "/v1/messages",
}
BODIES: dict[Wire, dict[str, Any]] = {
    Wire.CHAT: {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
    Wire.RESPONSES: {"model": "m", "input": "hi"},
    Wire.MESSAGES: {
        "model": "m",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "hi"}],
    },
}
FORBIDDEN: dict[str, CodeType] = {
    "Request.__init__": Request.__init__.__code__,
    "Response.__init__": Response.__init__.__code__,
    "run_in_executor": asyncio.BaseEventLoop.run_in_executor.__code__,
    "to_thread": asyncio.to_thread.__code__,
    "ThreadPoolExecutor.submit": concurrent.futures.ThreadPoolExecutor.submit.__code__,
    **{
        f"{wire.value} decode_request": adapter(wire).decode_request.__code__  # type: ignore[attr-defined]
        for wire in Wire
    },
}
HANDLER = proxy.handle_generation.__code__


@contextmanager
def calls_by_task() -> Iterator[dict[int, set[CodeType]]]:
    """The code of every function called on this thread while inside, by the task it ran in."""
    seen: dict[int, set[CodeType]] = {}

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call":
            try:
                task = asyncio.current_task()
            except RuntimeError:
                return
            seen.setdefault(id(task), set()).add(frame.f_code)

    sys.setprofile(profile)
    try:
        yield seen
    finally:
        sys.setprofile(None)


def _handlers(seen: dict[int, set[CodeType]]) -> list[set[CodeType]]:
    return [codes for codes in seen.values() if HANDLER in codes]


TOOLS: dict[Wire, list[dict[str, Any]]] = {
    Wire.CHAT: [{"type": "function", "function": {"name": "read_file", "parameters": {}}}],
    Wire.RESPONSES: [{"type": "function", "name": "read_file", "parameters": {}}],
    Wire.MESSAGES: [{"name": "read_file", "input_schema": {"type": "object"}}],
}


def with_tools(wire: Wire, turns: int = 1, text: str = "hi") -> dict[str, Any]:
    """The wire's body with a tool offered, and ``turns`` user messages (``text`` the last)."""
    said = [{"role": "user", "content": f"turn {n}"} for n in range(turns - 1)]
    said.append({"role": "user", "content": text})
    listed = "input" if wire is Wire.RESPONSES else "messages"
    return {**BODIES[wire], listed: said, "tools": TOOLS[wire]}


async def _served(
    wire: Wire,
    stream: bool,
    headers: dict[str, str],
    settings: dict[str, Any],
    body: dict[str, Any] | None = None,
    first: dict[str, Any] | None = None,
) -> set[CodeType]:
    """What the handler's task called serving ``body`` (the wire's plain one if None), after
    ``first`` (``body`` if None) was served in the same session."""
    async with (
        ScriptedUpstream(lambda r: Reply(text="fine")) as up,
        gateway_for(up.url, settings=settings) as gw,
        aiohttp.ClientSession() as http,
    ):
        url = gw.url + PATHS[wire]
        headers = {"x-skillstate-session": "shape", **headers}
        body = {**(body or BODIES[wire]), "stream": stream}
        earlier = {**(first or body), "stream": stream}
        if wire is Wire.CHAT and stream:  # hybrid: one that does not ask takes the full path
            for sent in (body, earlier):
                sent.setdefault("stream_options", {"include_usage": True})
        async with http.post(url, json=earlier, headers=headers) as warm:  # first-use imports
            await warm.read()
        with calls_by_task() as seen:
            async with http.post(url, json=body, headers=headers) as reply:
                assert reply.status == 200, await reply.text()
                await reply.read()
        assert gw.context.recorder is not None
        await gw.context.recorder.flush()
    [handled] = _handlers(seen)
    return handled


HOW = {
    "serve --mode off": ({}, {"mode": "off"}),
    "x-skillstate-mode: off": ({"x-skillstate-mode": "off"}, {"mode": "hybrid"}),
    "x-skillstate-bypass": ({"x-skillstate-bypass": "1"}, {"mode": "paper"}),
}


@pytest.mark.parametrize("how", sorted(HOW))
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("wire", list(Wire))
async def test_a_request_passed_through_builds_no_canonical_model_and_no_thread_trip(
    wire: Wire, stream: bool, how: str
) -> None:
    headers, settings = HOW[how]
    handled = await _served(wire, stream, headers, settings)
    found = sorted(name for name, code in FORBIDDEN.items() if code in handled)
    assert found == []


async def test_a_subscription_login_passed_through_takes_the_express_path_whatever_the_lanes() -> (
    None
):
    """An Anthropic subscription login runs no lane at all (``route.untouched_login``): even
    with a lane on that acts in mode off, its request is relayed undecoded."""
    oauth = {"authorization": "Bearer sk-ant-oat01-" + "f" * 86 + "AA"}
    settings = {"mode": "hybrid", "lanes": {"style": {"enabled": True}}}
    handled = await _served(Wire.MESSAGES, True, oauth, settings)
    assert sorted(name for name, code in FORBIDDEN.items() if code in handled) == []


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("wire", list(Wire))
async def test_hybrid_relays_undecoded_a_request_without_tools_and_one_of_a_session_passed_through(
    wire: Wire, stream: bool
) -> None:
    """Without tools the state lane takes nothing; with them, a session it passed through at
    its first request is relayed while a request cannot reach a boundary (``state.passing``)."""
    hybrid = {"mode": "hybrid"}
    plain = await _served(wire, stream, {}, hybrid)
    later = await _served(wire, stream, {}, hybrid, with_tools(wire, 3), first=with_tools(wire))
    for handled in (plain, later):
        assert sorted(name for name, code in FORBIDDEN.items() if code in handled) == []


HYBRID = {"mode": "hybrid"}
ASKED = {"a lane that acts in mode off": {"mode": "off", "lanes": {"style": {"enabled": True}}}}
FULL: dict[str, tuple[dict[str, Any], dict[str, Any] | None, dict[str, Any] | None]] = {
    "a lane that acts in mode off": (ASKED["a lane that acts in mode off"], None, None),
    "paper": ({"mode": "paper"}, None, None),
    "hybrid, a Chat stream that did not ask for its usage": (
        HYBRID,
        {**BODIES[Wire.CHAT], "stream": True, "stream_options": {"include_usage": False}},
        None,
    ),
    "hybrid, the session's first request with tools": (
        HYBRID,
        with_tools(Wire.CHAT),
        BODIES[Wire.CHAT],
    ),
    "hybrid, as long as a boundary needs": (
        HYBRID,
        with_tools(Wire.CHAT, 12),
        with_tools(Wire.CHAT),
    ),
    "hybrid, a host's compaction": (
        HYBRID,
        with_tools(Wire.CHAT, 2, "Your task is to create a detailed summary of the conversation"),
        with_tools(Wire.CHAT),
    ),
    "hybrid, a lane that acts in hybrid": (
        {**HYBRID, "lanes": {"effort": {"enabled": True}}},
        with_tools(Wire.CHAT, 2),
        with_tools(Wire.CHAT),
    ),
}


@pytest.mark.parametrize("how", sorted(FULL))
async def test_a_request_a_lane_may_change_takes_the_full_path(how: str) -> None:
    settings, body, first = FULL[how]
    stream = bool(body and body.get("stream"))
    handled = await _served(Wire.CHAT, stream, {}, settings, body, first)
    assert FORBIDDEN["openai-chat decode_request"] in handled  # the check sees what it looks for


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_the_debug_line_of_a_request_relayed_undecoded_tells_its_usage(
    stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """``-v``'s one line per request reads the usage from the relayed reply's bytes."""
    with caplog.at_level(logging.DEBUG, logger="skillstate.requests"):
        async with (
            ScriptedUpstream(lambda r: Reply(text="fine", input_tokens=21, output_tokens=4)) as up,
            gateway_for(up.url, settings={"mode": "off"}) as gw,
            aiohttp.ClientSession() as http,
        ):
            body = {**BODIES[Wire.MESSAGES], "stream": stream}
            async with http.post(gw.url + PATHS[Wire.MESSAGES], json=body) as reply:
                assert reply.status == 200
                await reply.read()
    [line] = [r.getMessage() for r in caplog.records if r.name == "skillstate.requests"]
    assert "mode=off" in line and "in=21 out=4" in line, line


UNREADABLE: dict[Wire, tuple[dict[str, Any], dict[str, Any]]] = {
    Wire.CHAT: ({"messages": [{"role": "user", "content": "hi"}] * 3}, {"messages": "hi"}),
    Wire.RESPONSES: ({"input": [{"role": "user", "content": "hi"}] * 3}, {"input": 42}),
    Wire.MESSAGES: (
        {"max_tokens": 5, "messages": [{"role": "user", "content": "hi"}] * 3},
        {"max_tokens": 5, "messages": {"role": "user", "content": "hi"}},
    ),
}
"""Per wire: more messages than ``max_messages`` (2), and messages that are not a list."""


@pytest.mark.parametrize("wire", list(Wire))
@pytest.mark.parametrize("mode", ["off", "hybrid"])
async def test_a_request_the_express_path_cannot_read_plainly_is_refused_by_the_full_path(
    mode: str, wire: Wire
) -> None:
    """No list of messages, or more than ``max_messages``: the full path says what is wrong,
    in the client's wire, and nothing goes upstream."""
    too_many, not_a_list = UNREADABLE[wire]
    listed = "input" if wire is Wire.RESPONSES else "messages"
    async with (
        ScriptedUpstream(lambda r: Reply(text="fine")) as up,
        gateway_for(up.url, settings={"mode": mode, "max_messages": 2}) as gw,
        aiohttp.ClientSession() as http,
    ):
        for body, said in ((too_many, "max_messages"), (not_a_list, listed)):
            async with http.post(gw.url + PATHS[wire], json={"model": "m", **body}) as reply:
                assert reply.status == 400
                assert said in (await reply.json())["error"]["message"]
        assert up.requests == []
