"""The billing mode's simulated prompt caches, without sockets: OpenAI's automatic prefix
cache and Anthropic's ``cache_control`` breakpoints, on an injected clock."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from skillstate.conversation import Wire
from skillstate.testing.billing import Billing, Prices, Tokens
from skillstate.testing.token_view import token_view

EPHEMERAL = {"type": "ephemeral"}
HOUR = {"type": "ephemeral", "ttl": "1h"}


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def billing(clock: Clock) -> Billing:
    return Billing(clock=clock)


def words(count: int, tag: str = "w") -> str:
    return " ".join(f"{tag}{i}" for i in range(count))


def chat(*texts: str, model: str = "gpt-test", **extra: Any) -> dict[str, Any]:
    messages = [{"role": "system", "content": texts[0]}]
    messages += [{"role": "user", "content": text} for text in texts[1:]]
    return {"model": model, "messages": messages, **extra}


def size(wire: Wire, body: dict[str, Any]) -> int:
    return len(token_view(wire, body))


def common_prefix(wire: Wire, one: dict[str, Any], other: dict[str, Any]) -> int:
    pairs = zip(token_view(wire, one).tokens, token_view(wire, other).tokens, strict=False)
    return next(i for i, (a, b) in enumerate(pairs) if a != b)


# OpenAI: automatic caching


def test_openai_a_repeated_prompt_reads_its_whole_blocks(billing: Billing) -> None:
    body = chat(words(900), "What now?")
    length = size(Wire.CHAT, body)
    assert length >= 1024 and length % 128
    first = billing.charge(Wire.CHAT, body).tokens
    second = billing.charge(Wire.CHAT, body).tokens
    assert first == Tokens(input=length)
    assert second == Tokens(input=length, cached=length // 128 * 128)


def test_openai_a_prompt_under_1024_tokens_is_never_cached(billing: Billing) -> None:
    body = chat(words(300), "What now?")
    assert size(Wire.CHAT, body) < 1024
    billing.charge(Wire.CHAT, body)
    assert billing.charge(Wire.CHAT, body).tokens.cached == 0


def test_openai_a_change_in_the_middle_reads_up_to_the_block_before_it(billing: Billing) -> None:
    before = chat(words(700), words(400, "a"), "What now?")
    after = chat(words(700), words(400, "b"), "What now?")
    shared = common_prefix(Wire.CHAT, before, after)
    assert 1024 < shared < size(Wire.CHAT, after) - 128
    billing.charge(Wire.CHAT, before)
    assert billing.charge(Wire.CHAT, after).tokens.cached == shared // 128 * 128


def test_openai_the_prefix_is_shared_with_any_earlier_request(billing: Billing) -> None:
    long, other = chat(words(900), "one"), chat(words(50, "x"), "two")
    billing.charge(Wire.CHAT, long)
    billing.charge(Wire.CHAT, other)
    assert billing.charge(Wire.CHAT, long).tokens.cached > 1024


def test_openai_the_cache_expires_after_the_ttl_of_inactivity(clock: Clock) -> None:
    billing = Billing(clock=clock, ttl=300.0)
    body = chat(words(900), "What now?")
    billing.charge(Wire.CHAT, body)
    clock.now += 299.0
    assert billing.charge(Wire.CHAT, body).tokens.cached > 0  # and refreshed
    clock.now += 299.0
    assert billing.charge(Wire.CHAT, body).tokens.cached > 0
    clock.now += 300.0
    assert billing.charge(Wire.CHAT, body).tokens.cached == 0


def test_openai_the_cache_is_per_model_and_per_prompt_cache_key(billing: Billing) -> None:
    text = words(900)
    billing.charge(Wire.CHAT, chat(text, "q", model="gpt-a"))
    assert billing.charge(Wire.CHAT, chat(text, "q", model="gpt-b")).tokens.cached == 0
    billing.charge(Wire.CHAT, chat(text, "q", prompt_cache_key="one"))
    assert billing.charge(Wire.CHAT, chat(text, "q", prompt_cache_key="two")).tokens.cached == 0
    assert billing.charge(Wire.CHAT, chat(text, "q", prompt_cache_key="one")).tokens.cached > 0


def test_openai_caching_applies_to_responses_and_on_demand_to_messages(clock: Clock) -> None:
    body = {"model": "m", "instructions": words(900), "input": "What now?"}
    billing = Billing(clock=clock)
    billing.charge(Wire.RESPONSES, body)
    assert billing.charge(Wire.RESPONSES, body).tokens.cached > 1024
    unmarked = {"model": "m", "system": words(900), "messages": [{"role": "user", "content": "q"}]}
    assert Billing(clock=clock).charge(Wire.MESSAGES, unmarked).style == "anthropic"
    forced = Billing("openai", clock=clock)
    forced.charge(Wire.MESSAGES, unmarked)
    assert forced.charge(Wire.MESSAGES, unmarked).tokens.cached > 1024


# Anthropic: explicit cache_control breakpoints


def messages(
    system: str, *turns: str, system_mark: dict[str, str] | None = None, **marks: Any
) -> dict[str, Any]:
    """A Messages request; ``marks`` maps ``turn<i>`` to the cache_control of turn i's block."""
    block: dict[str, Any] = {"type": "text", "text": system}
    if system_mark is not None:
        block["cache_control"] = system_mark
    history = []
    for i, text in enumerate(turns):
        part: dict[str, Any] = {"type": "text", "text": text}
        if f"turn{i}" in marks:
            part["cache_control"] = marks[f"turn{i}"]
        history.append({"role": "user" if i % 2 == 0 else "assistant", "content": [part]})
    return {"model": "claude-sonnet-test", "max_tokens": 9, "system": [block], "messages": history}


def breakpoint_ends(body: dict[str, Any]) -> list[int]:
    return [point.end for point in token_view(Wire.MESSAGES, body).breakpoints]


def test_anthropic_without_breakpoints_nothing_is_cached(billing: Billing) -> None:
    body = messages(words(1500), "What now?")
    billing.charge(Wire.MESSAGES, body)
    second = billing.charge(Wire.MESSAGES, body).tokens
    assert second == Tokens(input=size(Wire.MESSAGES, body))
    assert second.uncached == second.input


def test_anthropic_a_marked_system_is_written_then_read(billing: Billing) -> None:
    body = messages(words(1500), "What now?", system_mark=EPHEMERAL)
    (system,) = breakpoint_ends(body)
    length = size(Wire.MESSAGES, body)
    first = billing.charge(Wire.MESSAGES, body).tokens
    second = billing.charge(Wire.MESSAGES, body).tokens
    assert first == Tokens(input=length, cache_write_5m=system)
    assert second == Tokens(input=length, cached=system)
    assert second.uncached == length - system > 0


def test_anthropic_moving_the_last_breakpoint_reads_the_old_prefix_writes_the_new(
    billing: Billing,
) -> None:
    system = words(1500)
    start = messages(system, "q1", system_mark=EPHEMERAL, turn0=EPHEMERAL)
    grown = messages(system, "q1", "a1", "q2", system_mark=EPHEMERAL, turn2=EPHEMERAL)
    billing.charge(Wire.MESSAGES, start)
    old = breakpoint_ends(start)[-1]
    new = breakpoint_ends(grown)[-1]
    assert billing.charge(Wire.MESSAGES, grown).tokens == Tokens(
        input=size(Wire.MESSAGES, grown), cached=old, cache_write_5m=new - old
    )
    assert billing.charge(Wire.MESSAGES, grown).tokens.cached == new


def test_anthropic_looks_back_20_blocks_before_a_breakpoint_and_no_further(
    clock: Clock,
) -> None:
    system = words(1500)
    cached = messages(system, "q", system_mark=EPHEMERAL)
    (prefix,) = breakpoint_ends(cached)
    for turns, read in ((20, prefix), (21, 0)):
        billing = Billing(clock=clock)
        billing.charge(Wire.MESSAGES, cached)
        texts = [f"turn {i}" for i in range(turns)]
        later = messages(system, *texts, **{f"turn{turns - 1}": EPHEMERAL})
        (point,) = token_view(Wire.MESSAGES, later).breakpoints
        assert point.block == turns  # the system is block 0
        used = billing.charge(Wire.MESSAGES, later).tokens
        assert (used.cached, used.cache_write_5m) == (read, point.end - read)


def test_anthropic_a_one_hour_mark_outlives_five_minutes(clock: Clock) -> None:
    billing = Billing(clock=clock)
    hour = messages(words(1500), "q", system_mark=HOUR)
    (prefix,) = breakpoint_ends(hour)
    assert billing.charge(Wire.MESSAGES, hour).tokens.cache_write_1h == prefix
    clock.now += 1800.0
    assert billing.charge(Wire.MESSAGES, hour).tokens.cached == prefix
    short = messages(words(1500, "s"), "q", system_mark=EPHEMERAL)
    billing.charge(Wire.MESSAGES, short)
    clock.now += 301.0
    again = billing.charge(Wire.MESSAGES, short).tokens
    assert (again.cached, again.cache_write_5m) == (0, breakpoint_ends(short)[0])


def test_anthropic_mixed_ttls_bill_the_hour_part_and_the_five_minute_part(
    billing: Billing,
) -> None:
    body = messages(words(1500), "q1", "a1", "q2", system_mark=HOUR, turn2=EPHEMERAL)
    system, last = breakpoint_ends(body)
    used = billing.charge(Wire.MESSAGES, body).tokens
    assert (used.cache_write_1h, used.cache_write_5m) == (system, last - system)


def test_anthropic_a_read_refreshes_the_entry_it_found(clock: Clock) -> None:
    billing = Billing(clock=clock)
    system = words(1500)
    (prefix,) = breakpoint_ends(messages(system, "q", system_mark=EPHEMERAL))
    billing.charge(Wire.MESSAGES, messages(system, "q", system_mark=EPHEMERAL))
    for turn in range(3):
        clock.now += 240.0  # past the first write's five minutes by the second turn
        later = messages(system, f"question {turn}", turn0=EPHEMERAL)  # found by lookback
        assert billing.charge(Wire.MESSAGES, later).tokens.cached == prefix


def test_anthropic_a_prefix_under_the_models_minimum_is_not_cached(clock: Clock) -> None:
    short = messages(words(300), "q", system_mark=EPHEMERAL)
    billing = Billing(clock=clock)
    assert billing.charge(Wire.MESSAGES, short).tokens.cache_write == 0
    assert billing.charge(Wire.MESSAGES, short).tokens.cached == 0
    middling = messages(words(800), "q", system_mark=EPHEMERAL)
    assert 1024 <= breakpoint_ends(middling)[0] < 2048
    assert billing.charge(Wire.MESSAGES, middling).tokens.cache_write > 0
    haiku = {**middling, "model": "claude-haiku-test"}
    billing.charge(Wire.MESSAGES, haiku)
    assert billing.charge(Wire.MESSAGES, haiku).tokens == Tokens(input=size(Wire.MESSAGES, haiku))


def test_anthropic_the_cache_is_per_model(billing: Billing) -> None:
    body = messages(words(1500), "q", system_mark=EPHEMERAL)
    billing.charge(Wire.MESSAGES, body)
    other = billing.charge(Wire.MESSAGES, {**body, "model": "claude-opus-test"}).tokens
    assert (other.cached, other.cache_write_5m) == (0, breakpoint_ends(body)[0])


def test_anthropic_more_than_four_breakpoints_are_refused(billing: Billing) -> None:
    marks = {f"turn{i}": EPHEMERAL for i in range(4)}
    body = messages("s", "a", "b", "c", "d", system_mark=EPHEMERAL, **marks)
    view = token_view(Wire.MESSAGES, body)
    refusal = billing.refusal(Wire.MESSAGES, view)
    assert refusal is not None and "Found 5" in refusal
    assert Billing("openai").refusal(Wire.MESSAGES, view) is None
    four = messages("s", "a", "b", "c", "d", **marks)
    assert billing.refusal(Wire.MESSAGES, token_view(Wire.MESSAGES, four)) is None


# A provider without a prompt cache


def test_without_caching_nothing_is_ever_read_or_written(clock: Clock) -> None:
    """Issue 26: many OpenAI-compatible servers and local models cache nothing and say so
    (0 cached tokens on every request); ``caching=False`` is such a provider."""
    billing = Billing(clock=clock, caching=False)
    chat_body = chat(words(1500), "What now?")
    marks = {f"turn{i}": EPHEMERAL for i in range(4)}
    marked = messages(words(1500), "a", "b", "c", "d", system_mark=EPHEMERAL, **marks)
    for _ in range(3):
        assert billing.charge(Wire.CHAT, chat_body).tokens == Tokens(size(Wire.CHAT, chat_body))
        billed = billing.charge(Wire.MESSAGES, marked).tokens
        assert billed == Tokens(size(Wire.MESSAGES, marked))
    assert billing.refusal(Wire.MESSAGES, token_view(Wire.MESSAGES, marked)) is None


# The bill


def test_the_bill_sums_every_charge_and_prices_each_kind_at_its_rate(billing: Billing) -> None:
    body = messages(words(1500), "q", system_mark=EPHEMERAL)
    first = billing.charge(Wire.MESSAGES, body, output=7, request=0)
    second = billing.charge(Wire.MESSAGES, body, output=5, request=1)
    assert [charge.request for charge in billing.billed] == [0, 1]
    assert billing.bill() == first.tokens + second.tokens
    assert billing.bill().output == 12
    tokens = Tokens(input=1000, cached=600, cache_write_5m=200, cache_write_1h=100, output=50)
    expected = (100 * 3.0 + 600 * 0.3 + 200 * 3.75 + 100 * 6.0 + 50 * 15.0) / 1e6
    assert tokens.cost(Prices.anthropic(input=3.0, output=15.0)) == pytest.approx(expected)
    openai = Prices.openai(input=2.0, output=8.0, cached=0.5)
    assert Tokens(input=1000, cached=768, output=10).cost(openai) == pytest.approx(
        (232 * 2.0 + 768 * 0.5 + 10 * 8.0) / 1e6
    )


def test_the_billing_modules_import_none_of_the_gateways_accounting() -> None:
    code = (
        "import sys, skillstate.testing, skillstate.testing.billing\n"
        "print('\\n'.join(sorted(m for m in sys.modules if m.startswith('skillstate'))))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert "skillstate.testing.billing" in loaded
    allowed = {"skillstate.protocols", "skillstate.protocols.sse", "skillstate.economics.tokenizer"}
    forbidden = [
        name
        for name in loaded
        if name.startswith(("skillstate.state", "skillstate.protocols.", "skillstate.economics."))
        and name not in allowed
    ]
    assert forbidden == []
