"""``may_compact``: the bytes check that lets a hybrid request skip the compaction lane
(``server.express``) never says no where ``compaction_of`` finds a host's compaction or the
history holds a compaction item: on the hosts' own request shapes, and on any text around the
hosts' prompts, however the client's JSON encoder escapes it."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from skillstate.conversation import Wire
from skillstate.protocols import adapter
from skillstate.state.compaction import compaction_of, may_compact

COMPACTION = Path(__file__).parents[1] / "fixtures" / "compaction"
ROUTE_OF_ITS_OWN = "codex-responses-compact.json"
"""``POST /v1/responses/compact``: a route of its own (``server.compact_route``), never a
generation request."""
PROMPTS = (
    "Your task is to create a detailed summary of the conversation so far. <summary>",
    "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary",
    "<conversation>\nuser: hi\n</conversation>\nCreate a new anchored summary",
    "<conversation>x</conversation><prior-summary>y</prior-summary>",
)


@pytest.mark.parametrize(
    "name", sorted(p.name for p in COMPACTION.glob("*.json") if p.name != ROUTE_OF_ITS_OWN)
)
def test_every_host_compaction_request_is_marked(name: str) -> None:
    raw = (COMPACTION / name).read_bytes()
    assert may_compact(raw)
    assert may_compact(orjson.dumps(json.loads(raw)))


def test_a_plain_request_is_not_marked() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "summarise the parser"}]}
    assert not may_compact(orjson.dumps(body))


@given(
    before=st.text(max_size=40),
    prompt=st.sampled_from(PROMPTS),
    after=st.text(max_size=40),
    ascii_only=st.booleans(),
)
def test_no_compaction_found_in_a_body_the_marks_miss(
    before: str, prompt: str, after: str, ascii_only: bool
) -> None:
    text = before + prompt + after
    body = {"model": "m", "messages": [{"role": "user", "content": text}]}
    raw = json.dumps(body, ensure_ascii=ascii_only).encode()
    if compaction_of(adapter(Wire.CHAT).decode_request(json.loads(raw))) is not None:
        assert may_compact(raw)
