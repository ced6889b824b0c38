"""An upstream's rate limit shared over Redis (``redis`` setting, ``upstream.shared_limits``):
``rpm = N`` admits N requests a minute across every gateway on the same Redis (two or four),
where each alone would admit N; the rule is ``limits.RateLimit``'s; a Redis that cannot be
reached leaves each process its own window and the requests served; /health says how Redis
is."""

from __future__ import annotations

import contextlib
import logging
import secrets
from pathlib import Path

import aiohttp
import pytest
from redis import asyncio as aioredis

from skillstate.testing import Reply, ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.upstream.limits import RateLimit
from skillstate.upstream.shared_limits import KEY_PREFIX, SharedRateLimit

CHAT = "/v1/chat/completions"
BODY = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}


def _config(tmp_path: Path, upstream_url: str, name: str, rpm: int) -> str:
    path = tmp_path / "skillstate.toml"
    table = f'name = "{name}"\nbase_url = "{upstream_url}"\nrpm = {rpm}\nmodels = ["*"]\n'
    path.write_text("[[upstreams]]\n" + table)
    return str(path)


async def _statuses(
    tmp_path: Path, rpm: int, requests: int, redis: str | None, instances: int = 2
) -> list[int]:
    """The statuses of ``requests`` going round ``instances`` gateways whose upstream takes
    ``rpm`` a minute."""
    name = f"test-{secrets.token_hex(4)}"
    settings = {"redis": redis} if redis else {}
    statuses = []
    async with ScriptedUpstream(lambda _: Reply(text="ok")) as up:
        config = _config(tmp_path, up.url, name, rpm)
        async with contextlib.AsyncExitStack() as stack, aiohttp.ClientSession() as http:
            gateways = [
                await stack.enter_async_context(gateway_for(config_path=config, settings=settings))
                for _ in range(instances)
            ]
            for n in range(requests):
                gateway = gateways[n % instances]
                async with http.post(gateway.url + CHAT, json=BODY) as reply:
                    statuses.append(reply.status)
    return statuses


@pytest.mark.parametrize("instances", [2, 4])
async def test_rpm_is_one_limit_across_instances(
    tmp_path: Path, redis_url: str, instances: int
) -> None:
    """Each instance alone would admit all eight (none gets more than four)."""
    statuses = await _statuses(tmp_path, 5, 8, redis_url, instances)
    assert statuses == [200] * 5 + [429] * 3


async def test_without_redis_each_instance_has_its_own_limit(tmp_path: Path) -> None:
    assert await _statuses(tmp_path, 1, 3, None) == [200, 200, 429]


async def test_a_redis_out_of_reach_leaves_each_instance_its_own_limit(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    assert await _statuses(tmp_path, 1, 3, "redis://:hunter2@127.0.0.1:9/0") == [200, 200, 429]
    said = [r.getMessage() for r in caplog.records if "shared rate limit" in r.getMessage()]
    assert len(said) == 2  # once per instance
    assert not any("hunter2" in r.getMessage() for r in caplog.records)


async def test_the_shared_rule_is_the_local_one(redis_url: str) -> None:
    client = aioredis.from_url(redis_url)
    try:

        def shared(rpm: int | None, tpm: int | None) -> SharedRateLimit:
            local = RateLimit(lambda: 0.0, rpm=rpm, tpm=tpm, max_wait_s=10.0)
            return SharedRateLimit(client, f"test-{secrets.token_hex(4)}", local)

        by_count = shared(2, None)
        assert [(await by_count.admit(1)).wait_s for _ in range(2)] == [0.0, 0.0]
        refused = await by_count.admit(1)
        assert refused.wait_s is None and 59 < refused.retry_after_s <= 60
        by_tokens = shared(None, 100)
        assert (await by_tokens.admit(60)).wait_s == 0.0
        later = await by_tokens.admit(50)
        assert later.wait_s is None and 59 < later.retry_after_s <= 60
        alone = await by_tokens.admit(200)
        assert alone.wait_s is None and alone.retry_after_s == 0.0
    finally:
        async for key in client.scan_iter(match=KEY_PREFIX + "test-*"):
            await client.delete(key)
        await client.aclose()


async def test_health_says_how_redis_is(redis_url: str) -> None:
    async with (
        ScriptedUpstream(lambda _: Reply(text="ok")) as up,
        gateway_for(up.url, settings={"redis": redis_url}) as shared,
        gateway_for(up.url, settings={"redis": "redis://127.0.0.1:9/0"}) as cut_off,
        gateway_for(up.url) as alone,
        aiohttp.ClientSession() as http,
    ):
        reports = []
        for gateway in (shared, cut_off, alone):
            async with http.get(gateway.url + "/health") as reply:
                reports.append(await reply.json())
    assert reports[0]["redis"]["ok"] is True and reports[0]["status"] == "ok"
    assert reports[1]["redis"]["ok"] is False and reports[1]["status"] == "degraded"
    assert reports[2]["redis"] == {}
