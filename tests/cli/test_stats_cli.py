"""``skillstate stats`` against a running gateway: times local and to the second, its hint for
unpriced requests printed whole, and ``--since`` read in the same local time it prints."""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from click.testing import CliRunner, Result

from skillstate.cli.main import cli
from skillstate.testing import RecordedRequest, Reply, ScriptedUpstream
from skillstate.testing.gateway import gateway_for

LOCAL_ZONE = "XYZ-5"
"""A POSIX zone five hours east of UTC (no tz database needed): a time read as UTC where it
should be local is then five hours off."""


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in [name for name in os.environ if name.startswith("SKILLSTATE_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))


@pytest.fixture
def east_of_utc() -> Iterator[None]:
    before = os.environ.get("TZ")
    os.environ["TZ"] = LOCAL_ZONE
    time.tzset()
    try:
        yield
    finally:
        if before is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = before
        time.tzset()


def answer(request: RecordedRequest) -> Reply:
    return Reply(text="ok", input_tokens=50, output_tokens=5)


async def stats(*args: str) -> Result:
    return await asyncio.to_thread(CliRunner().invoke, cli, ["stats", *args])


async def ask(url: str, model: str) -> None:
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
    async with (
        aiohttp.ClientSession() as http,
        http.post(url + "/v1/chat/completions", json=body) as reply,
    ):
        assert reply.status == 200, await reply.text()


def to_the_second(iso: str) -> str:
    moment = datetime.datetime.fromisoformat(iso)
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S")


async def test_times_are_local_to_the_second_and_since_is_read_as_local(
    east_of_utc: None,
) -> None:
    async with ScriptedUpstream(answer) as up, gateway_for(up.url, settings={"mode": "off"}) as gw:
        await ask(gw.url, "gpt-4.1")
        await asyncio.sleep(0.01)
        await ask(gw.url, "gpt-4.1")
        doc = json.loads((await stats("--json", "--url", gw.url)).stdout)
        assert re.search(r"\.\d+Z$", doc["since"])  # the route's own times carry fractions
        shown = await stats("--url", gw.url)
        assert shown.exit_code == 0, shown.output
        text = " ".join(shown.stdout.split())
        span = f"({to_the_second(doc['since'])} to {to_the_second(doc['until'])})"
        assert text.startswith("skillstate ledger: ") and span in text.split(" Totals")[0]
        assert not re.search(r"\d:\d\d\.\d", shown.stdout)  # nothing finer than a second
        # A minute before the first request, in local time without a zone: as UTC it would be
        # five hours ahead, after every request.
        began = datetime.datetime.fromisoformat(doc["since"]).astimezone()
        since = (began - datetime.timedelta(minutes=1)).replace(tzinfo=None).isoformat()
        kept = json.loads((await stats("--json", "--since", since, "--url", gw.url)).stdout)
        assert kept["totals"]["requests"] == 2
        later = (began + datetime.timedelta(hours=1)).replace(tzinfo=None).isoformat()
        none = json.loads((await stats("--json", "--since", later, "--url", gw.url)).stdout)
        assert none["totals"]["requests"] == 0
        zoned = await stats("--json", "--since", since + "+00:00", "--url", gw.url)
        assert json.loads(zoned.stdout)["totals"]["requests"] == 0  # a zone given is kept


async def test_the_hint_for_unpriced_requests_is_printed_whole() -> None:
    async with ScriptedUpstream(answer) as up, gateway_for(up.url, settings={"mode": "off"}) as gw:
        await ask(gw.url, "a-model-without-a-price")
        shown = await stats("--url", gw.url)
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.stdout.split())
    assert 'add one under [prices."MODEL"] in the config' in text


async def test_subscription_requests_are_said_apart_from_the_costs() -> None:
    oauth = "sk-ant-oat01-" + "f" * 86 + "AA"
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 16,
        "messages": [{"role": "user", "content": "hi"}],
    }
    headers = {"authorization": f"Bearer {oauth}", "anthropic-version": "2023-06-01"}
    async with (
        ScriptedUpstream(answer) as up,
        gateway_for(up.url, wire="anthropic-messages") as gw,
        aiohttp.ClientSession() as http,
    ):
        for _ in range(2):
            async with http.post(gw.url + "/v1/messages", json=body, headers=headers) as reply:
                assert reply.status == 200, await reply.text()
        shown = await stats("--url", gw.url)
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.stdout.split())
    assert (
        "2 requests billed by a subscription (Claude Code's Pro/Max login, passed through)" in text
    )


async def test_cache_misses_are_shown_by_cause_per_session() -> None:
    """A provider that caches nothing: after its first request a session's requests share
    their prefix, and the provider's is the miss (docs/cost.md, "Why a cache missed")."""
    system = "You are a careful agent in a large repository. " * 150  # over 1,024 tokens
    history: list[dict[str, object]] = [{"role": "system", "content": system}]
    for n in range(8):
        call = {"id": f"c{n}", "type": "function", "function": {"name": "run", "arguments": "{}"}}
        history += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": f"output {n}"},
        ]
    tools = [{"type": "function", "function": {"name": "run", "parameters": {"type": "object"}}}]
    headers = {"x-skillstate-session": "misses"}
    async with (
        ScriptedUpstream(answer) as up,
        gateway_for(up.url) as gw,
        aiohttp.ClientSession() as http,
    ):
        for turn in range(3):
            said = [{"role": "user", "content": f"step {n}"} for n in range(turn + 1)]
            body = {"model": "m", "messages": [*history, *said], "tools": tools}
            async with http.post(gw.url + "/v1/chat/completions", json=body, headers=headers) as r:
                assert r.status == 200, await r.text()
        shown = await stats("--url", gw.url)
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.stdout.split())
    assert "Cache misses by cause" in text
    assert re.search(r"misses .*0 .*first 1, provider 2", text), text


async def test_a_since_that_is_not_a_time_is_the_gateways_error() -> None:
    async with ScriptedUpstream(answer) as up, gateway_for(up.url) as gw:
        result = await stats("--since", "yesterday", "--url", gw.url)
    assert result.exit_code == 1
    assert "'yesterday' is not an ISO 8601 date or time" in result.stderr
