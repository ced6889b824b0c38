"""The epoch contract with every lane on (DESIGN.md, "Cache-stable rewriting: epochs"): between
two boundaries the upstream requests of a session share a byte-identical prefix, and the
tools block (compacted by the ``schemas`` lane) is the same bytes on every request of the
session, boundaries included; so the provider's prefix cache keeps hitting."""

from __future__ import annotations

import itertools
import re
from typing import Any

import aiohttp
import orjson
import pytest

from skillstate.bench.history import History
from skillstate.pipeline.switches import names
from skillstate.support import jsonio
from skillstate.testing import Reply, ScriptedUpstream
from skillstate.testing.gateway import gateway_for

ROUTES = {"chat": "/v1/chat/completions", "messages": "/v1/messages", "responses": "/v1/responses"}
HISTORY = {"chat": "messages", "messages": "messages", "responses": "input"}
TURNS = 40
EVERY: dict[str, dict[str, Any]] = {name: {"enabled": True} for name in names()}
# The history's outputs are source files of about 2.8 KB on a model of no allowlist: small
# print, a low bar and every model, so that the vision lane draws pages here too.
EVERY["vision"] |= {"models": ["*"], "min_chars": 2_000, "min_ratio": 1.0}
EVERY["vision"] |= {"page_width": 512, "font_size": 8}  # one tile wide

SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "title": "ReadFile",
    "properties": {"path": {"type": "string", "title": "Path", "description": "The file.  "}},
    "required": ["path"],
}


def tools(wire: str) -> list[dict[str, Any]]:
    """``read_file`` with the metadata real clients send (the ``schemas`` lane removes it)."""
    if wire == "messages":
        return [{"name": "read_file", "description": "Read a file.", "input_schema": SCHEMA}]
    if wire == "responses":
        return [{"type": "function", "name": "read_file", "parameters": SCHEMA}]
    function = {"name": "read_file", "description": "Read a file.", "parameters": SCHEMA}
    return [{"type": "function", "function": function}]


def epoch_of(lanes: str) -> int:
    found = re.search(r"epoch(\d+)", lanes)
    return int(found.group(1)) if found else 0


@pytest.mark.parametrize("wire", sorted(ROUTES))
async def test_upstream_prefixes_are_byte_stable_within_an_epoch_with_every_lane_on(
    wire: str,
) -> None:
    history = History(wire)
    headers = {"x-skillstate-session": f"stable-{wire}", "x-skillstate-mode": "hybrid"}
    headers["content-type"] = "application/json"
    sent: list[tuple[int, dict[str, Any]]] = []  # (epoch, the turn's own upstream request)
    lanes_seen: set[str] = set()
    async with (
        ScriptedUpstream(lambda r: Reply(text="ok")) as up,
        gateway_for(up.url, settings={"collapse": {"min_turns": 4}, "lanes": EVERY}) as gw,
        aiohttp.ClientSession() as http,
    ):
        assert gw.context.lanes_off == frozenset()  # every lane on
        for _ in range(TURNS):
            body = orjson.loads(history.advance())
            body["tools"] = tools(wire)
            async with http.post(
                gw.url + ROUTES[wire], data=jsonio.dumps(body), headers=headers
            ) as reply:
                assert reply.status == 200, await reply.text()
                lanes = reply.headers.get("x-skillstate-lanes", "")
            lanes_seen.update(part.split("=")[0] for part in lanes.split("; ") if part)
            sent.append((epoch_of(lanes), up.requests[-1].json))
    assert {"schemas", "state", "vision"} <= lanes_seen
    assert max(epoch for epoch, _ in sent) >= 2  # boundaries were crossed
    key = HISTORY[wire]
    # The client's own tools are the same bytes on every request (the state lane adds its
    # tool from the first boundary on: a rewrite at a boundary, as the epoch rule allows).
    tools_bytes = {
        jsonio.dumps([tool for tool in request["tools"] if b"read_file" in jsonio.dumps(tool)])
        for _, request in sent
    }
    assert len(tools_bytes) == 1
    assert b"$schema" not in next(iter(tools_bytes)) and b"title" not in next(iter(tools_bytes))
    within = 0
    for (epoch, before), (now, after) in itertools.pairwise(sent):
        if now != epoch:
            continue  # a boundary rewrites the old content, once
        within += 1
        head = {k: v for k, v in before.items() if k != key}
        assert {k: v for k, v in after.items() if k != key} == head
        # Everything but the previous request's last item (the tail: the newest turn) is
        # repeated byte for byte at the start of the next request's history.
        kept = [jsonio.dumps(item) for item in before[key][:-1]]
        assert [jsonio.dumps(item) for item in after[key][: len(kept)]] == kept
    assert within >= TURNS // 2
