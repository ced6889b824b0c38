"""The text-as-image lane: at an epoch boundary a dense old text output goes as page images
and an identifier sidecar, only for allowlisted models, only where ``recall`` is offered and
the pages pay by the upstream provider's formula; the original is archived exactly, no secret
is drawn or listed, and the same output gives the same bytes."""

from __future__ import annotations

import base64
import random
import zlib
from typing import Any

import pytest

from skillstate.archive import read_span, ref_for
from skillstate.conversation import Image, Message, Request, Text, ToolCall, ToolResult, Wire
from skillstate.economics.tokenizer import count_tokens
from skillstate.outputs.views import identifiers
from skillstate.outputs.vision.pages import Layout, draw, lay_out, wrap
from skillstate.outputs.vision.tokens import anthropic_tokens, image_tokens, openai_tokens
from skillstate.pipeline.lane import LaneContext
from skillstate.pipeline.vision_lane import VISION_KEY, VisionLane, VisionOptions, rendered_lines
from skillstate.protocols import adapter
from skillstate.state.mode import Mode
from skillstate.state.tools import recall_tool

KEY = "sk-" + "Q" * 40  # built from pieces: no key-shaped literal in the repository
MARKS = ["src/app/payments.py:88", "3f2a9c1e77", "E0425", "https://example.test/build/41"]


def dense(lines: int = 150, seed: int = 1, secret: bool = False) -> str:
    """Lines of made-up words (about three characters a token) with a few identifiers."""
    rng = random.Random(seed)
    letters = "ghijklmnopqrstuvwxyz"

    def word() -> str:
        return "".join(rng.choice(letters) for _ in range(rng.randint(3, 8)))

    out = [f"{n:04d} " + " ".join(word() for _ in range(16)) for n in range(lines)]
    for n, mark in enumerate(MARKS):
        out[10 + 20 * n] += f" at {mark}"
    if secret:
        out[33] = f"export OPENAI_API_KEY={KEY}"
    return "\n".join(out)


def loop(outputs: list[str], *, model: str = "gpt-4.1", recall: bool = True) -> Request:
    """A task, then one step per output."""
    messages = [Message("user", [Text("Fix the build.")])]
    for n, output in enumerate(outputs):
        messages.append(Message("assistant", [ToolCall(f"call_{n}", "shell", "{}")]))
        messages.append(Message("tool", [ToolResult(f"call_{n}", [Text(output)])]))
    tools = [recall_tool()] if recall else []
    return Request(model=model, messages=messages, tools=tools, source=Wire.CHAT)


def at_boundary(sent: Request, wire: Wire = Wire.CHAT, **extra: Any) -> LaneContext:
    kept = range(1, len(sent.messages))  # every step's turn was kept verbatim
    return LaneContext("s1", Wire.CHAT, wire, Mode.HYBRID, extra=extra, kept=kept)


def content(request: Request, message: int) -> list[Any]:
    part = request.messages[message].parts[0]
    assert isinstance(part, ToolResult)
    return list(part.content)


def four_steps(first: str) -> Request:
    return loop([first, "value b", "value c", "value d"])


async def test_a_dense_old_output_becomes_pages_and_its_original_is_archived_exactly() -> None:
    text = dense()
    sent = four_steps(text)
    outcome = await VisionLane()(sent, at_boundary(sent))
    note, *pages = content(outcome.request, 2)
    assert isinstance(note, Text) and note.text.startswith("[skillstate pages of a text")
    assert f"shown as {len(pages)} page images" in note.text
    assert 1 <= len(pages) <= 4
    for page in pages:
        assert isinstance(page, Image) and page.media_type == "image/png"
        assert base64.b64decode(page.data or "").startswith(b"\x89PNG\r\n\x1a\n")
    (write,) = outcome.writes
    assert write.ref in note.text and ref_for(write.data) == write.ref
    assert read_span(write.data) == [sent.messages[2]]  # exactly what the client sent
    assert outcome.request.messages[2].parts[0].call_id == "call_0"  # type: ignore[union-attr]
    assert outcome.summary == f"-{outcome.report['tokens_saved']}t"
    assert outcome.report["tokens_saved"] > count_tokens(text) // 3
    assert outcome.report["pages"] == len(pages)


async def test_the_sidecar_lists_every_identifier_of_the_original_exactly() -> None:
    text = dense()
    sent = four_steps(text)
    note = content((await VisionLane()(sent, at_boundary(sent))).request, 2)[0]
    found = identifiers.find(text)
    assert set(MARKS) <= set(found)
    assert all(ident in note.text for ident in found)


async def test_no_secret_is_drawn_or_listed_and_the_archive_keeps_it() -> None:
    text = dense(secret=True)
    sent = four_steps(text)
    outcome = await VisionLane()(sent, at_boundary(sent))
    note = content(outcome.request, 2)[0]
    assert KEY not in note.text
    drawn = "\n".join(line for page in rendered_lines(text, VisionOptions()) for line in page)
    assert KEY not in drawn and "OPENAI_API_KEY=[redacted" in drawn
    assert KEY.encode() in outcome.writes[0].data
    # What the pages show is exactly what ``rendered_lines`` says: the same lines, the same PNG.
    pages = rendered_lines(text, VisionOptions())
    last = draw(pages[-1], Layout(), last=True).png
    assert base64.b64decode(content(outcome.request, 2)[-1].data) == last


async def test_the_newest_turns_stay_text_and_nothing_moves_outside_a_boundary() -> None:
    text = dense()
    newest = loop(["value a", "value b", text, text + "\nagain"])
    assert (await VisionLane()(newest, at_boundary(newest))).request is newest  # fresh_turns=2
    sent = four_steps(text)
    no_boundary = LaneContext("s1", Wire.CHAT, Wire.CHAT, Mode.HYBRID)
    assert (await VisionLane()(sent, no_boundary)).request is sent  # kept is empty


@pytest.mark.parametrize(
    "case",
    ["no-recall", "model", "asked-off", "short", "sparse", "view", "with-image"],
)
async def test_outputs_it_must_not_touch_are_left_as_sent(case: str) -> None:
    text = dense()
    extra: dict[str, str] = {VISION_KEY: "off"} if case == "asked-off" else {}
    sent = {
        "no-recall": loop([text, "b", "c", "d"], recall=False),
        "model": loop([text, "b", "c", "d"], model="llama-3-8b"),
        "asked-off": four_steps(text),
        "short": four_steps(text[:3_000]),
        "sparse": four_steps("\n".join(["ok, done"] * 600)),  # few tokens, many pixels
        "view": four_steps("[skillstate view of a log: ...]\n" + text),
        "with-image": four_steps(text),
    }[case]
    if case == "with-image":
        part = sent.messages[2].parts[0]
        assert isinstance(part, ToolResult)
        part.content.append(Image(data="cG5n", media_type="image/png"))
    outcome = await VisionLane()(sent, at_boundary(sent, **extra))
    assert outcome.request is sent and outcome.writes == []


async def test_the_pages_are_capped_and_the_ratio_is_priced_by_the_upstream_wire() -> None:
    text = dense(lines=150)  # three pages
    sent = four_steps(text)
    assert (await VisionLane(VisionOptions(max_pages=2))(sent, at_boundary(sent))).writes == []
    assert len((await VisionLane(VisionOptions(max_pages=3))(sent, at_boundary(sent))).writes)
    # Anthropic's pixels cost more than OpenAI's tiles: a ratio one wire passes, the other not.
    strict = VisionLane(VisionOptions(min_ratio=3.7))  # OpenAI 4.1, Anthropic 3.3
    on_openai = await strict(sent, at_boundary(sent, Wire.CHAT))
    on_anthropic = await strict(sent, at_boundary(sent, Wire.MESSAGES))
    assert on_openai.writes and on_anthropic.request is sent


async def test_the_same_output_gives_the_same_bytes_and_is_archived_once() -> None:
    text = dense()
    lane = VisionLane()
    first = await lane(four_steps(text), at_boundary(four_steps(text)))
    again = await lane(four_steps(text), at_boundary(four_steps(text)))  # new objects
    assert again.request.messages[2] == first.request.messages[2] and again.writes == []
    other = await VisionLane()(four_steps(text), at_boundary(four_steps(text)))
    assert other.request.messages[2] == first.request.messages[2]  # another lane instance


def png_chunks(png: bytes) -> list[bytes]:
    """The chunk types of a PNG, in order (each chunk's CRC checked)."""
    chunks, at = [], 8
    while at < len(png):
        size = int.from_bytes(png[at : at + 4], "big")
        kind, data = png[at + 4 : at + 8], png[at + 8 : at + 8 + size]
        crc = int.from_bytes(png[at + 8 + size : at + 12 + size], "big")
        assert zlib.crc32(kind + data) == crc
        chunks.append(kind)
        at += 12 + size
    return chunks


def test_a_page_is_the_same_png_bytes_every_time_and_holds_no_metadata() -> None:
    pages = lay_out(dense(), Layout())
    assert draw(pages[0], Layout()).png == draw(list(pages[0]), Layout()).png
    assert set(png_chunks(draw(pages[0], Layout()).png)) == {b"IHDR", b"IDAT", b"IEND"}
    assert draw(pages[0], Layout()).png != draw(pages[1], Layout()).png
    short = draw(["one line"], Layout(), last=True)
    assert (short.width, short.height) == (768, 24 + Layout().line_height)


def test_long_lines_wrap_at_a_space_or_inside_a_word() -> None:
    def measure(text: str) -> float:
        return 10.0 * len(text)  # every character 10 px wide

    assert wrap("aaaa bbbb cccc", 95, measure) == ["aaaa bbbb", "cccc"]
    assert wrap("x" * 25, 100, measure) == ["x" * 10, "x" * 10, "x" * 5]
    assert wrap("", 100, measure) == [""]


def test_the_token_formulas_against_the_providers_examples() -> None:
    assert openai_tokens(1024, 1024) == 765  # 768 x 768: 4 tiles
    assert openai_tokens(2048, 4096) == 1105  # 1024 x 2048, then 768 x 1536: 6 tiles
    assert openai_tokens(512, 512) == 255  # never enlarged: 1 tile
    assert openai_tokens(768, 54) == 425  # 2 tiles
    assert anthropic_tokens(1000, 1000) == 1334  # 1,000,000 / 750, rounded up
    assert anthropic_tokens(3136, 1568) == 1640  # fitted to 1568 x 784
    assert image_tokens(Wire.MESSAGES, 768, 1024) == 1049
    assert image_tokens(Wire.RESPONSES, 768, 1024) == image_tokens(Wire.CHAT, 768, 1024) == 765


@pytest.mark.parametrize("source", [Wire.CHAT, Wire.MESSAGES, Wire.RESPONSES])
@pytest.mark.parametrize("upstream", [Wire.CHAT, Wire.MESSAGES, Wire.RESPONSES])
async def test_the_pages_encode_on_every_upstream_wire(source: Wire, upstream: Wire) -> None:
    sent = four_steps(dense())
    if source is not Wire.CHAT:  # the other wires carry results in user messages
        messages = [Message("user", m.parts) if m.role == "tool" else m for m in sent.messages]
        sent = Request(model=sent.model, messages=messages, tools=sent.tools, source=source)
    outcome = await VisionLane()(sent, at_boundary(sent, upstream))
    body = adapter(upstream).encode_request(outcome.request)
    items = body.get("messages") or body["input"]
    text = str(items)
    pages = outcome.report["pages"]
    if upstream is Wire.CHAT:  # a tool message holds text: the pages follow in a user message
        (result,) = [m for m in items if m.get("tool_call_id") == "call_0"]
        after = items[items.index(result) + 1]
        assert isinstance(result["content"], str) and "skillstate pages" in result["content"]
        assert after["role"] == "user" and after["content"][0]["text"].endswith("call_0")
        assert [p["type"] for p in after["content"][1:]] == ["image_url"] * pages
    elif upstream is Wire.MESSAGES:
        assert text.count("'type': 'image'") == pages and "'type': 'base64'" in text
    else:
        (output,) = [i for i in items if i.get("call_id") == "call_0" and "output" in i]
        assert [p["type"] for p in output["output"]] == ["input_text", *["input_image"] * pages]
        assert all(p.get("detail") == "high" for p in output["output"][1:])


async def test_without_pillow_the_lane_fails_and_the_runner_skips_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    from skillstate.pipeline.lane_runner import run_lanes

    async def keep(write: object) -> None:
        return None

    sent = four_steps(dense(seed=7))  # not drawn before: nothing remembered
    monkeypatch.setitem(sys.modules, "PIL", None)  # what a missing Pillow looks like
    result = await run_lanes([VisionLane()], sent, at_boundary(sent), keep)
    assert result.request is sent and result.header() == "vision=failed:MissingPillow"
