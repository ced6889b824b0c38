"""Root probes, health, the merged model list."""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp

from skillstate.testing import ScriptedUpstream
from skillstate.testing.gateway import gateway_for

JSON_TYPE = {"content-type": "application/json"}


async def test_head_and_get_root() -> None:
    async with gateway_for(None) as gw, aiohttp.ClientSession() as session:
        async with session.head(gw.url + "/") as r:
            assert r.status == 200
        async with session.get(gw.url + "/") as r:
            assert (await r.json())["name"] == "skillstate"


async def test_models_are_merged_across_upstreams(tmp_path: Path) -> None:
    async with (
        ScriptedUpstream(models=["alpha", "shared"]) as one,
        ScriptedUpstream(models=["shared", "beta"]) as two,
    ):
        config = tmp_path / "skillstate.toml"
        config.write_text(
            f'[[upstreams]]\nname = "one"\nbase_url = "{one.url}/v1"\nmodels = ["alpha*"]\n'
            f'[[upstreams]]\nname = "two"\nbase_url = "{two.url}"\n'
        )
        async with gateway_for(config_path=str(config)) as gw, aiohttp.ClientSession() as s:
            async with s.get(gw.url + "/v1/models") as r:
                body = await r.json()
                assert body["object"] == "list"
                assert [m["id"] for m in body["data"]] == ["alpha", "shared", "beta"]
            async with s.get(gw.url + "/models", headers={"anthropic-version": "2023-06-01"}) as r:
                body = await r.json()
                assert [m["id"] for m in body["data"]] == ["alpha", "shared", "beta"]
                assert body["has_more"] is False and body["first_id"] == "alpha"
            async with s.get(gw.url + "/health") as r:
                health = await r.json()
                assert health["status"] == "ok"
                assert [u["name"] for u in health["upstreams"]] == ["one", "two"]
                assert all(u["ok"] for u in health["upstreams"])


async def test_health_reports_an_unreachable_upstream() -> None:
    async with gateway_for("http://127.0.0.1:9") as gw, aiohttp.ClientSession() as s:
        async with s.get(gw.url + "/health") as r:
            health = await r.json()
    assert health["status"] == "degraded"
    assert health["upstreams"][0]["ok"] is False and "error" in health["upstreams"][0]


async def test_model_routing_by_pattern(tmp_path: Path) -> None:
    async with ScriptedUpstream() as one, ScriptedUpstream() as two:
        config = tmp_path / "c.toml"
        config.write_text(
            f'[[upstreams]]\nname = "claude"\nbase_url = "{one.url}"\nmodels = ["claude-*"]\n'
            f'[[upstreams]]\nname = "rest"\nbase_url = "{two.url}"\n'
        )
        body = b'{"model": "claude-x", "messages": [{"role": "user", "content": "hi"}]}'
        async with gateway_for(config_path=str(config)) as gw, aiohttp.ClientSession() as s:
            async with s.post(gw.url + "/v1/chat/completions", data=body, headers=JSON_TYPE) as r:
                assert r.headers["x-skillstate-upstream"] == "claude"
            other = body.replace(b"claude-x", b"gpt-x")
            async with s.post(gw.url + "/v1/chat/completions", data=other, headers=JSON_TYPE) as r:
                assert r.headers["x-skillstate-upstream"] == "rest"
        assert len(one.requests) == 1 and len(two.requests) == 1


async def test_one_upstream_s_model_list_is_forwarded_intact() -> None:
    """Pass-through on the same wire family: the provider's own reply, every key of every
    entry (Anthropic's ``lifecycle`` say), not a list rebuilt from four keys."""
    anthropic = {"anthropic-version": "2023-06-01"}
    async with (
        ScriptedUpstream(models=["m-one", "m-two"]) as up,
        gateway_for(up.url) as gw,
        aiohttp.ClientSession() as s,
    ):
        for headers in ({}, anthropic):
            async with s.get(up.url + "/v1/models", headers=headers) as r:
                direct = await r.read()
            async with s.get(gw.url + "/v1/models", headers=headers) as r:
                assert r.status == 200
                assert await r.read() == direct
        async with s.get(gw.url + "/v1/models", headers=anthropic) as r:
            assert all(m["lifecycle"] == "active" for m in (await r.json())["data"])


async def test_merged_model_lists_keep_each_entry_whole(tmp_path: Path) -> None:
    async with (
        ScriptedUpstream(models=["alpha"]) as one,
        ScriptedUpstream(models=["beta"]) as two,
    ):
        config = tmp_path / "skillstate.toml"
        config.write_text(
            f'[[upstreams]]\nname = "one"\nbase_url = "{one.url}"\nmodels = ["alpha*"]\n'
            f'[[upstreams]]\nname = "two"\nbase_url = "{two.url}"\n'
        )
        headers = {"anthropic-version": "2023-06-01"}
        async with gateway_for(config_path=str(config)) as gw, aiohttp.ClientSession() as s:
            async with s.get(gw.url + "/v1/models", headers=headers) as r:
                data = (await r.json())["data"]
    assert [m["id"] for m in data] == ["alpha", "beta"]
    assert all(m["lifecycle"] == "active" for m in data)


async def test_config_shows_the_running_configuration_with_secrets_masked() -> None:
    """``GET /config``: each upstream as the gateway routes to it, with its circuit, and the
    settings as ``skillstate config --json`` reports them; no key, token or header value
    appears whole, and without the token nothing is told."""
    key = "sk-proj-0123456789abcdefSECRET"
    token = "config-route-token-0123456789"
    settings = {"api_key": key, "auth_token": token}
    async with (
        ScriptedUpstream() as up,
        gateway_for(up.url, settings=settings) as gw,
        aiohttp.ClientSession() as s,
    ):
        async with s.get(gw.url + "/config") as r:
            assert r.status == 401
            assert token not in await r.text()
        async with s.get(gw.url + "/config", headers={"x-skillstate-token": token}) as r:
            assert r.status == 200
            raw = await r.text()
            body = await r.json()
    assert key not in raw and "SECRET" not in raw and token not in raw
    assert body["name"] == "skillstate"
    (upstream,) = body["upstreams"]
    assert upstream["name"] == "default" and upstream["base_url"] == up.url
    assert upstream["wire"] == "auto" and upstream["profile"] == "openai"
    assert upstream["api_key"] == "sk-…CRET" and upstream["circuit"] == "closed"
    assert body["config"]["upstream"] == {"value": up.url, "source": "command line --upstream"}
    assert body["config"]["auth_token"]["value"] == "config-…6789"


async def test_only_models_some_upstream_serves_are_listed(tmp_path: Path) -> None:
    """An upstream reports models its ``models`` patterns do not take (or another upstream's
    patterns claim first): those would be refused or sent elsewhere, so they are not listed;
    every model listed, asked for, is served by the upstream that listed it."""
    async with (
        ScriptedUpstream(models=["alpha", "alpha-2", "gamma"]) as one,
        ScriptedUpstream(models=["alpha-2", "beta", "delta"]) as two,
    ):
        config = tmp_path / "skillstate.toml"
        config.write_text(
            f'[[upstreams]]\nname = "one"\nbase_url = "{one.url}"\nmodels = ["alpha*"]\n'
            f'[[upstreams]]\nname = "two"\nbase_url = "{two.url}"\nmodels = ["beta", "alpha-2"]\n'
        )
        async with gateway_for(config_path=str(config)) as gw, aiohttp.ClientSession() as s:
            for headers in ({}, {"anthropic-version": "2023-06-01"}):
                async with s.get(gw.url + "/v1/models", headers=headers) as r:
                    listed = [m["id"] for m in (await r.json())["data"]]
                assert listed == ["alpha", "alpha-2", "beta"]
            for model in listed:
                body = json.dumps({"model": model, "messages": [{"role": "user", "content": "x"}]})
                async with s.post(
                    gw.url + "/v1/chat/completions", data=body, headers=JSON_TYPE
                ) as r:
                    assert r.status == 200, (model, await r.text())
                    assert r.headers["x-skillstate-upstream"] == (
                        "two" if model == "beta" else "one"
                    )


async def test_one_upstream_with_patterns_lists_only_what_they_take() -> None:
    async with (
        ScriptedUpstream(models=["m-one", "m-two"]) as up,
        gateway_for(
            None, settings={"upstreams": [{"name": "u", "base_url": up.url, "models": ["m-one"]}]}
        ) as gw,
        aiohttp.ClientSession() as s,
    ):
        async with s.get(gw.url + "/v1/models") as r:
            assert [m["id"] for m in (await r.json())["data"]] == ["m-one"]
