"""The billing mode end to end: the scripted upstream on a loopback port, driven by the official
SDKs, reports the simulated cache in each wire's own usage fields, JSON and streamed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anthropic
import openai
import pytest

from skillstate.conversation import Wire
from skillstate.testing import Reply, Script, ScriptedUpstream
from skillstate.testing.billing import Billing, Tokens
from skillstate.testing.token_view import token_view

LONG = " ".join(f"w{i}" for i in range(900))
CHAT = [{"role": "system", "content": LONG}, {"role": "user", "content": "What now?"}]
SYSTEM = [{"type": "text", "text": LONG, "cache_control": {"type": "ephemeral"}}]
HOUR_SYSTEM = [{**SYSTEM[0], "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
QUESTION = [{"role": "user", "content": "What now?"}]


@pytest.fixture
def billing() -> Billing:
    return Billing()


@pytest.fixture
async def up(billing: Billing) -> AsyncIterator[ScriptedUpstream]:
    async with ScriptedUpstream(billing=billing) as upstream:
        yield upstream


def view_of(wire: Wire, body: dict[str, Any]) -> tuple[int, int]:
    """The request's length in tokens and where its first breakpoint ends (0 if none)."""
    view = token_view(wire, body)
    return len(view), view.breakpoints[0].end if view.breakpoints else 0


async def test_chat_reports_the_cached_blocks(billing: Billing, oai: openai.AsyncOpenAI) -> None:
    length, _ = view_of(Wire.CHAT, {"messages": CHAT})
    first = await oai.chat.completions.create(model="gpt-test", messages=CHAT)
    second = await oai.chat.completions.create(model="gpt-test", messages=CHAT)
    for completion, cached in ((first, 0), (second, length // 128 * 128)):
        assert completion.usage is not None and completion.usage.prompt_tokens_details
        assert completion.usage.prompt_tokens == length
        assert completion.usage.prompt_tokens_details.cached_tokens == cached
    assert second.usage is not None
    assert billing.billed[1].tokens == Tokens(
        input=length, cached=length // 128 * 128, output=second.usage.completion_tokens
    )


async def test_chat_stream_reports_it_in_the_usage_chunk(
    billing: Billing, oai: openai.AsyncOpenAI
) -> None:
    length, _ = view_of(Wire.CHAT, {"messages": CHAT})
    await oai.chat.completions.create(model="gpt-test", messages=CHAT, stream=True)
    stream = await oai.chat.completions.create(
        model="gpt-test",
        messages=CHAT,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [chunk async for chunk in stream]
    usage = chunks[-1].usage
    assert usage is not None and usage.prompt_tokens_details is not None
    assert (usage.prompt_tokens, usage.prompt_tokens_details.cached_tokens) == (
        length,
        length // 128 * 128,
    )
    # The stream without a usage chunk was billed all the same.
    assert [charge.tokens.cached for charge in billing.billed] == [0, length // 128 * 128]


async def test_responses_reports_the_cached_blocks_json_and_streamed(
    billing: Billing, oai: openai.AsyncOpenAI
) -> None:
    length, _ = view_of(Wire.RESPONSES, {"instructions": LONG, "input": "What now?"})
    first = await oai.responses.create(model="gpt-test", instructions=LONG, input="What now?")
    second = await oai.responses.create(model="gpt-test", instructions=LONG, input="What now?")
    assert first.usage is not None and second.usage is not None
    assert (first.usage.input_tokens, first.usage.input_tokens_details.cached_tokens) == (
        length,
        0,
    )
    assert second.usage.input_tokens_details.cached_tokens == length // 128 * 128
    stream = await oai.responses.create(
        model="gpt-test", instructions=LONG, input="What now?", stream=True
    )
    events = [event async for event in stream]
    assert events[-1].type == "response.completed"
    usage = events[-1].response.usage
    assert usage is not None
    assert (usage.input_tokens, usage.input_tokens_details.cached_tokens) == (
        length,
        length // 128 * 128,
    )
    assert len(billing.billed) == 3


async def test_messages_reports_the_write_then_the_read(
    billing: Billing, ant: anthropic.AsyncAnthropic
) -> None:
    length, system = view_of(Wire.MESSAGES, {"system": SYSTEM, "messages": QUESTION})
    first = await ant.messages.create(
        model="claude-test",
        max_tokens=9,
        system=SYSTEM,
        messages=QUESTION,
    )
    second = await ant.messages.create(
        model="claude-test",
        max_tokens=9,
        system=SYSTEM,
        messages=QUESTION,
    )
    assert first.usage.input_tokens == length - system
    assert first.usage.cache_creation_input_tokens == system
    assert first.usage.cache_read_input_tokens == 0
    assert first.usage.cache_creation is not None
    assert first.usage.cache_creation.ephemeral_5m_input_tokens == system
    assert second.usage.input_tokens == length - system
    assert second.usage.cache_creation_input_tokens == 0
    assert second.usage.cache_read_input_tokens == system
    assert billing.billed[0].tokens == Tokens(
        input=length, cache_write_5m=system, output=first.usage.output_tokens
    )
    hour = await ant.messages.create(
        model="claude-other", max_tokens=9, system=HOUR_SYSTEM, messages=QUESTION
    )
    assert hour.usage.cache_creation is not None
    assert hour.usage.cache_creation.ephemeral_1h_input_tokens == system
    assert hour.usage.cache_creation.ephemeral_5m_input_tokens == 0


async def test_messages_stream_reports_the_cache_in_message_start(
    billing: Billing, ant: anthropic.AsyncAnthropic
) -> None:
    length, system = view_of(Wire.MESSAGES, {"system": HOUR_SYSTEM, "messages": QUESTION})
    async with ant.messages.stream(
        model="claude-test",
        max_tokens=9,
        system=HOUR_SYSTEM,
        messages=QUESTION,
    ) as stream:
        events = [event async for event in stream]
    (start,) = [event for event in events if event.type == "message_start"]
    (delta,) = [event for event in events if event.type == "message_delta"]
    opening = start.message.usage
    assert opening.input_tokens == length - system
    assert opening.cache_read_input_tokens == 0
    assert opening.cache_creation_input_tokens == system
    assert opening.cache_creation is not None
    assert opening.cache_creation.ephemeral_1h_input_tokens == system
    assert opening.cache_creation.ephemeral_5m_input_tokens == 0
    (charge,) = billing.billed
    assert delta.usage.output_tokens == charge.tokens.output > 1
    assert charge.tokens.cache_write_1h == system


async def test_count_tokens_answers_the_billed_length(ant: anthropic.AsyncAnthropic) -> None:
    length, _ = view_of(Wire.MESSAGES, {"system": SYSTEM, "messages": QUESTION})
    counted = await ant.messages.count_tokens(
        model="claude-test",
        system=SYSTEM,
        messages=QUESTION,
    )
    assert counted.input_tokens == length


async def test_more_than_four_breakpoints_are_refused_before_the_policy(
    up: ScriptedUpstream, billing: Billing, ant: anthropic.AsyncAnthropic
) -> None:
    script = Script([Reply("unused")])
    up.policy = script
    mark = {"type": "ephemeral"}
    content = [{"type": "text", "text": f"part {i}", "cache_control": mark} for i in range(5)]
    with pytest.raises(anthropic.BadRequestError, match="A maximum of 4 blocks"):
        await ant.messages.create(
            model="claude-test",
            max_tokens=9,
            messages=[{"role": "user", "content": content}],
        )
    assert script.remaining == 1
    assert billing.billed == []


async def test_an_error_reply_is_not_billed(
    up: ScriptedUpstream, billing: Billing, oai: openai.AsyncOpenAI
) -> None:
    up.policy = Script([Reply.failure(503, "overloaded")])
    with pytest.raises(openai.APIStatusError):
        await oai.chat.completions.create(model="gpt-test", messages=CHAT)
    assert billing.billed == []
