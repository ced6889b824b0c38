"""Two gateways on one Redis share each upstream's circuit: the primary fails the calls of
the first until its circuit opens; the second, which never called it, shows it open in /health
within a sync or two and sends its requests to the fallback straight away."""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path
from typing import Any

import aiohttp

from skillstate.testing import Reply, ScriptedUpstream
from skillstate.testing.gateway import RunningGateway, gateway_for

CHAT = "/v1/chat/completions"
BODY = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}


def config(tmp_path: Path, primary: str, backup: str, name: str) -> str:
    path = tmp_path / "skillstate.toml"
    path.write_text(
        f'[[upstreams]]\nname = "{name}"\nbase_url = "{primary}"\n'
        f'wire = "openai-chat"\nfallbacks = ["{name}-backup"]\n'
        f'[[upstreams]]\nname = "{name}-backup"\nbase_url = "{backup}"\nwire = "openai-chat"\n'
        'models = ["none-*"]\n'
    )
    return str(path)


async def circuit(http: aiohttp.ClientSession, gateway: RunningGateway, name: str) -> Any:
    async with http.get(gateway.url + "/health") as reply:
        ups = (await reply.json())["upstreams"]
    return next(up["circuit"] for up in ups if up["name"] == name)


async def test_a_circuit_one_gateway_opened_is_open_in_the_other(
    tmp_path: Path, redis_url: str
) -> None:
    name = f"test-{secrets.token_hex(4)}"
    settings = {"redis": redis_url, "circuit_min_requests": 2}
    async with (
        ScriptedUpstream(lambda _: Reply.failure(500, "down")) as primary,
        ScriptedUpstream(lambda _: Reply(text="Backup")) as backup,
    ):
        path = config(tmp_path, primary.url, backup.url, name)
        async with (
            gateway_for(config_path=path, settings=settings) as one,
            gateway_for(config_path=path, settings=settings) as two,
            aiohttp.ClientSession() as http,
        ):
            for _ in range(2):
                async with http.post(one.url + CHAT, json=BODY) as reply:
                    assert reply.status == 200 and "Backup" in await reply.text()
            assert await circuit(http, one, name) == "open"
            for _ in range(50):  # each gateway syncs once a second
                if await circuit(http, two, name) == "open":
                    break
                await asyncio.sleep(0.1)
            assert await circuit(http, two, name) == "open"
            called = [r for r in primary.requests if r.method == "POST"]
            async with http.post(two.url + CHAT, json=BODY) as reply:
                assert reply.status == 200 and "Backup" in await reply.text()
        assert [r for r in primary.requests if r.method == "POST"] == called
