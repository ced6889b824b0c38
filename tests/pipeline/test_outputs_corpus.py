"""Issue 12's corpus check, lane by lane: every output of the project's corpus (code search,
build logs, failing test runs, large JSON, diffs, docs, adversarial input) and every text
holding secrets goes through the outputs lane as a tool result; each is compacted with a
measured saving, its exact original comes back from the archive write (every identifier in
it, 100%), and no secret of the secrets corpus appears in any view."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillstate.archive import read_span, ref_for
from skillstate.conversation import Message, Request, Text, ToolCall, ToolResult, Wire
from skillstate.outputs.views.identifiers import find
from skillstate.pipeline.lane import LaneContext
from skillstate.pipeline.outputs_lane import VIEW_KINDS, OutputsLane, OutputsOptions
from skillstate.state.mode import Mode
from skillstate.state.tools import recall_tool

FIXTURES = Path(__file__).parents[1] / "fixtures"
OUTPUTS = sorted(p for p in (FIXTURES / "outputs").glob("[!.]*") if p.suffix != ".py")
SECRETS = sorted(p for p in (FIXTURES / "secrets").glob("*") if p.suffix not in (".json", ".md"))
CONTEXT = LaneContext("corpus", Wire.CHAT, Wire.CHAT, Mode.HYBRID)
EVERY_KIND = VIEW_KINDS
"""Views of every kind when the output arrives (by default text and diffs wait for a
boundary: ``test_outputs_lane``), so each of the corpus goes through its view."""


def as_request(text: str) -> Request:
    call = Message("assistant", [ToolCall("call_1", "shell", "{}")])
    result = Message("tool", [ToolResult("call_1", [Text(text)])])
    return Request("m", [Message("user", [Text("Go.")]), call, result], Wire.CHAT,
                   tools=[recall_tool()])  # fmt: skip


def read(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="surrogateescape")


@pytest.mark.parametrize("path", OUTPUTS, ids=[p.name for p in OUTPUTS])
async def test_each_output_is_compacted_and_recoverable_exactly(path: Path) -> None:
    text = read(path)
    sent = as_request(text)
    outcome = await OutputsLane(OutputsOptions(min_chars=12_000, arrival=EVERY_KIND))(sent, CONTEXT)
    assert outcome.report["tokens_saved"] > 0, path.name  # a measured saving
    (write,) = outcome.writes
    assert ref_for(write.data) == write.ref
    (original,) = read_span(write.data)
    assert original == sent.messages[2]  # exactly what the client sent
    kept = original.parts[0].content[0].text  # type: ignore[union-attr]
    assert all(identifier in kept for identifier in find(text))  # every one, 100%
    view = outcome.request.messages[2].parts[0].content[0].text  # type: ignore[union-attr]
    assert write.ref in view.splitlines()[0]


@pytest.mark.parametrize("path", SECRETS, ids=[p.name for p in SECRETS])
async def test_no_secret_appears_in_any_view(path: Path) -> None:
    expected = json.loads(path.with_name(path.name + ".expect.json").read_text())
    text = read(path)
    padded = "\n".join([text, *[f"step {n}: nothing to see" for n in range(2_000)], text])
    outcome = await OutputsLane(OutputsOptions(arrival=EVERY_KIND))(as_request(padded), CONTEXT)
    view = outcome.request.messages[2].parts[0].content[0].text  # type: ignore[union-attr]
    assert outcome.writes, path.name
    for secret in expected.get("secrets", []):
        assert secret not in view, (path.name, secret)
        assert secret.encode("unicode_escape") not in view.encode(), (path.name, secret)
